"""End-to-end BM25 evaluation of BEIR SciFact: groundkit vs bm25s, same work, same run.

Work per engine, timed in phases: read the corpus (flat: title + newline + text)
and the 300 test queries, build the index, retrieve the top 1,000 documents
for every query, score nDCG@10 / R@100 / R@1000 with the harness's metrics.
Each engine runs in its own fresh process (cold token caches), ``--repeat``
times, interleaved; the figures are medians. Engines:

* ``groundkit``: ``BM25Index.build_from_texts`` + ``search`` (its analyzer:
  Lucene English, Porter; k1=0.9 b=0.4, Lucene norms): the engine alone.
* ``groundkit-collection``: the product path ``python -m evals.external`` takes:
  one file per document (phase ``files``), ``grk index`` (store, chunks, derived
  index), then ``Collection.bm25()`` searches; from an empty folder every time.
  More work than bm25s does (files, a persistent store, verifiable spans).
* ``bm25s``: ``bm25s.tokenize`` (English stopwords, PyStemmer English) +
  ``BM25(method="lucene", k1=0.9, b=0.4)`` + ``retrieve`` (numpy backend).

    python bench/bench_external.py                 # 5 interleaved rounds
    python bench/bench_external.py --repeat 1 --engines groundkit,bm25s
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ[_var] = "1"

from common import (  # noqa: E402
    ROOT,
    Stopwatch,
    format_ratio,
    load_average,
    machine,
    peak_rss_mib,
    write_result,
)

sys.path.insert(0, str(ROOT))
ENGINES = ("groundkit", "groundkit-collection", "bm25s")
DEPTH = 1000
MEASURES = ("nDCG@10", "R@100", "R@1000")
PHASES = ("load", "files", "index", "search", "metrics")


def load_scifact(data: Path) -> tuple[list[str], list[str], dict[str, str],
                                        Mapping[str, Mapping[str, int]]]:
    """Doc ids, flat texts, test queries and qrels: the harness's BEIR reader, files verified."""
    from evals.external.beir import read_beir
    from evals.external.checksums import verified
    from evals.external.dataset import join_text

    for rel in ("corpus.jsonl.gz", "queries.jsonl", "qrels/test.tsv"):
        verified(f"beir-scifact/{rel}", data)
    dataset = read_beir(data / "beir-scifact", split="test", name="scifact")
    ids = [doc.doc_id for doc in dataset.docs]
    texts = [join_text(doc, "flat") for doc in dataset.docs]
    return ids, texts, dict(dataset.queries), dataset.qrels


def run_groundkit(ids: list[str], texts: list[str], queries: dict[str, str],
                  times: dict[str, float]) -> dict[str, dict[str, float]]:
    from groundkit.retrieval.bm25 import BM25Index

    with Stopwatch() as sw:
        index = BM25Index.build_from_texts(texts)
    times["index"] = sw.s
    with Stopwatch() as sw:
        run = {q: {ids[d]: s for d, s in index.search(text, DEPTH)}
               for q, text in queries.items()}
    times["search"] = sw.s
    return run


def run_collection(ids: list[str], texts: list[str], queries: dict[str, str],
                   times: dict[str, float]) -> dict[str, dict[str, float]]:
    from groundkit.collection import Collection, IndexConfig, index
    from groundkit.text.chunking import ChunkerConfig

    with tempfile.TemporaryDirectory(prefix="bench-external-") as tmp:
        with Stopwatch() as sw:
            docs = Path(tmp) / "docs"
            docs.mkdir()
            for doc_id, text in zip(ids, texts, strict=True):
                (docs / f"{doc_id}.txt").write_bytes(text.encode("utf-8"))
        times["files"] = sw.s
        with Stopwatch() as sw:
            config = IndexConfig(roots=(str(docs),), include=("*.txt",),
                                 chunker=ChunkerConfig(target=20_000, overlap=0, max_factor=4.0))
            index("scifact", config, home=Path(tmp) / "home")
        times["index"] = sw.s
        with Stopwatch() as sw, Collection.open("scifact", Path(tmp) / "home") as coll:
            bm25 = coll.snapshot.bm25()
            doc_of = [c.doc_id[:-4] for c in coll.chunks()]
            run = {q: {doc_of[p]: s for p, s in bm25.search(text, DEPTH)}
                   for q, text in queries.items()}
        times["search"] = sw.s
    return run


def run_bm25s(ids: list[str], texts: list[str], queries: dict[str, str],
              times: dict[str, float]) -> dict[str, dict[str, float]]:
    import bm25s
    import Stemmer

    stemmer = Stemmer.Stemmer("english")
    with Stopwatch() as sw:
        tokens = bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False)
        retriever = bm25s.BM25(method="lucene", k1=0.9, b=0.4)
        retriever.index(tokens, show_progress=False)
    times["index"] = sw.s
    with Stopwatch() as sw:
        qids = list(queries)
        q_tokens = bm25s.tokenize([queries[q] for q in qids], stopwords="en", stemmer=stemmer,
                                  show_progress=False)
        docs, scores = retriever.retrieve(q_tokens, k=DEPTH, show_progress=False, n_threads=1)
        run = {q: {ids[d]: float(s) for d, s in zip(docs[i], scores[i], strict=True) if s > 0}
               for i, q in enumerate(qids)}
    times["search"] = sw.s
    return run


def worker(engine: str, data: Path) -> dict[str, Any]:
    from evals.score import metrics

    times: dict[str, float] = {"files": 0.0}
    with Stopwatch() as sw:
        ids, texts, queries, qrels = load_scifact(data)
    times["load"] = sw.s
    runner = {"groundkit": run_groundkit, "groundkit-collection": run_collection,
              "bm25s": run_bm25s}[engine]
    run = runner(ids, texts, queries, times)
    with Stopwatch() as sw:
        scores = metrics.aggregate(metrics.per_query(qrels, run, MEASURES))
    times["metrics"] = sw.s
    times["total"] = sum(times[p] for p in PHASES)
    return {"engine": engine, "times_s": times, "metrics": scores, "peak_rss_mib": peak_rss_mib(),
            "queries": len(queries), "docs": len(ids)}


def _once(engine: str, data: Path) -> dict[str, Any]:
    done = subprocess.run([sys.executable, __file__, "--worker", engine, "--data", str(data)],
                          capture_output=True, text=True, cwd=ROOT, check=False)
    if done.returncode:
        raise SystemExit(f"{engine} failed:\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def measure(engines: list[str], data: Path, repeat: int) -> dict[str, dict[str, Any]]:
    """Interleaved runs (engine order rotates each round), so load on the machine hits all."""
    runs: dict[str, list[dict[str, Any]]] = {e: [] for e in engines}
    for round_ in range(repeat):
        for engine in engines[round_ % len(engines):] + engines[:round_ % len(engines)]:
            runs[engine].append(_once(engine, data))
    out = {}
    for engine, rs in runs.items():
        median = {k: statistics.median(r["times_s"][k] for r in rs) for k in rs[0]["times_s"]}
        out[engine] = {**rs[0], "times_s": median, "repeats": repeat,
                       "totals_s": [r["times_s"]["total"] for r in rs],
                       "peak_rss_mib": max(r["peak_rss_mib"] for r in rs)}
    return out


def main() -> int:
    from evals.external.checksums import data_dir

    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=None, help="test-collection mirror (GROUNDKIT_DATA)")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--engines", default=",".join(ENGINES))
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    data = data_dir(args.data)
    if args.worker:
        print(json.dumps(worker(args.worker, data)))
        return 0
    facts = machine()
    load_before = facts["loadavg_before"]
    results = measure(args.engines.split(","), data, args.repeat)
    load_after = load_average()
    print(f"BEIR SciFact test: {results[next(iter(results))]['docs']} docs, "
          f"{results[next(iter(results))]['queries']} queries, top {DEPTH}; medians of "
          f"{args.repeat} fresh processes; load average {load_before[0]:.1f} -> "
          f"{load_after[0]:.1f} on {facts['cpu_count']} CPUs")
    print(f"{'engine':<22}" + "".join(f"{p:>9}" for p in (*PHASES, "total")) +
          f"{'peak MiB':>10}{'nDCG@10':>9}{'R@100':>8}")
    for e, r in results.items():
        t = r["times_s"]
        print(f"{e:<22}" + "".join(f"{t[p]:>8.2f}s" for p in (*PHASES, "total")) +
              f"{r['peak_rss_mib']:>10.0f}{r['metrics']['nDCG@10']:>9.4f}"
              f"{r['metrics']['R@100']:>8.4f}")
    ratios = {}
    if "bm25s" in results:
        base = results["bm25s"]["times_s"]["total"]
        for e in results:
            if e != "bm25s":
                ratios[f"{e}/bm25s total"] = results[e]["times_s"]["total"] / base
                print(f"{e} / bm25s (total time): {format_ratio(ratios[f'{e}/bm25s total'])}")
    out = write_result("external", {"dataset": "beir-scifact/test", "depth": DEPTH,
                                    "engines": results, "ratios": ratios,
                                    "cpus": facts["cpu_count"],
                                    "load_average": [load_before[0], load_after[0]]},
                       sort_keys=True)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
