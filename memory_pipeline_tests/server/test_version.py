"""One version everywhere a user or a client asks: the package, the CLI, the HTTP API, the MCP server."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import tomllib
from importlib.metadata import version
from pathlib import Path

from mcp import Client
from mcp.client.stdio import StdioServerParameters

import memory_pipeline
from memory_pipeline_tests.server.test_tokens_isolation import create_token, ep
from memory_pipeline_tests.support.service import CLI

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def _declared() -> str:
    with PYPROJECT.open("rb") as file:
        return tomllib.load(file)["project"]["version"]


def test_the_package_version_is_the_installed_metadata():
    assert memory_pipeline.__version__ == version("memory_pipeline") == _declared()


def test_the_command_line_says_its_version_three_ways():
    expected = f"memory-pipeline {_declared()}"
    for flag in ("--version", "-V"):
        done = subprocess.run([*CLI, flag], capture_output=True, text=True, timeout=60)
        assert (done.returncode, done.stdout.strip(), done.stderr) == (0, expected, ""), flag
    done = subprocess.run([*CLI, "version"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == expected
    assert f"dagster {version('dagster')}" in lines
    assert any(line.startswith("python 3.") for line in lines)


def test_the_http_api_reports_its_version(api):
    status = api.get("/v1/status")
    assert status.status_code == 200
    assert status.json()["version"] == _declared()
    assert api.get("/openapi.json").json()["info"]["version"] == _declared()


def test_the_http_status_of_a_scoped_token_carries_the_version(api, env, local):
    local.add([ep("alice", "Bread", "Sourdough needs a warm kitchen.")])
    token = create_token(env, "reader", "--memory", "alice")
    status = api.get("/v1/status", headers={"Authorization": f"Bearer {token}"})
    assert status.status_code == 200, status.text
    assert status.json()["version"] == _declared()


def test_the_mcp_server_names_its_version_in_server_info(env):
    async def session() -> tuple[str, str]:
        params = StdioServerParameters(
            command=sys.executable, args=["-m", "memory_pipeline.cli.main", "mcp"], env=env
        )
        async with Client(params) as client:
            info = client.server_info
            return info.name, info.version

    assert asyncio.run(session()) == ("memory_pipeline", _declared())
