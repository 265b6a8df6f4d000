"""Model calls kept in flight: each list of texts an index pass prepares, embedded on a worker thread."""

from __future__ import annotations

import time
from collections.abc import Callable, Generator
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

import numpy as np

from memory_pipeline.embedders.base import Embedder

# Model calls submitted beyond those in flight (their inputs are prepared, their episodes claimed).
QUEUED_CALLS = 32


def model_calls(
    embedder: Embedder, next_inputs: Callable[[], list[str] | None]
) -> Generator[tuple[int, np.ndarray, float, float], None, None]:
    """Embed each list of texts ``next_inputs()`` gives (until it gives None) in one model call,
    up to ``embedder.in_flight`` calls at once on worker threads, yielding (call number, vectors,
    started, ended) as the calls complete (``time.perf_counter`` when the worker sent the call and
    when its answer was decoded); call numbers count from 0 in the order the inputs were given.

    The caller stores (and ``next_inputs`` claims more work) while the next calls run: the model
    server is never idle waiting for the database, and with several calls in flight it is never
    idle waiting for this process. Closing the generator cancels the calls not yet started and
    waits for the running ones. When a call fails, no further call starts; the calls already
    running are waited for and those that succeeded are still yielded (their vectors are valid
    and the caller keeps them), then the first failure is raised.
    """

    def one(number: int, texts: list[str]) -> tuple[int, np.ndarray, float, float]:
        t0 = time.perf_counter()
        vectors = embedder.embed_documents(texts)
        return number, vectors, t0, time.perf_counter()

    in_flight = max(1, embedder.in_flight)
    submitted = 0
    with ThreadPoolExecutor(max_workers=in_flight, thread_name_prefix="embed") as pool:
        running: set = set()
        try:
            # More submitted than run: a worker that finishes starts the next call at once, and the
            # queue outlasts the caller's pauses (a commit of 500 chunks, a claim round).
            while True:
                while len(running) < in_flight + QUEUED_CALLS:
                    texts = next_inputs()
                    if texts is None:
                        break
                    running.add(pool.submit(one, submitted, texts))
                    submitted += 1
                if not running:
                    return
                done, running = wait(running, return_when=FIRST_COMPLETED)
                failed = next((f.exception() for f in done if f.exception() is not None), None)
                if failed is not None:
                    started = {f for f in running if not f.cancel()}  # queued calls never start
                    running = set()
                    wait(started)
                    kept = [f for f in done | started if f.exception() is None]
                    for future in sorted(kept, key=lambda f: f.result()[0]):
                        yield future.result()
                    raise failed
                for future in done:
                    yield future.result()
        finally:
            for future in running:
                future.cancel()
