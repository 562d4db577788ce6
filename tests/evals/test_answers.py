"""The answer stages: extractive answers scored by their quotes; LLM answers only for real."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from conftest import TreeMaker
from golden_fixture import DOCS, tiny_golden

from evals import report
from evals.golden.answers import answer_block
from evals.golden.suite import evaluate_golden
from evals.score import gates
from groundkit.collection import Collection, IndexConfig, index
from groundkit.testing.ollama_standin import OllamaStandin


def test_a_golden_report_scores_the_extractive_answers_and_pins_them(tmp_path: Path) -> None:
    golden = tiny_golden(tmp_path / "golden" / "v1")
    built = evaluate_golden(golden, tmp_path / "out", stage_names=["bm25"],
                            settings=report.Settings(resamples=200, permutations=200))
    block = built["answers"]  # type: ignore[index]
    everything = block["extractive"]["all"]
    # q1-q4 are judged; q3 ("who receives pages first") is quoted by its one matching
    # sentence, as are the others; q5 and q6 share no indexed word: no answer.
    assert (everything["judged"], everything["no_answer"]) == (4, 2)
    assert everything["answer_success"] == 1.0 and everything["no_answer_answered"] == 0.0
    assert 0 < everything["citation_precision"] <= 1.0
    assert block["extractive"]["gate"] is None  # v1-style corpus: no split, no calibration
    assert block["llm"]["measured"] is False and "not measured" in block["llm"]["reason"]
    pinned = gates.expected_from(built)  # type: ignore[arg-type]
    assert pinned["stages"]["bm25"]["answers.all.answer_success"]["value"] == 1.0


@pytest.fixture
def coll(make_tree: TreeMaker, home: Path) -> Collection:
    index("k", IndexConfig(roots=(str(make_tree(DOCS)),)), home=home)
    return Collection.open("k", home)


def questions(split: str) -> list[report.Question]:
    from golden_fixture import QUESTIONS

    out = []
    for q in QUESTIONS:
        start = DOCS[q["answers"][0]["doc_id"]].index(q["answers"][0]["quote"]) if q[
            "answers"] else 0
        gold = tuple(report.GoldAnswer(doc_id=a["doc_id"], quote=a["quote"], start=start,
                                       end=start + len(a["quote"])) for a in q["answers"][:1])
        out.append(report.Question(query_id=q["id"], text=q["question"], kind=q["kind"],
                                   gold=gold, split=split))
    return out


def test_with_eval_gated_a_reachable_model_is_measured_with_its_name_and_digest(
        coll: Collection, monkeypatch: pytest.MonkeyPatch) -> None:
    reply = '"Deployment logs are kept for 30 days." [1]'
    with OllamaStandin(models=["demo"], chat=reply) as server:
        monkeypatch.setenv("EVAL_GATED", "1")
        monkeypatch.setenv("GROUNDKIT_LLM_MODEL", "demo")
        monkeypatch.setenv("GROUNDKIT_LLM_HOST", server.url)
        block = answer_block(questions("test"), coll, lambda text: {"bm25.idf_coverage": 0.5})
    llm = block["llm"]
    assert llm["measured"] is True and llm["model"] == "demo" and llm["digest"]
    # the one quote answers both logs questions (q0001, and the ambiguous q0004)
    assert llm["judged"] == 4 and llm["answer_success"] == 0.5


def test_with_eval_gated_an_unreachable_model_is_not_measured_and_says_why(
        coll: Collection, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVAL_GATED", "1")
    monkeypatch.setenv("GROUNDKIT_LLM_HOST", "http://127.0.0.1:9")  # nothing listens there
    block = answer_block(questions("test"), coll, lambda text: {"bm25.idf_coverage": 0.5})
    assert block["llm"]["measured"] is False and "ollama serve" in block["llm"]["reason"]


def test_the_gate_withholds_answers_it_would_abstain_on(coll: Collection) -> None:
    parts = questions("test")
    calibration = [dataclasses.replace(q, split="calibration") for q in parts if not q.gold]
    high = {q.text: 0.9 for q in parts if q.gold}  # answerable: above every no-answer score
    block = answer_block([*parts, *calibration], coll,
                         lambda text: {"bm25.idf_coverage": high.get(text, 0.1)})
    gated = block["extractive"]["gate"]
    assert gated["n0"] == 2 and gated["alpha"] == 0.1
    # 1/(2+1) > 0.1: two calibration questions cannot support alpha 0.1, nothing is shown
    assert gated["answered"] == 0 and gated["answer_success"] == 0.0


def test_the_html_report_shows_the_answer_stages(tmp_path: Path) -> None:
    from evals.report.html import render

    golden = tiny_golden(tmp_path / "golden" / "v1")
    built = evaluate_golden(golden, tmp_path / "out", stage_names=["bm25"],
                            settings=report.Settings(resamples=200, permutations=200))
    page = render(built)
    section = page[page.index('<section id="answers">'):]
    assert '<table id="answers-table">' in section and "100.0%" in section
    assert "not measured" in section


def test_every_sentence_choice_is_measured_on_the_tuning_and_test_parts(
        coll: Collection, capsys: pytest.CaptureFixture[str]) -> None:
    from evals.golden.answers import CHOICES

    train = [dataclasses.replace(q, split="train") for q in questions("train")]
    block = answer_block([*train, *questions("test")], coll,
                         lambda text: {"bm25.idf_coverage": 0.5})
    said = capsys.readouterr().err  # the step is never silent, terminal or not
    assert f"answers (bm25, top 5, {len(CHOICES)} ways of choosing sentences) " in said
    choices = block["extractive"]["choices"]
    assert choices["measured"] and set(choices["variants"]) == set(CHOICES)
    one = choices["variants"]["default"]
    assert one["choice"]["max_sentences"] == 1 and one["test"]["citations_per_answer"] == 1.0
    assert choices["variants"]["three-sentences"]["choice"]["max_sentences"] == 3
    default = choices["variants"]["default"]
    assert default["test"]["answer_success"] == block["extractive"]["by_mode"]["bm25"][
        "answer_success"]
    assert block["extractive"]["conflicts"] is None  # no conflict question here


def test_conflict_questions_score_whether_the_answer_shows_both_sides(
        make_tree: TreeMaker, home: Path) -> None:
    docs = {"retention.md": "# R\n\n| Data | Kept |\n|---|---|\n| Deployment logs | 30 days |\n",
            "archive/retention.md": "# R\n\n| Data | Kept |\n|---|---|\n"
                                    "| Deployment logs | 14 days |\n"}
    index("c", IndexConfig(roots=(str(make_tree(docs)),)), home=home)

    def gold(doc: str, quote: str) -> report.GoldAnswer:
        start = docs[doc].index(quote)
        return report.GoldAnswer(doc_id=doc, quote=quote, start=start, end=start + len(quote))

    asked = report.Question(
        query_id="q1", text="how long are deployment logs kept", kind="answerable",
        traits=("conflict",), split="test", gold=(gold("retention.md", "30 days"),),
        conflicting=(gold("archive/retention.md", "14 days"),))
    other = report.Question(query_id="q2", text="deployment logs", kind="answerable",
                            split="test", gold=(gold("retention.md", "Deployment logs"),))
    with Collection.open("c", home) as coll:
        block = answer_block([asked, other], coll, lambda text: {"bm25.idf_coverage": 0.5})
    scores = block["extractive"]["conflicts"]
    assert (scores["questions"], scores["shown"], scores["current_first"]) == (1, 1.0, 1.0)
    assert scores["other_questions"] == 1 and scores["by_part"]["test"] == 1


def test_the_html_shows_the_choices_and_the_conflict_scores(coll: Collection) -> None:
    from evals.report.gate_html import answers_section

    train = [dataclasses.replace(q, split="train") for q in questions("train")]
    block = answer_block([*train, *questions("test")], coll,
                         lambda text: {"bm25.idf_coverage": 0.5})
    block["extractive"]["conflicts"] = {"questions": 50, "shown": 0.8, "current_first": 0.9,
                                        "other_questions": 900, "false_alarms": 0.01}
    page = answers_section({"answers": block})
    table = page[page.index('<table id="choices-table">'):]
    assert table.count("<tr>") == 1 + len(block["extractive"]["choices"]["variants"])
    assert "three-sentences-keep-0.9" in table and "train+calibration: success" in table
    assert ("On the 50 questions whose current and superseded documents disagree, the answer "
            "shows the disagreement for 80.0% and cites the current source first for 90.0%"
            ) in page
