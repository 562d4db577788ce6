"""The abstention gate's cost: BM25 search with and without the gate, and calibrating it.

Two figures, each against a goal:

* **Gate overhead** (goal: the gate adds at most 5% to BM25 p50 at 100k chunks). The
  100,000 passages of ``bench_bm25.py`` (its cached corpus, same seed and queries) are
  written to text files, one blank line between passages, and indexed through
  groundkit's public API (``index()`` with ``IndexConfig`` defaults, a temporary home):
  about one chunk per passage. The collection's ``bm25`` gate is calibrated
  (``Collection.calibrate``, the code path of ``grk calibrate``) on synthetic questions:
  no-answer ones mix words of the corpus with made-up words it never contains, answerable
  ones are drawn from passages as the benchmark queries are (other seed). Then every
  query is timed through ``Collection.search`` (the peer: plain groundkit BM25, top 10) and
  ``Collection.search_or_abstain`` (gate first, then the same search when it answers),
  interleaved query by query (which goes first alternates) over ``--rounds`` passes,
  after a warm-up of both. Reported: p50/p99 of each, the ratio p50(gated)/p50(plain)
  over all queries and over the queries the gate answers (the costly case: an abstention
  skips the search), the per-query paired ratio, and where the gate's time goes (p50 of
  ``decide``, ``lexical_evidence``, ``BM25Index.search``, ``calibration.load`` and
  ``gate.decide`` each alone, in loops: warmer caches than inside a search).
  Answered queries must return exactly the plain search's hits (checked).
* **Calibration time** (goal: calibrating golden v2 takes under 10 s, bm25 mode).
  ``golden/v2/docs`` indexed as the eval harness does (``evals/golden/suite.py``:
  every file, default analyzer and BM25 parameters), then ``grk calibrate --collection C
  --questions golden/v2/questions.jsonl --mode bm25`` timed in a subprocess (interpreter
  start and imports included; the goal's figure) and the same work in this process
  (``Collection.calibrate`` on a freshly opened collection: read, compute, save).
  ``--dense`` also indexes golden v2 with the local MiniLM model and times calibrating
  ``dense`` and ``hybrid`` (reported separately; the 10 s goal is for bm25).

    python bench/bench_gate.py                       # 100,000 passages, 1,000 queries, 3 rounds
    python bench/bench_gate.py --chunks 20000 --rounds 1 --no-golden
    python bench/bench_gate.py --dense               # also dense / hybrid calibration
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from bench_bm25 import (  # also pins numeric libraries to one thread
    corpus_options,
    make_corpus,
    make_queries,
)
from common import (
    ROOT,
    Stopwatch,
    latency_summary,
    load_average,
    machine,
    percentile,
    ratio,
    samples_ms,
    timed_cpu_ms,
    write_result,
)

from groundkit.collection import Collection, IndexConfig, calibration, index
from groundkit.collection.derived import analyzer_of
from groundkit.retrieval import gate, modes
from groundkit.retrieval.bm25 import BM25Params
from groundkit.retrieval.signals import lexical_evidence
from groundkit.text.analysis import Analyzer

GOLDEN = ROOT / "golden" / "v2"
EMBED = "local:all-MiniLM-L6-v2"
PER_FILE = 100
"""Passages per file of the 100k collection."""
OVERHEAD_GOAL = 1.05
CALIBRATE_GOAL_S = 10.0
_SPACE = re.compile(r"\s+")
_WORD = re.compile(r"[A-Za-z]{3,}")
_SYLLABLES = ("ka", "zor", "vex", "qui", "mul", "dra", "fen", "tho", "rix", "bal", "nup", "yor")
_ASKS = ("how do i", "what is the", "where can i find the", "why does the", "when should i use")


# -- the 100k collection ----------------------------------------------------------------

def write_docs(passages: list[str], folder: Path) -> None:
    """The passages as text files, whitespace runs made single spaces, blank-line separated,
    so the chunker (target 1000) ends almost every chunk at a passage's end."""
    folder.mkdir(parents=True, exist_ok=True)
    for start in range(0, len(passages), PER_FILE):
        body = "\n\n".join(_SPACE.sub(" ", p).strip() for p in passages[start:start + PER_FILE])
        (folder / f"part-{start // PER_FILE:05d}.txt").write_text(body + "\n", encoding="utf-8")


def made_up_word(rng: random.Random, vocabulary: set[str]) -> str:
    while True:
        word = "".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(3, 4)))
        if word not in vocabulary:
            return word


def synthetic_questions(passages: list[str], n_no_answer: int, n_answerable: int,
                        seed: int) -> list[dict[str, str]]:
    """No-answer questions: one or two corpus words and one or two made-up words the corpus
    never holds (near misses); answerable ones: words of one passage, as the queries are."""
    rng = random.Random(seed)
    vocabulary = {w.lower() for p in passages[:: max(1, len(passages) // 2000)]
                  for w in _WORD.findall(p)}
    rows = []
    for _ in range(n_no_answer):
        words = sorted({w.lower() for w in _WORD.findall(rng.choice(passages))})
        real = rng.sample(words, min(len(words), rng.randint(1, 2)))
        fake = [made_up_word(rng, vocabulary) for _ in range(rng.randint(1, 2))]
        mixed = real + fake
        rng.shuffle(mixed)
        rows.append({"question": f"{rng.choice(_ASKS)} {' '.join(mixed)}", "kind": "no_answer"})
    rows += [{"question": q, "kind": "answerable"}
             for q in make_queries(passages, n_answerable, seed + 1)]
    return rows


def write_questions(rows: list[dict[str, str]], path: Path) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def calibrate_in_process(name: str, home: Path, questions: Path,
                         modes: tuple[str, ...] = ("bm25",)) -> tuple[float, Any]:
    """``grk calibrate``'s work in this process (``Collection.calibrate``: read the questions,
    compute each mode, check alpha, save) on a freshly opened collection, in seconds."""
    with Stopwatch() as sw, Collection.open(name, home) as coll:
        made = coll.calibrate(questions, modes=list(modes))
    return sw.s, made


def gate_overhead(args: argparse.Namespace, home: Path) -> dict[str, Any]:
    with Stopwatch() as sw:
        passages = make_corpus(args.chunks, args.chunk_chars, args.cache)
    queries = make_queries(passages, args.n_queries, args.seed)
    print(f"corpus: {len(passages)} passages ({sw.s:.1f} s); {len(queries)} queries, "
          f"seed {args.seed}", file=sys.stderr)
    docs = home.parent / "docs-100k"
    write_docs(passages, docs)
    with Stopwatch() as sw:
        report = index("gate100k", IndexConfig(roots=(str(docs),)), home=home)
    print(f"indexed {report.chunks} chunks in {sw.s:.1f} s", file=sys.stderr)
    rows = synthetic_questions(passages, args.no_answer, args.no_answer, args.seed)
    del passages
    questions = write_questions(rows, home.parent / "questions-100k.jsonl")
    calibrate_s, (made,) = calibrate_in_process("gate100k", home, questions)
    print(f"calibrated bm25 on {len(rows)} questions (n0 = {made.n0}) in {calibrate_s:.2f} s",
          file=sys.stderr)
    out: dict[str, Any] = {
        "passages": args.chunks, "chunks": report.chunks, "index_s": round(sw.s, 2),
        "queries": len(queries), "rounds": args.rounds, "top_k": 10,
        "calibration": {"questions": len(rows), "n0": made.n0, "alpha": made.alpha,
                        "seconds": round(calibrate_s, 3), "stats": dict(made.stats)}}
    with Collection.open("gate100k", home) as coll:
        out.update(measure(coll, queries, args.rounds))
    return out


def measure(coll: Collection, queries: list[str], rounds: int) -> dict[str, Any]:
    """Interleaved per-query wall (and thread CPU) times of plain and gated search."""
    plain_fn: Callable[[str], Any] = coll.search
    gated_fn: Callable[[str], Any] = coll.search_or_abstain
    for q in queries[:50]:
        plain_fn(q)
        gated_fn(q)
    wall: dict[str, list[float]] = {"plain": [], "gated": []}
    cpu: dict[str, list[float]] = {"plain": [], "gated": []}
    answered: list[bool] = []
    mismatches = 0
    for r in range(rounds):
        for i, q in enumerate(queries):
            order = ("plain", "gated") if (i + r) % 2 == 0 else ("gated", "plain")
            got: dict[str, Any] = {}
            for which in order:
                fn = plain_fn if which == "plain" else gated_fn
                ms, cpu_ms, got[which] = timed_cpu_ms(partial(fn, q))
                wall[which].append(ms)
                cpu[which].append(cpu_ms)
            decision = got["gated"].decision
            answered.append(decision.answer)
            if decision.answer and got["gated"].hits != got["plain"]:
                mismatches += 1
    n = len(answered)
    yes = [i for i in range(n) if answered[i]]
    summary = {k: latency_summary(v, digits=4) for k, v in wall.items()}
    cpu_p50 = {k: round(percentile(v, 50), 4) for k, v in cpu.items()}
    answered_p50 = ({k: round(percentile([wall[k][i] for i in yes], 50), 4) for k in wall}
                    if yes else {})
    paired = [g / p for g, p in zip(wall["gated"], wall["plain"], strict=True) if p > 0]
    out = {"plain": {**summary["plain"], "p50_cpu_ms": cpu_p50["plain"]},
           "gated": {**summary["gated"], "p50_cpu_ms": cpu_p50["gated"]},
           "answered_share": round(len(yes) / n, 4),
           "answered_p50_ms": answered_p50,
           "ratio_p50": ratio(summary["gated"]["p50_ms"], summary["plain"]["p50_ms"]),
           "ratio_p99": ratio(summary["gated"]["p99_ms"], summary["plain"]["p99_ms"]),
           "ratio_p50_answered": ratio(answered_p50.get("gated"), answered_p50.get("plain")),
           "ratio_p50_cpu": ratio(cpu_p50["gated"], cpu_p50["plain"]),
           "paired_ratio_p50": round(percentile(paired, 50), 4),
           "hit_mismatches": mismatches}
    out["breakdown_p50_ms"] = breakdown(coll, queries)
    return out


def breakdown(coll: Collection, queries: list[str]) -> dict[str, float]:
    """Where the gate's time goes: p50 of each step alone over the same queries."""
    snap = coll.snapshot
    bm25 = snap.bm25()
    stored = calibration.load(snap, "bm25")
    evidence = {q: modes.evidence(snap, "bm25", q) for q in queries}
    steps: dict[str, Callable[[str], object]] = {
        "search": coll.search,
        "decide": coll.decide,
        "lexical_evidence": partial(lexical_evidence, bm25),
        "bm25_index_search": bm25.search,
        "calibration_load": lambda _q: calibration.load(snap, "bm25"),
        "gate_decide": lambda q: gate.decide(stored, evidence[q]),
    }
    out = {}
    for name, fn in steps.items():
        times = [t for q in queries for t in samples_ms(partial(fn, q), warmup=1)]
        out[name] = round(percentile(times, 50), 4)
    return out


# -- golden v2 calibration --------------------------------------------------------------

def golden_config(embedding: str | None) -> IndexConfig:
    """As ``evals.golden.suite.golden_suite`` indexes golden docs (plus an embedding)."""
    extra: dict[str, Any] = {"analyzer": Analyzer().to_dict(), "bm25": BM25Params().to_dict()}
    if embedding:
        extra["embedding"] = {"spec": embedding, "options": {}}
    return IndexConfig(roots=(str(GOLDEN / "docs"),), include=("*",), extra=extra)


def calibrate_cli(name: str, home: Path, questions: Path, modes: tuple[str, ...],
                  timeout: int) -> tuple[float, dict[str, Any]]:
    """Wall seconds of ``grk calibrate`` in a subprocess, and its JSON output."""
    cmd = [sys.executable, "-m", "groundkit", "calibrate", "--home", str(home), "--json",
           "--collection", name, "--questions", str(questions)]
    for m in modes:
        cmd += ["--mode", m]
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
               TOKENIZERS_PARALLELISM="false")
    with Stopwatch() as sw:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout,
                              cwd=ROOT)
    if proc.returncode != 0:
        raise RuntimeError(f"grk calibrate --mode {','.join(modes)} failed "
                           f"({proc.returncode}): {proc.stderr.strip()[-2000:]}")
    return sw.s, json.loads(proc.stdout)


def golden_calibration(args: argparse.Namespace, home: Path) -> dict[str, Any]:
    questions = GOLDEN / "questions.jsonl"
    rows, _ = calibration.read_questions(questions)
    with Stopwatch() as sw:
        report = index("golden-v2", golden_config(None), home=home)
    out: dict[str, Any] = {"questions": len(rows),
                           "no_answer": sum(not q.answerable for q in rows),
                           "chunks": report.chunks, "index_s": round(sw.s, 2), "runs": []}
    for _ in range(args.repeat):
        cli_s, data = calibrate_cli("golden-v2", home, questions, ("bm25",), args.timeout)
        api_s, _ = calibrate_in_process("golden-v2", home, questions)
        out["runs"].append({"cli_s": round(cli_s, 3), "in_process_s": round(api_s, 3)})
    out["cli_s"] = min(r["cli_s"] for r in out["runs"])
    out["in_process_s"] = min(r["in_process_s"] for r in out["runs"])
    out["n0"] = data["calibrations"][0]["n0"]
    out["stats"] = data["calibrations"][0]["stats"]
    print(f"golden v2 bm25 calibration: {out['cli_s']:.2f} s (grk calibrate), "
          f"{out['in_process_s']:.2f} s in process", file=sys.stderr)
    return out


def golden_dense_calibration(args: argparse.Namespace, home: Path) -> dict[str, Any]:
    """Dense and hybrid calibration on golden v2 indexed with the local MiniLM model."""
    try:
        import sentence_transformers  # noqa: F401
    except ImportError as exc:
        return {"skipped": f"the dense extra is not installed ({exc.name})"}
    questions = GOLDEN / "questions.jsonl"
    with Stopwatch() as sw:
        report = index("golden-v2-dense", golden_config(EMBED), home=home)
    out: dict[str, Any] = {"embed_model": EMBED, "chunks": report.chunks,
                           "index_s": round(sw.s, 2)}
    for mode in ("dense", "hybrid"):
        cli_s, _ = calibrate_cli("golden-v2-dense", home, questions, (mode,), args.timeout)
        out[f"{mode}_cli_s"] = round(cli_s, 3)
    cli_s, _ = calibrate_cli("golden-v2-dense", home, questions, ("bm25", "dense", "hybrid"),
                             args.timeout)
    out["all_modes_cli_s"] = round(cli_s, 3)
    with Collection.open("golden-v2-dense", home) as coll:
        out["analyzer"] = analyzer_of(coll.snapshot.config).identity
    print(f"golden v2 dense calibration: {out['dense_cli_s']:.1f} s, hybrid "
          f"{out['hybrid_cli_s']:.1f} s, all three modes {out['all_modes_cli_s']:.1f} s",
          file=sys.stderr)
    return out


# -- report -------------------------------------------------------------------------------

def goals(result: dict[str, Any]) -> dict[str, Any]:
    checks: dict[str, Any] = {}
    over = result.get("overhead", {})
    if over.get("ratio_p50") is not None:
        checks["gated p50 / plain p50 <= 1.05 (all queries)"] = over["ratio_p50"]
    if over.get("ratio_p50_answered") is not None:
        checks["gated p50 / plain p50 <= 1.05 (answered queries)"] = over["ratio_p50_answered"]
    out = {label: {"value": round(v, 4), "met": v <= OVERHEAD_GOAL}
           for label, v in checks.items()}
    golden = result.get("golden_bm25", {})
    if golden.get("cli_s") is not None:
        out["golden v2 bm25 calibration < 10 s (grk calibrate)"] = {
            "value": golden["cli_s"], "met": golden["cli_s"] < CALIBRATE_GOAL_S}
    return out


def print_table(result: dict[str, Any]) -> None:
    over = result.get("overhead")
    if over:
        print(f"\nBM25 top 10, {over['chunks']} chunks, {over['queries']} queries x "
              f"{over['rounds']} rounds (interleaved); gate answered "
              f"{over['answered_share']:.1%}")
        print(f"{'':28s}{'p50 ms':>10s}{'p99 ms':>10s}{'mean ms':>10s}{'p50 CPU ms':>12s}")
        for key, label in (("plain", "search (peer)"), ("gated", "search_or_abstain")):
            row = over[key]
            print(f"{label:28s}{row['p50_ms']:>10.4f}{row['p99_ms']:>10.4f}"
                  f"{row['mean_ms']:>10.4f}{row['p50_cpu_ms']:>12.4f}")
        print(f"ratio gated/plain: p50 {over['ratio_p50']:.3f}, p99 {over['ratio_p99']:.3f}, "
              f"p50 answered only {over['ratio_p50_answered'] or float('nan'):.3f}, "
              f"p50 CPU {over['ratio_p50_cpu']:.3f}, paired per-query p50 "
              f"{over['paired_ratio_p50']:.3f}; hit mismatches {over['hit_mismatches']}")
        print("p50 of each step alone (ms): " + ", ".join(
            f"{k} {v:.4f}" for k, v in over["breakdown_p50_ms"].items()))
    golden = result.get("golden_bm25")
    if golden:
        print(f"\ngolden v2 ({golden['questions']} questions, n0 = {golden['n0']}, "
              f"{golden['chunks']} chunks): bm25 calibration {golden['cli_s']:.2f} s "
              f"(grk calibrate), {golden['in_process_s']:.2f} s in process")
    dense = result.get("golden_dense")
    if dense and "skipped" not in dense:
        print(f"golden v2 with {dense['embed_model']} (goal not applied): dense "
              f"{dense['dense_cli_s']:.1f} s, hybrid {dense['hybrid_cli_s']:.1f} s, "
              f"bm25+dense+hybrid {dense['all_modes_cli_s']:.1f} s (grk calibrate)")
    elif dense:
        print(f"golden v2 dense/hybrid: skipped ({dense['skipped']})")
    print("\ngoals:")
    for label, g in result["goals"].items():
        print(f"  {'met' if g['met'] else 'NOT met':8s} {label}: {g['value']}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    corpus_options(parser)
    parser.add_argument("--seed", type=int, default=13, help="bench_bm25.py's query seed")
    parser.add_argument("--no-answer", type=int, default=48,
                        help="synthetic no-answer calibration questions (and as many answerable)")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved passes over queries")
    parser.add_argument("--repeat", type=int, default=3,
                        help="golden v2 calibration runs; the fastest is kept")
    parser.add_argument("--no-overhead", action="store_true", help="skip the 100k figure")
    parser.add_argument("--no-golden", action="store_true", help="skip golden v2 calibration")
    parser.add_argument("--dense", action="store_true",
                        help="also time dense and hybrid calibration on golden v2 (MiniLM)")
    parser.add_argument("--cache", type=Path, default=ROOT / ".bench")
    parser.add_argument("--out", type=Path, default=None, help="JSON (default .bench/gate.json)")
    parser.add_argument("--timeout", type=int, default=1800)
    args = parser.parse_args(argv)
    result: dict[str, Any] = {"machine": machine()}
    with tempfile.TemporaryDirectory(prefix="bench-gate-") as tmp:
        if not args.no_overhead:
            result["overhead"] = gate_overhead(args, Path(tmp, "home"))
            if result["overhead"]["hit_mismatches"]:
                print(f"error: {result['overhead']['hit_mismatches']} gated answers differ from "
                      "plain search", file=sys.stderr)
        if not args.no_golden:
            result["golden_bm25"] = golden_calibration(args, Path(tmp, "golden-home"))
            if args.dense:
                result["golden_dense"] = golden_dense_calibration(args, Path(tmp, "dense-home"))
    result["machine"]["loadavg_after"] = load_average()
    result["goals"] = goals(result)
    print_table(result)
    out = write_result("gate", result, args.out)
    print(f"\nwritten {out}", file=sys.stderr)
    return 1 if result.get("overhead", {}).get("hit_mismatches") else 0


if __name__ == "__main__":
    sys.exit(main())
