"""BM25 engines side by side: groundkit (compiled kernel, and numpy's) vs bm25s (numpy,
numba), rank-bm25, tantivy and Apache Lucene 8.8.1 (in a JVM; ``make lucene`` sets it up).

Corpus: ~1,000-character passages cut from this machine's /usr/share/doc, /usr/share/man
(gzipped pages decompressed) and the Python standard library sources, in a fixed order;
cached under ``.bench/``. Queries: 1-4 distinct words drawn (fixed seed) from random
passages. Every engine runs in its own subprocess on one thread, twice per run: once to
build and save (build MB/s, also per CPU second, peak RSS; groundkit reads the corpus as it
builds, :class:`StreamedTexts`, the reading included, unless ``--held-corpus``; the peers
build from it held as a list of strings; each row's ``build_corpus`` says which), once to
load and query (RSS once loaded, top-10 latency per raw query string, tokenisation
included, wall clock and thread CPU time). Each phase runs ``--repeat`` times (default 3),
round-robin over the engines (every engine builds, then every engine answers, then the next
round), and keeps the best speed and the largest memory, with the 1-minute load average of
every run: on a shared machine wall-clock latency includes other processes' time slices;
CPU time does not. Lucene's worker starts a JVM per phase (``bm25_engines.lucene_build``
and ``lucene_query``): JVM start-up is in no figure, and its query phase answers the
queries untimed (at least twice, at least 10,000 in all) before the timed pass to warm the
JVM (the other engines warm up on 20 queries). When Lucene cannot run here its row says
"not measured" with the reason. How each engine builds, opens and searches is in
``bm25_engines.py``; timing, percentiles and memory figures come from ``common.py``.

    python bench/bench_bm25.py                     # 100,000 passages, 1,000 queries, 3 runs
    python bench/bench_bm25.py --chunks 20000 --engines groundkit,bm25s --repeat 1
    python bench/bench_bm25.py --engines groundkit --held-corpus   # as the peers, as before
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
import time
from collections.abc import Iterator
from functools import partial
from itertools import islice
from pathlib import Path
from typing import Any

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ[_var] = "1"

from bm25_engines import (  # noqa: E402
    K1,
    TOP_K,
    B,
    available,
    build_engine,
    engine_env,
    engine_facts,
    lucene_build,
    lucene_query,
    open_engine,
)
from bm25_table import best_of, check_goals, print_table  # noqa: E402
from common import (  # noqa: E402
    ROOT,
    cpu_s,
    dir_mib,
    latency_summary,
    load_average,
    machine,
    peak_rss_mib,
    percentile,
    rss_mib,
    timed_cpu_ms,
    timed_ms,
    write_result,
)

ENGINES = ("groundkit", "groundkit-numpy", "bm25s", "bm25s-numba", "rank-bm25", "tantivy",
           "lucene")
SEP = "\x1e"
_WORD = re.compile(r"[A-Za-z]{3,}")
_STOP = frozenset({"and", "are", "but", "for", "into", "not", "such", "that", "the", "their",
                   "then", "there", "these", "they", "this", "was", "will", "with"})


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


class StreamedTexts:
    """The JSONL corpus read a block of lines at a time as a build consumes it (groundkit's
    builder takes any iterable), so that the build's peak RSS is the engine's own, not
    also the corpus held as Python strings (~1.4 GB at 10^6 passages). Reading and
    decoding happen inside the timed build; ``read_s`` says how long they took."""

    BLOCK = 4096

    def __init__(self, path: str | Path) -> None:
        self.path = path
        self.read_s = 0.0

    def __iter__(self) -> Iterator[str]:
        with open(self.path, encoding="utf-8") as f:
            while True:
                start = time.perf_counter()
                block = [json.loads(line) for line in islice(f, self.BLOCK)]
                self.read_s += time.perf_counter() - start
                if not block:
                    return
                yield from block


def corpus_mb(path: str | Path) -> float:
    """The corpus's UTF-8 size in MB, read line by line (nothing held)."""
    with open(path, encoding="utf-8") as f:
        return sum(len(json.loads(line).encode("utf-8")) for line in f) / 1e6


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
    if args.worker == "lucene":
        return {**result, **_lucene_worker(args, out)}
    if args.phase == "build":
        return {**result, **_build(args, out)}
    queries = json.loads(Path(args.queries_path).read_text())[: args.n_queries]
    texts = load_texts(args.corpus) if args.worker == "rank-bm25" else []
    before = rss_mib()
    ms, search = timed_ms(lambda: open_engine(args.worker, out, texts))
    result.update(load_s=ms / 1e3, rss_loaded_mib=rss_mib(),
                  loaded_over_base_mib=rss_mib() - before)
    result.update(engine_facts(args.worker))
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


def _build(args: argparse.Namespace, out: Path) -> dict[str, Any]:
    """The build phase's figures. groundkit streams the corpus (:class:`StreamedTexts`)
    unless ``--held-corpus``; the peers always build from it held as a list of strings.
    ``build_corpus`` says which; ``peak_over_corpus_mib`` is the peak over the RSS before
    the build (the corpus loaded, when it is held)."""
    streamed = args.worker.startswith("groundkit") and not getattr(args, "held_corpus", False)
    texts: Any = StreamedTexts(args.corpus) if streamed else load_texts(args.corpus)
    mb = corpus_mb(args.corpus) if streamed else sum(len(t.encode("utf-8")) for t in texts) / 1e6
    base = rss_mib()
    shutil.rmtree(out, ignore_errors=True)
    cpu0 = cpu_s()
    ms, _ = timed_ms(lambda: build_engine(args.worker, texts, out))
    seconds, cpu_used = ms / 1e3, cpu_s() - cpu0
    got = {"build_s": seconds, "build_mb_s": mb / seconds, "build_cpu_s": cpu_used,
           "build_mb_cpu_s": mb / cpu_used, "corpus_mb": mb, "peak_rss_mib": peak_rss_mib(),
           "peak_over_corpus_mib": peak_rss_mib() - base, "disk_mib": dir_mib(out),
           "build_corpus": "streamed" if streamed else "held"}
    if streamed:
        got["corpus_read_s"] = texts.read_s  # inside build_s
    return got


def _lucene_worker(args: argparse.Namespace, out: Path) -> dict[str, Any]:
    """Lucene's phase in a JVM this worker starts (its own figures, not this process's)."""
    if args.phase == "build":
        corpus = Path(args.corpus)
        docs = corpus.with_suffix(".lucene.txt")  # the corpus in the driver's format
        if docs.is_file() and docs.stat().st_mtime < corpus.stat().st_mtime:
            docs.unlink()  # written from an older corpus file
        return lucene_build(load_texts(corpus), out, docs)
    return lucene_query(json.loads(Path(args.queries_path).read_text())[: args.n_queries], out)


# -- orchestration ----------------------------------------------------------------------

def _run_worker(engine: str, phase: str, args: argparse.Namespace, paths: dict[str, Path],
                n_queries: int) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--worker", engine, "--phase", phase,
           "--corpus", str(paths["corpus"]), "--query-file", str(paths["queries"]),
           "--index-dir", str(paths["indexes"] / engine), "--queries", str(n_queries),
           *(["--held-corpus"] if args.held_corpus else [])]
    env = dict(os.environ, PYTHONPATH=str(ROOT), **engine_env(engine))
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=args.timeout)
    if proc.returncode != 0:
        return {"engine": engine, "phase": phase, "error": proc.stderr.strip()[-2000:]}
    return json.loads(proc.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


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
    parser.add_argument("--held-corpus", action="store_true",
                        help="groundkit builds from the corpus held as a list of strings, as "
                             "the peers do (default: streamed from the JSONL file)")
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
            rows[engine] = {"not_measured": missing}
            print(f"{engine}: not measured ({missing})", file=sys.stderr)
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
    print_table(rows)
    goals = check_goals(rows)
    report = {"corpus": {"passages": args.chunks, "chunk_chars": args.chunk_chars, "mb": mb,
                         "queries": args.n_queries, "seed": args.seed},
              "params": {"k1": K1, "b": B, "top_k": TOP_K}, "threads": 1,
              "repeat": args.repeat, "cpus": facts["cpu_count"],
              "python": facts["python"], "loadavg_before": facts["loadavg_before"],
              "loadavg_after": load_average(), "engines": rows, "goals": goals}
    out = write_result("bm25", report, args.out or args.cache / "bm25.json", sort_keys=True)
    print(f"\nwritten {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
