"""``python -m evals compare --domain``: one golden slice's questions compared alone."""

from __future__ import annotations

import json

import pytest
from test_report import save_two_runs  # the same two reports (tests/evals is on the path)

from evals import report as rp
from evals.report.compare import compare_runs


def test_compare_runs_keeps_only_the_questions_of_the_domains_asked(tmp_path):
    a, b = save_two_runs(tmp_path)
    for path in (a, b):
        report = json.loads(path.read_text(encoding="utf-8"))
        for q in report["questions"]:
            q["domain"] = {"q1": "gnuplot", "q2": "sqlite"}.get(q["query_id"], "sqlite")
        path.write_text(json.dumps(report), encoding="utf-8")

    outcome = compare_runs(a, b, domains=["gnuplot"], measures=["Success@1"], resamples=200,
                           permutations=200)

    assert outcome["questions"]["paired"] == 1 and outcome["domains"] == ["gnuplot"]
    assert outcome["comparisons"][0]["mean_b"] == 1.0
    with pytest.raises(rp.ReportError, match=r"no question in domain.*nginx.*gnuplot, sqlite"):
        compare_runs(a, b, domains=["nginx"])
