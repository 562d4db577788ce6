"""Golden version 4's conflict questions: current answers against superseded passages
that answer differently, checked by the lint, and dealt into the split on their own."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from evals.golden import lint_golden, load_golden, write_manifest
from evals.golden.split import assign

DOCS = {
    "db/wal.md": "# WAL\n\nThe default wal_buffers is 16MB since release 15.\n",
    "db/archive/13/wal.md": "# WAL\n\nThe default wal_buffers is 8MB in release 13.\n",
    "db/other.md": "# Other\n\nThe checkpoint timeout defaults to five minutes.\n",
}
CONFLICT: dict[str, Any] = {
    "id": "q0001", "domain": "db", "kind": "answerable", "traits": ["conflict"],
    "question": "What is the default of wal_buffers?",
    "answers": [{"doc_id": "db/wal.md", "quote": "The default wal_buffers is 16MB"}],
    "conflicting": [{"doc_id": "db/archive/13/wal.md", "quote": "The default wal_buffers is 8MB"}]}
PLAIN: dict[str, Any] = {
    "id": "q0002", "domain": "db", "kind": "answerable", "traits": [],
    "question": "When does a checkpoint happen?",
    "answers": [{"doc_id": "db/other.md",
                 "quote": "The checkpoint timeout defaults to five minutes."}]}


def write(root: Path, questions: list[dict[str, Any]]) -> Path:
    for doc_id, text in DOCS.items():
        (root / "docs" / doc_id).parent.mkdir(parents=True, exist_ok=True)
        (root / "docs" / doc_id).write_text(text, encoding="utf-8")
    (root / "questions.jsonl").write_text(
        "".join(json.dumps(q) + "\n" for q in questions), encoding="utf-8")
    write_manifest(root, force=True)
    return root


def test_a_conflict_question_loads_with_both_sides(tmp_path: Path) -> None:
    v4 = write(tmp_path / "v4", [CONFLICT, PLAIN])
    assert lint_golden(v4, coverage=False) == []
    q = next(q for q in load_golden(v4, coverage=False).questions if q.id == "q0001")
    assert [a.doc_id for a in q.answers] == ["db/wal.md"]
    assert [(c.doc_id, c.quote) for c in q.conflicting] == [
        ("db/archive/13/wal.md", "The default wal_buffers is 8MB")]
    assert q.conflicting[0].start == DOCS["db/archive/13/wal.md"].index("The default")


def test_the_lint_checks_what_a_conflict_is(tmp_path: Path) -> None:
    def problems(**change: Any) -> list[str]:
        return lint_golden(write(tmp_path / "v4", [dict(CONFLICT, **change), PLAIN]),
                           coverage=False)

    assert problems(conflicting=[]) == [
        "q0001: trait conflict needs answers (current) and conflicting passages"]
    swapped = problems(answers=CONFLICT["conflicting"], conflicting=CONFLICT["answers"])
    assert "q0001: answer in db/archive/13/wal.md, a superseded document (it belongs in " \
           "conflicting)" in swapped
    assert any("db/wal.md, which does not read as superseded" in p for p in swapped)
    assert problems(traits=[]) == ["q0001: conflicting passages belong to conflict questions only"]
    missing = problems(conflicting=[{"doc_id": "db/archive/13/wal.md", "quote": "12MB"}])
    assert missing == ['q0001: conflicting 1: quote not found in db/archive/13/wal.md: "12MB"']
    assert problems(traits=["conflict", "paraphrase"], question="wal_buffers size?") == [
        "q0001: trait paraphrase but the question shares the stem(s) wal_buff with its quote(s)"]


def test_a_version_3_question_file_may_not_carry_conflicting(tmp_path: Path) -> None:
    found = lint_golden(write(tmp_path / "v3", [CONFLICT, PLAIN]), coverage=False)
    assert "q0001: unknown field 'conflicting'" in found
    assert any("unknown trait 'conflict'" in p for p in found)


def test_conflict_questions_are_dealt_last_so_the_others_keep_their_parts(
        tmp_path: Path) -> None:
    others = [dict(PLAIN, id=f"q{n:04d}") for n in range(10, 30)]
    before = assign(load_golden(write(tmp_path / "a" / "v4", others), coverage=False).questions)
    conflicts = [dict(CONFLICT, id=f"q{n:04d}") for n in range(100, 110)]
    golden = load_golden(write(tmp_path / "b" / "v4", [*others, *conflicts]), coverage=False)
    after = assign(golden.questions)
    assert {q: after[q] for q in before} == before
    assert sorted(after[f"q{n:04d}"] for n in range(100, 110)).count("test") == 4
