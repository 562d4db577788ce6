"""The lucene stage: Apache Lucene itself ranks the same units as groundkit's bm25."""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

import pytest
from golden_fixture import tiny_golden

from evals import agreement, report
from evals.__main__ import main
from evals.external.beir import write_beir
from evals.external.dataset import Dataset, Doc
from evals.golden.suite import evaluate_golden
from evals.peers import lucene
from evals.report import HitRecord
from groundkit.retrieval.bm25 import BM25Params
from groundkit.text.analysis import Analyzer

REASON = lucene.unavailable()
if REASON is not None and os.environ.get("GROUNDKIT_REQUIRE_LUCENE") == "1":
    raise RuntimeError(f"GROUNDKIT_REQUIRE_LUCENE=1 but the Lucene peer cannot run: {REASON}")
needs_lucene = pytest.mark.skipif(REASON is not None, reason=f"lucene: {REASON}")


def test_an_empty_peer_folder_says_how_to_set_it_up(tmp_path: Path) -> None:
    assert "make lucene" in str(lucene.unavailable(tmp_path))


def test_a_driver_compiled_from_another_source_is_stale(tmp_path: Path) -> None:
    for jar in lucene.JARS:
        (tmp_path / jar).write_bytes(b"")
    (tmp_path / "classes").mkdir()
    (tmp_path / "classes" / "driver.sha256").write_text("0" * 64 + "\n")
    assert "stale" in str(lucene.unavailable(tmp_path))


def test_texts_reach_the_driver_whole() -> None:
    text = "tab\there\nnew line \\ back\rslash"
    assert lucene.escape(text).count("\n") == 0
    assert "\t" not in lucene.escape(text)


@needs_lucene
def test_lucene_ranks_like_groundkit_bm25_and_reports_its_query_terms() -> None:
    texts = ["the cat sat on the mat", "a dog\tran\nfast \\ far", "cats and dogs", "zebra"]
    retriever = lucene.LuceneRetriever(texts, Analyzer(), BM25Params())
    try:
        assert retriever.units == 4
        ranked = retriever.pairs("dogs running", 10)
        assert [p for p, _ in ranked] == [1, 2] or [p for p, _ in ranked] == [2, 1]
        assert all(score > 0 for _, score in ranked)
        assert retriever.pairs("the of", 10) == []  # stopwords only: no hit
        hits = retriever.search("cats", 1)
        assert [h.position for h in hits] == [2]
        assert retriever.units_differing["count"] == 0
    finally:
        retriever.close()


@needs_lucene
def test_a_unit_lucene_analyses_otherwise_is_counted_with_its_terms() -> None:
    # groundkit cuts Japanese into overlapping bigrams; Lucene's EnglishAnalyzer into
    # single ideographs
    retriever = lucene.LuceneRetriever(["plain words", "日本語の文書"], Analyzer(), BM25Params())
    try:
        differing = retriever.units_differing
        assert differing["count"] == 1 and differing["examples"][0]["unit"] == 1
        assert "日本" in differing["examples"][0]["groundkit_only"]
        assert "日" in differing["examples"][0]["lucene_only"]
        retriever.pairs("日本語", 10)
        assert retriever.analysis["日本語"]["groundkit"] == ["日本", "本語"]
        assert retriever.terms["lucene"] != retriever.terms["groundkit"]
    finally:
        retriever.close()


@needs_lucene
def test_a_golden_run_carries_the_agreement_block_and_its_checks(tmp_path: Path) -> None:
    golden = tiny_golden(tmp_path / "golden" / "v1")
    built = evaluate_golden(golden, tmp_path / "out", stage_names=["bm25", "lucene"],
                            settings=report.Settings(resamples=200, permutations=200))
    block = built["agreement"]["lucene"]
    assert block["counterpart"] == "bm25" and block["questions"] == 6
    assert block["identical_top10"] == 6 and block["differing"] == []
    assert {t: v["met"] for t, v in block["targets"].items()} == {
        "identical_share": True, "ndcg10_delta": True}
    assert block["indexed_terms"]["lucene"] == block["indexed_terms"]["groundkit"]
    assert block["units_analysed_differently"] == {"count": 0, "examples": []}
    stage = next(s for s in built["stages"] if s["name"] == "lucene")
    assert stage["config"]["engine"] == "lucene"
    assert not _lucene_children()  # the harness ended the JVM once the stage had ranked


def _lucene_children() -> list[str]:
    """The command lines of this process's children running the Lucene driver."""
    kids = {pid for task in Path("/proc/self/task").iterdir()
            for pid in (task / "children").read_text().split()}
    lines = []
    for pid in kids:
        with contextlib.suppress(OSError):
            lines.append((Path("/proc") / pid / "cmdline").read_bytes().decode(errors="replace"))
    return [line for line in lines if "GroundkitLucene" in line]


@needs_lucene
def test_an_external_run_measures_lucene_beside_the_baseline(tmp_path: Path) -> None:
    docs = tuple(Doc(doc_id=f"d{i}", title="", text=f"harbour stone {i} lantern " * (i % 3 + 1))
                 for i in range(12))
    dataset = Dataset(name="harbour", docs=docs, queries={"q1": "lantern harbour stone"},
                      qrels={"q1": {"d3": 1}})
    beir = write_beir(dataset, tmp_path / "harbour")
    assert main(["run", "--dataset", f"beir:{beir}", "--cache", str(tmp_path / "cache"),
                 "--out", str(tmp_path / "out"), "--resamples", "200", "--permutations", "200",
                 "--expected-dir", str(tmp_path), "--stages", "bm25", "lucene"]) == 0
    built = json.loads((tmp_path / "out" / "harbour.json").read_text())
    assert built["agreement"]["lucene"]["questions"] == 1


def _hits(scores: dict[str, float]) -> list[HitRecord]:
    return [HitRecord(rank=r, chunk_id=c, doc_id="d", start=0, end=1, score=s, text="")
            for r, (c, s) in enumerate(scores.items(), start=1)]


def _stage(name: str, hits: list[HitRecord], config: dict[str, object] | None = None
           ) -> report.StageResult:
    return report.StageResult(name=name, description=name, config=config or {},
                              hits={"q1": hits})


QUESTION = [report.Question(query_id="q1", text="cats", kind="answerable")]


@pytest.mark.parametrize(("ours", "theirs", "analysis", "reason"), [
    ({"a": 2.0, "b": 1.0}, {"a": 2.0, "b": 1.0}, None, None),
    ({"a": 2.0, "b": 1.999999}, {"b": 2.0, "a": 1.99999999}, None, "ties"),
    ({"a": 2.0, "b": 1.0}, {"b": 2.0, "a": 1.0}, None, "scores"),
    ({"a": 2.0, "b": 1.0}, {"b": 2.0, "a": 1.0}, "terms", "statistics"),
    ({"a": 2.0, "b": 1.0}, {"b": 2.0, "a": 1.0}, {"lucene": ["cat"], "groundkit": ["cats"]},
     "analysis"),
])
def test_each_difference_is_given_its_reason(ours: dict[str, float], theirs: dict[str, float],
                                             analysis: dict[str, list[str]] | str | None,
                                             reason: str | None) -> None:
    config: dict[str, object] = {"indexed_terms": {"lucene": 5, "groundkit": 5}}
    if analysis == "terms":  # the engines indexed different token counts
        config["indexed_terms"] = {"lucene": 5, "groundkit": 6}
    elif analysis:
        config["query_analysis"] = {"cats": analysis}
    block = agreement.compare([_stage("bm25", _hits(ours)),
                               _stage("lucene", _hits(theirs), config)],
                              {"lucene": "bm25"}, QUESTION)["lucene"]
    if reason is None:
        assert block["identical_top10"] == 1 and block["tau_mean"] == 1.0
    else:
        assert block["differing"][0]["reason"] == reason
        assert block["reasons"][reason] == 1


def test_the_summary_and_the_page_show_the_block() -> None:
    from evals.report.agreement_view import agreement_lines, agreement_section

    block = agreement.compare([_stage("bm25", _hits({"a": 2.0, "b": 1.0})),
                               _stage("lucene", _hits({"b": 2.0, "a": 1.0}))],
                              {"lucene": "bm25"}, QUESTION)
    built = {"agreement": agreement.with_targets(block, {"lucene": -0.01})}
    line = agreement_lines(built)[1]
    assert "identical top 10 0/1 as bm25" in line and "scores 1" in line
    assert ("target missed: identical top 10 0.0% (>= 0.95), nDCG@10 delta -0.0100 "
            "(within ±0.002)") in line
    page = agreement_section(built)
    assert 'id="agreement-table"' in page and "<td>0/1</td>" in page


def test_a_machine_without_lucene_reports_the_stage_not_measured_with_the_reason(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(lucene.ENV, str(tmp_path / "no-lucene"))
    golden = tiny_golden(tmp_path / "golden" / "v1")
    built = evaluate_golden(golden, tmp_path / "out", stage_names=["bm25", "lucene"],
                            settings=report.Settings(resamples=200, permutations=200))
    assert [s["name"] for s in built["stages"]] == ["bm25"]
    assert "make lucene" in built["config"]["skipped_stages"]["lucene"]
    assert "agreement" not in built
