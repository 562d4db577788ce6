"""The HTML extractor's view: visible text, blocks, cells, ``<pre>``, the outline, the title.

Real pages (three Debian Administrator's Handbook pages, ``fixtures/html``) are checked
against the standard library's independent HTML tokenizer; hand-written pages pin each
rule of the view and the refusals. The source map is tested in ``test_html_map.py``,
the encodings in ``test_html_encoding.py``.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from groundkit.extract import ExtractError, Limits, TextView, extractor
from groundkit.extract.html import EXTRACTORS, OPTIONS, markup_view

pytest.importorskip("selectolax")

FIXTURES = Path(__file__).parent / "fixtures" / "html"
REAL = ("en-US_sect.apparmor.html", "en-US_sect.how-to-migrate.html",
        "ja-JP_sect.how-to-migrate.html")
HTML = EXTRACTORS["html"]
LIMITS = Limits()


def view_of(page: str | bytes) -> TextView:
    return HTML.extract(page.encode() if isinstance(page, str) else page, LIMITS)


def reason(data: bytes) -> str:
    with pytest.raises(ExtractError) as caught:
        HTML.extract(data, LIMITS)
    return str(caught.value)


class VisibleData(HTMLParser):
    """The text of a page outside the elements the view leaves out (independent parser)."""

    HIDDEN = frozenset(("head", "script", "style", "svg", "math", "noscript", "template"))

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.depth = 0
        self.data: list[str] = []

    def handle_starttag(self, tag: str, attrs: object) -> None:
        self.depth += tag in self.HIDDEN

    def handle_endtag(self, tag: str) -> None:
        self.depth -= tag in self.HIDDEN

    def handle_data(self, data: str) -> None:
        if not self.depth:
            self.data.append(data)


def ink(text: str) -> str:
    """The text without whitespace or cell bars: what two extractions must agree on."""
    return re.sub(r"[\t\n\f\r |]", "", text)


# Real pages ------------------------------------------------------------------------


@pytest.mark.parametrize("name", REAL)
def test_a_real_page_has_the_text_an_independent_parser_finds(name: str) -> None:
    data = (FIXTURES / name).read_bytes()
    reference = VisibleData()
    reference.feed(data.decode("utf-8"))
    reference.close()
    assert ink(view_of(data).text) == ink("".join(reference.data))


def test_a_real_page_reads_as_paragraphs_headings_listings_and_tables() -> None:
    view = view_of((FIXTURES / "en-US_sect.apparmor.html").read_bytes())
    assert view.text.startswith("Download the ebook\n\nPrev\n")
    assert [(h.level, h.title) for h in view.headings[:3]] == [
        (2, "14.4.\xa0Introduction to AppArmor"), (3, "14.4.1.\xa0Principles"),
        (3, "14.4.2.\xa0Enabling AppArmor and managing AppArmor profiles")]
    for heading in view.headings:
        assert view.text[heading.start:].startswith(heading.title)
    assert "quickly:\n\n# aa-status\napparmor module is loaded.\n32 profiles" in view.text
    assert " [1 - #include <abstractions/nis>]\n" in view.text  # &lt; &gt; decoded
    assert view.heading_path(view.text.index("apparmor module is loaded")) == (
        "14.4.\xa0Introduction to AppArmor",
        "14.4.2.\xa0Enabling AppArmor and managing AppArmor profiles")
    table = view_of((FIXTURES / "en-US_sect.how-to-migrate.html").read_bytes()).text
    assert "\n\nOperating System | Architecture(s)\nDEC Unix (OSF/1) | alpha, mipsel\n" in table


def test_the_same_bytes_make_the_same_view() -> None:
    data = (FIXTURES / "en-US_sect.how-to-migrate.html").read_bytes()
    assert view_of(data) == view_of(data)


# The rules -------------------------------------------------------------------------


def test_blocks_are_paragraphs_items_and_rows_are_lines_and_cells_are_barred() -> None:
    view = view_of("<p>One\n  two</p><div>Three</div><ul><li>a<li>b</ul>"
                   "<table><tr><th>k<th>v<tr><td>1<td>2</table><dl><dt>t<dd>d</dl>")
    assert view.text == "One two\n\nThree\n\na\nb\n\nk | v\n1 | 2\n\nt\nd"


def test_a_data_row_is_one_line_and_an_empty_leading_cell_adds_no_bar() -> None:
    view = view_of("<p>x</p><table><tr><td><div>a</div><div>a2</div></td><td><p>b<br>b2</p>"
                   "</td><tr><td><img alt=1></td><td><div>c</div></td></table><p>y</p>")
    assert view.text == "x\n\na a2 | b b2\nc\n\ny"
    assert view.tables == ((3, 16, 3),)  # no row is marked as a header


def test_blocks_in_a_layout_tables_cells_are_lines_and_nothing_is_marked() -> None:
    cells = "<tr><td><div>a</div><div>a2</div></td><td><p>b</p></td>"
    for layout in (f"<table role=presentation>{cells}</table>",
                   f"<table>{cells}<td><h2>T</h2></td></table>",
                   f"<table>{cells}<td><pre>p</pre></td></table>"):
        view = view_of(layout)
        assert view.text.startswith("a\na2 | b"), layout
        assert view.tables == ()


def test_inline_elements_join_and_whitespace_collapses_to_one_space() -> None:
    assert view_of("<p>  a<b>b</b> <i> c </i>\t\n d&nbsp;e  </p>").text == "ab c d\xa0e"


def test_br_is_a_line_break_and_breaks_do_not_pile_up() -> None:
    assert view_of("<p>a<br>b<br><br>c<br></p><p>d</p>").text == "a\nb\n\nc\n\nd"
    assert view_of("<br><br>a<br>").text == "a"


def test_pre_is_kept_verbatim_with_its_newlines() -> None:
    view = view_of("<p>x</p><pre>\n  if a:\n      b  = <b>1</b>\n</pre><p>y</p>")
    assert view.text == "x\n\n  if a:\n      b  = 1\n\ny"


def test_scripts_styles_comments_svg_math_and_templates_are_not_in_the_view() -> None:
    view = view_of("<html><head><title>T</title><style>p{color:red}</style>"
                   "<script>var x = '<p>nope</p>';</script></head><body>"
                   "<h1>Title</h1><!-- secret comment --><p>shown<script>hidden()</script></p>"
                   "<svg><title>svg title</title><text>svg text</text></svg>"
                   "<math><mi>x</mi></math><template><p>template</p></template>"
                   "<noscript>no script</noscript><p>after</p></body></html>")
    assert view.text == "Title\n\nshown\n\nafter"


def test_a_heading_is_an_outline_entry_at_its_text() -> None:
    view = view_of("<h1>Top</h1><p>x</p><h2>Sub <em>one</em><br>line</h2><p>y</p>"
                   "<h3></h3><h2>Two</h2>")
    assert [(h.level, h.title, view.text[h.start:h.start + 3]) for h in view.headings] == [
        (1, "Top", "Top"), (2, "Sub one line", "Sub"), (2, "Two", "Two")]
    assert view.heading_path(view.text.index("y")) == ("Top", "Sub one line")


def test_the_title_heads_a_page_without_headings() -> None:
    view = view_of("<html><head><title> My  page </title></head><body><p>text</p></body>")
    assert view.text == "My page\n\ntext"
    assert [(h.start, h.level, h.title) for h in view.headings] == [(0, 1, "My page")]


def test_the_title_is_left_out_when_the_page_has_headings() -> None:
    view = view_of("<title>Site name</title><h2>Section</h2><p>text</p>")
    assert view.text == "Section\n\ntext"
    assert [h.title for h in view.headings] == ["Section"]


def test_markup_view_sets_the_part_on_every_segment() -> None:
    view = markup_view(b"<h1>Chapter</h1><p>one</p><p>two</p>", part="OEBPS/ch1.xhtml",
                       limits=LIMITS)
    assert view.segments and {s.part for s in view.segments} == {"OEBPS/ch1.xhtml"}
    locator = view.locate(0, len(view.text))
    assert locator is not None
    assert [(s.part, s.byte_start, s.byte_end) for s in locator.spans] == [
        ("OEBPS/ch1.xhtml", 4, 32)]


# Refusals --------------------------------------------------------------------------


def test_an_empty_file_is_refused() -> None:
    assert reason(b"") == "empty file"


def test_a_page_without_visible_text_has_an_empty_view() -> None:
    for page in (b"   \n", b"<html><head><script>x()</script></head><body> </body></html>",
                 b"<!-- only a comment -->", b"<svg><text>drawn</text></svg>"):
        view = view_of(page)
        assert (view.text, view.segments, view.headings) == ("", (), ())


def test_a_view_longer_than_the_limit_is_refused() -> None:
    with pytest.raises(ExtractError, match="exceeds the limit of 10"):
        HTML.extract(b"<p>" + b"word " * 10 + b"</p>", Limits(max_view_chars=10))


def test_deep_nesting_does_not_break_the_walk() -> None:
    assert view_of(b"<div>" * 10_000 + b"deep" + b"</div>" * 10).text == "deep"
    assert view_of(b"<b>" * 50_000 + b"bold").text == "bold"


# The extractor ---------------------------------------------------------------------


def test_the_extractor_is_registered_with_its_identity() -> None:
    import selectolax

    found = extractor("html")
    assert (found.name, found.library, found.extra) == ("html", "selectolax", "html")
    assert found.suffixes == ("*.html", "*.htm", "*.xhtml")
    assert found.available()
    assert found.identity() == f"html/selectolax={selectolax.__version__};{OPTIONS}"
    assert found.extract(b"<p>x</p>", LIMITS).format == "html"
