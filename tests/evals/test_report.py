"""The report: schema-valid, deterministic outside the run block, invalid ones rejected."""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from evals import report as rp
from evals.__main__ import main
from evals.report.compare import compare_runs
from evals.score.metrics import DEFAULT_MEASURES

DOC = "notes/<policy>.md"
TEXT = "Deployment logs are kept for 30 days & then <deleted>. Backups: 7 years."
QUOTE = "kept for 30 days"
QUOTE_START = TEXT.index(QUOTE)


def hit(rank: int, chunk: str, start: int, end: int, score: float, verdict="verified"):
    return rp.HitRecord(
        rank=rank,
        chunk_id=f"c:{chunk}",
        doc_id=DOC,
        start=start,
        end=end,
        score=score,
        text=TEXT[start:end],
        verdict=verdict,
    )


# long: one realistic report input, written out in full so every field is visible
def sample_inputs() -> dict:
    gold = rp.GoldAnswer(doc_id=DOC, quote=QUOTE, start=QUOTE_START, end=QUOTE_START + len(QUOTE))
    questions = [
        rp.Question(
            query_id="q1",
            text="How long are logs kept?",
            kind="answerable",
            traits=("lexical",),
            gold=(gold,),
        ),
        rp.Question(
            query_id="q2",
            text="Retention of <script>alert(1)</script>?",
            kind="ambiguous",
            traits=("paraphrase", "lexical"),
            gold=(gold,),
        ),
        rp.Question(query_id="q3", text="What is the CEO's cat called?", kind="no-answer"),
    ]
    qrels = {"q1": {"c:a": 2, "c:b": 0}, "q2": {"c:a": 1}}
    a, b = hit(1, "a", 0, 40, 3.5), hit(2, "b", 40, len(TEXT), 1.25, "drifted")
    stages = [
        rp.StageResult(
            name="bm25",
            description="BM25 baseline",
            config={"k1": 0.9, "b": 0.4},
            hits={"q1": [a, b], "q2": [], "q3": [b]},
        ),
        rp.StageResult(
            name="hybrid",
            description="RRF of BM25 and dense",
            config={"k": 60},
            hits={
                "q1": [a],
                "q2": [hit(1, "b", 40, len(TEXT), 0.03), hit(2, "a", 0, 40, 0.02)],
                "q3": [],
            },
        ),
    ]
    provenance = rp.Provenance(
        golden_version="v1",
        golden_manifest_sha256="ab" * 32,
        groundkit_version="0.1.0",
        git_commit="0" * 40,
        python="3.11.9",
        libraries={"numpy": "2.4.6"},
    )
    return dict(
        questions=questions,
        qrels=qrels,
        stages=stages,
        baseline="bm25",
        provenance=provenance,
        config={"chunk_size": 800},
        settings=rp.Settings(resamples=2_000, permutations=2_000, seed=7),
    )


def build(**overrides) -> dict:
    return rp.build_report(**{**sample_inputs(), **overrides})


def without_run(text: str) -> dict:
    data = json.loads(text)
    data.pop("run")
    return data


def test_a_built_report_matches_the_schema():
    report = build()

    rp.validate(report)
    assert report["schema_version"] == 2
    assert report["measures"] == list(DEFAULT_MEASURES)
    assert report["offset_unit"] == "codepoint"


def test_stage_metrics_count_every_judged_question_and_abstention_is_separate():
    report = build()
    bm25, hybrid = report["stages"]

    assert bm25["judged"] == 2
    assert bm25["metrics"]["Success@1"] == (1 + 0) / 2  # q2 returned nothing
    assert hybrid["metrics"]["Success@1"] == (1 + 0) / 2  # q2's first hit is not relevant
    assert hybrid["metrics"]["RR@10"] == (1 + 1 / 2) / 2
    assert bm25["abstention"] == {
        "answerable_total": 2,
        "answerable_abstained": 1,
        "no_answer_total": 1,
        "no_answer_abstained": 0,
    }
    assert hybrid["abstention"]["no_answer_abstained"] == 1


def test_comparisons_cover_every_measure_against_the_baseline_with_holm_across_all():
    report = build()
    comparisons = report["comparisons"]

    assert [c["measure"] for c in comparisons] == list(DEFAULT_MEASURES)
    assert {(c["stage"], c["baseline"]) for c in comparisons} == {("hybrid", "bm25")}
    rr = next(c for c in comparisons if c["measure"] == "RR@10")
    assert rr["delta"] == round((0 + 1 / 2) / 2, 6)
    assert (rr["wins"], rr["ties"], rr["losses"]) == (1, 1, 0)
    assert all(c["p_holm"] >= c["p_value"] for c in comparisons)


def test_breakdowns_group_judged_questions_by_kind_and_by_each_trait():
    breakdowns = build()["breakdowns"]

    assert set(breakdowns["kind"]) == {"answerable", "ambiguous"}
    assert breakdowns["trait"]["lexical"]["n"] == 2
    assert breakdowns["trait"]["paraphrase"]["n"] == 1
    assert breakdowns["trait"]["paraphrase"]["stages"]["hybrid"]["RR@10"] == 0.5


def test_questions_carry_gold_spans_hits_with_relevance_and_per_stage_scores():
    questions = {q["query_id"]: q for q in build()["questions"]}

    q1 = questions["q1"]
    assert q1["gold"] == [
        {"doc_id": DOC, "quote": QUOTE, "start": QUOTE_START, "end": QUOTE_START + len(QUOTE)}
    ]
    first, second = q1["stages"]["bm25"]["hits"]
    assert (first["rank"], first["chunk_id"], first["relevance"]) == (1, "c:a", 2)
    assert (second["relevance"], second["verdict"]) == (0, "drifted")
    assert q1["stages"]["bm25"]["scores"]["nDCG@10"] == 1.0
    assert questions["q2"]["stages"]["bm25"]["abstained"] is True
    assert questions["q3"]["judged"] is False and questions["q3"]["stages"]["bm25"]["scores"] == {}
    assert questions["q3"]["stages"]["hybrid"] == {
        "abstained": True,
        "retrieved": 0,
        "scores": {},
        "hits": [],
    }


def test_the_same_input_gives_byte_identical_json_except_the_run_block(tmp_path):
    first = rp.write_json(build(), tmp_path / "a.json").read_text(encoding="utf-8")
    second = rp.write_json(
        build(run={"created_at": "2030-01-01T00:00:00+00:00", "host": "elsewhere"}),
        tmp_path / "b.json",
    ).read_text(encoding="utf-8")

    assert first != second
    assert without_run(first) == without_run(second)
    rest = [
        rp.dumps({k: v for k, v in json.loads(t).items() if k != "run"}) for t in (first, second)
    ]
    assert rest[0] == rest[1]


def test_the_json_does_not_depend_on_the_interpreter_hash_seed():
    script = (
        "import sys; sys.path.insert(0, sys.argv[1]);"
        "from test_report import build; from evals.report import dumps;"
        "r = build(run={'created_at': 't', 'host': 'h'}); sys.stdout.write(dumps(r))"
    )
    here, root = Path(__file__).parent, Path(__file__).parents[2]
    outputs = {
        subprocess.run(
            [sys.executable, "-c", script, str(here)],
            capture_output=True, text=True, check=True, cwd=root,
            env={**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(root)},
        ).stdout
        for seed in ("1", "2")
    }  # fmt: skip

    assert len(outputs) == 1


def test_dict_order_of_the_inputs_does_not_change_the_output():
    inputs = sample_inputs()
    reordered = copy.deepcopy(inputs)
    reordered["questions"] = list(reversed(reordered["questions"]))
    reordered["qrels"] = dict(reversed(list(reordered["qrels"].items())))
    run = {"created_at": "t", "host": "h"}

    assert rp.dumps(rp.build_report(**inputs, run=run)) == rp.dumps(
        rp.build_report(**reordered, run=run)
    )


def test_the_json_is_canonical_sorted_rounded_and_ends_with_a_newline():
    text = rp.dumps({"b": 1 / 3, "a": [-0.0, 2.0000000001], "c": (1, "é")})

    expected = [
        "{",
        '  "a": [',
        "    0.0,",
        "    2.0",
        "  ],",
        '  "b": 0.333333,',
        '  "c": [',
        "    1,",
        '    "é"',
        "  ]",
        "}",
        "",
    ]
    assert text == "\n".join(expected)


def test_a_saved_report_loads_back_unchanged(tmp_path):
    report = build()

    path = rp.write_json(report, tmp_path / "nested" / "report.json")

    assert rp.load_json(path) == report


def test_an_invalid_report_is_rejected_before_anything_is_written(tmp_path):
    report = build()
    broken = copy.deepcopy(report)
    broken["stages"][0]["metrics"]["nDCG@10"] = "high"
    del broken["golden"]

    with pytest.raises(rp.ReportError, match="golden") as excinfo:
        rp.write_json(broken, tmp_path / "r.json")

    assert "nDCG@10" in str(excinfo.value)
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("schema_version",), 1),
        (("questions", 0, "stages", "bm25", "hits", 0, "verdict"), "probably fine"),
        (("comparisons", 0, "p_holm"), 1.5),
        (("baseline",), "dense"),
    ],
)
def test_reports_that_break_the_contract_fail_validation(path, value):
    report = build()
    target = report
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value

    with pytest.raises(rp.ReportError):
        rp.validate(report)


def test_non_finite_numbers_cannot_enter_a_report():
    with pytest.raises(rp.ReportError, match="non-finite"):
        rp.dumps({"x": float("nan")})


def test_inconsistent_inputs_are_refused_with_the_reason():
    with pytest.raises(rp.ReportError, match="baseline"):
        build(baseline="dense")
    with pytest.raises(rp.ReportError, match="without gold"):
        build(qrels={"q3": {"c:a": 1}})
    stage = rp.StageResult(name="bm25", description="", config={}, hits={"q9": []})
    with pytest.raises(rp.ReportError, match=r"unknown \['q9'\], missing \['q1', 'q2', 'q3'\]"):
        build(stages=[stage])


def test_gold_answers_and_hits_validate_their_spans():
    with pytest.raises(rp.ReportError, match="gold span"):
        rp.GoldAnswer(doc_id=DOC, quote="abc", start=0, end=4)
    assert "verdict must be one of" in hit(1, "a", 0, 4, 1.0, verdict="fine").problem()
    assert "bad rank or span" in hit(1, "a", 4, 0, 1.0).problem()
    assert hit(1, "a", 0, 4, 1.0).problem() is None
    inputs = sample_inputs()
    stage = inputs["stages"][0]
    inputs["stages"][0] = dataclasses.replace(
        stage, hits={**stage.hits, "q3": [hit(1, "b", 40, len(TEXT), 1.0, verdict="fine")]})
    with pytest.raises(rp.ReportError, match=r"'bm25', 'q3'.*verdict must be one of"):
        rp.build_report(**inputs)


def test_provenance_helpers_describe_this_environment(tmp_path):
    python, libraries = rp.environment(("numpy", "surely-not-installed-pkg"))

    assert python.count(".") == 2
    assert libraries["surely-not-installed-pkg"] == "not installed"
    assert set(rp.run_metadata()) >= {"created_at", "host"}
    assert rp.git_commit(tmp_path) is None


def save_two_runs(tmp_path) -> tuple:
    inputs = sample_inputs()
    a = rp.write_json(rp.build_report(**inputs), tmp_path / "a.json")
    better = rp.StageResult(
        name="bm25",
        description="BM25, tuned",
        config={},
        hits={"q1": [hit(1, "a", 0, 40, 2.0)], "q2": [hit(1, "a", 0, 40, 2.0)], "q3": []},
    )
    b = rp.write_json(
        rp.build_report(**{**inputs, "stages": [better, inputs["stages"][1]]}), tmp_path / "b.json"
    )
    return a, b


def test_compare_runs_pairs_same_named_stages_by_query_id(tmp_path):
    a, b = save_two_runs(tmp_path)

    outcome = compare_runs(a, b, resamples=500, permutations=500)

    assert outcome["questions"] == {"paired": 2, "only_a": [], "only_b": []}
    assert [(c["stage_a"], c["stage_b"]) for c in outcome["comparisons"]] == [
        ("bm25", "bm25")
    ] * len(DEFAULT_MEASURES) + [("hybrid", "hybrid")] * len(DEFAULT_MEASURES)
    bm25_hit1 = outcome["comparisons"][0]
    assert bm25_hit1["measure"] == "Success@1"
    assert (bm25_hit1["mean_a"], bm25_hit1["mean_b"], bm25_hit1["delta"]) == (0.5, 1.0, 0.5)
    assert (bm25_hit1["wins"], bm25_hit1["ties"], bm25_hit1["losses"]) == (1, 1, 0)
    hybrid = outcome["comparisons"][len(DEFAULT_MEASURES)]
    assert hybrid["delta"] == 0.0 and hybrid["p_value"] == 1.0
    assert all(c["p_holm"] >= c["p_value"] for c in outcome["comparisons"])
    assert outcome["warnings"] == []


def test_compare_runs_takes_explicit_stage_pairs_and_measures(tmp_path):
    a, b = save_two_runs(tmp_path)

    outcome = compare_runs(
        a, b, pairs=[("bm25", "hybrid")], measures=["RR@10"], resamples=200, permutations=200
    )

    (only,) = outcome["comparisons"]
    assert (only["stage_a"], only["stage_b"], only["measure"]) == ("bm25", "hybrid", "RR@10")
    assert only["delta"] == round((0 + 1 / 2) / 2, 6)


def test_compare_runs_rejects_an_unknown_stage_and_an_invalid_report(tmp_path):
    a, b = save_two_runs(tmp_path)
    broken = tmp_path / "broken.json"
    broken.write_text('{"schema_version": 1}', encoding="utf-8")

    with pytest.raises(rp.ReportError, match="no RR@10 scores for stage 'dense'"):
        compare_runs(a, b, pairs=[("dense", "bm25")], measures=["RR@10"])
    with pytest.raises(rp.ReportError, match="schema"):
        compare_runs(a, broken)


def test_compare_command_prints_a_table_or_json_and_maps_errors_to_exit_codes(tmp_path, capsys):
    a, b = save_two_runs(tmp_path)

    assert main(["compare", str(a), str(b), "--resamples", "200", "--permutations", "200"]) == 0
    table = capsys.readouterr().out
    assert "bm25 -> bm25" in table and "Success@1" in table and "1/1/0" in table

    assert main(["compare", str(a), str(b), "--json", "--measure", "nDCG@10"]) == 0
    assert len(json.loads(capsys.readouterr().out)["comparisons"]) == 2

    assert main(["compare", str(a), str(tmp_path / "missing.json")]) == 1
    assert "cannot read report" in capsys.readouterr().err
    with pytest.raises(SystemExit) as excinfo:
        main(["compare", str(a), str(b), "--pair", "no-colon"])
    assert excinfo.value.code == 2
