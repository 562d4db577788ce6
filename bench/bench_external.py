"""End-to-end BM25 evaluation of BEIR SciFact: groundkit vs bm25s, same work, same run.

Work per engine, timed in phases: read the corpus (flat: title + newline + text)
and the 300 test queries, build the index, retrieve the top 1,000 documents
for every query, score nDCG@10 / R@100 / R@1000 with the harness's metrics.
Each engine runs in its own fresh process (cold token caches), ``--repeat``
times, interleaved; the figures are medians. Engines:

* ``groundkit``: ``BM25Index.build_from_texts`` + ``search`` (its analyzer:
  Lucene English, Porter; k1=0.9 b=0.4, Lucene norms): the engine alone.
* ``groundkit-collection``: the import ``python -m evals run --dataset scifact``
  does, from an empty folder every time (under ``--tmp``, default ``<repo>/.cache``,
  the file system ``evals run`` materialises to): ``materialise`` (one file per document,
  the sidecar, queries and qrels; phase ``files``), ``import_collection`` (``grk
  index``: store, chunks, derived index; phase ``index``), then
  ``Collection.bm25()`` searches. More work than bm25s does (files, a persistent
  store, verifiable spans). It also times creating 1,000 empty files in the
  same file system just before (``create_probe_us``, not in the total): the
  kernel's price of a new file, which varies several-fold with what else runs on
  the machine (and for tens of seconds after thousands of files were deleted).
* ``bm25s``: ``bm25s.tokenize`` (English stopwords, PyStemmer English) +
  ``BM25(method="lucene", k1=0.9, b=0.4)`` + ``retrieve`` (numpy backend).

Ratios against bm25s: total time, and *build* (``files`` + ``index``) against
bm25s' ``index`` (tokenize + index, in memory).

    python bench/bench_external.py                 # 5 interleaved rounds
    python bench/bench_external.py --repeat 1 --engines groundkit,bm25s
    python bench/bench_external.py --tmp /tmp      # collections under /tmp instead
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

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


class Scifact(NamedTuple):
    dataset: Any
    ids: list[str]
    texts: list[str]
    queries: dict[str, str]
    qrels: Mapping[str, Mapping[str, int]]


def load_scifact(data: Path) -> Scifact:
    """The dataset, doc ids, flat texts, test queries and qrels: the harness's BEIR reader,
    files verified."""
    from evals.external.beir import read_beir
    from evals.external.checksums import verified
    from evals.external.dataset import join_text

    for rel in ("corpus.jsonl.gz", "queries.jsonl", "qrels/test.tsv"):
        verified(f"beir-scifact/{rel}", data)
    dataset = read_beir(data / "beir-scifact", split="test", name="scifact")
    ids = [doc.doc_id for doc in dataset.docs]
    texts = [join_text(doc, "flat") for doc in dataset.docs]
    return Scifact(dataset, ids, texts, dict(dataset.queries), dataset.qrels)


def run_groundkit(sf: Scifact, times: dict[str, float]) -> dict[str, dict[str, float]]:
    from groundkit.retrieval.bm25 import BM25Index

    with Stopwatch() as sw:
        index = BM25Index.build_from_texts(sf.texts)
    times["index"] = sw.s
    with Stopwatch() as sw:
        run = {q: {sf.ids[d]: s for d, s in index.search(text, DEPTH)}
               for q, text in sf.queries.items()}
    times["search"] = sw.s
    return run


def run_collection(sf: Scifact, times: dict[str, float],
                   scratch: Path) -> dict[str, dict[str, float]]:
    """``evals run --dataset scifact``'s import, into a new folder of ``scratch``:
    ``materialise`` writes the files, ``import_collection`` indexes them (``grk index``)."""
    from evals.external.materialise import import_collection, materialise
    from groundkit.collection import Collection

    root = Path(tempfile.mkdtemp(prefix="collection-", dir=scratch))  # main removes it
    times["create_probe_us"] = create_probe(root / "probe")
    with Stopwatch() as sw:
        m = materialise(sf.dataset, root / "scifact", join="flat", reuse=False)
    times["files"] = sw.s
    with Stopwatch() as sw:
        import_collection(m, "scifact", home=root / "home", reuse=False)
    times["index"] = sw.s
    with Stopwatch() as sw, Collection.open("scifact", root / "home") as coll:
        bm25 = coll.snapshot.bm25()
        doc_of = [m.files[c.doc_id] for c in coll.chunks()]
        run = {q: {doc_of[p]: s for p, s in bm25.search(text, DEPTH)}
               for q, text in sf.queries.items()}
    times["search"] = sw.s
    return run


def create_probe(folder: Path, n: int = 1000) -> float:
    """Microseconds per new empty file here, now: the kernel's share of ``files``."""
    folder.mkdir()
    with Stopwatch() as sw:
        for i in range(n):
            os.close(os.open(folder / f"{i}", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
    return sw.s / n * 1e6


def run_bm25s(sf: Scifact, times: dict[str, float]) -> dict[str, dict[str, float]]:
    import bm25s
    import Stemmer

    stemmer = Stemmer.Stemmer("english")
    with Stopwatch() as sw:
        tokens = bm25s.tokenize(sf.texts, stopwords="en", stemmer=stemmer, show_progress=False)
        retriever = bm25s.BM25(method="lucene", k1=0.9, b=0.4)
        retriever.index(tokens, show_progress=False)
    times["index"] = sw.s
    with Stopwatch() as sw:
        qids = list(sf.queries)
        q_tokens = bm25s.tokenize([sf.queries[q] for q in qids], stopwords="en", stemmer=stemmer,
                                  show_progress=False)
        docs, scores = retriever.retrieve(q_tokens, k=DEPTH, show_progress=False, n_threads=1)
        run = {q: {sf.ids[d]: float(s) for d, s in zip(docs[i], scores[i], strict=True) if s > 0}
               for i, q in enumerate(qids)}
    times["search"] = sw.s
    return run


def worker(engine: str, data: Path, scratch: Path) -> dict[str, Any]:
    from evals.score import metrics

    times: dict[str, float] = {"files": 0.0}
    with Stopwatch() as sw:
        sf = load_scifact(data)
    times["load"] = sw.s
    if engine == "groundkit-collection":
        run = run_collection(sf, times, scratch)
    else:
        run = {"groundkit": run_groundkit, "bm25s": run_bm25s}[engine](sf, times)
    with Stopwatch() as sw:
        scores = metrics.aggregate(metrics.per_query(sf.qrels, run, MEASURES))
    times["metrics"] = sw.s
    times["total"] = sum(times[p] for p in PHASES)
    times["build"] = times["files"] + times["index"]
    return {"engine": engine, "times_s": times, "metrics": scores, "peak_rss_mib": peak_rss_mib(),
            "queries": len(sf.queries), "docs": len(sf.ids)}


def _once(engine: str, data: Path, scratch: Path) -> dict[str, Any]:
    done = subprocess.run([sys.executable, __file__, "--worker", engine, "--data", str(data),
                           "--scratch", str(scratch)],
                          capture_output=True, text=True, cwd=ROOT, check=False)
    if done.returncode:
        raise SystemExit(f"{engine} failed:\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def measure(engines: list[str], data: Path, repeat: int,
            tmp: Path) -> dict[str, dict[str, Any]]:
    """Interleaved runs (engine order rotates each round), so load on the machine hits all.

    Collections are written into one scratch folder under ``tmp``, removed after the
    last round: on ext4 a new file costs several times more for tens of seconds after
    thousands were deleted near it (measured here: 67 us a file idle, about 1,000 us
    after removing 5,000), so removing each round's folder would tax the next round's
    ``files``.
    """
    runs: dict[str, list[dict[str, Any]]] = {e: [] for e in engines}
    tmp.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="bench-external-", dir=tmp))
    try:
        for round_ in range(repeat):
            for engine in engines[round_ % len(engines):] + engines[:round_ % len(engines)]:
                runs[engine].append(_once(engine, data, scratch))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    out = {}
    for engine, rs in runs.items():
        median = {k: statistics.median(r["times_s"][k] for r in rs) for k in rs[0]["times_s"]}
        out[engine] = {**rs[0], "times_s": median, "repeats": repeat,
                       "totals_s": [r["times_s"]["total"] for r in rs],
                       "peak_rss_mib": max(r["peak_rss_mib"] for r in rs)}
    return out


def _ratios(results: Mapping[str, Mapping[str, Any]]) -> dict[str, float]:
    """Total time against bm25s', and building (files + index) against bm25s' index."""
    ratios: dict[str, float] = {}
    if "bm25s" not in results:
        return ratios
    base = results["bm25s"]["times_s"]
    for e, r in results.items():
        if e == "bm25s":
            continue
        ratios[f"{e}/bm25s total"] = r["times_s"]["total"] / base["total"]
        ratios[f"{e}/bm25s build"] = r["times_s"]["build"] / base["build"]
        print(f"{e} / bm25s: total time {format_ratio(ratios[f'{e}/bm25s total'])}, "
              f"build (files + index) {format_ratio(ratios[f'{e}/bm25s build'])}")
    return ratios


def main() -> int:
    from evals.external.checksums import data_dir

    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=None, help="test-collection mirror (GROUNDKIT_DATA)")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--engines", default=",".join(ENGINES))
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--scratch", help=argparse.SUPPRESS)
    parser.add_argument("--tmp", type=Path, default=ROOT / ".cache",
                        help="where groundkit-collection writes its folders (default: "
                             "<repo>/.cache, where evals run materialises)")
    args = parser.parse_args()
    data = data_dir(args.data)
    if args.worker:
        print(json.dumps(worker(args.worker, data, Path(args.scratch))))
        return 0
    facts = machine()
    load_before = facts["loadavg_before"]
    results = measure(args.engines.split(","), data, args.repeat, args.tmp)
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
    ratios = _ratios(results)
    if "groundkit-collection" in results:
        print(f"a new empty file in groundkit-collection's folder, just before its files: "
              f"{results['groundkit-collection']['times_s']['create_probe_us']:.0f} us")
    out = write_result("external", {"dataset": "beir-scifact/test", "depth": DEPTH,
                                    "tmp": str(args.tmp),
                                    "engines": results, "ratios": ratios,
                                    "cpus": facts["cpu_count"],
                                    "load_average": [load_before[0], load_after[0]]},
                       sort_keys=True)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
