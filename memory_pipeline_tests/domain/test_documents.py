"""HTML, PDF and DOCX files read into documents, and sanitizing: real files generated here."""

from __future__ import annotations

import datetime as dt
import random
import time

import pytest

from memory_pipeline.domain.chunking import chunk_body
from memory_pipeline.domain.documents import Budget, DocumentRejected, read_document
from memory_pipeline.domain.documents.sanitize import sanitize_text
from memory_pipeline_tests.support.documents import (
    encrypted_pdf_bytes,
    html_page,
    pdf_bytes,
    write_docx,
    zip_bomb_docx_bytes,
)

BODY = 11.0


def test_sanitize_removes_what_a_reader_cannot_see():
    tricky = (
        "pass\u200bword \u202eevil\u202c soft\u00adhyphen nul\x00 bell\x07 tag\U000e0041\U000e0042 "
        "bom\ufeff lone\ud800 non\uffff c1\x85next\r\nline\x0cpage cafe\u0301"
    )
    clean = sanitize_text(tricky)
    assert clean == "password evil softhyphen nul bell tag bom lone non c1\nnext\nline\npage café"
    assert sanitize_text("tab\tand\nnewline stay") == "tab\tand\nnewline stay"


def test_pdf_headings_by_font_size_paragraphs_by_gaps_title_and_date_from_metadata():
    data = pdf_bytes(
        [
            [
                (20, "Garden Handbook"),
                (BODY, ""),
                (16, "Soil"),
                (BODY, "Loam holds water and is well-"),
                (BODY, "drained in spring."),
                (BODY, ""),
                (BODY, "A second paragraph."),
            ],
            [(13, "Drainage"), (BODY, "Gravel beds under raised planters.")],
        ],
        title="The Garden Handbook",
        created="D:20240501100000Z",
    )
    document = read_document(data, ".pdf")
    assert document.title == "The Garden Handbook"
    assert document.occurred_at == dt.datetime(2024, 5, 1, 10, tzinfo=dt.UTC)
    assert document.body == (
        "# Garden Handbook\n\n## Soil\n\nLoam holds water and is well-drained in spring.\n\n"
        "A second paragraph.\n\n### Drainage\n\nGravel beds under raised planters.\n"
    )


def test_pdf_without_metadata_takes_its_first_heading_as_title():
    document = read_document(pdf_bytes([[(18, "Minutes"), (BODY, "We met on Monday.")]]), ".pdf")
    assert document.title == "Minutes" and document.occurred_at is None


@pytest.mark.parametrize(
    "make, reason",
    [
        (
            lambda: encrypted_pdf_bytes(pdf_bytes([[(BODY, "secret text")]])),
            "encrypted PDF: a password is needed",
        ),
        (lambda: pdf_bytes([[], []], image_only=True), "no text layer in 2 page(s)"),
        (lambda: b"%PDF-1.7\n1 0 obj << /Type /Catalog >> garbage", "not a readable PDF"),
        (lambda: pdf_bytes([[(BODY, "half a file")]])[:300], "not a readable PDF"),
        (lambda: b"<html>not a pdf</html>", "not a readable PDF"),
    ],
)
def test_bad_pdfs_are_rejected_with_a_plain_reason(make, reason):
    with pytest.raises(DocumentRejected) as info:
        read_document(make(), ".pdf")
    assert reason in info.value.reason


def test_a_pdf_over_the_text_budget_is_rejected_not_truncated():
    data = pdf_bytes([[(BODY, "word " * 30)] * 10] * 3)
    with pytest.raises(DocumentRejected, match="more than 1,000 characters of text .page 1 of 3."):
        read_document(data, ".pdf", budget=Budget(chars=1000))


def test_docx_title_headings_paragraphs_and_tables_in_order(tmp_path):
    created = dt.datetime(2025, 3, 4, 5, 6, 7, tzinfo=dt.UTC)
    path = write_docx(
        tmp_path / "notes.docx",
        title="Field Notes",
        created=created,
        sections=[
            (1, "Birds", ["Robins nest early.", "Wrens sing."]),
            (2, "Owls", ["The barn owl hunts."]),
        ],
        table=[["Species", "Count"], ["Owl", "3"]],
    )
    document = read_document(path.read_bytes(), ".docx")
    assert document.title == "Field Notes" and document.occurred_at == created
    assert document.body == (
        "# Field Notes\n\n## Birds\n\nRobins nest early.\n\nWrens sing.\n\n### Owls\n\nThe barn owl hunts.\n\n"
        "Species | Count\n\nOwl | 3\n"
    )


@pytest.mark.parametrize(
    "make, reason",
    [
        (lambda: zip_bomb_docx_bytes(), "a zip bomb, not a document"),
        (lambda: b"PK\x03\x04 truncated", "not a Word document"),
        (lambda: b"just text", "not a Word document"),
    ],
)
def test_bad_docx_files_are_rejected_quickly(make, reason):
    data = make()
    started = time.monotonic()
    with pytest.raises(DocumentRejected) as info:
        read_document(data, ".docx")
    assert reason in info.value.reason and time.monotonic() - started < 2


def test_html_keeps_the_article_and_drops_scripts_styles_navigation_and_chrome():
    page = html_page(
        title="Tide Tables",
        date="2023-02-03T04:05:06Z",
        sections=[
            (2, "Spring tides", ["High water at noon.", "Low water at six."]),
            (3, "Neap tides", ["The smallest range."]),
        ],
    )
    document = read_document(page.encode(), ".html")
    assert document.title == "Tide Tables"
    assert document.occurred_at == dt.datetime(2023, 2, 3, 4, 5, 6, tzinfo=dt.UTC)
    assert document.body == (
        "# Tide Tables\n\n## Spring tides\n\nHigh water at noon.\n\nLow water at six.\n\n"
        "### Neap tides\n\nThe smallest range.\n"
    )
    for dropped in (
        "SCRIPT TEXT",
        "late script",
        "font-family",
        "Archive of every post",
        "banner",
        "Related",
        "Copyright",
    ):
        assert dropped not in document.body


def test_html_text_is_sanitized_and_nesting_depth_costs_no_stack():
    deep = "<div>" * 5000 + "deep\u200b text" + "</div>" * 5000
    document = read_document(
        f"<html><body><p>zero\u200bwidth \u202eflip</p>{deep}</body></html>".encode(), ".html"
    )
    assert "\u200b" not in document.body and "\u202e" not in document.body
    assert "zerowidth flip" in document.body and "deep text" in document.body


def test_an_html_app_shell_that_is_mostly_script_is_rejected():
    shell = (
        "<html><head><script>" + "var a = 1;" * 20000 + "</script></head>"
        "<body><noscript>You need to enable JavaScript to run this app.</noscript><div id=root></div>"
        "<p>Loading…</p></body></html>"
    )
    with pytest.raises(
        DocumentRejected, match="the page is \\d+% script and style with 8 characters"
    ):
        read_document(shell.encode(), ".html")


@pytest.mark.parametrize(
    "data", [b"\x00" * 1024, random.Random(1).randbytes(2048)], ids=["nul-bytes", "random-bytes"]
)
def test_binary_data_named_html_is_rejected_not_stored_as_replacement_characters(data):
    with pytest.raises(
        DocumentRejected, match="not HTML text: \\d+% of its characters cannot be decoded"
    ):
        read_document(data, ".html")
    # A page in a legacy or UTF-16 encoding is still text.
    assert "café" in read_document("<p>Olá, café</p>".encode("utf-16"), ".html").body


def test_document_bodies_chunk_like_any_body():
    page = html_page(
        title="Long",
        sections=[
            (2, f"Part {i}", [f"sentence number {j}. " * 12 for j in range(6)]) for i in range(8)
        ],
    )
    body = read_document(page.encode(), ".html").body
    chunks = chunk_body(body)
    assert len(chunks) > 3 and "".join(c.text for c in chunks) == body


def test_ascii_html_full_of_invalid_character_references_is_text_not_binary():
    # The parser turns each invalid reference into U+FFFD; the bytes are plain ASCII all along.
    refs = "&#0; &#xD800; &#99999999; &#1114112; &#xFFFE; " * 400
    page = f"<html><head><title>Refs</title></head><body><p>{refs}</p><p>a real sentence</p></body></html>"
    document = read_document(page.encode("ascii"), ".html")
    assert document.title == "Refs" and "a real sentence" in document.body
    # Binary data under the name is still refused, judged on its bytes.
    with pytest.raises(DocumentRejected, match="not HTML text: \\d+% of its characters"):
        read_document(b"<p>" + random.Random(3).randbytes(4096) + b"</p>", ".html")


@pytest.mark.parametrize(
    "prolog",
    [
        '<!DOCTYPE html [\n<!ENTITY x "boom">\n<!ELEMENT p ANY>\n]>\n',
        '<?xml version="1.0"?>\n<!-- a note -->\n<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.0//EN" '
        '"x.dtd" [\n<!ENTITY a "tricky ]> inside">\n<!-- ]> in a comment -->\n]  >\n',
        '<!doctype html [ <!ATTLIST p x CDATA "1"> ]>',
    ],
    ids=["entities", "xhtml-with-quotes-and-comments", "lowercase-one-line"],
)
def test_an_internal_dtd_leaves_nothing_of_itself_in_the_text(prolog):
    page = (
        prolog + "<html><head><title>Doc</title></head><body><p>Hello &x; world</p></body></html>"
    )
    document = read_document(page.encode(), ".html")
    assert document.title == "Doc"
    assert "]>" not in document.body and "ENTITY" not in document.body
    assert document.body.endswith("Hello &x; world\n")  # declared entities are not expanded
