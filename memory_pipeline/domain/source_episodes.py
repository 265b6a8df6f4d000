"""One episode draft from a JSONL-shaped object or from a document's bytes: the rule by which
every way in (files, the Python API, HTTP, MCP) validates what it is given."""

from __future__ import annotations

import os
from datetime import datetime

from memory_pipeline.domain.documents import Block, DocumentRejected, read_document
from memory_pipeline.domain.documents.sanitize import one_line
from memory_pipeline.domain.episodes import (
    MAX_TITLE_CHARS,
    EpisodeDraft,
    InvalidEpisode,
    make_episode,
)
from memory_pipeline.domain.jsonl import LineRejected, given, json_type, reject_unknown_fields

DOCUMENT_KIND = "doc"

JSONL_REQUIRED_FIELDS = ("memory", "kind", "title", "occurred_at", "body")

JSONL_OPTIONAL_FIELDS = ("salience", "source", "metadata", "id")

# Unknown fields are rejected rather than kept: a typo ("titel", "occured_at") must not be stored
# silently as metadata while the real field goes missing or falls back to a default.
_JSONL_FIELDS = JSONL_REQUIRED_FIELDS + JSONL_OPTIONAL_FIELDS


def title_from_name(name: str) -> str:
    """A file's name as a title: without its extension, and without what a reader cannot see
    (bidirectional overrides and isolates that make ``txt.exe`` read as ``exe.txt``, zero-width
    and control characters: ``sanitize.one_line``). The whole name when that leaves nothing."""
    return one_line(os.path.splitext(name)[0]) or one_line(name) or "untitled"


def episode_from_document(
    data: bytes,
    suffix: str,
    name: str,
    *,
    source: str,
    memory: str | None,
    kind: str | None = None,
    modified_at: datetime,
    file_key: str | None = None,
) -> EpisodeDraft:
    """One ``doc`` episode from the bytes of an HTML, PDF or DOCX file called ``name``, or
    ``DocumentRejected`` with the reason. The title is the document's own (metadata, else its
    first heading), else the file name; the time is the document's own, else ``modified_at``.
    The body starts with the title as a ``#`` heading unless the document opens with a heading
    of its own, so every chunk's anchor (``domain.anchors``) names the document it is from."""
    if memory is None:
        raise DocumentRejected("no memory: pass --memory")
    document = read_document(data, suffix)
    title = document.title or title_from_name(name)
    if len(title) > MAX_TITLE_CHARS:
        title = title[: MAX_TITLE_CHARS - 1] + "…"
    if not document.blocks[0].level:
        document.blocks.insert(0, Block(1, title))
    try:
        return make_episode(
            memory=memory,
            kind=kind or DOCUMENT_KIND,
            title=title,
            occurred_at=document.occurred_at or modified_at,
            body=document.body,
            source=source,
            metadata={"format": suffix.lower().lstrip("."), **document.metadata},
            file_key=file_key,
        )
    except InvalidEpisode as error:
        raise DocumentRejected(str(error)) from None


def episode_from_object(
    value: object,
    location: str,
    *,
    memory: str | None = None,
    kind: str | None = None,
    memory_hint: str = "",
) -> EpisodeDraft:
    """One JSONL-shaped object (a parsed line, or an item the Python/HTTP API was given) as a
    draft, or ``LineRejected`` with the reason; ``memory``/``kind`` fill fields it leaves out and
    ``location`` is the default ``source``. Every way in validates episodes by this one rule."""
    if not isinstance(value, dict):
        raise LineRejected(f"expected a JSON object, got {json_type(value)}")
    reject_unknown_fields(value, _JSONL_FIELDS)
    # null means "not given" (``given``), so an exported "salience": null gets the default.
    fields = {name: item for name, item in value.items() if item is not None}
    for name, default in (("memory", memory), ("kind", kind)):
        if given(value, name, default) is not None:
            fields[name] = given(value, name, default)
    missing = [name for name in JSONL_REQUIRED_FIELDS if name not in fields]
    if missing:
        hint = memory_hint if "memory" in missing else ""
        raise LineRejected(_plural("missing field", missing) + hint)
    try:
        return make_episode(
            memory=fields["memory"],
            kind=fields["kind"],
            title=fields["title"],
            occurred_at=fields["occurred_at"],
            body=fields["body"],
            salience=fields.get("salience"),
            source=fields.get("source", location),
            metadata=fields.get("metadata"),
            external_id=fields.get("id"),
        )
    except InvalidEpisode as error:
        raise LineRejected(str(error)) from None


def _plural(what: str, names: list[str]) -> str:
    quoted = ", ".join(f"'{name}'" for name in names)
    return f"{what}{'s' if len(names) > 1 else ''} {quoted}"
