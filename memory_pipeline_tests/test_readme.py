"""The README and docs/ stay true: every environment variable is documented, the commands exist,
the links resolve, the README stays a short guide and its Python example runs."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from memory_pipeline.cli.main import build_parser
from memory_pipeline.config import ENV_VARS

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
CONFIGURATION = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
CI = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
GUIDES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

# What an environment variable's name looks like in this code base: the project's own and those
# of the libraries it configures (Ollama, OpenMP, Dagster).
ENV_NAME = re.compile(r"^(MEMORY_PIPELINE|OLLAMA|GOMP|OMP|DAGSTER)_[A-Z0-9_]+$")


def test_every_environment_variable_is_in_the_configuration_table():
    documented = set(re.findall(r"^\| `([A-Z_]+)` \|", CONFIGURATION, flags=re.M))
    assert documented == set(ENV_VARS)


def test_every_environment_variable_the_code_names_is_documented():
    """Any string literal in the package that names an environment variable (read, or set for a
    child process) is in docs/configuration.md, so a new setting cannot go undocumented."""
    named: dict[str, str] = {}
    for path in sorted((ROOT / "memory_pipeline").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                if ENV_NAME.match(node.value):
                    named.setdefault(node.value, str(path.relative_to(ROOT)))
    assert {"MEMORY_PIPELINE_HOME", "OMP_WAIT_POLICY", "DAGSTER_HOME"} <= set(named)
    missing = {name: where for name, where in named.items() if f"`{name}`" not in CONFIGURATION}
    assert not missing, f"not in docs/configuration.md: {missing}"


def test_the_docs_name_no_variable_the_code_does_not_read():
    mentioned = set()
    for path in GUIDES:
        for name in re.findall(r"MEMORY_PIPELINE_[A-Z0-9_]+", path.read_text(encoding="utf-8")):
            if not name.endswith("_"):  # MEMORY_PIPELINE_EMBED_* and the like
                mentioned.add(name)
    assert mentioned <= set(ENV_VARS), mentioned - set(ENV_VARS)


def test_every_cli_command_in_the_readme_and_docs_exists():
    commands = set(build_parser()._subparsers._group_actions[0].choices)
    used = set()
    for path in GUIDES:
        used |= set(re.findall(r"memory-pipeline ([a-z]+)", path.read_text(encoding="utf-8")))
    assert used <= commands, used - commands
    in_readme = set(re.findall(r"memory-pipeline ([a-z]+)", README))
    assert {"demo", "ingest", "index", "search", "status", "ui"} <= in_readme


def test_the_readme_is_a_short_guide():
    assert len(README.splitlines()) <= 400


def test_every_relative_link_resolves():
    """Links and images in the README and docs/ point at files that exist, and an anchor at a
    heading of that file."""
    broken = []
    for path in GUIDES:
        text = path.read_text(encoding="utf-8")
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+://", target) or target.startswith("mailto:"):
                continue
            file_part, _, anchor = target.partition("#")
            linked = (path.parent / file_part).resolve() if file_part else path
            if not linked.exists():
                broken.append(f"{path.relative_to(ROOT)}: {target}")
            elif anchor and linked.suffix == ".md" and anchor not in _anchors(linked):
                broken.append(f"{path.relative_to(ROOT)}: {target} (no such heading)")
    assert not broken, broken


def _anchors(path: Path) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens."""
    headings = re.findall(r"^#+ (.+)$", path.read_text(encoding="utf-8"), flags=re.M)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings}


def test_ci_runs_the_readmes_test_command():
    command = "pip install -e '.[test]' && pytest"
    assert command in README and command in CI


@pytest.mark.slow
def test_the_python_api_example_runs_as_written(tmp_path):
    """The README's Python example, unchanged, in a fresh process with a fresh data folder."""
    example = re.search(r"^## Python API.*?```python\n(.*?)```", README, flags=re.S | re.M).group(1)
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
