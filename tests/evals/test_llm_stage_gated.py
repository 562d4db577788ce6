"""The reader's stages end to end on golden v4 with the real model (EVAL_GATED=1 only).

A small sample (three questions of each part) so the test takes minutes, not an hour
(10-15 minutes on the loaded two-core build machine: over pytest's default 600 s once);
``make eval-llm`` runs the fixed sample. The golden collections are the checkout's
(``.cache/golden``, as ``make eval`` keeps them), so the hybrid gate does not embed golden
v4 anew. Needs ``make llm``; without the runtime or the model the test is skipped saying
which.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from evals import llm_run
from evals.cli import DEFAULT_CACHE, DEFAULT_GOLDEN
from evals.report import model as rpt
from groundkit.embeddings import gguf

MODEL = os.environ.get("GROUNDKIT_LLM_TEST_MODEL", gguf.READER)

pytestmark = [
    pytest.mark.gated,
    pytest.mark.skipif(os.environ.get("EVAL_GATED") != "1",
                       reason=f"needs llama-cpp-python and {MODEL} (make llm); set EVAL_GATED=1"),
]


@pytest.mark.timeout(3600)  # about 25 judgements of ~10 CPU-s, and golden v4 indexed
def test_the_stages_measure_a_small_sample_and_record_identity_and_cost(tmp_path: Path) -> None:
    reason = llm_run.unavailable(MODEL)
    if reason:
        pytest.skip(reason)
    block = llm_run.measure(DEFAULT_GOLDEN, DEFAULT_CACHE, MODEL,
                            rpt.Settings(resamples=200, permutations=200), lambda _: None,
                            roles=("judge",), store=tmp_path / "judgements.jsonl",
                            sizes={"answerable": 3, "no_answer": 3, "calibration": 3,
                                   "train_answerable": 3, "train_no_answer": 3})
    assert block["measured"] and block["model"]["sha256"] == gguf.MODELS[MODEL].sha256
    assert block["sample"]["test_answerable"] == 3 and block["sample"]["train_no_answer"] == 3
    assert block["cost"]["calls"] >= 3 * 3 + 6 + 6
    assert block["cost"]["cpu_s_per_call"] > 0 and block["load"]["model_sha256_cpu_s"] > 0
    train = [r for r in block["pairs"] if r["part"] == "train"]
    assert block["judge"]["train"]["n"] == len(train) > 0  # train pairs are kept apart
    assert block["judge"]["all"]["n"] == len(block["pairs"]) - len(train)
    assert block["rerank"]["questions"] == 3
    assert {"judge", "bm25", "judge+bm25 (both)"} <= set(block["gate"]["bm25"]["scorers"])
    hybrid = block["gate"]["hybrid"]
    assert hybrid.get("measured") is False or "judge+hybrid (both)" in hybrid["scorers"]
    page = llm_run.render(json.loads(json.dumps(block)))
    assert "sha256" in page and "<table" in page
