"""A real cross-encoder on golden v2 (EVAL_GATED=1 with GROUNDKIT_RERANK_MODEL=PATH only).

No weights can be downloaded on the build machine, so this is skipped there with the
reason; with a model folder it measures the rerank stages against BM25 with intervals.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from evals import report
from evals.golden.suite import evaluate_golden

REPO = Path(__file__).resolve().parents[2]
MODEL = os.environ.get("GROUNDKIT_RERANK_MODEL", "")

pytestmark = [
    pytest.mark.gated,
    pytest.mark.skipif(
        os.environ.get("EVAL_GATED") != "1" or not Path(MODEL).is_dir(),
        reason="needs a cross-encoder model folder: set EVAL_GATED=1 and "
               "GROUNDKIT_RERANK_MODEL=PATH"),
]


def test_a_real_cross_encoder_is_measured_against_bm25_with_intervals(tmp_path: Path) -> None:
    built = evaluate_golden(REPO / "golden" / "v2", tmp_path,
                            stage_names=["bm25", "bm25-rerank", "bm25-rerank-rrf"],
                            settings=report.Settings())
    stages = {s["name"]: s for s in built["stages"]}
    for name in ("bm25-rerank", "bm25-rerank-rrf"):
        assert stages[name]["config"]["rerank"]["identity"]["name"]
    compared = {(c["stage"], c["measure"]): c for c in built["comparisons"]}
    c = compared["bm25-rerank", "nDCG@10"]
    assert c["ci_low"] <= c["delta"] <= c["ci_high"]
    report.validate(built)
