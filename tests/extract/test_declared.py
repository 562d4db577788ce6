"""A file's own metadata on its standing: HTML <meta>/<link>, PDF info, office properties."""

from __future__ import annotations

import pytest

from groundkit import extract
from groundkit.extract import declared

from .zips import members, packed


def _html(head: str) -> bytes:
    page = f"<html><head>{head}<title>T</title></head><body><p>Body text.</p></body></html>"
    return page.encode()


@pytest.mark.parametrize(("head", "evidence"), [
    ('<meta name="status" content="Archived in 2023">',
     'HTML <meta name="status">: Archived in 2023'),
    ('<meta name="Document-Status" content="superseded by v2">',
     'HTML <meta name="document-status">: superseded by v2'),
    ('<meta name="dcterms.isReplacedBy" content="https://example.org/new">',
     'HTML <meta name="dcterms.isreplacedby">: replaced by https://example.org/new'),
    ('<link rel="prev successor-version" href="/v3/page.html">',
     'HTML <link rel="successor-version">: /v3/page.html'),
])
def test_an_html_page_that_declares_itself_superseded(head: str, evidence: str) -> None:
    view = extract.extract("html", _html(head))
    assert view.status == evidence
    assert "Body text." in view.text  # the text view is unchanged


@pytest.mark.parametrize("head", [
    '<meta name="status" content="final">',
    '<meta name="description" content="The archived 2022 policy and its successor">',
    '<link rel="next" href="/next.html">',
    "",
])
def test_other_metadata_says_nothing(head: str) -> None:
    assert extract.extract("html", _html(head)).status == ""


def _pdf(info: dict[str, str]) -> bytes:
    """A one-page PDF with a text layer and the document information ``info``."""
    fields = " ".join(f"/{k} ({v})" for k, v in info.items())
    content = b"BT /F1 12 Tf 72 720 Td (Retention of logs.) Tj ET"
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n%s\nendstream" % (len(content), content),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        f"<< {fields} >>".encode(),
    ]
    out, offsets = bytearray(b"%PDF-1.4\n"), []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % at for at in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R /Info 6 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1, xref)
    return bytes(out)


@pytest.mark.parametrize(("info", "evidence"), [
    ({"Keywords": "retention, archived"}, "PDF Keywords: retention, archived"),
    ({"Subject": "Superseded by the 2024 policy"}, "PDF Subject: Superseded by the 2024 policy"),
    ({"Title": "[OBSOLETE] Retention policy"}, "PDF Title: [OBSOLETE] Retention policy"),
    ({"Title": "Why deprecated options remain"}, ""),  # a title with the word in passing
    ({"Author": "Archived Records Ltd"}, ""),           # a field that says nothing of standing
])
def test_a_pdf_document_information_dictionary(info: dict[str, str], evidence: str) -> None:
    pytest.importorskip("pypdfium2")
    view = extract.extract("pdf", _pdf(info))
    assert "Retention of logs." in view.text
    assert view.status == evidence


def _core(status: str) -> bytes:
    return (b'<cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/package/2006/'
            b'metadata/core-properties"><cp:contentStatus>' + status.encode()
            + b"</cp:contentStatus></cp:coreProperties>")


def test_a_docx_content_status() -> None:
    pytest.importorskip("defusedxml")
    from .test_office import docx

    files = members(docx("<w:p><w:r><w:t>Body.</w:t></w:r></w:p>"))
    assert extract.extract("docx", packed(files)).status == ""
    files["docProps/core.xml"] = _core("Deprecated")
    assert extract.extract("docx", packed(files)).status == "DOCX cp:contentStatus: Deprecated"
    files["docProps/core.xml"] = _core("Final")
    assert extract.extract("docx", packed(files)).status == ""


def test_an_odt_keyword_or_status_field() -> None:
    pytest.importorskip("defusedxml")
    from .test_office import odt

    files = members(odt("<text:p>Body.</text:p>"))
    meta = ('<office:document-meta xmlns:office="urn:oasis:names:tc:opendocument:xmlns:'
            'office:1.0" xmlns:meta="urn:oasis:names:tc:opendocument:xmlns:meta:1.0">'
            '<office:meta>{}</office:meta></office:document-meta>')
    files["meta.xml"] = meta.format('<meta:user-defined meta:name="Status">Withdrawn'
                                    "</meta:user-defined>").encode()
    assert extract.extract("odt", packed(files)).status == (
        "ODT meta:user-defined Status: Withdrawn")
    files["meta.xml"] = meta.format("<meta:keyword>policy</meta:keyword>").encode()
    assert extract.extract("odt", packed(files)).status == ""


def test_long_values_are_shortened_on_one_line() -> None:
    value = "archived " + "x" * 300
    shown = declared.from_pdf({"Keywords": value})
    assert shown.startswith("PDF Keywords: archived x") and len(shown) < 140
    assert "\n" not in declared.from_pdf({"Subject": "archived\nnotes"})
