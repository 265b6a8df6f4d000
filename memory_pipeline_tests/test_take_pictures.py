"""docs/take_pictures.py (the README's picture of the web UI) imports, parses its arguments and
gives the UI a clean environment; the browser tests (e2e/test_browser.py) run its page and flags."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "docs"))
import take_pictures  # noqa: E402  (a script in docs/, importable for its helpers)


def test_by_default_it_rewrites_the_readmes_picture_in_a_window_wide_enough_for_figures():
    args = take_pictures.parse_args([])
    assert args.out == ROOT / "docs" / "asset-graph.png"
    assert f"]({args.out.relative_to(ROOT)})" in (ROOT / "README.md").read_text(encoding="utf-8")
    assert int(args.window.split(",")[0]) > 1920  # narrower shows the asset names alone
    flags = take_pictures.chromium_flags(args.window, args.budget_ms, args.scale)
    assert f"--window-size={args.window}" in flags and "--headless" in flags


def test_a_malformed_window_is_refused_by_argparse(capsys):
    with pytest.raises(SystemExit) as exited:
        take_pictures.parse_args(["--window", "1600x1000"])
    assert exited.value.code == 2
    assert "--window must be WIDTH,HEIGHT, not '1600x1000'" in capsys.readouterr().err


def test_the_ui_sees_only_its_own_home(monkeypatch, tmp_path):
    monkeypatch.setenv("MEMORY_PIPELINE_EMBED_PROVIDER", "ollama")
    monkeypatch.setenv("DAGSTER_HOME", "/elsewhere")
    monkeypatch.setenv("OLLAMA_HOST", "http://127.0.0.1:1")
    env = take_pictures.clean_env(tmp_path)
    assert env["MEMORY_PIPELINE_HOME"] == str(tmp_path)
    leaked = [k for k in env if k.startswith(("DAGSTER_", "OLLAMA_", "MEMORY_PIPELINE_"))]
    assert leaked == ["MEMORY_PIPELINE_HOME"]
    assert env["PATH"] == take_pictures.os.environ["PATH"]
