"""The harness end to end on a small fixture corpus: a pinned "flash" tier."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from golden_fixture import tiny_golden

from evals import report
from evals.golden.suite import evaluate_golden
from evals.harness import summary_table
from evals.score import gates
from groundkit.errors import IntegrityError, UsageError


@pytest.fixture
def golden(tmp_path: Path) -> Path:
    return tiny_golden(tmp_path / "golden" / "v1")


def run(golden: Path, out: Path, stages: list[str] | None = None) -> dict[str, object]:
    return evaluate_golden(golden, out, stage_names=stages or ["bm25", "bm25-nostem"],
                           settings=report.Settings(resamples=500, permutations=500))


def test_the_flash_tier_reproduces_its_pinned_metrics(golden: Path, tmp_path: Path) -> None:
    built = run(golden, tmp_path / "out")
    bm25 = next(s for s in built["stages"] if s["name"] == "bm25")  # type: ignore[attr-defined]
    # Every judged question's answer chunk ranks first: each document is one chunk here.
    assert bm25["metrics"]["Success@1"] == 1.0
    assert bm25["metrics"]["RR@10"] == 1.0
    # q5 shares "policy"-less words with nothing... except "the"/"is" (stopwords): it abstains;
    # q6 matches nothing at all.
    assert bm25["abstention"] == {"answerable_abstained": 0, "answerable_total": 4,
                                  "no_answer_abstained": 2, "no_answer_total": 2}


def test_two_runs_write_byte_identical_reports_apart_from_the_run_block(
    golden: Path, tmp_path: Path,
) -> None:
    texts = []
    for name in ("a", "b"):
        run(golden, tmp_path / name)
        data = json.loads((tmp_path / name / "latest.json").read_text())
        data.pop("run")
        texts.append(json.dumps(data, sort_keys=True))
        assert (tmp_path / name / "runs" / "bm25.trec").read_text().startswith("q0001 Q0 golden-")
    assert texts[0] == texts[1]


def test_every_stage_is_compared_with_the_baseline_on_the_same_questions(
    golden: Path, tmp_path: Path,
) -> None:
    built = run(golden, tmp_path / "out")
    comparisons = built["comparisons"]
    assert {c["stage"] for c in comparisons} == {"bm25-nostem"}  # type: ignore[union-attr]
    assert all(c["n"] == 4 and c["p_holm"] is not None for c in comparisons)  # type: ignore


def test_an_unknown_stage_fails_before_any_retrieval(golden: Path, tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="valid stages: bm25"):
        run(golden, tmp_path / "out", ["bm25", "nope"])
    assert not (tmp_path / "out").exists()


def test_a_corpus_checksum_mismatch_fails_before_any_retrieval(
    golden: Path, tmp_path: Path,
) -> None:
    (golden / "docs" / "oncall.md").write_text("tampered\n")
    with pytest.raises(IntegrityError, match="checksum mismatch"):
        run(golden, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_gates_pass_on_their_own_values_and_fail_loudly_outside_the_band(
    golden: Path, tmp_path: Path,
) -> None:
    built = run(golden, tmp_path / "out")
    expected = gates.expected_from(built, tolerance=0.01)
    assert gates.check(built, expected) == []
    expected["stages"]["bm25"]["nDCG@10"]["value"] -= 0.02
    [failure] = gates.check(built, expected)
    assert failure.startswith("bm25: nDCG@10 = ") and "± 0.01" in failure
    expected["manifest_sha256"] = "0" * 64
    assert any("manifest" in f for f in gates.check(built, expected))


def test_the_summary_table_shows_deltas_with_intervals(golden: Path, tmp_path: Path) -> None:
    table = summary_table(run(golden, tmp_path / "out"), ["nDCG@10"])
    lines = table.splitlines()
    assert lines[0].split() == ["stage", "nDCG@10", "abstained"]
    assert lines[3].startswith("bm25-nostem") and "[" in lines[3]


def test_the_gil_switch_interval_is_restored_even_when_a_stage_fails(
    golden: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    import sys

    from evals import harness

    before = sys.getswitchinterval()
    run(golden, tmp_path / "ok")
    assert sys.getswitchinterval() == before

    def broken(*args: object) -> None:
        assert sys.getswitchinterval() == harness.SWITCH_S
        raise RuntimeError("a stage failed")

    monkeypatch.setattr(harness, "_run_stage", broken)
    with pytest.raises(RuntimeError, match="a stage failed"):
        run(golden, tmp_path / "broken")
    assert sys.getswitchinterval() == before
