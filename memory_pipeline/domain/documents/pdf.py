"""PDF files as documents: the text layer read with pypdf, headings told apart by their font size.

The size most text is set in is the body size; a short line set clearly larger is a heading
(larger sizes, lower levels); a vertical gap wider than a line starts a paragraph. Refused with a
plain reason: a file that needs a password, a damaged or non-PDF file, and one with no text layer
(a scan: run OCR first).
"""

from __future__ import annotations

import datetime as dt
import io
import logging
from collections import Counter
from dataclasses import dataclass

import pypdf
from pypdf.errors import PyPdfError

from memory_pipeline.domain.documents.document import Block, Budget, Document, DocumentRejected
from memory_pipeline.domain.documents.sanitize import one_line

# pypdf logs what it repairs in a damaged file; without a configured handler Python would print
# each warning to stderr, between the command's own located messages.
logging.getLogger("pypdf").addHandler(logging.NullHandler())

MAX_PAGES = 5000
HEADING_RATIO = 1.15  # a line at least this much larger than the body size may be a heading
HEADING_MAX_CHARS = 200
PARAGRAPH_GAP = 1.6  # a vertical step this many times the font size starts a new paragraph


@dataclass
class _Line:
    y: float
    size: float
    text: str


def read_pdf(data: bytes, budget: Budget) -> Document:
    try:
        reader = pypdf.PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            try:
                opened = reader.decrypt("")
            except (
                PyPdfError,
                NotImplementedError,
            ) as error:  # e.g. AES without the crypto library
                raise DocumentRejected(
                    f"encrypted PDF that cannot be opened here ({error})"
                ) from None
            if not opened:
                raise DocumentRejected("encrypted PDF: a password is needed to read it")
        pages = len(reader.pages)
    except DocumentRejected:
        raise
    except Exception as error:  # pypdf raises many kinds on damaged input
        raise DocumentRejected(f"not a readable PDF ({_describe(error)})") from None
    if pages > MAX_PAGES:
        raise DocumentRejected(f"{pages:,} pages (at most {MAX_PAGES:,})")

    page_lines: list[list[_Line]] = []
    for number in range(pages):
        where = f" (page {number + 1} of {pages})"
        budget.check_time(where)
        try:
            lines = _page_lines(reader.pages[number])
        except Exception as error:
            raise DocumentRejected(
                f"damaged page {number + 1} of {pages} ({_describe(error)})"
            ) from None
        for line in lines:
            budget.spend(line.text, where=where)
        page_lines.append(lines)
    if not any(page_lines):
        raise DocumentRejected(
            f"no text layer in {pages} page(s): a scanned or image-only PDF; run OCR on it first"
        )

    blocks = _blocks(page_lines)
    info = _info(reader)
    title = one_line(str(info.get("title") or "")) or next(
        (b.text for b in blocks if b.level), None
    )
    return Document(title=title, occurred_at=info.get("created"), blocks=blocks)


def _describe(error: Exception) -> str:
    text = str(error).strip()
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def _page_lines(page) -> list[_Line]:
    lines: list[_Line] = []

    def visit(text, cm, tm, font_dict, font_size):
        text = text.replace("\n", " ")
        if not text.strip():
            return
        size = abs(font_size * tm[3] * cm[3]) or abs(font_size) or 1.0
        y = tm[4] * cm[1] + tm[5] * cm[3] + cm[5]
        if lines and abs(lines[-1].y - y) < 0.5 * max(size, lines[-1].size):
            lines[-1].text += text
            lines[-1].size = max(lines[-1].size, size)
        else:
            lines.append(_Line(y, size, text))

    page.extract_text(visitor_text=visit)
    for line in lines:
        line.text = one_line(line.text)
    return [line for line in lines if line.text]


def _blocks(page_lines: list[list[_Line]]) -> list[Block]:
    sizes: Counter[float] = Counter()
    for lines in page_lines:
        for line in lines:
            sizes[round(line.size, 1)] += len(line.text)
    body = max(sizes.items(), key=lambda item: (item[1], -item[0]))[
        0
    ]  # a tie goes to the smaller size
    heading_sizes = sorted((s for s in sizes if s >= body * HEADING_RATIO), reverse=True)
    level_of = {s: min(6, i + 1) for i, s in enumerate(heading_sizes)}

    blocks: list[Block] = []
    current: list[str] = []
    current_level = 0

    def flush() -> None:
        if current:
            blocks.append(Block(current_level, _join(current)))
            current.clear()

    for lines in page_lines:
        previous: _Line | None = None  # a page break does not end a paragraph by itself
        for line in lines:
            size = round(line.size, 1)
            level = level_of.get(size, 0) if len(line.text) <= HEADING_MAX_CHARS else 0
            gap = previous is not None and (previous.y - line.y) > PARAGRAPH_GAP * max(
                line.size, previous.size
            )
            if level != current_level or gap or (level and previous is None):
                flush()
                current_level = level
            current.append(line.text)
            previous = line
    flush()
    return blocks


def _join(lines: list[str]) -> str:
    text = lines[0]
    for line in lines[1:]:
        if text.endswith("-") and len(text) > 1 and text[-2].isalpha() and line[:1].islower():
            text += line  # "well-" + "drained": the hyphen may be the word's own, so it stays
        else:
            text += " " + line
    return text


def _info(reader: pypdf.PdfReader) -> dict:
    try:
        meta = reader.metadata
    except Exception:  # a damaged Info dictionary costs the metadata, not the document
        return {}
    if meta is None:
        return {}
    out: dict = {}
    try:
        out["title"] = meta.title
    except Exception:
        pass
    try:
        created = meta.creation_date
    except Exception:
        created = None
    if isinstance(created, dt.datetime):
        out["created"] = created.replace(tzinfo=dt.UTC) if created.tzinfo is None else created
    return out
