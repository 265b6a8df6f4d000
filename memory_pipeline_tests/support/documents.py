"""Real document files for tests: PDFs written object by object, DOCX with python-docx, HTML pages.

The PDF writer emits a plain PDF 1.4 file (a Helvetica text layer, or an image and no text), so
a test controls exactly what is on which page and at what size, the way a word processor's
export places it.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

Line = tuple[float, str]  # (font size, text); an empty text leaves a blank line


def _pdf_escape(text: str) -> bytes:
    raw = text.encode("latin-1")
    return raw.replace(b"\\", b"\\\\").replace(b"(", b"\\(").replace(b")", b"\\)")


def pdf_bytes(
    pages: list[list[Line]],
    *,
    title: str | None = None,
    created: str | None = None,
    image_only: bool = False,
) -> bytes:
    """A PDF whose pages hold these lines top-down (or, ``image_only``, one gray image each)."""
    objects: list[bytes] = []  # object n is objects[n - 1]

    def add(body: bytes) -> int:
        objects.append(body)
        return len(objects)

    font = add(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
    image = add(
        b"<< /Type /XObject /Subtype /Image /Width 2 /Height 2 /ColorSpace /DeviceGray "
        b"/BitsPerComponent 8 /Length 4 >>\nstream\n\x80\x40\x40\x80\nendstream"
    )
    pages_id = len(objects) + 1 + 2 * len(pages)  # the Pages object comes after every page
    kids = []
    for lines in pages:
        if image_only:
            content = b"q 400 0 0 500 100 200 cm /Im1 Do Q"
        else:
            parts, y = [], 760.0
            for size, text in lines:
                if text:
                    parts.append(
                        b"BT /F1 %.1f Tf 72 %.1f Td (" % (size, y) + _pdf_escape(text) + b") Tj ET"
                    )
                y -= size * 1.4
            content = b"\n".join(parts)
        stream = add(b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream")
        kids.append(
            add(
                b"<< /Type /Page /Parent %d 0 R /MediaBox [0 0 612 792] /Contents %d 0 R "
                b"/Resources << /Font << /F1 %d 0 R >> /XObject << /Im1 %d 0 R >> >> >>"
                % (pages_id, stream, font, image)
            )
        )
    assert (
        add(
            b"<< /Type /Pages /Kids ["
            + b" ".join(b"%d 0 R" % k for k in kids)
            + b"] /Count %d >>" % len(kids)
        )
        == pages_id
    )
    catalog = add(b"<< /Type /Catalog /Pages %d 0 R >>" % pages_id)
    info_items = b""
    if title is not None:
        info_items += b"/Title (" + _pdf_escape(title) + b") "
    if created is not None:
        info_items += b"/CreationDate (" + created.encode() + b") "
    info = add(b"<< " + info_items + b">>")

    out = io.BytesIO()
    out.write(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n" % number + body + b"\nendobj\n")
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1))
    for offset in offsets:
        out.write(b"%010d 00000 n \n" % offset)
    out.write(
        b"trailer\n<< /Size %d /Root %d 0 R /Info %d 0 R >>\nstartxref\n%d\n%%%%EOF\n"
        % (len(objects) + 1, catalog, info, xref)
    )
    return out.getvalue()


def encrypted_pdf_bytes(plain: bytes, password: str = "s3cret") -> bytes:
    import pypdf

    writer = pypdf.PdfWriter(clone_from=pypdf.PdfReader(io.BytesIO(plain)))
    writer.encrypt(user_password=password, owner_password=password + "-owner", algorithm="RC4-128")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def write_docx(
    path: Path,
    *,
    title: str | None,
    sections: list[tuple[int, str, list[str]]],
    created=None,
    table: list[list[str]] | None = None,
) -> Path:
    """A Word file: a Title paragraph, then (heading level, heading, paragraphs) sections."""
    import docx

    document = docx.Document()
    if title is not None:
        document.add_heading(title, level=0)  # the "Title" style
        document.core_properties.title = title
    if created is not None:
        document.core_properties.created = created
    for level, heading, paragraphs in sections:
        document.add_heading(heading, level=level)
        for paragraph in paragraphs:
            document.add_paragraph(paragraph)
    if table:
        grid = document.add_table(rows=len(table), cols=len(table[0]))
        for r, row in enumerate(table):
            for c, value in enumerate(row):
                grid.cell(r, c).text = value
    document.save(str(path))
    return path


def zip_bomb_docx_bytes(unpacked_mib: int = 128) -> bytes:
    """A zip named like a DOCX whose document.xml inflates to ``unpacked_mib`` MiB of spaces."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
        with archive.open("word/document.xml", "w", force_zip64=True) as member:
            block = b" " * (1024 * 1024)
            for _ in range(unpacked_mib):
                member.write(block)
    return out.getvalue()


def html_page(
    *,
    title: str,
    sections: list[tuple[int, str, list[str]]],
    date: str | None = None,
    script_kib: int = 2,
) -> str:
    """A page with head scripts and styles, navigation, a header and footer around its article."""
    meta = f'<meta property="article:published_time" content="{date}">' if date else ""
    script = "var tracking = '" + "x" * (script_kib * 1024) + "'; document.title = 'SCRIPT TEXT';"
    body = "".join(
        f"<h{level}>{heading}</h{level}>" + "".join(f"<p>{p}</p>" for p in paragraphs)
        for level, heading, paragraphs in sections
    )
    return (
        f"<!DOCTYPE html><html><head><title>{title}</title>{meta}<script>{script}</script>"
        "<style>body { font-family: serif } .nav { color: blue }</style></head><body>"
        '<nav class="nav"><a href="/">Home</a> <a href="/archive">Archive of every post</a></nav>'
        "<header><p>Site banner with a slogan</p></header>"
        f"<main><article><h1>{title}</h1>{body}</article></main>"
        "<aside><p>Related posts you may like</p></aside><footer><p>Copyright footer text</p></footer>"
        "<script>console.log('late script text');</script></body></html>"
    )


FILLER = (
    "The committee reviewed the schedule, the budget and the list of volunteers, and agreed to "
    "meet again after the holidays to settle what remained open. "
)
DEEP_PHRASE = "The heron colony nests in the alder carr beyond the second weir"


def sections(subject: str, n: int = 4) -> list[tuple[int, str, list[str]]]:
    """``n`` sections of long filler paragraphs; the last one, a subsection, holds DEEP_PHRASE."""
    out = [(2, f"{subject} part {i}", [FILLER * 6, FILLER * 5]) for i in range(1, n)]
    out.append((3, f"{subject} wildlife notes", [FILLER * 3, f"{DEEP_PHRASE} ({subject})."]))
    return out


def document_folder(folder: Path) -> dict[str, str]:
    """Good and bad documents side by side: name -> the reason a bad one is rejected ("" if good)."""
    folder.mkdir(parents=True, exist_ok=True)
    pages = [[(18, "River Survey")] + [(11.0, FILLER[:80])] * 20]
    pages += [[(15, f"Survey part {i}")] + [(11.0, FILLER[:80])] * 25 for i in (1, 2)]
    pages.append([(13, "Survey wildlife notes"), (11.0, DEEP_PHRASE + " (survey).")])
    (folder / "survey.pdf").write_bytes(
        pdf_bytes(pages, title="River Survey 2025", created="D:20250601120000Z")
    )
    write_docx(folder / "minutes.docx", title="Club Minutes", sections=sections("minutes"))
    (folder / "page.html").write_text(
        html_page(title="Riverside Blog", sections=sections("blog")), encoding="utf-8"
    )
    (folder / "plain.md").write_text(
        "# A note\n\nMarkdown still works next to documents.\n", encoding="utf-8"
    )
    (folder / "locked.pdf").write_bytes(encrypted_pdf_bytes(pdf_bytes([[(11.0, "secret")]])))
    (folder / "scan.pdf").write_bytes(pdf_bytes([[], []], image_only=True))
    (folder / "broken.pdf").write_bytes(b"%PDF-1.7\n1 0 obj << /Type /Catalog >> endobj\ngarbage")
    (folder / "bomb.docx").write_bytes(zip_bomb_docx_bytes())
    with open(folder / "huge.pdf", "wb") as huge:  # 200 MB, sparse: nothing is written but its size
        huge.truncate(200 * 1024 * 1024)
    (folder / "app.html").write_text(
        "<html><head><script>" + "render();" * 20000 + "</script></head><body><div id=app></div>"
        "<noscript>Please enable JavaScript.</noscript></body></html>",
        encoding="utf-8",
    )
    return {
        "survey.pdf": "",
        "minutes.docx": "",
        "page.html": "",
        "plain.md": "",
        "locked.pdf": "encrypted PDF: a password is needed to read it",
        "scan.pdf": "no text layer in 2 page(s)",
        "broken.pdf": "not a readable PDF",
        "bomb.docx": "a zip bomb, not a document",
        "huge.pdf": "200 MiB is larger than the 32 MiB a document may be",
        "app.html": "% script and style",
    }
