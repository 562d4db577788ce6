"""Corpus shift: a gate calibrated on other documents' questions, measured on real data."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from evals.external import shift
from evals.external.registry import Sources

REPO = Path(__file__).resolve().parents[2]
DATA = Path(os.environ.get("GROUNDKIT_DATA", REPO.parent / "shared" / "data"))


@pytest.mark.skipif(not DATA.is_dir(), reason=f"no test-collection mirror at {DATA}")
def test_the_guarantee_holds_with_the_collections_own_calibration_and_not_when_borrowed(
        tmp_path: Path) -> None:
    block = shift.measure(REPO / "golden" / "v2",
                          Sources(data=DATA, irds_cache=tmp_path / "irds"), tmp_path,
                          resplits=50)
    assert block["counts"] == {"golden_calibration_no_answer": 82, "target_answerable": 300,
                               "target_foreign": 337}
    at = {name: {r["alpha"]: r for r in block[name]["at_alpha"]}
          for name in ("transferred", "own_calibration", "reverse")}
    for alpha, row in at["own_calibration"].items():      # exchangeable: at most alpha
        assert row["false_answer_rate_mean"] <= alpha + 0.02
    # Borrowed from harder (near-miss) questions: safe, but it answers far fewer claims.
    assert at["transferred"][0.1]["false_answer_rate"] <= 0.1
    assert (at["transferred"][0.1]["coverage_retrieved"]
            < at["own_calibration"][0.1]["coverage_retrieved_mean"])
    # Borrowed from easier (off-topic) questions: the promise breaks.
    assert at["reverse"][0.1]["false_answer_interval"][0] > 0.1
    assert "reverse" in "\n".join(shift.summary(block))
