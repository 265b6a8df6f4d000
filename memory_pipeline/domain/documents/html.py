"""HTML pages as documents: the readable text under its headings; scripts, styles and navigation dropped.

Parsed with BeautifulSoup over lxml's HTML parser, which reads only the given bytes (it never
fetches a linked resource). Whatever a reader of the page does not read as its content is
dropped before any text is taken: scripts, styles, templates, embedded frames and objects, forms,
and the page's chrome (``nav``, ``header``, ``footer``, ``aside`` and elements marked hidden or
with a navigation role). A page that is almost all script with a line of text (an app shell that
says "enable JavaScript") is rejected rather than stored as that line.
"""

from __future__ import annotations

import datetime as dt
import re

from bs4 import BeautifulSoup, Comment, Doctype, NavigableString, ProcessingInstruction, Tag

from memory_pipeline.domain.documents.document import Block, Budget, Document, DocumentRejected
from memory_pipeline.domain.documents.sanitize import one_line
from memory_pipeline.domain.episodes import parse_timestamp

_CODE = (
    "script",
    "style",
    "noscript",
    "template",
    "iframe",
    "object",
    "embed",
    "svg",
    "canvas",
    "math",
)
_CHROME = ("nav", "header", "footer", "aside", "form", "button", "select", "dialog", "menu")
_CHROME_ROLES = {
    "navigation",
    "banner",
    "contentinfo",
    "complementary",
    "search",
    "menu",
    "menubar",
}
_HEADINGS = {f"h{n}": n for n in range(1, 7)}
_BLOCKS = {
    "p",
    "div",
    "section",
    "article",
    "main",
    "li",
    "ul",
    "ol",
    "dl",
    "dt",
    "dd",
    "table",
    "thead",
    "tbody",
    "tr",
    "td",
    "th",
    "blockquote",
    "pre",
    "figure",
    "figcaption",
    "caption",
    "address",
    "details",
    "summary",
    "hr",
    "br",
    "body",
    "center",
}
_DATE_META = (
    "article:published_time",
    "date",
    "dc.date",
    "dcterms.created",
    "dc.date.issued",
    "dcterms.date",
)
# The app-shell rule: at least this share of the page is script/style, and less readable text.
SCRIPT_SHARE = 0.9
SCRIPT_SHELL_TEXT = 500
# A page whose bytes are mostly not text in its own encoding (bytes it cannot decode, NULs and
# other control characters) is binary data under an .html name or type (a misnamed file, a
# corrupt upload), not a page to remember. Judged on the bytes, not the parsed text: the parser
# turns an invalid character reference (``&#0;``, ``&#xD800;``) into U+FFFD as well, and a page
# full of those is ASCII text.
UNDECODABLE_SHARE = 0.1
_NOT_TEXT = re.compile("[\udc80-\udcff\ufffd\x00-\x08\x0e-\x1f\x7f]")


def read_html(data: bytes, budget: Budget) -> Document:
    soup = BeautifulSoup(_without_internal_subset(data), "lxml")
    code_bytes = sum(len(str(tag)) for tag in soup.find_all(["script", "style"]))
    title = _title(soup)
    occurred = _date(soup)
    for tag in soup.find_all(_CODE):
        tag.decompose()
    for tag in soup.find_all(_is_chrome):
        if not tag.decomposed:
            tag.decompose()
    root = soup.body or soup
    blocks = _blocks(root, budget)
    text_chars = sum(len(b.text) for b in blocks)
    if len(data) and code_bytes >= SCRIPT_SHARE * len(data) and text_chars < SCRIPT_SHELL_TEXT:
        raise DocumentRejected(
            f"the page is {code_bytes / len(data):.0%} script and style with {text_chars} characters of "
            "text (an app that renders in the browser); save the rendered page instead"
        )
    share = _not_text_share(data, soup.original_encoding)
    if share >= UNDECODABLE_SHARE:
        raise DocumentRejected(
            f"not HTML text: {share:.0%} of its characters cannot be decoded (binary data?)"
        )
    if title is None:
        title = next((b.text for b in blocks if b.level), None)
    return Document(title=title, occurred_at=occurred, blocks=blocks)


# The start of a doctype with an internal subset (``<!DOCTYPE html [ <!ENTITY ...> ]>``), after an
# optional BOM, XML declaration, comments and whitespace. HTML has no internal subsets, so
# lxml's HTML parser ends the doctype at the first ``>`` inside it and the rest (``]>``, the
# declarations' tails) would be read as the page's text.
_SUBSET_START = re.compile(
    rb"(?:\xef\xbb\xbf)?(?:\s+|<\?[^>]*>|<!--.*?-->)*<!DOCTYPE\b[^\[>]*\[",
    re.IGNORECASE | re.DOTALL,
)


def _without_internal_subset(data: bytes) -> bytes:
    """``data`` with a leading doctype's internal subset left out (the doctype itself kept);
    quoted strings and comments inside the subset may hold ``]`` and ``>``. Unchanged when
    there is none or it never ends."""
    start = _SUBSET_START.match(data)
    if start is None:
        return data
    i, end = start.end(), len(data)
    while i < end:
        byte = data[i : i + 1]
        if byte in (b'"', b"'"):
            close = data.find(byte, i + 1)
        elif data.startswith(b"<!--", i):
            found = data.find(b"-->", i + 4)
            close = found + 2 if found >= 0 else -1
        elif byte == b"]":
            after = i + 1
            while after < end and data[after : after + 1].isspace():
                after += 1
            if data[after : after + 1] == b">":
                return data[: start.end() - 1] + b">" + data[after + 1 :]
            close = i
        else:
            close = i
        if close < 0:
            return data
        i = close + 1
    return data


def _not_text_share(data: bytes, encoding: str | None) -> float:
    """The share of ``data``'s characters, decoded as the parser decoded them, that are no text:
    undecodable bytes (kept apart as lone surrogates by ``surrogateescape``) and control
    characters other than whitespace."""
    try:
        decoded = data.decode(encoding or "utf-8", errors="surrogateescape")
    except (LookupError, UnicodeError):  # a codec without that handler: the parser's own view
        decoded = data.decode(encoding or "utf-8", errors="replace")
    if not decoded:
        return 0.0
    return sum(1 for _ in _NOT_TEXT.finditer(decoded)) / len(decoded)


def _is_chrome(tag: Tag) -> bool:
    if tag.name in _CHROME:
        return True
    attrs = tag.attrs or {}
    return (
        "hidden" in attrs
        or str(attrs.get("aria-hidden", "")).lower() == "true"
        or str(attrs.get("role", "")).lower() in _CHROME_ROLES
    )


def _title(soup: BeautifulSoup) -> str | None:
    for candidate in (
        soup.title.get_text(" ") if soup.title else None,
        _meta(soup, "og:title"),
    ):
        if candidate and one_line(candidate):
            return one_line(candidate)
    return None


def _meta(soup: BeautifulSoup, name: str) -> str | None:
    for tag in soup.find_all("meta"):
        key = str(tag.get("property") or tag.get("name") or "").lower()
        if key == name and tag.get("content"):
            return str(tag["content"])
    return None


def _date(soup: BeautifulSoup) -> dt.datetime | None:
    for name in _DATE_META:
        value = _meta(soup, name)
        if value:
            try:
                return parse_timestamp(value.strip())
            except ValueError:
                continue  # a page's own date is a hint; an unreadable one falls back to the file time
    return None


def _blocks(root: Tag, budget: Budget) -> list[Block]:
    """Headings and paragraphs in document order (iterative: nesting depth costs no stack)."""
    blocks: list[Block] = []
    words: list[str] = []

    def flush(level: int = 0) -> None:
        text = one_line(" ".join(words))
        words.clear()
        if text:
            budget.spend(text)
            blocks.append(Block(level, text))

    stack: list[object] = list(reversed(list(root.children)))
    while stack:
        node = stack.pop()
        if isinstance(node, _Close):
            flush(node.level)
            continue
        if isinstance(node, NavigableString):
            if not isinstance(node, (Comment, Doctype, ProcessingInstruction)):
                words.append(str(node))
            continue
        if not isinstance(node, Tag):
            continue
        level = _HEADINGS.get(node.name)
        if level is not None or node.name in _BLOCKS:
            flush()
            stack.append(_Close(level or 0))
        stack.extend(reversed(list(node.children)))
    flush()
    return blocks


class _Close:
    """A marker on the walk's stack: the block that opened here ends (flush it at ``level``)."""

    def __init__(self, level: int):
        self.level = level
