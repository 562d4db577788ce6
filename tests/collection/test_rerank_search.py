"""Reranking end to end: the Python API, ``grk search --rerank``, ``grk rerankers`` and the
harness's rerank stages (the MCP ``rerank`` argument: tests/mcp_server/test_rerank_tool.py),
with a real tiny cross-encoder (random weights, fixed seed: its scores mean nothing, the
mechanics are what is tested)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import RERANK_DOCS, TreeMaker
from golden_fixture import tiny_golden

from groundkit.cli import main
from groundkit.collection import Collection, IndexConfig, index
from groundkit.errors import IndexMismatchError, UsageError
from groundkit.retrieval.rerank import CrossEncoderReranker
from groundkit.testing.tiny_cross_encoder import make_tiny_cross_encoder

DOCS = RERANK_DOCS


@pytest.fixture
def model(tiny_cross_encoder: Path) -> Path:
    return tiny_cross_encoder


@pytest.fixture
def coll(make_tree: TreeMaker, home: Path) -> Collection:
    index("k", IndexConfig(roots=(str(make_tree(DOCS)),)), home=home)
    return Collection.open("k", home)


def test_search_reorders_the_shortlist_and_explains_the_move(coll: Collection, model: Path) -> None:
    reranker = CrossEncoderReranker(model)
    plain = coll.search("lamps keepers", top_k=12)
    again = coll.search("lamps keepers", top_k=12, rerank=reranker, rerank_depth=8)
    assert {h.chunk.chunk_id for h in again[:8]} == {h.chunk.chunk_id for h in plain[:8]}
    assert [h.chunk.chunk_id for h in again[8:]] == [h.chunk.chunk_id for h in plain[8:]]
    scores = reranker.score("lamps keepers", [h.chunk.text for h in plain[:8]])
    best = max(range(8), key=lambda i: (scores[i], -i))
    assert again[0].chunk.chunk_id == plain[best].chunk.chunk_id
    moved = next(c for c in again[0].explanation if c.retriever == "rerank")
    assert moved.detail["rank_before"] == best + 1 and moved.detail["rank_after"] == 1
    top3 = coll.search("lamps keepers", top_k=3, rerank=reranker, rerank_depth=8)
    assert [h.chunk.chunk_id for h in top3] == [h.chunk.chunk_id for h in again[:3]]
    reranker.close()


def test_the_command_line_registers_lists_and_searches_with_a_reranker(
        coll: Collection, model: Path, home: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rerankers", "-c", "k", "--add", "tiny", str(model), "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)["rerankers"]["tiny"]
    assert listed["path"] == str(model) and len(listed["identity"]["weights_sha256"]) == 64
    for name in ("tiny", str(model)):  # a registered name, or a folder
        code = main(["search", "lamps keepers", "-c", "k", "--rerank", name, "--json",
                     "--explain"])
        hits = json.loads(capsys.readouterr().out)["hits"]
        assert code == 0 and hits and any(e["retriever"] == "rerank"
                                          for e in hits[0]["explanation"])
    assert main(["search", "lamps keepers", "-c", "k", "--rerank", "tiny", "--explain"]) == 0
    assert "rerank (replace): cross-encoder score" in capsys.readouterr().out
    assert main(["search", "lamps", "-c", "k", "--rerank", "nosuch"]) == UsageError.exit_code
    assert "unknown reranker 'nosuch'" in capsys.readouterr().err
    copy = tmp_path / "other-ce"
    shutil.copytree(model, copy)
    assert main(["rerankers", "-c", "k", "--add", "moved", str(copy)]) == 0
    make_tiny_cross_encoder(copy, seed=1)  # new weights under a registered name: fail closed
    capsys.readouterr()
    assert main(["search", "lamps", "-c", "k", "--rerank", "moved"]) == \
        IndexMismatchError.exit_code
    assert main(["rerankers", "-c", "k", "--remove", "moved"]) == 0


def test_harness_rerank_stages_are_not_measured_without_a_model_and_measured_with_one(
        tmp_path: Path, model: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from evals import report
    from evals.golden.suite import evaluate_golden
    from evals.summary import summary_table

    golden = tiny_golden(tmp_path / "golden" / "v1")
    settings = report.Settings(resamples=200, permutations=200)
    monkeypatch.delenv("GROUNDKIT_RERANK_MODEL", raising=False)
    built = evaluate_golden(golden, tmp_path / "a", stage_names=["bm25", "bm25-rerank"],
                            settings=settings)
    assert [s["name"] for s in built["stages"]] == ["bm25"]
    assert built["config"]["skipped_stages"]["bm25-rerank"].startswith(
        "not measured (no reranker model configured")
    assert "\nstages not run:\n  bm25-rerank: not measured (no reranker" in summary_table(built)
    monkeypatch.setenv("GROUNDKIT_RERANK_MODEL", str(model))
    built = evaluate_golden(golden, tmp_path / "b",
                            stage_names=["bm25", "bm25-rerank", "bm25-rerank-rrf"],
                            settings=settings)
    stages = {s["name"]: s for s in built["stages"]}
    config = stages["bm25-rerank"]["config"]["rerank"]
    assert config["method"] == "replace" and config["depth"] == 30
    assert config["identity"]["weights_sha256"] == CrossEncoderReranker(model).identity.to_dict()[
        "weights_sha256"]
    assert config["gate"] == "decided on the first stage (bm25), before reranking"
    assert stages["bm25-rerank-rrf"]["config"]["rerank"]["method"] == "rrf"
    report.validate(built)
