"""Debian's Chromium for the browser tests: found on PATH, or installed with apt when we are root."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

_APT_UPDATED = False


def chromium_or_skip() -> str:
    """Debian's Chromium; installed with apt when missing and we are root, else skip."""
    global _APT_UPDATED
    found = shutil.which("chromium")
    if found:
        return found
    if os.geteuid() != 0:
        pytest.skip(
            "chromium is not installable here: not root (install Debian's chromium package)"
        )
    if not shutil.which("apt-get"):
        pytest.skip("chromium is not installable here: no apt-get on this machine")
    apt_env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    steps = [] if _APT_UPDATED else [["apt-get", "update"]]
    steps.append(["apt-get", "install", "-y", "--no-install-recommends", "chromium"])
    for step in steps:
        try:
            done = subprocess.run(
                step, env=apt_env, capture_output=True, text=True, timeout=300, check=False
            )
        except subprocess.TimeoutExpired:
            pytest.skip(f"chromium is not installable here: `{' '.join(step)}` took over 5 minutes")
        if done.returncode != 0:
            pytest.skip(
                f"chromium is not installable here: `{' '.join(step)}` exited {done.returncode}: "
                f"{(done.stderr or done.stdout)[-500:]}"
            )
        if step[1] == "update":
            _APT_UPDATED = True
    found = shutil.which("chromium")
    if not found:
        pytest.skip("chromium is not installable here: apt-get succeeded but no `chromium` on PATH")
    return found
