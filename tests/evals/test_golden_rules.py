"""Golden version 2's rules on a small draft version: domains, the checked paraphrase trait,
no-answer probes and near misses, and the seeded split kept in the manifest."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evals.golden import lint_golden, load_golden, write_manifest
from evals.golden.rules import content_stems, probe_hits, shared_stems
from evals.golden.split import PATTERN, assign

DOCS = {
    "db/vacuum.md": "# Vacuum\n\nThe VACUUM command rebuilds the database file, repacking it "
                    "into a minimal amount of disk space.\n\nAuto-vacuum runs at every commit.\n",
    "db/pragma.md": "# Pragmas\n\nPRAGMA page_size sets the page size in bytes.\n",
    "web/proxy.md": "# Proxy\n\nproxy_pass forwards requests to an upstream server.\n",
}
QUESTIONS: list[dict[str, Any]] = [
    {"id": "q0001", "domain": "db", "kind": "answerable", "traits": ["exact_identifier"],
     "question": "What does PRAGMA page_size set?",
     "answers": [{"doc_id": "db/pragma.md",
                  "quote": "PRAGMA page_size sets the page size in bytes."}]},
    {"id": "q0002", "domain": "db", "kind": "answerable", "traits": ["paraphrase"],
     "question": "How do I shrink it after throwing away lots of records?",
     "answers": [{"doc_id": "db/vacuum.md", "quote": "The VACUUM command rebuilds the database "
                  "file, repacking it into a minimal amount of disk space."}]},
    {"id": "q0003", "domain": "web", "kind": "no_answer", "traits": [],
     "question": "Which directive sets the QUIC retry token lifetime?", "answers": [],
     "probes": ["retry token", "re:\\bquic\\b"],
     "near_miss": {"doc_id": "web/proxy.md", "quote": "proxy_pass forwards requests"},
     "notes": "proxy_pass is about upstreams, not QUIC"},
]  # fmt: skip


def write(root: Path, questions: list[dict[str, Any]]) -> Path:
    for doc_id, text in DOCS.items():
        (root / "docs" / doc_id).parent.mkdir(parents=True, exist_ok=True)
        (root / "docs" / doc_id).write_text(text, encoding="utf-8")
    (root / "questions.jsonl").write_text(
        "".join(json.dumps(q, ensure_ascii=False) + "\n" for q in questions), encoding="utf-8")
    write_manifest(root, force=True)
    return root


@pytest.fixture
def v2(tmp_path: Path) -> Path:
    return write(tmp_path / "v2", QUESTIONS)


def with_change(v2: Path, qid: str, **change: Any) -> list[str]:
    questions = [dict(q, **change) if q["id"] == qid else q for q in QUESTIONS]
    return lint_golden(write(v2, questions), coverage=False)


def test_a_clean_draft_lints_clean_and_loads_with_its_split(v2: Path) -> None:
    assert lint_golden(v2, coverage=False) == []
    golden = load_golden(v2, coverage=False)
    assert {q.split for q in golden.questions} <= {"train", "calibration", "test"}
    assert golden.questions[2].near_miss is not None and golden.questions[2].probes


def test_content_stems_drop_stopwords_and_stem_what_is_left() -> None:
    assert content_stems("How do I shrink the files?") == {"shrink", "file"}
    assert shared_stems("databases", ["the database file"]) == {"databas"}


def test_paraphrase_is_a_checked_fact_not_a_label(v2: Path) -> None:
    problems = with_change(v2, "q0002", question="How do I vacuum the database file?")
    assert problems == ["q0002: trait paraphrase but the question shares the stem(s) databas, "
                        "file, vacuum with its quote(s)"]


def test_a_probe_found_in_the_domain_is_a_problem_naming_where(v2: Path) -> None:
    problems = with_change(v2, "q0003", probes=["upstream"])
    assert problems == ["q0003: probe 'upstream' occurs in web/proxy.md: the documents may "
                        "answer it, or the probe is too common"]


def test_probes_are_checked_only_against_the_questions_domain() -> None:
    docs = {"db/a.md": "retry token", "web/b.md": "nothing"}
    assert probe_hits("retry  token", {k: v for k, v in docs.items() if k.startswith("web/")}) \
        == []
    assert probe_hits("RETRY token", docs) == ["db/a.md"]


def test_a_no_answer_without_probes_is_a_problem(v2: Path) -> None:
    assert with_change(v2, "q0003", probes=[]) == [
        "q0003: a no_answer question needs probes (patterns any answer would contain, absent "
        "from the documents)"]


def test_a_bad_regex_probe_is_reported(v2: Path) -> None:
    [problem] = with_change(v2, "q0003", probes=["re:("])
    assert problem.startswith("q0003: probe 're:(' is not a valid regex")


def test_a_near_miss_quote_must_exist_and_lie_in_the_domain(v2: Path) -> None:
    [problem] = with_change(v2, "q0003", near_miss={"doc_id": "web/proxy.md", "quote": "nope"})
    assert problem.startswith("q0003: near_miss: quote not found in web/proxy.md")
    assert with_change(v2, "q0003", near_miss={"doc_id": "db/pragma.md",
                                               "quote": "PRAGMA page_size"}) == [
        "q0003: the near miss db/pragma.md is outside the question's domain 'web'"]


def test_a_domain_must_be_a_top_folder_holding_an_answer(v2: Path) -> None:
    assert with_change(v2, "q0001", domain="nowhere")[0].startswith(
        "q0001: domain 'nowhere' is not a top folder of docs/")
    assert with_change(v2, "q0001", domain="web") == [
        "q0001: no answer lies in the question's domain 'web'"]
    assert with_change(v2, "q0001", domain="")[0] == (
        "q0001: domain is required (the top folder of its documents)")


def test_cross_language_needs_non_english(v2: Path) -> None:
    assert with_change(v2, "q0001", traits=["cross_language"]) == [
        "q0001: trait cross_language also needs trait non_english"]


def test_an_edited_split_in_the_manifest_is_caught(v2: Path) -> None:
    manifest = json.loads((v2 / "MANIFEST.json").read_text())
    part = manifest["split"]["questions"]["q0001"]
    manifest["split"]["questions"]["q0001"] = "test" if part != "test" else "train"
    (v2 / "MANIFEST.json").write_text(json.dumps(manifest))
    assert any("the split is not the one seed" in p for p in lint_golden(v2, coverage=False))


def test_the_split_deals_twenty_forty_forty_per_stratum_and_is_seeded() -> None:
    from evals.golden.model import Question

    questions = [Question(id=f"q{i:04d}", kind="answerable", question="?", traits=(),
                          answers=(), domain="d") for i in range(50)]
    parts = assign(questions, seed=1)
    assert [list(parts.values()).count(p) for p in ("train", "calibration", "test")] == \
        [10, 20, 20]
    assert parts == assign(questions, seed=1) != assign(questions, seed=2)
    assert PATTERN.count("train") == 1 and len(PATTERN) == 5


def test_the_shipped_minimums_are_lint_problems_for_version_two(v2: Path) -> None:
    problems = lint_golden(v2)
    assert "corpus: 3 question(s), needs at least 600" in problems
    assert "corpus: trait paraphrase covers 1 question(s), needs at least 100" in problems
    assert "corpus: 1 near-miss no_answer question(s), needs at least 60" in problems
