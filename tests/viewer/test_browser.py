"""The viewer in a real browser (headless Chromium over the DevTools protocol): the
highlight covers the quote's rendered words, a moved quote is shown where it is now, and
a hostile document neither runs nor fetches anything.

Skipped without Chromium, except with GROUNDKIT_REQUIRE_BROWSER=1 (CI), where it fails.
"""

from __future__ import annotations

import http.server
import json
import queue
import threading
from collections.abc import Iterator
from importlib.util import find_spec
from pathlib import Path
from typing import Any, ClassVar

import pytest
from browser import Browser, require_browser
from conftest import TreeMaker
from test_pdf_pages import loose_char_boxes

from groundkit.collection import Collection, IndexConfig, index
from groundkit.extract import extract
from groundkit.model import Chunk
from groundkit.viewer.pdf_pages import merge_lines
from groundkit.viewer.serve import answer, serve_once

FIXTURES = Path(__file__).resolve().parent.parent / "extract" / "fixtures"


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Browser]:
    require_browser()
    opened = Browser(tmp_path / "profile")
    try:
        yield opened
    finally:
        opened.close()


def indexed(make_tree: TreeMaker, home: Path, files: dict[str, str | bytes],
            ) -> tuple[Path, list[Chunk]]:
    root = make_tree(files)
    index("docs", IndexConfig(roots=(str(root),)), home=home)
    with Collection.open("docs", home) as coll:
        return root, coll.chunks()


def view(browser: Browser, home: Path, chunk_id: str, start: int | None = None,
         end: int | None = None) -> str:
    """Open the citation's page as ``grk open`` serves it (a one-shot server in a
    thread); its URL."""
    urls: queue.Queue[str] = queue.Queue()

    def make(ident: str, query: str) -> tuple[int, str]:
        return answer(ident, query, home=str(home), served=None)

    server = threading.Thread(target=serve_once, args=(make, chunk_id), daemon=True,
                              kwargs={"timeout_s": 60, "on_ready": urls.put, "start": start,
                                      "end": end})
    server.start()
    url = urls.get(timeout=30)
    browser.open(url)
    server.join(timeout=30)
    assert not server.is_alive()
    return url


def union(rects: list[dict[str, float]]) -> tuple[float, float, float, float]:
    return (min(r["left"] for r in rects), min(r["top"] for r in rects),
            max(r["right"] for r in rects), max(r["bottom"] for r in rects))


def iou(a: tuple[float, ...], b: tuple[float, ...]) -> float:
    w, h = min(a[2], b[2]) - max(a[0], b[0]), min(a[3], b[3]) - max(a[1], b[1])
    if w <= 0 or h <= 0:
        return 0.0
    both = w * h
    return both / ((a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - both)


RECTS = "JSON.parse(JSON.stringify([...document.querySelectorAll({sel})]" \
        ".map(e => e.getBoundingClientRect())))"


def test_a_pdf_highlight_covers_the_quotes_rendered_words(make_tree, home, browser):
    pdfium = pytest.importorskip("pypdfium2")
    data = (FIXTURES / "pdf" / "gnuplot-p21-23.pdf").read_bytes()
    _, chunks = indexed(make_tree, home, {"manual.pdf": data})
    chunk = next(c for c in chunks if c.locator and c.locator.pages == (2,)
                 and c.text.count("\n") > 6)
    first = chunk.text.index("\n", 20) + 1  # the quote: mid second line to mid fourth
    start = chunk.start + first + 7
    end = chunk.start + chunk.text.index("\n", chunk.text.index("\n", first) + 1) + 12
    (piece,) = chunk.locator.narrow(start, end).spans

    view(browser, home, chunk.chunk_id, start, end)

    marks = browser.evaluate(RECTS.format(sel="'.page .hl'"))
    img = browser.evaluate(RECTS.format(sel="'.page img'"))[0]
    pdf = pdfium.PdfDocument(data)
    left, bottom, right, top = pdf[1].get_bbox()
    sx, sy = img["width"] / (right - left), img["height"] / (top - bottom)
    words = merge_lines(loose_char_boxes(pdf, 2, piece.page_start, piece.page_end))
    expected = [(img["left"] + (x0 - left) * sx, img["top"] + (top - y1) * sy,
                 img["left"] + (x1 - left) * sx, img["top"] + (top - y0) * sy)
                for x0, y0, x1, y1 in words]
    pdf.close()
    assert len(marks) == len(expected) == 3
    for mark, want in zip(marks, expected, strict=True):
        got = (mark["left"], mark["top"], mark["right"], mark["bottom"])
        assert iou(got, want) >= 0.9, (got, want)
    assert browser.messages() == []


QUOTE_RANGE = """(() => {{
  // The quote's words in the shown original, found without the marks: the text of
  // div.original with whitespace runs read as one space, searched for the quote.
  const walk = document.createTreeWalker(document.querySelector('.original'),
                                         NodeFilter.SHOW_TEXT);
  const at = [];
  let flat = '', node;
  while ((node = walk.nextNode())) {{
    for (let i = 0; i < node.length; i++) {{
      const ch = node.data[i];
      if (/[\\t\\n\\f\\r ]/.test(ch)) {{
        if (flat.endsWith(' ')) continue;
        flat += ' ';
      }} else flat += ch;
      at.push([node, i]);
    }}
  }}
  const quote = {quote};
  const first = flat.indexOf(quote), again = flat.indexOf(quote, first + 1);
  if (first < 0 || again >= 0) return [first, again, []];
  const range = document.createRange();
  range.setStart(at[first][0], at[first][1]);
  const last = at[first + quote.length - 1];
  range.setEnd(last[0], last[1] + 1);
  return [first, again, JSON.parse(JSON.stringify([...range.getClientRects()]))];
}})()"""


@pytest.mark.parametrize("fixture", ["en-US_sect.apparmor.html",
                                     "ja-JP_sect.how-to-migrate.html"])
def test_an_html_highlight_covers_the_quotes_words_in_the_original_page(
        make_tree, home, browser, fixture):
    pytest.importorskip("selectolax")
    pytest.importorskip("nh3")
    data = (FIXTURES / "html" / fixture).read_bytes()
    _, chunks = indexed(make_tree, home, {"page.html": data})
    text = extract("html", data).text
    chunk = next(c for c in chunks[len(chunks) // 2:] if any(
        len(line) > 60 for line in c.text.split("\n")))
    line_at = next(i for i, line in enumerate(chunk.text.split("\n")) if len(line) > 60)
    column = sum(len(line) + 1 for line in chunk.text.split("\n")[:line_at])
    start, end = chunk.start + column + 10, chunk.start + column + 50

    url = view(browser, home, chunk.chunk_id, start, end)

    assert browser.evaluate("document.querySelectorAll('.original').length") == 1, url
    marks = browser.evaluate(RECTS.format(sel="'.original mark.hl'"))
    shown = browser.evaluate("[...document.querySelectorAll('.original mark.hl')]"
                             ".map(m => m.textContent).join(' ')")
    first, again, rects = browser.evaluate(QUOTE_RANGE.format(
        quote=json.dumps(" ".join(text[start:end].split()))))
    assert " ".join(shown.split()) == " ".join(text[start:end].split())
    assert first >= 0 and again == -1 and rects
    assert iou(union(marks), union(rects)) >= 0.9
    top, bottom, height = browser.evaluate(
        "(() => { const b = document.getElementById('quote').getBoundingClientRect();"
        " return [b.top, b.bottom, innerHeight]; })()")
    assert top >= 0 and bottom <= height  # scrolled into view by #quote, no script
    assert browser.messages() == []


def test_a_moved_quote_is_shown_and_scrolled_to_where_it_is_now(make_tree, home, browser):
    lines = [f"Line {i} of the notes, about topic {i % 7}." for i in range(1, 301)]
    lines[199] = "Deployment logs are kept for 30 days in the primary region."
    root, chunks = indexed(make_tree, home, {"notes.md": "\n".join(lines) + "\n"})
    chunk = next(c for c in chunks if "kept for 30 days" in c.text)
    at = chunk.start + chunk.text.index("kept for 30 days")
    (root / "notes.md").write_text("\n".join(["New preface."] * 3 + lines) + "\n",
                                   encoding="utf-8")

    view(browser, home, chunk.chunk_id, at, at + len("kept for 30 days"))

    shown: Any = browser.evaluate("""(() => {
      const mark = document.getElementById('quote');
      const li = mark.closest('li'), ol = li.parentElement;
      const index = [...ol.children].indexOf(li);
      const box = mark.getBoundingClientRect();
      return [mark.textContent, ol.start + index, box.top, box.bottom, innerHeight,
              document.querySelector('.verdict').textContent];
    })()""")
    text, line, top, bottom, height, verdict = shown
    assert (text, line, verdict) == ("kept for 30 days", 203, "drifted")
    assert top >= 0 and bottom <= height  # scrolled into view by #quote, no script


class Recorder(http.server.BaseHTTPRequestHandler):
    """A loopback server that records every request a page makes to it."""

    seen: ClassVar[list[str]] = []

    def do_GET(self) -> None:  # the name http.server calls
        Recorder.seen.append(self.path)
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.end_headers()
        self.wfile.write(b"x")

    def log_message(self, format: str, *args: object) -> None:
        return


@pytest.fixture
def recorder() -> Iterator[str]:
    Recorder.seen = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def hostile(base: str) -> str:
    return f"""<!DOCTYPE html><html><head><title>Hostile</title>
<link rel="stylesheet" href="{base}/link.css">
<style>@import url({base}/import.css); body {{ background: url({base}/bg.png) }}</style>
<script>fetch('{base}/script'); alert('script')</script></head>
<body><h1>Hostile page</h1>
<p>Words before an image <img src="{base}/img.png" onerror="fetch('{base}/onerror')">
and a <a href="javascript:fetch('{base}/js-link')">javascript link</a> in a paragraph
that is long enough to be indexed as the passage cited by this test.</p>
<svg xmlns="http://www.w3.org/2000/svg"><script>fetch('{base}/svg-script')</script>
<image href="{base}/svg-image.png"/></svg>
<p style="background-image: url({base}/inline-style.png)">
&lt;script&gt;fetch('{base}/escaped')&lt;/script&gt; &lt;img src={base}/escaped.png&gt;</p>
<iframe src="{base}/frame"></iframe><object data="{base}/object"></object>
</body></html>"""


def test_the_recorder_sees_what_a_hostile_page_fetches_when_opened_raw(tmp_path, browser,
                                                                       recorder):
    """The check can fail: the same document opened as it is fetches from the recorder."""
    raw = tmp_path / "raw.html"
    raw.write_text(hostile(recorder), encoding="utf-8")

    browser.open(raw.as_uri())
    browser.settle(1.0)

    assert any(path.startswith("/script") for path in Recorder.seen)
    assert any(url.startswith(recorder) for url in browser.requests())


@pytest.mark.parametrize("name", ["hostile.html", "hostile.md"])
def test_a_hostile_document_runs_and_fetches_nothing(make_tree, home, browser, recorder,
                                                     name):
    if name.endswith(".html"):
        pytest.importorskip("selectolax")
    _, chunks = indexed(make_tree, home, {name: hostile(recorder)})

    for chunk in chunks:
        url = view(browser, home, chunk.chunk_id)
        browser.settle(1.0)
        assert Recorder.seen == []
        page_url = url.split("#")[0]
        assert {u for u in browser.requests() if not u.startswith("data:")} == {page_url}
        assert browser.messages() == []
        counts = browser.evaluate("""[...['script', 'iframe', 'object', 'embed', 'a[href]',
          'link:not([href^="data:"])',
          'svg', 'img:not([src^="data:"])', '[onerror]', '[style]:not(.hl)']]
          .map(s => document.querySelectorAll(s).length)""")
        assert counts == [0] * 10
        if name.endswith(".html") and find_spec("nh3"):  # the original layout, sanitised
            assert browser.evaluate("document.querySelectorAll('.original p').length") >= 1
