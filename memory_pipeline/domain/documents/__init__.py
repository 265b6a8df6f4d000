"""HTML, PDF and DOCX files read into one document shape: a title, a date, headings and paragraphs.

Each format has its own module (``html``, ``pdf``, ``docx``) that turns the file's bytes into a
``Document`` or raises ``DocumentRejected`` with a plain reason. The parsers read only the bytes
they are given, never the network. The text is sanitized (``sanitize``) and becomes a
Markdown-like body, so chunking and heading anchors work as on notes. Size, time and text budgets
bound what a hostile file can cost.
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
