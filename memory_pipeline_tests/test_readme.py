"""The README stays true: every environment variable is documented, the commands exist."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from memory_pipeline.cli.main import build_parser
from memory_pipeline.config import ENV_VARS

README = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
CI = (Path(__file__).resolve().parents[1] / ".ci" / "run").read_text(encoding="utf-8")


def test_every_environment_variable_is_in_the_configuration_table():
    documented = set(re.findall(r"^\| `([A-Z_]+)` \|", README, flags=re.M))
    assert documented == set(ENV_VARS)


def test_every_cli_command_in_the_readme_exists():
    commands = set(build_parser()._subparsers._group_actions[0].choices)
    used = set(re.findall(r"memory-pipeline ([a-z]+)", README))
    assert used <= commands and {"demo", "ingest", "index", "search", "status", "ui"} <= used


def test_ci_runs_the_readmes_test_command():
    command = "pip install -e '.[test]' && pytest"
    assert command in README and command in CI


@pytest.mark.slow
def test_the_python_api_example_runs_as_written(tmp_path):
    """The README's Python example, unchanged, in a fresh process with a fresh data folder."""
    example = re.search(r"### Python API.*?```python\n(.*?)```", README, flags=re.S).group(1)
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("MEMORY_PIPELINE_", "DAGSTER_HOME"))
    }
    env["MEMORY_PIPELINE_HOME"] = str(tmp_path / "home")
    done = subprocess.run(
        [sys.executable, "-c", example],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    first = done.stdout.splitlines()[0].split()
    assert first[1] == "Bread" and float(first[2]) > 0
    assert "'name': 'me'" in done.stdout and "embedded" in done.stdout
