"""MCP stages: the golden questions through a real ``grk serve`` (stdio and HTTP), compared
question for question with their direct twins."""

from __future__ import annotations

import pytest
from golden_fixture import tiny_golden

from evals import mcp_stage, report
from evals.golden.suite import evaluate_golden
from evals.harness import preflight
from evals.report.html import render
from evals.stages import STAGES, resolve
from evals.summary import summary_table
from groundkit.errors import UsageError

pytest.importorskip("mcp")


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    base = tmp_path_factory.mktemp("mcp-eval")
    golden = tiny_golden(base / "golden" / "v1")
    return evaluate_golden(golden, base / "out",
                           stage_names=["bm25", "mcp-stdio-bm25", "mcp-http-bm25"],
                           settings=report.Settings(resamples=200, permutations=200))


def test_both_transports_rank_every_question_exactly_as_the_direct_stage(
        built: dict[str, object]) -> None:
    block = built["mcp"]
    assert set(block) == {"mcp-stdio-bm25", "mcp-http-bm25"}  # type: ignore[arg-type]
    for name, b in block.items():  # type: ignore[union-attr]
        assert (b["twin"], b["differing"], b["first_differences"]) == ("bm25", 0, [])
        assert b["questions"] == 6 and b["transport"] == name.split("-")[1]
    checks = [c for c in built["config"]["checks"] if c["kind"] == "mcp-twin"]  # type: ignore
    assert len(checks) == 2 and all(c["passed"] for c in checks)
    stages = {s["name"]: s["metrics"] for s in built["stages"]}  # type: ignore[union-attr]
    assert stages["mcp-http-bm25"]["nDCG@10"] == stages["bm25"]["nDCG@10"]
    report.validate(built)
    assert report.canonical(built) == built  # the MCP blocks are added canonical


def test_latency_per_call_is_in_the_run_block_the_summary_and_the_html(
        built: dict[str, object]) -> None:
    timings = built["run"]["mcp_latency_ms"]  # type: ignore[index]
    for name in ("mcp-stdio-bm25", "mcp-http-bm25"):
        t = timings[name]
        assert t["n"] == 6 and 0 < t["p50"] <= t["p99"]
    text = summary_table(built)  # type: ignore[arg-type]
    assert "mcp-http-bm25      6/6 questions as bm25  per call p50" in text
    assert "[pass] mcp-twin: mcp-stdio-bm25" in text
    page = render(built)  # type: ignore[arg-type]
    assert 'id="mcp-table"' in page and "6/6 (identical)" in page


def test_a_difference_from_the_twin_is_counted_shown_and_fails_the_check() -> None:
    def stage(name: str, score: float) -> report.StageResult:
        hits = {"q1": [report.HitRecord(rank=1, chunk_id="k:a", doc_id="a.md", start=0, end=5,
                                        score=score, text="alpha")]}
        return report.StageResult(name=name, description="", config={"transport": "http"},
                                  hits=hits)

    block = mcp_stage.compare([stage("bm25", 2.0), stage("mcp-http-bm25", 2.5)],
                              {"mcp-http-bm25": "bm25"})
    b = block["mcp-http-bm25"]
    assert b["differing"] == 1 and b["first_differences"][0]["first_rank"] == 1
    [check] = mcp_stage.checks(block)
    assert not check["passed"] and check["observed"] == 1.0


def test_an_mcp_stage_without_its_twin_is_refused_before_any_retrieval() -> None:
    stages = [STAGES["bm25"], STAGES["mcp-http-hybrid"]]
    with pytest.raises(UsageError, match="add hybrid-rrf60 to the stages"):
        preflight(stages)
    assert [s.name for s in resolve(["mcp-http-bm25"])] == ["bm25", "mcp-http-bm25"]


def test_latency_uses_the_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    assert mcp_stage.latency(values) == {"p50": 50.0, "p99": 99.0, "mean": 50.5, "n": 100}
    assert mcp_stage.latency([])["p50"] is None
