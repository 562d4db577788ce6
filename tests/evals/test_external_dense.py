"""External dense and hybrid stages rank through groundkit's own retrievers (a real model)."""

from __future__ import annotations

from pathlib import Path

import pytest

from evals.external.units import MemoryUnits
from groundkit.retrieval.bm25 import BM25Index
from groundkit.retrieval.modes import make_retriever
from groundkit.text.analysis import Analyzer

pytest.importorskip("sentence_transformers")

UNITS = ["Every automobile in the fleet is serviced each spring.",
         "Deployment logs are kept for 30 days.",
         "The on-call engineer restarts the ingest worker."]


def units(cache: Path) -> MemoryUnits:
    return MemoryUnits("t", UNITS, lambda: BM25Index.build_from_texts(UNITS, Analyzer()),
                       embedding="local:all-MiniLM-L6-v2", cache=cache)


def test_the_dense_mode_ranks_a_paraphrase_first_and_caches_its_vectors(tmp_path: Path) -> None:
    first = units(tmp_path)
    ranked = make_retriever(first, "dense", {}).search("car maintenance", 2)
    assert ranked[0].position == 0
    [store] = tmp_path.glob("vectors-*")
    again = units(tmp_path)
    assert make_retriever(again, "dense", {}).search("car maintenance", 2) == ranked
    assert list(tmp_path.glob("vectors-*")) == [store]
    assert (tmp_path / "embeddings").is_dir()
    first.close()
    again.close()


def test_the_hybrid_mode_fuses_the_bm25_and_dense_unit_ranks(tmp_path: Path) -> None:
    memory = units(tmp_path)
    fused = make_retriever(memory, "hybrid", {"rrf_k": 60}).search("deployment logs", 3)
    assert fused[0].position == 1
    contributions = {c.retriever: c.rank for c in fused[0].explanation}
    assert fused[0].score == pytest.approx(sum(1 / (60 + r) for r in contributions.values()))
    memory.close()
