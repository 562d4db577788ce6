"""The abstention gate: answer or abstain, with a stated risk, separate from ranking.

A mode's confidence score (:data:`SCORERS`, one signal of
:mod:`groundkit.retrieval.signals` per retriever, chosen by measurement) is
compared with the same score of the collection's own *no-answer* calibration
questions. The split-conformal p-value (Vovk et al. 2005; as an outlier test,
Bates et al. 2023) is::

    p = (1 + #{calibration no-answer scores >= s}) / (n0 + 1)

and the gate answers only when ``p <= alpha``. If a new unanswerable question is
exchangeable with the calibration ones, the chance that it is answered is at
most ``alpha`` (a marginal guarantee, over questions like the calibration ones;
nothing is promised for one particular question). The smallest reachable alpha
is ``1 / (n0 + 1)``.

Hybrid has no threshold on fused scores (ADR-0005): it answers only when *both*
retrievers' p-values are at most alpha (rule ``both``, valid under any dependence
between them, no new parameter). ``mean2`` (twice the mean of the two p-values,
Vovk & Wang 2020) is the measured alternative.

The gate never reorders hits; it decides whether to show them.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import CalibrationError
from .signals import SIGNALS, Evidence

ALPHA = 0.1
"""The default highest acceptable rate of answering an unanswerable question."""
RULES = {
    "single": "one retriever: its p-value",
    "both": "answer only when every retriever's p-value is at most alpha (their maximum)",
    "mean2": "twice the mean of the retrievers' p-values, capped at 1 (Vovk & Wang 2020)",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class Scorer:
    """What a mode's gate scores: one signal per retriever, and how their p-values combine."""

    signals: Mapping[str, str]
    rule: str = "single"


SCORERS: Mapping[str, Scorer] = {
    # Chosen by the AUROC of answerable questions whose gold is in the top 10 against
    # no-answer questions, on golden v2's train part (docs/abstention.md, the report's
    # gate.signals block): the best lexical and the best dense signal.
    "bm25": Scorer(signals={"bm25": "bm25.idf_coverage"}),
    "dense": Scorer(signals={"dense": "dense.margin"}),
    "hybrid": Scorer(signals={"bm25": "bm25.idf_coverage", "dense": "dense.margin"},
                     rule="both"),
}


def overshoot(n0: int, alpha: float, slack: float = 0.05) -> float:
    """The chance that a calibration on ``n0`` questions delivers a false-answer rate
    above ``alpha + slack`` (for continuous scores; ties only lower it).

    Given the calibration, the rate it delivers is Beta(m, n0 + 1 - m) distributed
    with ``m = floor((n0 + 1) alpha)`` (Vovk 2012; Angelopoulos & Bates 2021, §3.2):
    its mean is at most alpha, its spread shrinks as n0 grows. For integer
    parameters ``P(Beta(m, n0 + 1 - m) > x) = P(Binomial(n0, x) <= m - 1)``.
    """
    m = math.floor((n0 + 1) * alpha + 1e-9)
    x = min(1.0, alpha + slack)
    if m < 1:
        return 0.0  # alpha is unreachable: nothing is ever answered
    return math.fsum(math.comb(n0, k) * x**k * (1 - x) ** (n0 - k) for k in range(m))


def p_value(calibration: Sequence[float], score: float) -> float:
    """``(1 + #{c >= score}) / (n0 + 1)`` over sorted calibration scores."""
    n0 = len(calibration)
    at_least = n0 - bisect.bisect_left(calibration, score)
    return (1 + at_least) / (n0 + 1)


def combine(p_values: Mapping[str, float], rule: str) -> float:
    values = list(p_values.values())
    if rule in ("single", "both"):
        return max(values)
    if rule == "mean2":
        return min(1.0, 2.0 * sum(values) / len(values))
    raise CalibrationError(f"unknown combination rule {rule!r}; valid: {', '.join(RULES)}")


@dataclass(frozen=True, slots=True, kw_only=True)
class Calibration:
    """The no-answer scores one mode's gate compares with, and what they were computed on."""

    mode: str
    signals: Mapping[str, str]
    rule: str
    scores: Mapping[str, tuple[float, ...]]
    """Per retriever, the calibration no-answer questions' scores, sorted."""
    alpha: float = ALPHA
    questions_sha256: str = ""
    generation: int = 0
    analyzer: str = ""
    embedding: Mapping[str, Any] | None = None
    created_at: str = ""
    stats: Mapping[str, Any] = field(default_factory=dict)
    """What calibrating measured on its own questions (counts, in-sample rates)."""

    @property
    def n0(self) -> int:
        return min((len(v) for v in self.scores.values()), default=0)

    def check_alpha(self, alpha: float) -> None:
        """Fail closed when ``alpha`` cannot be honoured with ``n0`` questions."""
        if not 0 < alpha < 1:
            raise CalibrationError(f"alpha must be between 0 and 1, got {alpha}")
        if alpha < 1 / (self.n0 + 1):
            needed = math.ceil(1 / alpha - 1 - 1e-9)  # the smallest n0 with 1/(n0+1) <= alpha
            raise CalibrationError(
                f"alpha {alpha} is below 1/(n0+1) = {1 / (self.n0 + 1):.3f} for the {self.n0} "
                f"no-answer calibration question(s): add at least {needed - self.n0} more and "
                "recalibrate, or use a larger alpha")

    def to_dict(self) -> dict[str, Any]:
        return {"mode": self.mode, "signals": dict(self.signals), "rule": self.rule,
                "scores": {k: list(v) for k, v in self.scores.items()}, "alpha": self.alpha,
                "n0": self.n0, "questions_sha256": self.questions_sha256,
                "generation": self.generation, "analyzer": self.analyzer,
                "embedding": dict(self.embedding) if self.embedding else None,
                "created_at": self.created_at, "stats": dict(self.stats)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Calibration:
        try:
            return cls(mode=data["mode"], signals=dict(data["signals"]), rule=data["rule"],
                       scores={k: tuple(sorted(v)) for k, v in data["scores"].items()},
                       alpha=float(data["alpha"]), questions_sha256=data["questions_sha256"],
                       generation=int(data["generation"]), analyzer=data["analyzer"],
                       embedding=data.get("embedding"), created_at=data.get("created_at", ""),
                       stats=data.get("stats", {}))
        except (KeyError, TypeError, ValueError) as exc:
            raise CalibrationError(f"the stored calibration is damaged ({exc}); recalibrate "
                                   "with grk calibrate") from None


@dataclass(frozen=True, slots=True, kw_only=True)
class Decision:
    """Answer or abstain, with the evidence: scores, p-values, alpha, the calibration used."""

    answer: bool
    p_value: float
    alpha: float
    scores: Mapping[str, float]
    p_values: Mapping[str, float]
    reason: str
    mode: str
    n0: int
    rule: str

    @property
    def abstained(self) -> bool:
        return not self.answer

    def to_dict(self) -> dict[str, Any]:
        return {"abstained": not self.answer, "reason": self.reason, "p_value": self.p_value,
                "alpha": self.alpha, "mode": self.mode, "n0": self.n0, "rule": self.rule,
                "scores": dict(self.scores), "p_values": dict(self.p_values)}


def score(scorer: Scorer | Calibration, evidence: Evidence) -> dict[str, float]:
    """Each retriever's confidence score for the evidence."""
    return {name: SIGNALS[signal].compute(evidence) for name, signal in scorer.signals.items()}


def decide(calibration: Calibration, evidence: Evidence, alpha: float | None = None) -> Decision:
    """Answer when the combined p-value is at most ``alpha`` (default: the calibration's)."""
    alpha = calibration.alpha if alpha is None else alpha
    calibration.check_alpha(alpha)
    lexical = evidence.lexical
    if calibration.mode == "bm25" and lexical is not None and not lexical.top:
        return Decision(answer=False, p_value=1.0, scores={}, p_values={}, alpha=alpha,
                        mode=calibration.mode, n0=calibration.n0, rule=calibration.rule,
                        reason="no query term occurs in the collection")
    scores = score(calibration, evidence)
    p_values = {k: p_value(calibration.scores[k], s) for k, s in scores.items()}
    p = combine(p_values, calibration.rule)
    reason = (f"p = {p:.3g} <= alpha = {alpha:g}: scores like this are rare among the "
              f"{calibration.n0} unanswerable calibration questions" if p <= alpha else
              f"p = {p:.3g} > alpha = {alpha:g}: nothing in this collection answers that "
              "with confidence")
    return Decision(answer=p <= alpha, p_value=p, scores=scores, p_values=p_values,
                    reason=reason, alpha=alpha, mode=calibration.mode, n0=calibration.n0,
                    rule=calibration.rule)
