"""Hostile input and bad configuration through the real console script: every line answered,
docs/cli.md's exit codes, no traceback, no password in any output."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from memory_pipeline_tests.cli.conftest import SCRIPT
from memory_pipeline_tests.helpers import episode, write_jsonl
from memory_pipeline_tests.support.loopback import LoopbackEmbeddingServer, unused_port_url

KEYWORD_ONLY = {"MEMORY_PIPELINE_EMBED_PROVIDER": "ollama", "OLLAMA_HOST": "http://127.0.0.1:9"}


def _closed_port() -> str:
    return unused_port_url().rsplit(":", 1)[1]


def _clean(result) -> None:
    assert "Traceback" not in result.err and "Exception ignored" not in result.err, result.err


def test_batch_answers_every_line_whatever_is_wrong_with_one(cli, tmp_path):
    write_jsonl(tmp_path / "e.jsonl", [episode(1, words="notes about the garden")])
    assert cli("ingest", str(tmp_path / "e.jsonl")).code == 0
    with LoopbackEmbeddingServer(dim=1024) as server:
        assert cli("index", env={**KEYWORD_ONLY, "OLLAMA_HOST": server.url}).code == 0
    good = {"memory": "alice", "query": "garden", "channels": ["keyword"]}
    lines = [
        json.dumps(good).encode(),
        json.dumps({"memory": "alice", "query": "x", "policy": ["x"]}).encode(),
        b'{"memory": "alice", "query": "caf\xff au lait"}',
        b'{"memory": "alice", "query": "x\\ud800y", "channels": "keyword"}',
        json.dumps({**good, "policy": ""}).encode(),
        json.dumps({"memory": ["alice"], "query": "x"}).encode(),
        json.dumps({**good, "channels": [1]}).encode(),
        b'{"memory": "alice", "query": "x", "limit": 1e400}',
        b"",
        json.dumps({**good, "channels": "keyword"}).encode(),
    ]
    path = tmp_path / "queries.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    result = cli("search", "--batch", str(path), env=KEYWORD_ONLY)
    _clean(result)
    assert result.code == 3
    documents = [json.loads(line) for line in result.out.splitlines()]
    assert [d["line"] for d in documents] == [1, 2, 3, 4, 5, 6, 7, 8, 10]
    errors = {d["line"]: d.get("error") for d in documents}
    assert errors[1] is None and errors[10] is None
    assert documents[0]["results"] and documents[-1]["results"]
    assert errors[2] == "'policy' must be a policy name, got array"
    assert errors[3] == "invalid UTF-8 at byte 34 of the line (0xff)"
    assert errors[4] == "the query contains a lone surrogate (\\ud800), which is not text"
    assert errors[5].startswith("unknown policy ''")
    assert errors[6] == "'memory' must be a memory name, got array"
    assert errors[7] == "'channels' must be a name or a list of names, got [1]"
    assert errors[8] == "'limit' must be a whole number"


def test_bad_queries_and_arguments_exit_2_plainly(cli, tmp_path):
    write_jsonl(tmp_path / "e.jsonl", [episode(1)])
    assert cli("ingest", str(tmp_path / "e.jsonl")).code == 0
    # "\udcff" reaches the process as the raw byte 0xff (os.fsencode), as a shell would pass it.
    invalid = cli("search", "caf\udcff", "--memory", "alice", env=KEYWORD_ONLY)
    _clean(invalid)
    assert invalid.code == 2 and "the query is not valid UTF-8 (byte 0xff)" in invalid.err
    empty_policy = cli("search", "garden", "--memory", "alice", "--policy", "", env=KEYWORD_ONLY)
    _clean(empty_policy)
    assert empty_policy.code == 2 and "unknown policy ''" in empty_policy.err


def test_json_reports_never_carry_raw_bytes(cli, tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    with open(os.path.join(os.fsencode(folder), b"caf\xff.md"), "wb") as handle:
        handle.write(b"a note\n")
    with open(os.path.join(os.fsencode(folder), b"bad\xfe.jsonl"), "wb") as handle:
        handle.write(b"{not json\n")
    proc = cli("ingest", str(folder), "--memory", "alice", "--json")
    _clean(proc)
    assert proc.code == 3
    doc = json.loads(proc.out.encode("utf-8", "surrogateescape").decode("utf-8"))  # strict UTF-8
    assert doc["inserted"] == 1
    assert [r["location"] for r in doc["rejected"]] == [f"{folder}/bad\\xfe.jsonl:1"]


def test_bad_database_urls_exit_7_naming_the_variable(cli):
    for url in (
        "not a url",
        "http://x",
        "postgresql://bob:hunter2@127.0.0.1:port/x",
        "host=127.0.0.1 port=x",
    ):
        result = cli("status", env={"MEMORY_PIPELINE_DATABASE_URL": url})
        _clean(result)
        assert result.code == 7, (url, result.err)
        assert "MEMORY_PIPELINE_DATABASE_URL" in result.err and "hunter2" not in result.err


def test_an_embedding_dimension_the_index_cannot_hold_exits_7(cli, tmp_path):
    write_jsonl(tmp_path / "e.jsonl", [episode(1)])
    assert cli("ingest", str(tmp_path / "e.jsonl")).code == 0
    for value in ("5000", "0"):
        result = cli("index", env={"MEMORY_PIPELINE_EMBED_DIM": value})
        _clean(result)
        assert result.code == 7 and f"MEMORY_PIPELINE_EMBED_DIM={value}" in result.err, result.err


def test_no_password_is_printed_whatever_the_url_form(cli):
    port = _closed_port()
    forms = {  # connection string: (a word of its password, expected exit code)
        f"host=127.0.0.1 port={port} user=bob password=hunter2 dbname=x connect_timeout=2": (
            "hunter2",
            4,
        ),
        f"host=127.0.0.1 port={port} user=bob password='hun ter2' dbname=x": ("ter2", 4),
        f"postgresql://bob:pa:ss%40word@127.0.0.1:{port}/x": ("ss%40word", 4),
        f"postgresql://127.0.0.1:{port}/x?user=bob&password=hunter2": ("hunter2", 4),
        # libpq would read "ter2@127.0.0.1" as the host: refused before connecting, masked whole.
        f"postgresql://bob:hun@ter2@127.0.0.1:{port}/x": ("ter2", 7),
    }
    for url, (secret, code) in forms.items():
        result = cli("status", env={"MEMORY_PIPELINE_DATABASE_URL": url})
        _clean(result)
        assert result.code == code, (url, result.err)
        assert secret not in result.err and secret not in result.out, result.err
        assert "***" in result.err


@pytest.mark.slow
def test_a_server_that_cannot_start_is_reported_by_its_log_not_pg_ctl_command_line(cli):
    home = Path(tempfile.mkdtemp(prefix="mp-"))  # short: unix socket paths are limited
    request_cleanup = shutil.rmtree
    env = {"MEMORY_PIPELINE_DATABASE_URL": None, "MEMORY_PIPELINE_HOME": str(home)}
    assert cli("index", env=env).code == 0  # creates the data folder and its database
    with open(home / "pgdata" / "postgresql.conf", "a", encoding="utf-8") as conf:
        conf.write(
            "\nshared_buffers = 'a lot'\n"
        )  # what a truncated file on a full disk looks like
    result = cli("status", env=env)
    assert result.code == 4, result.err
    assert (
        "Traceback" not in result.err and "pg_ctl'" not in result.err and "'-w'" not in result.err
    )
    message = [line for line in result.err.splitlines() if line.startswith("memory-pipeline:")]
    assert message[0].startswith(
        "memory-pipeline: the database is unavailable: the embedded PostgreSQL"
    )
    assert (
        'invalid value for parameter "shared_buffers"' in message[0] and "MB free on" in message[0]
    )
    request_cleanup(home, ignore_errors=True)


def test_a_data_folder_initdb_refuses_is_reported_by_initdbs_own_words(cli):
    home = Path(tempfile.mkdtemp(prefix="mp-"))
    (home / "pgdata").mkdir()
    (home / "pgdata" / "notes.txt").write_text("not a database\n", encoding="utf-8")
    try:
        result = cli(
            "index", env={"MEMORY_PIPELINE_DATABASE_URL": None, "MEMORY_PIPELINE_HOME": str(home)}
        )
    finally:
        shutil.rmtree(home, ignore_errors=True)
    assert result.code == 4, result.err
    assert "Traceback" not in result.err
    message = [line for line in result.err.splitlines() if line.startswith("memory-pipeline:")]
    assert "initdb failed with exit status 1: initdb: error: directory" in message[0], message
    assert "exists but is not empty" in message[0], message


# Malformed model-server URLs: each names its variable and exits 7, wherever it is read (status
# shows the embedding settings, index builds the embedder, search the reranker).
BAD_URLS = {
    "http://[::1": "an IPv6 address must be whole and in brackets",
    "::::": "the port must be a number from 1 to 65535",
    "http://127.0.0.1:99999": "the port must be a number from 1 to 65535",
    "ftp://127.0.0.1": "not an http or https URL",
    "http://": "no host name",
    "http://local host:80": "a URL has no spaces",
}


@pytest.mark.parametrize(
    "command", [("status",), ("index",), ("search", "garden", "--memory", "a")]
)
def test_a_malformed_ollama_host_exits_7_naming_it(cli, command):
    for url, reason in BAD_URLS.items():
        result = cli(*command, env={"MEMORY_PIPELINE_EMBED_PROVIDER": "ollama", "OLLAMA_HOST": url})
        _clean(result)
        assert result.code == 7, (url, result.err)
        assert result.err.startswith(f"memory-pipeline: OLLAMA_HOST={url!r}: {reason}"), result.err


def test_malformed_embed_and_rerank_urls_exit_7_naming_them(cli):
    for url, reason in BAD_URLS.items():
        if url == "::::":  # a scheme-less form: read as the scheme "" (not http), said so below
            continue
        for name, command in (
            ("MEMORY_PIPELINE_EMBED_URL", ("index",)),
            ("MEMORY_PIPELINE_RERANK_URL", ("search", "garden", "--memory", "a")),
        ):
            result = cli(*command, env={name: url})
            _clean(result)
            assert result.code == 7, (name, url, result.err)
            assert result.err.startswith(f"memory-pipeline: {name}={url!r}: {reason}"), result.err
    detected = cli("status", env={"MEMORY_PIPELINE_EMBED_URL": "::::"})
    _clean(detected)
    assert detected.code == 7 and "MEMORY_PIPELINE_EMBED_URL='::::': not an http" in detected.err
    # The forms Ollama's own client takes still work: a bare HOST:PORT, a bracketed IPv6 address.
    for url in ("127.0.0.1:9", "http://[::1]:9"):
        ok = cli("status", env={"MEMORY_PIPELINE_EMBED_PROVIDER": "ollama", "OLLAMA_HOST": url})
        assert ok.code == 0 and f"Ollama's /api/embed at {url}" in ok.out, ok.err


def test_a_data_folder_that_is_a_file_or_cannot_be_made_exits_7(cli, tmp_path):
    a_file = tmp_path / "a-file"
    a_file.write_text("not a folder\n", encoding="utf-8")
    cases = {
        str(a_file): "a file is in the way",
        str(a_file / "below"): "a file is in the way",
        "/proc/memory-pipeline-home": "cannot create the folder",
    }
    for home, reason in cases.items():
        for command in ("status", "index", "ui"):
            result = cli(
                command, env={"MEMORY_PIPELINE_DATABASE_URL": None, "MEMORY_PIPELINE_HOME": home}
            )
            _clean(result)
            assert result.code == 7, (home, command, result.err)
            assert result.err.startswith(f"memory-pipeline: MEMORY_PIPELINE_HOME={home}: {reason}")
    assert a_file.read_text(encoding="utf-8") == "not a folder\n"


@pytest.mark.parametrize("command", [("status",), ("status", "--json"), ("version",)])
def test_a_reader_that_went_away_ends_the_command_quietly(cli, command):
    """`memory-pipeline status | head -1`, with the reader gone before the first write (the
    race `head` only sometimes wins): no BrokenPipeError trace, 141 as for a tool SIGPIPE ends."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        proc = subprocess.run(
            [str(SCRIPT), *command],
            env=cli.environment(None),
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=180,
        )
    finally:
        os.close(write_end)
    assert proc.returncode == 141, proc.stderr
    assert proc.stderr == "", proc.stderr


def test_status_piped_into_head_prints_its_first_line_and_no_trace(cli):
    shell = subprocess.run(
        f"'{SCRIPT}' status | head -1",
        shell=True,
        env=cli.environment(None),
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert shell.stdout.startswith("version:"), shell.stdout
    assert shell.stderr == "", shell.stderr


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (
            "default:\n  kinds: " + "[" * 50_000 + "]" * 50_000 + "\n",
            ":2: invalid YAML: nested deeper",
        ),
        ("default: {}\n" + "# padding\n" * 120_000, "larger than 1 MiB"),
    ],
    ids=["nested-50000-deep", "over-1-MiB"],
)
def test_a_hostile_policies_file_exits_7_naming_the_variable(cli, tmp_path, body, reason):
    path = tmp_path / "policies.yaml"
    path.write_text(body, encoding="utf-8")
    result = cli(
        "search",
        "garden",
        "--memory",
        "alice",
        env={**KEYWORD_ONLY, "MEMORY_PIPELINE_POLICIES": str(path)},
    )
    _clean(result)
    assert result.code == 7, result.err
    assert result.err.startswith(f"memory-pipeline: MEMORY_PIPELINE_POLICIES: {path}")
    assert reason in result.err


def _without_root_privilege() -> list[str]:
    """A command prefix under which file modes bind: root reads any folder unless it drops the
    capabilities that let it (setpriv); anyone else needs nothing."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv, every folder is readable")
    return [setpriv, "--bounding-set=-dac_override,-dac_read_search", "--inh-caps=-all"]


@pytest.mark.parametrize("command", ["status", "memories", "index"])
def test_a_home_whose_data_folder_cannot_be_read_exits_7_naming_the_variable(tmp_path, command):
    home = tmp_path / "home"
    (home / "pgdata").mkdir(parents=True)
    (home / "pgdata").chmod(0)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_PIPELINE_")}
    env["MEMORY_PIPELINE_HOME"] = str(home)
    try:
        proc = subprocess.run(
            [*_without_root_privilege(), str(SCRIPT), command],
            env={**env, **KEYWORD_ONLY},
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        (home / "pgdata").chmod(0o700)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 7, proc.stderr
    assert proc.stderr.startswith(f"memory-pipeline: MEMORY_PIPELINE_HOME={home}: cannot use ")
    assert "(Permission denied)" in proc.stderr
