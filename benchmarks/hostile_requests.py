"""Hostile requests against ``memory-pipeline serve``: malformed JSON, huge bodies, path traversal
and SQL fragments in ids and queries, invalid UTF-8, wrong methods, bad tokens, and bad
statements (observations and beliefs) and documents (uploads that are not what they claim).

Passes when no answer is a 5xx other than 502/503, no answer carries a stack trace, the server is
still up and answering searches, and every table holds the rows it held before (search telemetry
may only grow: valid searches record it). Then, on both servers (``serve`` and ``mcp --http``),
a foreign Host or Origin on every route must answer 421 or 403; and with tokens, every writing
body whose memory is missing, null, of a wrong type or another memory, under ``?memory=bob``,
sent with a token that may write to alice only, must leave every other memory's rows as they
were; halfway the token is revoked, and every later request with it must answer 401.

    python benchmarks/hostile_requests.py                   # 5,000 requests, fresh database, own server
    python benchmarks/hostile_requests.py --requests 300    # quick
    python benchmarks/hostile_requests.py --json out.json

The tests run ``attack``, ``guard_attack`` and ``scope_attack`` at a small size against their own
server processes (``memory_pipeline_tests/server/test_hostile_requests.py``); the fuzz suite
generates the same shapes (``memory_pipeline_tests/fuzz/test_hostile_requests.py``).
"""

from __future__ import annotations

import argparse
import base64
import collections
import json
import random
import shutil
import socket
import sys
import tempfile
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import psycopg

ROOT = Path(__file__).resolve().parents[1]
# Tables whose rows no hostile request may change.
TABLES = (
    "episodes",
    "chunks",
    "embeddings",
    "entities",
    "entity_mentions",
    "episode_names",
    "keyword_stats",
    "keyword_memory_stats",
    "embedding_profiles",
    "embedding_generations",
    "api_tokens",
    "schema_migrations",
    "observations",
    "observation_embeddings",
)
TRACE_MARKERS = ("Traceback", 'File "/', "psycopg.", "sqlalchemy", "site-packages")

SQL_FRAGMENTS = [
    "1 OR 1=1",
    "1; DROP TABLE episodes; --",
    "' OR ''='",
    "alice'--",
    "1 UNION SELECT body FROM episodes",
    "$$; DELETE FROM chunks; $$",
    "\\'; TRUNCATE embeddings; --",
    "%27%3B%20DROP%20TABLE%20chunks",
]
TRAVERSALS = [
    "../../etc/passwd",
    "..%2F..%2Fetc%2Fpasswd",
    "%2e%2e/%2e%2e/",
    "....//....//etc",
    "/etc/passwd",
    "..\\..\\windows",
    "%00",
    "alice/../bob",
    "%252e%252e%252f",
]


@dataclass
class Report:
    requests: int = 0
    statuses: collections.Counter = field(default_factory=collections.Counter)
    by_kind: collections.Counter = field(default_factory=collections.Counter)
    failures: list[str] = field(default_factory=list)  # 5xx other than 502/503, traces, dead server
    seconds: float = 0.0
    tables_intact: bool = False

    @property
    def ok(self) -> bool:
        return not self.failures and self.tables_intact

    def to_json(self) -> dict:
        return {
            "requests": self.requests,
            "statuses": dict(sorted(self.statuses.items())),
            "kinds": dict(self.by_kind),
            "failures": self.failures[:20],
            "seconds": round(self.seconds, 1),
            "tablesIntact": self.tables_intact,
            "ok": self.ok,
        }


def table_counts(db_url: str) -> dict[str, int]:
    with psycopg.connect(db_url, autocommit=True) as conn:
        return {t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in TABLES}  # noqa: S608 - fixed names


def raw_request(host: str, port: int, data: bytes, timeout: float = 30.0) -> tuple[int, bytes]:
    """Send bytes as they are (what no well-behaved client would send); (status, body)."""
    with socket.create_connection((host, port), timeout=timeout) as sock:
        try:
            sock.sendall(data)
        except OSError:  # the server may answer and close before a huge body is sent
            pass
        chunks = []
        try:
            while True:
                piece = sock.recv(65536)
                if not piece:
                    break
                chunks.append(piece)
        except (TimeoutError, ConnectionResetError):
            pass
    response = b"".join(chunks)
    try:
        status = int(response.split(b" ", 2)[1])
    except (IndexError, ValueError):
        return 0, response  # closed without an answer
    return status, response.split(b"\r\n\r\n", 1)[-1]


def hostile_cases(rng: random.Random, memories: list[str], episode_ids: list[int]):
    """Yield (kind, request) pairs forever; a request is ("http", method, path, kwargs) or ("raw", bytes)."""
    words = ["bread", "harbor", "Lucinda", "apples", "zeppelin", "kumquat"]
    while True:
        kind = rng.choice(
            [
                "json",
                "json",
                "huge",
                "sql",
                "sql",
                "traversal",
                "traversal",
                "utf8",
                "method",
                "token",
                "query",
                "batch",
                "statement",
                "statement",
                "document",
            ]
        )
        if kind == "json":
            body = rng.choice(
                [
                    b"{",
                    b"[",
                    b'{"episodes": [',
                    b"{'memory': 'alice'}",
                    b"nul\x00l",
                    b'{"a": NaN}',
                    b"[" * 100_000 + b"]" * 100_000,
                    b'{"episodes": ' + b"[" * 5000 + b"]" * 5000 + b"}",
                    json.dumps(
                        {
                            "memory": rng.choice(memories),
                            "kind": "note",
                            "title": "t",
                            "occurred_at": "yesterday",
                            "body": "x",
                        }
                    ).encode(),
                    json.dumps({"episodes": [{"memory": "a" * 300, "body": 1}]}).encode(),
                    json.dumps([None, 1, "x", [], {}]).encode(),
                    b"1e999999",
                    b'"just a string"',
                    b"",
                    json.dumps(
                        {
                            "memory": "alice",
                            "kind": "note",
                            "title": "t",
                            "occurred_at": "2026-01-01",
                            "body": "\ud800",
                        },
                        ensure_ascii=True,
                    ).encode(),
                    json.dumps(
                        {
                            "memory": "alice",
                            "kind": "note",
                            "title": "t",
                            "occurred_at": "2026-01-01",
                            "body": "x",
                            "metadata": {"a": {"b": 1}},
                            "salience": 7,
                        }
                    ).encode(),
                ]
            )
            yield (
                kind,
                (
                    "http",
                    "POST",
                    "/v1/episodes",
                    {"content": body, "headers": {"content-type": "application/json"}},
                ),
            )
        elif kind == "huge":
            if rng.random() < 0.5:  # declares a body far over the limit, sends a little of it
                yield (
                    kind,
                    (
                        "raw",
                        b"POST /v1/episodes HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                        b"Content-Length: 1000000000\r\nConnection: close\r\n\r\n" + b"[" * 65536,
                    ),
                )
            else:  # a real 9 MB body
                yield kind, ("http", "POST", "/v1/episodes", {"content": b" " * (9 * 1024 * 1024)})
        elif kind == "sql":
            fragment = rng.choice(SQL_FRAGMENTS)
            quoted = urllib.parse.quote(fragment, safe="")
            yield (
                kind,
                rng.choice(
                    [
                        ("http", "GET", f"/v1/episodes/{quoted}", {}),
                        ("http", "DELETE", f"/v1/episodes/{quoted}", {}),
                        ("http", "DELETE", f"/v1/memories/{quoted}", {}),
                        (
                            "http",
                            "GET",
                            "/v1/search",
                            {"params": {"memory": fragment, "q": "bread"}},
                        ),
                        (
                            "http",
                            "GET",
                            "/v1/search",
                            {"params": {"memory": rng.choice(memories), "q": fragment}},
                        ),
                        (
                            "http",
                            "GET",
                            "/v1/search",
                            {
                                "params": {
                                    "memory": rng.choice(memories),
                                    "q": "x",
                                    "policy": fragment,
                                    "channels": fragment,
                                }
                            },
                        ),
                        (
                            "http",
                            "POST",
                            f"/v1/episodes?memory={quoted}",
                            {"json": {"title": "t", "body": "b"}},
                        ),
                    ]
                ),
            )
        elif kind == "traversal":
            path = rng.choice(TRAVERSALS)
            yield (
                kind,
                rng.choice(
                    [
                        (
                            "raw",
                            f"GET /v1/episodes/{path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode(),
                        ),
                        (
                            "raw",
                            f"DELETE /v1/memories/{path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode(),
                        ),
                        (
                            "raw",
                            f"GET /{path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode(),
                        ),
                        ("http", "GET", "/v1/search", {"params": {"memory": path, "q": "bread"}}),
                    ]
                ),
            )
        elif kind == "utf8":
            yield (
                kind,
                rng.choice(
                    [
                        (
                            "raw",
                            b"GET /v1/search?memory=alice&q=%FF%FE%80 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
                        ),
                        (
                            "raw",
                            b"GET /v1/search?memory=\xff\xfe&q=\xc3\x28 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
                        ),
                        (
                            "raw",
                            b"GET /v1/episodes/\xff HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
                        ),
                        (
                            "raw",
                            b"GET /v1/search?memory=alice&q=a%00b HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
                        ),
                        (
                            "http",
                            "POST",
                            "/v1/episodes",
                            {"content": b'{"memory": "alice", "title": "\xff\xfe"}'},
                        ),
                        ("http", "POST", "/v1/episodes", {"content": "\ufeff{}".encode("utf-16")}),
                    ]
                ),
            )
        elif kind == "method":
            method, path = rng.choice(
                [
                    ("PUT", "/v1/search"),
                    ("PATCH", "/v1/episodes/1"),
                    ("POST", "/v1/memories"),
                    ("GET", "/v1/index"),
                    ("DELETE", "/v1/search"),
                    ("POST", "/v1/status"),
                    ("PUT", "/v1/memories/alice"),
                    ("OPTIONS", "/v1/index"),
                    ("TRACE", "/"),
                    ("DELETE", "/v1/episodes"),
                    ("DELETE", "/v1/memories"),
                ]
            )
            yield kind, ("http", method, path, {})
        elif kind == "token":
            token = rng.choice(
                ["mpt_" + "A" * 5000, "Bearer", "\x00", "mpt_../../etc", "' OR 1=1 --"]
            )
            yield (
                kind,
                (
                    "http",
                    "GET",
                    "/v1/memories",
                    {"headers": {"Authorization": f"Bearer {token}"}}
                    if "\x00" not in token
                    else {},
                ),
            )
        elif kind == "query":
            q = rng.choice(
                [
                    "",
                    " ",
                    "x" * 4001,
                    "x" * 20_000,
                    "🦀" * 100,
                    "a" * 3999 + "é",
                    " ".join(rng.choices(words, k=rng.randint(1, 30))),
                    "&&||!!::**",
                    "<script>alert(1)</script>",
                ]
            )
            params = {
                "memory": rng.choice(memories + ["carol", ""]),
                "q": q,
                "limit": rng.choice(
                    ["1", "0", "51", "-1", "8", "99999999999999999999", "1.5", "ten"]
                ),
                "channels": rng.choice(
                    ["vector", "keyword,graph", "", "all", "vector,vector", "keyword"]
                ),
            }
            yield kind, ("http", "GET", "/v1/search", {"params": params})
        elif kind == "statement":
            yield kind, rng.choice(_statement_requests(rng, memories))
        elif kind == "document":
            yield kind, rng.choice(_document_requests(rng, memories))
        else:  # batch limits and out-of-range ids
            yield (
                kind,
                rng.choice(
                    [
                        ("http", "POST", "/v1/episodes", {"json": [{"memory": "alice"}] * 1001}),
                        (
                            "http",
                            "GET",
                            f"/v1/episodes/{rng.choice(['0', '-1', str(2**63), str(2**70), '1e3', '0x10'])}",
                            {},
                        ),
                        (
                            "http",
                            "GET",
                            f"/v1/episodes/{rng.choice(episode_ids) if episode_ids else 1}",
                            {},
                        ),
                    ]
                ),
            )


def _statement_requests(rng: random.Random, memories: list[str]) -> list:
    """Observations and beliefs that must all be refused (nothing valid: the tables stay as they are)."""
    memory = rng.choice(memories)
    fragment = rng.choice(SQL_FRAGMENTS)
    quoted = urllib.parse.quote(fragment, safe="")
    bad_fields = rng.choice(
        [
            {"text": ""},
            {"text": "x" * 2001},
            {"text": 7},
            {"text": "ok", "kind": "fact"},
            {"text": "ok", "kind": fragment},
            {"text": "ok", "status": "deleted"},
            {"text": "ok", "confidence": 2},
            {"text": "ok", "confidence": "high"},
            {"text": "ok", "episode_ids": [fragment]},
            {"text": "ok", "episode_ids": [2**70]},
            {"text": "ok", "episode_ids": [2**62]},  # no such episode
            {"text": "ok", "episode_ids": list(range(1, 300))},
            {"text": "ok", "passages": ["p"] * 300},
            {"text": "ok", "observed_at": "yesterday"},
            {"text": "ok", "decision": "drop"},
            {"text": "ok", "decision": "revise", "revise_id": 2**70},
            {"text": "ok", "decision": "revise", "revise_id": fragment},
            {"text": "ok", "force": "yes"},
            {"text": "ok", "txt": "typo"},
            {"text": "ok\u0000"},
            {"text": "\ud800"},
        ]
    )
    return [
        # Encoded here (ASCII escapes): a client library refuses to send a lone surrogate itself.
        (
            "http",
            "POST",
            "/v1/observations",
            {
                "content": json.dumps({"memory": memory, **bad_fields}).encode(),
                "headers": {"content-type": "application/json"},
            },
        ),
        ("http", "POST", "/v1/observations", {"json": {"memory": fragment, "text": "ok"}}),
        (
            "http",
            "POST",
            "/v1/observations",
            {"content": b"{oops", "headers": {"content-type": "application/json"}},
        ),
        ("http", "POST", "/v1/observations", {"json": [{"memory": memory, "text": "ok"}]}),
        (
            "http",
            "PATCH",
            f"/v1/observations/{quoted}",
            {"params": {"memory": memory}, "json": {"status": "retired"}},
        ),
        (
            "http",
            "PATCH",
            f"/v1/observations/{rng.choice(['0', '-1', str(2**70)])}",
            {
                "params": {"memory": memory},
                "json": {"status": rng.choice(["retired", fragment, None])},
            },
        ),
        (
            "http",
            "GET",
            "/v1/observations",
            {
                "params": {
                    "memory": rng.choice([memory, fragment, ""]),
                    "kind": rng.choice(["belief", fragment]),
                    "limit": rng.choice(["0", "-1", "1e9", "ten", "5"]),
                }
            },
        ),
        (
            "http",
            "GET",
            "/v1/search",
            {
                "params": {
                    "memory": memory,
                    "q": "harbor",
                    "channels": "belief",
                    "contested": rng.choice(["maybe", "2", fragment]),
                }
            },
        ),
    ]


def _document_requests(rng: random.Random, memories: list[str]) -> list:
    """Uploads that are not the documents they claim to be (each refused, nothing stored)."""
    memory = rng.choice(memories)
    binary = rng.choice([b"\x00" * 1024, rng.randbytes(2048)])
    docx = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
    # Each type with bytes that are not that type (text is valid HTML, so HTML gets binary data only).
    content_type, suffix, garbage = rng.choice(
        [
            ("text/html", ".html", binary),
            (
                "application/pdf",
                ".pdf",
                rng.choice([b"", b"%PDF-1.7 not really", b"PK\x03\x04broken zip", binary]),
            ),
            (docx, ".docx", rng.choice([b"", b"PK\x03\x04broken zip", b"%PDF-1.7", binary])),
            (
                rng.choice(["application/x-msdownload", "image/png"]),
                ".exe",
                rng.choice([b"MZ\x90\x00", binary]),
            ),
        ]
    )
    name = rng.choice(TRAVERSALS + ["upload" + suffix])
    item = {
        "name": name,
        "content": rng.choice(["!!!not base64!!!", "", base64.b64encode(garbage).decode()]),
        "contentType": content_type,
    }
    return [
        (
            "http",
            "POST",
            "/v1/episodes",
            {
                "params": {"memory": memory, "name": name},
                "content": garbage,
                "headers": {"content-type": content_type},
            },
        ),
        ("http", "POST", "/v1/episodes", {"json": [{"memory": memory, "document": item}]}),
        (
            "http",
            "POST",
            "/v1/episodes",
            {"json": [{"memory": memory, "document": {"name": name}}]},
        ),
        (
            "http",
            "POST",
            "/v1/episodes",
            {
                "params": {"memory": memory},
                "content": garbage,
                "headers": {"content-type": content_type},
            },
        ),  # no name
    ]


def attack(
    base_url: str,
    db_url: str,
    *,
    requests: int = 5000,
    seed: int = 7,
    workers: int = 8,
    memories: list[str] | None = None,
    episode_ids: list[int] | None = None,
) -> Report:
    """Send ``requests`` hostile requests to the server at ``base_url`` and judge the answers."""
    parsed = urllib.parse.urlsplit(base_url)
    host, port = parsed.hostname, parsed.port
    memories = memories or ["alice", "bob"]
    rng = random.Random(seed)
    cases = hostile_cases(rng, memories, episode_ids or [])
    planned = [next(cases) for _ in range(requests)]
    before = table_counts(db_url)
    telemetry_before = _telemetry(db_url)
    report = Report()
    started = time.perf_counter()

    def send(item) -> tuple[str, int, bytes]:
        kind, request = item
        try:
            if request[0] == "raw":
                status, body = raw_request(host, port, request[1])
            else:
                _, method, path, kwargs = request
                with httpx.Client(base_url=base_url, timeout=60) as client:
                    response = client.request(method, path, **kwargs)
                status, body = response.status_code, response.content
        except httpx.HTTPError as exc:
            return kind, -1, str(exc).encode()
        return kind, status, body

    with ThreadPoolExecutor(max_workers=workers) as pool:
        for (_, request), (kind, status, body) in zip(planned, pool.map(send, planned)):
            report.requests += 1
            report.by_kind[kind] += 1
            report.statuses[status] += 1
            text = body[:100_000].decode("utf-8", "replace")
            if status >= 500 and status not in (502, 503):
                report.failures.append(f"{kind}: {status} {text[:200]}")
            elif status <= 0:
                report.failures.append(f"{kind}: no answer ({text[:200]})")
            elif any(marker in text for marker in TRACE_MARKERS):
                report.failures.append(f"{kind}: a stack trace in a {status}: {text[:200]}")
            elif status == 201:  # nothing here is valid: a hostile request was stored
                report.failures.append(f"{kind}: stored (201): {str(request)[:300]}")
    report.seconds = time.perf_counter() - started
    after = table_counts(db_url)
    report.tables_intact = after == before and _telemetry(db_url) >= telemetry_before
    if not report.tables_intact:
        report.failures.append(f"tables changed: {before} -> {after}")
    with httpx.Client(base_url=base_url, timeout=60) as client:
        alive = client.get("/v1/search", params={"memory": memories[0], "q": "harbor"})
    if alive.status_code != 200 or not alive.json()["results"]:
        report.failures.append(
            f"the server no longer searches: {alive.status_code} {alive.text[:200]}"
        )
    return report


# -- who may write where, who may reach the servers at all ----------------------------------
# Every value a client can put where a memory's name goes, other than the token's own memory:
# the scope is decided on the memory an item is stored under, after defaults are applied.
SCOPE_VALUES: list = [
    None,
    0,
    7,
    1.5,
    True,
    False,
    [],
    ["bob"],
    {"name": "bob"},
    "",
    "bob",
    "BOB",
    " bob",
    "bob ",
    "*",
    "../bob",
    "bob\u0000",
    "alice,bob",
]
_MISSING = object()
FOREIGN_HOSTS = ["evil.example", "evil.example:8765", "127.0.0.1.evil.example", "[::2]", ""]
FOREIGN_ORIGINS = [
    "http://evil.example",
    "https://evil.example:443",
    "null",
    "http://127.0.0.1@evil.example",
    "http://evil.example/127.0.0.1",
]
API_ROUTES = [
    ("GET", "/v1/search?memory=alice&q=harbor", None),
    ("GET", "/v1/memories", None),
    ("GET", "/v1/status", None),
    ("GET", "/v1/episodes/1", None),
    ("GET", "/v1/observations?memory=alice", None),
    ("GET", "/docs", None),
    ("GET", "/openapi.json", None),
    ("GET", "/nothing", None),
    (
        "POST",
        "/v1/episodes",
        {"memory": "alice", "kind": "note", "title": "t", "occurred_at": "2026-03-01", "body": "x"},
    ),
    ("POST", "/v1/observations?memory=alice", {"text": "Alice likes pears"}),
    ("PATCH", "/v1/observations/1?memory=alice", {"status": "retired"}),
    ("POST", "/v1/index", {}),
    ("DELETE", "/v1/episodes/1", None),
    ("DELETE", "/v1/memories/alice", None),
]
MCP_ROUTES = [
    ("POST", "/mcp", {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
    (
        "POST",
        "/mcp",
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "forget", "arguments": {"memory": "alice", "whole_memory": True}},
        },
    ),
    ("GET", "/mcp", None),
    ("GET", "/", None),
    ("GET", "/nothing", None),
]
MCP_HEADERS = {"Accept": "application/json, text/event-stream"}


def _with_memory(item: dict, value) -> dict:
    item = dict(item)
    if value is _MISSING:
        item.pop("memory", None)
    else:
        item["memory"] = value
    return item


def scope_cases(rng: random.Random, document: str):
    """Yield ("scope", request) forever: bodies of every writing route whose memory field is
    missing, null, of a wrong type or another memory, under ``?memory=bob`` (or none), for a
    token that may write to alice only. ``document``: a base64 DOCX for document items."""
    episode = {"kind": "note", "title": "sneak", "occurred_at": "2026-03-01", "body": "sneaked in"}
    while True:
        value = rng.choice([*SCOPE_VALUES, _MISSING])
        query = rng.choice(["?memory=bob", "?memory=bob&memory=bob", "?kind=note&memory=bob", ""])
        item = _with_memory(episode, value)
        body = rng.choice(
            [
                item,
                [item],
                [_with_memory(episode, "alice"), item],  # one good item beside: the bad one refused
                {"episodes": [item]},
                [_with_memory({"document": {"name": "m.docx", "content": document}}, value)],
                _with_memory({"text": "Bob keeps bees", "kind": "observation"}, value),
                _with_memory({"status": "retired"}, value),
            ]
        )
        if isinstance(body, dict) and "text" in body:
            request = ("http", "POST", "/v1/observations" + query, {"json": body})
        elif isinstance(body, dict) and "status" in body:
            request = (
                "http",
                "PATCH",
                f"/v1/observations/{rng.randint(1, 4)}" + query,
                {"json": body},
            )
        else:
            request = ("http", "POST", "/v1/episodes" + query, {"json": body})
        yield "scope", request


def guard_cases(rng: random.Random, routes: list, headers: dict | None = None):
    """Yield (kind, request, expected statuses) forever: a route of ``routes`` with a foreign
    Host (421) or a foreign Origin (403), whatever its body says."""
    while True:
        method, path, body = rng.choice(routes)
        if rng.random() < 0.5:
            kind, extra, expected = "host", {"Host": rng.choice(FOREIGN_HOSTS)}, {421}
        else:
            kind, extra, expected = "origin", {"Origin": rng.choice(FOREIGN_ORIGINS)}, {403}
        kwargs: dict = {"headers": {**(headers or {}), **extra}}
        if body is not None:
            kwargs["json"] = body
        yield kind, ("http", method, path, kwargs), expected


def _send(base_url: str, request) -> tuple[int, bytes]:
    host_port = urllib.parse.urlsplit(base_url)
    try:
        if request[0] == "raw":
            return raw_request(host_port.hostname, host_port.port, request[1])
        _, method, path, kwargs = request
        with httpx.Client(base_url=base_url, timeout=60) as client:
            response = client.request(method, path, **kwargs)
        return response.status_code, response.content
    except httpx.HTTPError as exc:
        return -1, str(exc).encode()


def _judge(report: Report, kind: str, request, status: int, body: bytes, expected=None) -> None:
    report.requests += 1
    report.by_kind[kind] += 1
    report.statuses[status] += 1
    text = body[:100_000].decode("utf-8", "replace")
    if expected is not None and status not in expected:
        report.failures.append(
            f"{kind}: {status}, expected {sorted(expected)}: {str(request)[:300]}"
        )
    elif status >= 500 and status not in (502, 503):
        report.failures.append(f"{kind}: {status} {text[:200]}")
    elif status <= 0:
        report.failures.append(f"{kind}: no answer ({text[:200]})")
    elif any(marker in text for marker in TRACE_MARKERS):
        report.failures.append(f"{kind}: a stack trace in a {status}: {text[:200]}")
    elif status == 201 and kind != "scope":
        # Nothing sent here is valid. (A scope case may store its good item in the token's own
        # memory beside a refused one: the rows of every other memory judge those.)
        report.failures.append(f"{kind}: stored ({status}): {str(request)[:300]}")


def scope_attack(
    base_url: str,
    db_url: str,
    token: str,
    revoke,
    *,
    requests: int = 600,
    seed: int = 11,
    workers: int = 8,
    document: str = "",
) -> Report:
    """Scope-field shapes with ``token`` (write access to alice only) against a server where
    tokens exist: no row of any memory but alice may change. Halfway, ``revoke()`` revokes the
    token; every later request with it must answer 401 and store nothing at all."""
    rng = random.Random(seed)
    cases = scope_cases(rng, document)
    auth = {"Authorization": f"Bearer {token}"}
    before = _rows_by_memory(db_url)
    report = Report()
    started = time.perf_counter()

    def run(planned, expected) -> None:
        def send(item):
            kind, (scheme, method, path, kwargs) = item
            request = (scheme, method, path, {**kwargs, "headers": auth})
            return kind, request, *_send(base_url, request)

        with ThreadPoolExecutor(max_workers=workers) as pool:
            for kind, request, status, body in pool.map(send, planned):
                _judge(
                    report, kind if expected is None else "revoked", request, status, body, expected
                )

    run([next(cases) for _ in range(requests // 2)], None)
    revoke()
    alice_before_revoked = _rows_by_memory(db_url).get("alice", 0)
    run([next(cases) for _ in range(requests - requests // 2)], {401})
    after = _rows_by_memory(db_url)
    report.seconds = time.perf_counter() - started
    others_before = {m: n for m, n in before.items() if m != "alice"}
    others_after = {m: n for m, n in after.items() if m != "alice"}
    report.tables_intact = (
        others_after == others_before and after.get("alice", 0) == alice_before_revoked
    )
    if not report.tables_intact:
        report.failures.append(f"rows per memory changed: {before} -> {after}")
    return report


def guard_attack(
    base_url: str,
    db_url: str,
    routes: list,
    *,
    requests: int = 300,
    seed: int = 13,
    workers: int = 8,
    headers: dict | None = None,
) -> Report:
    """Foreign Host and Origin on every route of a loopback server: 421 and 403, nothing changed."""
    rng = random.Random(seed)
    cases = guard_cases(rng, routes, headers)
    planned = [next(cases) for _ in range(requests)]
    before = table_counts(db_url)
    report = Report()
    started = time.perf_counter()

    def send(item):
        kind, request, expected = item
        return kind, request, expected, *_send(base_url, request)

    with ThreadPoolExecutor(max_workers=workers) as pool:
        for kind, request, expected, status, body in pool.map(send, planned):
            _judge(report, kind, request, status, body, expected)
    report.seconds = time.perf_counter() - started
    after = table_counts(db_url)
    report.tables_intact = after == before
    if not report.tables_intact:
        report.failures.append(f"tables changed: {before} -> {after}")
    return report


def _rows_by_memory(db_url: str) -> dict[str, int]:
    """Episodes and statements per memory: what a write in the wrong memory would change."""
    with psycopg.connect(db_url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT memory, count(*) FROM (SELECT memory FROM episodes UNION ALL "
            "SELECT memory FROM observations WHERE status <> 'retired') r GROUP BY memory"
        ).fetchall()
    return dict(rows)


def _telemetry(db_url: str) -> int:
    with psycopg.connect(db_url, autocommit=True) as conn:
        return conn.execute("SELECT count(*) FROM search_telemetry").fetchone()[0]


SEED_EPISODES = [
    (
        "alice",
        "Alice harbor",
        "Lucinda Okonkwo and the Harbor Project: budget on Tuesday. The kumquat orchard.",
    ),
    ("alice", "Alice bread", "Sourdough bread needs a warm kitchen; Lucinda brought apples."),
    (
        "bob",
        "Bob harbor",
        "Lucinda Okonkwo and the Harbor Project: budget on Tuesday. The zeppelin hangar.",
    ),
    ("bob", "Bob bees", "Bees on the roof of the harbor office."),
]


def main() -> int:
    sys.path.insert(0, str(ROOT))  # the loopback model server lives with the tests' support code
    from bench_databases import Databases  # a sibling module (benchmarks/)

    from memory_pipeline import Memory
    from memory_pipeline.storage.embedded import exit_cleanly_on_sigterm
    from memory_pipeline_tests.support.loopback import LoopbackEmbeddingServer
    from memory_pipeline_tests.support.service import ServerProcess, service_env

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--json", metavar="FILE")
    args = parser.parse_args()
    exit_cleanly_on_sigterm()
    databases = Databases()
    try:
        with LoopbackEmbeddingServer(dim=512, models={"qwen3-embedding:0.6b"}) as model:
            db_url = databases.fresh()
            with Memory.open(
                url=db_url, embed_provider="ollama", embed_url=model.url, record_in_dagster=False
            ) as mem:
                ids = mem.add(
                    [
                        {
                            "memory": m,
                            "kind": "note",
                            "title": t,
                            "occurred_at": "2026-03-01",
                            "body": b,
                        }
                        for m, t, b in SEED_EPISODES
                    ]
                ).inserted_ids
                mem.index()
            home = Path(
                tempfile.mkdtemp(prefix="mp_bench_home_")
            )  # the server's data folder (Dagster's home)
            env = service_env(db_url, model.url, home)
            server = ServerProcess(["serve", "--port", "0"], env)
            mcp = ServerProcess(["mcp", "--http", "--port", "0"], env)
            share = max(args.requests // 10, 20)
            try:
                report = attack(
                    server.url,
                    db_url,
                    requests=args.requests,
                    seed=args.seed,
                    workers=args.workers,
                    episode_ids=ids,
                )
                guards = {
                    "serve": guard_attack(
                        server.url, db_url, API_ROUTES, requests=share, workers=args.workers
                    ),
                    "mcp": guard_attack(
                        mcp.url,
                        db_url,
                        MCP_ROUTES,
                        requests=share,
                        workers=args.workers,
                        headers=MCP_HEADERS,
                    ),
                }
                with Memory.open(url=db_url, record_in_dagster=False) as mem:
                    token, _ = mem.create_token("alice-writer", ["alice"], "write")
                    mem.create_token("reader", ["*"], "read")  # tokens remain after the revoke
                    scoped = scope_attack(
                        server.url,
                        db_url,
                        token,
                        lambda: mem.revoke_token("alice-writer"),
                        requests=2 * share,
                        workers=args.workers,
                    )
            finally:
                server.close()
                mcp.close()
                shutil.rmtree(home, ignore_errors=True)
            for name, process in (("serve", server), ("mcp", mcp)):
                if any("Traceback" in line for line in process.stderr):
                    report.failures.append(f"{name} logged a traceback")
    finally:
        databases.close()
    document = {
        **report.to_json(),
        "foreignNames": {name: r.to_json() for name, r in guards.items()},
        "scopes": scoped.to_json(),
    }
    print(json.dumps(document, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(document, indent=2), encoding="utf-8")
    return 0 if report.ok and scoped.ok and all(r.ok for r in guards.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
