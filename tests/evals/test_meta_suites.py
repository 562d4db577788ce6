"""evals.meta: saved reports as suites (domains split, overlaps left out) and the per-suite
effects the analysis pools."""

from __future__ import annotations

import statistics

import pytest
from meta_fixture import make_report, write_reports

from evals.meta import meta_analysis
from evals.meta.suites import disjoint, load_suites
from evals.report import ReportError
from groundkit.errors import UsageError

SHIFTS = {"dense": {"a": 3, "b": -3, "c": 0}, "hybrid": {"a": 2, "b": 1, "c": 1}}


def test_a_report_with_domains_is_one_suite_per_domain_unless_kept_whole(tmp_path):
    (path,) = write_reports(tmp_path, [("g", make_report(domains={"a": 12, "b": 9, "c": 7},
                                                          shifts=SHIFTS))])

    split = load_suites([path], "nDCG@10")
    whole = load_suites([path], "nDCG@10", domains=False)

    assert [(s.name, s.kind, len(s.scores["bm25"])) for s in split] == [
        ("golden v9/a", "golden-domain", 12), ("golden v9/b", "golden-domain", 9),
        ("golden v9/c", "golden-domain", 7)]
    assert [s.documents for s in split] == [frozenset({f"golden-docs:{d}"}) for d in "abc"]
    assert [(s.name, len(s.scores["dense"])) for s in whole] == [("golden v9", 28)]
    assert whole[0].documents == frozenset(f"golden-docs:{d}" for d in "abc")


def test_the_effects_are_the_mean_paired_differences_of_the_reports_own_scores(tmp_path):
    report = make_report(domains={"a": 12, "b": 9, "c": 7}, shifts=SHIFTS)
    (path,) = write_reports(tmp_path, [("g", report)])

    result = meta_analysis([path])

    dense = next(c for c in result["comparisons"] if c["stage"] == "dense")
    for row in dense["suites"]:
        domain = row["suite"].rpartition("/")[2]
        diffs = [q["stages"]["dense"]["scores"]["nDCG@10"]
                 - q["stages"]["bm25"]["scores"]["nDCG@10"]
                 for q in report["questions"] if q["domain"] == domain]
        assert row["n"] == len(diffs)
        assert row["effect"] == pytest.approx(statistics.fmean(diffs), abs=1e-6)
        assert row["variance"] == pytest.approx(statistics.variance(diffs) / len(diffs),
                                                abs=1e-6)
    assert sum(r["weight"] for r in dense["suites"]) == pytest.approx(1, abs=1e-5)
    assert dense["pooled"]["k"] == 3


def test_a_suite_read_twice_or_sharing_documents_is_left_out_and_says_why(tmp_path):
    one = make_report(domains={"a": 10, "b": 10}, shifts=SHIFTS)
    other_version = make_report(domains={"b": 10, "c": 10}, shifts=SHIFTS, seed=3,
                                version="v10", texts="asked")
    paths = write_reports(tmp_path, [("one", one), ("again", one), ("v10", other_version)])

    kept, excluded = disjoint(load_suites(paths, "nDCG@10"))

    assert [s.name for s in kept] == ["golden v9/a", "golden v9/b", "golden v10/c"]
    reasons = {x.suite.name: x.reason for x in excluded}
    assert reasons["golden v10/b"] == "overlaps golden v9/b: documents (golden-docs:b)"
    assert reasons["golden v9/a"] == ("overlaps golden v9/a: documents (golden-docs:a) and "
                                      "10 question texts")
    assert len(excluded) == 3


def test_the_pooled_golden_report_and_its_own_domains_are_never_counted_together(tmp_path):
    report = make_report(domains={"a": 10, "b": 10}, shifts=SHIFTS)
    (path,) = write_reports(tmp_path, [("g", report)])
    external = make_report(domains={"": 15}, shifts=SHIFTS, dataset="scifact", texts="claim")
    (ext,) = write_reports(tmp_path, [("scifact", external)])

    whole = load_suites([path], "nDCG@10", domains=False)
    kept, excluded = disjoint([*whole, *load_suites([path, ext], "nDCG@10")])

    assert [s.name for s in kept] == ["golden v9", "scifact"]
    assert {x.suite.name for x in excluded} == {"golden v9/a", "golden v9/b"}
    assert kept[1].kind == "external" and kept[1].documents == frozenset({"dataset:scifact"})


def test_a_report_without_the_measure_or_with_another_baseline_is_refused(tmp_path):
    report = make_report(domains={"a": 5, "b": 5}, shifts=SHIFTS)
    other = make_report(domains={"c": 5, "d": 5}, shifts=SHIFTS, texts="other")
    other["baseline"] = "dense"
    paths = write_reports(tmp_path, [("g", report), ("o", other)])

    with pytest.raises(ReportError, match="has no R@100 scores; its measures: nDCG@10"):
        load_suites(paths[:1], "R@100")
    with pytest.raises(ReportError, match="different baselines"):
        meta_analysis(paths)
    with pytest.raises(UsageError, match="no pooled suite ran stage"):
        meta_analysis(paths[:1], stages=["colbert"])


def test_a_suite_whose_differences_never_vary_is_left_out_not_given_a_variance(tmp_path):
    report = make_report(domains={"a": 8, "b": 8, "c": 8}, shifts=SHIFTS)
    for q in report["questions"]:  # dense equals bm25 + 0.1 on every question of domain a
        if q["domain"] == "a":
            base = q["stages"]["bm25"]["scores"]["nDCG@10"]
            q["stages"]["dense"]["scores"]["nDCG@10"] = base + 0.1
    (path,) = write_reports(tmp_path, [("g", report)])

    dense = next(c for c in meta_analysis([path])["comparisons"] if c["stage"] == "dense")

    assert [r["suite"] for r in dense["suites"]] == ["golden v9/b", "golden v9/c"]
    assert dense["left_out"] == [{"suite": "golden v9/a", "reason": "every paired difference "
                                  "is +0.1000: no variance, no weight"}]
    assert dense["verdict"] == "too few suites"
