"""What a search returns: results with provenance, and the response document (stable JSON)."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field

SNIPPET_CHARS = 200

# The fields of a result an agent is given (MCP's ``search_memory``): those of ``to_json`` that
# say what and where, without the passage's whole text and the channels' figures.
BRIEF_FIELDS = (
    "episodeId",
    "chunkId",
    "title",
    "occurredAt",
    "kind",
    "score",
    "grade",
    "snippet",
    "status",
    "sources",
    "superseded",
    "supersededAt",
    "supersededBy",
)


@dataclass(frozen=True)
class SearchResult:
    """One passage: adjacent chunks of one episode sewn together (``domain.passages``), or an
    observation or belief.

    ``chunk_id``, ``snippet``, ``score`` and ``ranks`` are those of its best chunk; ``start``,
    ``end`` and ``text`` cover the whole passage; ``chunk_ids`` lists its chunks in text order.
    A statement (``kind`` observation or belief) has ``chunk_id`` ``observation:<id>`` /
    ``belief:<id>``, its ``status``, and ``sources``: the episodes and passages it came from
    (``episode_id`` is the first of those episodes, or None). A superseded revision (a search
    with history) has ``chunk_id`` ``episode:<id>``, the start of its body as ``text``, its
    words' ``ts_rank`` as ``score``, no ranks, and ``superseded_at``/``superseded_by``.
    """

    episode_id: int | None
    chunk_id: str
    title: str
    kind: str
    occurred_at: dt.datetime
    snippet: str
    start: int
    end: int
    text: str
    score: float
    ranks: dict[str, int | None]  # channel -> 1-based rank in that channel, None if absent
    chunk_ids: tuple[str, ...] = ()  # the passage's chunks in text order (default: chunk_id alone)
    status: str | None = None  # statements only: active or contested
    sources: dict | None = None  # statements only: {"episodeIds": [...], "passages": [...]}
    anchor: str = (
        ""  # the headings above the passage's first chunk ("Title > Section"), "" for none
    )
    # A superseded revision (search with history only): when it stopped being current, and the
    # revision that took its place (None when that one was forgotten).
    superseded_at: dt.datetime | None = None
    superseded_by: int | None = None
    # How well it matches the question (``domain.grades``: strong, weak, none) and the evidence
    # behind that; None when the search could not be graded (``SearchResponse.match_reason``).
    grade: str | None = None
    evidence: dict | None = None

    def __post_init__(self):
        if not self.chunk_ids:
            object.__setattr__(self, "chunk_ids", (self.chunk_id,))

    def to_json(self) -> dict:
        statement: dict[str, object] = (
            {} if self.sources is None else {"status": self.status, "sources": self.sources}
        )
        if self.superseded_at is not None:
            statement = {
                "superseded": True,
                "supersededAt": self.superseded_at.isoformat(),
                "supersededBy": self.superseded_by,
            }
        return {
            "episodeId": self.episode_id,
            "chunkId": self.chunk_id,
            "chunkIds": list(self.chunk_ids),
            "anchor": self.anchor,
            "title": self.title,
            "kind": self.kind,
            "occurredAt": self.occurred_at.isoformat(),
            "snippet": self.snippet,
            "start": self.start,
            "end": self.end,
            "text": self.text,
            "score": round(self.score, 6),
            "ranks": self.ranks,
            "grade": self.grade,
            "evidence": self.evidence,
            **statement,
        }

    def brief_json(self) -> dict:
        """``to_json`` narrowed to ``BRIEF_FIELDS``: the same names and values, fewer of them."""
        document = self.to_json()
        return {key: document[key] for key in BRIEF_FIELDS if key in document}


@dataclass
class SearchResponse:
    memory: str
    query: str
    policy: str
    limit: int
    channels: tuple[str, ...]
    results: list[SearchResult] = field(default_factory=list)
    vector_status: str = "off"  # "ok", "off", or "unavailable: <reason>"
    keyword_method: str | None = None  # "full_text" or "substring" when the channel ran
    entities: list[str] = field(default_factory=list)
    reranker: str = "off"  # "off", "not needed", "ran", "fallback: <reason>"
    latency_ms: float = 0.0
    # Episodes of the memory stored but not indexed yet (no channel sees them): how many among
    # its newest ``search_store.PENDING_WINDOW`` (``pending_more``: all of those, maybe more), and
    # those holding a word of the query ({"episodeId", "title", "kind", "occurredAt", "snippet"}).
    pending_episodes: int = 0
    pending_more: bool = False
    pending_matches: list[dict] = field(default_factory=list)
    history: bool = False  # superseded revisions asked for (listed after the current results)
    # As of a date or date-time (as given, normalized): what was in force then; None: now.
    as_of: str | None = None
    # The best result's grade (strong, weak, none; None: ungraded) and, for none or ungraded,
    # why in words (``search.grading``).
    match: str | None = None
    match_reason: str | None = None

    @property
    def nothing_matches(self) -> bool:
        """The search was graded and no result clears the profile's calibration."""
        return self.match == "none"

    @property
    def vector_available(self) -> bool:
        return not self.vector_status.startswith("unavailable")

    def note(self) -> str | None:
        """What an agent must read before the results: none of them answers, or they are
        ungraded (why, in words); None when the best result matches."""
        if self.nothing_matches:
            return (
                f"Nothing in memory {self.memory!r} matches this question well: do not treat "
                "these results as an answer"
                + (" (they are the closest passages)." if self.results else ".")
            )
        return self.match_reason if self.match is None else None

    def brief_json(self) -> dict:
        """The answer for an agent (MCP's ``search_memory``): the ``note`` first, so it is read
        before any result, the best result's grade as ``match``, and the results' ``brief_json``."""
        note = self.note()
        return {
            **({"note": note} if note else {}),
            "match": self.match,
            "memory": self.memory,
            "query": self.query,
            **({"asOf": self.as_of} if self.as_of else {}),
            "results": [r.brief_json() for r in self.results],
        }

    def to_json(self) -> dict:
        status, _, reason = self.vector_status.partition(": ")
        return {
            "memory": self.memory,
            "query": self.query,
            "policy": self.policy,
            "limit": self.limit,
            "channels": list(self.channels),
            "vector": {"status": status, "reason": reason or None},
            "keywordMethod": self.keyword_method,
            "entities": self.entities,
            "reranker": self.reranker,
            # What the results' scores are: "fused" (the channels' scaled scores summed, relative
            # to this search, a weakest candidate just below 0) or "reranker" (its model's scale).
            "scoreKind": "reranker" if self.reranker == "ran" else "fused",
            "latencyMs": round(self.latency_ms, 2),
            "history": self.history,
            "asOf": self.as_of,
            # "none": no result is an answer, however high its fused score; null: ungraded.
            "match": {"grade": self.match, "reason": self.match_reason},
            "results": [r.to_json() for r in self.results],
            "pending": {
                "episodes": self.pending_episodes,
                "atLeast": self.pending_more,
                "matches": self.pending_matches,
            },
        }


def make_snippet(
    text: str, query: str, width: int = SNIPPET_CHARS, *, focus: int | None = None
) -> str:
    """About ``width`` characters of the chunk, whitespace collapsed.

    With ``focus`` (a character offset in ``text``: where the vector channel's best paragraph
    window begins) the snippet starts there; otherwise around the first query word the chunk
    contains.
    """
    flat = " ".join(text.split())
    if len(flat) <= width:
        return flat
    if focus is not None and 0 < focus < len(text):
        # Where the focus lands once whitespace is collapsed: the collapsed length of what
        # precedes it, plus the single space that separates it from that.
        before = " ".join(text[:focus].split())
        start = len(before) + (1 if before and text[focus - 1].isspace() else 0)
    else:
        lowered = flat.lower()
        positions = [lowered.find(w) for w in re.findall(r"\w{3,}", query.lower())]
        hits = [p for p in positions if p >= 0]
        start = max(0, min(hits) - width // 4) if hits else 0
    start = max(0, min(start, len(flat) - width))
    piece = flat[start : start + width]
    return ("…" if start > 0 else "") + piece + ("…" if start + width < len(flat) else "")
