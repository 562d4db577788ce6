"""PDF tables: how far PDFium's reading order is from a row-wise reading (ADR-0024).

On the pages of real PDFs where pdfplumber's table finder (pdfminer.six underneath) finds a
table, each candidate text is compared with poppler's ``pdftotext`` by word 5-grams: the
share of the reference's distinct 5-grams the candidate also holds. References: plain
mode (what ``bench_extract.py`` uses) and ``-layout`` (rows kept as lines). Candidates:

- ``pdfium``: groundkit's page text today (PDFium's order);
- ``rows``: PDFium's own characters (so every character keeps its PDFium box and page
  offset) regrouped row by row inside the cells pdfplumber found, cells joined by
  `` | ``, the rest of the page in PDFium's order: what ADR-0024 would build;
- ``pdfplumber``: pdfplumber's ``extract_text()``, a peer.

Also per page: the seconds pdfplumber's finder takes (pdfminer parses the page) and the
seconds PDFium takes to read the page's text. Prose pages (no table found) are measured
the same way, as a control.

``--finders N``: instead, on the first N pages of each file, which pages each finder
says hold a table: pdfplumber's, and a crude one over PDFium's own path objects (at
least two horizontal and two vertical rulings crossing, and more than one cell), with
the milliseconds each takes per page.

    python bench/bench_tables.py PDF... [--pages-per-file 40]
    python bench/bench_tables.py PDF... --finders 120
"""

from __future__ import annotations

import argparse
import ctypes
import json
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

_WORD = re.compile(r"\w+")


def grams(text: str, n: int = 5) -> set[tuple[str, ...]]:
    words = [w.casefold() for w in _WORD.findall(text)]
    return {tuple(words[i:i + n]) for i in range(len(words) - n + 1)}


def agreement(candidate: str, reference: str) -> float | None:
    ref = grams(reference)
    return len(ref & grams(candidate)) / len(ref) if ref else None


def pdftotext(path: Path, page: int, layout: bool) -> str:
    args = ["pdftotext", "-f", str(page), "-l", str(page), "-enc", "UTF-8"]
    return subprocess.run([*args, *(["-layout"] if layout else []), str(path), "-"],
                          capture_output=True, check=True).stdout.decode("utf-8", "replace")


def pdfium_chars(page: Any) -> list[tuple[str, float, float] | None]:
    """Each PDFium character with its box centre (x, distance from the page top), or
    ``None`` for a generated one without a box."""
    import pypdfium2.raw as raw

    textpage = page.get_textpage()
    height = page.get_height()
    out: list[tuple[str, float, float] | None] = []
    left, right, bottom, top = (ctypes.c_double() for _ in range(4))
    for i in range(raw.FPDFText_CountChars(textpage)):
        ch = chr(raw.FPDFText_GetUnicode(textpage, i))
        if raw.FPDFText_GetCharBox(textpage, i, left, right, bottom, top) and \
                right.value > left.value:
            out.append((ch, (left.value + right.value) / 2,
                        height - (bottom.value + top.value) / 2))
        else:
            out.append((ch, -1.0, -1.0))
    textpage.close()
    return out


def rows_text(chars: list[tuple[str, float, float] | None], tables: list[Any]) -> str:
    """The page in PDFium's order with each table's characters regrouped into its rows."""
    cells: list[tuple[int, int, int, tuple[float, float, float, float]]] = []
    for t, table in enumerate(tables):
        for r, row in enumerate(table.rows):
            for c, cell in enumerate(row.cells):
                if cell is not None:
                    cells.append((t, r, c, cell))
    where: list[tuple[int, int, int] | None] = []
    last: tuple[int, int, int] | None = None
    for item in chars:
        assert item is not None
        _, x, y = item
        found = None
        if x >= 0:
            found = next(((t, r, c) for t, r, c, (x0, top, x1, bottom) in cells
                          if x0 <= x <= x1 and top <= y <= bottom), None)
            last = found
        else:
            found = last  # a generated space or break: with the character before it
        where.append(found)
    grid: dict[int, dict[int, dict[int, list[str]]]] = {}
    out: list[str] = []
    for item, place in zip(chars, where, strict=True):
        assert item is not None
        if place is None:
            out.append(item[0])
            continue
        t, r, c = place
        if t not in grid:
            grid[t] = {}
            out.append(f"\0{t}\0")
        grid[t].setdefault(r, {}).setdefault(c, []).append(item[0])
    text = "".join(out)
    for t, rows in grid.items():
        lines = [" | ".join(" ".join("".join(cell).split()) for _, cell in sorted(row.items()))
                 for _, row in sorted(rows.items())]
        text = text.replace(f"\0{t}\0", "\n" + "\n".join(lines) + "\n")
    return text


def _objects(container: Any, form: bool = False) -> Any:
    """``(type, object)`` of every page object, inside form XObjects too."""
    import pypdfium2.raw as raw

    count = (raw.FPDFFormObj_CountObjects if form else raw.FPDFPage_CountObjects)(container)
    for i in range(count):
        obj = (raw.FPDFFormObj_GetObject if form else raw.FPDFPage_GetObject)(container, i)
        kind = raw.FPDFPageObj_GetType(obj)
        if kind == raw.FPDF_PAGEOBJ_FORM:
            yield from _objects(obj, True)
        else:
            yield kind, obj


def pdfium_rulings(page: Any) -> tuple[list[tuple[float, ...]], list[tuple[float, ...]]]:
    """Horizontal and vertical rulings of a page: thin path objects and rectangles' edges."""
    import pypdfium2.raw as raw

    across: list[tuple[float, ...]] = []
    down: list[tuple[float, ...]] = []
    left, bottom, right, top = (ctypes.c_float() for _ in range(4))
    for kind, obj in _objects(page.raw):
        if kind != raw.FPDF_PAGEOBJ_PATH or not raw.FPDFPageObj_GetBounds(obj, left, bottom,
                                                                         right, top):
            continue
        x0, y0, x1, y1 = left.value, bottom.value, right.value, top.value
        if y1 - y0 < 2 and x1 - x0 > 8:
            across.append((x0, y0, x1, y1))
        elif x1 - x0 < 2 and y1 - y0 > 8:
            down.append((x0, y0, x1, y1))
        elif x1 - x0 > 8 and y1 - y0 > 8:
            across += [(x0, y0, x1, y0), (x0, y1, x1, y1)]
            down += [(x0, y0, x0, y1), (x1, y0, x1, y1)]
    return across, down


def has_grid(across: list[tuple[float, ...]], down: list[tuple[float, ...]]) -> bool:
    """Two or more rulings each way that cross, making more than one cell."""
    def crosses(d: tuple[float, ...], a: tuple[float, ...]) -> bool:
        return a[0] - 1 <= d[0] <= a[2] + 1 and d[1] - 1 <= a[1] <= d[3] + 1

    for d in down:
        crossing = [a for a in across if crosses(d, a)]
        if len(crossing) < 2:
            continue
        others = [o for o in down if o is not d and any(crosses(o, a) for a in crossing)]
        if others and (len(crossing) >= 3 or len(others) >= 2):
            return True
    return False


def finders(path: Path, limit: int) -> dict[str, Any]:
    import pdfplumber
    import pypdfium2 as pdfium

    pdf = pdfium.PdfDocument(path.read_bytes())
    counts = {"both": 0, "only_pdfplumber": 0, "only_pdfium": 0, "neither": 0}
    plumber_s = pdfium_s = 0.0
    with pdfplumber.open(str(path)) as plumbed:
        pages = plumbed.pages[:limit]
        for index, ppage in enumerate(pages):
            began = time.perf_counter()
            by_plumber = bool(ppage.find_tables())
            plumber_s += time.perf_counter() - began
            began = time.perf_counter()
            page = pdf[index]
            by_pdfium = has_grid(*pdfium_rulings(page))
            page.close()
            pdfium_s += time.perf_counter() - began
            key = ("both" if by_pdfium else "only_pdfplumber") if by_plumber else (
                "only_pdfium" if by_pdfium else "neither")
            counts[key] += 1
    pdf.close()
    return {"file": path.name, "pages": len(pages), **counts,
            "pdfplumber_ms_per_page": round(1000 * plumber_s / max(1, len(pages)), 1),
            "pdfium_rulings_ms_per_page": round(1000 * pdfium_s / max(1, len(pages)), 2)}


def measure(path: Path, limit: int) -> dict[str, Any]:
    import pdfplumber
    import pypdfium2 as pdfium

    from groundkit.extract.pdf import _read_page

    pdf = pdfium.PdfDocument(path.read_bytes())
    table_pages: list[dict[str, Any]] = []
    prose_pages: list[dict[str, Any]] = []
    with pdfplumber.open(str(path)) as plumbed:
        for index, ppage in enumerate(plumbed.pages):
            if len(table_pages) >= limit and len(prose_pages) >= limit:
                break
            began = time.perf_counter()
            tables = ppage.find_tables()
            finder_s = time.perf_counter() - began
            bucket = table_pages if tables else prose_pages
            if len(bucket) >= limit:
                continue
            began = time.perf_counter()
            ours = _read_page(pdf, index).text
            pdfium_s = time.perf_counter() - began
            page = pdf[index]
            regrouped = rows_text(pdfium_chars(page), tables)  # type: ignore[arg-type]
            page.close()
            record: dict[str, Any] = {"page": index + 1, "tables": len(tables),
                                      "finder_s": finder_s, "pdfium_s": pdfium_s}
            plumber_text = ppage.extract_text() or ""
            for ref_name, layout in (("plain", False), ("layout", True)):
                reference = pdftotext(path, index + 1, layout)
                record[ref_name] = {"pdfium": agreement(ours, reference),
                                    "rows": agreement(regrouped, reference),
                                    "pdfplumber": agreement(plumber_text, reference)}
            bucket.append(record)
    pdf.close()
    return {"file": path.name, "table_pages": table_pages, "prose_pages": prose_pages}


def summary(pages: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {"pages": len(pages)}
    if not pages:
        return out
    for ref in ("plain", "layout"):
        for cand in ("pdfium", "rows", "pdfplumber"):
            values = [p[ref][cand] for p in pages if p[ref][cand] is not None]
            if values:
                out[f"{ref}/{cand}"] = {"median": round(statistics.median(values), 3),
                                        "min": round(min(values), 3),
                                        "max": round(max(values), 3)}
    out["finder_s_median"] = round(statistics.median(p["finder_s"] for p in pages), 4)
    out["pdfium_s_median"] = round(statistics.median(p["pdfium_s"] for p in pages), 4)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pdfs", nargs="+", type=Path)
    parser.add_argument("--pages-per-file", type=int, default=40)
    parser.add_argument("--json", type=Path, help="write every page's figures here")
    parser.add_argument("--finders", type=int, metavar="N",
                        help="compare the table finders on the first N pages instead")
    args = parser.parse_args()
    if args.finders:
        for path in args.pdfs:
            print(json.dumps(finders(path, args.finders)))
        return 0
    results = [measure(path, args.pages_per_file) for path in args.pdfs]
    for result in results:
        print(result["file"], json.dumps({"tables": summary(result["table_pages"]),
                                          "prose": summary(result["prose_pages"])}))
    every = [p for r in results for p in r["table_pages"]]
    prose = [p for r in results for p in r["prose_pages"]]
    print("ALL", json.dumps({"tables": summary(every), "prose": summary(prose)}))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
