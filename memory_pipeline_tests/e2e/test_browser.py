"""The web UI in headless Chromium: the asset lineage graph and the Launchpad really render.

Chromium is driven from the command line (``--screenshot`` / ``--dump-dom`` with a virtual time
budget that lets the single-page app fetch its data and lay out the graph): no Node, no driver.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from memory_pipeline_tests.e2e.conftest import UiServer

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "docs"))
import take_pictures  # noqa: E402  (docs/take_pictures.py: the README's picture, same page and flags)

pytestmark = pytest.mark.slow

WINDOW = "1920,1080"
LAUNCHPAD = "/locations/memory_pipeline/jobs/search_memory_job/playground"
ASSETS = ("episodes", "chunks", "embeddings", "entity_mentions", "hnsw_index")

CHROMIUM_FLAGS = take_pictures.chromium_flags(WINDOW, budget_ms=15000)


@pytest.fixture(scope="module")
def ui_without_nux(ui: UiServer) -> UiServer:
    """Dismiss the first-visit "Join the Dagster community" dialog, which would cover the page."""
    take_pictures.dismiss_nux(ui.graphql)
    return ui


def _chromium(
    chromium_path: str, tmp_path: Path, url: str, *action: str
) -> subprocess.CompletedProcess:
    profile = tmp_path / f"profile-{len(list(tmp_path.glob('profile-*')))}"
    done = subprocess.run(
        [chromium_path, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *action, url],
        capture_output=True,
        text=True,
        timeout=90,
        cwd=tmp_path,
        check=False,
    )
    assert done.returncode == 0, f"chromium exited {done.returncode}: {done.stderr[-3000:]}"
    return done


def _screenshot(chromium_path: str, tmp_path: Path, url: str, name: str) -> Path:
    target = tmp_path / name
    done = _chromium(chromium_path, tmp_path, url, f"--screenshot={target}")
    assert target.is_file(), f"no screenshot written: {done.stderr[-3000:]}"
    keep = os.environ.get("E2E_SCREENSHOT_DIR")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(target, Path(keep) / name)
    return target


def _assert_real_render(png: Path) -> None:
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{png} is not a PNG"
    assert len(data) > 20_000, f"{png} is only {len(data)} bytes: a blank or error page?"
    try:
        from PIL import Image
    except ImportError:
        return  # the colour check needs Pillow; size and signature were still checked
    with Image.open(png) as image:
        assert image.size == tuple(int(v) for v in WINDOW.split(","))
        colours = image.convert("RGB").getcolors(maxcolors=1_000_000)
    assert colours is None or len(colours) > 50, (
        f"{png} has only {len(colours)} colour(s): not a rendered page"
    )


def test_asset_graph_renders_the_lineage_of_all_assets(
    ui_without_nux: UiServer, chromium_path, tmp_path
):
    url = ui_without_nux.url + take_pictures.asset_graph_path(ui_without_nux.graphql)
    png = _screenshot(chromium_path, tmp_path, url, "asset-graph.png")
    _assert_real_render(png)

    dom = _chromium(chromium_path, tmp_path, url, "--dump-dom").stdout
    assert "Global asset lineage" in dom, dom[:2000]
    missing = [name for name in ASSETS if name not in dom]
    assert not missing, f"asset names missing from the rendered graph: {missing}"


def test_launchpad_of_search_memory_job_renders(ui_without_nux: UiServer, chromium_path, tmp_path):
    url = ui_without_nux.url + LAUNCHPAD
    png = _screenshot(chromium_path, tmp_path, url, "launchpad-search_memory_job.png")
    _assert_real_render(png)

    dom = _chromium(chromium_path, tmp_path, url, "--dump-dom").stdout
    assert "search_memory_job" in dom and "search_op" in dom, dom[:2000]
