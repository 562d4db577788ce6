"""Extractive answer latency on golden v2: ``grk ask`` beyond the search it runs.

For every golden v2 question, in process over golden v2 indexed with the defaults:
``Collection.search(q, top_k=5, verify=True)`` (the peer: the search ``ask`` runs,
re-reading each hit's span) and ``groundkit.answer.ask(coll, q)`` (that search plus
choosing and quoting the sentences), interleaved, after one warm-up pass. Reported:
p50/p99 of both and of their per-question difference. Goal: the answer adds under
20 ms at p50 and p99 beyond its search.

    python bench/bench_answers.py [--rounds 3]

Writes ``.bench/answers.json``; exits non-zero only on errors (a missed goal is
reported as ``NOT met``).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from common import latency_summary, machine, write_result

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from groundkit.answer import ask  # noqa: E402
from groundkit.collection import Collection, IndexConfig, index  # noqa: E402

GOAL_MS = 20.0


def measure(rounds: int) -> dict[str, Any]:
    questions = [json.loads(line)["question"] for line in
                 (ROOT / "golden" / "v2" / "questions.jsonl").read_text().splitlines()]
    with tempfile.TemporaryDirectory(prefix="bench-answers-") as tmp:
        home = Path(tmp)
        index("g", IndexConfig(roots=(str(ROOT / "golden" / "v2" / "docs"),), include=("*",)),
              home=home)
        with Collection.open("g", home) as coll:
            for q in questions:  # warm-up: indexes loaded, caches filled as in a session
                ask(coll, q)
            search, answer = [], []
            for r in range(rounds):
                for i, q in enumerate(questions):
                    pair = [(search, lambda q=q: coll.search(q, top_k=5, verify=True)),
                            (answer, lambda q=q: ask(coll, q))]
                    for sink, call in (pair if (i + r) % 2 == 0 else pair[::-1]):
                        t = time.perf_counter()
                        call()
                        sink.append((time.perf_counter() - t) * 1000)
    extra = [a - s for a, s in zip(answer, search, strict=True)]
    return {"questions": len(questions), "rounds": rounds, "top_k": 5,
            "search": latency_summary(search), "answer": latency_summary(answer),
            "answer_minus_search": latency_summary(extra)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    result = measure(args.rounds)
    beyond = result["answer_minus_search"]
    result["goals"] = {f"answer adds < {GOAL_MS:g} ms at p50": beyond["p50_ms"] < GOAL_MS,
                       f"answer adds < {GOAL_MS:g} ms at p99": beyond["p99_ms"] < GOAL_MS}
    result["machine"] = machine()
    print(f"golden v2, {result['questions']} questions x {result['rounds']} rounds, top 5:")
    for key in ("search", "answer", "answer_minus_search"):
        s = result[key]
        print(f"  {key:<22} p50 {s['p50_ms']:.3f} ms  p99 {s['p99_ms']:.3f} ms")
    for label, met in result["goals"].items():
        print(f"  {'met' if met else 'NOT met':8s} {label}")
    path = write_result("answers", result, args.out)
    print(f"written {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
