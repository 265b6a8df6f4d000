"""Build step: the wheel carries the repository's top-level project files inside the package.

``sql/`` (migrations and named queries), ``dagster.yaml`` and ``workspace.yaml`` live at the top
of the repository, where readers, ``dagster dev`` and ``dg`` find them. An installed package has
no repository around it, so the wheel's ``build_py`` copies them into ``memory_pipeline/``, where
``memory_pipeline.storage.paths`` looks first, and writes ``memory_pipeline/dg.toml`` from
``[tool.dg]``: Dagster's ``load_from_defs_folder`` looks for that configuration in the package's
folder and its parents. An editable install reads the checkout's files and copies nothing.
Everything else about the package is declared in ``pyproject.toml``; the sdist carries these
files through ``MANIFEST.in``.
"""

from __future__ import annotations

import json
import shutil
import tomllib
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
PROJECT_FILES = ("sql", "dagster.yaml", "workspace.yaml")


def dg_toml() -> str:
    """``[tool.dg]`` of pyproject.toml as a ``dg.toml`` (its keys at the top level)."""
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    dg = pyproject["tool"]["dg"]
    # The table holds strings only; a JSON string is a valid TOML basic string.
    lines = [f"directory_type = {json.dumps(dg['directory_type'])}", "", "[project]"]
    lines += [f"{key} = {json.dumps(value)}" for key, value in dg["project"].items()]
    return "\n".join(lines) + "\n"


class BuildPyWithProjectFiles(build_py):
    def run(self) -> None:
        super().run()
        if self.editable_mode:
            return
        package = Path(self.build_lib, "memory_pipeline")
        for name in PROJECT_FILES:
            source, target = ROOT / name, package / name
            if source.is_dir():
                # A fresh copy: a query deleted from sql/ must not linger from an earlier build.
                shutil.rmtree(target, ignore_errors=True)
                shutil.copytree(source, target)
            else:
                shutil.copyfile(source, target)
        (package / "dg.toml").write_text(dg_toml(), encoding="utf-8")


setup(cmdclass={"build_py": BuildPyWithProjectFiles})
