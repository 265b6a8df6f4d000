"""The embedded server's settings from the environment: shared_buffers, read at its next start."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import psycopg
import pytest

from memory_pipeline import config
from memory_pipeline.errors import ConfigurationError
from memory_pipeline.storage import embedded, health_store

GIB = 2**30


@pytest.mark.parametrize(
    ("memory", "expected"), [(GIB, "128MB"), (4 * GIB, "512MB"), (64 * GIB, "1024MB")]
)
def test_auto_takes_an_eighth_of_the_memory_between_128mb_and_1gb(memory, expected):
    assert config.embedded_shared_buffers({}, memory=memory) == expected
    environ = {config.SHARED_BUFFERS: " AUTO "}
    assert config.embedded_shared_buffers(environ, memory=memory) == expected


def test_a_size_is_kept_as_written():
    for raw in ("512MB", "2GB", "65536kB", "256 MB"):
        got = config.embedded_shared_buffers({config.SHARED_BUFFERS: raw}, memory=16 * GIB)
        assert got == raw.replace(" ", "")


@pytest.mark.parametrize("raw", ["lots", "512", "512mb", "1TB", "-1GB", "1.5GB", "8MB", "9GB"])
def test_a_bad_size_names_the_variable_and_what_it_takes(raw):
    with pytest.raises(ConfigurationError) as caught:
        config.embedded_shared_buffers({config.SHARED_BUFFERS: raw}, memory=16 * GIB)
    message = str(caught.value)
    assert message.startswith(f"{config.SHARED_BUFFERS}={raw!r}: "), message
    assert "16MB" in message or "512MB" in message, message


def _shared_buffers(server: embedded.EmbeddedServer) -> str:
    with psycopg.connect(server.uri("postgres"), autocommit=True) as conn:
        row = conn.execute("SHOW shared_buffers").fetchone()
    assert row is not None
    return str(row[0])


def _buffers_status(server: embedded.EmbeddedServer) -> dict:
    with psycopg.connect(server.uri("postgres"), autocommit=True) as conn:
        return health_store.shared_buffers(conn, files=True)


@pytest.mark.slow
def test_the_server_takes_the_size_at_its_next_start_and_a_new_value_replaces_it():
    # Not under pytest's basetemp, which other pytest processes of the same user may prune.
    home = Path(tempfile.mkdtemp(prefix="mp-")) / "home"
    try:
        server = embedded.ensure_embedded_server(home, {config.SHARED_BUFFERS: "48MB"})
        server.release()  # the only handle: the server stops
        server = embedded.ensure_embedded_server(home, {config.SHARED_BUFFERS: "48MB"})
        assert _shared_buffers(server) == "48MB"
        assert _buffers_status(server) == {"now": "48MB", "nextStart": None}
        # Another process joining with another value while this one holds the server:
        embedded._write_settings(server.pgdata, {"shared_buffers": "40MB"})
        assert _buffers_status(server) == {"now": "48MB", "nextStart": "40MB"}
        server.release()
        server = embedded.ensure_embedded_server(home, {config.SHARED_BUFFERS: "40MB"})
        assert _shared_buffers(server) == "40MB"
        conf = (home / "pgdata" / "postgresql.conf").read_text(encoding="utf-8")
        assert conf.count(embedded.SETTINGS_FILE) == 1  # included once, however often written
        server.release()
        with pytest.raises(ConfigurationError):
            embedded.ensure_embedded_server(home, {config.SHARED_BUFFERS: "huge"})
    finally:
        shutil.rmtree(home.parent, ignore_errors=True)
