"""The README stays true: every environment variable is documented, the commands exist."""

from __future__ import annotations

import re
from pathlib import Path

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
