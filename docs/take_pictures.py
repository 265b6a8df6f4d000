#!/usr/bin/env python
"""Take the README's picture of Dagster's web UI (docs/asset-graph.png) from the real UI.

In a fresh temporary data folder (``MEMORY_PIPELINE_HOME``; every other ``MEMORY_PIPELINE_*``,
``DAGSTER_*`` and ``OLLAMA_*`` variable unset, so the embedded default serves), it runs
``memory-pipeline demo``, starts ``memory-pipeline ui`` on a free loopback port in a process
group of its own, dismisses Dagster's first-visit dialog, and screenshots the global asset
lineage with every group open in headless Chromium (Debian's ``chromium``). The group is stopped
and the folder removed at the end, whatever happened. From the checkout, with the project
installed (``pip install -e .``):

    python docs/take_pictures.py                         # rewrites docs/asset-graph.png
    python docs/take_pictures.py --out /tmp/graph.png --scale 2   # sharper, twice the pixels

The window is wide because Dagster fits the whole graph into it and draws a node's figures
(partitions filled, checks passed) only from a zoom of 0.6: at 1920 pixels or less it shows the
asset names alone.

The browser tests (``memory_pipeline_tests/e2e/test_browser.py``) drive Chromium with the same
flags and open the same page.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

GraphQL = Callable[[str], dict]

DOCS = Path(__file__).resolve().parent
SCRIPT = Path(sys.executable).with_name("memory-pipeline")
STARTUP_TIMEOUT_S = 180  # `memory-pipeline ui` answers in 10-20 s, far later on a loaded machine
STOP_GRACE_S = 60  # the ui stops dagster dev's own group and the embedded server first


def chromium_flags(window: str, budget_ms: int, scale: float = 1) -> list[str]:
    """Headless Chromium from the command line (no driver); ``budget_ms`` of virtual time lets
    the single-page app fetch its data and lay out the graph before the screenshot."""
    return [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
        f"--window-size={window}",
        f"--force-device-scale-factor={scale:g}",
        f"--virtual-time-budget={budget_ms}",
    ]


def asset_graph_path(graphql: GraphQL) -> str:
    """The global lineage with every group opened (several groups start collapsed).

    The UI names a group "global@global:<group>", or "<repo>@<location>:<group>" under a
    feature flag: both spellings are passed, unknown ids are ignored.
    """
    nodes = graphql("{ assetNodes { groupName repository { name location { name } } } }")
    ids = set()
    for node in nodes["assetNodes"]:
        repo = node["repository"]
        ids.add(f"global@global:{node['groupName']}")
        ids.add(f"{repo['name']}@{repo['location']['name']}:{node['groupName']}")
    return "/asset-groups?expanded=" + ",".join(sorted(ids))


def dismiss_nux(graphql: GraphQL) -> None:
    """Mark the first-visit "Join the Dagster community" dialog seen: it would cover the page."""
    if graphql("mutation { setNuxSeen }")["setNuxSeen"] is not True:
        raise RuntimeError("setNuxSeen did not return true")
    if graphql("{ shouldShowNux }")["shouldShowNux"] is not False:
        raise RuntimeError("the first-visit dialog is still due after setNuxSeen")


def graphql_at(url: str) -> GraphQL:
    """A GraphQL caller for the UI at ``url`` (the standard library only, as a user has it)."""

    def call(query: str) -> dict:
        request = urllib.request.Request(
            f"{url}/graphql",
            data=json.dumps({"query": query}).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            body = json.load(response)
        if body.get("errors"):
            raise RuntimeError(f"GraphQL errors: {body['errors']}")
        return body["data"]

    return call


def clean_env(home: Path) -> dict[str, str]:
    """This environment without the project's, Dagster's and Ollama's settings, on ``home``."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("MEMORY_PIPELINE_", "DAGSTER_", "OLLAMA_"))
    }
    env["MEMORY_PIPELINE_HOME"] = str(home)
    return env


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _answers(graphql: GraphQL) -> bool:
    try:
        return bool(graphql("{ version }").get("version"))
    except (OSError, ValueError, RuntimeError, urllib.error.URLError):
        return False


@contextmanager
def running_ui(env: dict[str, str], log_path: Path) -> Iterator[str]:
    """``memory-pipeline ui`` on a free loopback port until the block ends; yields its URL once
    it answers GraphQL. Its whole process group is stopped on the way out, error or not."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            [str(SCRIPT), "ui", "--port", str(port)],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            graphql = graphql_at(url)
            deadline = time.monotonic() + STARTUP_TIMEOUT_S
            while not _answers(graphql):
                if proc.poll() is not None or time.monotonic() > deadline:
                    tail = log_path.read_text(errors="replace")[-4000:]
                    raise SystemExit(f"memory-pipeline ui did not answer on {url}:\n{tail}")
                time.sleep(1)
            yield url
        finally:
            _stop_group(proc)


def _stop_group(proc: subprocess.Popen) -> None:
    """SIGTERM the group (the ui then stops what it started), SIGKILL it after the grace."""
    for sig, grace in ((signal.SIGTERM, STOP_GRACE_S), (signal.SIGKILL, 10)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=grace)
            return
        except subprocess.TimeoutExpired:
            continue


def screenshot(chromium: str, url: str, out: Path, flags: list[str], workdir: Path) -> None:
    """``url`` in headless Chromium, saved as the PNG ``out``."""
    out.parent.mkdir(parents=True, exist_ok=True)
    command = [chromium, *flags, f"--user-data-dir={workdir / 'chromium'}", f"--screenshot={out}"]
    done = subprocess.run(
        [*command, url], capture_output=True, text=True, timeout=180, cwd=workdir, check=False
    )
    if done.returncode != 0 or not out.is_file():
        raise SystemExit(f"chromium exited {done.returncode}: {done.stderr[-3000:]}")
    if out.stat().st_size < 20_000:  # a blank or error page compresses to a few kilobytes
        raise SystemExit(f"{out} is only {out.stat().st_size} bytes: not the rendered graph?")


def take(args: argparse.Namespace) -> None:
    home = Path(tempfile.mkdtemp(prefix="mp-pictures-"))  # short: unix socket paths are limited
    try:
        env = clean_env(home)
        print(f"memory-pipeline demo in {home} ...", flush=True)
        demo = subprocess.run(
            [str(SCRIPT), "demo"], env=env, capture_output=True, text=True, check=False
        )
        if demo.returncode != 0:
            raise SystemExit(f"memory-pipeline demo exited {demo.returncode}:\n{demo.stderr}")
        with running_ui(env, home / "ui.log") as url:
            graphql = graphql_at(url)
            dismiss_nux(graphql)
            flags = chromium_flags(args.window, args.budget_ms, args.scale)
            screenshot(args.chromium, url + asset_graph_path(graphql), args.out, flags, home)
        print(f"wrote {args.out}")
    finally:
        shutil.rmtree(home, ignore_errors=True)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DOCS / "asset-graph.png")
    parser.add_argument("--window", default="2240,1260", help="WIDTH,HEIGHT in CSS pixels")
    parser.add_argument("--scale", type=float, default=1, help="device pixels per CSS pixel")
    parser.add_argument(
        "--budget-ms", type=int, default=20_000, help="virtual time the page gets to render"
    )
    parser.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
    args = parser.parse_args(argv)
    width, _, height = args.window.partition(",")
    if not (width.isdigit() and height.isdigit()):
        parser.error(f"--window must be WIDTH,HEIGHT, not {args.window!r}")
    return args


if __name__ == "__main__":
    take(parse_args())
