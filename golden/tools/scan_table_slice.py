"""Build golden/v5's documents: golden v4's, a scans slice and a tables slice.

    .venv/bin/python golden/tools/scan_table_slice.py           # writes docs, twins, PROVENANCE
    .venv/bin/python golden/tools/scan_table_slice.py --check   # builds in a temp folder, compares
    .venv/bin/python golden/tools/scan_table_slice.py --list    # the selection
    .venv/bin/python golden/tools/scan_table_slice.py reanchor  # v4 quotes on the scanned pages,
                                                                # found in the scans' OCR view

* ``docs/`` holds golden v4's 188 documents byte for byte, and two slices:

  - **scans**: page ranges of two of golden v4's real text PDFs (the R manuals) turned
    into image-only PDFs by a real renderer: poppler's ``pdftoppm`` draws each page as a
    grey image at 150 dpi and ``img2pdf`` wraps the images, one a page, losslessly
    (Flate; ``--nodate`` and its own writer: no clock and no random id in the file).
    groundkit reads them by OCR (:func:`groundkit.extract.read`), so their text view is
    Tesseract's; the scanned copies sit at ``r-manuals/scanned/<manual>-p<first>-<last>.pdf``.
  - **tables**: real documents whose answers are table rows, pages golden v1-v4 do not
    hold in any form or language: two chapters of *Debian Reference* as their HTML (copied byte
    for byte), and two PostgreSQL 15 data-type pages made into a DOCX and an ODT by pandoc
    (formats_slice's ``SOURCE_DATE_EPOCH`` and re-packing with a fixed date), under
    ``tables/``.
* ``twins/``: golden v4's, byte for byte.
* ``PROVENANCE.json``: v4's records, plus one per new file (source, package, version,
  licence, both sha256s, and the programs that made it with their versions and options).

``reanchor`` prints, for every golden v4 question whose quotes all fall on the scanned
pages, each quote's span in the scanned copy's OCR view found by alignment (difflib over
the characters, whitespace folded) and how faithful the reading is; the author keeps the
faithful ones (golden/v5/review/AUTHORING.md).
"""

from __future__ import annotations

import argparse
import difflib
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import NamedTuple

REPO = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(Path(__file__).resolve().parent), str(REPO)]

from debian_docs.packages import pkg_licence, pkg_version  # noqa: E402
from formats_slice import EPOCH, ZIP_DATE, repack  # noqa: E402
from slice_io import check, sha256, write  # noqa: E402

V4 = REPO / "golden" / "v4"
V5 = REPO / "golden" / "v5"
GENERATOR = "golden/tools/scan_table_slice.py"


class Scan(NamedTuple):
    """A page range of a golden v4 PDF, drawn as images."""

    doc_id: str
    source: str
    """the golden v4 doc id it is drawn from"""
    first: int
    last: int


SCANS: tuple[Scan, ...] = (
    Scan("r-manuals/scanned/R-data-p7-20.pdf", "r-manuals/R-data.pdf", 7, 20),
    Scan("r-manuals/scanned/R-admin-p6-13.pdf", "r-manuals/R-admin.pdf", 6, 13),
)
"""The pages were chosen for holding golden v4 quotes (20 on these 22 pages)."""
DPI = 150
PDFTOPPM = ("-r", str(DPI), "-gray")
"""grey PGM images (``-gray`` and ``-png`` exclude each other in pdftoppm)"""
IMG2PDF = ("--engine", "internal", "--nodate", "-s", f"{DPI}dpi")
"""img2pdf's own PDF writer (pikepdf's draws a random /ID), no dates, the page the size
the image was drawn at (PGM records no resolution)"""

REFERENCE = "/usr/share/debian-reference"
COPIED: tuple[tuple[str, str, str], ...] = (
    # (doc_id, package, source path)
    ("tables/debian-reference/ch06.en.html", "debian-reference-en", f"{REFERENCE}/ch06.en.html"),
    ("tables/debian-reference/ch10.en.html", "debian-reference-en", f"{REFERENCE}/ch10.en.html"),
)
"""HTML pages copied byte for byte (Debian Reference chapters golden v2-v4 do not hold
in any language)."""

PG_HTML = "/usr/share/doc/postgresql-doc-15/html"
CONVERTED: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    # (doc_id, pandoc writer, postgresql-doc-15 pages in order)
    ("tables/postgresql/datatype-datetime.docx", "docx", ("datatype-datetime.html",)),
    ("tables/postgresql/datatype-numeric-net.odt", "odt",
     ("datatype-numeric.html", "datatype-net-types.html")),
)
"""Office files pandoc makes from PostgreSQL pages (HTML in, one file out)."""


# -- scans ------------------------------------------------------------------------------------

def draw(pdf: bytes, first: int, last: int) -> bytes:
    """Pages ``first..last`` of ``pdf`` drawn by pdftoppm and wrapped by img2pdf."""
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "src.pdf"
        src.write_bytes(pdf)
        subprocess.run(["pdftoppm", *PDFTOPPM, "-f", str(first), "-l", str(last), str(src),
                        str(Path(tmp) / "page")], check=True, capture_output=True)
        pages = sorted(Path(tmp).glob("page-*.pgm"))
        if len(pages) != last - first + 1:
            raise SystemExit(f"pdftoppm drew {len(pages)} page(s), not {last - first + 1}")
        out = Path(tmp) / "scan.pdf"
        subprocess.run(["img2pdf", *IMG2PDF, "-o", str(out), *map(str, pages)], check=True,
                       capture_output=True)
        return out.read_bytes()


def _scan_record(scan: Scan, v4: dict, source: bytes, data: bytes) -> dict:
    original = v4[scan.source]
    return {"package": original["package"], "version": original["version"],
            "source_path": f"golden/v4/docs/{scan.source}",
            "pages": [scan.first, scan.last], "licence": original["licence"],
            "source_sha256": sha256(source), "sha256": sha256(data),
            "scanned_from": scan.source,
            "converter": [
                {"program": "pdftoppm", "package": "poppler-utils",
                 "version": pkg_version("poppler-utils"),
                 "options": [*PDFTOPPM, "-f", str(scan.first), "-l", str(scan.last)]},
                {"program": "img2pdf", "package": "img2pdf", "version": pkg_version("img2pdf"),
                 "options": list(IMG2PDF)}],
            "note": "image-only: one grey 150-dpi image a page, no text layer; groundkit "
                    "reads it by OCR (the MANIFEST pins OCR's identity)"}


# -- tables -----------------------------------------------------------------------------------

def pandoc(writer: str, pages: tuple[str, ...], title: str) -> tuple[bytes, list[str]]:
    """``pages`` converted by pandoc's ``writer``; the bytes and the options used."""
    options = ["-f", "html", "-t", writer, "--metadata", f"title={title}"]
    env = {"PATH": "/usr/bin:/bin", "SOURCE_DATE_EPOCH": EPOCH, "LANG": "C.UTF-8"}
    with tempfile.TemporaryDirectory() as tmp:
        target = Path(tmp) / "out"
        subprocess.run(["pandoc", *options, "-o", str(target),
                        *(f"{PG_HTML}/{p}" for p in pages)],
                       check=True, env=env, cwd=tmp, capture_output=True)
        data = target.read_bytes()
    return (data if writer == "docx" else repack(data)), options


# -- the build --------------------------------------------------------------------------------

def build(out: Path) -> dict[str, int]:
    """Write ``out/docs``, ``out/twins`` and ``out/PROVENANCE.json``; counts by kind."""
    docs, twins = out / "docs", out / "twins"
    for folder in (docs, twins):
        if folder.exists():
            shutil.rmtree(folder)
    v4 = json.loads((V4 / "PROVENANCE.json").read_text(encoding="utf-8"))
    records: dict[str, dict] = {}
    for src in sorted(p for p in (V4 / "docs").rglob("*") if p.is_file()):
        doc_id = src.relative_to(V4 / "docs").as_posix()
        write(docs / doc_id, src.read_bytes())
        records[doc_id] = v4["documents"][doc_id]
    for src in sorted(p for p in (V4 / "twins").rglob("*") if p.is_file()):
        write(twins / src.relative_to(V4 / "twins"), src.read_bytes())
    for scan in SCANS:
        source = (V4 / "docs" / scan.source).read_bytes()
        data = draw(source, scan.first, scan.last)
        write(docs / scan.doc_id, data)
        records[scan.doc_id] = _scan_record(scan, v4["documents"], source, data)
    for doc_id, pkg, path in COPIED:
        data = Path(path).read_bytes()
        write(docs / doc_id, data)
        records[doc_id] = {"package": pkg, "version": pkg_version(pkg), "source_path": path,
                           "licence": pkg_licence(pkg, "*"), "source_sha256": sha256(data),
                           "sha256": sha256(data)}
    for doc_id, writer, pages in CONVERTED:
        data, options = pandoc(writer, pages, Path(doc_id).stem)
        write(docs / doc_id, data)
        sources = [f"{PG_HTML}/{p}" for p in pages]
        records[doc_id] = {
            "package": "postgresql-doc-15", "version": pkg_version("postgresql-doc-15"),
            "source_path": sources[0] if len(sources) == 1 else sources,
            "licence": pkg_licence("postgresql-doc-15", "*"),
            "source_sha256": [sha256(Path(s).read_bytes()) for s in sources],
            "sha256": sha256(data),
            "converter": {"program": "pandoc", "version": pkg_version("pandoc"),
                          "options": options, "source_date_epoch": EPOCH,
                          "zip": "as written" if writer == "docx"
                          else f"members re-packed dated {ZIP_DATE[:3]}"}}
    blob = {"generator": GENERATOR, "documents": dict(sorted(records.items())),
            "twins": v4["twins"]}
    (out / "PROVENANCE.json").write_text(json.dumps(blob, indent=2, ensure_ascii=False) + "\n",
                                         encoding="utf-8")
    return {"v4 documents": len(v4["documents"]), "scanned": len(SCANS),
            "copied": len(COPIED), "converted": len(CONVERTED), "twins": len(v4["twins"])}


# -- re-anchoring v4 quotes on the scans ----------------------------------------------------

def _folded(text: str) -> tuple[str, list[int]]:
    """``text`` with every whitespace run as one space, and each character's offset."""
    chars, where = [], []
    for m in re.finditer(r"\s+|\S", text):
        chars.append(" " if m.group(0).isspace() else m.group(0))
        where.append(m.start())
    return "".join(chars), where


def align(quote: str, ocr: str) -> tuple[int, int, float] | None:
    """The span of ``ocr`` that reads as ``quote`` (start, end, similarity 0-1), by
    difflib's matching blocks around the longest common run, whitespace folded."""
    q, _ = _folded(quote)
    o, where = _folded(ocr)
    matcher = difflib.SequenceMatcher(None, o, q, autojunk=False)
    longest = matcher.find_longest_match(0, len(o), 0, len(q))
    if longest.size < 12:
        return None
    lo = max(0, longest.a - longest.b - 40)
    hi = min(len(o), longest.a + (len(q) - longest.b) + 40)
    window = difflib.SequenceMatcher(None, o[lo:hi], q, autojunk=False)
    blocks = [b for b in window.get_matching_blocks() if b.size]
    first, last = blocks[0], blocks[-1]
    start = lo + first.a - first.b if first.b <= 2 else lo + first.a
    end = lo + last.a + last.size + (len(q) - last.b - last.size)
    start, end = max(start, 0), min(end, len(o))
    ratio = difflib.SequenceMatcher(None, o[start:end], q, autojunk=False).ratio()
    end_char = where[end - 1] + 1
    return where[start], end_char, ratio


def reanchor() -> int:
    """Print, as JSON lines, each v4 question whose quotes all lie on the scanned pages,
    with every quote's OCR span and similarity (the author's input, not the output)."""
    from groundkit import extract

    questions = [json.loads(line) for line in
                 (V4 / "questions.jsonl").read_text(encoding="utf-8").splitlines()]
    for scan in SCANS:
        original = extract.extract("pdf", (V4 / "docs" / scan.source).read_bytes())
        scanned, identity = extract.read("pdf", (V5 / "docs" / scan.doc_id).read_bytes())
        pages = [(s.start, s.page) for s in original.segments]

        def page_of(offset: int, pages: list[tuple[int, int | None]] = pages) -> int:
            return max((p or 0) for s, p in pages if s <= offset)

        for q in questions:
            answers = q["answers"]
            if not answers or any(a["doc_id"] != scan.source for a in answers):
                continue
            spans = []
            for a in answers:
                at = -1
                for _ in range(a.get("occurrence", 1)):
                    at = original.text.index(a["quote"], at + 1)
                spans.append((at, at + len(a["quote"])))
            if not all(scan.first <= page_of(s) and page_of(e - 1) <= scan.last
                       for s, e in spans):
                continue
            found = []
            for a in answers:
                hit = align(a["quote"], scanned.text)
                found.append(None if hit is None else {
                    "quote": scanned.text[hit[0]:hit[1]], "similarity": round(hit[2], 4),
                    "count": scanned.text.count(scanned.text[hit[0]:hit[1]])})
            print(json.dumps({"v4": q["id"], "doc_id": scan.doc_id, "identity": identity,
                              "question": q["question"], "kind": q["kind"],
                              "traits": q["traits"],
                              "original": [a["quote"] for a in answers], "ocr": found},
                             ensure_ascii=False))
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python golden/tools/scan_table_slice.py",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("command", nargs="?", choices=("reanchor",),
                    help="reanchor: print v4's quotes on the scanned pages aligned with OCR")
    ap.add_argument("--check", action="store_true",
                    help="build into a temporary folder and compare with the committed files; "
                         "exit 1 on any difference")
    ap.add_argument("--out", type=Path, default=V5, help="the golden folder (default golden/v5)")
    ap.add_argument("--list", action="store_true", help="print the selection and exit")
    args = ap.parse_args(argv)
    if args.command == "reanchor":
        return reanchor()
    if args.list:
        for s in SCANS:
            print(f"{s.doc_id:<48} pages {s.first}-{s.last} of {s.source}, drawn at {DPI} dpi")
        for doc_id, pkg, path in COPIED:
            print(f"{doc_id:<48} {pkg:<20} {path}")
        for doc_id, writer, pages in CONVERTED:
            print(f"{doc_id:<48} pandoc -t {writer:<5} {' '.join(pages)}")
        return 0
    if not args.check:
        print(build(args.out))
        return 0
    return check(build, args.out)


if __name__ == "__main__":
    sys.exit(main())
