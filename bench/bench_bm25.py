"""BM25 engines side by side: groundkit vs bm25s (numpy, numba), rank-bm25, tantivy.

Corpus: ~1,000-character passages cut from this machine's /usr/share/doc, /usr/share/man
(gzipped pages decompressed) and the Python standard library sources, in a fixed order;
cached under ``.bench/``. Queries: 1-4 distinct words drawn (fixed seed) from random
passages. Every engine runs in its own subprocess on one thread, twice per run: once to
build and save (build MB/s, also per CPU second, peak RSS), once to load and query (RSS
once loaded, top-10 latency per raw query string, tokenisation included, wall clock and
thread CPU time). Each phase runs ``--repeat`` times (default 3), round-robin over the
engines (every engine builds, then every engine answers, then the next round), and keeps
the best speed and the largest memory, with the 1-minute load average of every run: on a
shared machine wall-clock latency includes other processes' time slices; CPU time does
not. How each engine builds, opens and searches is in ``bm25_engines.py``; timing,
percentiles and memory figures come from ``common.py``.

    python bench/bench_bm25.py                     # 100,000 passages, 1,000 queries, 3 runs
    python bench/bench_bm25.py --chunks 20000 --engines groundkit,bm25s --repeat 1
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import re
import shutil
import subprocess
import sys
import sysconfig
from functools import partial
from pathlib import Path
from typing import Any

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ[_var] = "1"

from bm25_engines import K1, TOP_K, B, available, build_engine, open_engine  # noqa: E402
from common import (  # noqa: E402
    ROOT,
    cpu_s,
    dir_mib,
    format_ratio,
    latency_summary,
    load_average,
    machine,
    peak_rss_mib,
    percentile,
    ratio,
    rss_mib,
    timed_cpu_ms,
    timed_ms,
    write_result,
)

ENGINES = ("groundkit", "bm25s", "bm25s-numba", "rank-bm25", "tantivy")
SEP = "\x1e"
_WORD = re.compile(r"[A-Za-z]{3,}")
_STOP = frozenset(
    {
        "and", "are", "but", "for", "into", "not", "such", "that", "the", "their", "then", "there",
        "these", "they", "this", "was", "will", "with",
    }
)


# -- corpus and queries ---------------------------------------------------------------

def _source_files() -> list[list[Path]]:
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    py = sorted(p for p in stdlib.rglob("*.py") if "site-packages" not in p.parts)
    man = sorted(p for p in Path("/usr/share/man").rglob("*") if p.is_file())
    doc = sorted(p for p in Path("/usr/share/doc").rglob("*") if p.is_file())
    return [doc, man, py]


def _read_text(path: Path) -> str | None:
    try:
        data = path.read_bytes()
        if path.suffix == ".gz":
            data = gzip.decompress(data)
    except (OSError, EOFError, gzip.BadGzipFile):
        return None
    if b"\0" in data[:8192]:
        return None
    return data.decode("utf-8", "replace").replace(SEP, " ")


def _passages(text: str, size: int, limit: int) -> list[str]:
    out: list[str] = []
    start = 0
    while start < len(text) and len(out) < limit:
        end = min(start + size, len(text))
        if end < len(text):
            cut = text.rfind(" ", start + size * 4 // 5, end)
            end = cut if cut > start else end
        piece = text[start:end].strip()
        if len(piece) >= size // 5:
            out.append(piece)
        start = end
    return out


def corpus_path(cache: Path, n_chunks: int, size: int) -> Path:
    return cache / f"corpus-{n_chunks}-{size}.jsonl"


def load_texts(path: str | Path) -> list[str]:
    """One JSON string per line: reading it never holds the whole file twice."""
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def make_corpus(n_chunks: int, size: int, cache: Path) -> list[str]:
    path = corpus_path(cache, n_chunks, size)
    if path.exists():
        return load_texts(path)
    chunks: list[str] = []
    sources = [iter(files) for files in _source_files()]
    while len(chunks) < n_chunks and sources:
        for it in list(sources):
            path_i = next(it, None)
            if path_i is None:
                sources.remove(it)
                continue
            text = _read_text(path_i)
            if text:
                chunks.extend(_passages(text, size, limit=200))
    chunks = chunks[:n_chunks]
    cache.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.writelines(json.dumps(c) + "\n" for c in chunks)
    return chunks


def make_queries(chunks: list[str], n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    queries: list[str] = []
    while len(queries) < n:
        words = sorted({w.lower() for w in _WORD.findall(rng.choice(chunks))} - _STOP)
        if words:
            queries.append(" ".join(rng.sample(words, min(len(words), rng.randint(1, 4)))))
    return queries


# -- worker (one engine, one phase, in its own subprocess) -----------------------------

def worker(args: argparse.Namespace) -> dict[str, Any]:
    out = Path(args.index_dir)
    result: dict[str, Any] = {"engine": args.worker, "phase": args.phase,
                              "load_avg_1m": load_average()[0]}
    if args.phase == "build":
        texts = load_texts(args.corpus)
        base = rss_mib()
        shutil.rmtree(out, ignore_errors=True)
        mb = sum(len(t.encode("utf-8")) for t in texts) / 1e6
        cpu0 = cpu_s()
        ms, _ = timed_ms(lambda: build_engine(args.worker, texts, out))
        seconds, cpu_used = ms / 1e3, cpu_s() - cpu0
        result.update(build_s=seconds, build_mb_s=mb / seconds, build_cpu_s=cpu_used,
                      build_mb_cpu_s=mb / cpu_used, corpus_mb=mb, peak_rss_mib=peak_rss_mib(),
                      peak_over_corpus_mib=peak_rss_mib() - base, disk_mib=dir_mib(out))
        return result
    queries = json.loads(Path(args.queries_path).read_text())[: args.n_queries]
    texts = load_texts(args.corpus) if args.worker == "rank-bm25" else []
    before = rss_mib()
    ms, search = timed_ms(lambda: open_engine(args.worker, out, texts))
    result.update(load_s=ms / 1e3, rss_loaded_mib=rss_mib(),
                  loaded_over_base_mib=rss_mib() - before)
    for q in queries[:20]:
        search(q)
    latencies: list[float] = []
    cpu: list[float] = []
    hits = 0
    for q in queries:
        ms, cpu_ms, res = timed_cpu_ms(partial(search, q))
        latencies.append(ms)
        cpu.append(cpu_ms)
        hits += len(res) > 0
    wall = latency_summary(latencies, digits=None)
    result.update(n_queries=len(queries), p50_ms=wall["p50_ms"], p99_ms=wall["p99_ms"],
                  mean_ms=wall["mean_ms"], p50_cpu_ms=percentile(cpu, 50),
                  p99_cpu_ms=percentile(cpu, 99), rss_after_queries_mib=rss_mib(),
                  queries_with_hits=hits)
    return result


# -- orchestration ----------------------------------------------------------------------

def _run_worker(engine: str, phase: str, args: argparse.Namespace, paths: dict[str, Path],
                n_queries: int) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--worker", engine, "--phase", phase,
           "--corpus", str(paths["corpus"]), "--query-file", str(paths["queries"]),
           "--index-dir", str(paths["indexes"] / engine), "--queries", str(n_queries)]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=args.timeout)
    if proc.returncode != 0:
        return {"engine": engine, "phase": phase, "error": proc.stderr.strip()[-2000:]}
    return json.loads(proc.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


COLUMNS = [
    ("build_mb_s", "build MB/s", "{:.1f}"), ("build_mb_cpu_s", "build MB per CPU s", "{:.1f}"),
    ("peak_rss_mib", "build peak RSS MiB", "{:.0f}"),
    ("peak_over_corpus_mib", "build peak - corpus MiB", "{:.0f}"),
    ("disk_mib", "disk MiB", "{:.1f}"), ("rss_loaded_mib", "loaded RSS MiB", "{:.0f}"),
    ("loaded_over_base_mib", "loaded - base MiB", "{:.0f}"),
    ("rss_after_queries_mib", "RSS after queries MiB", "{:.0f}"),
    ("load_s", "load s", "{:.2f}"), ("p50_ms", "p50 ms", "{:.4f}"), ("p99_ms", "p99 ms", "{:.4f}"),
    ("mean_ms", "mean ms", "{:.4f}"), ("p50_cpu_ms", "p50 CPU ms", "{:.4f}"),
    ("p99_cpu_ms", "p99 CPU ms", "{:.4f}"), ("n_queries", "queries", "{}"),
]


def print_table(rows: dict[str, dict[str, Any]]) -> None:
    engines = list(rows)
    width = max(len(c[1]) for c in COLUMNS) + 2
    print("".ljust(width) + "".join(e.rjust(14) for e in engines))
    for key, label, fmt in COLUMNS:
        cells = [fmt.format(rows[e][key]) if rows[e].get(key) is not None else "-"
                 for e in engines]
        print(label.ljust(width) + "".join(c.rjust(14) for c in cells))
    for ref_name in ("bm25s", "bm25s-numba", "tantivy"):
        _print_ratios(rows, ref_name)


def _print_ratios(rows: dict[str, dict[str, Any]], ref_name: str) -> None:
    ref = rows.get(ref_name, {})
    if not ref:
        return
    print(f"\nratios vs {ref_name} (>1 = the engine better):")
    for e in rows:
        if e == ref_name:
            continue
        r = rows[e]
        ratios = {
            "query p50 speed-up": ratio(ref.get("p50_ms"), r.get("p50_ms")),
            "query p99 speed-up": ratio(ref.get("p99_ms"), r.get("p99_ms")),
            "query mean speed-up": ratio(ref.get("mean_ms"), r.get("mean_ms")),
            "build speed": ratio(r.get("build_mb_s"), ref.get("build_mb_s")),
            "build peak RSS smaller": ratio(ref.get("peak_rss_mib"), r.get("peak_rss_mib")),
            "disk smaller": ratio(ref.get("disk_mib"), r.get("disk_mib")),
            "loaded RSS smaller": ratio(ref.get("rss_loaded_mib"), r.get("rss_loaded_mib")),
        }
        r[f"ratios_vs_{ref_name}"] = ratios
        print(f"  {e:12s} " + ", ".join(f"{k} {format_ratio(v)}" for k, v in ratios.items() if v))


_BEST = {"build_s": min, "build_mb_s": max, "build_cpu_s": min, "build_mb_cpu_s": max,
         "load_s": min, "p50_ms": min, "p99_ms": min, "mean_ms": min, "p50_cpu_ms": min,
         "p99_cpu_ms": min}
"""Speed figures keep the best run; memory figures keep the largest (the conservative one)."""


def best_of(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """One row from repeated runs of a phase: best speed, largest memory, every load average."""
    out = dict(runs[-1])
    for key in out:
        values = [r[key] for r in runs if isinstance(r.get(key), int | float)]
        if key in _BEST and values:
            out[key] = _BEST[key](values)
        elif key.endswith("_mib") and values:
            out[key] = max(values)
    phase = runs[-1].get("phase", "")
    out[f"{phase}_load_avg_1m"] = [r.get("load_avg_1m") for r in runs]
    out.pop("load_avg_1m", None)
    out[f"{phase}_runs"] = len(runs)
    return out


GOALS = [
    ("build MB/s >= 20 (one core)", "build_mb_s", lambda v, _: v >= 20),
    ("build MB/s >= tantivy (stretch)", "build_mb_s",
     lambda v, refs: refs["tantivy"].get("build_mb_s") is not None
     and v >= refs["tantivy"]["build_mb_s"]),
    ("build peak RSS <= 450 MiB (corpus included)", "peak_rss_mib", lambda v, _: v <= 450),
    ("query p50 <= 0.05 ms", "p50_ms", lambda v, _: v <= 0.05),
    ("query p50 <= bm25s+numba p50", "p50_ms",
     lambda v, refs: refs["bm25s-numba"].get("p50_ms") is not None
     and v <= refs["bm25s-numba"]["p50_ms"]),
    ("query p99 <= bm25s+numba p99", "p99_ms",
     lambda v, refs: refs["bm25s-numba"].get("p99_ms") is not None
     and v <= refs["bm25s-numba"]["p99_ms"]),
]


def check_goals(rows: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """groundkit's figures against its goals (ADR-0003), printed and returned."""
    ours = rows.get("groundkit")
    if not ours:
        return {}
    refs = {name: rows.get(name, {}) for name in ("bm25s-numba", "tantivy")}
    print("\ngroundkit goals:")
    out = {}
    for label, key, test in GOALS:
        value = ours.get(key)
        met = value is not None and bool(test(value, refs))
        out[label] = {"value": value, "met": met}
        shown = value if value is None else round(value, 4)
        print(f"  {'met' if met else 'NOT met':8s} {label}: {shown}")
    return out


def corpus_options(parser: argparse.ArgumentParser) -> None:
    """The synthetic corpus and query options (shared with bench_gate.py)."""
    parser.add_argument("--chunks", type=int, default=100_000, help="passages (default 100000)")
    parser.add_argument("--chunk-chars", type=int, default=1000, help="passage size")
    parser.add_argument("--queries", dest="n_queries", type=int, default=1000)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    corpus_options(parser)
    parser.add_argument("--slow-queries", type=int, default=50,
                        help="queries for rank-bm25, which scans every document per term")
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--engines", default=",".join(ENGINES), help="comma-separated")
    parser.add_argument("--cache", type=Path, default=ROOT / ".bench")
    parser.add_argument("--out", type=Path, default=None, help="JSON (default .bench/bm25.json)")
    parser.add_argument("--timeout", type=int, default=3600)
    parser.add_argument("--repeat", type=int, default=3,
                        help="runs per engine and phase; the best speed is kept (default 3)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--phase", help=argparse.SUPPRESS)
    parser.add_argument("--corpus", help=argparse.SUPPRESS)
    parser.add_argument("--index-dir", help=argparse.SUPPRESS)
    parser.add_argument("--query-file", dest="queries_path", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(args)))
        return 0
    return orchestrate(args)


def run_engines(args: argparse.Namespace, paths: dict[str, Path]) -> dict[str, dict[str, Any]]:
    """Every engine's phases, round-robin: repeat ``r`` builds every engine, then queries
    every engine, so that engines compared in one run see the same machine load."""
    engines: list[str] = []
    rows: dict[str, dict[str, Any]] = {}
    for engine in args.engines.split(","):
        missing = available(engine)
        if missing:
            rows[engine] = {"skipped": missing}
            print(f"{engine}: skipped ({missing})", file=sys.stderr)
        else:
            engines.append(engine)
    runs: dict[tuple[str, str], list[dict[str, Any]]] = {}
    failed: set[str] = set()
    for _ in range(args.repeat):
        for phase in ("build", "query"):
            for engine in [e for e in engines if e not in failed]:
                n = args.slow_queries if engine == "rank-bm25" else args.n_queries
                part = _run_worker(engine, phase, args, paths, n)
                if "error" in part:
                    print(f"{engine} {phase} failed:\n{part['error']}", file=sys.stderr)
                    part[f"{phase}_error"] = part.pop("error")
                    runs[engine, phase] = [part]
                    failed.add(engine)
                    continue
                runs.setdefault((engine, phase), []).append(part)
    for engine in engines:
        row: dict[str, Any] = {}
        for phase in ("build", "query"):
            if (engine, phase) in runs:
                row.update(best_of(runs[engine, phase]))
        rows[engine] = row
    return rows


def orchestrate(args: argparse.Namespace) -> int:
    facts = machine()
    corpus_ms, chunks = timed_ms(lambda: make_corpus(args.chunks, args.chunk_chars, args.cache))
    queries = make_queries(chunks, args.n_queries, args.seed)
    paths = {"corpus": corpus_path(args.cache, args.chunks, args.chunk_chars),
             "queries": args.cache / f"queries-{args.chunks}-{args.n_queries}-{args.seed}.json",
             "indexes": args.cache / "indexes"}
    paths["queries"].write_text(json.dumps(queries))
    mb = sum(len(c.encode("utf-8")) for c in chunks) / 1e6
    print(f"corpus: {len(chunks)} passages, {mb:.1f} MB ({corpus_ms / 1e3:.1f} s); "
          f"{len(queries)} queries, seed {args.seed}", file=sys.stderr)
    del chunks
    rows = run_engines(args, paths)
    shown = {e: r for e, r in rows.items() if "skipped" not in r}
    print_table(shown)
    goals = check_goals(shown)
    report = {"corpus": {"passages": args.chunks, "chunk_chars": args.chunk_chars, "mb": mb,
                         "queries": args.n_queries, "seed": args.seed},
              "params": {"k1": K1, "b": B, "top_k": TOP_K}, "threads": 1,
              "repeat": args.repeat, "cpus": facts["cpu_count"],
              "python": facts["python"], "engines": rows, "goals": goals}
    out = write_result("bm25", report, args.out or args.cache / "bm25.json", sort_keys=True)
    print(f"\nwritten {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
