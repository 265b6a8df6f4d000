"""Who may reach the servers at all, on every route of both: the token scope decided on the
memory an item is stored under, the exposure rule decided per request (revoking the last token
of a server bound beyond loopback closes it), Host and Origin on a loopback server, JSON only as
``application/json``, and clients too slow to send their request. Real ``serve`` and ``mcp
--http`` processes, real tokens, the real database."""

from __future__ import annotations

import base64
import json
import socket
import time

import httpx
import pytest

from memory_pipeline_tests.helpers import count
from memory_pipeline_tests.server.test_tokens_isolation import cli, create_token, ep
from memory_pipeline_tests.support.documents import write_docx
from memory_pipeline_tests.support.service import ServerProcess

JSON = {"Content-Type": "application/json"}
MCP_HEADERS = {**JSON, "Accept": "application/json, text/event-stream"}


def bearer(token: str) -> dict:
    return {"Authorization": f"Bearer {token}"}


def on_loopback(server: ServerProcess) -> str:
    """The server's URL on 127.0.0.1 (a server bound to 0.0.0.0 prints that address)."""
    return server.url.replace("0.0.0.0", "127.0.0.1")


def rows(local, memory: str) -> int:
    return count(local.db, "SELECT count(*) FROM episodes WHERE memory = %s", memory)


def mcp_call(client: httpx.Client, tool: str, arguments: dict, **kw) -> httpx.Response:
    """One tools/call as a JSON-RPC request on the stateless streamable HTTP endpoint."""
    message = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments},
    }
    headers = {**MCP_HEADERS, **kw.pop("headers", {})}
    return client.post("/mcp", content=json.dumps(message), headers=headers, **kw)


def tool_result(response: httpx.Response) -> tuple[bool, str]:
    assert response.status_code == 200, response.text
    result = response.json()["result"]
    return result.get("isError", False), result["content"][0]["text"]


# -- 1. the scope decision is made on the memory an item is stored under ------------------------
def test_a_token_of_one_memory_writes_into_no_other_whatever_the_body_says(
    api, env, local, tmp_path
):
    local.add([ep("bob", "Bob's", "Bob keeps bees on the roof.")])
    alice = bearer(create_token(env, "alice-writer", "--memory", "alice", "--write"))
    item = {"kind": "note", "title": "sneak", "occurred_at": "2026-03-01"}
    docx = base64.b64encode(
        write_docx(
            tmp_path / "m.docx",
            title="Minutes",
            sections=[(1, "A", ["Sneaky minutes about the roof."])],
        ).read_bytes()
    ).decode()
    # Every shape that leaves the memory out or sends something else than text, under ?memory=bob.
    shapes = {
        "null item": {**item, "memory": None, "body": "null memory"},
        "missing": {**item, "body": "no memory field"},
        "list of null": [{**item, "memory": None, "body": "list null"}],
        "wrapped null": {"episodes": [{**item, "memory": None, "body": "wrapped null"}]},
        "document null": [{"memory": None, "document": {"name": "m.docx", "content": docx}}],
        "document missing": [{"document": {"name": "m.docx", "content": docx}}],
        "number": {**item, "memory": 7, "body": "number memory"},
        "list memory": {**item, "memory": ["bob"], "body": "list memory"},
        "object memory": {**item, "memory": {"name": "bob"}, "body": "object memory"},
        "boolean": {**item, "memory": True, "body": "boolean memory"},
        "empty": {**item, "memory": "", "body": "empty memory"},
        "explicit bob": {**item, "memory": "bob", "body": "explicit bob"},
    }
    for name, body in shapes.items():
        for query in ("?memory=bob", "?memory=bob&memory=bob", "?kind=note&memory=bob"):
            answer = api.post("/v1/episodes" + query, json=body, headers=alice)
            assert answer.status_code in (403, 404, 422), (name, query, answer.text)
            assert "inserted" not in answer.json() or answer.json()["inserted"] == 0, name
    # Beside 'episodes' nothing is read: a memory there is refused, not ignored.
    wrapped = api.post(
        "/v1/episodes",
        json={"memory": "alice", "episodes": [{**item, "body": "x"}]},
        headers=alice,
    )
    assert wrapped.status_code == 422 and "beside 'episodes'" in wrapped.json()["error"]
    # A raw document for bob, and statements for bob by null or by query.
    raw = api.post(
        "/v1/episodes",
        params={"memory": "bob", "name": "m.docx"},
        content=base64.b64decode(docx),
        headers={
            **alice,
            "Content-Type": "application/vnd.openxmlformats-officedocument."
            "wordprocessingml.document",
        },
    )
    assert raw.status_code == 404
    for body, query in (
        ({"memory": None, "text": "bob likes honey"}, "?memory=bob"),
        ({"text": "bob likes honey"}, "?memory=bob"),
        ({"memory": ["bob"], "text": "bob likes honey"}, ""),
        ({"memory": 1, "text": "bob likes honey"}, ""),
    ):
        saved = api.post("/v1/observations" + query, json=body, headers=alice)
        assert saved.status_code in (404, 422), (body, saved.text)
    bob_statement = local.observe("bob", "Bob's bees are calm", decision="add").saved_id
    for body in ({"status": "retired", "memory": None}, {"status": "retired"}):
        patched = api.patch(
            f"/v1/observations/{bob_statement}?memory=bob", json=body, headers=alice
        )
        assert patched.status_code == 404, patched.text
    assert rows(local, "bob") == 1 and rows(local, "alice") == 0
    assert count(local.db, "SELECT count(*) FROM observations WHERE memory = 'bob'") == 1
    assert count(local.db, "SELECT count(*) FROM observations WHERE status = 'retired'") == 0

    # The same shapes under ?memory=alice are the token's own: each is stored in alice, where
    # its memory is null or missing (the default fills it, as for everyone).
    filled = api.post(
        "/v1/episodes?memory=alice",
        json=[
            shapes["null item"],
            shapes["missing"],
            shapes["document null"][0],
            shapes["explicit bob"],
        ],
        headers=alice,
    ).json()
    assert filled["inserted"] == 3
    assert filled["rejected"] == [
        {"location": "episodes[3]", "reason": "this token cannot write to memory 'bob'"}
    ]
    assert rows(local, "alice") == 3 and rows(local, "bob") == 1


def test_a_null_memory_takes_the_default_for_documents_as_for_episodes(api, local, tmp_path):
    docx = base64.b64encode(
        write_docx(
            tmp_path / "n.docx",
            title="Notes",
            sections=[(1, "A", ["Plain notes about the garden."])],
        ).read_bytes()
    ).decode()
    added = api.post(
        "/v1/episodes?memory=carol",
        json=[{"memory": None, "kind": None, "document": {"name": "n.docx", "content": docx}}],
    )
    assert added.status_code == 201, added.text
    assert rows(local, "carol") == 1


# -- 2. the exposure rule, per request -------------------------------------------------------
@pytest.mark.slow  # servers started and stopped in turn: seconds each
@pytest.mark.parametrize("command", [["serve"], ["mcp", "--http"]])
def test_revoking_the_last_token_closes_a_server_bound_beyond_loopback(command, env, local):
    ids = local.add([ep("alice", "A", "Alice's apples."), ep("bob", "B", "Bob's bees.")])
    admin = create_token(env, "admin", "--all-memories", "--write")
    server = ServerProcess([*command, "--host", "0.0.0.0", "--port", "0"], env)
    paths = ("/v1/memories", "/v1/status", "/docs", "/openapi.json", "/nothing", "/mcp")
    try:
        with httpx.Client(base_url=on_loopback(server), timeout=60) as client:
            # With a token, and a Host that is not loopback: beyond loopback any name is fine.
            if command == ["serve"]:
                ok = client.get("/v1/memories", headers={**bearer(admin), "Host": "192.0.2.7:8765"})
                assert ok.status_code == 200 and len(ok.json()["memories"]) == 2
            else:
                listed = mcp_call(
                    client, "list_memories", {}, headers={**bearer(admin), "Host": "192.0.2.7"}
                )
                assert not tool_result(listed)[0] and "bob" in tool_result(listed)[1]
            if command == ["serve"]:
                assert client.get("/v1/memories").status_code == 401
            else:
                anonymous = tool_result(mcp_call(client, "list_memories", {}))
                assert anonymous[0] and "needs a token" in anonymous[1]
            assert cli(env, "tokens", "revoke", "admin").returncode == 0
            # No token exists now: every request, with or without a header, is 401.
            for path in paths:
                for headers in ({}, bearer(admin), bearer("mpt_guess")):
                    answer = client.get(path, headers=headers)
                    assert answer.status_code == 401, (path, answer.text)
                    assert answer.headers["www-authenticate"] == "Bearer"
            assert "no token exists" in client.get("/v1/memories").json()["error"]
            assert client.delete(f"/v1/episodes/{ids.inserted_ids[0]}").status_code == 401
            assert client.delete("/v1/memories/bob").status_code == 401
            assert client.post("/v1/episodes", json=ep("eve", "e", "e")).status_code == 401
            assert (
                mcp_call(client, "forget", {"memory": "bob", "whole_memory": True}).status_code
                == 401
            )
            # A new token opens it again for its holder only, without a restart.
            reader = create_token(env, "reader", "--memory", "alice")
            if command == ["serve"]:
                assert client.get("/v1/memories").status_code == 401
                seen = client.get("/v1/memories", headers=bearer(reader)).json()["memories"]
                assert [m["name"] for m in seen] == ["alice"]
            else:
                hidden = mcp_call(
                    client,
                    "search_memory",
                    {"memory": "bob", "query": "bees"},
                    headers=bearer(reader),
                )
                assert tool_result(hidden)[0]
                assert tool_result(hidden)[1].endswith(": unknown memory 'bob' (existing: alice)")
    finally:
        server.close()
    log = "".join(server.stderr)
    assert "no token exists: this server listens on 0.0.0.0 beyond loopback" in log
    assert "Traceback" not in log
    assert rows(local, "alice") == rows(local, "bob") == 1 and rows(local, "eve") == 0


def test_a_loopback_server_keeps_its_rule_when_tokens_come_and_go(api, env, local):
    local.add([ep("alice", "A", "Alice's apples.")])
    assert api.get("/v1/memories").status_code == 200
    token = create_token(env, "t", "--memory", "alice")
    assert api.get("/v1/memories").status_code == 401
    assert api.get("/v1/memories", headers=bearer(token)).status_code == 200
    assert cli(env, "tokens", "revoke", "t").returncode == 0
    assert api.get("/v1/memories", headers=bearer(token)).status_code == 200  # local user again
    create_token(env, "u", "--memory", "bob")
    assert api.get("/v1/memories", headers=bearer(token)).json() == {
        "error": "unknown or revoked token"
    }


# -- 4. Host, Origin and Content-Type on every route ----------------------------------------
FOREIGN_HOSTS = ("evil.example", "evil.example:8765", "127.0.0.1.evil.example", "", "[::2]")
FOREIGN_ORIGINS = (
    "http://evil.example",
    "https://evil.example:443",
    "null",
    "file://",
    "http://127.0.0.1@evil.example",
    "http://evil.example/127.0.0.1",
)


def test_a_loopback_api_answers_only_its_own_names_and_origins(api, local):
    local.add([ep("alice", "A", "Alice's apples are green.")])
    routes = [
        ("GET", "/v1/search?memory=alice&q=apples"),
        ("GET", "/v1/memories"),
        ("GET", "/v1/status"),
        ("GET", "/docs"),
        ("GET", "/openapi.json"),
        ("GET", "/nothing"),
        ("POST", "/v1/index"),
        ("DELETE", "/v1/memories/alice"),
    ]
    for method, path in routes:
        for host in FOREIGN_HOSTS:
            answer = api.request(method, path, headers={"Host": host})
            assert answer.status_code == 421, (method, path, host, answer.text)
            assert "apples" not in answer.text and set(answer.json()) == {"error"}
        for origin in FOREIGN_ORIGINS:
            answer = api.request(method, path, headers={"Origin": origin})
            assert answer.status_code == 403, (method, path, origin, answer.text)
    # What a web page may send without asking (text/plain, forms, no type) stores nothing.
    body = json.dumps(ep("alice", "csrf", "stored by a web page"))
    for media in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data", None):
        headers = {"Content-Type": media} if media else {}
        for path in ("/v1/episodes", "/v1/episodes?memory=alice", "/v1/observations?memory=alice"):
            answer = api.post(path, content=body, headers=headers)
            assert answer.status_code == 415, (path, media, answer.text)
    statement = local.observe("alice", "Alice likes green apples", decision="add").saved_id
    patched = api.patch(
        f"/v1/observations/{statement}?memory=alice",
        content='{"status": "retired"}',
        headers={"Content-Type": "text/plain"},
    )
    assert patched.status_code == 415
    # The server's own names, on any port, and its own origin are served.
    port = api.base_url.port
    for host in ("127.0.0.1", f"127.0.0.1:{port}", "localhost", f"localhost:{port}", "[::1]:1"):
        assert api.get("/v1/memories", headers={"Host": host}).status_code == 200, host
    for origin in (f"http://127.0.0.1:{port}", "http://localhost:5173", "http://[::1]"):
        assert api.get("/v1/memories", headers={"Origin": origin}).status_code == 200, origin
    same = api.post(
        "/v1/episodes",
        json=ep("alice", "mine", "stored from the docs page"),
        headers={"Origin": f"http://127.0.0.1:{port}"},
    )
    assert same.status_code == 201
    assert rows(local, "alice") == 2
    assert count(local.db, "SELECT count(*) FROM observations WHERE status = 'retired'") == 0


def _raw(api, request: bytes) -> bytes:
    """One request as bytes on a fresh connection; what comes back until the server closes."""
    with socket.create_connection((api.base_url.host, api.base_url.port)) as sock:
        sock.sendall(request)
        sock.settimeout(10)
        received = b""
        try:
            while piece := sock.recv(65536):
                received += piece
                if b"\r\n\r\n" in received and b"Connection: close" not in request:
                    break
        except TimeoutError:
            pass
    return received


def test_a_loopback_api_refuses_host_forms_and_repeats_that_a_parser_could_misread(api, local):
    """Beyond the documented shapes: a Host with something after its brackets or a port that is
    no number names no loopback server; two Host (or Origin) headers are refused whichever a
    proxy would read; a WebSocket upgrade reaches no route, before or after the checks."""
    local.add([ep("alice", "A", "Alice's apples are green.")])
    path = "/v1/search?memory=alice&q=apples"
    for host in ("[::1]evil", "[::1]evil.example", "127.0.0.1:abc", "localhost:", "[::1]:x"):
        answer = api.get(path, headers={"Host": host})
        assert answer.status_code == 421, (host, answer.text)
        assert "apples" not in answer.text
    port = api.base_url.port
    for header, values in (
        ("Host", (f"127.0.0.1:{port}", "evil.example")),
        ("Origin", (f"http://127.0.0.1:{port}", "http://evil.example")),
    ):
        lines = [f"GET {path} HTTP/1.1"]
        if header == "Origin":
            lines.append(f"Host: 127.0.0.1:{port}")
        lines += [f"{header}: {value}" for value in values]
        answer = _raw(api, ("\r\n".join([*lines, "Connection: close", "", ""])).encode())
        assert answer.startswith(b"HTTP/1.1 400"), (header, answer[:300])
        assert b"apples" not in answer
    upgrade = (
        f"GET /v1/search?memory=alice&q=apples HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
    ).encode()
    answer = _raw(api, upgrade)
    assert not answer.startswith(b"HTTP/1.1 101"), answer[:300]
    assert b"apples" not in answer


@pytest.mark.slow  # servers started and stopped in turn: seconds each
def test_a_reverse_proxy_names_come_from_the_environment(env, local):
    local.add([ep("alice", "A", "Alice's apples.")])
    bad = cli({**env, "MEMORY_PIPELINE_ALLOWED_HOSTS": "memory.example.org,http://x"}, "serve")
    assert bad.returncode == 7 and "MEMORY_PIPELINE_ALLOWED_HOSTS" in bad.stderr
    assert "Traceback" not in bad.stderr
    server = ServerProcess(
        ["serve", "--port", "0"],
        {**env, "MEMORY_PIPELINE_ALLOWED_HOSTS": "Memory.Example.org, proxy.lan:8443"},
    )
    try:
        with httpx.Client(base_url=server.url, timeout=60) as client:
            for host, status in (
                ("memory.example.org", 200),
                ("memory.example.org:443", 200),
                ("proxy.lan:8443", 200),
                ("proxy.lan", 421),
                ("proxy.lan:8444", 421),
                ("evil.example", 421),
            ):
                assert client.get("/v1/memories", headers={"Host": host}).status_code == status
            for origin, status in (
                ("https://memory.example.org", 200),
                ("https://proxy.lan:8443", 200),
                ("https://proxy.lan:9", 403),
                ("https://evil.example", 403),
            ):
                answer = client.get("/v1/memories", headers={"Origin": origin})
                assert answer.status_code == status, origin
    finally:
        server.close()
    assert "Traceback" not in "".join(server.stderr)


def test_the_mcp_server_checks_host_origin_and_content_type_on_every_route(env, local):
    local.add([ep("alice", "A", "Alice's apples.")])
    server = ServerProcess(["mcp", "--http", "--port", "0"], env)
    try:
        with httpx.Client(base_url=server.url, timeout=60) as client:
            listed = mcp_call(client, "list_memories", {})
            assert not tool_result(listed)[0] and "alice" in tool_result(listed)[1]
            for path in ("/mcp", "/", "/nothing"):
                for host in FOREIGN_HOSTS:
                    assert client.get(path, headers={"Host": host}).status_code == 421
                for origin in FOREIGN_ORIGINS:
                    assert client.get(path, headers={"Origin": origin}).status_code == 403
            assert (
                mcp_call(client, "list_memories", {}, headers={"Host": "evil.example"}).status_code
                == 421
            )
            sneak = mcp_call(
                client,
                "add_memory",
                {"memory": "alice", "title": "csrf", "body": "from a web page"},
                headers={"Origin": "http://evil.example"},
            )
            assert sneak.status_code == 403
            for media in ("text/plain", "application/x-www-form-urlencoded", ""):
                plain = mcp_call(
                    client,
                    "add_memory",
                    {"memory": "alice", "title": "csrf", "body": "from a web page"},
                    headers={"Content-Type": media},
                )
                assert plain.status_code == 415, plain.text
    finally:
        server.close()
    assert "Traceback" not in "".join(server.stderr)
    assert rows(local, "alice") == 1


# -- 9. clients too slow to send their request ----------------------------------------------
def _closed_within(sock: socket.socket, seconds: float) -> bytes:
    """What the server sends before it closes ``sock`` (b"" when it just closes), or fail."""
    sock.settimeout(seconds)
    received = b""
    try:
        while piece := sock.recv(65536):
            received += piece
    except TimeoutError:
        pytest.fail(f"the server kept the connection open for more than {seconds} s")
    return received


@pytest.mark.slow  # servers started and stopped in turn: seconds each
@pytest.mark.parametrize("command", [["serve"], ["mcp", "--http"]])
def test_slow_clients_are_cut_off(command, env):
    server = ServerProcess(
        [*command, "--port", "0"], {**env, "MEMORY_PIPELINE_CLIENT_TIMEOUT": "1"}
    )
    host, port = server.url.removeprefix("http://").rsplit(":", 1)
    path = "/v1/episodes" if command == ["serve"] else "/mcp"
    try:
        started = time.monotonic()
        with socket.create_connection((host, int(port))) as silent:  # sends nothing
            assert _closed_within(silent, 10) == b""
        with socket.create_connection((host, int(port))) as dribbling:  # headers, byte by byte
            dribbling.settimeout(10)
            try:
                for byte in f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n".encode():
                    dribbling.sendall(bytes([byte]))
                    time.sleep(0.2)
                pytest.fail("the server kept reading headers sent a byte every 0.2 s for 8 s")
            except (BrokenPipeError, ConnectionResetError):
                pass
        with socket.create_connection((host, int(port))) as stalling:  # a body that stops
            stalling.sendall(
                f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                "Accept: application/json, text/event-stream\r\n"
                "Content-Length: 1000\r\n\r\n{".encode()
            )
            answer = _closed_within(stalling, 10)
            assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
            assert b"paused for more than 1 s" in answer
        assert time.monotonic() - started < 25
        # A normal client is served all the while.
        with httpx.Client(base_url=server.url, timeout=60) as client:
            assert client.get("/nothing").status_code == 404
    finally:
        server.close()
    log = "".join(server.stderr)
    assert "Traceback" not in log and "internal error" not in log
