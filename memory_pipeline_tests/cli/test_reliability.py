"""Hostile input and bad configuration through the real console script: every line answered,
docs/cli.md's exit codes, no traceback, no password in any output."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest

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
    assert cli("status", "--json", env=env).code == 0  # creates the data folder
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
            "status", env={"MEMORY_PIPELINE_DATABASE_URL": None, "MEMORY_PIPELINE_HOME": str(home)}
        )
    finally:
        shutil.rmtree(home, ignore_errors=True)
    assert result.code == 4, result.err
    assert "Traceback" not in result.err
    message = [line for line in result.err.splitlines() if line.startswith("memory-pipeline:")]
    assert "initdb failed with exit status 1: initdb: error: directory" in message[0], message
    assert "exists but is not empty" in message[0], message
