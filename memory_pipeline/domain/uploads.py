"""Documents sent as bytes (the HTTP API, MCP, ``Memory.add``) rather than read from a file.

An upload becomes an episode by exactly the rule ``ingest FILE`` uses
(``source_episodes.episode_from_document``): one ``doc`` episode, sanitized, title and date from the
document's metadata, the same limits and the same reasons. What a file has and an upload lacks
is supplied here: the format comes from the file name's suffix or the content type, and the file
time (the date of last resort) from ``modifiedAt`` or the moment of the upload.

In a list of episodes a document is an object ``{"memory", "kind"?, "document": {"name",
"content" (base64), "contentType"?, "modifiedAt"?}}``.
"""

from __future__ import annotations

import base64
import binascii
import os
from datetime import UTC, datetime
from typing import Any

from memory_pipeline.domain.documents import DOCUMENT_SUFFIXES, MAX_DOCUMENT_BYTES, DocumentRejected
from memory_pipeline.domain.episodes import EpisodeDraft, InvalidEpisode, parse_timestamp
from memory_pipeline.domain.jsonl import LineRejected, given, json_type, reject_unknown_fields
from memory_pipeline.domain.source_episodes import episode_from_document

CONTENT_TYPES = {
    "text/html": ".html",
    "application/xhtml+xml": ".html",
    "application/pdf": ".pdf",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": ".docx",
}
ITEM_FIELDS = ("memory", "kind", "document")
DOCUMENT_FIELDS = ("name", "content", "contentType", "modifiedAt")


def document_suffix(name: str, content_type: str | None) -> str:
    """The reader to use (".html", ".pdf", ".docx"), from the name's suffix, else the content
    type; DocumentRejected when neither names a supported format or the two disagree."""
    suffix = os.path.splitext(name)[1].lower()
    declared = None
    if content_type:
        media = content_type.split(";", 1)[0].strip().lower()
        declared = CONTENT_TYPES.get(media)
        if declared is None and media != "application/octet-stream":
            raise DocumentRejected(
                f"unsupported content type {media!r} (expected one of {', '.join(CONTENT_TYPES)})"
            )
    if suffix in DOCUMENT_SUFFIXES:
        if declared is not None and declared != (".html" if suffix == ".htm" else suffix):
            raise DocumentRejected(f"the name says {suffix} but the content type says {declared}")
        return suffix
    if declared is None:
        raise DocumentRejected(
            f"cannot tell the format: name the file with one of {', '.join(DOCUMENT_SUFFIXES)} "
            "or give its content type"
        )
    return declared


def episode_from_upload(
    data: bytes,
    name: str,
    *,
    memory: str | None,
    kind: str | None = None,
    content_type: str | None = None,
    modified_at: Any = None,
    now: datetime | None = None,
) -> EpisodeDraft:
    """The episode of an uploaded document (as ``ingest FILE`` would make it), or DocumentRejected."""
    if memory is None:
        raise DocumentRejected("no memory: pass memory")
    if len(data) > MAX_DOCUMENT_BYTES:
        raise DocumentRejected(
            f"{len(data) / 2**20:,.0f} MiB is larger than the {MAX_DOCUMENT_BYTES // 2**20} MiB "
            "a document may be; split it or extract its text first"
        )
    suffix = document_suffix(name, content_type)
    now = now or datetime.now(UTC)
    try:
        fallback = now if modified_at is None else min(parse_timestamp(modified_at), now)
    except InvalidEpisode as error:
        raise DocumentRejected(f"modifiedAt: {error}") from None
    return episode_from_document(
        data,
        suffix,
        name or "document",
        source=name or "upload",
        file_key=name or None,
        memory=memory,
        kind=kind,
        modified_at=fallback,
    )


def episode_from_document_item(
    value: dict[str, Any], *, memory: str | None = None, kind: str | None = None
) -> EpisodeDraft:
    """A ``{"document": {...}}`` item of a list of episodes, or LineRejected ("NAME: reason")."""
    reject_unknown_fields(value, ITEM_FIELDS, " (a document item has memory, kind and document)")
    document = value["document"]
    if not isinstance(document, dict):
        raise LineRejected(f"document: expected an object, got {json_type(document)}")
    reject_unknown_fields(document, DOCUMENT_FIELDS, " in document")
    name, content = document.get("name"), document.get("content")
    if not isinstance(name, str) or not name.strip() or len(name) > 255:
        raise LineRejected("document.name: expected the file name (1 to 255 characters)")
    if not isinstance(content, str):
        raise LineRejected(
            f"{name}: document.content: expected base64 text, got {json_type(content)}"
        )
    # Checked before decoding: base64 is 4 characters for every 3 bytes.
    if len(content) // 4 * 3 > MAX_DOCUMENT_BYTES + 3:
        raise LineRejected(
            f"{name}: larger than the {MAX_DOCUMENT_BYTES // 2**20} MiB a document may be"
        )
    try:
        data = base64.b64decode(content, validate=True)
    except (binascii.Error, ValueError):
        raise LineRejected(f"{name}: document.content is not valid base64") from None
    content_type = document.get("contentType")
    if content_type is not None and not isinstance(content_type, str):
        raise LineRejected(
            f"{name}: document.contentType: expected text, got {json_type(content_type)}"
        )
    try:
        return episode_from_upload(
            data,
            name,
            memory=given(value, "memory", memory),
            kind=given(value, "kind", kind),
            content_type=content_type,
            modified_at=document.get("modifiedAt"),
        )
    except DocumentRejected as rejected:
        raise LineRejected(f"{name}: {rejected.reason}") from None
