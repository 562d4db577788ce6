"""Pins of the per-mode answers and the twins block: each on the stage that made it."""

from __future__ import annotations

from evals.score import gates

SCORES = {"measured": True, "part": "test", "answer_success": 0.5, "citations": 4}


def report(stages: list[str], *, twins: bool) -> dict:
    out: dict = {"baseline": "bm25",
                 "stages": [{"name": s, "metrics": {"nDCG@10": 0.5},
                             "abstention": {"no_answer_abstained": 0}} for s in stages],
                 "answers": {"extractive": {"all": {}, "gate": None, "by_mode": {
                     "bm25": {**SCORES, "stage": "bm25"},
                     "dense": ({**SCORES, "stage": "dense-minilm"} if "dense-minilm" in stages
                               else {"measured": False, "reason": "not measured"})}}}}
    if twins:
        out["twins"] = {"stages": {"bm25": {"markdown": {"nDCG@10": 0.6}, "html": {
            "nDCG@10": 0.6}, "delta": {"nDCG@10": {"delta": 0.0}}}}}
    return out


def test_per_mode_answers_are_pinned_on_the_stage_whose_collection_answered() -> None:
    expected = gates.expected_from(report(["bm25", "dense-minilm"], twins=True))
    assert "answers.bm25.answer_success" in expected["stages"]["bm25"]
    assert "answers.dense.answer_success" in expected["stages"]["dense-minilm"]
    assert "answers.dense.answer_success" not in expected["stages"]["bm25"]
    assert "twins.delta.nDCG@10" in expected["stages"]["bm25"]
    assert gates.check(report(["bm25", "dense-minilm"], twins=True), expected) == []
    # a run of bm25 alone, the two-formats run skipped: nothing it did not make is missed
    assert gates.check(report(["bm25"], twins=False), expected) == []
    changed = report(["bm25", "dense-minilm"], twins=True)
    changed["answers"]["extractive"]["by_mode"]["dense"]["answer_success"] = 0.4
    assert gates.check(changed, expected) == [
        "dense-minilm: answers.dense.answer_success = 0.4000, expected 0.5000 ± 0.005"]
