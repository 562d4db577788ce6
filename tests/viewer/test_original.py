"""HTML and EPUB citations in their original layout (:mod:`groundkit.viewer.original`): the
page sanitised by an allowlist, the quote marked where the page's bytes hold it, and the
text view, saying why, wherever that cannot be done."""

from __future__ import annotations

import html
import random
import re
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest
from conftest import TreeMaker

from groundkit.collection import Collection, IndexConfig, index
from groundkit.model import Chunk
from groundkit.viewer.citation import OriginalBody, TextBody, resolve
from groundkit.viewer.original import sanitise
from groundkit.viewer.page import render_html

pytest.importorskip("selectolax")
pytest.importorskip("nh3")

FIXTURES = Path(__file__).resolve().parent.parent / "extract" / "fixtures"
TAGS = {"a", "abbr", "acronym", "article", "aside", "b", "bdi", "bdo", "blockquote", "br",
        "caption", "center", "cite", "code", "col", "colgroup", "data", "dd", "del",
        "details", "dfn", "div", "dl", "dt", "em", "figcaption", "figure", "footer", "h1",
        "h2", "h3", "h4", "h5", "h6", "header", "hgroup", "hr", "i", "ins", "kbd", "li",
        "mark", "nav", "ol", "p", "pre", "q", "rp", "rt", "rtc", "ruby", "s", "samp",
        "small", "span", "strike", "strong", "sub", "summary", "sup", "table", "tbody",
        "td", "tfoot", "th", "thead", "time", "tr", "tt", "u", "ul", "var", "wbr"}
ATTRIBUTES = {"dir", "lang", "hidden", "colspan", "rowspan", "scope", "start"}
VECTORS = [
    "<script>alert(1)</script>", "<img src=x onerror=alert(1)>",
    "<svg onload=alert(1)><script>alert(2)</script><image href=http://e/i.png /></svg>",
    "<math><mtext><table><mglyph><style><img src=x onerror=alert(1)>",
    '<noscript><p title="</noscript><img src=x onerror=alert(1)>">',
    '<a href="jav&#x09;ascript:alert(1)">x</a>', '<a href="http://e/">remote</a>',
    '<form action="http://e/"><input name=q><button formaction="http://e/">b</button></form>',
    '<base href="http://e/">', '<meta http-equiv="refresh" content="0;url=http://e/">',
    '<link rel="stylesheet" href="http://e/s.css">',
    "<style>@import url(http://e/i.css); p{background:url(http://e/b.png)}</style>",
    '<p style="background:url(http://e/s.png)" class="c" id="quote">styled</p>',
    '<img srcset="http://e/1.png 1x">', '<video poster="http://e/p.png" src="http://e/v">',
    '<iframe src="http://e/f"></iframe><object data="http://e/o"></object><embed src=x>',
    "<template><img src=x onerror=alert(1)></template>", '<div onclick="alert(1)">d</div>',
    "<!-- <img src=x onerror=alert(1)> -->", '<table background="http://e/t.png"><tr>'
    '<td background="http://e/c.png">cell</td></tr></table>',
]


class Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.seen: list[tuple[str, list[tuple[str, str | None]]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.seen.append((tag, attrs))


def tags(markup: str) -> list[tuple[str, list[tuple[str, str | None]]]]:
    parser = Tags()
    parser.feed(markup)
    return parser.seen


@pytest.mark.parametrize("vector", VECTORS)
def test_the_sanitiser_keeps_only_the_allowlist(vector):
    clean = sanitise(f"<p>before</p>{vector}<p>after</p>")

    for tag, attrs in tags(clean):
        assert tag in TAGS, (vector, clean)
        assert {name for name, _ in attrs} <= ATTRIBUTES, (vector, clean)
    assert "url(" not in clean and "http://" not in clean and "alert" not in clean
    assert "before" in clean  # "after" may be swallowed by an unclosed <style>, and dropped


def index_files(make_tree: TreeMaker, home: Path, files: dict[str, str | bytes]
                ) -> list[Chunk]:
    index("docs", IndexConfig(roots=(str(make_tree(files)),)), home=home)
    with Collection.open("docs", home) as coll:
        return coll.chunks()


def marked(page: str) -> list[str]:
    return re.findall(r'<mark class="hl"[^>]*>(.*?)</mark>', page, re.S)


def flat(text: str) -> str:
    """``text`` unescaped, without whitespace (marks split where the markup does)."""
    return "".join(html.unescape(text).split())


@pytest.mark.parametrize("name", ["html/en-US_sect.apparmor.html",
                                  "html/ja-JP_sect.how-to-migrate.html",
                                  "office/handbook.epub"])
def test_every_quote_of_a_page_is_marked_in_its_sanitised_original(make_tree, home, name):
    """Every chunk whole and a random quote in each: the original with the quote's words
    marked, or (a quote across EPUB chapters, and only such a one) the text view saying
    why."""
    chunks = index_files(make_tree, home, {Path(name).name: (FIXTURES / name).read_bytes()})
    rng = random.Random(47)
    for chunk in chunks:
        a = rng.randrange(chunk.start, chunk.end)
        for start, end in ((chunk.start, chunk.end), (a, rng.randrange(a + 1, chunk.end + 1))):
            shown = resolve(chunk.chunk_id, home=str(home), start=start, end=end)
            cited = chunk.text[start - chunk.start:end - chunk.start]
            assert chunk.locator is not None
            chapters = {p.part for p in chunk.locator.narrow(start, end).spans}
            if isinstance(shown.body, TextBody):
                assert len(chapters) > 1 and "spans chapters" in shown.body.no_original
                continue
            assert isinstance(shown.body, OriginalBody)
            page = render_html(shown)
            marks = marked(page)
            assert flat("".join(marks)) == flat(cited.replace(" | ", ""))  # cells: no " | "
            assert page.count('id="quote"') == 1
            assert (shown.body.parts != ()) == name.endswith(".epub")


def test_character_references_line_ends_and_preformatted_text_are_marked_exactly(
        make_tree, home):
    page = ("<!DOCTYPE html>\r\n<html><body><h1>R&eacute;sum&#233;s &amp; logs</h1>\r\n"
            "<p>Logs   are\r\n kept&nbsp;for 30&#x20;days &lt;always&gt;.</p>"
            "<pre>  two  spaces\n\tand a tab</pre></body></html>")
    (chunk,) = index_files(make_tree, home, {"page.html": page.encode("utf-8")})

    for quote in ("sumés & logs", "are kept\xa0for 30 days <always", "two  spaces\n\tand"):
        at = chunk.start + chunk.text.index(quote)
        shown = resolve(chunk.chunk_id, home=str(home), start=at, end=at + len(quote))
        assert isinstance(shown.body, OriginalBody), quote
        (mark,) = marked(render_html(shown))
        assert " ".join(html.unescape(mark).split()) == " ".join(quote.split())


def test_without_an_original_the_page_shows_the_text_view_and_says_why(make_tree, home,
                                                                       monkeypatch):
    marks = "<html><body><h1>Policy</h1><p>A private \ue000 mark, and logs kept.</p>"
    titled = "<html><head><title>Only a title here</title></head><body></body></html>"
    plain = "<html><body><h1>Policy</h1><p>Logs are kept for 30 days.</p></body></html>"
    chunks = index_files(make_tree, home, {"marks.html": marks, "titled.html": titled,
                                           "plain.html": plain})
    by_doc = {c.doc_id: c for c in chunks}

    def reason(doc: str) -> str:
        shown = resolve(by_doc[doc].chunk_id, home=str(home))
        assert isinstance(shown.body, TextBody), doc
        assert flat("".join(marked(render_html(shown)))) == flat(by_doc[doc].text)
        return shown.body.no_original

    assert "holds the highlight's own marks" in reason("marks.html")
    assert "text the sanitiser drops" in reason("titled.html")
    monkeypatch.setitem(sys.modules, "nh3", None)
    assert "pip install 'groundkit[html]'" in reason("plain.html")
