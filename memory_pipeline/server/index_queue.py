"""Index passes asked for over HTTP and MCP: one at a time per memory service, on a thread of
their own, with every request made meanwhile coalesced into one pass after it.

An index pass takes as long as the model makes it (minutes with a slow or hanging one). Run in
the request's worker thread, a burst of index requests held one worker each until the server had
none left for reads; here a request either starts the pass (and waits for it without holding a
worker: ``asyncio.wrap_future``) or, while one runs, is answered at once: its work is covered by
the next pass, which starts when the running one ends and serves every request that arrived
during it.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Ticket:
    """A request's place: the pass that covers it, and whether this request started it."""

    future: Future
    started: bool
    running_s: float  # how long the pass running at the request had run (0 when none)

    def to_json(self) -> dict:
        return {
            "status": "queued",
            "runningSeconds": round(self.running_s, 3),
            "message": "an index pass is running; a next pass, started when it ends, "
            "indexes what was stored before this request",
        }


class IndexQueue:
    """One pass at a time of ``run``; requests made while one runs share the next one."""

    def __init__(self, run: Callable[[], Any]):
        self._run = run
        self._lock = threading.Lock()
        self._running: Future | None = None
        self._running_since = 0.0
        self._next: Future | None = None

    def request(self) -> Ticket:
        """Start a pass now if none runs, else join the one queued behind the running pass."""
        with self._lock:
            if self._running is None:
                self._running = Future()
                self._running_since = time.monotonic()
                threading.Thread(
                    target=self._passes, args=(self._running,), name="index-pass", daemon=True
                ).start()
                return Ticket(self._running, True, 0.0)
            if self._next is None:
                self._next = Future()
            return Ticket(self._next, False, time.monotonic() - self._running_since)

    def _passes(self, future: Future) -> None:
        while True:
            future.set_running_or_notify_cancel()
            try:
                future.set_result(self._run())
            except BaseException as exc:  # noqa: BLE001 - the waiting request reports it
                future.set_exception(exc)
            with self._lock:
                following, self._next = self._next, None
                self._running = following
                self._running_since = time.monotonic()
                if following is None:
                    return
            future = following

    @property
    def busy(self) -> bool:
        with self._lock:
            return self._running is not None


_queues: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_queues_lock = threading.Lock()


def index_queue(memory) -> IndexQueue:
    """The queue of ``memory``'s index passes, shared by every server in this process."""
    with _queues_lock:
        queue = _queues.get(memory)
        if queue is None:
            queue = _queues[memory] = IndexQueue(memory.index)
        return queue
