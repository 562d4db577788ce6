"""Corpus shift: does a gate calibrated on golden keep its promise on other documents?

The conformal guarantee assumes the questions a gate meets are exchangeable with
its calibration questions. This check breaks that on purpose:

* **transferred** — the BM25 gate calibrated on golden's calibration part (its
  no-answer questions, over golden's documents) decides questions against the
  SciFact corpus: SciFact's own claims (answerable; coverage counts those whose
  gold is in the top 10) and the queries of collections about other subjects
  (Cranfield: aeronautics; CISI: library science), which SciFact cannot answer.
* **own calibration** — the same target questions, with the gate calibrated on the
  target's own off-topic queries instead: half of them (seeded), tested on the
  other half and on every SciFact claim, over :data:`~evals.score.abstention.RESPLITS`
  re-splits. This is what ``grk calibrate`` with a collection's own questions does.

* **reverse** — the gate calibrated on those easy, off-topic queries (scored on
  SciFact) deciding golden's test part, whose no-answer questions are near misses.

The gaps between them are what a calibration borrowed from other documents costs.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from evals import stages as registry
from evals.golden.suite import _CollectionRun, golden_suite
from evals.score import abstention
from evals.score.abstention import Item
from groundkit.retrieval import gate, modes, signals

from .prepare import prepare
from .registry import Sources, load_checked, resolve

Log = Callable[[str], None]
TARGET = "scifact"
FOREIGN = ("cranfield", "cisi")
"""Query sets about subjects the target corpus does not cover."""
MODE = "bm25"


def measure(golden: str | Path, sources: Sources, cache: Path, *,
            resplits: int = abstention.RESPLITS, seed: int = abstention.SEED,
            log: Log = lambda _: None) -> dict[str, Any]:
    """The corpus-shift block: what the golden-calibrated gate does on SciFact."""
    scorer = gate.SCORERS[MODE]
    golden_items = _golden_items(golden, log)
    calibration = [i for i in golden_items if i.split == "calibration" and not i.answerable]
    answerable, foreign = _target_items(sources, cache, log)
    log(f"shift: {len(calibration)} golden calibration no-answer questions; {len(answerable)} "
        f"{TARGET} claims, {len(foreign)} off-topic queries ({', '.join(FOREIGN)})")
    return {"mode": MODE, "signals": dict(scorer.signals), "target": TARGET,
            "foreign": list(FOREIGN),
            "counts": {"golden_calibration_no_answer": len(calibration),
                       "target_answerable": len(answerable), "target_foreign": len(foreign)},
            "transferred": abstention.apply(scorer, calibration, [*answerable, *foreign]),
            "own_calibration": _own_calibration(scorer, answerable, foreign, resplits, seed),
            "reverse": abstention.apply(scorer, foreign,
                                        [i for i in golden_items if i.split == "test"])}


def _golden_items(golden: str | Path, log: Log) -> list[Item]:
    """Golden's calibration and test questions, scored over golden's documents."""
    with tempfile.TemporaryDirectory(prefix="groundkit-shift-") as tmp:
        suite = golden_suite(golden, Path(tmp))
        try:
            run = suite.open(registry.STAGES[registry.BASELINE], log)
            assert isinstance(run, _CollectionRun)  # the baseline ranks its own collection
            snap, qrels, ids = run.snapshot, run.qrels or {}, run.snapshot.chunk_ids()
            items = []
            for q in suite.questions:
                if q.split not in ("calibration", "test"):
                    continue
                evidence = modes.evidence(snap, MODE, q.text)
                judged = qrels.get(q.query_id, {})
                retrieved = any(judged.get(ids[p], 0) > 0 for p, _ in _top(evidence))
                items.append(Item(query_id=q.query_id, answerable=bool(q.gold),
                                  near_miss=q.near_miss, retrieved=retrieved, split=q.split,
                                  signals=signals.compute(evidence)))
            return items
        finally:
            suite.close()


def _target_items(sources: Sources, cache: Path, log: Log) -> tuple[list[Item], list[Item]]:
    """The target's claims (answerable) and the foreign queries, scored on its corpus."""
    spec = resolve(TARGET)
    dataset = load_checked(spec, sources)
    foreign = {f"{name}:{qid}": text for name in FOREIGN
               for qid, text in load_checked(resolve(name), sources).queries.items()}
    with prepare(dataset, join=spec.join, cache=cache / "external", log=log) as prep:
        snap = prep.collection.snapshot
        doc_of = dict(zip(prep.paths, prep.doc_ids, strict=True))
        answerable = []
        for qid in dataset.judged_query_ids:
            evidence = modes.evidence(snap, MODE, dataset.queries[qid])
            top = {doc_of[item.chunk.doc_id]
                   for item in snap.stored_chunks([p for p, _ in _top(evidence)])}
            relevant = {d for d, r in dataset.qrels[qid].items() if r > 0}
            answerable.append(_item(f"{TARGET}:{qid}", True, bool(top & relevant), evidence))
        unanswerable = [_item(qid, False, False, modes.evidence(snap, MODE, text))
                        for qid, text in sorted(foreign.items())]
    return answerable, unanswerable


def _top(evidence: signals.Evidence) -> Sequence[tuple[int, float]]:
    return evidence.lexical.top if evidence.lexical is not None else ()


def _item(qid: str, answerable: bool, retrieved: bool, evidence: signals.Evidence) -> Item:
    return Item(query_id=qid, answerable=answerable, near_miss=False, retrieved=retrieved,
                split="test", signals=signals.compute(evidence))


def _own_calibration(scorer: gate.Scorer, answerable: Sequence[Item], foreign: Sequence[Item],
                     resplits: int, seed: int) -> dict[str, Any]:
    """Calibrate on half the foreign queries, test on the rest and every claim; resplit."""
    rng = np.random.default_rng(seed)
    half = len(foreign) // 2
    runs = []
    for _ in range(resplits):
        order = rng.permutation(len(foreign))
        calibration = [foreign[i] for i in order[:half]]
        test = [*answerable, *(foreign[i] for i in order[half:])]
        runs.append(abstention.apply(scorer, calibration, test))
    out = []
    for k, alpha in enumerate(abstention.ALPHAS):
        far = np.array([r["at_alpha"][k]["false_answer_rate"] for r in runs], float)
        cov = np.array([r["at_alpha"][k]["coverage_retrieved"] for r in runs], float)
        out.append({"alpha": alpha, "false_answer_rate_mean": float(far.mean()),
                    "false_answer_rate_band": [float(np.quantile(far, 0.05)),
                                               float(np.quantile(far, 0.95))],
                    "coverage_retrieved_mean": float(cov.mean())})
    return {"n0": half, "resplits": resplits, "seed": seed, "at_alpha": out}


def summary(block: dict[str, Any]) -> list[str]:
    """The shift block as lines of text."""
    lines = [f"corpus shift ({block['mode']}, {' + '.join(block['signals'].values())}): gate "
             f"calibrated on golden, deciding {block['target']} claims and "
             f"{'/'.join(block['foreign'])} queries",
             f"{'alpha':>6}  {'transferred: false answers':>27}  {'coverage':>8}  "
             f"{'own calibration: false answers':>31}  {'coverage':>8}"]
    for moved, own in zip(block["transferred"]["at_alpha"], block["own_calibration"]["at_alpha"],
                          strict=True):
        low, high = moved["false_answer_interval"]
        lines.append(f"{moved['alpha']:>6g}  {moved['false_answer_rate']:>10.1%} "
                     f"[{low:.1%}, {high:.1%}]  {moved['coverage_retrieved']:>8.1%}  "
                     f"{own['false_answer_rate_mean']:>31.1%}  "
                     f"{own['coverage_retrieved_mean']:>8.1%}")
    lines.append("reverse: calibrated on the off-topic queries, deciding golden's test part")
    for row in block["reverse"]["at_alpha"]:
        low, high = row["false_answer_interval"]
        lines.append(f"{row['alpha']:>6g}  {row['false_answer_rate']:>10.1%} "
                     f"[{low:.1%}, {high:.1%}]  {row['coverage_retrieved']:>8.1%}")
    return lines
