"""What every channel of one search reads (``ChannelQuery``) and returns (``ChannelResult``)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from memory_pipeline.embedders.base import Embedder
from memory_pipeline.errors import MemoryPipelineError
from memory_pipeline.storage.profiles_store import StoredProfile
from memory_pipeline.storage.search_store import ChunkRow, Filters

Hits = list[tuple[str, float]]  # (candidate key, the channel's own score), best first


class Once:
    """A value computed at most once, by whichever channel thread asks first (the query vector:
    the vector and statement channels share one model call)."""

    def __init__(self, compute: Callable[[], Any]):
        self._compute = compute
        self._lock = threading.Lock()
        self._done = False
        self._value: Any = None
        self._error: BaseException | None = None

    def get(self) -> Any:
        with self._lock:
            if not self._done:
                try:
                    self._value = self._compute()
                except BaseException as error:  # re-raised to every caller, in its own thread
                    self._error = error
                self._done = True
        if self._error is not None:
            raise self._error
        return self._value


@dataclass(frozen=True)
class ChannelQuery:
    """One search as its channels see it. ``embedder`` is None when none is configured;
    ``query_vector`` embeds the query once, through the service's breaker; ``with_rows`` asks
    each channel to read its candidates' rows right after its query (fusion needs them,
    ``SearchService.candidates`` does not); ``candidate``: see below."""

    memory: str
    query: str
    filters: Filters
    embedder: Callable[[], Embedder] | None
    query_vector: Once
    with_rows: bool = True
    # Also list the memory's episodes no index pass has chunked yet (``search_store.
    # pending_in_memory``), on the statement channels' connection while the others run.
    pending: bool = False
    # A generation to read instead of the serving one (the quality guard scores a reindex's new
    # generation before it serves); None: the serving one, as every user's search.
    candidate: StoredProfile | None = None


@dataclass
class ChannelResult:
    """A channel's ranked candidates and, ``with_rows``, the rows of the chunks among them."""

    hits: Hits = field(default_factory=list)
    rows: dict[str, ChunkRow] = field(default_factory=dict)


def query_vector_for(
    profile: StoredProfile | None, state: tuple[str, str | None] | None, q: ChannelQuery
) -> tuple[Any, str]:
    """The query's vector, comparable with ``profile``'s stored vectors, and "ok"; or None and
    the reason there is none ("unavailable: ..."), for the response's vector status. ``state``:
    the profile's canary state (``("stale", why)`` when its model changed)."""
    if profile is None:
        return None, "unavailable: nothing has been embedded yet (run memory-pipeline index)"
    if q.embedder is None:
        return None, "unavailable: no embedder is configured"
    if state is not None and state[0] == "stale":
        return None, (
            f"unavailable: the model behind {profile.name} changed ({state[1]}); "
            "run memory-pipeline reindex"
        )
    try:
        configured = q.embedder().profile.name
        if configured != profile.name:
            return None, (
                f"unavailable: the stored vectors are {profile.name} but the configured "
                f"embedder is {configured}; vectors of two models are never compared"
            )
        return q.query_vector.get(), "ok"
    except MemoryPipelineError as exc:  # slow, down, refused or misconfigured: others answer
        return None, f"unavailable: {exc}"
