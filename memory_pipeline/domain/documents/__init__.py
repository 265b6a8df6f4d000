"""HTML, PDF and DOCX files read into one document shape: a title, a date, headings and paragraphs.

Each format has its own small module (``html``, ``pdf``, ``docx``) that turns the file's bytes
into a ``Document`` or raises ``DocumentRejected`` with a plain reason (``document``: the shape
they share). Nothing here touches the
network: the parsers read only the bytes they are given (no external entities, no linked
stylesheets, images or fonts). The extracted text is sanitized (``sanitize``) before it becomes
the body, which is Markdown-like: ``#`` headings and paragraphs separated by blank lines, so the
chunker's paragraph rule and the heading anchors work on documents as they do on Markdown notes.

Limits keep a hostile file from costing more than a bounded time and memory: the file size is
checked before it is read, a DOCX's declared unpacked size before it is unpacked, and extraction
stops at a page, time and text budget; an HTML page is streamed (no tree kept) and stops at a
nesting depth and an element count. The memory a large document's reading freed is given back
to the system, refused or not.
"""

from __future__ import annotations

from memory_pipeline.domain.documents.document import (
    DOCUMENT_SUFFIXES,
    MAX_DOCUMENT_BYTES,
    MAX_SECONDS,
    MAX_TEXT_CHARS,
    RELEASE_AFTER_BYTES,
    Block,
    Budget,
    Document,
    DocumentRejected,
    release_memory,
)

__all__ = [
    "DOCUMENT_SUFFIXES",
    "MAX_DOCUMENT_BYTES",
    "MAX_SECONDS",
    "MAX_TEXT_CHARS",
    "Block",
    "Budget",
    "Document",
    "DocumentRejected",
    "read_document",
]


def read_document(data: bytes, suffix: str, *, budget: Budget | None = None) -> Document:
    """The document in ``data`` (the bytes of a file ending in ``suffix``), or DocumentRejected."""
    from memory_pipeline.domain.documents import docx, html, pdf  # each format's parser, on use

    readers = {
        ".html": html.read_html,
        ".htm": html.read_html,
        ".pdf": pdf.read_pdf,
        ".docx": docx.read_docx,
    }
    rejected: str | None = None
    try:
        document = readers[suffix.lower()](data, budget or Budget())
    except DocumentRejected as exc:
        rejected = exc.reason  # the reader's frames (its parser, its text) end with this block
    if len(data) >= RELEASE_AFTER_BYTES:
        release_memory()
    if rejected is not None:
        raise DocumentRejected(rejected)
    if not document.blocks:
        raise DocumentRejected("no text found in the document")
    return document
