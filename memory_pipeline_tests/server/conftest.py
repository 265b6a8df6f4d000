"""A real ``memory-pipeline serve`` process on loopback over a fresh test database."""

from __future__ import annotations

import httpx
import pytest

from memory_pipeline import Memory
from memory_pipeline_tests.helpers import QWEN
from memory_pipeline_tests.support.loopback import LoopbackEmbeddingServer
from memory_pipeline_tests.support.service import ServerProcess, service_env


@pytest.fixture
def model():
    with LoopbackEmbeddingServer(dim=512, models={QWEN}) as server:
        yield server


@pytest.fixture
def env(db_url, model, tmp_path):
    return service_env(db_url, model.url, tmp_path / "home")


@pytest.fixture
def local(db_url, model):
    """The same database through the Python API, to arrange data and check tables."""
    with Memory.open(
        url=db_url, embed_provider="ollama", embed_url=model.url, record_in_dagster=False
    ) as mem:
        yield mem


@pytest.fixture
def api(env):
    server = ServerProcess(["serve", "--port", "0"], env)
    with httpx.Client(base_url=server.url, timeout=60) as client:
        client.server = server
        yield client
    assert server.close() in (0, 143), "".join(server.stderr)  # 143: stopped by SIGTERM, as asked
    assert "Traceback" not in "".join(server.stderr)
