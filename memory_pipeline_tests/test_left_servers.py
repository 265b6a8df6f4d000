"""The test session's safety net: a PostgreSQL left running in its folders is stopped and named."""

from __future__ import annotations

import subprocess
import sys

import pytest

from memory_pipeline_tests.support.processes import (
    LeftServerWarning,
    postmasters_under,
    stop_left_servers,
)


def test_a_server_left_in_a_session_folder_is_stopped_and_named(tmp_path):
    # A process that looks like a postmaster to the process table (named postgres, `-D` a folder
    # under the session's) without the seconds an initdb costs: a script of that name that waits.
    fake = tmp_path / "bin" / "postgres"
    fake.parent.mkdir()
    # It ends on SIGINT as PostgreSQL does (its own handler: a test run started in the background
    # inherits SIGINT ignored, which Python would keep).
    fake.write_text(
        f"#!{sys.executable}\nimport signal, sys, time\n"
        "signal.signal(signal.SIGINT, lambda *_: sys.exit(1))\n"
        "print('ready', flush=True)\ntime.sleep(600)\n"
    )
    fake.chmod(0o755)
    pgdata = tmp_path / "home" / "pgdata"
    other = subprocess.Popen(
        [str(fake), "-D", "/elsewhere/pgdata"], stdout=subprocess.DEVNULL
    )  # not ours
    left = subprocess.Popen([str(fake), "-D", str(pgdata)], stdout=subprocess.PIPE)
    try:
        assert left.stdout.readline() == b"ready\n"  # signalled only once it runs
        assert [p.pid for p in postmasters_under(tmp_path / "home")] == [left.pid]
        with pytest.warns(LeftServerWarning, match=f"under {tmp_path}.*{left.pid}"):
            stop_left_servers([tmp_path])
        assert (
            postmasters_under(tmp_path / "home") == [] and other.poll() is None
        )  # it, and only it
        stop_left_servers([tmp_path])  # nothing left: no warning (-W error would raise)
    finally:
        for proc in (other, left):
            proc.kill()
            proc.wait()
        left.stdout.close()
