"""HTML pages as documents: the readable text under its headings; scripts, styles and navigation dropped.

Streamed through lxml's HTML parser (the encoding chosen as BeautifulSoup chooses it), which
reads only the given bytes (it never fetches a linked resource) and here builds no tree: the
text is kept as it streams by, so memory stays bounded by the text, and nesting depth and the
element count are limits of their own. Whatever a reader of the page does not read as its content is
dropped before any text is taken: scripts, styles, templates, embedded frames and objects, forms,
and the page's chrome (``nav``, ``header``, ``footer``, ``aside`` and elements marked hidden or
with a navigation role). A page that is almost all script with a line of text (an app shell that
says "enable JavaScript") is rejected rather than stored as that line.
"""

from __future__ import annotations

import datetime as dt
import re
import sys

from bs4.dammit import EncodingDetector
from lxml import etree

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
# The parse streams (no tree is kept), so what it may cost is bounded by elements and nesting:
# a page of millions of nested elements is refused early instead of costing a gigabyte.
MAX_DEPTH = 10_000
MAX_ELEMENTS = 1_000_000
FEED_BYTES = 64 * 1024


def read_html(data: bytes, budget: Budget) -> Document:
    data = _without_internal_subset(data)
    detector = EncodingDetector(data, is_html=True)  # the encodings BeautifulSoup would try
    for encoding in detector.encodings:
        try:
            page, encoding_used = _parse(detector.markup, encoding, budget), encoding
            break
        except (UnicodeDecodeError, LookupError, etree.ParserError):
            continue
    else:
        raise DocumentRejected("not HTML text: no encoding reads it")
    blocks = page.result()
    text_chars = sum(len(b.text) for b in blocks)
    code_bytes = page.code_bytes
    if len(data) and code_bytes >= SCRIPT_SHARE * len(data) and text_chars < SCRIPT_SHELL_TEXT:
        raise DocumentRejected(
            f"the page is {code_bytes / len(data):.0%} script and style with {text_chars} characters of "
            "text (an app that renders in the browser); save the rendered page instead"
        )
    share = _not_text_share(data, encoding_used)
    if share >= UNDECODABLE_SHARE:
        raise DocumentRejected(
            f"not HTML text: {share:.0%} of its characters cannot be decoded (binary data?)"
        )
    title = page.title()
    if title is None:
        title = next((b.text for b in blocks if b.level), None)
    return Document(title=title, occurred_at=page.date(), blocks=blocks)


def _parse(data: bytes, encoding: str | None, budget: Budget) -> _Page:
    """``data`` streamed through lxml's HTML parser into a ``_Page`` (no tree is built), a
    slice at a time so that time, depth and element limits stop it early, located by line.
    A refused page's text is let go before the refusal travels on (lxml keeps the exception
    raised inside its callbacks, and with it the page, until the parser itself is collected)."""
    page = _Page(budget)
    parser = etree.HTMLParser(
        target=page, recover=True, encoding=encoding, remove_comments=True, remove_pis=True
    )
    fed, refusal = 0, None
    try:
        while refusal is None:
            piece = data[fed : fed + FEED_BYTES]
            fed += len(piece)
            try:
                parser.feed(piece)
            except _Refused as refused:
                line = data.count(b"\n", 0, fed) + 1
                refusal = f"{refused.reason} (by line {line:,}); split the document"
            budget.check_time()
            if not piece:
                parser.close()
                return page
    finally:
        if refusal is not None or sys.exc_info()[0] is not None:
            page.drop()
    raise DocumentRejected(refusal)


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


def _is_chrome(name: str, attrs: dict) -> bool:
    if name in _CHROME:
        return True
    return (
        "hidden" in attrs
        or str(attrs.get("aria-hidden", "")).lower() == "true"
        or str(attrs.get("role", "")).lower() in _CHROME_ROLES
    )


class _Refused(Exception):
    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class _Page:
    """lxml's parser target: headings and paragraphs of the first ``body`` in document order, the
    title, the date metadata and the bytes of script and style, kept as the parser streams by.
    Memory is the text kept plus one entry per open element (``MAX_DEPTH`` at most); code,
    chrome and their subtrees are skipped as they stream by."""

    def __init__(self, budget: Budget):
        self.budget = budget
        self.elements = 0
        self.open: list[int | None] = []  # per open element: its block level, None if no block
        self.skip_from: int | None = None  # depth of the code or chrome element being skipped
        self.in_code = 0  # open script/style elements: their text counts as code
        self.code_bytes = 0
        self.body_from: int | None = None  # depth of the first body while it is open
        self.body_seen = False
        self.words: list[str] = []
        self.blocks: list[Block] = []  # inside the first body
        self.loose: list[Block] = []  # outside any body (used when the page has none)
        self.title_text: list[str] | None = None  # strings of the first title, while open
        self.title_done = False
        self.titles: list[str] = []
        self.meta: dict[str, str] = {}

    def start(self, tag: str, attrib) -> None:
        name = tag if isinstance(tag, str) else str(tag)
        self.elements += 1
        if self.elements > MAX_ELEMENTS:
            raise _Refused(f"more than {MAX_ELEMENTS:,} elements")
        if len(self.open) >= MAX_DEPTH:
            raise _Refused(f"elements nested deeper than {MAX_DEPTH:,}")
        attrs = dict(attrib)
        if name in ("script", "style"):
            self.in_code += 1
            self.code_bytes += (
                2 * len(name) + 5 + sum(len(k) + len(v) + 4 for k, v in attrs.items())
            )
        elif name == "title" and not self.title_done and self.title_text is None:
            self.title_text = []
        elif name == "meta":
            key = str(attrs.get("property") or attrs.get("name") or "").lower()
            if attrs.get("content") and key not in self.meta:
                self.meta[key] = str(attrs["content"])
        level: int | None = None
        if self.skip_from is None and (name in _CODE or _is_chrome(name, attrs)):
            self.skip_from = len(self.open)
        elif self.skip_from is None:
            if name == "body" and not self.body_seen:
                self.flush()
                self.body_seen, self.body_from = True, len(self.open)
            heading = _HEADINGS.get(name)
            if heading is not None or name in _BLOCKS:
                self.flush()
                level = heading or 0
        self.open.append(level)

    def end(self, tag: str) -> None:
        name = tag if isinstance(tag, str) else str(tag)
        level = self.open.pop() if self.open else None
        depth = len(self.open)
        if name in ("script", "style") and self.in_code:
            self.in_code -= 1
        elif name == "title" and self.title_text is not None:
            self.titles.append(" ".join(self.title_text))
            self.title_text, self.title_done = None, True
        if self.skip_from is not None:
            if depth == self.skip_from:
                self.skip_from = None
            return
        if level is not None:
            self.flush(level)
        if depth == self.body_from:
            self.flush()
            self.body_from = None

    def data(self, text: str) -> None:
        if self.in_code:
            self.code_bytes += len(text)
        if self.title_text is not None:
            self.title_text.append(text)
        if self.skip_from is None and self.title_text is None:
            self.words.append(text)

    def flush(self, level: int = 0) -> None:
        text = one_line(" ".join(self.words))
        self.words.clear()
        if text:
            self.budget.spend(text)
            (self.blocks if self.body_from is not None else self.loose).append(Block(level, text))

    def close(self) -> None:
        self.flush()

    def drop(self) -> None:
        """Let go of everything kept: the page was refused."""
        self.words, self.blocks, self.loose, self.open = [], [], [], []

    def result(self) -> list[Block]:
        return self.blocks if self.body_seen else self.loose

    def title(self) -> str | None:
        for candidate in (self.titles[0] if self.titles else None, self.meta.get("og:title")):
            if candidate and one_line(candidate):
                return one_line(candidate)
        return None

    def date(self) -> dt.datetime | None:
        for name in _DATE_META:
            value = self.meta.get(name)
            if value:
                try:
                    return parse_timestamp(value.strip())
                except ValueError:
                    continue  # a page's own date is a hint; an unreadable one: the file time
        return None
