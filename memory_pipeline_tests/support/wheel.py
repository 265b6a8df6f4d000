"""The package as a user installs it: a wheel built from this checkout the way ``python -m build``
builds one (through its sdist), installed into a fresh virtual environment outside the checkout."""

from __future__ import annotations

import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Installed:
    wheel: Path
    bin: Path  # the environment's scripts: python, memory-pipeline


def build_wheel(out: Path) -> Path:
    done = subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(out), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (wheel,) = out.glob("*.whl")
    return wheel


def install(wheel: Path, venv: Path) -> Installed:
    """A fresh environment at ``venv`` with the wheel installed by pip. Its dependencies are this
    environment's installed ones, reached through a ``.pth`` line: a test need not resolve and
    download the whole set again (``.ci/run`` installs an environment from nothing). The line is
    written after the install, so pip sees none of this environment's packages; and a ``.pth``
    line adds a folder without running the ``.pth`` files in it, so the checkout's editable
    install is not importable there."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet"]
        + ["--no-deps", "--no-index", str(wheel)],
        check=True,
        timeout=300,
    )
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    ours = sysconfig.get_paths()
    lines = dict.fromkeys([ours["purelib"], ours["platlib"]])
    (Path(site) / "_test_dependencies.pth").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return Installed(wheel, venv / "bin")
