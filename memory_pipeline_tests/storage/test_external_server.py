"""An external PostgreSQL without pgvector is refused with a clear error, before anything is created.

The embedded server ships pgvector, so this needs a second, real server that lacks it: the
distribution's PostgreSQL (Debian 12 has PostgreSQL 15 and no pgvector package). The fixture
uses an installed ``/usr/lib/postgresql/*/bin/initdb``, installing ``postgresql-15`` with apt
when it is missing and we are root, and otherwise skips. It never uses the package's own
cluster: it ``initdb``s a throwaway data directory in a temporary folder, starts it on a free
loopback port with trust authentication, and stops it and deletes the folder at the end.
"""

from __future__ import annotations

import glob
import os
import pwd
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psycopg
import pytest

from memory_pipeline.errors import ExitCode, MissingExtension
from memory_pipeline.storage.database import Database

SCRIPT = Path(sys.executable).with_name("memory-pipeline")
PASSWORD = "not-a-real-s3cret"
APT_TIMEOUT = 300
APT_ENV = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}


def _find_initdb() -> Path | None:
    """The newest installed distribution PostgreSQL's initdb, if any."""

    def version(path: str) -> tuple[int, ...]:
        match = re.search(r"/postgresql/([\d.]+)/bin/", path)
        return tuple(int(p) for p in match.group(1).split(".")) if match else (0,)

    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=version)
    return Path(found[-1]) if found else None


# Installing the server with apt takes a while; a machine that already has it runs this module
# in a couple of seconds, so only then is it an ordinary (not slow) test module.
pytestmark = pytest.mark.slow if _find_initdb() is None else []


def _online_clusters() -> set[tuple[str, str]]:
    """(version, name) of the Debian-managed clusters that are running now."""
    if shutil.which("pg_lsclusters") is None:
        return set()
    proc = subprocess.run(
        ["pg_lsclusters", "--no-header"], check=False, capture_output=True, text=True
    )
    online = set()
    for line in proc.stdout.splitlines():
        fields = line.split()
        if len(fields) >= 4 and fields[3].startswith("online"):
            online.add((fields[0], fields[1]))
    return online


def _apt_install() -> str | None:
    """Install the distribution PostgreSQL; returns why it could not, or None."""
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        return "no /usr/lib/postgresql/*/bin/initdb, and not root with apt-get to install postgresql-15"
    before = _online_clusters()
    last = ""
    try:
        for update_first in (False, True):
            if update_first:
                subprocess.run(
                    ["apt-get", "update"],
                    env=APT_ENV,
                    check=False,
                    capture_output=True,
                    timeout=APT_TIMEOUT,
                )
            for package in ("postgresql-15", "postgresql"):
                proc = subprocess.run(
                    ["apt-get", "install", "-y", "--no-install-recommends", package],
                    env=APT_ENV,
                    check=False,
                    capture_output=True,
                    text=True,
                    timeout=APT_TIMEOUT,
                )
                if proc.returncode == 0 and _find_initdb() is not None:
                    return None
                lines = (proc.stderr.strip() or proc.stdout.strip()).splitlines()
                last = lines[-1] if lines else f"exit status {proc.returncode}"
    except subprocess.TimeoutExpired:
        return f"apt-get took longer than {APT_TIMEOUT} s"
    finally:
        # The package's postinst creates a 'main' cluster and starts it where it can (no
        # policy-rc.d veto, a service manager): stop whatever the install started.
        for ver, name in sorted(_online_clusters() - before):
            subprocess.run(
                ["pg_ctlcluster", ver, name, "stop"], check=False, capture_output=True, timeout=60
            )
    return f"apt-get install postgresql-15 failed: {last}"


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def plain_postgres_url():
    """``postgresql://postgres@127.0.0.1:PORT/postgres`` of a fresh server without pgvector."""
    initdb = _find_initdb()
    if initdb is None:
        started = time.monotonic()
        reason = _apt_install()
        if reason:
            pytest.skip(reason)
        print(f"installed postgresql-15 with apt in {time.monotonic() - started:.0f} s")
        initdb = _find_initdb()
    bindir = initdb.parent

    prefix: list[str] = []
    owner = None
    if os.geteuid() == 0:  # postgres refuses to run as root
        try:
            owner = pwd.getpwnam("postgres")
        except KeyError:
            pytest.skip("running as root and there is no 'postgres' user to run the server as")
        # runuser lives in /usr/sbin, which a minimal PATH (env -i, some CI images) leaves out.
        runuser = shutil.which("runuser") or shutil.which("runuser", path="/usr/sbin:/sbin")
        if runuser is None:
            pytest.skip("running as root and there is no runuser to run the server as 'postgres'")
        prefix = [runuser, "-u", "postgres", "--"]

    root = Path(tempfile.mkdtemp(prefix="mp-pg15-"))  # short: unix socket paths are limited
    data = root / "data"
    log = root / "server.log"
    if owner is not None:
        os.chown(root, owner.pw_uid, owner.pw_gid)

    def run(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
        # cwd=root: the postgres user may not be able to read the current directory.
        return subprocess.run(
            [*prefix, *args], cwd=root, check=False, capture_output=True, text=True, timeout=timeout
        )

    started = False
    try:
        proc = run(
            str(bindir / "initdb"),
            "-D",
            str(data),
            "-U",
            "postgres",
            "-A",
            "trust",
            "-E",
            "UTF8",
            "--locale=C",
            "--no-sync",
            "--no-instructions",
        )
        assert proc.returncode == 0, f"initdb failed:\n{proc.stdout}\n{proc.stderr}"
        for _attempt in range(3):  # another process may take the free port before we bind it
            port = _free_port()
            options = f"-k {root} -h 127.0.0.1 -p {port} -F"
            proc = run(
                str(bindir / "pg_ctl"),
                "-D",
                str(data),
                "-l",
                str(log),
                "-o",
                options,
                "-w",
                "-t",
                "60",
                "start",
            )
            if proc.returncode == 0:
                started = True
                break
        if not started:
            log_text = log.read_text(errors="replace") if log.exists() else ""
            pytest.fail(f"pg_ctl start failed:\n{proc.stdout}\n{proc.stderr}\n{log_text}")

        url = f"postgresql://postgres@127.0.0.1:{port}/postgres"
        with psycopg.connect(url, autocommit=True, connect_timeout=10) as conn:
            row = conn.execute(
                "SELECT default_version FROM pg_available_extensions WHERE name = 'vector'"
            ).fetchone()
        if row is not None:
            pytest.skip(f"the distribution PostgreSQL in {bindir} has pgvector {row[0]}")
        yield url
    finally:
        if started or (data / "postmaster.pid").exists():
            proc = run(
                str(bindir / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "-t", "60", "stop"
            )
            if proc.returncode != 0 and (data / "postmaster.pid").exists():
                pid = int((data / "postmaster.pid").read_text().split()[0])
                os.kill(pid, 9)
        shutil.rmtree(root, ignore_errors=True)


def _with_password(url: str) -> str:
    # Trust authentication ignores the password; it is only there to check it is not shown.
    return url.replace("postgresql://postgres@", f"postgresql://postgres:{PASSWORD}@")


def _user_objects(url: str) -> list[str]:
    with psycopg.connect(url, autocommit=True, connect_timeout=10) as conn:
        rows = conn.execute(
            """SELECT n.nspname || '.' || c.relname FROM pg_class c
               JOIN pg_namespace n ON n.oid = c.relnamespace
               WHERE n.nspname NOT IN ('pg_catalog', 'information_schema')
                 AND n.nspname NOT LIKE 'pg_toast%'
               UNION ALL
               SELECT 'extension ' || extname FROM pg_extension WHERE extname <> 'plpgsql'"""
        ).fetchall()
    return sorted(r[0] for r in rows)


def test_open_raises_missing_extension(plain_postgres_url):
    url = _with_password(plain_postgres_url)
    with pytest.raises(MissingExtension) as info:
        Database.open(url)
    message = str(info.value)
    assert "'vector' extension" in message
    assert "pgvector >= 0.7" in message
    assert "127.0.0.1" in message
    assert PASSWORD not in message
    assert info.value.exit_code == ExitCode.CONFIGURATION == 7


def test_cli_status_exits_7_with_the_message(plain_postgres_url, tmp_path):
    url = _with_password(plain_postgres_url)
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("MEMORY_PIPELINE_", "OLLAMA_", "DAGSTER_"))
    }
    env.update(
        {"MEMORY_PIPELINE_HOME": str(tmp_path / "home"), "MEMORY_PIPELINE_DATABASE_URL": url}
    )
    proc = subprocess.run(
        [str(SCRIPT), "status"], env=env, check=False, capture_output=True, text=True, timeout=180
    )
    assert proc.returncode == 7, (proc.stdout, proc.stderr)
    assert "has no 'vector' extension (pgvector >= 0.7 is required)" in proc.stderr
    assert "the PostgreSQL server at postgresql://postgres:***@127.0.0.1:" in proc.stderr
    assert PASSWORD not in proc.stderr + proc.stdout
    assert "Traceback" not in proc.stderr


def test_nothing_is_created_before_the_check(plain_postgres_url):
    with pytest.raises(MissingExtension):
        Database.open(plain_postgres_url)
    with psycopg.connect(plain_postgres_url, autocommit=True, connect_timeout=10) as conn:
        assert conn.execute("SELECT to_regclass('public.schema_migrations')").fetchone()[0] is None
    assert _user_objects(plain_postgres_url) == []
