"""Page furniture: marked in PDF and HTML views without changing a character of them.

Hand-written PDFs place each line where a running head, a page number, a body line or a
contents line sits; the real gnuplot pages carry gnuplot's own running heads.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from groundkit.extract import Limits, TextView, furniture
from groundkit.extract.html import EXTRACTORS as HTML_EXTRACTORS
from groundkit.extract.pdf import EXTRACTORS as PDF_EXTRACTORS

from .test_pdf import document, fixture

pytest.importorskip("pypdfium2")

LIMITS = Limits(timeout_s=30)


def placed(*lines: tuple[float, str]) -> bytes:
    """A content stream showing each ``(height, text)`` at x = 72."""
    return b" ".join(b"BT /F1 10 Tf 72 %d Td (%s) Tj ET" % (int(y), text.encode("latin-1"))
                     for y, text in lines)


WORDS = ("alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota")


def manual(pages: int, body: tuple[str, ...] = ("Body text of page {w}.",)) -> bytes:
    """Pages with a running head (the page number inside it), body lines (``{w}``: a word
    of the page's own) and a page number."""
    return document([placed((760, f"Acme Users Manual, January 5, 2015 {n}"),
                            *((700 - 14 * i, line.format(w=WORDS[n])) for i, line in
                              enumerate(body)),
                            (40, str(n)))
                     for n in range(1, pages + 1)])


def marked(view: TextView) -> list[tuple[str, str]]:
    return [(kind, view.text[a:b]) for a, b, kind in view.furniture]


def pdf(data: bytes) -> TextView:
    return PDF_EXTRACTORS["pdf"].extract(data, LIMITS)


def test_running_heads_and_page_numbers_are_marked_and_the_body_is_not() -> None:
    view = pdf(manual(4, ("The first line of page {w}.", "Page {w} goes on.")))
    found = marked(view)
    assert ("running-head", "Acme Users Manual, January 5, 2015 3") in found
    assert ("page-number", "4") in found
    assert not any("first" in text or "goes on" in text for _, text in found)
    assert len(found) == 8


def test_marking_changes_no_character_of_the_view(monkeypatch: pytest.MonkeyPatch) -> None:
    for data in (manual(4), fixture("gnuplot-p21-23.pdf")):
        with_marks = pdf(data)
        monkeypatch.setattr(furniture, "pdf_runs", lambda pages: ())
        without = pdf(data)
        monkeypatch.undo()
        assert with_marks.furniture and not without.furniture
        assert with_marks.text == without.text
        assert with_marks.segments == without.segments


def test_real_gnuplot_pages_have_their_running_heads_marked() -> None:
    view = pdf(fixture("gnuplot-p21-23.pdf"))
    heads = [text for kind, text in marked(view) if kind == "running-head"]
    assert len(heads) == 3 and all("gnuplot 5.4" in h for h in heads)


def test_a_line_on_too_few_pages_or_far_apart_is_content() -> None:
    two = pdf(manual(2))
    assert [k for k, _ in marked(two)] == ["page-number", "page-number"]
    # The same first body line on pages 1, 5 and 9 (right under the head): scattered.
    pages = [placed((760, f"Acme Manual {n}"), (740, "Syntax:" if n in (1, 5, 9) else
                                                 f"Topic {WORDS[n - 1]} explained."),
                    (700, f"Body {WORDS[n - 1]}."))
             for n in range(1, 10)]
    found = marked(pdf(document(pages)))
    assert ("running-head", "Acme Manual 5") in found
    assert not any(text == "Syntax:" for _, text in found)


def test_contents_and_index_lines_are_marked() -> None:
    contents = placed(*((700 - 14 * i, f"{i}.1 Section {i} . . . . . . . . . {3 + 2 * i}")
                        for i in range(5)), (600, "A closing remark, not a contents line."))
    listing = placed(*((700 - 14 * i, f"Chapter {i} {10 * i + 1}") for i in range(1, 8)))
    index = placed(*((700 - 14 * i, f"term{i}, {40 - i}, {77 + i}") for i in range(8)),
                   (580, "B"))
    view = pdf(document([contents, listing, index]))
    kinds = {text: kind for kind, text in marked(view)}
    assert kinds["0.1 Section 0 . . . . . . . . . 3"] == "contents"
    assert "A closing remark, not a contents line." not in kinds
    assert kinds["Chapter 7 71"] == "contents"  # rising page numbers, no leaders
    assert kinds["term3, 37, 80"] == "index" and kinds["B"] == "index"


def test_page_labels_are_kept_where_they_are_not_the_page_number() -> None:
    data = document([placed((700, f"Page body {n}.")) for n in range(4)],
                    catalog=b"/PageLabels << /Nums [0 << /S /r >> 2 << /S /D >>] >>")
    view = pdf(data)
    assert view.page_labels == ((1, "i"), (2, "ii"), (3, "1"), (4, "2"))
    spans = view.locate(0, len(view.text))
    assert spans is not None
    assert [(s.page, s.page_label) for s in spans.spans] == [
        (1, "i"), (2, "ii"), (3, "1"), (4, "2")]


HTML = (b"<html><head><title>T</title></head><body>"
        b"<nav><a href='/'>Home</a> | <a href='/docs'>Docs</a></nav>"
        b"<div class='navheader'>Prev Next</div>"
        b"<main><header><h1>Retention</h1></header><p>Logs are kept for 30 days.</p>"
        b"<footer>Written by the platform team.</footer></main>"
        b"<p hidden>a hidden paragraph</p><p style='color: red; display:none'>styled away</p>"
        b"<p aria-hidden='true'>for screens only</p><div role='contentinfo'>(c) Acme</div>"
        b"<footer>Site footer</footer></body></html>")


def html(data: bytes) -> TextView:
    return HTML_EXTRACTORS["html"].extract(data, LIMITS)


def test_html_navigation_is_marked_and_content_headers_are_not() -> None:
    view = html(HTML)
    assert marked(view) == [("navigation", "Home | Docs"), ("navigation", "Prev Next"),
                            ("navigation", "(c) Acme"), ("navigation", "Site footer")]
    assert "Retention" in view.text and "Written by the platform team." in view.text


def test_bootstrap_menus_and_screen_reader_text_are_navigation() -> None:
    """haproxy's keyword pop-ups (a Bootstrap ``dropdown-menu`` its style sheet hides,
    inside the manual's ``<pre>`` text) are furniture; the keyword that opens one and
    the sentence around it are content."""
    path = Path(__file__).parent / "fixtures" / "html" / "haproxy-cut.html"
    view = html(path.read_bytes())
    menu = ("This keyword is available in sections :\nBind options\n"
            "Server and default-server options")
    assert marked(view) == [("navigation", "Toggle navigation HAProxy"), ("navigation", menu)]
    sentence = view.text.index('relative path is used with "ca-file')
    assert view.furniture[1][0] > view.text.index("ca-file", sentence)
    assert view.text.index('" directives.') >= view.furniture[1][1]
    inline = html(b"<p>Save <span class='visually-hidden'>(opens a dialog)</span> now.</p>"
                  b"<a class='x sr-only' href='#main'>Skip</a><p>Body text.</p>")
    assert inline.text == "Save (opens a dialog) now.\n\nSkip\n\nBody text."
    assert marked(inline) == [("navigation", "(opens a dialog)"), ("navigation", "Skip")]


def test_hidden_html_is_left_out_of_the_view() -> None:
    text = html(HTML).text
    for hidden in ("a hidden paragraph", "styled away", "for screens only"):
        assert hidden not in text


def test_html_marking_changes_no_character(monkeypatch: pytest.MonkeyPatch) -> None:
    from groundkit.extract import html as module

    with_marks = html(HTML)
    monkeypatch.setattr(module, "is_navigation", lambda *args: False)
    without = html(HTML)
    assert with_marks.furniture and not without.furniture
    assert (with_marks.text, with_marks.segments) == (without.text, without.segments)
