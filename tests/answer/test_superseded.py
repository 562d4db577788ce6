"""Superseded sources in answers: the current one leads, the superseded one is marked."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import TreeMaker

from groundkit.answer import ask
from groundkit.collection import Collection, IndexConfig, index

DOCS = {
    "policies/retention.md": "# Retention\n\nDeployment logs are kept for 30 days.\n",
    "policies/archive/retention-2022.md": (
        "# Retention (2022)\n\n> **SUPERSEDED.** See policies/retention.md.\n\n"
        "Deployment logs are kept for 14 days, deployment logs deployment logs.\n"),
}


def test_the_current_source_leads_and_the_superseded_one_is_marked_not_hidden(
        make_tree: TreeMaker, home: Path) -> None:
    index("p", IndexConfig(roots=(str(make_tree(DOCS)),)), home=home)
    answer = ask(Collection.open("p", home), "how long are deployment logs kept")
    first = answer.citations[0]
    assert first.path == "policies/retention.md" and first.superseded is None
    old = [p for p in answer.passages if p.superseded]
    assert [p.hit.chunk.doc_id for p in old] == ["policies/archive/retention-2022.md"]
    assert answer.passages[-1].superseded == "in a folder named archive/"  # offered last
    cited = {c.path: c.superseded for c in answer.citations}
    if "policies/archive/retention-2022.md" in cited:  # shown, marked
        assert cited["policies/archive/retention-2022.md"] == "in a folder named archive/"
    data = answer.to_dict()
    assert {p["superseded"] for p in data["passages"]} == {None, "in a folder named archive/"}


def test_the_cli_marks_a_superseded_citation(make_tree: TreeMaker, home: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    from groundkit.cli import main

    index("p", IndexConfig(roots=(str(make_tree(DOCS)),)), home=home)
    main(["ask", "which deployment logs are kept for 14 days", "-c", "p", "--home", str(home)])
    out = capsys.readouterr().out
    assert "policies/archive/retention-2022.md" in out
    assert "— superseded (in a folder named archive/)" in out


def test_a_model_sees_the_label_but_never_the_notice_outside_its_fence(
        make_tree: TreeMaker, home: Path) -> None:
    from groundkit.answer.llm import ANSWER_RULES, passage_block

    index("p", IndexConfig(roots=(str(make_tree(DOCS)),)), home=home)
    answer = ask(Collection.open("p", home), "how long are deployment logs kept")
    old = next(p for p in answer.passages if p.superseded)
    head = passage_block(old).split("\n", 1)[0]
    assert head.endswith(", SUPERSEDED") and "archive" in head  # the path, JSON-quoted
    assert "SUPERSEDED" in ANSWER_RULES
    current = next(p for p in answer.passages if not p.superseded)
    assert "SUPERSEDED" not in passage_block(current).split("\n", 1)[0]


def test_superseded_documents_can_be_ranked_as_current_and_stay_marked(
        make_tree: TreeMaker, home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from groundkit.answer import Choice
    from groundkit.cli import main

    index("p", IndexConfig(roots=(str(make_tree(DOCS)),)), home=home)
    with Collection.open("p", home) as coll:
        question = "which deployment logs are kept for 14 days"
        default = ask(coll, question)
        assert default.passages[-1].superseded is not None  # offered last
        as_current = ask(coll, question, choice=Choice(superseded=1.0))
    assert as_current.passages[0].superseded == "in a folder named archive/"  # ranked first
    assert as_current.citations[0].path == "policies/archive/retention-2022.md"
    main(["ask", question, "-c", "p", "--home", str(home), "--json", "--superseded-as-current"])
    data = json.loads(capsys.readouterr().out)
    assert data["citations"][0]["superseded"] == "in a folder named archive/"
