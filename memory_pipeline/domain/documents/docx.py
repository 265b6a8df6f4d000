"""Word (.docx) files as documents: paragraphs and tables in order, headings from paragraph styles.

A DOCX is a zip archive, so it is opened as one first: its declared member sizes are summed
before anything is unpacked, and an archive that would unpack to more than ``MAX_UNPACKED_BYTES``
(a zip bomb with a .docx name) is rejected. ``zipfile`` never inflates a member past its declared
size, so a bomb cannot hide behind a small declaration either. python-docx parses the XML with
entity resolution off (no billion laughs, no external entities).
"""

from __future__ import annotations

import datetime as dt
import io
import re
import zipfile

import docx as python_docx
from docx.opc.exceptions import PackageNotFoundError
from docx.table import Table

from memory_pipeline.domain.documents.document import Block, Budget, Document, DocumentRejected
from memory_pipeline.domain.documents.sanitize import one_line

MAX_UNPACKED_BYTES = 100 * 1024 * 1024
MAX_MEMBERS = 10_000
_HEADING_STYLE = re.compile(r"heading\s*([1-9])", re.IGNORECASE)


def read_docx(data: bytes, budget: Budget) -> Document:
    _check_archive(data)
    try:
        document = python_docx.Document(io.BytesIO(data))
    except (PackageNotFoundError, KeyError, ValueError, zipfile.BadZipFile) as error:
        raise DocumentRejected(f"not a readable Word document ({error})") from None
    except Exception as error:  # lxml's XMLSyntaxError and kin: a damaged part
        raise DocumentRejected(f"damaged Word document: {type(error).__name__}: {error}") from None

    blocks: list[Block] = []
    styled_title = None
    for item in document.iter_inner_content():
        budget.check_time()
        if isinstance(item, Table):
            for row in item.rows:
                cells: list[str] = []
                for cell in row.cells:
                    text = one_line(cell.text)
                    if text and (not cells or cells[-1] != text):  # merged cells repeat their text
                        cells.append(text)
                if cells:
                    blocks.append(Block(0, " | ".join(cells)))
                    budget.spend(blocks[-1].text)
            continue
        text = one_line(item.text)
        if not text:
            continue
        level = _level(item.style.name if item.style is not None else "")
        if level == 1 and styled_title is None:
            styled_title = text
        blocks.append(Block(level, text))
        budget.spend(text)

    props = document.core_properties
    title = (
        one_line(props.title or "")
        or styled_title
        or next((b.text for b in blocks if b.level), None)
    )
    metadata = {
        name: one_line(value)
        for name, value in (("author", props.author or ""), ("subject", props.subject or ""))
        if one_line(value)
    }
    return Document(
        title=title,
        occurred_at=_utc(props.created or props.modified),
        blocks=blocks,
        metadata=metadata,
    )


def _check_archive(data: bytes) -> None:
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile:
        raise DocumentRejected(
            "not a Word document (a .docx is a zip archive; this is not one)"
        ) from None
    members = archive.infolist()
    if len(members) > MAX_MEMBERS:
        raise DocumentRejected(
            f"the archive holds {len(members):,} files (at most {MAX_MEMBERS:,})"
        )
    unpacked = sum(member.file_size for member in members)
    if unpacked > MAX_UNPACKED_BYTES:
        raise DocumentRejected(
            f"unpacks to {unpacked / 2**20:,.0f} MiB from {len(data) / 2**20:,.1f} MiB "
            f"(at most {MAX_UNPACKED_BYTES // 2**20} MiB): a zip bomb, not a document"
        )
    if "word/document.xml" not in {member.filename for member in members}:
        raise DocumentRejected("not a Word document (no word/document.xml in the archive)")


def _level(style: str) -> int:
    """Title -> 1, Heading N -> N + 1 (so the title stays above every section), else 0."""
    if style.strip().lower() == "title":
        return 1
    match = _HEADING_STYLE.fullmatch(style.strip())
    return min(6, int(match.group(1)) + 1) if match else 0


def _utc(value: dt.datetime | None) -> dt.datetime | None:
    # python-docx returns naive datetimes for the W3CDTF "Z" times Word writes: they are UTC.
    if value is None:
        return None
    return value.replace(tzinfo=dt.UTC) if value.tzinfo is None else value.astimezone(dt.UTC)
