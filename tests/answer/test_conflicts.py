"""Sources that disagree are shown side by side; tables are read with their header."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import TreeMaker

from groundkit.answer import Choice, ask
from groundkit.answer.sentences import units
from groundkit.collection import Collection, IndexConfig, index

DOCS = {
    "policies/retention.md": (
        "# Retention\n\n| Data | Store | Retention period |\n|---|---|---|\n"
        "| Deployment logs | Loki | 30 days |\n| Audit logs | S3 | 400 days |\n"),
    "policies/archive/retention-2022.md": (
        "# Retention (2022)\n\n| Data | Store | Retention period |\n|---|---|---|\n"
        "| Deployment logs | Loki | 14 days |\n| Audit logs | S3 | 400 days |\n"),
    "runbooks/deploy.md": "# Deploy\n\nThe deploy takes 12 minutes and pages the on-call.\n",
}


@pytest.fixture
def coll(make_tree: TreeMaker, home: Path) -> Collection:
    index("p", IndexConfig(roots=(str(make_tree(DOCS)),)), home=home)
    return Collection.open("p", home)


def test_a_disagreement_lists_each_side_with_its_citation(coll: Collection) -> None:
    answer = ask(coll, "how long are deployment logs retained")
    assert answer.citations[0].path == "policies/retention.md"
    [conflict] = answer.conflicts
    assert conflict.about == "deployment logs" and conflict.kind == "day"
    sides = [(s.values, s.citation.path, s.citation.superseded) for s in conflict.sides]
    assert sides == [(("30 days",), "policies/retention.md", None),
                     (("14 days",), "policies/archive/retention-2022.md",
                      "in a folder named archive/")]
    for side in conflict.sides:  # each side is an exact, verified span of its file
        text = (Path(coll.snapshot.config["roots"][0]) / side.citation.path).read_text()
        assert text[side.citation.start:side.citation.end] == side.citation.text
        assert side.citation.verdict == "verified"
    data = answer.to_dict()["conflicts"]
    assert [s["values"] for s in data[0]["sides"]] == [["30 days"], ["14 days"]]


def test_the_same_value_in_two_sources_is_no_conflict(coll: Collection) -> None:
    answer = ask(coll, "how long are audit logs retained")
    assert "400 days" in answer.citations[0].text
    assert answer.conflicts == ()


def test_different_things_with_different_values_are_no_conflict(coll: Collection) -> None:
    answer = ask(coll, "how long does the deploy take")
    assert answer.citations[0].path == "runbooks/deploy.md"
    assert answer.conflicts == ()


def test_the_cli_prints_the_disagreement_and_the_table_header(
        coll: Collection, home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from groundkit.cli import main

    main(["ask", "how long are deployment logs retained", "-c", "p", "--home", str(home)])
    out = capsys.readouterr().out
    assert out.startswith("  (table header: | Data | Store | Retention period |)\n"
                          "| Deployment logs | Loki | 30 days |\n")
    assert "Sources disagree on deployment logs:\n  30 days — p:policies/retention.md" in out
    assert "  14 days — p:policies/archive/retention-2022.md line 5" in out
    assert out.rstrip().endswith("— superseded (in a folder named archive/)")
    main(["ask", "how long are deployment logs retained", "-c", "p", "--home", str(home),
          "--json"])
    data = json.loads(capsys.readouterr().out)
    assert data["sentences"][0]["context"]["text"] == "| Data | Store | Retention period |"
    assert len(data["conflicts"]) == 1


def test_a_header_row_is_context_never_an_answer_and_rows_below_carry_it() -> None:
    text = DOCS["policies/retention.md"]
    found = [(u.kind, text[u.start:u.end], u.context and text[u.context[0]:u.context[1]])
             for u in units(text)]
    assert found == [
        ("heading", "Retention", None),
        ("header", "| Data | Store | Retention period |", None),
        ("row", "| Deployment logs | Loki | 30 days |", "| Data | Store | Retention period |"),
        ("row", "| Audit logs | S3 | 400 days |", "| Data | Store | Retention period |")]
    assert [u.kind for u in units("| a | b |\n| c | d |\n")] == ["row", "row"]  # no separator


def test_question_words_do_not_pull_in_a_sentence(make_tree: TreeMaker, home: Path) -> None:
    root = make_tree({"a.md": "# A\n\nDeployment logs are kept for 30 days.\n",
                      "b.md": "# B\n\nThis is how we do it when we can.\n"})
    index("q", IndexConfig(roots=(str(root),)), home=home)
    with Collection.open("q", home) as coll:
        question = "how long do we keep deployment logs"
        three = Choice(max_sentences=3)
        assert [c.path for c in ask(coll, question, choice=three).citations] == ["a.md"]
        scored = ask(coll, question, choice=Choice(max_sentences=3, question_words=True))
        assert sorted(c.path for c in scored.citations) == ["a.md", "b.md"]


def test_an_answer_citing_only_superseded_documents_says_so(
        make_tree: TreeMaker, home: Path) -> None:
    root = make_tree({"archive/old.md": "# Old\n\nDeployment logs are kept for 14 days.\n",
                      "new.md": "# New\n\nLogs rotate.\n"})
    index("s", IndexConfig(roots=(str(root),)), home=home)
    with Collection.open("s", home) as coll:
        answer = ask(coll, "deployment logs kept days")
    assert [c.path for c in answer.citations] == ["archive/old.md"]
    assert answer.to_dict()["superseded_only"].startswith(
        "every citation is of a document that says it is superseded")


def test_grk_ask_sentences_bounds_the_quotes(coll: Collection, home: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    from groundkit.cli import main

    main(["ask", "deployment logs audit logs", "-c", "p", "--home", str(home), "--json",
          "--sentences", "1"])
    assert len(json.loads(capsys.readouterr().out)["sentences"]) == 1
    main(["ask", "deployment logs audit logs", "-c", "p", "--home", str(home), "--json",
          "--sentences", "2"])
    assert len(json.loads(capsys.readouterr().out)["sentences"]) == 2
    with pytest.raises(SystemExit):
        main(["ask", "x", "-c", "p", "--home", str(home), "--sentences", "6"])
    assert "must be 1 to 5, got 6" in capsys.readouterr().err
