"""Processes a test run may leave behind, found by what their command lines name.

A leftover PostgreSQL is found by its data folder (the postmaster's ``-D`` argument), not by the
pid a server handle remembers: the handle can name a server that already stopped while another
one, started by a subprocess in the same folder, still runs.
"""

from __future__ import annotations

import os
import signal
import warnings
from pathlib import Path

import psutil


def processes_naming(text: str) -> list[psutil.Process]:
    """Every other process whose command line contains ``text``."""
    found = []
    for proc in psutil.process_iter(["pid", "cmdline"]):
        try:
            cmdline = " ".join(proc.info["cmdline"] or [])
        except (psutil.Error, TypeError):
            continue
        if text in cmdline and proc.pid != os.getpid():
            found.append(proc)
    return found


def describe(procs: list[psutil.Process]) -> list[str]:
    """``pid command line`` of each process (cut at 160 characters)."""
    out = []
    for proc in procs:
        try:
            out.append(f"{proc.pid} {' '.join(proc.cmdline())[:160]}")
        except psutil.Error:
            out.append(f"{proc.pid} (gone)")
    return out


def postmasters_under(folder: Path) -> list[psutil.Process]:
    """PostgreSQL postmasters whose data folder is ``folder`` or lies below it."""
    found = []
    for proc in psutil.process_iter(["name", "cmdline"]):
        try:
            cmd = proc.info["cmdline"] or []
        except (psutil.Error, TypeError):
            continue
        if proc.info["name"] != "postgres" or "-D" not in cmd[:-1]:
            continue
        pgdata = Path(cmd[cmd.index("-D") + 1])
        if pgdata == folder or folder in pgdata.parents:
            found.append(proc)
    return found


def stop_postmasters(procs: list[psutil.Process], timeout: float = 30.0) -> None:
    """PostgreSQL's fast shutdown (SIGINT), then SIGKILL for any still running after ``timeout``."""
    for proc in procs:
        try:
            proc.send_signal(signal.SIGINT)
        except psutil.NoSuchProcess:
            pass
    _gone, alive = psutil.wait_procs(procs, timeout=timeout)
    for proc in alive:
        try:
            proc.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(alive, timeout=5)


class LeftServerWarning(UserWarning):
    """A PostgreSQL started for the tests was still running when the session ended."""


def stop_left_servers(folders: list[Path]) -> None:
    """The test session's folders are deleted next: no server may outlive them. ``release()``
    leaves the session's server running while its handle list names another live process (one CI
    run left it so), and a test's subprocess may start one of its own; each is stopped and named
    in the warnings summary (a fixture's teardown output is captured; a warning is shown)."""
    for folder in folders:
        left = postmasters_under(Path(folder).resolve())
        if not left:
            continue
        described = describe(left)
        try:
            holders = (Path(folder) / "pgdata" / ".handle_pids.json").read_text()
        except OSError:
            holders = "none"
        stop_postmasters(left)
        warnings.warn(
            LeftServerWarning(
                f"PostgreSQL left running under {folder}, stopped: {described}; "
                f"handle pids {holders}"
            ),
            stacklevel=2,
        )
