"""Evaluation harness arithmetic: metrics and resampling statistics, timed.

(a) ``evals.metrics.per_query`` for 1,000 queries x 100 results with the default
    measures (Success@1/5/10, nDCG@10, RR@10, R@100), against ir_measures itself
    (``per_query_reference``) on the same input, whose values must agree exactly.
    Goal: < 50 ms.
(b) ``evals.stats.paired_bootstrap_ci``: 10,000 resamples over 1,000 per-question
    differences. Goal: < 100 ms and < 100 MiB peak (tracemalloc, a separate run).
    For context also the randomisation test (10,000 sign flips) and one full
    ``compare`` (both), which a report runs once per stage and measure.

Times are the median of ``--repeats`` runs (after one warm-up), on one thread.

    python bench/bench_eval_stats.py [--repeats 7] [--check]

Writes ``.bench/eval_stats.json``; ``--check`` exits 1 when a goal is missed.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import numpy as np  # noqa: E402
from common import machine, samples_ms, traced_peak_mib, write_result  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from evals.score import metrics, stats  # noqa: E402

QUERIES, DEPTH, QUESTIONS, RESAMPLES = 1_000, 100, 1_000, 10_000
GOALS = {"metrics_ms": 50.0, "bootstrap_ms": 100.0, "bootstrap_peak_mib": 100.0}


def synthetic_run(seed: int = 0) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]]:
    """1-3 graded judgments per query; about 60% of queries retrieve one of them."""
    rng = random.Random(seed)
    qrels, run = {}, {}
    for i in range(QUERIES):
        qid = f"q{i:04d}"
        judged = rng.sample(range(20_000), rng.randint(1, 3))
        qrels[qid] = {f"c{d}": rng.choice((1, 1, 2)) for d in judged}
        docs = rng.sample(range(20_000), DEPTH)
        if rng.random() < 0.6:
            docs[rng.randrange(DEPTH)] = judged[0]
        run[qid] = {f"c{d}": rng.random() * 20 for d in dict.fromkeys(docs)}
    return qrels, run


def timed(fn: Callable[[], object], repeats: int) -> float:
    """Median wall time in milliseconds after one warm-up call."""
    return statistics.median(samples_ms(fn, repeats, warmup=1))


def bench_metrics(repeats: int) -> dict[str, Any]:
    qrels, run = synthetic_run()
    fast = metrics.per_query(qrels, run)
    reference = metrics.per_query_reference(qrels, run)
    worst = max(abs(fast[m][q] - reference[m][q]) for m in fast for q in fast[m])
    return {
        "queries": QUERIES,
        "results_per_query": DEPTH,
        "measures": list(metrics.DEFAULT_MEASURES),
        "metrics_ms": timed(lambda: metrics.per_query(qrels, run), repeats),
        "ir_measures_ms": timed(
            lambda: metrics.per_query_reference(qrels, run), max(1, repeats // 3)
        ),
        "max_abs_difference_vs_ir_measures": worst,
        "means": metrics.aggregate(fast),
    }


def bench_statistics(repeats: int) -> dict[str, Any]:
    rng = np.random.default_rng(0)
    baseline = rng.random(QUESTIONS)
    stage = np.clip(baseline + rng.normal(0.02, 0.2, QUESTIONS), 0.0, 1.0)
    deltas = stage - baseline
    ids = [f"q{i:04d}" for i in range(QUESTIONS)]
    base_scores = dict(zip(ids, baseline.tolist(), strict=True))
    stage_scores = dict(zip(ids, stage.tolist(), strict=True))
    return {
        "questions": QUESTIONS,
        "resamples": RESAMPLES,
        "bootstrap_ms": timed(lambda: stats.paired_bootstrap_ci(deltas, RESAMPLES), repeats),
        "bootstrap_peak_mib": traced_peak_mib(lambda: stats.paired_bootstrap_ci(deltas, RESAMPLES)),
        "randomization_ms": timed(
            lambda: stats.randomization_test(stage, baseline, RESAMPLES), repeats
        ),
        "randomization_peak_mib": traced_peak_mib(
            lambda: stats.randomization_test(stage, baseline)
        ),
        "compare_ms": timed(lambda: stats.compare(base_scores, stage_scores), repeats),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=7, help="timed runs per figure")
    parser.add_argument("--check", action="store_true", help="exit 1 when a goal is missed")
    parser.add_argument("--out", type=Path, default=ROOT / ".bench" / "eval_stats.json")
    args = parser.parse_args(argv)

    facts = machine()
    result = {
        "machine": {"python": facts["python"], "cpus": facts["cpu_count"],
                    "platform": facts["platform"], "numpy": np.__version__},
        "metrics": bench_metrics(args.repeats),
        "statistics": bench_statistics(args.repeats),
        "goals": GOALS,
    }  # fmt: skip
    figures = {**result["metrics"], **result["statistics"]}
    result["goals_met"] = {name: figures[name] < limit for name, limit in GOALS.items()}

    m, s = result["metrics"], result["statistics"]
    lines = [
        f"metrics, {QUERIES:,} queries x {DEPTH} results: {m['metrics_ms']:.1f} ms "
        f"(goal < {GOALS['metrics_ms']:.0f}); ir_measures {m['ir_measures_ms']:.1f} ms, "
        f"max |difference| {m['max_abs_difference_vs_ir_measures']:.1e}",
        f"bootstrap, {RESAMPLES:,} resamples x {QUESTIONS:,} questions: "
        f"{s['bootstrap_ms']:.1f} ms (goal < {GOALS['bootstrap_ms']:.0f}), "
        f"peak {s['bootstrap_peak_mib']:.1f} MiB (goal < {GOALS['bootstrap_peak_mib']:.0f})",
        f"randomisation test, {RESAMPLES:,} sign flips: {s['randomization_ms']:.1f} ms, "
        f"peak {s['randomization_peak_mib']:.1f} MiB; compare (both): {s['compare_ms']:.1f} ms",
    ]
    print("\n".join(lines))
    print("goals met:", ", ".join(f"{k}={v}" for k, v in result["goals_met"].items()))

    print(f"wrote {write_result('eval_stats', result, args.out, sort_keys=True)}")
    return 1 if args.check and not all(result["goals_met"].values()) else 0


if __name__ == "__main__":
    sys.exit(main())
