"""The viewer's screenshots in the docs, made again: ``python bench/viewer_screenshots.py``.

Indexes four fixtures into a temporary home (the gnuplot PDF pages, a Debian handbook
HTML page, shown in its sanitised original layout, the Debian handbook DOCX, and a
Markdown note that then gets a preface, so its citation drifts and is relocated), opens
each citation's page as ``grk open`` serves it, in headless Chromium (the viewer tests'
DevTools driver), scrolled to the highlight, and writes the viewport as PNG to
``docs/img/viewer-*.png`` (``--out`` elsewhere).
"""

from __future__ import annotations

import argparse
import base64
import queue
import shutil
import sys
import tempfile
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "viewer"))

from browser import Browser, require_browser  # noqa: E402

from groundkit.collection import Collection, IndexConfig, index  # noqa: E402
from groundkit.model import Chunk  # noqa: E402
from groundkit.viewer.serve import answer, serve_once  # noqa: E402

FIXTURES = ROOT / "tests" / "extract" / "fixtures"
NOTE = "\n".join(["# Operations handbook", "", "## Logging", ""]
                 + [f"Paragraph {i} about the log pipeline and its dashboards." for i in range(8)]
                 + ["", "Deployment logs are kept for 30 days in the primary region.", ""]
                 + [f"Paragraph {i} about alerts." for i in range(8, 14)]) + "\n"


def chunks(home: Path) -> list[Chunk]:
    with Collection.open("docs", home) as coll:
        return coll.chunks()


def shoot(browser: Browser, home: Path, chunk: Chunk, start: int, end: int,
          out: Path) -> None:
    urls: queue.Queue[str] = queue.Queue()

    def make(ident: str, query: str) -> tuple[int, str]:
        return answer(ident, query, home=str(home), served=None)

    server = threading.Thread(target=serve_once, args=(make, chunk.chunk_id), daemon=True,
                              kwargs={"timeout_s": 60, "on_ready": urls.put, "start": start,
                                      "end": end})
    server.start()
    browser.open(urls.get(timeout=30))
    server.join(timeout=30)
    browser.evaluate("document.getElementById('quote')?.scrollIntoView({block: 'center'})")
    shot = browser.call("Page.captureScreenshot", session=True, format="png")
    out.write_bytes(base64.b64decode(shot["data"]))
    print(f"{out} ({out.stat().st_size:,} bytes)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "img")
    args = parser.parse_args()
    require_browser()
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        docs, home = base / "docs", base / "home"
        docs.mkdir()
        shutil.copy(FIXTURES / "pdf" / "gnuplot-p21-23.pdf", docs / "gnuplot.pdf")
        shutil.copy(FIXTURES / "office" / "handbook.docx", docs / "handbook.docx")
        shutil.copy(FIXTURES / "html" / "en-US_sect.how-to-migrate.html", docs / "migrate.html")
        (docs / "operations.md").write_text(NOTE, encoding="utf-8")
        index("docs", IndexConfig(roots=(str(docs),)), home=home)
        found = chunks(home)
        pdf = next(c for c in found if c.locator and c.locator.pages == (2,)
                   and c.text.count("\n") > 6)
        first = pdf.text.index("\n", 20) + 1
        pdf_quote = (pdf.start + first + 7,
                     pdf.start + pdf.text.index("\n", pdf.text.index("\n", first) + 1) + 12)
        docx = [c for c in found if c.doc_id == "handbook.docx"][3]
        html = next(c for c in found if c.doc_id == "migrate.html"
                    and "will quickly identify" in c.text)
        sentence = html.text.index("The nmap tool")  # one sentence, an inline <code> in it
        html_quote = (html.start + sentence,
                      html.start + html.text.index("log in to it.", sentence) + 13)
        note = next(c for c in found if "kept for 30 days" in c.text)
        at = note.start + note.text.index("kept for 30 days")
        (docs / "operations.md").write_text(
            "Preface: this handbook moved to the wiki.\n\n" + NOTE, "utf-8")
        browser = Browser(base / "profile", width=900, height=560)
        try:
            shoot(browser, home, pdf, *pdf_quote, args.out / "viewer-pdf.png")
            shoot(browser, home, html, *html_quote, args.out / "viewer-html.png")
            shoot(browser, home, docx, docx.start + 20, docx.start + 160,
                  args.out / "viewer-docx.png")
            shoot(browser, home, note, at, at + len("kept for 30 days"),
                  args.out / "viewer-drifted.png")
        finally:
            browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
