"""The furniture detector measured against people's labels, on golden v4's PDF and HTML pages.

The detector (:mod:`groundkit.extract.furniture`) marks running heads, page numbers,
tables of contents, indexes and navigation in a text view. Whether it marks the right
lines is a question for a reader, so a fixed sample of golden v4's extracted pages was
labelled line by line the way golden questions are written: one author labels every line
as furniture (and which kind) or content from the page's text and each line's position
alone, never the detector's output; a second reader checks every label and the two settle
disagreements (``evals/furniture/README.md``).

:func:`sample` draws the sample (deterministic: the same documents, extractor and
version give the same lines); :func:`detector_block` scores the detector against the
labels: a line is *marked* when at least half of its characters lie in furniture runs,
the extractor's and, for an HTML page, the site pass's
(:mod:`groundkit.collection.site_furniture`, its site being every HTML page of its
folder, as a collection of golden's documents sees it).
Precision is the share of marked lines labelled furniture, recall the share of labelled
furniture lines marked, each with a Wilson 95% interval, overall and per format.
"""

from __future__ import annotations

import json
import math
import posixpath
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from evals.external.checksums import REPO
from groundkit import extract
from groundkit.collection.site_furniture import KIND, view_runs
from groundkit.extract import TextView

LABELS = REPO / "evals" / "furniture" / "labels-v4.jsonl"
"""The labelled sample of golden v4 (one JSON object a line: :func:`sample`'s fields plus
``furniture`` (bool) and ``kind``)."""
PDF_PAGES = {"first": 3, "middle": 5, "last": 2}
"""Pages of each PDF in the sample: its first pages (title, contents), evenly spaced body
pages and its last pages (the index)."""
HTML_PAGES = 6
"""HTML pages in the sample, evenly spaced in sorted order."""


def sample(golden: Path) -> list[dict[str, Any]]:
    """Every line of the sampled pages: ``id``, ``doc``, ``format``, ``page`` (PDF; an
    HTML page is its own), ``start``/``end`` (view offsets), ``top`` (the line's top in PDF
    points; ``None`` for HTML or a line without a box) and ``text``."""
    docs = golden / "docs"
    pdfs = sorted(p.relative_to(docs).as_posix() for p in docs.rglob("*.pdf"))
    pages = sorted(p.relative_to(docs).as_posix() for p in docs.rglob("*.html"))
    chosen = [pages[round(i * (len(pages) - 1) / (HTML_PAGES - 1))] for i in range(HTML_PAGES)]
    items: list[dict[str, Any]] = []
    for doc in pdfs:
        items.extend(_pdf_lines(doc, extract.extract("pdf", (docs / doc).read_bytes())))
    for doc in dict.fromkeys(chosen):
        items.extend(_html_lines(doc, extract.extract("html", (docs / doc).read_bytes())))
    for n, item in enumerate(items, start=1):
        item["id"] = f"f{n:05d}"
    return items


def _pdf_lines(doc: str, view: TextView) -> Iterator[dict[str, Any]]:
    pages = sorted({s.page for s in view.segments if s.page is not None})
    middle = PDF_PAGES["middle"]
    body = pages[PDF_PAGES["first"]:len(pages) - PDF_PAGES["last"]]
    picked = {*pages[:PDF_PAGES["first"]], *pages[-PDF_PAGES["last"]:],
              *(body[min(len(body) - 1, round((i + 0.5) * len(body) / middle))]
                for i in range(middle) if body)}
    for seg in view.segments:
        if seg.page in picked and view.text[seg.start:seg.end].strip():
            yield {"doc": doc, "format": "pdf", "page": seg.page, "start": seg.start,
                   "end": seg.end, "top": seg.bbox[3] if seg.bbox else None,
                   "text": view.text[seg.start:seg.end]}


def _html_lines(doc: str, view: TextView) -> Iterator[dict[str, Any]]:
    start = 0
    for line in view.text.split("\n"):
        if line.strip():
            yield {"doc": doc, "format": "html", "page": None, "start": start,
                   "end": start + len(line), "top": None, "text": line}
        start += len(line) + 1


def marked(view: TextView, start: int, end: int,
           site: Sequence[tuple[int, int]] = ()) -> str | None:
    """The kind of furniture covering at least half of ``[start, end)``, or ``None``:
    the extractor's runs and the site pass's lines ``site`` (view offsets) together."""
    runs = [(start + a, start + b, kind) for a, b, kind in view.furniture_in(start, end)]
    runs += [(max(a, start), min(b, end), KIND) for a, b in site if a < end and start < b]
    covered: dict[str, int] = {}
    reached = start
    for a, b, kind in sorted(runs):
        if b > max(a, reached):
            covered[kind] = covered.get(kind, 0) + b - max(a, reached)
            reached = b
    best = max(covered.items(), key=lambda kv: kv[1], default=None)
    return best[0] if best and 2 * sum(covered.values()) >= end - start else None


def detector_block(golden: Path, labels: Path = LABELS) -> dict[str, Any]:
    """The detector's precision and recall on the labelled sample (see the module)."""
    if not labels.is_file():
        return {"measured": False, "reason": f"not measured: no labels at {labels.name}"}
    rows = [json.loads(line) for line in labels.read_text(encoding="utf-8").splitlines()
            if line.strip()]
    views: dict[str, TextView] = {}
    site = _site_runs(golden / "docs", {r["doc"] for r in rows if r["format"] == "html"})
    scored = []
    for row in rows:
        if row["doc"] not in views:
            data = (golden / "docs" / row["doc"]).read_bytes()
            views[row["doc"]] = extract.extract(row["format"], data)
        view = views[row["doc"]]
        if view.text[row["start"]:row["end"]] != row["text"]:
            return {"measured": False, "reason": f"not measured: label {row['id']} no longer "
                    "matches its document's view (re-draw and re-label the sample)"}
        scored.append((row["format"], bool(row["furniture"]),
                       marked(view, row["start"], row["end"], site.get(row["doc"], ()))
                       is not None))
    return {"measured": True, "labels": labels.name, **_rates(scored),
            "by_format": {fmt: _rates([s for s in scored if s[0] == fmt])
                          for fmt in sorted({s[0] for s in scored})}}


def _site_runs(docs: Path, pages: set[str]) -> dict[str, list[tuple[int, int]]]:
    """The site pass's lines (:mod:`groundkit.collection.site_furniture`) of each labelled
    HTML page, its site being every HTML page of its folder, as a collection sees it."""
    runs: dict[str, list[tuple[int, int]]] = {}
    for folder in sorted({posixpath.dirname(p) for p in pages}):
        texts = {p.relative_to(docs).as_posix(): extract.extract("html", p.read_bytes()).text
                 for p in sorted((docs / folder).glob("*.html")) if p.is_file()}
        runs.update((doc, spans) for doc, spans in view_runs(texts).items() if doc in pages)
    return runs


def _rates(scored: Sequence[tuple[str, bool, bool]]) -> dict[str, Any]:
    true_pos = sum(1 for _, label, mark in scored if label and mark)
    labelled = sum(1 for _, label, _ in scored if label)
    predicted = sum(1 for _, _, mark in scored if mark)
    return {"lines": len(scored), "labelled_furniture": labelled, "marked": predicted,
            "true_positives": true_pos,
            "precision": true_pos / predicted if predicted else None,
            "precision_interval": wilson(true_pos, predicted),
            "recall": true_pos / labelled if labelled else None,
            "recall_interval": wilson(true_pos, labelled)}


def wilson(hits: int, n: int, z: float = 1.959964) -> list[float] | None:
    """The Wilson score interval of ``hits / n`` (95% by default)."""
    if not n:
        return None
    p = hits / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return [max(0.0, centre - half), min(1.0, centre + half)]


def write_sample(golden: Path, out: Path) -> int:
    """Draw :func:`sample` into ``out`` (JSON lines, no labels yet); returns the count."""
    items = sample(golden)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(json.dumps(i, ensure_ascii=False) + "\n" for i in items),
                   encoding="utf-8")
    return len(items)


if __name__ == "__main__":  # python -m evals.golden.furniture GOLDEN OUT: draw the sample
    import sys

    print(write_sample(Path(sys.argv[1]), Path(sys.argv[2])), "lines")
