"""The external runner and CLI: reports, TREC runs in and out, checks, gates, docs."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from beir_fixture import synthetic_beir

from evals import report as rpt
from evals import trec
from evals.__main__ import main
from evals.engines import top_positive
from evals.external.registry import Reference
from evals.external.suite import run_checks
from evals.external.synthetic import make_dataset
from evals.external.units import document_hits, to_documents
from evals.peers import lucene
from evals.score import gates

REPO = Path(__file__).resolve().parents[2]
DATA = Path(os.environ.get("GROUNDKIT_DATA", REPO.parent / "shared" / "data"))

LUCENE = ("lucene", "lucene-terms") if lucene.unavailable() is None else ()
"""The Lucene stages run on every external dataset where Lucene is set up (make lucene)."""


@pytest.fixture(scope="module")
def beir_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return synthetic_beir(tmp_path_factory.mktemp("beir"))


def _run(tmp: Path, beir: Path, *extra: str) -> tuple[int, dict]:
    code = main(["run", "--dataset", f"beir:{beir}", "--cache", str(tmp / "cache"),
                 "--out", str(tmp / "out"), "--resamples", "200", "--permutations", "200",
                 "--expected-dir", str(tmp),
                 *extra])
    report = json.loads((tmp / "out" / "syn.json").read_text()) \
        if (tmp / "out" / "syn.json").is_file() else {}
    return code, report


def test_a_run_scores_every_stage_in_one_valid_report(tmp_path: Path, beir_dir: Path) -> None:
    code, report = _run(tmp_path, beir_dir, "--html", str(tmp_path / "syn.html"))
    assert code == 0
    rpt.validate(report)
    assert rpt.canonical(report) == report  # written as the harness returned it: rounded
    names = [s["name"] for s in report["stages"]]
    assert names == ["bm25", "bm25-exact-norms", "bm25s", "rank-bm25", *LUCENE,
                     "bm25-passages"]
    assert report["measures"] == ["nDCG@10", "R@100", "R@1000", "AP", "nDCG"]
    assert report["config"]["import"]["join"] == "flat"
    differential = [c for c in report["config"]["checks"] if c["kind"] == "differential"]
    assert differential and differential[0]["passed"]
    assert (tmp_path / "out" / "runs" / "syn" / "bm25s.trec").is_file()
    assert "<html" in (tmp_path / "syn.html").read_text()


def test_forked_workers_score_an_external_dataset_as_one_process_does(
    tmp_path: Path, beir_dir: Path,
) -> None:
    reports, runs = [], []
    for name, extra in (("forked", ()), ("serial", ("--serial",))):
        code, report = _run(tmp_path / name, beir_dir, *extra)
        assert code == 0
        report.pop("run")
        reports.append(json.dumps(report, sort_keys=True))
        folder = tmp_path / name / "out" / "runs" / "syn"
        runs.append({p.name: p.read_bytes() for p in folder.iterdir()})
    assert reports[0] == reports[1] and runs[0] == runs[1] and len(runs[0]) == 5 + len(LUCENE)


def test_hits_are_judged_by_the_datasets_doc_ids(tmp_path: Path, beir_dir: Path) -> None:
    _, report = _run(tmp_path, beir_dir, "--stages", "bm25")
    question = report["questions"][0]
    hit = question["stages"]["bm25"]["hits"][0]
    run = trec.read_run(tmp_path / "out" / "runs" / "syn" / "bm25.trec")
    assert hit["chunk_id"] in run[question["query_id"]]
    passage = report["passages"][hit["passage"]]
    assert passage["doc_id"].endswith(".txt") and passage["text"]


def test_an_external_trec_run_scores_beside_the_stages(tmp_path: Path, beir_dir: Path) -> None:
    _run(tmp_path / "a", beir_dir, "--stages", "bm25")
    ours = tmp_path / "a" / "out" / "runs" / "syn" / "bm25.trec"
    code, report = _run(tmp_path / "b", beir_dir, "--stages", "bm25",
                        "--run-file", f"replayed={ours}")
    assert code == 0
    metrics = {s["name"]: s["metrics"] for s in report["stages"]}
    # the run ranks as deep as its deepest list (BM25's, short of the 60 documents): what
    # reads deeper is n/a for it (evals.report.reach), the rest is BM25's
    replayed = next(s for s in report["stages"] if s["name"] == "replayed")
    deepest = max(map(len, trec.read_run(ours).values()))
    assert replayed["depth"] == deepest and "R@1000" in replayed["unreachable"]
    assert replayed["unreachable"] == rpt.unreachable(deepest, metrics["bm25"])
    assert metrics["replayed"] == {m: None if m in replayed["unreachable"] else v
                                   for m, v in metrics["bm25"].items()}
    assert trec.read_run(tmp_path / "b" / "out" / "runs" / "syn" / "replayed.trec") == \
        trec.read_run(ours)
    assert any(c["stage"] == "replayed" for c in report["comparisons"])


def test_a_run_file_missing_queries_counts_them_as_abstained(tmp_path: Path,
                                                             beir_dir: Path) -> None:
    partial = tmp_path / "partial.trec"
    trec.write_run(partial, {"q0": [("d1", 2.0)]}, tag="partial")
    code, report = _run(tmp_path, beir_dir, "--stages", "bm25", "--run-file",
                        f"partial={partial}")
    assert code == 0
    stage = next(s for s in report["stages"] if s["name"] == "partial")
    assert stage["abstention"]["answerable_abstained"] == stage["judged"] - 1


def test_a_metric_outside_its_expected_band_exits_8(tmp_path: Path, beir_dir: Path) -> None:
    _, report = _run(tmp_path, beir_dir, "--stages", "bm25")
    expected = gates.expected_from(report, source="test")
    assert _run(tmp_path, beir_dir, "--stages", "bm25")[0] == 0
    gates.write(tmp_path / "syn.json", expected)
    assert _run(tmp_path, beir_dir, "--stages", "bm25")[0] == 0
    expected["stages"]["bm25"]["nDCG@10"]["value"] += 0.1
    gates.write(tmp_path / "syn.json", expected)
    assert _run(tmp_path, beir_dir, "--stages", "bm25")[0] == gates.GateFailure.exit_code


def test_published_references_pass_within_tolerance_and_fail_outside() -> None:
    report = {"stages": [{"name": "bm25", "metrics": {"nDCG@10": 0.675}}]}
    near = Reference(stage="bm25", measure="nDCG@10", value=0.6789, source="paper")
    far = Reference(stage="bm25", measure="nDCG@10", value=0.70, source="paper")
    absent = Reference(stage="bm25-terrier", measure="AP", value=0.3, source="paper")
    checks = run_checks(report, [near, far, absent])
    assert [c.passed for c in checks] == [True, False]


def test_a_stage_whose_resource_is_missing_is_skipped_and_recorded(tmp_path: Path,
                                                                   beir_dir: Path) -> None:
    code, report = _run(tmp_path, beir_dir, "--stages", "bm25", "bm25-terrier",
                        "--data", str(tmp_path / "empty"))
    assert code == 0
    assert "bm25-terrier" in report["config"]["skipped_stages"]
    assert [s["name"] for s in report["stages"]] == ["bm25"]


def test_documents_score_their_best_unit() -> None:
    import numpy as np

    doc_of = np.array([0, 0, 1, 2], dtype=np.int64)
    ranked = [(1, 5.0), (0, 4.0), (3, 3.0), (2, 1.0)]
    assert to_documents(ranked, doc_of, 10) == [(0, 5.0, 1), (2, 3.0, 3), (1, 1.0, 2)]
    assert to_documents(ranked, doc_of, 1) == [(0, 5.0, 1)]
    assert top_positive(np.array([0.0, 2.0, -1.0, 2.0, 1.0]), 2) == [(1, 2.0), (3, 2.0)]


@pytest.mark.skipif(not DATA.is_dir(), reason=f"no test-collection mirror at {DATA}")
def test_check_runs_a_named_dataset_and_passes_its_gates(tmp_path: Path) -> None:
    common = ["--cache", str(tmp_path / "cache"), "--out", str(tmp_path / "out"),
              "--resamples", "200", "--permutations", "200", "--data", str(DATA)]
    assert main(["check", "--datasets", "adi", "--expected-dir", str(tmp_path), *common]) == 0
    report = json.loads((tmp_path / "out" / "adi.json").read_text())
    gates.write(tmp_path / "adi.json", gates.expected_from(report, source="test"))
    assert main(["check", "--datasets", "adi", "--expected-dir", str(tmp_path),
                 "--html-dir", str(tmp_path / "html"), *common]) == 0
    assert (tmp_path / "html" / "external-adi.html").is_file()


def test_an_unknown_dataset_is_a_usage_error_listing_the_known_ones(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--dataset", "nope"]) == 2
    assert "scifact" in capsys.readouterr().err


def test_rank_bm25_over_candidate_units_ranks_as_its_full_scoring() -> None:
    import numpy as np
    import rank_bm25

    from evals.engines import RankBM25Retriever
    from groundkit.retrieval.bm25 import BM25Params
    from groundkit.text.analysis import Analyzer

    analyzer = Analyzer()
    dataset = make_dataset(seed=5, n_docs=50)
    units = [analyzer.analyze(f"{d.title}\n{d.text}") for d in dataset.docs]
    params = BM25Params(k1=0.9, b=0.4)
    retriever = RankBM25Retriever(units, analyzer, params)
    model = rank_bm25.BM25Okapi(units, k1=0.9, b=0.4)
    for query in dataset.queries.values():
        got = [(s.position, s.score) for s in retriever.search(query, 1000)]
        assert got == top_positive(np.asarray(model.get_scores(analyzer.analyze(query))), 1000)


def test_document_hits_order_exact_ties_as_trec_eval_does() -> None:
    import numpy as np

    doc_ids = ["b", "a", "d", "c", "e"]
    id_rank = np.array([1, 0, 3, 2, 4], dtype=np.int64)  # place among sorted(doc_ids)
    doc_of = np.array([0, 1, 2, 3, 4, 0], dtype=np.int64)
    ranked = [(5, 3.0), (1, 2.0), (2, 2.0), (3, 2.0), (4, 1.0), (0, 0.5)]
    docs, scores, units = document_hits(ranked, doc_of, 10, id_rank)
    expected = trec.trec_order([(doc_ids[d], s) for d, s, _ in to_documents(ranked, doc_of, 10)])
    assert [(doc_ids[d], s) for d, s in zip(docs, scores, strict=True)] == expected
    assert units == [5, 2, 3, 1, 4]  # "b" keeps its best unit; ties d > c > a
    one_each = np.arange(6, dtype=np.int64)
    assert document_hits(ranked[:5], one_each, 3, np.arange(6), injective=True) == \
        document_hits(ranked[:5], one_each, 3, np.arange(6))
    assert document_hits([], doc_of, 10, id_rank) == ([], [], [])
