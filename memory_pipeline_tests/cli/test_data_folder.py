"""One data folder per user, whatever the working directory: with nothing set, every command
uses ``$XDG_DATA_HOME/memory_pipeline`` (else ``~/.local/share/memory_pipeline``), and a
command that only reads never creates a database. HOME and XDG_DATA_HOME point at temporary
folders here: the real ones are never written."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from memory_pipeline import config
from memory_pipeline_tests.cli.conftest import SCRIPT, Result
from memory_pipeline_tests.support.loopback import LoopbackEmbeddingServer
from memory_pipeline_tests.support.processes import stop_left_servers


def test_the_data_folder_is_the_users_data_folder_unless_home_is_set():
    assert config.home_dir({"HOME": "/u/ann"}) == Path("/u/ann/.local/share/memory_pipeline")
    xdg = {"HOME": "/u/ann", "XDG_DATA_HOME": "/data/ann"}
    assert config.home_dir(xdg) == Path("/data/ann/memory_pipeline")
    # The XDG rule: a relative XDG_DATA_HOME is ignored.
    relative = {"HOME": "/u/ann", "XDG_DATA_HOME": "data"}
    assert config.home_dir(relative) == Path("/u/ann/.local/share/memory_pipeline")
    assert config.home_dir({**xdg, "MEMORY_PIPELINE_HOME": "/srv/mp"}) == Path("/srv/mp")
    assert config.data_location({"HOME": "/u/ann"}) == (
        "the data folder /u/ann/.local/share/memory_pipeline"
    )


def _user_env(user_home: Path, **extra: str) -> dict[str, str]:
    """The environment of a user who set nothing of ours, whose home is ``user_home``."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("MEMORY_PIPELINE_", "OLLAMA_", "DAGSTER_", "XDG_DATA_HOME"))
    }
    env["HOME"] = str(user_home)
    env.update(extra)
    return env


def _run(cwd: Path, env: dict[str, str], *args: str) -> Result:
    done = subprocess.run(
        [str(SCRIPT), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )
    return Result(done.returncode, done.stdout, done.stderr)


@pytest.fixture
def user_home():
    home = Path(tempfile.mkdtemp(prefix="mpu"))  # short: unix socket paths are limited
    yield home
    stop_left_servers([home])
    shutil.rmtree(home, ignore_errors=True)


@pytest.mark.slow
def test_ingest_in_one_folder_and_search_from_another_find_the_same_note(user_home, tmp_path):
    notes, elsewhere = tmp_path / "notes", tmp_path / "elsewhere"
    notes.mkdir()
    elsewhere.mkdir()
    (notes / "bread.md").write_text("# Bread\n\nSourdough needs a warm kitchen.\n")
    with LoopbackEmbeddingServer(dim=1024) as server:
        env = _user_env(user_home, MEMORY_PIPELINE_EMBED_PROVIDER="ollama", OLLAMA_HOST=server.url)
        ingested = _run(notes, env, "ingest", "bread.md", "--memory", "me")
        assert ingested.code == 0, ingested.err
        indexed = _run(elsewhere, env, "index")
        assert indexed.code == 0, indexed.err
        found = _run(elsewhere, env, "search", "sourdough kitchen", "--memory", "me", "--json")
        assert found.code == 0, found.err
        status = _run(tmp_path, env, "status")
        other = _run(tmp_path, env, "search", "bread", "--memory", "you")
    assert [r["title"] for r in found.json()["results"]] == ["Bread"]
    data = user_home / ".local" / "share" / "memory_pipeline"
    assert f"data folder:      {data}" in status.out
    assert (data / "pgdata" / "PG_VERSION").is_file()
    assert other.code == 2
    assert f"unknown memory 'you' in the data folder {data} (existing: me)" in other.err
    assert not (notes / ".memory_pipeline").exists()
    assert not (elsewhere / ".memory_pipeline").exists()


def test_reading_commands_in_a_fresh_environment_create_no_database(user_home, tmp_path):
    env = _user_env(user_home, XDG_DATA_HOME=str(user_home / "xdg"))
    data = user_home / "xdg" / "memory_pipeline"

    status = _run(tmp_path, env, "status")
    assert status.code == 0, status.err
    assert f"data folder:      {data}" in status.out
    assert "database:         none yet" in status.out
    listed = _run(tmp_path, env, "memories")
    assert listed.code == 0, listed.err
    assert listed.out.startswith(f"no memories yet in the data folder {data} ")
    assert _run(tmp_path, env, "memories", "--json").out.strip() == "[]"
    searched = _run(tmp_path, env, "search", "bread", "--memory", "me")
    assert searched.code == 2
    assert f"unknown memory 'me': no memories yet in the data folder {data}" in searched.err
    read = _run(tmp_path, env, "read", "1")
    assert read.code == 2
    assert str(data) in read.err
    assert "Traceback" not in status.err + listed.err + searched.err + read.err
    assert not data.exists()
    assert not (tmp_path / ".memory_pipeline").exists()


def test_a_data_folder_left_in_the_working_directory_is_named_in_a_warning(user_home, tmp_path):
    old = tmp_path / ".memory_pipeline"
    (old / "pgdata").mkdir(parents=True)
    (old / "pgdata" / "PG_VERSION").write_text("16\n")
    env = _user_env(user_home)
    listed = _run(tmp_path, env, "memories")
    assert listed.code == 0, listed.err
    assert f"warning: {old} is not read: the data folder is {user_home}" in listed.err
    assert "MEMORY_PIPELINE_HOME=" in listed.err
