"""Commands that write files write where the user stands, never into the package."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import TreeMaker

from groundkit.cli import main

DOCS = {"ops/logging.md": "# Logging\n\nDeployment logs are kept for 30 days in the log store."
        "\n\nAudit logs of admin actions are kept for 400 days.\n",
        "eng/release.md": "# Releases\n\nA release branch is cut on the first Tuesday of each "
        "month.\n"}
QUESTIONS = [
    {"id": "q0001", "kind": "answerable", "question": "How long are deployment logs kept?",
     "traits": [], "answers": [{"doc_id": "ops/logging.md", "quote": "Deployment logs are "
                                "kept for 30 days in the log store."}]},
    {"id": "q0002", "kind": "answerable", "question": "When is a release branch cut?",
     "traits": [], "answers": [{"doc_id": "eng/release.md", "quote": "A release branch is cut "
                                "on the first Tuesday of each month."}]},
]


def test_grk_eval_without_out_writes_its_report_under_the_current_folder(
        make_tree: TreeMaker, home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["index", str(make_tree(DOCS)), "-c", "ops"]) == 0
    questions = tmp_path / "q.jsonl"
    questions.write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS))
    where = tmp_path / "here"
    where.mkdir()
    monkeypatch.chdir(where)
    capsys.readouterr()
    assert main(["eval", "--collection", "ops", "--questions", str(questions),
                 "--resamples", "20", "--permutations", "20", "--stages", "bm25"]) == 0
    assert "report: grk-eval/latest.json" in capsys.readouterr().out
    report = json.loads((where / "grk-eval" / "latest.json").read_text())
    assert [q["query_id"] for q in report["questions"]] == ["q0001", "q0002"]
