"""Index passes requested over HTTP: one at a time, further requests answered at once (202) and
served by one pass after it, and reads never waiting behind a burst of index requests."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from memory_pipeline.server.index_queue import IndexQueue
from memory_pipeline_tests.helpers import count
from memory_pipeline_tests.server.test_tokens_isolation import ep
from memory_pipeline_tests.support.service import ServerProcess

READS = [
    ("/v1/memories", {}),
    ("/v1/status", {}),
    ("/v1/search", {"memory": "alice", "q": "apples", "channels": "keyword"}),
    ("/v1/observations", {"memory": "alice"}),
]


@pytest.mark.slow  # a model that takes seconds per call, 60 requests waiting on it
def test_a_burst_of_index_requests_runs_one_pass_and_reads_answer_meanwhile(env, local, model):
    local.add([ep("alice", "Apples", "Alice's apples are green.")])
    local.index()
    server = ServerProcess(["serve", "--port", "0"], env)
    try:
        with httpx.Client(base_url=server.url, timeout=120) as client:
            assert all(client.get(path, params=p).status_code == 200 for path, p in READS)
            assert (
                client.post("/v1/episodes", json=ep("alice", "Pears", "Pears.")).status_code == 201
            )
            model.delay_s = 6.0  # every model call now hangs for seconds
            answers: list[httpx.Response] = []
            burst_done = threading.Event()

            def burst() -> None:
                with ThreadPoolExecutor(60) as pool:
                    answers.extend(pool.map(lambda _: client.post("/v1/index"), range(60)))
                burst_done.set()

            threading.Thread(target=burst, daemon=True).start()
            time.sleep(1.0)  # the burst is in: one pass waits on the model
            slowest, reads, window = 0.0, 0, time.monotonic() + 4.0
            while time.monotonic() < window:
                for path, params in READS:
                    started = time.monotonic()
                    status = client.get(path, params=params).status_code
                    slowest = max(slowest, time.monotonic() - started)
                    reads += 1
                    assert status == 200, (path, status)
            timed_during_pass = not burst_done.is_set()
            model.delay_s = 0.0
            burst_done.wait(120)
    finally:
        server.close()
    print(f"slowest of {reads} reads during the burst: {slowest:.2f} s")
    assert slowest < 1.0
    assert timed_during_pass  # the reads were timed while the pass and the burst were open
    statuses = sorted(answer.status_code for answer in answers)
    assert statuses.count(200) == 1 and statuses.count(202) == 59, statuses
    queued = next(a.json() for a in answers if a.status_code == 202)
    assert queued["status"] == "queued" and queued["runningSeconds"] >= 0
    assert count(local.db, "SELECT count(*) FROM episodes WHERE memory = 'alice'") == 2
    assert "Traceback" not in "".join(server.stderr)


def test_requests_during_a_pass_share_one_next_pass_and_a_failure_reaches_its_waiter():
    release = threading.Event()
    passes: list[int] = []

    def run() -> int:
        passes.append(len(passes) + 1)
        if len(passes) == 1:
            release.wait(10)
            raise RuntimeError("the model went away")
        return len(passes)

    queue = IndexQueue(run)
    first = queue.request()
    joined = [queue.request() for _ in range(5)]
    assert first.started and not any(t.started for t in joined)
    assert len({id(t.future) for t in joined}) == 1 and joined[0].future is not first.future
    release.set()
    with pytest.raises(RuntimeError, match="the model went away"):
        first.future.result(10)
    assert joined[0].future.result(10) == 2  # one pass for the five, after the failed one
    deadline = time.monotonic() + 5
    while queue.busy:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert passes == [1, 2] and queue.request().started
