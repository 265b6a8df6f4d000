"""Documents through ``POST /v1/episodes`` of a real ``serve`` process: base64 items among JSON
episodes and a raw document body, stored exactly as ``ingest FILE`` stores them."""

from __future__ import annotations

import base64
import http.client
import json
import threading
import time

import psutil
import pytest

from memory_pipeline_tests.support.documents import DEEP_PHRASE, document_folder


def item(folder, name: str, memory: str = "web", **document) -> dict:
    content = base64.b64encode((folder / name).read_bytes()).decode()
    return {"memory": memory, "document": {"name": name, "content": content, **document}}


def stored(local, memory: str) -> dict:
    with local.db.connection() as conn:
        rows = conn.execute(
            "SELECT title, kind, occurred_at, body, metadata FROM episodes WHERE memory = %s",
            (memory,),
        ).fetchall()
    return {row[0]: row[1:] for row in rows}


def test_documents_in_a_json_request_are_stored_as_ingest_stores_them_and_bad_ones_rejected_in_place(
    api, local, tmp_path
):
    docs = tmp_path / "docs"
    expected = document_folder(docs)
    (docs / "huge.pdf").unlink()  # the size limit has its own test below
    response = api.post(
        "/v1/episodes",
        json={
            "episodes": [
                item(docs, "survey.pdf"),
                item(docs, "locked.pdf"),
                item(
                    docs,
                    "minutes.docx",
                    contentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document",
                ),
                item(docs, "bomb.docx"),
                {
                    "memory": "web",
                    "kind": "note",
                    "title": "Plain",
                    "occurred_at": "2026-03-01",
                    "body": "A plain note.",
                },
                item(docs, "scan.pdf"),
                {"memory": "web", "document": {"name": "notes.txt", "content": "aGVsbG8="}},
                {"memory": "web", "document": {"name": "page.html", "content": "not base64!"}},
                item(docs, "page.html", contentType="application/pdf"),
            ]
        },
    )
    assert response.status_code == 201, response.text
    body = response.json()
    assert body["inserted"] == 3
    reasons = {r["location"]: r["reason"] for r in body["rejected"]}
    assert set(reasons) == {f"episodes[{i}]" for i in (1, 3, 5, 6, 7, 8)}
    for i, name in ((1, "locked.pdf"), (3, "bomb.docx"), (5, "scan.pdf")):
        assert (
            reasons[f"episodes[{i}]"].startswith(f"{name}: ")
            and expected[name] in reasons[f"episodes[{i}]"]
        )
    assert "cannot tell the format" in reasons["episodes[6]"]
    assert reasons["episodes[7]"] == "page.html: document.content is not valid base64"
    assert reasons["episodes[8]"] == "page.html: the name says .html but the content type says .pdf"

    # The same files through ingest: the same episodes, field for field.
    local.ingest([docs / "survey.pdf", docs / "minutes.docx"], memory="cli")
    web, cli = stored(local, "web"), stored(local, "cli")
    assert set(web) == {"River Survey 2025", "Club Minutes", "Plain"}
    for title in ("River Survey 2025", "Club Minutes"):
        assert web[title][:3] == cli[title][:3] and web[title][0] == "doc"
        assert web[title][3] == cli[title][3]
    assert web["River Survey 2025"][1].isoformat().startswith("2025-06-01")

    # A raw body: the bytes as they are, the format from the content type.
    raw = api.post(
        "/v1/episodes",
        params={"memory": "web", "name": "page.html"},
        content=(docs / "page.html").read_bytes(),
        headers={"Content-Type": "text/html; charset=utf-8"},
    )
    assert raw.status_code == 201 and raw.json()["inserted"] == 1
    again = api.post(
        "/v1/episodes",
        params={"memory": "web", "name": "page.html"},
        content=(docs / "page.html").read_bytes(),
        headers={"Content-Type": "text/html"},
    )
    assert again.status_code == 200 and again.json()["duplicates"] == 1
    bad = api.post(
        "/v1/episodes",
        params={"memory": "web", "name": "app.html"},
        content=(docs / "app.html").read_bytes(),
        headers={"Content-Type": "text/html"},
    )
    assert bad.status_code == 422
    assert (
        bad.json()["rejected"][0]["location"] == "app.html"
        and "script and style" in bad.json()["rejected"][0]["reason"]
    )

    # Searched by a phrase from a deep section, each document shows the headings above it.
    assert api.post("/v1/index").status_code == 200
    found = api.get(
        "/v1/search", params={"memory": "web", "q": DEEP_PHRASE, "channels": "keyword"}
    ).json()
    anchors = {r["title"]: r["anchor"] for r in found["results"]}
    assert anchors["Club Minutes"] == "Club Minutes > minutes part 3"
    assert anchors["Riverside Blog"] == "Riverside Blog > blog part 3"
    assert anchors["River Survey 2025"] == "River Survey > Survey part 2 > Survey wildlife notes"


def test_a_raw_document_is_refused_past_the_size_limit_while_it_streams(api, local):
    limit = 32 * 1024 * 1024
    # A declared 200 MB body is refused before a byte of it is read (only 4 bytes are ever sent).
    connection = http.client.HTTPConnection(api.base_url.host, api.base_url.port, timeout=30)
    connection.putrequest("POST", "/v1/episodes?memory=web&name=huge.pdf")
    connection.putheader("Content-Type", "application/pdf")
    connection.putheader("Content-Length", str(200 * 1024 * 1024))
    connection.endheaders(b"%PDF")
    declared = connection.getresponse()
    assert declared.status == 413 and "at most 33554432" in json.loads(declared.read())["error"]
    connection.close()

    def pieces():  # no Content-Length: the server counts what arrives
        for _ in range(limit // (1024 * 1024)):
            yield b"\0" * (1024 * 1024)
        yield b"\0" * 4096

    streamed = api.post(
        "/v1/episodes",
        params={"memory": "web", "name": "huge.pdf"},
        headers={"Content-Type": "application/pdf"},
        content=pieces(),
    )
    assert streamed.status_code == 413 and "larger than 33554432" in streamed.json()["error"]
    missing = api.post("/v1/episodes", content=b"%PDF", headers={"Content-Type": "application/pdf"})
    assert missing.status_code == 422 and "'memory'" in missing.json()["error"]
    assert not local.memory_names()


class PeakRss:
    """The resident memory of a process sampled every 10 ms while the block runs: its peak."""

    def __init__(self, pid: int):
        self.process = psutil.Process(pid)
        self.peak = self.process.memory_info().rss
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.wait(0.01):
            self.peak = max(self.peak, self.process.memory_info().rss)

    def __enter__(self) -> PeakRss:
        self._thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self._stop.set()
        self._thread.join()


MiB = 1024 * 1024


@pytest.mark.parametrize(
    ("inside", "reason"),
    [
        (b"<div>" * 2_900_000 + b"</div>" * 2_900_000, "elements nested deeper than 10,000"),
        (b"<p>x</p>" * 3_900_000, "more than 1,000,000 elements"),
    ],
    ids=["nested-divs", "millions-of-paragraphs"],
)
@pytest.mark.slow  # 30 MiB uploads parsed for seconds each
def test_a_page_of_millions_of_elements_is_refused_early_and_costs_the_server_little(
    api, local, inside, reason
):
    page = b"<html><body>" + inside + b"</body></html>"
    assert 28 * MiB < len(page) < 32 * MiB  # under the upload limit, as the audit sent it
    pid = api.server.proc.pid
    warm = api.post(  # the first document's imports (the parser) are not this upload's cost
        "/v1/episodes",
        params={"memory": "warm", "name": "small.html"},
        headers={"Content-Type": "text/html"},
        content=b"<html><body><p>A small page.</p></body></html>",
    )
    assert warm.status_code == 201, warm.text
    before = psutil.Process(pid).memory_info().rss
    started = time.monotonic()
    with PeakRss(pid) as rss:
        answer = api.post(
            "/v1/episodes",
            params={"memory": "web", "name": "deep.html"},
            headers={"Content-Type": "text/html"},
            content=page,
        )
    seconds = time.monotonic() - started
    time.sleep(0.5)
    after = psutil.Process(pid).memory_info().rss
    print(
        f"{reason}: {seconds:.1f} s, peak +{(rss.peak - before) // MiB} MiB, "
        f"after +{(after - before) // MiB} MiB"
    )
    assert answer.status_code == 422, answer.text
    assert answer.json()["rejected"][0]["reason"] == f"{reason} (by line 1); split the document"
    assert rss.peak - before <= 256 * MiB
    assert after - before <= 32 * MiB  # what the refused parse took is given back
    assert local.memory_names() == ["warm"]
