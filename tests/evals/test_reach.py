"""A measure a stage cannot reach is not a loss: a stage that declares it ranks 10 deep has
n/a for R@100 (JSON, summary, HTML, comparisons), real values for nDCG@10, and its R@100
is out of the Holm family; a stage that ranks the suite's depth is unchanged."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from test_report import build, sample_inputs

from evals import harness
from evals import report as rp
from evals.external.suite import _RunFileRun
from evals.report.compare import compare_runs, format_table
from evals.report.html import render
from evals.score import gates, stats
from evals.summary import summary_table

MEASURES = ("Success@1", "nDCG@10", "R@100")
NA = "n/a (ranks 10 deep)"


def stages(depth: int | None) -> list[rp.StageResult]:
    """The sample's bm25 and hybrid, and a third stage (hybrid's hits) ranking ``depth``."""
    base, hybrid = sample_inputs()["stages"]
    shallow = dataclasses.replace(hybrid, name="mcp-like", depth=depth)
    return [base, hybrid, shallow]


def report_with(depth: int | None) -> dict:
    settings = rp.Settings(measures=MEASURES, resamples=2_000, permutations=2_000, seed=7)
    return build(stages=stages(depth), settings=settings)


@pytest.fixture(scope="module")
def shallow() -> dict:
    return report_with(10)


@pytest.fixture(scope="module")
def deep() -> dict:
    return report_with(None)


def by_name(report: dict) -> dict[str, dict]:
    return {s["name"]: s for s in report["stages"]}


def comparison(report: dict, stage: str, measure: str) -> dict:
    return next(c for c in report["comparisons"]
                if (c["stage"], c["measure"]) == (stage, measure))


def test_which_measures_a_depth_reaches() -> None:
    assert rp.needed_depth("R@100") == 100 and rp.needed_depth("nDCG@10") == 10
    assert rp.needed_depth("MRR@10") == 10 and rp.needed_depth("AP") is None
    assert rp.unreachable(10, ["nDCG@10", "P@5", "R@100", "AP"]) == {"R@100": NA, "AP": NA}
    assert rp.unreachable(None, ["R@100", "AP"]) == {}


def test_a_stage_ranking_10_deep_has_no_r100_but_real_ndcg10(shallow: dict, deep: dict) -> None:
    rp.validate(shallow)
    stage = by_name(shallow)["mcp-like"]
    assert stage["depth"] == 10 and stage["unreachable"] == {"R@100": NA}
    assert stage["metrics"]["R@100"] is None
    assert stage["metrics"]["nDCG@10"] == by_name(deep)["mcp-like"]["metrics"]["nDCG@10"]
    for q in shallow["questions"]:
        if q["judged"]:
            scores = q["stages"]["mcp-like"]["scores"]
            assert scores["R@100"] is None and scores["nDCG@10"] is not None
    for groups in shallow["breakdowns"].values():
        for entry in groups.values():
            assert entry["stages"]["mcp-like"]["R@100"] is None
            assert entry["stages"]["hybrid"]["R@100"] is not None


def test_its_r100_comparison_is_not_made_and_says_why(shallow: dict) -> None:
    c = comparison(shallow, "mcp-like", "R@100")
    assert c["unreachable"] == NA
    assert all(c[k] is None for k in ("stage_mean", "delta", "ci_low", "ci_high", "p_value",
                                       "p_holm", "wins", "ties", "losses"))
    assert c["baseline_mean"] == by_name(shallow)["bm25"]["metrics"]["R@100"]
    made = comparison(shallow, "mcp-like", "nDCG@10")
    assert "unreachable" not in made and made["p_holm"] is not None


def test_it_is_out_of_the_holm_family_which_shrinks(shallow: dict, deep: dict) -> None:
    made = [c for c in shallow["comparisons"] if not c.get("unreachable")]
    assert len(made) == len(deep["comparisons"]) - 1 == 2 * len(MEASURES) - 1
    assert [c["p_holm"] for c in made] == pytest.approx(
        stats.holm([c["p_value"] for c in made]), abs=1e-6)
    # the p-values themselves do not change; only the family does
    assert [c["p_value"] for c in made] == [
        c["p_value"] for c in deep["comparisons"]
        if (c["stage"], c["measure"]) != ("mcp-like", "R@100")]


def test_apply_holm_leaves_a_comparison_not_made_as_it_is() -> None:
    made = stats.compare({"a": 0.0, "b": 0.5, "c": 1.0}, {"a": 1.0, "b": 0.5, "c": 1.0})
    gone = stats.Unreached(n=3, baseline_mean=0.5, stage_mean=None, confidence=0.95,
                           unreachable=NA)
    adjusted = stats.apply_holm([made, gone, made])
    assert adjusted[1] is gone
    assert [adjusted[0].p_holm, adjusted[2].p_holm] == pytest.approx(
        stats.holm([made.p_value, made.p_value]))


def test_a_stage_ranking_the_suite_depth_is_unchanged(deep: dict) -> None:
    plain = build(settings=rp.Settings(measures=MEASURES, resamples=2_000, permutations=2_000,
                                       seed=7))
    assert all("depth" not in s and "unreachable" not in s for s in deep["stages"])
    assert all("unreachable" not in c for c in deep["comparisons"])
    assert by_name(deep)["hybrid"] == by_name(plain)["hybrid"]
    assert by_name(deep)["bm25"] == by_name(plain)["bm25"]


def test_the_summary_shows_the_na_text_and_no_delta(shallow: dict) -> None:
    text = summary_table(shallow)
    row = next(line for line in text.splitlines() if line.startswith("mcp-like"))
    assert NA in row
    assert row.count("[") == len(MEASURES) - 1  # an interval for each measure it reaches
    hybrid = next(line for line in text.splitlines() if line.startswith("hybrid"))
    assert "n/a" not in hybrid and hybrid.count("[") == len(MEASURES)


def test_the_html_shows_the_na_text_grey_without_a_delta(shallow: dict) -> None:
    page = render(shallow)
    summary = page[page.index('<table id="summary">'):]
    row = summary[summary.index(">mcp-like<"):]
    row = row[:row.index("</tr>")]
    assert f'<span class="unclear na">{NA}</span>' in row
    assert row.count('class="delta') == len(MEASURES) - 1 and "worse" not in row.split(NA)[0]
    made = sum(not c.get("unreachable") for c in shallow["comparisons"])
    assert f"Holm across {made} comparisons" in page
    plot = page[page.index('aria-label="R@100 differences'):]
    plot = plot[:plot.index("</svg>")]
    assert NA in plot and plot.count("<circle") == 1  # hybrid's dot only


def test_a_pin_on_a_measure_the_stage_cannot_reach_is_not_checked(shallow: dict) -> None:
    expected = gates.expected_from(shallow)
    assert "R@100" not in expected["stages"]["mcp-like"]
    assert "nDCG@10" in expected["stages"]["mcp-like"]
    expected["stages"]["mcp-like"]["R@100"] = {"value": 0.9, "tolerance": 0.005}
    assert gates.check(shallow, expected) == []


def test_compare_runs_does_not_compare_what_a_side_cannot_reach(
        shallow: dict, deep: dict, tmp_path: Path) -> None:
    paths = []
    for name, built in (("a", deep), ("b", shallow)):
        paths.append(tmp_path / f"{name}.json")
        rp.write_json(built, paths[-1])
    outcome = compare_runs(*paths, resamples=500, permutations=500)
    gone = [c for c in outcome["comparisons"] if c.get("unreachable")]
    assert [(c["stage_b"], c["measure"]) for c in gone] == [("mcp-like", "R@100")]
    assert gone[0]["p_holm"] is None and gone[0]["mean_b"] is None
    assert gone[0]["mean_a"] == by_name(deep)["mcp-like"]["metrics"]["R@100"]
    made = [c for c in outcome["comparisons"] if not c.get("unreachable")]
    assert [c["p_holm"] for c in made] == pytest.approx(
        stats.holm([c["p_value"] for c in made]), abs=1e-6)
    assert NA in format_table(outcome)


class Declared:
    depth = 10


def test_a_stage_run_declares_its_depth_and_deeper_than_the_suite_is_none() -> None:
    assert harness.declared_depth(Declared(), 100) == 10  # type: ignore[arg-type]
    assert harness.declared_depth(Declared(), 10) is None  # type: ignore[arg-type]
    assert harness.declared_depth(object(), 100) is None  # type: ignore[arg-type]


def test_a_run_file_ranks_as_deep_as_its_deepest_list_or_the_whole_collection(
        tmp_path: Path) -> None:
    run = tmp_path / "run.trec"
    run.write_text("".join(f"q1 Q0 d{i} {i + 1} {10 - i} tag\n" for i in range(7))
                   + "q2 Q0 d1 1 3.0 tag\n", encoding="utf-8")
    collection = type("Prepared", (), {"texts": [""] * 7})
    assert _RunFileRun(collection, str(run), "a run").depth is None  # type: ignore[arg-type]
    collection.texts = [""] * 60  # a list of 7 where the collection holds 60 documents
    assert _RunFileRun(collection, str(run), "a run").depth == 7  # type: ignore[arg-type]


def test_an_mcp_stage_through_the_harness_has_no_r100(tmp_path: Path) -> None:
    pytest.importorskip("mcp")
    from golden_fixture import tiny_golden

    from evals.golden.suite import evaluate_golden
    from evals.mcp_stage import MAX_TOP_K

    golden = tiny_golden(tmp_path / "golden" / "v1")
    built = evaluate_golden(golden, tmp_path / "out", stage_names=["bm25", "mcp-stdio-bm25"],
                            settings=rp.Settings(resamples=200, permutations=200))
    rp.validate(json.loads(json.dumps(built)))
    mcp, base = by_name(built)["mcp-stdio-bm25"], by_name(built)["bm25"]
    assert mcp["depth"] == MAX_TOP_K and mcp["unreachable"] == {"R@100": NA}
    assert mcp["metrics"]["R@100"] is None and base["metrics"]["R@100"] is not None
    assert mcp["metrics"]["nDCG@10"] == base["metrics"]["nDCG@10"]
    assert comparison(built, "mcp-stdio-bm25", "R@100")["p_holm"] is None
    assert NA in summary_table(built)
