"""``make fuzz``: a seeded mutation fuzz campaign over every extractor (issue 28).

Each extractor (PDF, HTML, DOCX, ODT, EPUB) gets ``--n`` inputs: its real seed files
(``tests/extract/fixtures``; for HTML also a spread of the Debian Administrator's
Handbook's pages when ``debian-handbook`` is installed) first, as they are, then
mutations of them (``fuzz_mutate``, ``fuzz_zip``, ``fuzz_pdf``). Input ``i`` of format
``f`` is made by ``random.Random(f"{seed}/{f}/{i}")`` alone, so ``--replay f:i`` makes
it again, byte for byte.

The seeds include issue 45's hostile inputs (:mod:`groundkit.testing.hostile`: zip
members that lie about their size in deflate, bzip2 and LZMA, a quadratic HTML page and
EPUB, a PDF with a 100,000-deep array and one with a string past PDFium's limit), so
their mutations are fuzzed too.

Each input runs as the indexer runs a file, ``for_file`` then ``extract`` (every
extraction in the extractor's sandbox, as in production), inside a child forked for it
(:func:`groundkit.extract.sandbox.isolate`): a crash of lexbor or expat kills that
child, not the campaign, and is counted. Two more campaigns (:data:`PATHS`) take the
inputs of every format, in turn, through the other paths a file's bytes take:

- ``sniff``: ``for_file`` alone, the one parse done in the calling process, in a child
  of :data:`SNIFF_MEMORY` and :data:`SNIFF_TIMEOUT_S` (past either: a failure);
- ``verify``: re-extraction for verification (``reread.as_indexed`` with the identity
  of the seed's format), as ``grk fetch`` and the MCP ``fetch_chunk`` run it.

Outcomes:

- ``view`` / ``empty view``: a :class:`TextView` that passes ``fuzz_check.check_view``
  (every 20th input is extracted twice and must give the same view);
- ``refused``: an ``ExtractError`` with a one-line reason, counted by reason;
- ``contained``: the sandbox stopped the extractor (it crashed, or ran past
  ``--timeout`` seconds or its memory limit): a skipped file, as designed, but listed
  and saved, since each is a parser's bug or a slow path;
- failures, each one a bug in groundkit: ``exception`` (any other exception, with its
  traceback; the sandbox's "extractor failed"), ``crash`` (the input's own child killed
  by a signal or gone without a result: an in-process parser crashed), ``hang`` (that
  child still running ten seconds past ``--timeout``, or past twice that for an input
  extracted twice), ``memory`` (past 4 GiB of new
  address space outside the sandbox), ``invariant`` (a broken view, or a reason that is
  not one line) and ``nondeterministic``.

Writes ``.bench/fuzz.json`` and each failing input under ``.bench/fuzz-failures/`` (with
its traceback or reason); exits 1 when anything failed.

Why a seeded pure-Python mutator, not atheris: atheris 3.0.0 has a wheel for this
Python, but its coverage guidance sees only Python bytecode (PDFium, lexbor and expat,
where the risk is, are uninstrumented native code), libFuzzer runs until it is stopped
rather than for a stated number of inputs, its first crash ends the run, and it would be
a new dependency. The mutator here is deterministic, knows each format's structure, and
runs a stated N.
"""

from __future__ import annotations

import argparse
import importlib
import multiprocessing
import os
import random
import re
import shutil
import sys
import time
import traceback
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

from common import BENCH_DIR, ROOT, load_average, machine, write_result
from fuzz_check import check_view, same_view
from fuzz_mutate import HTML_OPS, Corpus, Entry, mutate
from fuzz_pdf import PDF_OPS
from fuzz_zip import RAW_ZIP_OPS, ZIP_OPS

from groundkit.extract import ExtractError, Limits, extract, extractor, for_file, identity_of
from groundkit.extract.reread import as_indexed
from groundkit.extract.sandbox import isolate
from groundkit.testing import hostile

FORMATS = ("pdf", "html", "docx", "odt", "epub")
PATHS = ("sniff", "verify")
TARGETS = (*FORMATS, *PATHS)
SNIFF_MEMORY = 64 << 20
"""New address space the sniff of one input may use (it reads at most a zip's directory
and 128 bytes of one member: a sniff that inflates a member fails here)."""
SNIFF_TIMEOUT_S = 5.0
FIXTURES = ROOT / "tests" / "extract" / "fixtures"
HANDBOOK = Path("/usr/share/doc/debian-handbook/html")
HANDBOOK_PAGES = 60
STRUCTURAL: dict[str, tuple[Entry, ...]] = {
    "pdf": PDF_OPS, "html": HTML_OPS, "docx": ZIP_OPS, "odt": ZIP_OPS, "epub": ZIP_OPS}
RAW: dict[str, tuple[Entry, ...]] = {"docx": RAW_ZIP_OPS, "odt": RAW_ZIP_OPS, "epub": RAW_ZIP_OPS}
BYTE_SHARE = {"docx": 0.35, "odt": 0.35, "epub": 0.35}
"""Byte edits of a packed container mostly end at the zip's central directory: fewer of
them, so that most inputs reach the members' XML."""
FAILURES = ("exception", "crash", "hang", "memory", "invariant", "nondeterministic")
TWICE_EVERY = 20
MEMORY = 4 << 30
FAILED_DIR = BENCH_DIR / "fuzz-failures"
CORPUS = Corpus({})
"""Set before the workers fork; they inherit it."""


def load_corpus() -> Corpus:
    def files(folder: str, suffix: str) -> list[Path]:
        return sorted((FIXTURES / folder).glob(f"*.{suffix}"))

    pages = sorted(HANDBOOK.glob("*/*.html"))
    spread = pages[::max(1, len(pages) // HANDBOOK_PAGES)][:HANDBOOK_PAGES]
    found = {"pdf": files("pdf", "pdf"), "html": files("html", "html") + spread,
             **{fmt: files("office", fmt) for fmt in ("docx", "odt", "epub")}}
    return Corpus({fmt: tuple((p.name, p.read_bytes()) for p in paths) + HOSTILE.get(fmt, ())
                   for fmt, paths in found.items()})


def hostile_seeds() -> dict[str, tuple[tuple[str, bytes], ...]]:
    """Issue 45's hostile inputs, by the format their name claims."""
    bombs = [(f"bomb-{name}.epub", hostile.mimetype_bomb(mib, method))
             for name, mib, method in (("deflate", 256, hostile.DEFLATED),
                                       ("bzip2", 16, hostile.BZIP2), ("lzma", 16, hostile.LZMA))]
    return {"html": (("quadratic.html", hostile.quadratic_html()),),
            "epub": (("quadratic.epub", hostile.quadratic_epub()), *bombs),
            "odt": (("bomb-deflate.odt", hostile.mimetype_bomb(256, hostile.DEFLATED)),),
            "pdf": (("deep-array.pdf", hostile.deep_array_pdf()),
                    ("long-string.pdf", hostile.long_string_pdf(40_000)))}


HOSTILE: dict[str, tuple[tuple[str, bytes], ...]] = {}
"""Filled by :func:`main` (building them takes a second) before the workers fork."""


def preload(formats: list[str]) -> dict[str, str]:
    """Import every extractor and its library, and start the sandbox's fork server, before
    the workers fork (they all run the same code, loaded once); returns their
    identities."""
    for fmt in formats:
        importlib.import_module(extractor(fmt).library)
    importlib.import_module("selectolax.lexbor")
    importlib.import_module("defusedxml.ElementTree")
    extract("html", b"<p>x</p>")  # the fork server, started here, is shared by every fork
    return {fmt: identity_of(fmt) for fmt in formats}


def base_format(target: str, index: int) -> tuple[str, int]:
    """The format whose inputs input ``index`` of ``target`` takes, and its index there:
    a path campaign takes every format's in turn."""
    if target in PATHS:
        return FORMATS[index % len(FORMATS)], index // len(FORMATS)
    return target, index


def make_input(corpus: Corpus, seed: int, target: str, index: int,
               ) -> tuple[str, bytes, list[str]]:
    """Input ``index`` of ``target``: its file name (which ``for_file`` reads), its bytes
    and the operators applied."""
    fmt, index = base_format(target, index)
    group = corpus.seeds[fmt]  # seeds as they are first, then mutations (larger seeds more)
    if index < len(group):
        return group[index][0], group[index][1], ["seed"]
    salt = f"{target}/" if target in PATHS else ""
    rng = random.Random(f"{seed}/{salt}{fmt}/{index}")
    name, data = rng.choices(group, weights=[len(d) ** 0.5 for _, d in group])[0]
    data, ops = mutate(rng, data, replace(corpus, fmt=fmt), STRUCTURAL[fmt], RAW.get(fmt, ()),
                       BYTE_SHARE.get(fmt, 1.0))
    return name, data, ops


def attempt(relpath: str, data: bytes, limits: Limits, twice: bool,
            path: tuple[str, str] = ("", "")) -> tuple[str, str, str, str]:
    """``(outcome, kind or reason, format extracted as, traceback)`` of one input, taken
    through ``path``: ``("", "")`` as the indexer reads a file, ``("sniff", _)`` the
    format sniff alone, ``("verify", format)`` re-extraction as that format was indexed."""
    name: str | None = None
    try:
        if path[0] == "verify":
            name = path[1]
            view = as_indexed(relpath, data, identity_of(name), limits)
            problem = check_view(name, data, view)
            return ("invariant", problem, name, "") if problem else ("view", "view", name, "")
        name = for_file(relpath, data)
        if path[0] == "sniff" or name is None:
            return "view", "view" if path[0] else "plain text", name or "", ""
        view = extract(name, data, limits)
        problem = check_view(name, data, view)
        if problem is None and twice and not same_view(view, extract(name, data, limits)):
            return "nondeterministic", "a second extraction gave another view", name, ""
    except ExtractError as exc:
        return "refused", str(exc), name or "", ""
    except MemoryError:
        return "memory", "MemoryError", name or "", traceback.format_exc()
    except Exception as exc:  # noqa: BLE001  -- any other exception is what we look for
        return "exception", f"{type(exc).__name__}: {exc}"[:300], name or "", \
            traceback.format_exc()
    if problem is not None:
        return "invariant", problem, name, ""
    return "view", "view" if view.text else "empty view", name, ""


_INNER = (("extractor failed", "exception"), ("made a bad segment", "invariant"))
"""Reasons that are bugs however they arrive: from the sandbox, or TextView's check."""
_CONTAINED = ("extractor crashed", "extraction timed out", "extraction ran out of memory")
"""The sandbox's limits at work (a skipped file, as designed): counted and kept apart."""
_OUTER = (("timed out", "hang"), ("ran out of memory", "memory"))


def classify(outcome: str, kind: str) -> tuple[str, str]:
    """A refusal's reason turned into a failure where it names one, into ``contained``
    where the sandbox stopped the extractor, else into a reason kind (numbers, quoted
    names and parentheses folded: ``not valid utf-8``)."""
    if outcome != "refused":
        return outcome, kind
    if not kind.strip() or "\n" in kind:
        return "invariant", f"reason is not one line: {kind[:200]!r}"
    for prefix, failure in _INNER:
        if prefix in kind:
            return failure, kind
    if kind.startswith(_CONTAINED):
        return "contained", kind
    folded = re.sub(r": line \d+, column \d+|\s*\([^()]*\)", "", kind)
    folded = re.sub(r"'[^']*'|\"[^\"]*\"", "'…'", folded)
    return "refused", re.sub(r"\d+", "N", folded)[:90]


def run_one(seed: int, fmt: str, index: int, timeout: float) -> dict[str, Any]:
    relpath, data, ops = make_input(CORPUS, seed, fmt, index)
    limits = Limits(timeout_s=timeout)
    twice = index % TWICE_EVERY == 0 and fmt not in PATHS
    path = (fmt, base_format(fmt, index)[0]) if fmt in PATHS else ("", "")
    child_timeout = SNIFF_TIMEOUT_S if fmt == "sniff" else (1 + twice) * timeout + 10
    start = time.perf_counter()
    try:
        outcome, kind, name, detail = isolate(
            lambda: attempt(relpath, data, limits, twice, path), timeout_s=child_timeout,
            memory_bytes=SNIFF_MEMORY if fmt == "sniff" else MEMORY)
    except ExtractError as exc:  # the fuzzer's own child: killed, hung, out of memory
        reason = str(exc)
        outcome = next((f for text, f in _OUTER if text in reason), "crash")
        kind, name, detail = f"fuzzer child: {reason}", "", ""
    seconds = time.perf_counter() - start
    outcome, kind = classify(outcome, kind)
    return {"format": fmt, "index": index, "outcome": outcome, "kind": kind, "as": name,
            "seconds": seconds, "bytes": len(data), "ops": ops, "detail": detail}


def run_chunk(task: tuple[int, str, int, int, float]) -> list[dict[str, Any]]:
    seed, fmt, start, stop, timeout = task
    return [run_one(seed, fmt, i, timeout) for i in range(start, stop)]


def campaign(args: argparse.Namespace) -> list[dict[str, Any]]:
    tasks = [(args.seed, fmt, start, min(args.n, start + 25), args.timeout)
             for start in range(0, args.n, 25) for fmt in args.formats]
    records: list[dict[str, Any]] = []
    total = args.n * len(args.formats)
    with multiprocessing.get_context("fork").Pool(args.jobs) as pool:
        for chunk in pool.imap_unordered(run_chunk, tasks):
            records.extend(chunk)
            done = len(records)
            if done * 10 // total != (done - len(chunk)) * 10 // total:
                bad = sum(r["outcome"] in FAILURES for r in records)
                print(f"  {done}/{total} inputs, {bad} failures", flush=True)
    return sorted(records, key=lambda r: (TARGETS.index(r["format"]), r["index"]))


def summarise(records: list[dict[str, Any]], fmt: str) -> dict[str, Any]:
    mine = [r for r in records if r["format"] == fmt]
    times = sorted(r["seconds"] for r in mine)
    outcomes = Counter(r["kind"] if r["outcome"] == "view" else r["outcome"] for r in mine)
    reasons = Counter(r["kind"] for r in mine if r["outcome"] == "refused")
    slowest = sorted(mine, key=lambda r: -r["seconds"])[:5]
    return {
        "inputs": len(mine), "outcomes": dict(outcomes.most_common()),
        "failures": sum(outcomes[f] for f in FAILURES),
        "refusal_reasons": dict(reasons.most_common(25)),
        "refusal_reason_kinds": len(reasons),
        "extracted_as": dict(Counter(r["as"] or "-" for r in mine).most_common()),
        "operators": dict(Counter(op for r in mine for op in r["ops"]).most_common()),
        "mean_ms": round(1000 * sum(times) / max(1, len(times)), 1),
        "p99_ms": round(1000 * times[min(len(times) - 1, int(0.99 * len(times)))], 1)
        if times else None,
        "slowest": [{"index": r["index"], "ms": round(1000 * r["seconds"], 1),
                     "bytes": r["bytes"], "ops": r["ops"], "outcome": r["outcome"],
                     "kind": r["kind"]} for r in slowest],
    }


def save_failures(records: list[dict[str, Any]], seed: int) -> list[dict[str, Any]]:
    shutil.rmtree(FAILED_DIR, ignore_errors=True)
    saved = []
    for r in records:
        if r["outcome"] not in (*FAILURES, "contained"):
            continue
        relpath, data, ops = make_input(CORPUS, seed, r["format"], r["index"])
        stem = FAILED_DIR / f"{r['format']}-{r['index']:05d}-{r['outcome']}"
        stem.parent.mkdir(parents=True, exist_ok=True)
        stem.with_suffix(Path(relpath).suffix).write_bytes(data)
        stem.with_suffix(".txt").write_text(
            f"{r['outcome']}: {r['kind']}\nseed file: {relpath}\noperators: {ops}\n"
            f"replay: .venv/bin/python bench/fuzz_extract.py --seed {seed} "
            f"--replay {r['format']}:{r['index']}\n\n{r['detail']}", encoding="utf-8")
        saved.append({k: r[k] for k in ("format", "index", "outcome", "kind", "ops")}
                     | {"file": str(stem.relative_to(ROOT)) + Path(relpath).suffix})
    return saved


def report(args: argparse.Namespace, records: list[dict[str, Any]], wall: float,
           before: dict[str, Any]) -> int:
    per_format = {fmt: summarise(records, fmt) for fmt in args.formats}
    saved = save_failures(records, args.seed)
    failed = [f for f in saved if f["outcome"] in FAILURES]
    result = {
        "seed": args.seed, "n_per_extractor": args.n, "jobs": args.jobs,
        "timeout_s": args.timeout, "inputs": len(records), "wall_s": round(wall, 1),
        "inputs_per_s": round(len(records) / wall, 1), "failures": len(failed),
        "contained": len(saved) - len(failed),
        "seeds": {fmt: [name for name, _ in CORPUS.seeds[fmt]] for fmt in args.formats
                  if fmt in CORPUS.seeds},
        "formats": per_format, "failed": failed,
        "contained_inputs": [f for f in saved if f["outcome"] == "contained"],
        "machine": before, "loadavg_after": load_average(),
    }
    path = write_result("fuzz", result)
    print(f"\nfuzz: seed {args.seed}, {args.n} inputs per extractor, {args.jobs} jobs: "
          f"{len(records)} inputs in {wall:.0f} s ({len(records) / wall:.1f}/s)")
    print(f"{'format':7} {'inputs':>6} {'view':>6} {'empty':>6} {'refused':>7} {'contained':>9} "
          f"{'failed':>6} {'mean ms':>8} {'p99 ms':>8}  top refusal")
    for fmt, s in per_format.items():
        o = s["outcomes"]
        top = next(iter(s["refusal_reasons"]), "-")
        print(f"{fmt:7} {s['inputs']:6} {o.get('view', 0):6} {o.get('empty view', 0):6} "
              f"{o.get('refused', 0):7} {o.get('contained', 0):9} {s['failures']:6} "
              f"{s['mean_ms']:8} {s['p99_ms']:8}  {top[:40]}")
    for f in saved:
        label = "FAILED" if f in failed else "contained"
        print(f"{label} {f['format']}:{f['index']} {f['outcome']}: {f['kind'][:110]} "
              f"-> {f['file']}")
    print(f"wrote {path.relative_to(ROOT)}")
    return 1 if failed else 0


def replay(args: argparse.Namespace) -> int:
    fmt, _, index = args.replay.partition(":")
    relpath, data, ops = make_input(CORPUS, args.seed, fmt, int(index))
    print(f"{fmt}:{index} from {relpath}, {len(data)} bytes, operators {ops}")
    if args.save:
        Path(args.save).write_bytes(data)
    start = time.perf_counter()
    path = (fmt, base_format(fmt, int(index))[0]) if fmt in PATHS else ("", "")
    outcome, kind, name, detail = attempt(relpath, data, Limits(timeout_s=args.timeout),
                                          fmt not in PATHS, path)
    print(f"{classify(outcome, kind)} as {name or '-'} in {time.perf_counter() - start:.2f} s")
    print(detail, end="")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=2000, help="inputs per extractor")
    parser.add_argument("--seed", type=int, default=28)
    parser.add_argument("--formats", type=lambda s: s.split(","), default=list(TARGETS),
                        help=f"extractors and paths to fuzz (default: {','.join(TARGETS)})")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--timeout", type=float, default=20.0,
                        help="seconds an input may take (the PDF sandbox's limit)")
    parser.add_argument("--replay", help="FORMAT:INDEX: make one input again and run it here")
    parser.add_argument("--save", help="with --replay: write the input to this file")
    args = parser.parse_args()
    global CORPUS
    HOSTILE.update(hostile_seeds())
    CORPUS = load_corpus()
    before = machine(extractors=preload(list(FORMATS)))
    if args.replay:
        return replay(args)
    start = time.perf_counter()
    records = campaign(args)
    return report(args, records, time.perf_counter() - start, before)


if __name__ == "__main__":
    sys.exit(main())
