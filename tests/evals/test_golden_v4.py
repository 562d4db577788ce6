"""Golden corpus v4: v3 carried over, the archive slice, and its conflict questions."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from evals.golden import Golden, lint_golden, load_golden
from groundkit.text.standing import superseded

GOLDEN = Path(__file__).resolve().parents[2] / "golden"
V3, V4 = GOLDEN / "v3", GOLDEN / "v4"


@pytest.fixture(scope="module")
def golden() -> Golden:
    return load_golden(V4)


def test_golden_v4_lints_clean_with_every_minimum() -> None:
    assert lint_golden(V4) == []


def test_golden_v4_has_exact_counts(golden: Golden) -> None:
    conflict = [q for q in golden.questions if "conflict" in q.traits]
    assert golden.version == 4
    assert len(golden.documents) == 188
    assert len(golden.questions) == 1521
    assert len(conflict) == 48 >= 40
    assert Counter(q.domain for q in conflict) == {
        "postgresql": 16, "debian-reference": 11, "git": 9, "birchline": 7, "debian-policy": 5}
    assert Counter(q.split for q in conflict) == {"calibration": 20, "test": 19, "train": 9}


def test_v3_is_carried_byte_for_byte_with_its_split(golden: Golden) -> None:
    v3 = json.loads((V3 / "MANIFEST.json").read_text())
    v4 = json.loads((V4 / "MANIFEST.json").read_text())
    for path, digest in v3["files"].items():
        if path != "questions.jsonl":
            assert v4["files"][path] == digest, path
    assert (V4 / "questions.jsonl").read_text().startswith((V3 / "questions.jsonl").read_text())
    old, new = v3["split"]["questions"], v4["split"]["questions"]
    assert {q: p for q, p in new.items() if q in old} == old


def test_every_archived_document_reads_as_superseded_and_is_only_ever_conflicting(
        golden: Golden) -> None:
    archived = {d for d in golden.documents if superseded(d, golden.documents[d][:600])}
    assert len(archived) == 17
    assert archived == {d for d in golden.documents if "/archive/" in d}
    cited = {a.doc_id for q in golden.questions for a in q.conflicting}
    assert cited == archived
    asked_about_the_archive = {q.id for q in golden.questions
                               if any(a.doc_id in archived for a in q.answers)}
    assert asked_about_the_archive == {"q0009", "q0010"}  # v1's two, about the 2022 policy
