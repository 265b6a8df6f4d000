"""What ``Memory.add`` and ``add_document`` store: the report, and the episodes read from the
items given (each rejected one located, never raised)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from memory_pipeline.domain.documents import DocumentRejected
from memory_pipeline.domain.jsonl import LineRejected
from memory_pipeline.domain.sources import Rejection, episode_from_object
from memory_pipeline.domain.uploads import episode_from_document_item, episode_from_upload
from memory_pipeline.errors import InputError
from memory_pipeline.ingest import stored_json


@dataclass
class AddReport:
    """What ``add`` stored: new episode ids, bodies already stored, and located rejections."""

    ingest_day: dt.date
    inserted_ids: list[int] = field(default_factory=list)
    duplicates: int = 0
    rejections: list[Rejection] = field(default_factory=list)
    revised: int = 0  # of the new episodes, new revisions of a stored source (their "id")
    restored: int = 0  # earlier revisions whose body came back, current again

    @property
    def inserted(self) -> int:
        return len(self.inserted_ids)

    def to_json(self) -> dict:
        return {"ingestDay": self.ingest_day.isoformat(), **stored_json(self)}


def checked(validate: Callable[[Any], str], value: Any, what: str) -> str:
    """``validate(value)``, its ValueError an InputError naming ``what``."""
    try:
        return validate(value)
    except ValueError as exc:
        raise InputError(f"{what} {value!r}: {exc}") from None


def drafts_of(items: list, report: AddReport, *, memory: str | None, kind: str | None) -> list:
    """The episodes of ``items`` (JSONL-shaped objects or document items); each rejected item
    goes to ``report`` as ``episodes[i]`` with its reason."""
    drafts = []
    for i, item in enumerate(items):
        location = f"episodes[{i}]"
        try:
            if isinstance(item, Mapping) and "document" in item:
                drafts.append(episode_from_document_item(dict(item), memory=memory, kind=kind))
            else:
                drafts.append(
                    episode_from_object(
                        item,
                        location,
                        memory=memory,
                        kind=kind,
                        memory_hint=" (or pass memory)",
                    )
                )
        except LineRejected as rejected:
            report.rejections.append(Rejection(location, rejected.reason))
    return drafts


def upload_drafts(
    data: bytes,
    name: str,
    report: AddReport,
    *,
    memory: str,
    kind: str | None,
    content_type: str | None,
    modified_at: Any,
) -> list:
    """The one episode of a document given as bytes, or none and its rejection in ``report``."""
    try:
        return [
            episode_from_upload(
                data,
                name,
                memory=memory,
                kind=kind,
                content_type=content_type,
                modified_at=modified_at,
            )
        ]
    except DocumentRejected as rejected:
        report.rejections.append(Rejection(name or "document", rejected.reason))
        return []
