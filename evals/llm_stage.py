"""The local reader's stages (``python -m evals llm``, ``make eval-llm``): judge, reranker,
gate signal, measured on a fixed sample of a golden version, never trusted.

A 1.5B model on two shared cores takes seconds per passage, so the stages run on a
fixed, stratified sample (:func:`sample`; its size and the CPU-seconds of every call
are in the report), the same for every run:

* **test part, answerable** — :data:`ANSWERABLE` questions, drawn round-robin over their
  first trait (``none`` without one) in a seeded hash order; their BM25 top
  :data:`DEPTH` passages are judged, and a gold passage BM25 missed is judged too.
* **test part, no answer** — :data:`NO_ANSWER` near-miss questions: their top
  :data:`GATE_DEPTH` passages and the near-miss passage (on the topic, lacking the fact).
* **calibration part, no answer** — :data:`CALIBRATION` questions, their top
  :data:`GATE_DEPTH` passages: what the conformal gate calibrates on.
* **train part** — :data:`TRAIN_ANSWERABLE` answerable questions (by first trait) and
  :data:`TRAIN_NO_ANSWER` no-answer ones (by domain), their top :data:`GATE_DEPTH`
  passages: where the judge's threshold and the gate's combination of signals are
  chosen, so nothing is chosen on the questions it is measured on.

The stages, all from the same judgements (one model call per distinct passage and
question, :class:`Judgements`):

1. *judge* — P(yes) >= 0.5 against the quote-anchored labels (a passage is relevant
   when it overlaps a gold quote: evals/golden/judgments.py): agreement, Cohen's kappa,
   per trait, on the near-miss passages alone, and the score's AUROC; and the test part
   at the threshold that maximises kappa on the train part's pairs.
2. *rerank* — the test answerable questions' BM25 top :data:`DEPTH` reordered by the
   judge's log-odds through the :class:`~groundkit.retrieval.rerank.Reranker` seam
   (``rerank(..., method="replace")``); nDCG@10 against BM25's, paired bootstrap interval
   and randomisation test (:mod:`evals.score.stats`).
3. *gate*, per mode (BM25, and hybrid when its collection can be had) — the judge's best
   log-odds over the mode's top :data:`GATE_DEPTH` as the conformal gate's signal
   (calibrated on the calibration sample), beside the mode's own gate on the same
   questions, the two under rule ``both`` (fixed beforehand), and their logistic
   combination fitted on the train sample (:mod:`evals.llm_combine`): AUROC, coverage at
   each alpha, risk–coverage, CRAG-style score.

Without the runtime or the model the report says *not measured* and why, never a number.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evals import llm_combine
from evals.report import model as rpt
from evals.score import abstention, metrics, stats
from groundkit.retrieval import gate
from groundkit.retrieval.base import Scored
from groundkit.retrieval.relevance import RELEVANCE_RULES, judge, probability
from groundkit.retrieval.rerank import rerank

ANSWERABLE = 34
NO_ANSWER = 10
CALIBRATION = 20
"""The sample: what two shared cores judged in an afternoon (about 10 CPU-s a passage)."""
TRAIN_ANSWERABLE = 20
TRAIN_NO_ANSWER = 16
DEPTH = 5
"""Passages judged (and reranked) per answerable test question."""
GATE_DEPTH = 2
"""Passages whose best judgement is the gate's signal (every sampled question)."""
FIRST_STAGE = 100
SEED = "llm-sample-v1"
THRESHOLD = 0.5
"""P(yes) at or above which the judge says a passage answers (fixed, not tuned)."""
BM25_SIGNAL = gate.SCORERS["bm25"].signals["bm25"]
JUDGE_SIGNAL = "judge.max"
Log = Callable[[str], None]


def _order(query_id: str) -> str:
    return hashlib.sha256(f"{SEED}:{query_id}".encode()).hexdigest()


def stratified(questions: Sequence[rpt.Question], n: int,
               stratum: Callable[[rpt.Question], str]) -> list[rpt.Question]:
    """``n`` questions drawn round-robin over the strata (sorted by name), each stratum
    in a seeded hash order of its ids: the same sample for the same questions."""
    groups: dict[str, list[rpt.Question]] = {}
    for q in sorted(questions, key=lambda q: _order(q.query_id)):
        groups.setdefault(stratum(q), []).append(q)
    queues = [groups[k] for k in sorted(groups)]
    out: list[rpt.Question] = []
    while len(out) < n and any(queues):
        for queue in queues:
            if queue and len(out) < n:
                out.append(queue.pop(0))
    return out


@dataclass(frozen=True, slots=True)
class Sample:
    answerable: tuple[rpt.Question, ...]
    no_answer: tuple[rpt.Question, ...]
    calibration: tuple[rpt.Question, ...]
    train: tuple[rpt.Question, ...] = ()

    def sizes(self) -> dict[str, int]:
        return {"test_answerable": len(self.answerable), "test_no_answer": len(self.no_answer),
                "calibration_no_answer": len(self.calibration),
                "train_answerable": sum(bool(q.gold) for q in self.train),
                "train_no_answer": sum(not q.gold for q in self.train)}

    def questions(self) -> list[rpt.Question]:
        """Every sampled question: the test part's, the calibration part's, the train part's."""
        return [*self.answerable, *self.no_answer, *self.calibration, *self.train]


def _first_trait(q: rpt.Question) -> str:
    return q.traits[0] if q.traits else "none"


def sample(questions: Sequence[rpt.Question], *, answerable: int = ANSWERABLE,
           no_answer: int = NO_ANSWER, calibration: int = CALIBRATION,
           train_answerable: int = TRAIN_ANSWERABLE,
           train_no_answer: int = TRAIN_NO_ANSWER) -> Sample:
    """The fixed sample (see the module docstring)."""
    test = [q for q in questions if q.split == "test"]
    train = [q for q in questions if q.split == "train"]
    return Sample(
        answerable=tuple(stratified([q for q in test if q.gold], answerable, _first_trait)),
        no_answer=tuple(stratified([q for q in test if not q.gold and q.near_miss], no_answer,
                                   lambda q: q.domain)),
        calibration=tuple(stratified([q for q in questions if q.split == "calibration"
                                      and not q.gold], calibration, lambda q: q.domain)),
        train=(*stratified([q for q in train if q.gold], train_answerable, _first_trait),
               *stratified([q for q in train if not q.gold], train_no_answer,
                           lambda q: q.domain)))


class Judgements:
    """Each (question, passage) judged once, with the CPU and wall seconds of the call.

    With a ``store`` (JSON Lines), every judgement is appended as it is made and those
    already there for the same model file and prompt are reused, so an interrupted run
    loses nothing; a reused row keeps the cost measured when it was made and the options
    it was made with (:meth:`cost` counts both kinds).
    """

    def __init__(self, reader: Any, store: Path | None = None) -> None:
        self.reader = reader
        self.scores: dict[tuple[str, str], float] = {}
        self.cpu: list[float] = []
        self.wall: list[float] = []
        self.reused = 0
        self.store = store
        self.key = {"model_sha256": str(reader.sha256), "prompt_sha256": _digest(
            RELEVANCE_RULES)}
        self._stored: dict[tuple[str, str], dict[str, Any]] = {}
        if store is not None and store.is_file():
            for line in store.read_text(encoding="utf-8").splitlines():
                row = json.loads(line)
                if all(row.get(k) == v for k, v in self.key.items()):
                    self._stored[(row["question_sha256"], row["passage_sha256"])] = row

    def __call__(self, question: str, text: str) -> float:
        key = (question, text)
        if key in self.scores:
            return self.scores[key]
        row = self._stored.get((_digest(question), _digest(text)))
        if row is not None:
            self.reused += 1
            self.scores[key] = float(row["score"])
            self.cpu.append(float(row["cpu_s"]))
            self.wall.append(float(row["wall_s"]))
            return self.scores[key]
        cpu, wall = time.process_time(), time.perf_counter()
        self.scores[key] = judge(question, text, self.reader)
        self.cpu.append(time.process_time() - cpu)
        self.wall.append(time.perf_counter() - wall)
        if self.store is not None:
            self.store.parent.mkdir(parents=True, exist_ok=True)
            with open(self.store, "a", encoding="utf-8") as f:
                f.write(json.dumps({**self.key, "question_sha256": _digest(question),
                                    "passage_sha256": _digest(text), "score": self.scores[key],
                                    "cpu_s": self.cpu[-1], "wall_s": self.wall[-1],
                                    "options": self.reader.identity.get("options")}) + "\n")
        return self.scores[key]

    def cost(self) -> dict[str, Any]:
        n = len(self.cpu)
        return {"calls": n, "reused_from_store": self.reused,
                "cpu_s_total": sum(self.cpu), "wall_s_total": sum(self.wall),
                "cpu_s_per_call": sum(self.cpu) / n if n else None,
                "wall_s_per_call": sum(self.wall) / n if n else None,
                "cpu_s_per_call_p90": sorted(self.cpu)[int(0.9 * (n - 1))] if n else None,
                "store_options": sorted({str(r.get("options")) for r in self._stored.values()})}


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class CachedJudge:
    """The judge as a :class:`~groundkit.retrieval.rerank.Reranker` over :class:`Judgements`
    (so reranking and the other stages share one call per passage)."""

    def __init__(self, judgements: Judgements, identity: Any) -> None:
        self.judgements = judgements
        self._identity = identity

    @property
    def identity(self) -> Any:
        return self._identity

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        return [self.judgements(query, t) for t in texts]

    def close(self) -> None:
        """Nothing to release: the reader is the caller's."""


# ---------------------------------------------------------------------- judge agreement


def kappa(pairs: Sequence[tuple[bool, bool]]) -> float | None:
    """Cohen's kappa of (judge, label) pairs; ``None`` when chance agreement is total."""
    n = len(pairs)
    if not n:
        return None
    observed = sum(a == b for a, b in pairs) / n
    judge_yes = sum(a for a, _ in pairs) / n
    label_yes = sum(b for _, b in pairs) / n
    expected = judge_yes * label_yes + (1 - judge_yes) * (1 - label_yes)
    return None if expected == 1 else (observed - expected) / (1 - expected)


def agreement(rows: Sequence[Mapping[str, Any]],
              threshold: float = THRESHOLD) -> dict[str, Any]:
    """Agreement, kappa, confusion counts and AUROC of judged rows (``label``, ``p_yes``),
    the judge saying yes at P(yes) >= ``threshold``."""
    pairs = [(r["p_yes"] >= threshold, bool(r["label"])) for r in rows]
    count = Counter(pairs)
    return {
        "n": len(rows), "relevant": sum(b for _, b in pairs),
        "agreement": sum(a == b for a, b in pairs) / len(pairs) if pairs else None,
        "kappa": kappa(pairs),
        "judge_yes_label_yes": count[(True, True)], "judge_yes_label_no": count[(True, False)],
        "judge_no_label_yes": count[(False, True)], "judge_no_label_no": count[(False, False)],
        "auroc": abstention.auroc([r["score"] for r in rows if r["label"]],
                                  [r["score"] for r in rows if not r["label"]]),
    }


def train_threshold(rows: Sequence[Mapping[str, Any]]) -> float | None:
    """The P(yes) threshold with the highest kappa on ``rows`` (the lowest of tied ones);
    ``None`` when no threshold gives a kappa."""
    best: tuple[float, float] | None = None
    for t in sorted({float(r["p_yes"]) for r in rows}):
        k = kappa([(r["p_yes"] >= t, bool(r["label"])) for r in rows])
        if k is not None and (best is None or k > best[0]):
            best = (k, t)
    return None if best is None else best[1]


def judge_block(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The judge against the labels: the held-out pairs (test and calibration parts), the
    test part, per trait, near-miss passages; and the test part at the threshold chosen on
    the train part's pairs."""
    train = [r for r in rows if r["part"] == "train"]
    held = [r for r in rows if r["part"] != "train"]
    test = [r for r in held if r["part"] == "test"]
    answerable = [r for r in test if r["kind"] == "answerable"]
    traits = sorted({t for r in answerable for t in r["traits"]})
    chosen = train_threshold(train)
    return {
        "threshold": THRESHOLD, "all": agreement(held), "test": agreement(test),
        "train": agreement(train), "train_threshold": chosen,
        "test_at_train_threshold": None if chosen is None else agreement(test, chosen),
        "by_trait": {t: agreement([r for r in answerable if t in r["traits"]])
                     for t in traits},
        "answerable_questions": agreement(answerable),
        "no_answer_questions": agreement([r for r in held if r["kind"] == "no_answer"]),
        "near_miss_passages": {
            "n": sum(r["near_miss_passage"] for r in held),
            "said_yes": sum(r["near_miss_passage"] and r["p_yes"] >= THRESHOLD for r in held)},
    }


# ---------------------------------------------------------------------- measuring


@dataclass(slots=True)
class Ranked:
    """One sampled question's BM25 ranking and the texts of its top passages."""

    question: rpt.Question
    ids: list[str]
    texts: list[str]
    signals: Mapping[str, float]


def rerank_block(ranked: Sequence[Ranked], judgements: Judgements, identity: Any,
                 qrels: metrics.Qrels, settings: rpt.Settings) -> dict[str, Any]:
    """nDCG@10 of BM25 and of BM25's top :data:`DEPTH` reordered by the judge."""
    reranker = CachedJudge(judgements, identity)
    before: dict[str, dict[str, float]] = {}
    after: dict[str, dict[str, float]] = {}
    for r in ranked:
        qid = r.question.query_id
        first = [Scored(i, float(FIRST_STAGE - i), ()) for i in range(len(r.ids))]
        out = rerank(first, r.texts, r.question.text, reranker, depth=DEPTH)
        before[qid] = {cid: float(FIRST_STAGE - i) for i, cid in enumerate(r.ids)}
        after[qid] = {r.ids[s.position]: float(FIRST_STAGE - rank)
                      for rank, s in enumerate(out)}
    measures = ("nDCG@10", "RR@10", "Success@1")
    judged = {q: qrels[q] for q in before}
    base = metrics.per_query(judged, before, measures)
    new = metrics.per_query(judged, after, measures)
    out_block: dict[str, Any] = {"depth": DEPTH, "method": "replace", "questions": len(before),
                                 "first_stage": "bm25", "measures": {}}
    for m in measures:
        c = stats.compare(base[m], new[m], resamples=settings.resamples,
                          permutations=settings.permutations, seed=settings.seed)
        out_block["measures"][m] = {"bm25": c.baseline_mean, "reranked": c.stage_mean,
                                    "delta": c.delta, "ci": [c.ci_low, c.ci_high],
                                    "p_value": c.p_value,
                                    "wins_ties_losses": [c.wins, c.ties, c.losses]}
    return out_block


def gate_items(ranked: Sequence[Ranked], judgements: Judgements, qrels: metrics.Qrels,
               part: Callable[[rpt.Question], str]) -> list[abstention.Item]:
    """Each sampled question as the gate analysis sees it: the mode's own signals and the
    judge's best log-odds over the mode's top :data:`GATE_DEPTH` (:data:`JUDGE_SIGNAL`)."""
    items = []
    for r in ranked:
        q = r.question
        best = max(judgements(q.text, t) for t in r.texts[:GATE_DEPTH])
        relevant = qrels.get(q.query_id) or {}
        items.append(abstention.Item(
            query_id=q.query_id, answerable=bool(q.gold), near_miss=q.near_miss,
            retrieved=any(relevant.get(c, 0) > 0 for c in r.ids[:10]), split=part(q),
            signals={**r.signals, JUDGE_SIGNAL: best}))
    return items


COMBINED_SIGNAL = "judge.logistic"


def gate_block(items: Sequence[abstention.Item], mode: str = "bm25") -> dict[str, Any]:
    """The conformal gate of ``mode`` on the sample: its own scorer, the judge's signal
    alone, both under rule ``both``, and their logistic combination fitted on the train
    items (:mod:`evals.llm_combine`); calibrated on the calibration items, decided on the
    test items."""
    own = gate.SCORERS[mode]
    signals = {"judge": JUDGE_SIGNAL, **own.signals}
    scorers = {
        mode: own,
        "judge": gate.Scorer(signals={"judge": JUDGE_SIGNAL}),
        f"judge+{mode} (both)": gate.Scorer(signals=signals, rule="both"),
    }
    train = [i for i in items if i.split == "train"]
    fitted: dict[str, Any]
    try:
        combination = llm_combine.fitted(train, sorted(signals.values()))
    except ValueError as exc:  # too few train questions of one kind: nothing to fit
        fitted = {"measured": False, "reason": f"not measured: {exc}"}
    else:
        fitted = combination.to_dict()
        items = llm_combine.with_signal(items, COMBINED_SIGNAL, combination)
        scorers[f"judge+{mode} (logistic)"] = gate.Scorer(signals={"combined": COMBINED_SIGNAL})
    calibration = [i for i in items if i.split == "calibration"]
    test = [i for i in items if i.split == "test"]
    return {"mode": mode, "alphas": list(abstention.ALPHAS),
            "n_calibration": len(calibration), "n_test": len(test),
            "n_train": len(train), "logistic": fitted,
            "combination": "rule 'both' (each signal's p-value at most alpha), fixed before "
            "measuring; the logistic weights fitted on the train items only (answerable with "
            "the gold retrieved against no-answer); nothing was chosen on the test part",
            "signal_auroc": _signal_auroc(test, sorted({n for s in scorers.values()
                                                        for n in s.signals.values()})),
            "scorers": {name: abstention.apply(s, calibration, test)
                        for name, s in scorers.items()}}


def _signal_auroc(test: Sequence[abstention.Item], names: Sequence[str]) -> dict[str, Any]:
    """Each signal's raw AUROC on the test items: answerable against no-answer."""
    return {n: abstention.auroc([i.signals[n] for i in test if i.answerable],
                                [i.signals[n] for i in test if not i.answerable])
            for n in names}


def judged_rows(ranked: Sequence[Ranked], extra: Mapping[str, list[tuple[str, str]]],
                judgements: Judgements, qrels: metrics.Qrels, part: Callable[[Any], str],
                near_miss_chunks: Mapping[str, str]) -> list[dict[str, Any]]:
    """Every judged (question, passage) with its label, in a fixed order."""
    rows = []
    for r in ranked:
        q = r.question
        depth = DEPTH if q.gold and part(q) == "test" else GATE_DEPTH
        pairs = list(zip(r.ids[:depth], r.texts[:depth], strict=True))
        pairs += extra.get(q.query_id, [])
        for cid, text in dict(pairs).items():
            score = judgements(q.text, text)
            rows.append({"query_id": q.query_id, "chunk_id": cid, "part": part(q),
                         "kind": "answerable" if q.gold else "no_answer",
                         "traits": list(q.traits) or ["none"],
                         "label": (qrels.get(q.query_id) or {}).get(cid, 0) > 0,
                         "near_miss_passage": near_miss_chunks.get(q.query_id) == cid,
                         "score": score, "p_yes": probability(score)})
    return rows


__all__ = ["CachedJudge", "Judgements", "Sample", "agreement", "gate_block", "judge_block",
           "kappa", "rerank_block", "sample", "stratified", "train_threshold"]
