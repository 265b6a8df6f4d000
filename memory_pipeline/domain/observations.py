"""Observations and beliefs: the rules a statement must pass before it is stored, reading them
from JSONL, and what counts as a near-exact duplicate.

An observation or a belief is a short statement about the person or the world ("Mara's running
coach is Inês", "Mara prefers morning runs"), written by a person or an agent, with the episodes
(and where possible the passages) it came from. ``observation``: something seen in the sources;
``belief``: a conclusion drawn from them, which can be ``contested``. ``retired`` statements are
history: a revision retires the version it replaces.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from memory_pipeline.domain import calibration, fusion
from memory_pipeline.domain.episodes import InvalidEpisode, parse_timestamp, validate_memory_name
from memory_pipeline.domain.field_errors import InvalidField
from memory_pipeline.domain.jsonl import (
    LineRejected,
    iter_lines,
    json_type,
    parse_object_line,
    reject_unknown_fields,
)

KINDS = ("observation", "belief")
STATUSES = ("active", "contested", "retired")
# A statement, not a document: longer text belongs in an episode.
MAX_TEXT_CHARS = 2_000
MAX_SOURCES = 200
# Two statements whose vectors are this close (cosine), or whose words are the same once case,
# punctuation and spacing are set aside, say the same thing: the second is refused unless forced.
# "Close" (shown back before saving): vectors at least CLOSE_COSINE alike, or at least this share
# of the new statement's words (lexemes) in the old one. The cosines are the defaults a profile
# keeps until it is measured (or when its measurement failed): each embedding profile's own come
# from its calibration (``domain.calibration``: ``close``, ``duplicate``), since a model puts
# unrelated sentences anywhere from 0.1 to 0.88.
NEAR_DUPLICATE_COSINE = calibration.DEFAULT_DUPLICATE
CLOSE_COSINE = calibration.DEFAULT_CLOSE
CLOSE_WORD_SHARE = 0.5
JSONL_FIELDS = (
    "memory",
    "kind",
    "text",
    "status",
    "confidence",
    "episode_ids",
    "passages",
    "author",
    "observed_at",
    "valid_from",
    "valid_until",
)

_UNSTORABLE_RE = re.compile("[\x00\ud800-\udfff]")


class InvalidObservation(InvalidField):
    """A statement's field breaks a rule."""


@dataclass(frozen=True)
class ObservationDraft:
    """A validated statement not yet stored; build it with ``make_observation``."""

    memory: str
    kind: str
    text: str
    status: str = "active"
    confidence: float = 1.0
    episode_ids: tuple[int, ...] = ()
    passages: tuple[str, ...] = ()  # chunk ids, or the writer's own references ("D3:12")
    author: str = ""
    observed_at: datetime | None = None  # None: the time it is stored
    # When it holds in the world (None: from when it was observed; until further notice).
    valid_from: datetime | None = None
    valid_until: datetime | None = None


def _text(field: str, value: Any, *, limit: int, required: bool) -> str:
    if value is None:
        if required:
            raise InvalidObservation(field, f"missing {field}")
        return ""
    if not isinstance(value, str):
        raise InvalidObservation(field, f"'{field}' must be a string, got {json_type(value)}")
    if _UNSTORABLE_RE.search(value):
        raise InvalidObservation(field, f"'{field}' contains a NUL character or a lone surrogate")
    if required and not value.strip():
        raise InvalidObservation(field, f"'{field}' is empty")
    if len(value) > limit:
        raise InvalidObservation(
            field, f"'{field}' is {len(value)} characters long (at most {limit})"
        )
    return value


def _choice(field: str, value: Any, allowed: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value not in allowed:
        shown = repr(value) if isinstance(value, str) else json_type(value)
        raise InvalidObservation(
            field, f"invalid {field} {shown} (expected {' or '.join(allowed)})"
        )
    return value


def _confidence(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidObservation(
            "confidence", f"'confidence' must be a number in [0, 1], got {json_type(value)}"
        )
    if not (math.isfinite(value) and 0 <= value <= 1):
        raise InvalidObservation("confidence", f"'confidence' must be in [0, 1], got {value}")
    return float(value)


def _sources(field: str, value: Any, items: str, noun: str) -> list | tuple:
    """``value`` if it is an array of at most ``MAX_SOURCES`` (of ``items``, one ``noun`` each)."""
    if not isinstance(value, (list, tuple)):
        raise InvalidObservation(
            field, f"'{field}' must be an array of {items}, got {json_type(value)}"
        )
    if len(value) > MAX_SOURCES:
        raise InvalidObservation(
            field, f"'{field}' lists {len(value)} {noun} (at most {MAX_SOURCES})"
        )
    return value


def _episode_ids(value: Any) -> tuple[int, ...]:
    value = _sources("episode_ids", value, "episode ids", "episodes")
    out = []
    for item in value:
        if isinstance(item, bool) or not isinstance(item, int) or not 0 < item < 2**63:
            raise InvalidObservation(
                "episode_ids", f"'episode_ids' holds {item!r}, not a positive episode id"
            )
        out.append(item)
    return tuple(dict.fromkeys(out))


def _passages(value: Any) -> tuple[str, ...]:
    value = _sources("passages", value, "strings", "passages")
    return tuple(dict.fromkeys(_text("passages", item, limit=200, required=True) for item in value))


def make_observation(
    *,
    memory: Any = None,
    text: Any = None,
    kind: Any = "observation",
    status: Any = "active",
    confidence: Any = 1.0,
    episode_ids: Any = (),
    passages: Any = (),
    author: Any = "",
    observed_at: Any = None,
    valid_from: Any = None,
    valid_until: Any = None,
) -> ObservationDraft:
    """A checked draft, or InvalidObservation naming the field and the reason."""
    try:
        memory = validate_memory_name(memory)
    except InvalidEpisode as error:
        raise InvalidObservation(error.field, error.reason) from None
    when = _moment("observed_at", observed_at)
    start, end = _moment("valid_from", valid_from), _moment("valid_until", valid_until)
    if start is not None and end is not None and end < start:
        raise InvalidObservation(
            "valid_until",
            f"'valid_until' {end.isoformat()} is before 'valid_from' {start.isoformat()}",
        )
    status = _choice("status", status, STATUSES)
    if status == "retired":
        raise InvalidObservation(
            "status", "a new statement cannot be 'retired' (revise or retire an existing one)"
        )
    return ObservationDraft(
        memory=memory,
        kind=_choice("kind", kind, KINDS),
        text=_text("text", text, limit=MAX_TEXT_CHARS, required=True).strip(),
        status=status,
        confidence=_confidence(confidence),
        episode_ids=_episode_ids(episode_ids),
        passages=_passages(passages),
        author=_text("author", author, limit=200, required=False),
        observed_at=when,
        valid_from=start,
        valid_until=end,
    )


def _moment(field: str, value: Any) -> datetime | None:
    """An optional date or date-time field (``parse_timestamp``), its error named after it."""
    if value is None:
        return None
    try:
        return parse_timestamp(value)
    except InvalidEpisode as error:
        raise InvalidObservation(field, f"'{field}': {error.reason}") from None


def parse_observation_lines(
    data: bytes, display: str, *, memory: str | None = None, kind: str | None = None
) -> tuple[list[tuple[int, ObservationDraft]], list[tuple[int, str]]]:
    """(line number, draft) from JSONL (one object a line, fields ``JSONL_FIELDS``; ``memory``
    and ``text`` required, ``memory`` unless given here), and (line number, ``FILE:LINE:
    reason``) for every rejected line."""
    drafts: list[tuple[int, ObservationDraft]] = []
    rejections: list[tuple[int, str]] = []
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    for number, raw in iter_lines(data):
        try:
            value = parse_object_line(raw)
            reject_unknown_fields(
                value, JSONL_FIELDS, f" (expected some of {', '.join(JSONL_FIELDS)})"
            )
            fields = dict(value)
            if memory is not None:
                fields.setdefault("memory", memory)
            if kind is not None:
                fields.setdefault("kind", kind)
            if "memory" not in fields:
                raise LineRejected("missing memory (give it on the line or with --memory)")
            drafts.append((number, make_observation(**fields)))
        except (LineRejected, InvalidObservation) as error:
            rejections.append((number, f"{display}:{number}: {error}"))
    return drafts, rejections


def normalized(text: str) -> str:
    """The words of ``text``, case-folded, accents and punctuation aside, single-spaced."""
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    letters = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return " ".join(re.findall(r"\w+", letters))


def shares_words(new_lexemes: set[str], old_lexemes: set[str]) -> bool:
    """Whether the old statement holds at least ``CLOSE_WORD_SHARE`` of the new one's lexemes."""
    return bool(new_lexemes) and len(new_lexemes & old_lexemes) >= CLOSE_WORD_SHARE * len(
        new_lexemes
    )


def is_close(
    cosine: float | None,
    new_lexemes: set[str],
    old_lexemes: set[str],
    *,
    cut_off: float = CLOSE_COSINE,
) -> bool:
    """Vectors at least ``cut_off`` alike (the profile's ``close``), or the words shared."""
    return (cosine is not None and cosine >= cut_off) or shares_words(new_lexemes, old_lexemes)


def is_near_duplicate(
    new_text: str,
    old_text: str,
    cosine: float | None = None,
    *,
    cut_off: float = NEAR_DUPLICATE_COSINE,
) -> bool:
    """The same words (``normalized``), or vectors at least ``cut_off`` alike (the profile's
    ``duplicate``)."""
    if normalized(new_text) == normalized(old_text):
        return True
    return cosine is not None and cosine >= cut_off


# How a statement channel merges its vector list (cosines) and word list (BM25): "rrf", reciprocal
# rank at k 60, or "combsum", min-max normalized scores summed as fusion merges the channels
# (benchmarks/README.md: chosen leave-one-out on LoCoMo).
STATEMENT_MERGE = "combsum"


def merged_statements(
    lists: Mapping[str, Sequence[tuple[int, float]]], method: str | None = None
) -> dict[int, float]:
    """Statement id -> its score in a statement channel: its ``lists`` (name -> (id, score) best
    first: "vector", "keyword") merged with equal weights by ``method`` (default
    ``STATEMENT_MERGE``)."""
    method = STATEMENT_MERGE if method is None else method
    ranked = {name: [i for i, _ in hits] for name, hits in lists.items()}
    weights = {name: 1.0 for name in lists}
    if method == "rrf":
        return fusion.reciprocal_rank_fusion(ranked, weights=weights)
    if method == "combsum":
        return fusion.combsum(
            ranked, {name: [s for _, s in hits] for name, hits in lists.items()}, weights
        )
    raise ValueError(f"unknown statement merge {method!r} (expected rrf or combsum)")


def ranked_with_sources(
    ranked: list[str], cited_chunks: dict[str, tuple[str, ...]], limit: int
) -> list[str]:
    """A statement channel's ranking with each statement that cites chunks replaced by those
    chunks (in the order it cites them; a chunk already listed keeps its earlier place), and each
    statement that cites none kept as itself; at most ``limit`` keys.

    A statement is one short sentence; the passage it was drawn from holds the words the question
    is about and what surrounds them. Ranking the cited passages lets a statement that matches the
    question lift its source into the results without adding a result of its own, so the results
    hold the same number of passages (and about as many characters) with statements as without.
    """
    out: dict[str, None] = {}
    for key in ranked:
        for source in cited_chunks.get(key) or (key,):
            out.setdefault(source, None)
        if len(out) >= limit:
            break
    return list(out)[:limit]


def join_chunk_channel(
    chunks: Sequence[tuple[str, float]], statements: Sequence[tuple[str, float]]
) -> list[tuple[str, float]]:
    """A chunk channel's ``(key, score)`` list (best first) with statements placed among the
    chunks by the same measure (their cosine to the query, or their BM25 score on the chunks'
    statistics): each statement that scores at least the list's worst chunk goes before the
    first chunk it beats (after those it ties); every statement when the channel found no chunk.
    When the chunks all score alike, their places stand in for their scores
    (``fusion.normalized_scores``), and a statement joins only above them.

    A statement that cites no passage is a result of its own, and its own channel's score is
    normalized among the memory's few statements: the best of three gets the channel's whole
    weight however poorly it matches, so that channel weighs little (``fusion.CHANNEL_WEIGHTS``),
    and alone it could never reach a chunk that vector and keyword both found. Scored here
    against the chunks, "Mara's running coach is Inês" ranks where its match to "who is my
    running coach?" puts it, and a statement that matches worse than every chunk the channel kept
    is left out, so the chunks keep their order, and no chunk's normalized score grows: it stays,
    or shrinks when a statement beats the best of them. "Cites no passage" here means none that
    the search may show: no chunk of this memory within the policy's kinds and time window.
    """
    scores = [score for _, score in chunks]
    floor = min(scores, default=None)
    alike = bool(scores) and floor == max(scores)

    def joins(score: float) -> bool:
        return floor is None or score > floor or (score == floor and not alike)

    joining = sorted(
        ((key, score) for key, score in statements if joins(score)),
        key=lambda hit: (-hit[1], hit[0]),
    )
    out: list[tuple[str, float]] = []
    i = 0
    for key, score in chunks:
        while i < len(joining) and joining[i][1] > score:
            out.append(joining[i])
            i += 1
        out.append((key, score))
    out.extend(joining[i:])
    return out
