"""Stages scored apart from the report (in the process that ranked them) and the hit
records a report keeps of them."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from test_report import hit, sample_inputs  # the same inputs (tests/evals is on the path)

from evals import report as rp
from evals.report import build
from evals.score import abstention

RUN = {"created_at": "2030-01-01T00:00:00+00:00", "host": "h"}
"""One run block for reports compared whole (the default one names the second)."""


def test_stages_scored_apart_build_the_report_built_from_their_hits():
    inputs = {**sample_inputs(), "run": RUN}
    measures = inputs["settings"].measures
    scored = {s.name: rp.score_stage(s, inputs["questions"], inputs["qrels"], measures)
              for s in inputs["stages"]}
    assert rp.build_report(**inputs, scored=scored) == rp.build_report(**inputs)
    assert rp.build_report(**inputs, scored={"hybrid": scored["hybrid"]}) == rp.build_report(
        **inputs)
    other = rp.score_stage(inputs["stages"][1], inputs["questions"], inputs["qrels"],
                           ["nDCG@10"])
    with pytest.raises(rp.ReportError, match="scored with \\['nDCG@10'\\], not the report's"):
        rp.build_report(**inputs, scored={"hybrid": other})


def test_scoring_a_stage_apart_checks_its_hits_first():
    inputs = sample_inputs()
    stage = dataclasses.replace(inputs["stages"][0], hits={"q1": [], "q2": []})
    with pytest.raises(rp.ReportError, match=r"missing \['q3'\]"):
        rp.score_stage(stage, inputs["questions"], inputs["qrels"], ["nDCG@10"])
    backwards = dataclasses.replace(inputs["stages"][0], hits={
        **inputs["stages"][0].hits, "q1": list(reversed(inputs["stages"][0].hits["q1"]))})
    with pytest.raises(rp.ReportError, match="ranks must increase"):
        rp.score_stage(backwards, inputs["questions"], inputs["qrels"], ["nDCG@10"])


def test_unshown_hits_are_records_with_a_rank_an_id_and_a_score_only():
    records = rp.HitRecord.unshown_from(11, [("c:x", 2.5), ("c:y", 1.0)])
    assert records == [rp.HitRecord(11, "c:x", "", 0, 0, 2.5, ""),
                       rp.HitRecord(12, "c:y", "", 0, 0, 1.0, "")]
    assert all(type(r) is rp.HitRecord and r.verdict is None and r.problem() is None
               for r in records)
    assert rp.HitRecord.unshown_from(1, []) == []


def test_each_stage_counts_the_distinct_documents_of_its_top_ten():
    bm25, hybrid = rp.build_report(**sample_inputs())["stages"]
    # q1: two chunks of one document; q2: nothing (counts 0); q3 is not judged
    assert bm25["distinct_documents@10"] == (1 + 0) / 2
    assert hybrid["distinct_documents@10"] == (1 + 1) / 2


def test_a_stage_whose_top_ten_do_not_name_their_documents_has_no_document_count():
    inputs = sample_inputs()
    bare = rp.HitRecord.unshown_from(1, [("c:a", 3.5), ("c:b", 1.25)])
    inputs["stages"][0] = dataclasses.replace(inputs["stages"][0],
                                              hits={"q1": bare, "q2": [], "q3": []})
    report = rp.build_report(**inputs)
    rp.validate(report)
    assert "distinct_documents@10" not in report["stages"][0]
    assert "distinct_documents@10" in report["stages"][1]


def test_unshown_hits_name_their_document_when_it_is_given():
    records = rp.HitRecord.unshown_from(6, [("c:x", 2.5), ("c:y", 1.0)], ["a.md"])
    assert records == [rp.HitRecord(6, "c:x", "a.md", 0, 0, 2.5, ""),
                       rp.HitRecord(7, "c:y", "", 0, 0, 1.0, "")]


def _gated_inputs() -> dict:
    """Sixty questions over three gated stages (bm25 and two hybrids), split for the gate."""
    rng = np.random.default_rng(4)
    inputs = sample_inputs()
    gold = inputs["questions"][0].gold
    questions, qrels = [], {}
    for i in range(60):
        qid = f"g{i:02d}"
        answerable = i % 3 != 0
        questions.append(rp.Question(query_id=qid, text=f"question {i}", kind="answerable"
                                     if answerable else "no-answer", gold=gold if answerable
                                     else (), split=("train", "calibration", "test")[i % 3
                                     if i % 5 else 1], near_miss=not answerable and i % 2 == 0))
        if answerable:
            qrels[qid] = {f"c:{i % 7}": 1}
    names = ("bm25.idf_coverage", "dense.margin", "agreement.top10")
    stages = []
    for name, mode in (("bm25", "bm25"), ("hybrid-a", "hybrid"), ("hybrid-b", "hybrid")):
        hits = {q.query_id: [hit(r, f"{(int(q.query_id[1:]) + r) % 7}", 0, 4, 3.0 - r)
                             for r in (1, 2)] for q in questions}
        signals = {q.query_id: {n: float(rng.integers(0, 5)) for n in names} for q in questions}
        stages.append(rp.StageResult(name=name, description=name, config={}, hits=hits,
                                     gate_mode=mode, signals=signals))
    return {**inputs, "questions": questions, "qrels": qrels, "stages": stages, "run": RUN,
            "settings": rp.Settings(resamples=300, permutations=300, seed=7)}


def test_the_gate_block_from_each_stage_s_entry_is_the_whole_block_computed_at_once():
    inputs = _gated_inputs()
    built = rp.build_report(**inputs)
    by_id = {q.query_id: q for q in inputs["questions"]}
    items = {s.name: (s.gate_mode, build._gate_items(s, by_id, inputs["qrels"]))
             for s in inputs["stages"]}
    assert built["gate"] == rp.canonical(abstention.report_block(items))
    assert set(built["gate"]["stages"]["hybrid-a"]["scorers"]) == {
        "both", "mean2", "both+agreement", "bm25 alone", "dense alone"}
    assert set(built["gate"]["stages"]["hybrid-b"]["scorers"]) == {"both"}
    scored = {s.name: rp.score_stage(s, inputs["questions"], inputs["qrels"],
                                     inputs["settings"].measures) for s in inputs["stages"]}
    assert rp.build_report(**inputs, scored=scored) == built
