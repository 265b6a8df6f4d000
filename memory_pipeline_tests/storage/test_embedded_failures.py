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


@pytest.mark.slow
def test_a_killed_server_leaves_no_exception_at_exit():
    # Not under pytest's basetemp, which other pytest processes of the same user may prune.
    home = Path(tempfile.mkdtemp(prefix="mp-"))
    try:
        proc = subprocess.run([sys.executable, "-c", KILL_THEN_EXIT, str(home / "home")],
                              capture_output=True, text=True, timeout=120)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    assert proc.returncode == 0 and proc.stdout.strip() == "leaving"
    assert "Exception ignored" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert "Failed" not in proc.stderr, proc.stderr
