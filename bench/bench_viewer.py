"""The citation viewer: how soon a cited PDF page is on screen, beside ``pdftoppm``.

A cited page of the gnuplot fixture (page 2 of ``tests/extract/fixtures/pdf/
gnuplot-p21-23.pdf``, a quote over three of its lines) is shown the way ``grk open``
shows it, best and median of ``--repeat`` rounds, the three ways round-robin:

* **page made**: the verdict, the child process that draws the page with PDFium and
  finds the quote's boxes, the PNG and the HTML (``resolve`` + ``render_html``);
* **browser**: headless Chromium (DevTools protocol over a pipe, as the viewer's
  tests drive it) navigating to the one-shot server's URL: the first contentful paint
  (``performance``'s ``first-contentful-paint``, from the navigation's start, so the
  server's making of the page is inside it) and the load event (the page image
  decoded);
* **pdftoppm**: poppler's ``pdftoppm -png -r 108`` of the same page, a process per
  run as a person would run it (108 dpi is the viewer's scale, 1.5 px a point).

Not measured (the row says so) without Chromium or pdftoppm (``make bench-docs``).
Writes ``.bench/viewer.json``.
"""

from __future__ import annotations

import argparse
import queue
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from common import ROOT, load_average, machine, write_result

sys.path.insert(0, str(ROOT / "tests" / "viewer"))

from groundkit.collection import Collection, IndexConfig, index
from groundkit.viewer.citation import resolve
from groundkit.viewer.page import render_html
from groundkit.viewer.pdf_pages import SCALE
from groundkit.viewer.serve import answer, serve_once

FIXTURE = ROOT / "tests" / "extract" / "fixtures" / "pdf" / "gnuplot-p21-23.pdf"
PAGE = 2
FIRST_PAINT = """new Promise(done => {
  new PerformanceObserver(list => {
    const paint = list.getEntriesByName('first-contentful-paint')[0];
    if (paint) done(paint.startTime);
  }).observe({type: 'paint', buffered: true});
  setTimeout(() => done(null), 5000);
})"""
"""The first contentful paint's time from the navigation's start, once Chromium has it."""


def summary(ms: list[float]) -> dict[str, float]:
    return {"best_ms": round(min(ms), 1), "median_ms": round(statistics.median(ms), 1),
            "n": len(ms)}


def cited(home: Path) -> tuple[str, int, int]:
    """A quote over three lines of a chunk on :data:`PAGE`."""
    with Collection.open("bench", home) as coll:
        chunk = next(c for c in coll.chunks() if c.locator and c.locator.pages == (PAGE,)
                     and c.text.count("\n") > 6)
    first = chunk.text.index("\n", 20) + 1
    start = chunk.start + first + 7
    end = chunk.start + chunk.text.index("\n", chunk.text.index("\n", first) + 1) + 12
    return chunk.chunk_id, start, end


def page_made(home: Path, quote: tuple[str, int, int]) -> float:
    ident, start, end = quote
    began = time.perf_counter()
    render_html(resolve(ident, home=str(home), start=start, end=end))
    return 1000 * (time.perf_counter() - began)


def shown(browser: Any, home: Path, quote: tuple[str, int, int]) -> tuple[float, float]:
    """One navigation to the page served once: (first contentful paint, load event) ms."""
    ident, start, end = quote
    urls: queue.Queue[str] = queue.Queue()

    def make(chunk_id: str, query: str) -> tuple[int, str]:
        return answer(chunk_id, query, home=str(home), served=None)

    server = threading.Thread(target=serve_once, args=(make, ident), daemon=True,
                              kwargs={"timeout_s": 60, "on_ready": urls.put, "start": start,
                                      "end": end})
    server.start()
    url = urls.get(timeout=30)
    began = time.perf_counter()
    browser.open(url)
    load = 1000 * (time.perf_counter() - began)
    fcp = browser.evaluate(FIRST_PAINT)
    server.join(timeout=30)
    browser.open("about:blank")
    if fcp is None:
        raise RuntimeError("Chromium reported no first-contentful-paint")
    return float(fcp), load


def pdftoppm(tool: str, out: Path) -> float:
    began = time.perf_counter()
    subprocess.run([tool, "-f", str(PAGE), "-l", str(PAGE), "-r", str(round(72 * SCALE)),
                    "-png", str(FIXTURE), str(out / "page")], check=True)
    return 1000 * (time.perf_counter() - began)


def measure(home: Path, work: Path, repeat: int) -> dict[str, Any]:
    """The three ways round-robin, ``repeat`` rounds after a warm-up round, so a change
    of the machine's load meets all three alike."""
    from browser import CHROMIUM, Browser

    quote = cited(home)
    tool = shutil.which("pdftoppm")
    browser = Browser(work / "profile") if CHROMIUM else None
    times: dict[str, list[float]] = {"made": [], "fcp": [], "load": [], "pdftoppm": []}
    try:
        for _ in range(repeat + 1):
            times["made"].append(page_made(home, quote))
            if browser is not None:
                fcp, load = shown(browser, home, quote)
                times["fcp"].append(fcp)
                times["load"].append(load)
            if tool:
                times["pdftoppm"].append(pdftoppm(tool, work))
    finally:
        if browser is not None:
            browser.close()
    none = {"browser": "chromium is not installed (make browser)",
            "pdftoppm": "pdftoppm is not installed (make bench-docs)"}
    return {
        "page_made": summary(times["made"][1:]),
        "browser": ({"first_contentful_paint": summary(times["fcp"][1:]),
                     "load_event": summary(times["load"][1:])} if browser
                    else {"not_measured": none["browser"]}),
        "pdftoppm": ({"dpi": round(72 * SCALE), **summary(times["pdftoppm"][1:])} if tool
                     else {"not_measured": none["pdftoppm"]}),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        (base / "docs").mkdir()
        shutil.copy(FIXTURE, base / "docs" / FIXTURE.name)
        index("bench", IndexConfig(roots=(str(base / "docs"),)), home=base / "home")
        measured = measure(base / "home", base, args.repeat)
    result = {"fixture": FIXTURE.name, "page": PAGE, "scale": SCALE, **measured,
              "load_average": load_average(), "machine": machine()}
    browser, poppler = measured["browser"], measured["pdftoppm"]
    path = write_result("viewer", result, args.out)
    print(f"cited PDF page ({FIXTURE.name} p. {PAGE}), median of {args.repeat}:")
    print(f"  page made (verdict, PDFium child, PNG, HTML): {result['page_made']['median_ms']}"
          " ms")
    for name, row in (("browser", browser), ("pdftoppm", poppler)):
        if "not_measured" in row:
            print(f"  {name}: not measured ({row['not_measured']})")
    if "first_contentful_paint" in browser:
        print(f"  Chromium first contentful paint: "
              f"{browser['first_contentful_paint']['median_ms']} ms, load event "
              f"{browser['load_event']['median_ms']} ms")
    if "median_ms" in poppler:
        print(f"  pdftoppm -r {poppler['dpi']} of the same page: {poppler['median_ms']} ms")
    print(f"  load average {result['load_average']}; written to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
