"""The dense and hybrid engines of the external runner (the local model, real vectors)."""

from __future__ import annotations

from pathlib import Path

import pytest

from evals.external import engines

pytest.importorskip("sentence_transformers")

UNITS = ["Every automobile in the fleet is serviced each spring.",
         "Deployment logs are kept for 30 days.",
         "The on-call engineer restarts the ingest worker."]


def test_the_dense_engine_ranks_a_paraphrase_first_and_caches_its_vectors(
    tmp_path: Path,
) -> None:
    rank = engines.dense_ranker(UNITS, "local:all-MiniLM-L6-v2", 2, tmp_path)
    [(first, _), _] = rank("car maintenance")
    assert first == 0
    [cached] = tmp_path.glob("vectors-*.npy")
    again = engines.dense_ranker(UNITS, "local:all-MiniLM-L6-v2", 2, tmp_path)
    assert again("car maintenance") == rank("car maintenance")
    assert list(tmp_path.glob("vectors-*.npy")) == [cached]


def test_the_hybrid_engine_fuses_ranks_only() -> None:
    lexical = lambda q: [(1, 9.0), (2, 3.0)]  # noqa: E731
    dense = lambda q: [(2, 0.8), (0, 0.5)]  # noqa: E731
    fused = engines.hybrid_ranker(lexical, dense, 60, 3)("q")
    assert [p for p, _ in fused] == [2, 1, 0]
    assert fused[0][1] == pytest.approx(1 / (60 + 2) + 1 / (60 + 1))
