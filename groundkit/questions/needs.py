"""What a question set can measure: counts against what each measurement needs.

* **Calibration** (``grk calibrate``): a split-conformal gate calibrated on ``n0``
  no-answer questions at ``alpha`` delivers a false-answer rate that is itself
  random, Beta(m, n0 + 1 - m) with ``m = floor((n0 + 1) alpha)``
  (:func:`groundkit.retrieval.gate.overshoot`, the law ``grk calibrate`` warns
  with). The chance it exceeds ``alpha + SLACK`` falls as ``n0`` grows, in a saw
  tooth (it jumps up each time ``m`` steps). Two counts are reported: the first
  ``n0`` at which that chance is at most OVERSHOOT (what ``grk calibrate``'s
  warning names) and the count from which it *stays* at most OVERSHOOT for every
  larger set.
* **A delta of nDCG@10** between two modes (``grk eval``): the paired bootstrap
  interval of a mean per-question delta is about ``2 z sd / sqrt(n)`` wide (the
  normal approximation of the mean; ``z = 1.96`` at 95%). ``sd`` is the spread of
  per-question deltas, unknown before a run: :data:`DELTA_SD` is backed out of
  golden v2's published intervals (see its note), and ``sd <= 1`` always holds (a
  delta of nDCG@10 lies in [-1, 1]), so the worst case is reported beside it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from ..collection.calibration import OVERSHOOT, SLACK, needed_no_answer
from ..retrieval import gate
from .model import PARTS, Question

Z95 = 1.959963984540054
DELTA_SD = 0.42
"""The spread of per-question nDCG@10 deltas, backed out of golden v2's published
intervals (docs/retrieval-modes.md, ``make eval-v2`` of 2026-12-01, 1,008 judged
questions): ``sd = width sqrt(n) / (2 z)`` gives 0.42 for dense-minilm against BM25,
0.25-0.28 for the hybrids, 0.19 for bm25-chunk2000. The widest is assumed: two
unlike modes, as a person comparing BM25 with dense would run. (Checked on a run of
bm25-chunk2000 against BM25 on golden v2: per-question sd 0.1975, formula width
0.0244, bootstrap width 0.0243.)"""
WORST_SD = 1.0
STEADY_LIMIT = 100_000


def steady_no_answer(alpha: float = gate.ALPHA) -> int:
    """The fewest no-answer questions from which every larger set keeps the chance of a
    false-answer rate above ``alpha + SLACK`` at most OVERSHOOT."""
    first = needed_no_answer(alpha)
    # the tooth peaks just below each multiple of 1/alpha; past the last peak over the
    # limit it stays under (the peaks fall as n0 grows)
    period = max(1, math.ceil(1 / alpha))
    last_bad, quiet = first - 1, 0
    for n in range(first, STEADY_LIMIT):
        try:
            over = gate.overshoot(n, alpha, SLACK) > OVERSHOOT
        except OverflowError:  # the binomial terms leave float range: far past any tooth
            break
        if over:
            last_bad, quiet = n, 0
        else:
            quiet += 1
            if quiet > 3 * period:
                break
    return last_bad + 1


def delta_ci_width(n: int, sd: float = DELTA_SD) -> float | None:
    """The expected width of a 95% interval of a mean per-question delta over ``n`` questions."""
    return None if n < 2 else 2 * Z95 * sd / math.sqrt(n)


def questions_for_width(width: float, sd: float = DELTA_SD) -> int:
    """How many questions bring the expected 95% interval of a delta down to ``width``."""
    return math.ceil((2 * Z95 * sd / width) ** 2)


def counts(questions: Sequence[Question], traits: Sequence[str]) -> dict[str, Any]:
    """Questions by kind, trait and split part."""
    kinds: dict[str, int] = {}
    for q in questions:
        kinds[q.kind] = kinds.get(q.kind, 0) + 1
    by_trait = {t: sum(1 for q in questions if t in q.traits) for t in traits}
    parts = {p: sum(1 for q in questions if q.split == p) for p in PARTS}
    return {"questions": len(questions), "kinds": kinds,
            "traits": {t: n for t, n in by_trait.items() if n},
            "split": parts if any(parts.values()) else None,
            "near_miss": sum(1 for q in questions if q.near_miss is not None)}


def measurements(questions: Sequence[Question], alpha: float = gate.ALPHA
                 ) -> tuple[dict[str, Any], list[str]]:
    """What each measurement needs against what the set has, and the warnings."""
    split = any(q.split for q in questions)
    calibrating = [q for q in questions if not split or q.split == "calibration"]
    measuring = [q for q in questions if not split or q.split == "test"]
    n0 = sum(1 for q in calibrating if q.kind == "no_answer")
    answerable = sum(1 for q in measuring if q.answers)
    first, steady = needed_no_answer(alpha), steady_no_answer(alpha)
    chance = gate.overshoot(n0, alpha, SLACK) if n0 else None
    paraphrase = sum(1 for q in measuring if "paraphrase" in q.traits and q.answers)
    out: dict[str, Any] = {
        "calibration": {
            "part": "calibration" if split else "all", "alpha": alpha, "no_answer": n0,
            "smallest_alpha": 1 / (n0 + 1), "overshoot_limit": alpha + SLACK,
            "overshoot_chance": chance, "needed_first": first, "needed_steady": steady,
            "law": "false-answer rate ~ Beta(m, n0+1-m), m = floor((n0+1) alpha) "
                   "(gate.overshoot)"},
        "ndcg10_delta": {
            "part": "test" if split else "all", "answerable": answerable,
            "sd_assumed": DELTA_SD, "ci95_width": delta_ci_width(answerable),
            "ci95_width_worst_case": delta_ci_width(answerable, WORST_SD),
            "questions_for_width_0.1": questions_for_width(0.1),
            "paraphrase": paraphrase, "ci95_width_paraphrase": delta_ci_width(paraphrase)},
    }
    return out, _warnings(out, split, len(questions))


def _warnings(m: Mapping[str, Any], split: bool, total: int) -> list[str]:
    cal, delta = m["calibration"], m["ndcg10_delta"]
    part = "the calibration part" if split else "the file"
    out = []
    if cal["no_answer"] == 0:
        out.append(f"{part} has no no_answer questions: grk calibrate cannot calibrate the gate")
    elif cal["overshoot_chance"] > OVERSHOOT or 1 / (cal["no_answer"] + 1) > cal["alpha"]:
        out.append(f"{part} has {cal['no_answer']} no_answer question(s): a calibration at "
                   f"alpha {cal['alpha']:g} delivers a false-answer rate over "
                   f"{cal['overshoot_limit']:.2g} with probability "
                   f"{cal['overshoot_chance']:.0%}; {cal['needed_first']} would bring that "
                   f"under {OVERSHOOT:.0%}, and from {cal['needed_steady']} on it stays under")
    width = delta["ci95_width"]
    if width is None or width > 0.1:
        shown = "no interval" if width is None else f"about ±{width / 2:.3f}"
        out.append(f"{delta['answerable']} answerable question(s) measured: a delta of nDCG@10 "
                   f"gets {shown} (95%, per-question sd {DELTA_SD}); about "
                   f"{delta['questions_for_width_0.1']} give ±0.05")
    if not split and total:
        out.append("no split: grk calibrate and grk eval would use the same questions "
                   "(grk questions split FILE --seed S)")
    return out
