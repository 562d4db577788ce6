"""OCR (ADR-0022): character error rate against the same pages' text layer, speed, memory.

Real PDF pages (golden v4's R manuals and gnuplot's manual, from Debian's r-doc-pdf and
gnuplot-doc) are drawn by PDFium at 150 and 300 dpi and saved by Pillow as image-only
PDFs: scans whose true text is known. Each scan is read by groundkit's OCR extractor
(in process, so this process's peak RSS is OCR's) and, where installed, by ``ocrmypdf``
(its text layer read back by PDFium) as the peer, with the same Tesseract options
(``-l eng --tesseract-oem 1 --tesseract-pagesegmode 3``, one job).

Figures: per dpi and reader, the pooled character error rate (Levenshtein distance of
the whitespace-collapsed texts over the reference's length; rapidfuzz) against
groundkit's PDF text view of the same page, pages per second (wall clock), and peak RSS.
A missing tool prints ``not measured: <why>``.

    python bench/bench_ocr.py                       # 6 pages, 150 and 300 dpi
    python bench/bench_ocr.py --pages 2 --dpi 300
"""

from __future__ import annotations

import argparse
import resource
import shutil
import subprocess
import tempfile
import time
from io import BytesIO
from pathlib import Path
from typing import Any

from common import load_average, machine, write_result

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "golden" / "v4" / "docs"
PAGES = (("r-manuals/R-data.pdf", 5), ("r-manuals/R-data.pdf", 9),
         ("r-manuals/R-admin.pdf", 7), ("r-manuals/R-admin.pdf", 20),
         ("gnuplot/gnuplot.pdf", 30), ("gnuplot/gnuplot.pdf", 60))
"""(document, 0-based page): prose, option lists and code from three manuals."""


def collapse(text: str) -> str:
    return " ".join(text.split())


def reference(path: Path, index: int) -> str:
    """The page's text as groundkit's PDF extractor reads its text layer."""
    import pypdfium2 as pdfium

    from groundkit.extract.base import DEFAULT_LIMITS
    from groundkit.extract.pdf import PdfExtractor

    pdf = pdfium.PdfDocument(path)
    single = pdfium.PdfDocument.new()
    single.import_pages(pdf, [index])
    out = BytesIO()
    single.save(out)
    return PdfExtractor().extract(out.getvalue(), DEFAULT_LIMITS).text


def scan(path: Path, index: int, dpi: int) -> bytes:
    import pypdfium2 as pdfium

    image = pdfium.PdfDocument(path)[index].render(scale=dpi / 72, grayscale=True).to_pil()
    out = BytesIO()
    image.save(out, "PDF", resolution=dpi)
    return out.getvalue()


def cer(reference_text: str, hypothesis: str) -> tuple[int, int]:
    from rapidfuzz.distance import Levenshtein

    ref, hyp = collapse(reference_text), collapse(hypothesis)
    return Levenshtein.distance(ref, hyp), len(ref)


def groundkit_ocr(data: bytes) -> str:
    from groundkit.extract.ocr import OCR_LIMITS, OcrExtractor

    return OcrExtractor().extract(data, OCR_LIMITS).text


def ocrmypdf_text(data: bytes, workdir: Path) -> str:
    from groundkit.extract.base import DEFAULT_LIMITS
    from groundkit.extract.pdf import PdfExtractor

    src, dst = workdir / "in.pdf", workdir / "out.pdf"
    src.write_bytes(data)
    subprocess.run(["ocrmypdf", "-q", "-j", "1", "-l", "eng", "--tesseract-oem", "1",
                    "--tesseract-pagesegmode", "3", "--output-type", "pdf", str(src), str(dst)],
                   check=True, capture_output=True)
    return PdfExtractor().extract(dst.read_bytes(), DEFAULT_LIMITS).text


def ocrmypdf_version() -> str | None:
    if shutil.which("ocrmypdf") is None:
        return None
    done = subprocess.run(["ocrmypdf", "--version"], capture_output=True, text=True)
    return done.stdout.strip() or None


def measure(reader: str, pages: list[tuple[str, int]], dpi: int,
            references: dict[tuple[str, int], str]) -> dict[str, Any]:
    errors = length = 0
    elapsed = 0.0
    per_page = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, index in pages:
            data = scan(DOCS / name, index, dpi)
            start = time.perf_counter()
            text = groundkit_ocr(data) if reader == "groundkit" else ocrmypdf_text(data,
                                                                                 Path(tmp))
            elapsed += time.perf_counter() - start
            e, n = cer(references[name, index], text)
            errors, length = errors + e, length + n
            per_page.append({"doc": name, "page": index + 1, "cer": round(e / n, 4)})
    return {"reader": reader, "dpi": dpi, "pages": len(pages), "cer": round(errors / length, 4),
            "pages_per_s": round(len(pages) / elapsed, 3), "per_page": per_page}


RETRIEVAL_DOCS = ("r-manuals/R-data.pdf", "r-manuals/R-admin.pdf")
"""The golden v4 PDFs whose scanned copies ``--retrieval`` searches (126 pages)."""
PART_PAGES = 10
"""Pages per file: each document is cut into files of 10 pages, the originals and the
scans alike, so that no file is near OCR's time limit on a loaded machine."""


def _parts(name: str, scanned: bool) -> list[tuple[str, bytes]]:
    import pypdfium2 as pdfium

    source = pdfium.PdfDocument(DOCS / name)
    parts = []
    for first in range(0, len(source), PART_PAGES):
        pages = list(range(first, min(first + PART_PAGES, len(source))))
        out = BytesIO()
        if scanned:
            images = [source[i].render(scale=300 / 72, grayscale=True).to_pil() for i in pages]
            images[0].save(out, "PDF", resolution=300, save_all=True, append_images=images[1:])
        else:
            part = pdfium.PdfDocument.new()
            part.import_pages(source, pages)
            part.save(out)
        parts.append((f"{Path(name).stem}-p{first + 1:03d}.pdf", out.getvalue()))
    return parts


def _first_relevant(texts: list[str], quote: str) -> int | None:
    """The 1-based rank of the first chunk that holds ``quote`` (whitespace collapsed; a
    partial-ratio of 90 or more, so OCR's and the text layer's chunks are judged alike)."""
    from rapidfuzz import fuzz

    wanted = collapse(quote)
    for rank, text in enumerate(texts, start=1):
        if fuzz.partial_ratio(wanted, collapse(text), score_cutoff=90):
            return rank
    return None


def retrieval(result: dict[str, Any]) -> None:
    """nDCG@10 of golden v4's questions on two R manuals, text originals against 300-dpi
    scans read by OCR, BM25 (the default): one relevant passage per question, the first
    chunk holding its quote; the paired difference with a bootstrap 95% interval."""
    import json
    import math
    import random

    from groundkit.collection import Collection, IndexConfig, index

    questions = [q for q in map(json.loads, (ROOT / "golden" / "v4" / "questions.jsonl")
                                .read_text(encoding="utf-8").splitlines())
                 if q.get("kind") == "answerable" and q.get("answers")
                 and q["answers"][0]["doc_id"] in RETRIEVAL_DOCS]
    gains: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        for kind in ("text", "scanned"):
            root = Path(tmp) / kind
            root.mkdir()
            start = time.perf_counter()
            for name in RETRIEVAL_DOCS:
                for file, data in _parts(name, kind == "scanned"):
                    (root / file).write_bytes(data)
            report = index(kind, IndexConfig(roots=(str(root),)), home=home)
            print(f"{kind}: {report.added} files indexed, {len(report.skipped)} skipped in "
                  f"{time.perf_counter() - start:.0f} s")
            with Collection.open(kind, home) as coll:
                ranks = [_first_relevant([h.chunk.text for h in coll.search(q["question"])],
                                         q["answers"][0]["quote"]) for q in questions]
            gains[kind] = [1 / math.log2(r + 1) if r else 0.0 for r in ranks]
    deltas = [s - t for s, t in zip(gains["scanned"], gains["text"], strict=True)]
    rng = random.Random(49)
    boots = sorted(sum(rng.choices(deltas, k=len(deltas))) / len(deltas) for _ in range(2000))
    row = {"questions": len(questions),
           "ndcg10_text": round(sum(gains["text"]) / len(questions), 3),
           "ndcg10_scanned": round(sum(gains["scanned"]) / len(questions), 3),
           "delta": round(sum(deltas) / len(deltas), 3),
           "delta_95": [round(boots[49], 3), round(boots[1949], 3)]}
    result["retrieval"] = row
    print(f"nDCG@10 over {row['questions']} questions: text {row['ndcg10_text']}, scanned "
          f"{row['ndcg10_scanned']}, delta {row['delta']:+} {row['delta_95']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pages", type=int, default=len(PAGES))
    parser.add_argument("--dpi", type=int, action="append")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--retrieval", action="store_true",
                        help="also nDCG@10 of scanned copies of two golden PDFs (OCRs 126 pages)")
    parser.add_argument("--only-retrieval", action="store_true")
    args = parser.parse_args()
    from groundkit.extract.ocr import OcrExtractor

    ocr = OcrExtractor()
    if not ocr.available():
        print("not measured: OCR not installed (pip install 'groundkit[ocr]'; make ocr)")
        return
    pages = [p for p in PAGES[: args.pages] if (DOCS / p[0]).is_file()]
    if not pages:
        print(f"not measured: golden documents missing under {DOCS}")
        return
    references = {(name, index): reference(DOCS / name, index) for name, index in pages}
    peer = ocrmypdf_version()
    result: dict[str, Any] = {"machine": machine(identity=ocr.identity(), ocrmypdf=peer),
                              "rows": []}
    if args.only_retrieval:
        retrieval(result)
        print(f"written to {write_result('ocr-retrieval', result, args.out)}")
        return
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss >> 10
    for dpi in args.dpi or [150, 300]:
        row = measure("groundkit", pages, dpi, references)
        result["rows"].append(row)
        print(f"groundkit OCR  {dpi} dpi: CER {row['cer']:.2%} over {row['pages']} pages, "
              f"{row['pages_per_s']:.3f} pages/s")
    rss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss >> 10
    result["peak_rss_mib"] = {"before_ocr": rss_before, "after_ocr": rss_after}
    print(f"peak RSS of this process: {rss_before} MiB before OCR, {rss_after} MiB after")
    if peer is None:
        print("ocrmypdf: not measured: ocrmypdf not installed (Debian: apt-get install ocrmypdf)")
    else:
        for dpi in args.dpi or [150, 300]:
            row = measure("ocrmypdf", pages, dpi, references)
            result["rows"].append(row)
            print(f"ocrmypdf {peer} {dpi} dpi: CER {row['cer']:.2%} over {row['pages']} "
                  f"pages, {row['pages_per_s']:.3f} pages/s (peak RSS in its children: "
                  f"{resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss >> 10} MiB)")
    if args.retrieval:
        retrieval(result)
    result["machine"]["loadavg_after"] = load_average()
    print(f"written to {write_result('ocr', result, args.out)}")


if __name__ == "__main__":
    main()
