"""The wheel is the whole package: it carries the SQL and the Dagster files, and nothing else
from the checkout (the demo runs from it: cli/test_demo.py)."""

from __future__ import annotations

import subprocess
import tomllib
import zipfile

import pytest

from memory_pipeline_tests.support.wheel import ROOT

pytestmark = pytest.mark.slow


def test_the_wheel_carries_the_sql_and_the_dagster_files(installed_package):
    with zipfile.ZipFile(installed_package.wheel) as wheel:
        names = set(wheel.namelist())
        sql = sorted(p for p in (ROOT / "sql").rglob("*") if p.is_file())
        assert len([p for p in sql if p.suffix == ".sql"]) > 60
        for path in sql:
            name = f"memory_pipeline/sql/{path.relative_to(ROOT / 'sql')}"
            assert wheel.read(name) == path.read_bytes(), name
        for name in ("dagster.yaml", "workspace.yaml"):
            assert wheel.read(f"memory_pipeline/{name}") == (ROOT / name).read_bytes(), name
        dg_toml = tomllib.loads(wheel.read("memory_pipeline/dg.toml").decode())
        pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
        assert dg_toml == pyproject["tool"]["dg"]
    # Only the package and its metadata: no top-level sql/, no tests, no benchmarks.
    version = pyproject["project"]["version"]
    tops = {name.split("/")[0] for name in names}
    assert tops == {"memory_pipeline", f"memory_pipeline-{version}.dist-info"}, tops


def test_the_installed_package_is_the_wheels_not_the_checkouts(installed_package, tmp_path):
    done = subprocess.run(
        [
            str(installed_package.bin / "python"),
            "-c",
            "import memory_pipeline.storage.paths as p; print(p.SQL_DIR); print(p.DAGSTER_YAML)",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    venv = installed_package.bin.parent
    for line in done.stdout.splitlines():
        assert line.startswith(str(venv)) and "site-packages/memory_pipeline/" in line, line
