"""The HTML source map: every segment's raw bytes hold exactly its text.

The check, for a segment: the file's bytes ``[byte_start, byte_end)``, decoded,
unescaped (:func:`html.unescape`) and whitespace-collapsed, equal the segment's text in
the view, collapsed. Real pages must map completely (no visible text without a
segment); hand-written and random pages may leave text unmapped, never mapped wrongly.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from groundkit.extract import ExtractError, Limits, TextView
from groundkit.extract.html import EXTRACTORS
from groundkit.extract.html_map import align

pytest.importorskip("selectolax")

FIXTURES = Path(__file__).parent / "fixtures" / "html"
REAL = ("en-US_sect.apparmor.html", "en-US_sect.how-to-migrate.html",
        "ja-JP_sect.how-to-migrate.html")
INSTALLED = Path("/usr/share/doc/debian-handbook/html/en-US")
HTML = EXTRACTORS["html"]
LIMITS = Limits()
WS = re.compile(r"[\t\n\f\r ]+")
NUMERIC = re.compile(r"&#([xX][0-9a-fA-F]+|[0-9]+);?")


def view_of(data: bytes) -> TextView:
    return HTML.extract(data, LIMITS)


def collapse(text: str) -> str:
    return WS.sub(" ", text).strip()


def unescape(raw: str) -> str:
    """:func:`html.unescape`, but keeping a numeric reference to a control character or
    noncharacter (``&#1;``), which it drops and the HTML standard keeps."""
    def keep(m: re.Match[str]) -> str:
        if html.unescape(m.group()):
            return m.group()
        digits = m.group(1)
        return chr(int(digits[1:], 16) if digits[0] in "xX" else int(digits))
    return html.unescape(NUMERIC.sub(keep, raw))


def assert_map_holds(data: bytes, view: TextView, encoding: str = "utf-8") -> None:
    for seg in view.segments:
        assert seg.byte_start is not None and seg.byte_end is not None
        raw = data[seg.byte_start:seg.byte_end].decode(encoding)
        assert collapse(unescape(raw)) == collapse(view.text[seg.start:seg.end]), seg


def unmapped(view: TextView) -> str:
    """The view's characters no segment covers, but for whitespace and cell bars."""
    covered = bytearray(len(view.text))
    for seg in view.segments:
        covered[seg.start:seg.end] = b"\1" * (seg.end - seg.start)
    gaps = (c for c, on in zip(view.text, covered, strict=True) if not on)
    return re.sub(r"[\s|]", "", "".join(gaps))


# Real pages ------------------------------------------------------------------------


@pytest.mark.parametrize("name", REAL)
def test_every_segment_of_a_real_page_slices_back_to_its_text(name: str) -> None:
    data = (FIXTURES / name).read_bytes()
    view = view_of(data)
    assert len(view.segments) > 100
    assert_map_holds(data, view)
    assert unmapped(view) == ""


def test_a_japanese_heading_maps_to_its_multibyte_bytes_exactly() -> None:
    data = (FIXTURES / "ja-JP_sect.how-to-migrate.html").read_bytes()
    view = view_of(data)
    heading = view.headings[0]
    seg = next(s for s in view.segments if s.start == heading.start)
    assert data[seg.byte_start:seg.byte_end].decode() == view.text[seg.start:seg.end]
    assert view.text[seg.start:seg.end] in heading.title


@pytest.mark.skipif(not INSTALLED.is_dir(), reason="debian-handbook is not installed")
def test_every_page_of_the_installed_handbook_maps_completely() -> None:
    for path in sorted(INSTALLED.glob("*.html")):
        data = path.read_bytes()
        view = view_of(data)
        assert_map_holds(data, view)
        assert unmapped(view) == "", path.name


# Hand-written pages ----------------------------------------------------------------


def test_character_references_are_decoded_and_map_to_their_raw_bytes() -> None:
    data = b"<p>fish &amp; chips &lt;3 &#x263A; &eacute;t&eacute; &notit; &#1;&#x80;&#0;</p>"
    view = view_of(data)
    assert view.text == "fish & chips <3 \u263a \xe9t\xe9 \xacit; \x01\u20ac\ufffd"
    assert [data[s.byte_start:s.byte_end] for s in view.segments] == [data[3:-4]]
    assert view_of(b"<p>&#" + b"9" * 5000 + b";</p>").text == "\ufffd"


def test_hidden_text_is_skipped_and_the_rest_maps() -> None:
    data = (b"<head><title>T</title><style>p{}</style></head><h1>Title</h1><!-- c -->"
            b"<p>shown<script>x('<p>no</p>')</script></p><svg><title>s</title></svg>"
            b"<template><p>template</p></template><noscript>n</noscript><p>after</p>")
    view = view_of(data)
    assert [data[s.byte_start:s.byte_end] for s in view.segments] == [
        b"Title", b"shown", b"after"]


def test_foster_parented_text_maps_to_where_it_is_in_the_file() -> None:
    data = b"<table><tr><td>cell one</td></tr>stray text<tr><td>cell two</td></tr></table>"
    view = view_of(data)
    assert view.text == "stray text\n\ncell one\ncell two"
    assert [data[s.byte_start:s.byte_end] for s in view.segments] == [
        b"stray text", b"cell one", b"cell two"]


def test_text_merged_across_markup_the_parser_ignores_is_one_segment_per_run() -> None:
    data = b"<p>alpha</span>beta\r\ngamma</p>"
    view = view_of(data)
    assert view.text == "alphabeta gamma"
    assert [data[s.byte_start:s.byte_end] for s in view.segments] == [
        b"alpha", b"beta\r\ngamma"]


def test_xmp_and_plaintext_are_verbatim_and_map_to_their_literal_bytes() -> None:
    for page, text in ((b"<xmp>a<b>&amp;</xmp>z", "a<b>&amp;\n\nz"),
                       (b"x<plaintext><b>&amp;</b></plaintext>", "x\n\n<b>&amp;</b></plaintext>")):
        view = view_of(page)
        assert view.text == text
        for seg in view.segments:
            assert page[seg.byte_start:seg.byte_end].decode() == view.text[seg.start:seg.end]


@pytest.mark.parametrize("page", [
    b"<p>text<a href='unclosed", b"<p>a <b>b <i>c</p> d", b"</p>x<", b"a < b & c",
    b"<table><td>1<td>2<p>3", b"<!-- open comment <p>x", b"<script>x", b"<!DOCTYPE x>y",
    b"<a title='x>y'>z</a>", b'<p x="a"y=b>c</p>', b"<p a= b=c d>e</p>", b"<?pi x?>w",
    b"<title>a<b>c</title><p>d", b"<textarea>\n  kept\n</textarea>", b"</ >q</>r",
])
def test_malformed_markup_maps_completely(page: bytes) -> None:
    view = view_of(page)
    assert_map_holds(page, view)
    assert unmapped(view) == ""


def test_alignment_takes_text_out_of_order_and_skips_what_the_tree_lacks() -> None:
    stream = "cell\ntemplate text\nstray text\nthe next paragraph"
    assert align(stream, ["stray text", "cell", "the next paragraph"]) == [19, 0, 30]
    assert align(stream, ["cell", "stray text", "the next paragraph"]) == [0, 19, 30]
    assert align(stream, ["cell", "stray text"]) == [0, -1]  # short, unconfirmed
    assert align(stream, ["a", "cell"]) == [-1, 0]  # too short to be taken out of order


# Random pages ----------------------------------------------------------------------

TOKENS = st.sampled_from([
    b"<p>", b"</p>", b"<div>", b"<table>", b"<tr>", b"<td>", b"</td>", b"<pre>", b"</pre>",
    b"<br>", b"<h2>", b"</h2>", b"<script>", b"</script>", b"<!--", b"-->", b"<svg>", b"&#1;",
    b"</svg>", b"<title>", b"</title>", b"&amp;", b"&lt", b"&#x41;", b"&#0;", b"&bogus;",
    b"\r\n", b"\n", b" ", b"word", b"\xc3\xa9", b"<", b">", b"'", b'"', b"<a href='",
    b"<textarea>", b"<template>", b"</template>", b"<![CDATA[x]]>", b"<li>", b"<select>",
])


def holds_or_refuses(data: bytes) -> None:
    try:
        view = HTML.extract(data, LIMITS)
    except ExtractError as exc:
        assert "\n" not in str(exc)
        return
    assert_map_holds(data, view)


@settings(max_examples=300)
@given(st.binary(max_size=2000))
def test_random_bytes_give_a_view_or_a_one_line_refusal(data: bytes) -> None:
    holds_or_refuses(data)


@settings(max_examples=300)
@given(st.lists(TOKENS, max_size=60).map(b"".join))
def test_token_soup_maps_every_segment_it_makes(data: bytes) -> None:
    holds_or_refuses(data)


@settings(max_examples=100)
@given(st.lists(st.tuples(st.integers(0, 20_000), st.integers(0, 40),
                          st.binary(max_size=12) | TOKENS), max_size=8))
def test_a_mutated_real_page_maps_every_segment_it_makes(
        edits: list[tuple[int, int, bytes]]) -> None:
    data = bytearray((FIXTURES / "en-US_sect.how-to-migrate.html").read_bytes())
    for at, cut, insert in edits:
        at %= len(data) + 1
        data[at:at + cut] = insert
    holds_or_refuses(bytes(data))
