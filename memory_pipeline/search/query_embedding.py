"""The vector channel's query embedding: its own short deadline and a circuit breaker.

An index pass may wait minutes for a slow model (``MEMORY_PIPELINE_EMBED_TIMEOUT``); a search
may not. The query is embedded on a daemon thread and waited for at most
``MEMORY_PIPELINE_QUERY_EMBED_TIMEOUT`` seconds. A timeout or an unavailable service opens the
breaker: for ``COOLDOWN_S`` the vector channel is skipped at once (keyword and graph answer
alone, and the response says why); the first search after that tries the model again, and one
answer closes the breaker.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import numpy as np

from memory_pipeline.embedders.base import Embedder
from memory_pipeline.errors import EmbedderUnavailable, ExitCode, MemoryPipelineError

COOLDOWN_S = 30.0


class QueryEmbeddingSkipped(MemoryPipelineError):
    """No query vector this time; ``str(error)`` says why, for the response's vector status."""

    exit_code = ExitCode.EMBEDDER_UNAVAILABLE


class QueryEmbeddingBreaker:
    """Embeds queries with a deadline; remembers a failing model for ``cooldown_s`` seconds."""

    def __init__(
        self, *, cooldown_s: float = COOLDOWN_S, clock: Callable[[], float] = time.monotonic
    ):
        self.cooldown_s = cooldown_s
        self.clock = clock
        self._lock = threading.Lock()
        self._open_until = 0.0
        self._reason = ""

    @property
    def is_open(self) -> bool:
        with self._lock:
            return self.clock() < self._open_until

    def embed(self, embedder: Embedder, query: str, timeout_s: float) -> np.ndarray:
        """The query's vector, or QueryEmbeddingSkipped (slow or unavailable model, open breaker).

        Other failures (a refused model, a configuration error) are raised as they are: they are
        not outages, and waiting would not mend them.
        """
        with self._lock:
            left = self._open_until - self.clock()
            if left > 0:
                raise QueryEmbeddingSkipped(
                    f"{self._reason}; vector search is paused for another {left:.0f}s, then retried"
                )
        outcome: dict[str, object] = {}
        done = threading.Event()

        def run() -> None:
            try:
                outcome["vector"] = embedder.embed_query(query)
            except BaseException as exc:  # noqa: BLE001 - handed to the waiting search below
                outcome["error"] = exc
            finally:
                done.set()

        # A daemon thread: a model that never answers must not keep a finished command alive
        # (a ThreadPoolExecutor's workers are joined at exit).
        threading.Thread(target=run, name="query-embedding", daemon=True).start()
        if not done.wait(timeout_s):
            raise QueryEmbeddingSkipped(
                self._trip(
                    f"the query embedding took longer than {timeout_s:g}s (MEMORY_PIPELINE_QUERY_EMBED_TIMEOUT)"
                )
            )
        error = outcome.get("error")
        if isinstance(error, EmbedderUnavailable):
            raise QueryEmbeddingSkipped(self._trip(str(error)))
        if error is not None:
            raise error  # type: ignore[misc]
        with self._lock:
            self._open_until, self._reason = 0.0, ""
        return outcome["vector"]  # type: ignore[return-value]

    def _trip(self, reason: str) -> str:
        with self._lock:
            self._open_until = self.clock() + self.cooldown_s
            self._reason = reason
        return f"{reason}; vector search is paused for {self.cooldown_s:g}s"
