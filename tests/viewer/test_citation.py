"""A citation's page: its verdict checked when made, its highlight only on the cited words."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import TreeMaker

from groundkit.collection import Collection, IndexConfig, index
from groundkit.errors import InvalidSpanError
from groundkit.model import Chunk, Status
from groundkit.viewer import citation
from groundkit.viewer.citation import PdfBody, TextBody, resolve
from groundkit.viewer.page import POLICY, render_html
from groundkit.viewer.serve import answer

FIXTURES = Path(__file__).resolve().parent.parent / "extract" / "fixtures"
TEXT = ("# Retention\n\nDeployment logs are kept for 30 days.\n\n"
        "Audit logs are kept for a year.\n")


def indexed(make_tree: TreeMaker, home: Path, files: dict[str, str | bytes],
            ) -> tuple[Path, list[Chunk]]:
    root = make_tree(files)
    index("docs", IndexConfig(roots=(str(root),)), home=home)
    with Collection.open("docs", home) as coll:
        return root, coll.chunks()


def marked(page: str) -> list[str]:
    return re.findall(r'<mark class="hl"[^>]*>(.*?)</mark>', page)


def quote_of(chunk: Chunk, words: str) -> tuple[int, int]:
    at = chunk.start + chunk.text.index(words)
    return at, at + len(words)


def test_a_verified_quote_is_highlighted_on_its_numbered_line(make_tree, home):
    _, (chunk,) = indexed(make_tree, home, {"notes.md": TEXT})
    start, end = quote_of(chunk, "kept for 30 days")

    shown = resolve(chunk.chunk_id, home=str(home), start=start, end=end)
    page = render_html(shown)

    assert shown.verdict.status is Status.VERIFIED and shown.now_at == (start, end)
    assert isinstance(shown.body, TextBody) and shown.body.first_line == 1
    assert marked(page) == ["kept for 30 days"]
    assert 'id="quote"' in page and f'content="{POLICY}"' in page.replace("&#x27;", "'")
    assert '<ol class="lines" start="1">' in page and "format markdown" in page


def test_a_moved_quote_is_highlighted_where_it_is_now_with_the_diff(make_tree, home):
    root, (chunk,) = indexed(make_tree, home, {"notes.md": TEXT})
    start, end = quote_of(chunk, "kept for 30 days")
    (root / "notes.md").write_text("Preface line.\n" + TEXT, encoding="utf-8")

    shown = resolve(chunk.chunk_id, home=str(home), start=start, end=end)
    page = render_html(shown)

    assert shown.verdict.status is Status.DRIFTED
    assert shown.now_at == (start + 14, end + 14)
    assert marked(page) == ["kept for 30 days"]
    assert "<del>" in page and "<ins>" in page and "relocated: highlighted below" in page


def test_a_changed_quote_gets_no_highlight_only_the_diff_and_the_stored_text(make_tree, home):
    root, (chunk,) = indexed(make_tree, home, {"notes.md": TEXT})
    (root / "notes.md").write_text(TEXT.replace("30 days", "90 days"), encoding="utf-8")

    shown = resolve(chunk.chunk_id, home=str(home))
    page = render_html(shown)

    assert shown.verdict.status is Status.DRIFTED and shown.body is None
    assert marked(page) == [] and 'class="hl"' not in page
    assert "<del>30</del>" in page and "<ins>90</ins>" in page
    assert "The cited text, as stored" in page and "not found once in the file" in page


def test_an_unresolvable_citation_says_why_and_shows_no_file(make_tree, home):
    root, (chunk,) = indexed(make_tree, home, {"notes.md": TEXT})
    (root / "notes.md").unlink()

    page = render_html(resolve(chunk.chunk_id, home=str(home)))

    assert "unresolvable" in page and "file missing" in page
    assert 'class="hl"' not in page and "The cited text, as stored" in page


def test_ids_resolve_only_inside_their_served_collections(make_tree, home):
    _, (chunk,) = indexed(make_tree, home, {"notes.md": TEXT})

    assert "not served here" in resolve(chunk.chunk_id, home=str(home), served=("other",)
                                        ).verdict.reason
    assert "unknown collection" in resolve("nope:" + "0" * 20, home=str(home)).verdict.reason
    assert "malformed chunk id" in resolve("../etc/passwd", home=str(home)).verdict.reason
    with pytest.raises(InvalidSpanError, match="not inside chunk"):
        resolve(chunk.chunk_id, home=str(home), start=0, end=chunk.end + 1)


def test_every_byte_of_a_hostile_file_is_escaped(make_tree, home):
    hostile = ("# <script>alert(1)</script>\n\n\"><img src=x onerror=alert(2)> "
               "<a href=\"javascript:alert(3)\">x</a> <style>body{background:url(//e.test)}"
               "</style>\n")
    _, (chunk,) = indexed(make_tree, home, {"<b>evil</b>.md": hostile})

    page = render_html(resolve(chunk.chunk_id, home=str(home)))

    assert "<script" not in page and "<img" not in page and "<a " not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "&lt;b&gt;evil&lt;/b&gt;.md" in page
    assert page.count("<style>") == 1
    assert "url(" not in page.split("<style>")[1].split("</style>")[0]


def test_a_file_changed_after_the_verdict_gets_no_highlight(make_tree, home, monkeypatch):
    _, (chunk,) = indexed(make_tree, home, {"notes.md": TEXT})
    monkeypatch.setattr(citation, "read_inside",
                        lambda *a, **k: TEXT.replace("Deployment", "Deploying!").encode())

    shown = resolve(chunk.chunk_id, home=str(home))

    assert shown.verdict.status is Status.VERIFIED and shown.body is None
    assert "changed while the page was made" in render_html(shown)


def test_a_pdf_quote_across_a_page_break_is_drawn_on_both_pages(make_tree, home):
    data = (FIXTURES / "pdf" / "gnuplot-p21-23.pdf").read_bytes()
    _, chunks = indexed(make_tree, home, {"manual.pdf": data})
    chunk = next(c for c in chunks if c.locator and len(c.locator.pages) == 2)

    shown = resolve(chunk.chunk_id, home=str(home))
    page = render_html(shown)

    assert isinstance(shown.body, PdfBody)
    assert [p.page for p in shown.body.pages] == list(chunk.locator.pages)
    assert all(p.boxes for p in shown.body.pages)
    assert page.count('class="hl"') == sum(len(p.boxes) for p in shown.body.pages)
    assert page.count("data:image/png;base64,") == 2 and "Page 1 of the file" in page


def test_a_pdf_quote_is_only_its_own_lines(make_tree, home):
    data = (FIXTURES / "pdf" / "gnuplot-p21-23.pdf").read_bytes()
    _, chunks = indexed(make_tree, home, {"manual.pdf": data})
    chunk = max(chunks, key=lambda c: c.end - c.start)
    line = chunk.text.index("\n", 40) + 1
    start = chunk.start + line + 3
    end = chunk.start + chunk.text.index("\n", line) - 2  # inside one line

    whole = resolve(chunk.chunk_id, home=str(home))
    quote = resolve(chunk.chunk_id, home=str(home), start=start, end=end)

    assert isinstance(whole.body, PdfBody) and isinstance(quote.body, PdfBody)
    assert sum(len(p.boxes) for p in quote.body.pages) == 1
    assert sum(len(p.boxes) for p in whole.body.pages) > 1


def test_a_pdf_that_moved_its_quote_is_drawn_where_the_quote_is_now(make_tree, home):
    pdfium = pytest.importorskip("pypdfium2")
    data = (FIXTURES / "pdf" / "gnuplot-p21-23.pdf").read_bytes()
    root, chunks = indexed(make_tree, home, {"manual.pdf": data})
    chunk = next(c for c in chunks if c.locator and c.locator.pages == (3,))
    pdf = pdfium.PdfDocument(data)
    pdf.del_page(0)  # the quote's page is now the second, its view offsets move
    out = root / "manual.pdf"
    pdf.save(str(out))
    pdf.close()

    shown = resolve(chunk.chunk_id, home=str(home))

    assert shown.verdict.status is Status.DRIFTED and shown.now_at != (chunk.start, chunk.end)
    assert isinstance(shown.body, PdfBody) and [p.page for p in shown.body.pages] == [2]
    assert shown.body.pages[0].boxes


@pytest.mark.parametrize(("name", "part"), [("office/handbook.odt", "content.xml"),
                                            ("office/handbook.docx", "word/document.xml")])
def test_an_office_file_shows_its_text_view_with_headings_and_part(make_tree, home, name, part):
    pytest.importorskip("selectolax")
    _, chunks = indexed(make_tree, home, {Path(name).name: (FIXTURES / name).read_bytes()})
    chunk = chunks[len(chunks) // 2]

    shown = resolve(chunk.chunk_id, home=str(home))
    page = render_html(shown)

    assert isinstance(shown.body, TextBody)
    body = shown.body
    assert body.text[body.highlight[0]:body.highlight[1]] == chunk.text
    assert "".join(marked(page)).replace("&quot;", '"') != ""
    assert body.headings
    assert body.parts == ((part,) if part else ())


def test_the_served_answer_refuses_a_malformed_quote(make_tree, home):
    _, (chunk,) = indexed(make_tree, home, {"notes.md": TEXT})

    assert answer(chunk.chunk_id, "start=1", home=str(home), served=None)[0] == 400
    assert answer(chunk.chunk_id, "start=-1&end=3", home=str(home), served=None)[0] == 400
    status, body = answer(chunk.chunk_id, "start=0&end=999", home=str(home), served=None)
    assert status == 400 and "not inside chunk" in body
    assert answer(chunk.chunk_id, "", home=str(home), served=None)[0] == 200



def test_a_page_that_cannot_be_drawn_says_why_and_shows_no_highlight(make_tree, home,
                                                                     monkeypatch):
    from groundkit.extract import ExtractError

    data = (FIXTURES / "pdf" / "tiny.pdf").read_bytes()
    _, (chunk,) = indexed(make_tree, home, {"tiny.pdf": data})

    def crashed(*args: object, **kwargs: object) -> None:
        raise ExtractError("drawing the page crashed (signal 6)")

    monkeypatch.setattr(citation, "render", crashed)
    shown = resolve(chunk.chunk_id, home=str(home))
    page = render_html(shown)

    assert shown.verdict.status is Status.VERIFIED and shown.body is None
    assert "No highlight: drawing the page crashed (signal 6)" in page
    assert 'class="hl"' not in page and "The cited text, as stored" in page


def test_a_text_window_holds_the_quote_and_at_most_its_context_lines():
    import random

    rng = random.Random(1)
    for _ in range(2000):
        text = "".join(rng.choice("ab\n") for _ in range(rng.randrange(1, 200)))
        lo = rng.randrange(len(text))
        hi = rng.randrange(lo + 1, len(text) + 1)
        body = citation._window(text, (lo, hi))
        s, e = body.highlight
        begin = lo - s
        assert body.text[s:e] == text[lo:hi]
        assert text[begin:begin + len(body.text)] == body.text
        assert begin == 0 or text[begin - 1] == "\n"
        assert body.first_line == text.count("\n", 0, begin) + 1
        assert text[begin:lo].count("\n") <= citation.CONTEXT_LINES
        assert body.text[e:].count("\n") <= citation.CONTEXT_LINES


def test_an_ocrd_scan_shows_its_ocr_text_view_with_the_span_highlighted(make_tree, home):
    import os

    from groundkit.extract.ocr import OcrExtractor

    if os.environ.get("GROUNDKIT_REQUIRE_OCR") != "1" and not OcrExtractor().available():
        pytest.skip("OCR not installed (make ocr)")
    from extract import scans

    _, chunks = indexed(make_tree, home, {"scan.pdf": scans.scanned_pdf(pages=(1,))})
    chunk = max(chunks, key=lambda c: len(c.text))

    shown = resolve(chunk.chunk_id, home=str(home))

    assert shown.verdict.status is Status.VERIFIED and shown.format == "ocr"
    assert isinstance(shown.body, TextBody) and shown.body.highlight is not None
    lo, hi = shown.body.highlight
    assert shown.body.text[lo:hi] == chunk.text
