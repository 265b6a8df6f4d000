"""The database going away under a running server, and coming back: every request answers 503
within 2 s while it is gone (not after the pool's 30 s), and the same process serves again once
it is back. The database is the real test server behind a loopback port that the test closes
(connections refused, open ones cut) and opens again; or the test server itself, frozen
(SIGSTOP) and thawed, as a stalled disk or a partition leaves a server: silent, not gone."""

from __future__ import annotations

import contextlib
import signal
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import psutil
import pytest

from memory_pipeline_tests.server.test_request_guard import mcp_call
from memory_pipeline_tests.server.test_tokens_isolation import ep
from memory_pipeline_tests.support.service import ServerProcess
from memory_pipeline_tests.support.tcp_forwarder import TcpForwarder, unix_socket_of

REQUESTS = [
    ("GET", "/v1/status", {}),
    ("GET", "/v1/memories", {}),
    ("GET", "/v1/search", {"params": {"memory": "alice", "q": "apples"}}),
    ("GET", "/v1/observations", {"params": {"memory": "alice"}}),
    ("POST", "/v1/episodes", {"json": ep("alice", "new", "New apples arrived.")}),
    ("POST", "/v1/observations", {"json": {"memory": "alice", "text": "Alice likes apples"}}),
    ("POST", "/v1/index", {}),
    ("GET", "/v1/episodes/1", {}),
    ("DELETE", "/v1/memories/nobody", {}),
]


@pytest.fixture
def forwarder(db_url):
    with TcpForwarder(unix_socket_of(db_url)) as port:
        yield port


@pytest.mark.slow  # servers started and stopped in turn: seconds each
@pytest.mark.parametrize("command", [["serve"], ["mcp", "--http"]])
def test_requests_fail_fast_while_the_database_is_gone_and_recover_without_a_restart(
    command, env, local, forwarder, db_url
):
    local.add([ep("alice", "Apples", "Alice's apples are green.")])
    local.index()
    server = ServerProcess(
        [*command, "--port", "0"],
        {**env, "MEMORY_PIPELINE_DATABASE_URL": forwarder.url(db_url)},
    )

    def ask(client: httpx.Client, request) -> tuple[int, float, str]:
        method, path, kw = request
        started = time.monotonic()
        if command == ["serve"]:
            answer = client.request(method, path, **kw)
            text = answer.text
            status = answer.status_code
        else:  # the same requests as tool calls: a failed call is a tool error
            answer = mcp_call(client, "search_memory", {"memory": "alice", "query": "apples"})
            result = answer.json().get("result", {})
            text = result.get("content", [{}])[0].get("text", answer.text)
            status = 503 if result.get("isError") else answer.status_code
        return status, time.monotonic() - started, text

    try:
        with httpx.Client(base_url=server.url, timeout=60) as client:
            assert all(ask(client, r)[0] < 500 for r in REQUESTS)
            forwarder.close()
            outage = time.monotonic()
            answers = []
            with ThreadPoolExecutor(8) as pool:
                while time.monotonic() - outage < 6:
                    answers += list(pool.map(lambda r: ask(client, r), REQUESTS))
            assert len(answers) >= 3 * len(REQUESTS)
            for status, seconds, text in answers:
                assert status == 503 and seconds < 2.0, (status, seconds, text)
                assert "the database is unavailable" in text and "Traceback" not in text
            forwarder.open()
            back = time.monotonic()
            while ask(client, REQUESTS[1])[0] != 200:
                assert time.monotonic() - back < 15, "the server did not reconnect within 15 s"
                time.sleep(0.2)
            for request in REQUESTS:
                status, seconds, text = ask(client, request)
                assert status < 500, (request, status, text)
    finally:
        server.close()
    assert "Traceback" not in "".join(server.stderr)


@contextlib.contextmanager
def frozen(pgdata):
    """Every process of the PostgreSQL server in ``pgdata`` stopped (SIGSTOP), and always
    continued (SIGCONT) when the block ends, however it ends."""
    postmaster = psutil.Process(int((pgdata / "postmaster.pid").read_text().split()[0]))
    stopped: list[psutil.Process] = []
    try:
        postmaster.send_signal(signal.SIGSTOP)  # first: it forks no new child meanwhile
        stopped.append(postmaster)
        for child in postmaster.children(recursive=True):
            with contextlib.suppress(psutil.NoSuchProcess):
                child.send_signal(signal.SIGSTOP)
                stopped.append(child)
        yield
    finally:
        for process in reversed(stopped):
            with contextlib.suppress(psutil.NoSuchProcess):
                process.send_signal(signal.SIGCONT)


@pytest.mark.slow  # a server started, the database frozen for seconds
def test_a_frozen_database_answers_503_within_2_s_and_service_resumes_when_it_thaws(
    env, local, pg_server
):
    local.add([ep("alice", "Apples", "Alice's apples are green.")])
    local.index()
    server = ServerProcess(["serve", "--port", "0"], env)

    def ask(client: httpx.Client, request, timeout: float = 60) -> tuple[int, float, str]:
        method, path, kw = request
        started = time.monotonic()
        answer = client.request(method, path, timeout=timeout, **kw)
        return answer.status_code, time.monotonic() - started, answer.text

    try:
        with httpx.Client(base_url=server.url) as client:
            # Warm: pooled connections open and recently used, so requests go straight to them.
            assert all(ask(client, r)[0] < 500 for r in REQUESTS)
            with frozen(pg_server.pgdata):
                with ThreadPoolExecutor(len(REQUESTS)) as pool:
                    answers = list(pool.map(lambda r: ask(client, r, 5), REQUESTS))
                answers += [ask(client, r, 5) for r in REQUESTS]  # a hang fails at 5 s
            thawed = time.monotonic()
            while ask(client, REQUESTS[1])[0] != 200:
                assert time.monotonic() - thawed < 5, "service did not resume within 5 s"
                time.sleep(0.1)
            resumed_after = time.monotonic() - thawed
            resumed = [ask(client, r) for r in REQUESTS]
    finally:
        server.close()
    slowest = max(seconds for _, seconds, _ in answers)
    print(f"frozen: slowest 503 after {slowest:.2f} s; resumed {resumed_after:.2f} s after thaw")
    for status, seconds, text in answers:
        assert status == 503 and seconds < 2.0, (status, seconds, text)
        assert "the database is unavailable" in text
    assert all(status < 500 for status, _, _ in resumed), resumed
    assert "Traceback" not in "".join(server.stderr)
