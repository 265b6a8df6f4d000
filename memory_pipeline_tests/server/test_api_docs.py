"""``/docs`` and ``/redoc`` work with no network: a headless Chromium that can resolve no host but
loopback renders them from a real ``memory-pipeline serve``, operations listed."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from memory_pipeline_tests.support.chromium import chromium_or_skip

WINDOW = "1280,1600"
# Every name resolves to nothing except loopback, so a page that needs a CDN, a font host or a
# validator cannot get it: what renders came from the server under test.
NO_NETWORK = "MAP * ~NOTFOUND, EXCLUDE 127.0.0.1, EXCLUDE localhost"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    f"--host-resolver-rules={NO_NETWORK}",
    f"--window-size={WINDOW}",
    "--virtual-time-budget=15000",
]


@pytest.fixture(scope="module")
def chromium() -> str:
    return chromium_or_skip()


def browse(chromium: str, tmp_path: Path, url: str, *action: str) -> str:
    profile = tmp_path / f"profile-{len(list(tmp_path.glob('profile-*')))}"
    done = subprocess.run(
        [chromium, *FLAGS, f"--user-data-dir={profile}", *action, url],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        check=False,
    )
    assert done.returncode == 0, f"chromium exited {done.returncode}: {done.stderr[-3000:]}"
    return done.stdout


def keep(png: Path) -> None:
    where = os.environ.get("E2E_SCREENSHOT_DIR")
    if where:
        Path(where).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(png, Path(where) / png.name)


def test_the_docs_pages_name_no_other_host(api):
    for page in ("/docs", "/redoc"):
        html = api.get(page)
        assert html.status_code == 200 and "text/html" in html.headers["content-type"]
        assert not re.findall(r"https?://", html.text), (page, html.text)
    for asset in ("swagger-ui-bundle.js", "swagger-ui.css", "redoc.standalone.js", "favicon.png"):
        served = api.get(f"/docs/static/{asset}")
        assert served.status_code == 200 and len(served.content) > 500, asset
    # The asset folder is not part of the API's own description.
    assert not [p for p in api.get("/openapi.json").json()["paths"] if p.startswith("/docs")]


def test_swagger_ui_renders_the_operations_offline(api, chromium, tmp_path):
    url = f"{api.server.url}/docs"
    dom = browse(chromium, tmp_path, url, "--dump-dom")
    # Operations are in the DOM only once Swagger UI's script ran and read /openapi.json.
    assert 'class="swagger-ui' in dom, dom[:2000]
    for path in ("/v1/search", "/v1/episodes", "/v1/status", "/v1/memories"):
        assert f'data-path="{path}"' in dom, (path, dom[:3000])
    assert "Fused search inside one memory" in dom
    png = tmp_path / "api-docs.png"
    browse(chromium, tmp_path, url, f"--screenshot={png}")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 20_000
    keep(png)


def test_redoc_renders_the_operations_offline(api, chromium, tmp_path):
    dom = browse(chromium, tmp_path, f"{api.server.url}/redoc", "--dump-dom")
    assert "Fused search inside one memory" in dom, dom[:3000]
    assert "/v1/search" in dom
