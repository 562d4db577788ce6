"""The BM25 engines ``bench_bm25.py`` compares: how each one builds, saves, opens, searches.

Every engine gets the same parameters (k1, b, top 10) and one thread; a worker
subprocess of ``bench_bm25.py`` calls :func:`build_engine` or :func:`open_engine`.
Lucene runs in a JVM instead (``evals/peers/java/GroundkitLucene.java``, ``bench build``
and ``bench query``), one JVM per phase started by the worker: :func:`lucene_build` and
:func:`lucene_query` turn what the driver prints into the same row figures.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from common import dir_mib, latency_summary, percentile

K1, B, TOP_K = 0.9, 0.4, 10
LUCENE_HEAP = "1g"
"""The JVM's -Xmx: the corpus as Java strings (about 100 MB at 100,000 passages), the
IndexWriter's 256 MB RAM buffer and room for the segment merge."""
LUCENE_WARM_QUERIES = 10_000
"""Untimed queries the query phase's JVM answers before its timed pass (at least two passes
over the queries): the JIT's top tier compiles a method after some thousands of calls, and
with two passes over 200 queries p50 was 3-5x the warmed figure."""
JVM_FLAGS = (f"-Xmx{LUCENE_HEAP}", "-XX:+UseSerialGC", "-XX:ActiveProcessorCount=1",
             f"-Dgroundkit.warmQueries={LUCENE_WARM_QUERIES}")
"""One thread as far as the JVM allows: the serial collector (collections run while the
program's thread waits) and a JVM that sizes itself for one CPU. The JIT compiler threads
still run beside the program's thread; their CPU time is in ``build_cpu_s``."""
LUCENE_WARM_UP = ("JVM warmed in the query phase's own JVM: the queries answered untimed "
                  "{passes} times ({queries} queries: class loading, JIT, page cache) before "
                  "the timed pass; JVM start-up is in no figure")


def _bm25s_stemmer() -> Any:
    import Stemmer

    return Stemmer.Stemmer("english")


def available(engine: str) -> str | None:
    """Why ``engine`` cannot run here (its module is missing, or for Lucene no JVM, jars or
    compiled driver), or None."""
    if engine == "lucene":
        try:
            from evals.peers import lucene
        except ImportError as exc:  # the bench run outside the repository
            return f"evals.peers.lucene cannot be imported: {exc}"
        return lucene.unavailable()
    module = {"groundkit": "numpy", "groundkit-numpy": "numpy", "bm25s": "bm25s",
              "bm25s-numba": "numba",
              "rank-bm25": "rank_bm25", "tantivy": "tantivy"}[engine]
    try:
        __import__(module)
    except ImportError:
        return f"{module} is not installed"
    return None


def engine_env(engine: str) -> dict[str, str]:
    """Environment for ``engine``'s worker: ``groundkit-numpy`` turns the compiled parts
    off (the query kernel and the build's chunk table)."""
    if engine == "groundkit-numpy":
        return {"GROUNDKIT_BM25_KERNEL": "numpy", "GROUNDKIT_BM25_BUILD": "python"}
    return {}


def engine_facts(engine: str) -> dict[str, Any]:
    """What a result row records about the engine itself (groundkit: which kernel and
    which build table)."""
    if not engine.startswith("groundkit"):
        return {}
    from groundkit.retrieval.bm25_query import compiled_kernel
    from groundkit.retrieval.bm25_tokens import compiled_table

    return {"kernel": "numpy" if compiled_kernel() is None else "compiled",
            "build_table": "python" if compiled_table() is None else "compiled"}


def build_engine(engine: str, texts: Iterable[str], out: Path) -> None:
    """Build ``engine``'s index of ``texts`` into ``out``: groundkit consumes any iterable
    once (a stream, ``bench_bm25.StreamedTexts``); the peers need a list."""
    if engine.startswith("groundkit"):
        from groundkit.retrieval.bm25 import BM25Index, BM25Params

        BM25Index.build_from_texts(texts, params=BM25Params(k1=K1, b=B)).save(out, {"bench": 1})
    elif engine.startswith("bm25s"):
        import bm25s

        tokens = bm25s.tokenize(texts, stopwords="en", stemmer=_bm25s_stemmer(),
                                show_progress=False)
        model = bm25s.BM25(k1=K1, b=B, method="lucene")
        model.index(tokens, show_progress=False)
        model.save(str(out))
    elif engine == "tantivy":
        import tantivy

        builder = tantivy.SchemaBuilder()
        builder.add_integer_field("id", stored=True)
        builder.add_text_field("body", stored=False, tokenizer_name="en_stem")
        out.mkdir(parents=True, exist_ok=True)
        index = tantivy.Index(builder.build(), path=str(out))
        writer = index.writer(heap_size=100_000_000, num_threads=1)
        for i, text in enumerate(texts):
            writer.add_document(tantivy.Document(id=i, body=text))
        writer.commit()
        writer.wait_merging_threads()
    elif engine == "rank-bm25":
        from rank_bm25 import BM25Okapi

        from groundkit.text.analysis import Analyzer

        analyzer = Analyzer()
        BM25Okapi([analyzer.analyze(t) for t in texts], k1=K1, b=B)  # in memory only
    else:
        raise SystemExit(f"no build step for {engine}")


def open_engine(engine: str, out: Path, texts: list[str]) -> Any:
    """A function ``raw query -> list of (doc, score)`` over the saved (or rebuilt) index.

    ``groundkit`` answers several-term queries with its compiled kernel when it is built,
    ``groundkit-numpy`` always with the numpy one (the same answers; ADR-0003)."""
    if engine.startswith("groundkit"):
        from groundkit.retrieval.bm25 import BM25Index

        index = BM25Index.load(out, {"bench": 1})
        return lambda q: index.search(q, TOP_K)
    if engine.startswith("bm25s"):
        import bm25s

        model = bm25s.BM25.load(str(out), show_progress=False)
        if engine == "bm25s-numba":
            model.backend = "numba"
            model.activate_numba_scorer()
        stem = _bm25s_stemmer()
        backend = "numba" if engine == "bm25s-numba" else "numpy"

        def search(q: str) -> Any:
            toks = bm25s.tokenize([q], stopwords="en", stemmer=stem, return_ids=False,
                                  show_progress=False)
            if not toks[0]:
                return []
            return model.retrieve(toks, k=TOP_K, show_progress=False, n_threads=1,
                                  backend_selection=backend)
        return search
    if engine == "tantivy":
        import tantivy

        tindex = tantivy.Index.open(str(out))
        searcher = tindex.searcher()

        def tsearch(q: str) -> Any:
            query, _errors = tindex.parse_query_lenient(q, ["body"])
            return searcher.search(query, TOP_K).hits
        return tsearch
    if engine == "rank-bm25":
        from rank_bm25 import BM25Okapi

        from groundkit.text.analysis import Analyzer

        analyzer = Analyzer()
        model = BM25Okapi([analyzer.analyze(t) for t in texts], k1=K1, b=B)
        return lambda q: model.get_top_n(analyzer.analyze(q), list(range(len(texts))), TOP_K)
    raise SystemExit(f"unknown engine {engine}")



# -- Lucene (a JVM per phase) ------------------------------------------------------------

def _lucene(args: Sequence[str]) -> tuple[dict[str, Any], float]:
    """Run the driver's ``bench`` subcommand; its JSON line and the JVM's whole wall time in
    seconds (start-up included, which no other figure is)."""
    from evals.peers import lucene

    cmd = [str(lucene.java()), *JVM_FLAGS, "-cp", lucene.classpath(), "GroundkitLucene",
           "bench", *args, repr(K1), repr(B)]
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=3600, check=False)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"lucene bench {args[0]} failed: {proc.stderr.strip()[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1]), seconds


def _lucene_facts(got: dict[str, Any]) -> dict[str, Any]:
    return {"jvm": got["jvm"], "java_version": got["java_version"], "lucene": got["lucene"],
            "jvm_flags": got["jvm_flags"], "heap_max_mib": got["heap_max_bytes"] / 2**20,
            "gc": got["gc"]}


def lucene_build(texts: Sequence[str], out: Path, docs_file: Path) -> dict[str, Any]:
    """Lucene's build phase: ``texts`` written once in the driver's format (untimed), then
    indexed into ``out`` by a JVM, timed inside it from the texts in memory to the closed
    writer (as the other engines from their texts to the saved index)."""
    from evals.peers import lucene

    mb = sum(len(t.encode("utf-8")) for t in texts) / 1e6
    if not docs_file.is_file():
        part = docs_file.with_suffix(".part")
        lucene.write_lines(part, texts)
        part.replace(docs_file)
    shutil.rmtree(out, ignore_errors=True)
    got, jvm_s = _lucene(["build", str(docs_file), str(out)])
    seconds, cpu = got["build_ms"] / 1e3, got["build_cpu_ms"] / 1e3
    peak = got["peak_rss_kb"] / 1024
    return {"build_s": seconds, "build_mb_s": mb / seconds, "build_cpu_s": cpu,
            "build_mb_cpu_s": mb / cpu, "build_thread_cpu_s": got["build_thread_cpu_ms"] / 1e3,
            "build_gc_s": got["gc_ms"] / 1e3, "corpus_mb": mb, "peak_rss_mib": peak,
            "peak_over_corpus_mib": peak - got["rss_before_kb"] / 1024,
            "disk_mib": dir_mib(out), "build_jvm_process_s": jvm_s, **_lucene_facts(got)}


def lucene_query(queries: Sequence[str], out: Path) -> dict[str, Any]:
    """Lucene's query phase: a JVM opens ``out``, warms up (:data:`LUCENE_WARM_UP`) and
    times each raw query string (analysis included) once, wall and thread CPU."""
    from evals.peers import lucene

    query_file = out.parent / f"{out.name}-queries.txt"
    lucene.write_lines(query_file, queries)
    got, jvm_s = _lucene(["query", str(query_file), str(out)])
    wall = latency_summary([us / 1e3 for us in got["query_us"]], digits=None)
    cpu = [us / 1e3 for us in got["query_cpu_us"]]
    return {"load_s": got["open_us"] / 1e6, "rss_loaded_mib": got["rss_loaded_kb"] / 1024,
            "loaded_over_base_mib": (got["rss_loaded_kb"] - got["rss_base_kb"]) / 1024,
            "n_queries": len(got["query_us"]), "p50_ms": wall["p50_ms"],
            "p99_ms": wall["p99_ms"], "mean_ms": wall["mean_ms"],
            "p50_cpu_ms": percentile(cpu, 50), "p99_cpu_ms": percentile(cpu, 99),
            "rss_after_queries_mib": got["rss_after_kb"] / 1024,
            "queries_with_hits": got["queries_with_hits"], "warm_passes": got["warm_passes"],
            "timed_pass_gc_s": got["timed_gc_ms"] / 1e3,
            "warm_queries": got["warm_queries"],
            "warm_up": LUCENE_WARM_UP.format(passes=got["warm_passes"],
                                             queries=got["warm_queries"]),
            "query_jvm_process_s": jvm_s, **_lucene_facts(got)}
