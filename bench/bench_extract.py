"""Document extraction: fidelity, quotes found and speed of groundkit's extractors against
peers, on real documents from Debian packages, and indexing them beside plain text.

PDF (gnuplot.pdf from gnuplot-doc; R-intro, R-admin, R-data from r-doc-pdf): each
extractor's text against poppler's ``pdftotext`` (plain mode). HTML (the Debian
Administrator's Handbook, English, package debian-handbook): against the text headless
Chromium renders (``document.body.innerText``). Peers, same run: markitdown (PDF through
pdfplumber/pdfminer.six, HTML to Markdown: measured as it is, and with its Markdown
syntax lightly stripped, ``markitdown-stripped``, same output), pdfminer.six and pypdf
(PDF), BeautifulSoup ``get_text`` and html2text (HTML). Figures:

1. character error rate (CER) per page, pooled, and per document (``extract_measure``);
2. the share of the reference's sentences (every ``--quote-every``-th of 40-200
   characters) found verbatim in the extractor's whitespace-normalised text;
3. throughput, MB/s of raw input (best of ``--repeat`` round-robin runs per file, the
   file already in memory), and groundkit / markitdown per format;
4. ``index()`` (as ``grk index``) over a folder of those PDFs and pages against a folder
   of their reference texts as ``.txt``: MB/s of raw input and peak RSS;
5. the same over golden v3's formats slice (PDF, HTML, DOCX, ODT, EPUB: the files
   ``make eval`` measures retrieval on) against its text views saved as ``.txt``;
6. the sandbox's start-up per file (issue 45, ADR 0018): every extraction now runs in a
   child, where a page under 256 KiB was parsed in the calling process before; the small
   pages of ``tests/extract/fixtures/html`` extracted in process, through the fork
   server and forked from the caller, median per file, and the two sandboxes again with
   :data:`BALLAST_MIB` more resident in the caller (a fork copies the page tables of
   what its parent holds).

A missing document, tool or library prints ``not measured: <why>`` for its row.

    python bench/bench_extract.py                  # everything, 3 rounds
    python bench/bench_extract.py --repeat 1 --pdfs R-data.pdf --html-pages 10 --no-index
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from common import format_ratio, load_average, machine, ratio, write_result
from extract_measure import Fidelity, index_slices, run_round_robin, sample_quotes, throughput
from extract_peers import (
    HTML_EXTRACTORS,
    PDF_DOCS,
    PDF_EXTRACTORS,
    SPEED_ONLY,
    Extracted,
    chromium_inner_texts,
    chromium_version,
    find_html,
    find_pdfs,
    missing_module,
    pdftotext_pages,
    pdftotext_version,
    strip_markdown,
    tool_missing,
    versions,
)


def log(line: str) -> None:
    print(line, flush=True)


def choose(table: dict[str, tuple[str, Any]], wanted: set[str] | None,
           ) -> tuple[dict[str, Any], dict[str, str]]:
    """The extractors to run and, for those that cannot, why."""
    run, skipped = {}, {}
    for name, (module, fn) in table.items():
        if wanted is not None and name not in wanted:
            continue
        why = missing_module(module)
        if why:
            skipped[name] = why
        else:
            run[name] = fn
    return run, skipped


def measure_format(fmt: str, files: dict[str, bytes], references: dict[str, list[str]],
                   table: dict[str, tuple[str, Any]], args: argparse.Namespace,
                   ) -> dict[str, Any]:
    """Every extractor of ``table`` on ``files``: fidelity against ``references`` (pages of
    each file), quotes, throughput."""
    wanted = set(args.extractors.split(",")) if args.extractors else None
    run, skipped = choose(table, wanted)
    log(f"{fmt}: {len(files)} files, {sum(map(len, files.values())) / 1e6:.2f} MB; "
        f"extractors {', '.join(run)}")
    runs = run_round_robin(files, run, args.repeat, log)
    skipped.update(runs.failed)
    quotes = {name: sample_quotes(pages, args.quote_every) for name, pages in references.items()}
    sizes = {name: len(data) for name, data in files.items()}
    rows: dict[str, Any] = {}
    for ext, outputs in runs.outputs.items():
        if ext in runs.failed:
            continue
        row: dict[str, Any] = {"speed": throughput(runs.best_ms[ext], sizes)}
        if ext not in SPEED_ONLY:
            row.update(fidelity_of(outputs, references, quotes, fmt == "pdf"))
        rows[ext] = row
        if fmt == "html" and ext == "markitdown":
            stripped = {n: Extracted(strip_markdown(o.text)) for n, o in outputs.items()}
            rows["markitdown-stripped"] = fidelity_of(stripped, references, quotes, False)
    return {"files": sorted(files), "mb": round(sum(sizes.values()) / 1e6, 3),
            "quotes": sum(map(len, quotes.values())), "extractors": rows,
            "not_measured": skipped}


def fidelity_of(outputs: dict[str, Extracted], references: dict[str, list[str]],
                quotes: dict[str, list[str]], paged: bool) -> dict[str, Any]:
    fid = Fidelity()
    for name, got in outputs.items():
        fid.add(name, references[name], got, quotes[name])
    return fid.summary(paged)


def pdf_slice(args: argparse.Namespace, result: dict[str, Any], texts: dict[str, str],
              ) -> dict[str, Path]:
    """The PDFs measured (the PDF block of ``result``); their references go to ``texts``."""
    found, missing = find_pdfs(args.pdfs.split(","))
    why = tool_missing("pdftotext", "poppler-utils")
    if why or not found:
        result["pdf"] = {"not_measured": why or "; ".join(missing.values())}
        return {}
    try:
        references = {name: pdftotext_pages(path) for name, path in found.items()}
    except (OSError, subprocess.SubprocessError, UnicodeDecodeError) as exc:
        result["pdf"] = {"not_measured": f"pdftotext failed: {exc}"}
        return {}
    files = {name: path.read_bytes() for name, path in found.items()}
    result["pdf"] = measure_format("pdf", files, references, PDF_EXTRACTORS, args)
    result["pdf"]["documents_missing"] = missing
    result["pdf"]["reference"] = pdftotext_version()
    result["pdf"]["pages"] = sum(map(len, references.values()))
    texts.update({f"{n}.txt": "\n\n".join(p) for n, p in references.items()})
    return found


def html_slice(args: argparse.Namespace, result: dict[str, Any], texts: dict[str, str],
               ) -> dict[str, Path]:
    """The handbook pages measured (the HTML block of ``result``); Chromium's text of each
    goes to ``texts``."""
    paths, missing = find_html(args.html_pages)
    why = missing or tool_missing("chromium", "chromium; make browser")
    if why:
        result["html"] = {"not_measured": why}
        return {}
    try:
        inner = chromium_inner_texts(paths)
    except (OSError, RuntimeError, subprocess.SubprocessError) as exc:
        result["html"] = {"not_measured": f"chromium failed: {exc}"}
        return {}
    files = {p.name: p.read_bytes() for p in paths}
    references = {p.name: [inner[p]] for p in paths}
    result["html"] = measure_format("html", files, references, HTML_EXTRACTORS, args)
    result["html"]["reference"] = chromium_version() + ", document.body.innerText"
    texts.update({f"{p.name}.txt": inner[p] for p in paths})
    return {p.name: p for p in paths}


def index_block(docs: dict[str, Path], texts: dict[str, str], repeat: int) -> dict[str, Any]:
    """Index the documents' folder and the reference texts' folder, alternating."""
    if not docs:
        return {"not_measured": "no documents"}
    with tempfile.TemporaryDirectory(prefix="grk-bench-extract-") as tmp:
        formats, text = Path(tmp, "formats"), Path(tmp, "text")
        formats.mkdir()
        text.mkdir()
        for name, path in docs.items():
            shutil.copyfile(path, formats / name)
        for name, body in texts.items():
            (text / name).write_text(body, encoding="utf-8")
        return index_slices({"formats": (formats, "*.pdf,*.html"), "text": (text, "*.txt")},
                            Path(tmp, "homes"), repeat)


BALLAST_MIB = 256
SANDBOX_PAGES = Path(__file__).resolve().parents[1] / "tests" / "extract" / "fixtures" / "html"


def sandbox_block(repeat: int) -> dict[str, Any]:
    """Median ms per small page, three ways: parsed here (the path before ADR 0018), in a
    child of the fork server (``extract``) and in a child forked from this process
    (``sandbox.run_isolated``, the path off Linux), round-robin; the last two again with
    :data:`BALLAST_MIB` more resident here."""
    import statistics
    import time

    from groundkit.extract import DEFAULT_LIMITS, extract, extractor
    from groundkit.extract.sandbox import run_isolated

    pages = [p.read_bytes() for p in sorted(SANDBOX_PAGES.glob("*.html"))]
    if not pages:
        return {"not_measured": f"no pages under {SANDBOX_PAGES}"}
    html = extractor("html")
    ways = {"in_process": lambda d: html.extract(d, DEFAULT_LIMITS),
            "fork_server": lambda d: extract("html", d),
            "fork_caller": lambda d: run_isolated("html", d, DEFAULT_LIMITS)}
    extract("html", pages[0])  # the fork server started: its one-time start is not a page's

    def medians(names: list[str]) -> dict[str, float]:
        best: dict[str, list[float]] = {name: [] for name in names}
        for data in pages:
            times: dict[str, list[float]] = {name: [] for name in names}
            for _ in range(max(repeat, 5)):
                for name in names:
                    start = time.perf_counter()
                    ways[name](data)
                    times[name].append(time.perf_counter() - start)
            for name in names:
                best[name].append(min(times[name]))
        return {f"{name}_ms": round(1000 * statistics.median(b), 2) for name, b in best.items()}

    row: dict[str, Any] = {"pages": len(pages), "kb": [len(d) >> 10 for d in pages],
                           **medians(list(ways))}
    ballast = bytearray(BALLAST_MIB << 20)
    ballast[::4096] = b"\1" * len(ballast[::4096])  # resident, not just reserved
    row.update({f"{key[:-3]}_ballast_ms": value
                for key, value in medians(["fork_server", "fork_caller"]).items()})
    del ballast
    return row


def print_sandbox(row: dict[str, Any]) -> None:
    if "not_measured" in row:
        log(f"\nsandbox start-up: not measured: {row['not_measured']}")
        return
    base = row["in_process_ms"]
    log(f"\nsandbox start-up per file ({row['pages']} pages of {row['kb']} KB, median of the "
        f"best times, round-robin): in process {base} ms; fork server {row['fork_server_ms']} "
        f"ms (+{row['fork_server_ms'] - base:.2f}); forked from the caller "
        f"{row['fork_caller_ms']} ms (+{row['fork_caller_ms'] - base:.2f}); with "
        f"{BALLAST_MIB} MiB more resident in the caller: fork server "
        f"{row['fork_server_ballast_ms']} ms, forked from the caller "
        f"{row['fork_caller_ballast_ms']} ms")


GOLDEN_V3 = Path(__file__).resolve().parents[1] / "golden" / "v3"
SLICE = ("r-manuals", "gnuplot", "debian-handbook")


def golden_slice_block(repeat: int) -> dict[str, Any]:
    """``index()`` over golden v3's formats slice and over its text views as ``.txt``."""
    sys.path.insert(0, str(GOLDEN_V3.parents[1]))
    from evals.golden.corpus import read_documents

    read = read_documents(GOLDEN_V3 / "docs")
    chosen = sorted(d for d in read.extractors if d.split("/")[0] in SLICE)
    if not chosen:
        return {"not_measured": f"no formats slice under {GOLDEN_V3}"}
    with tempfile.TemporaryDirectory(prefix="grk-bench-slice-") as tmp:
        formats, text = Path(tmp, "formats"), Path(tmp, "text")
        for doc_id in chosen:
            (formats / doc_id).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(GOLDEN_V3 / "docs" / doc_id, formats / doc_id)
            (text / doc_id).parent.mkdir(parents=True, exist_ok=True)
            (text / f"{doc_id}.txt").write_text(read.texts[doc_id], encoding="utf-8")
        return index_slices({"formats": (formats, "*.pdf,*.html,*.docx,*.odt,*.epub"),
                             "text": (text, "*.txt")}, Path(tmp, "homes"), repeat)


def ratios(result: dict[str, Any]) -> None:
    """groundkit's speed over markitdown's, and its fidelity beside the best peer's."""
    for fmt in ("pdf", "html"):
        rows = result.get(fmt, {}).get("extractors", {})
        gk, md = rows.get("groundkit"), rows.get("markitdown")
        if gk and md:
            result[fmt]["speed_ratio_groundkit_over_markitdown"] = _round(ratio(
                gk["speed"]["mb_per_s"], md["speed"]["mb_per_s"]))
        for key in ("cer", "doc_cer"):
            peers = [r[key] for n, r in rows.items()
                     if not n.startswith("groundkit") and r.get(key) is not None]
            if gk and gk.get(key) is not None and peers:
                result[fmt][f"{key}_groundkit_over_best_peer"] = _round(ratio(gk[key],
                                                                              min(peers)))


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.2f}%"


def print_format(fmt: str, block: dict[str, Any]) -> None:
    if "extractors" not in block:
        log(f"{fmt}: not measured: {block.get('not_measured')}")
        return
    log(f"\n{fmt}: {len(block['files'])} files, {block['mb']} MB, {block['quotes']} quotes; "
        f"reference {block['reference']}")
    log(f"  {'extractor':<22} {'CER':>9} {'per':>9} {'CER/doc':>9} {'quotes found':>16} "
        f"{'MB/s':>8}")
    for name, row in block["extractors"].items():
        found = (f"{_pct(row['quote_share'])} ({row['quotes_found']}/{row['quotes']})"
                 if "quote_share" in row else "-")
        speed = f"{row['speed']['mb_per_s']:.3f}" if "speed" in row else "(same run)"
        log(f"  {name:<22} {_pct(row.get('cer')):>9} {row.get('cer_basis', '-'):>9} "
            f"{_pct(row.get('doc_cer')):>9} {found:>16} {speed:>8}")
    if fmt == "pdf":
        print_per_file(block["extractors"])
    for name, why in block["not_measured"].items():
        log(f"  {name:<22} not measured: {why}")
    for name, why in block.get("documents_missing", {}).items():
        log(f"  {name}: not measured: {why}")
    times = block.get("speed_ratio_groundkit_over_markitdown")
    if times is not None:
        log(f"  groundkit / markitdown MB/s: {format_ratio(times)}   (goal >= 2x: "
            f"{'met' if times >= 2 else 'NOT met'})")
    for key, label in (("cer", "CER"), ("doc_cer", "document CER")):
        value = block.get(f"{key}_groundkit_over_best_peer")
        if value is not None:
            log(f"  groundkit {label} / best peer's: {format_ratio(value)}")


def print_per_file(rows: dict[str, Any]) -> None:
    """CER (its basis) and quotes found per file, one line per extractor."""
    for name, row in rows.items():
        if "files" in row:
            cells = [f"{f} {_pct(r['page_cer'] if r['page_cer'] is not None else r['doc_cer'])}"
                     f" {r['found']}/{r['quotes']}" for f, r in row["files"].items()]
            log(f"    {name:<20} " + ", ".join(cells))


def print_index(block: dict[str, Any], what: str = "the documents vs over their reference "
                "texts (.txt)") -> None:
    if "not_measured" in block:
        log(f"\nindex: not measured: {block['not_measured']}")
        return
    log(f"\nindex() over {what}, best of {block['formats']['runs']}:")
    for label, row in block.items():
        log(f"  {label:<8} {row['files']} files, {row['mb']} MB: {row['seconds']} s, "
            f"{row['mb_per_s']} MB/s, {row['chunks']} chunks, peak RSS {row['peak_rss_mib']} "
            f"MiB (largest child {row['children_peak_rss_mib']} MiB)"
            + (f", skipped {row['skipped']}: {row['skip_reasons']}" if row["skipped"] else ""))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pdfs", default=",".join(PDF_DOCS),
                        help=f"PDFs to measure (default {','.join(PDF_DOCS)})")
    parser.add_argument("--html-pages", type=int, default=0,
                        help="handbook pages, spread over the sorted list (default 0: all)")
    parser.add_argument("--extractors", default="",
                        help="only these extractors (comma-separated names; default all)")
    parser.add_argument("--repeat", type=int, default=3,
                        help="round-robin rounds; the best time per file is kept (default 3)")
    parser.add_argument("--quote-every", type=int, default=10,
                        help="sample every N-th reference sentence as a quote (default 10)")
    parser.add_argument("--index-repeat", type=int, default=3,
                        help="index runs per folder, alternating, fastest kept (default 3)")
    parser.add_argument("--no-index", action="store_true", help="skip the index() figures")
    args = parser.parse_args()
    result: dict[str, Any] = {"machine": machine(**versions()), "args": vars(args)}
    texts: dict[str, str] = {}
    docs = pdf_slice(args, result, texts)
    docs |= html_slice(args, result, texts)
    ratios(result)
    for fmt in ("pdf", "html"):
        print_format(fmt, result[fmt])
    result["sandbox_startup"] = sandbox_block(args.repeat)
    print_sandbox(result["sandbox_startup"])
    if not args.no_index:
        log("\nindexing...")
        result["index"] = index_block(docs, texts, args.index_repeat)
        print_index(result["index"])
        result["index_golden_v3"] = golden_slice_block(args.index_repeat)
        print_index(result["index_golden_v3"], "golden v3's formats slice (28 files in five "
                    "formats) vs over its text views (.txt)")
    result["machine"]["loadavg_after"] = load_average()
    log(f"\nload average {result['machine']['loadavg_before']} -> "
        f"{result['machine']['loadavg_after']}; wrote {write_result('extract', result)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
