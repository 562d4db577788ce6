"""Stages scored apart from the report (in the process that ranked them) and the hit
records a report keeps of them."""

from __future__ import annotations

import dataclasses

import pytest
from test_report import sample_inputs  # the same inputs (tests/evals is on the path)

from evals import report as rp


def test_stages_scored_apart_build_the_report_built_from_their_hits():
    inputs = sample_inputs()
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
