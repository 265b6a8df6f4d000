"""Shared fixtures: one real embedded PostgreSQL per test session, a fresh database per test.

Each test gets its own database cloned from a migrated template (fast, and tests cannot see
each other's rows). The server is started in a temporary folder and stopped at the end of the
session, leaving no process behind.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from pathlib import Path

import psycopg
import pytest

from memory_pipeline.storage.database import Database
from memory_pipeline.storage.embedded import ensure_embedded_server
from memory_pipeline.storage.migrations import apply_migrations
from memory_pipeline_tests.support.processes import stop_left_servers

TEMPLATE = "mp_test_template"


# Fixtures that start the console script as a process of its own: ``cli`` (each call imports the
# package and Dagster anew, seconds apiece) and ``api`` (a ``memory-pipeline serve``).
PROCESS_FIXTURES = {"cli", "api"}


# Fixtures every test process starts once for itself (one embedded PostgreSQL per pytest-xdist
# worker): cheap enough to repeat, so they do not tie tests to one worker.
PER_WORKER_FIXTURES = {"isolated_home", "pg_server", "template_database"}


# First: pytest-xdist's own hook turns the xdist_group marks into node ids for --dist loadgroup.
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items):
    """A test that uses a process fixture is ``slow``: the inner loop (``pytest -m "not slow"``)
    leaves it to the full suite. Tests that start processes otherwise carry the mark themselves.

    Tests that share an expensive fixture wider than a function (``ui`` starts ``dagster dev``, a
    module's fixture ingests a corpus, ``installed_package`` builds a wheel) run in one xdist
    group, so ``--dist loadgroup`` sets each up once rather than once per worker.
    """
    for item in items:
        if PROCESS_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)
    for item, group in shared_fixture_groups(items).items():
        item.add_marker(pytest.mark.xdist_group(group))


def shared_fixture_groups(items) -> dict:
    """Each test that uses one of this suite's fixtures wider than a function, mapped to a group
    name; tests joined by any such fixture, directly or through others, share one group."""
    parent: dict[str, str] = {}

    def root(key: str) -> str:
        while parent.setdefault(key, key) != key:
            key = parent[key]
        return key

    keys_of = {}
    for item in items:
        info = getattr(item, "_fixtureinfo", None)
        keys = []
        for name, definitions in (info.name2fixturedefs if info else {}).items():
            definition = definitions[-1]  # the one in effect for this test
            if name in PER_WORKER_FIXTURES or definition.scope == "function":
                continue
            if not definition.baseid:  # pytest's and plugins' own (tmp_path_factory): cheap
                continue
            # No "@" in a group's name: pytest-xdist reads the group back as what follows the
            # node id's last "@". A fixture per module is named with its module.
            where = f" in {item.module.__name__}" if definition.scope in ("module", "class") else ""
            keys.append(f"{definition.baseid}::{name}{where}")
        for key in keys[1:]:
            parent[root(key)] = root(keys[0])
        if keys:
            keys_of[item] = keys[0]
    return {item: root(key) for item, key in keys_of.items()}


@pytest.fixture(scope="session", autouse=True)
def isolated_home():
    """Never touch the developer's data folder or their configured servers.

    Not under pytest's basetemp: a second pytest process prunes old basetemp folders, and must
    not delete a running session's database. Short, too: unix socket paths are limited.
    """
    home = Path(tempfile.mkdtemp(prefix="mp-test-"))
    # COLUMNS and LINES too: pytest-xdist sets them in its workers (80 columns), and tables and
    # the commands the tests start would lay out for a terminal that is not there.
    saved = {
        k: v
        for k, v in os.environ.items()
        if k.startswith(("MEMORY_PIPELINE_", "OLLAMA_", "DAGSTER_HOME"))
        or k in ("COLUMNS", "LINES", "XDG_DATA_HOME")
    }
    for key in saved:
        del os.environ[key]
    os.environ["MEMORY_PIPELINE_HOME"] = str(home)
    # A test that unsets MEMORY_PIPELINE_HOME (the default data folder, plain `dagster dev`)
    # finds the user's data folder here, never in the real home.
    os.environ["XDG_DATA_HOME"] = str(home / "xdg-data")
    yield home
    os.environ.pop("XDG_DATA_HOME", None)
    os.environ.update(saved)
    shutil.rmtree(home, ignore_errors=True)


@pytest.fixture(scope="session")
def pg_server(isolated_home, tmp_path_factory):
    server = ensure_embedded_server(isolated_home)
    yield server
    server.release()
    stop_left_servers([isolated_home, tmp_path_factory.getbasetemp()])


@pytest.fixture(scope="session")
def template_database(pg_server) -> str:
    with psycopg.connect(pg_server.uri("postgres"), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{TEMPLATE}"')
        conn.execute(f'CREATE DATABASE "{TEMPLATE}"')
    with psycopg.connect(pg_server.uri(TEMPLATE), autocommit=True) as conn:
        apply_migrations(conn)
    return TEMPLATE


def create_database(pg_server, template: str | None = TEMPLATE) -> str:
    name = "t_" + uuid.uuid4().hex[:12]
    with psycopg.connect(pg_server.uri("postgres"), autocommit=True) as conn:
        if template:
            conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
        else:
            conn.execute(f'CREATE DATABASE "{name}"')
    return name


def drop_database(pg_server, name: str) -> None:
    with psycopg.connect(pg_server.uri("postgres"), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def db_url(pg_server, template_database):
    name = create_database(pg_server, template_database)
    yield pg_server.uri(name)
    drop_database(pg_server, name)


@pytest.fixture
def db(db_url):
    database = Database.open(db_url)
    yield database
    database.close()


# A Memory over the test database whose model is a loopback Ollama server (the Python API's tests).
@pytest.fixture
def model():
    from memory_pipeline_tests.helpers import QWEN
    from memory_pipeline_tests.support.loopback import LoopbackEmbeddingServer

    with LoopbackEmbeddingServer(dim=512, models={QWEN}) as server:
        yield server


@pytest.fixture
def mem(db_url, model):
    from memory_pipeline import Memory

    with Memory.open(
        url=db_url, embed_provider="ollama", embed_url=model.url, record_in_dagster=False
    ) as memory:
        yield memory


# The package built as a wheel and installed outside the checkout (built once per session, when
# a test asks for it: the demo runs from it).
@pytest.fixture(scope="session")
def installed_package(tmp_path_factory):
    from memory_pipeline_tests.support.wheel import build_wheel, install

    folder = tmp_path_factory.mktemp("package")
    return install(build_wheel(folder / "dist"), folder / "venv")
