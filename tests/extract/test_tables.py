"""Tables in the text view: one row a line, the header marked, every cell mapped.

The real files are the pandoc-made handbook pages of ``fixtures/office`` (the same HTML
table of operating systems and architectures as DOCX, ODT and EPUB, each with its header
row marked the way its format marks one), the DocBook pages they were made from and a
page with a DocBook callout table (``fixtures/html``); the edge cases are built by hand.
"""

from __future__ import annotations

import hashlib
import html
import logging
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from groundkit.extract import extractor, read
from groundkit.extract.base import ExtractError, Limits, TextView
from groundkit.extract.html import markup_view
from groundkit.extract.tables import TableMarks, consistent, rows
from groundkit.model import Document
from groundkit.text.chunking import ChunkerConfig, make_chunks, spans

from .test_office import docx, odt, para
from .zips import members

OFFICE = Path(__file__).parent / "fixtures" / "office"
HTML = Path(__file__).parent / "fixtures" / "html"
HEADER = "Operating System | Architecture(s)"
FIRST_ROWS = ["DEC Unix (OSF/1) | alpha, mipsel", "HP Unix | ia64, hppa"]


def view_of(fmt: str, data: bytes) -> TextView:
    return extractor(fmt).extract(data, Limits())


def row_texts(view: TextView) -> list[list[tuple[str, bool]]]:
    return [[(view.text[a:b], header) for a, b, header in rows(view.text, table)]
            for table in view.tables]


def cell_source(view: TextView, data: bytes, start: int, end: int) -> str:
    """The unescaped raw bytes the view's ``[start, end)`` maps to."""
    locator = view.locate(start, end)
    assert locator is not None and len(locator.spans) == 1
    span = locator.spans[0]
    raw = members(data)[span.part] if span.part else data
    assert span.byte_start is not None and span.byte_end is not None
    return html.unescape(raw[span.byte_start:span.byte_end].decode("utf-8"))


@pytest.mark.parametrize("fmt", ["docx", "odt", "epub"])
def test_a_pandoc_table_is_its_header_and_rows_with_every_cell_mapped(fmt: str) -> None:
    data = (OFFICE / f"handbook.{fmt}").read_bytes()
    view = view_of(fmt, data)
    (table,) = row_texts(view)
    assert table[0] == (HEADER, True)
    assert [text for text, _ in table[1:3]] == FIRST_ROWS
    assert not any(header for _, header in table[1:])
    assert len(table) == 15 and all("\n" not in text for text, _ in table)
    for start, end, _ in rows(view.text, view.tables[0]):
        at = start
        for cell in view.text[start:end].split(" | "):
            assert cell in cell_source(view, data, at, at + len(cell)), (fmt, cell)
            at += len(cell) + 3


@pytest.mark.parametrize("fmt", ["docx", "odt", "epub"])
def test_the_three_formats_give_the_same_rows(fmt: str) -> None:
    html_rows = row_texts(view_of("epub", (OFFICE / "handbook.epub").read_bytes()))
    assert row_texts(view_of(fmt, (OFFICE / f"handbook.{fmt}").read_bytes())) == html_rows


@pytest.mark.parametrize("lang", ["en-US", "ja-JP"])
def test_the_docbook_page_the_fixtures_came_from_gives_the_same_table(lang: str) -> None:
    data = (HTML / f"{lang}_sect.how-to-migrate.html").read_bytes()
    view = view_of("html", data)
    (table,) = row_texts(view)
    assert table[0][1] and not any(header for _, header in table[1:]) and len(table) == 15
    if lang == "en-US":
        assert table == row_texts(view_of("epub", (OFFICE / "handbook.epub").read_bytes()))[0]
    for start, end, _ in rows(view.text, view.tables[0]):
        at = start
        for cell in view.text[start:end].split(" | "):
            assert cell in cell_source(view, data, at, at + len(cell)), cell
            at += len(cell) + 3


def test_a_docbook_callout_table_has_no_header_and_keeps_each_callout_on_a_line() -> None:
    view = view_of("html", (HTML / "en-US_sect.apparmor.html").read_bytes())
    (table,) = row_texts(view)
    assert not any(header for _, header in table)
    note = [text for text, _ in table if text.startswith("The first event detected")]
    assert len(note) == 1 and note[0].endswith("in the same run.")  # two paragraphs, one row


def test_html_header_rows_are_the_leading_thead_or_all_th_rows() -> None:
    page = ("<table><caption>Sizes</caption><thead><tr><th>Name<th>Size</thead>"
            "<tr><th>Unit<th>MiB<tr><th>small<td>1<tr><td>big<td>9</table>")
    view = markup_view(page.encode(), limits=Limits())
    assert view.text == "Sizes\nName | Size\nUnit | MiB\nsmall | 1\nbig | 9"
    assert row_texts(view) == [[("Name | Size", True), ("Unit | MiB", True),
                                ("small | 1", False), ("big | 9", False)]]


def test_a_data_table_inside_a_layout_table_is_marked_alone() -> None:
    page = ("<table><tr><td><p>side</p><p>bar</p></td><td><table><tr><th>k<th>v<tr><td>a"
            "<td>1</table></td></tr></table>")
    view = markup_view(page.encode(), limits=Limits())
    assert view.text == "side\nbar | k | v\na | 1"
    assert row_texts(view) == [[("k | v", True), ("a | 1", False)]]


def test_a_hidden_row_is_not_a_row() -> None:
    page = "<table><tr><th>k<th>v<tr hidden><td>x<td>0<tr><td>a<td>1</table>"
    view = markup_view(page.encode(), limits=Limits())
    assert row_texts(view) == [[("k | v", True), ("a | 1", False)]]


def test_an_empty_last_cell_adds_no_bar_to_the_next_row_or_the_next_block() -> None:
    """haproxy's manual (cut to ``haproxy-cut.html``): a header row ending in an empty
    ``<th>`` once glued the first body row to the header (``Usage | FALSE``) and the
    whole page was refused; a last row ending in an empty cell glued the next heading."""
    data = (HTML / "haproxy-cut.html").read_bytes()
    view = view_of("html", data)
    assert row_texts(view) == [[("ACL name | Equivalent to Usage", True),
                                ("FALSE | always_false | never match", False),
                                ("HTTP | req.proto_http | match if request protocol is valid "
                                 "HTTP", False),
                                ("WAIT_END | wait_end", False)]]
    assert view.text.endswith("\nWAIT_END | wait_end\n\n8. Logging")
    (table,) = view.tables
    last = list(rows(view.text, table))[-1]
    assert cell_source(view, data, last[0], last[0] + len("WAIT_END")) == "WAIT_END"
    layout = markup_view(b"<table><tr><td><h3>a</h3><td></table><p>b", limits=Limits())
    assert (layout.text, layout.tables) == ("a\n\nb", ())


def test_a_mark_the_view_would_refuse_is_dropped_and_logged_its_text_kept(
        caplog: pytest.LogCaptureFixture) -> None:
    text = "k | v\na | 1\n\nx | y\nb | 2"
    marks = [(0, 11, 3), (13, 24, 18), (16, 24, 16), (13, 99, 13)]
    with caplog.at_level(logging.WARNING, logger="groundkit.extract.tables"):
        assert consistent(text, marks, "html") == ((13, 24, 18),)
    assert [r.getMessage() for r in caplog.records] == [
        "html extractor marked a table header ending inside a row at 3: the table [0, 11) is "
        "kept as text, without its rows marked",
        "html extractor marked a bad table [16, 24) (header to 16, view of 24): the table "
        "[16, 24) is kept as text, without its rows marked",
        "html extractor marked a bad table [13, 99) (header to 13, view of 24): the table "
        "[13, 99) is kept as text, without its rows marked"]
    assert TextView(text, "html", tables=consistent(text, marks, "html")).text == text


def test_an_office_part_drops_a_bad_mark_and_keeps_its_text(
        caplog: pytest.LogCaptureFixture) -> None:
    from groundkit.extract.office import _Builder

    builder = _Builder(format="docx", part="word/document.xml", limit=1 << 20)
    builder.text("k | v")
    builder.tables.marks.append((0, 5, 3))  # a header ending inside its row
    with caplog.at_level(logging.WARNING, logger="groundkit.extract.tables"):
        view = builder.view()
    assert view.text == "k | v" and view.tables == ()
    assert "the table [0, 5) is kept as text" in caplog.text


def test_docx_header_rows_are_the_leading_rows_marked_tbl_header() -> None:
    def row(header: str, *cells: str) -> str:
        props = f"<w:trPr><w:tblHeader{header}/></w:trPr>" if header is not None else ""
        return f"<w:tr>{props}" + "".join(f"<w:tc>{para(c)}</w:tc>" for c in cells) + "</w:tr>"

    nested = "<w:tbl>" + row("", "in1", "in2") + row("", "in3", "in4") + "</w:tbl>"
    body = (para("Before") + "<w:tbl>" + row("", "k", "v") + row(' w:val="false"', "a", "1")
            + row("", "late", "header") + "<w:tr><w:tc>" + para("x") + "<w:p><w:r><w:t>y"
            "</w:t><w:br/><w:t>z</w:t></w:r></w:p></w:tc><w:tc>" + nested + "</w:tc></w:tr>"
            + "</w:tbl>" + para("After"))
    view = view_of("docx", docx(body))
    assert view.text == ("Before\n\nk | v\na | 1\nlate | header\nx y z | in1 | in2 | in3 | in4"
                         "\n\nAfter")
    assert row_texts(view) == [[("k | v", True), ("a | 1", False), ("late | header", False),
                                ("x y z | in1 | in2 | in3 | in4", False)]]


def test_odt_header_rows_are_those_inside_table_header_rows() -> None:
    def row(*cells: str) -> str:
        return ("<table:table-row>" + "".join(
            f"<table:table-cell><text:p>{c}</text:p></table:table-cell>" for c in cells)
            + "</table:table-row>")

    body = ("<table:table><table:table-header-rows>" + row("k", "v")
            + "</table:table-header-rows>" + row("a", "1") + row("", "") + row("b", "2")
            + "</table:table><text:p>After</text:p>")
    view = view_of("odt", odt(body))
    assert view.text == "k | v\na | 1\nb | 2\n\nAfter"
    assert view.tables == ((0, 17, 5),)


def test_a_table_without_text_is_not_marked() -> None:
    assert view_of("odt", odt("<table:table><table:table-row><table:table-cell/>"
                              "</table:table-row></table:table><text:p>x</text:p>")).tables == ()


def test_marks_outside_the_view_or_a_header_ending_mid_row_are_refused() -> None:
    for bad in (((0, 9, 0),), ((0, 3, 1),), ((2, 1, 2),), ((0, 3, 0), (2, 5, 2))):
        with pytest.raises(ExtractError):
            TextView("ab\ncd", "html", tables=bad)
    assert TextView("ab\ncd", "html", tables=((0, 5, 2),)).tables == ((0, 5, 2),)


def test_the_recorder_marks_only_outermost_tables_and_their_leading_headers() -> None:
    marks = TableMarks()
    marks.open()
    marks.row(0, 3, True)
    marks.open()
    marks.row(10, 12, False)  # a nested table's row: part of a cell
    marks.close()
    marks.row(4, 7, False)
    marks.row(8, 9, True)  # a header-like row below a body row is a body row
    marks.close()
    marks.close()  # an unbalanced close is ignored
    assert marks.marks == [(0, 9, 3)]


def inside_a_row(text: str, position: int, row_spans: list[tuple[int, int]]) -> bool:
    """Whether ``position`` has some of a row's text on either side."""
    return any(text[a:position].strip() and text[position:b].strip() for a, b in row_spans
               if a < position < b)


@pytest.mark.parametrize("fmt", ["docx", "odt", "epub"])
@pytest.mark.parametrize("target", [50, 80, 200])
def test_no_chunk_of_a_real_table_ends_or_starts_inside_a_row(fmt: str, target: int) -> None:
    view = view_of(fmt, (OFFICE / f"handbook.{fmt}").read_bytes())
    row_spans = [(a, b) for t in view.tables for a, b, _ in rows(view.text, t)]
    config = ChunkerConfig(target=target, overlap=target // 4)
    windows = list(spans(view.text, config, (), row_spans))
    assert not any(inside_a_row(view.text, p, row_spans) for w in windows for p in w)
    if target == 50:  # without the rows, the same settings cut rows: the test can fail
        plain = list(spans(view.text, config))
        assert any(inside_a_row(view.text, p, row_spans) for w in plain for p in w)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.text(alphabet="ab .!", min_size=1, max_size=30), min_size=1,
                         max_size=4), min_size=1, max_size=30),
       st.integers(min_value=50, max_value=300))
def test_windows_never_cut_a_row_that_fits(table: list[list[str]], target: int) -> None:
    lines = [" | ".join(cells) for cells in table]
    text = "Intro words here.\n\n" + "\n".join(lines) + "\n\nAfter."
    row_spans, at = [], len("Intro words here.\n\n")
    for line in lines:
        row_spans.append((at, at + len(line)))
        at += len(line) + 1
    config = ChunkerConfig(target=target, overlap=target // 5)
    windows = list(spans(text, config, (), row_spans))
    longest = max(b - a for a, b in row_spans)
    if longest < config.maximum // 2:  # a row longer than the window's reach is cut
        assert not any(inside_a_row(text, p, row_spans) for w in windows for p in w)
    covered = {i for a, b in windows for i in range(a, b)}
    assert all(i in covered for i, ch in enumerate(text) if not ch.isspace())


def test_a_table_crosses_the_sandbox_and_its_chunks_hold_whole_rows() -> None:
    data = (OFFICE / "handbook.docx").read_bytes()
    view, identity = read("docx", data)  # in the sandbox's child, back through pickle
    assert view.tables == view_of("docx", data).tables != ()
    document = Document(doc_id="h.docx", root="/r", relpath="h.docx",
                        sha256=hashlib.sha256(data).hexdigest(), size=len(data),
                        encoding="utf-8", bom_len=0, text=view.text, extractor=identity)
    row_spans = [(a, b) for t in view.tables for a, b, _ in rows(view.text, t)]
    chunks = make_chunks("c", document, ChunkerConfig(target=50, overlap=12), view)
    assert len(chunks) > 20
    assert not any(inside_a_row(view.text, p, row_spans) for c in chunks for p in (c.start, c.end))
