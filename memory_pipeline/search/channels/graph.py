"""The graph channel: chunks mentioning the entities the query names, with a matcher per memory."""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field

from memory_pipeline.domain.entities import EntityMatcher, entity_matcher
from memory_pipeline.search.channels.base import ChannelQuery, ChannelResult
from memory_pipeline.storage import search_store

GRAPH_CANDIDATES = 25
# A name in most of a memory's episodes (the owner, a chat partner) singles nothing out; the
# graph channel follows only names that narrow the memory down.
GRAPH_MAX_EPISODE_SHARE = 0.5
# Memories whose entity matcher a channel keeps (each rebuilt when its entities change).
CACHED_ENTITY_MATCHERS = 64


@dataclass
class GraphResult(ChannelResult):
    """``entities``: the names of the entities the channel followed."""

    entities: list[str] = field(default_factory=list)


def followed_entities(
    conn, memory: str, query: str, matcher: EntityMatcher
) -> tuple[list[int], int, int]:
    """The graph channel's rule: the ids of the entities ``query`` names (``matcher``: the
    ``entity_matcher`` of the memory's entities) that it follows, with their mentions summed
    and the memory's indexed episodes (these two pick the graph query's plan)."""
    named = matcher.find(query)
    if not named:
        return [], 0, 0
    # Mentions are counted only now, for the few entities the query names: counting a large
    # memory's episodes on every search that named a recurring name cost more than the rest of
    # the channel. Names are linked in indexed episodes, so those are the share's denominator.
    counts, episodes = search_store.graph_rule_counts(conn, memory, named)
    followed = [
        i
        for i in named
        if counts[i] > 0 and (episodes < 4 or counts[i] <= GRAPH_MAX_EPISODE_SHARE * episodes)
    ]
    return followed, sum(counts[i] for i in followed), episodes


class GraphChannel:
    """The channel, keeping each memory's entity matcher while its entities stay the same:
    building the matcher of thousands of entities cost more than the rest of the channel."""

    def __init__(self) -> None:
        # memory -> (entities_version, matcher, id -> name)
        self._matchers: OrderedDict[str, tuple[int | None, EntityMatcher, dict[int, str]]] = (
            OrderedDict()
        )
        self._lock = threading.Lock()

    def __call__(self, conn, q: ChannelQuery) -> GraphResult:
        matcher, by_id = self.matcher(conn, q.memory)
        followed, mentions, episodes = followed_entities(conn, q.memory, q.query, matcher)
        if not followed:
            return GraphResult()
        hits = search_store.graph_candidates(
            conn,
            q.memory,
            followed,
            q.filters,
            limit=GRAPH_CANDIDATES,
            mentions=mentions,
            episodes=episodes,
        )
        return GraphResult(hits=hits, entities=[by_id[i] for i in followed])

    def matcher(self, conn, memory: str) -> tuple[EntityMatcher, dict[int, str]]:
        """The memory's entity matcher and names by id.

        The version is read before the entities, so a change between the two reads leaves a
        newer matcher under an older version: the next search rebuilds it, never the reverse."""
        version = search_store.entities_version(conn, memory)
        with self._lock:
            cached = self._matchers.get(memory)
            if cached is not None and cached[0] == version:
                self._matchers.move_to_end(memory)
                return cached[1], cached[2]
        entities = search_store.memory_entities(conn, memory)
        matcher, by_id = entity_matcher(entities), {e.id: e.name for e in entities}
        with self._lock:
            self._matchers[memory] = (version, matcher, by_id)
            self._matchers.move_to_end(memory)
            while len(self._matchers) > CACHED_ENTITY_MATCHERS:
                self._matchers.popitem(last=False)
        return matcher, by_id
