"""Golden corpus v1: exact counts, sampled items, and a broken copy for every lint rule."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from evals.__main__ import main
from evals.golden import (
    LONG_DOCUMENT_CHARS,
    Golden,
    find_all,
    lint_golden,
    load_golden,
    write_manifest,
)
from groundkit.errors import IntegrityError
from groundkit.sources import decode_bytes

V1 = Path(__file__).resolve().parents[2] / "golden" / "v1"


@pytest.fixture(scope="module")
def golden() -> Golden:
    return load_golden(V1)


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    """A byte-exact copy of golden/v1 that a test may break."""
    target = tmp_path / "v1"
    shutil.copytree(V1, target)
    return target


def read_questions(root: Path) -> list[dict[str, Any]]:
    lines = (root / "questions.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def rewrite_questions(root: Path, questions: list[dict[str, Any]], manifest: bool = True) -> None:
    text = "".join(json.dumps(q, ensure_ascii=False) + "\n" for q in questions)
    (root / "questions.jsonl").write_text(text, encoding="utf-8")
    if manifest:
        write_manifest(root, force=True)


def by_id(questions: list[dict[str, Any]], qid: str) -> dict[str, Any]:
    return next(q for q in questions if q["id"] == qid)


# --- the real corpus ------------------------------------------------------------------------


def test_golden_v1_lints_clean() -> None:
    assert lint_golden(V1) == []


def test_golden_v1_has_exact_counts(golden: Golden) -> None:
    kinds = Counter(q.kind for q in golden.questions)
    assert golden.version == 1
    assert len(golden.documents) == 37
    assert len(golden.questions) == 348
    assert kinds == {"answerable": 236, "ambiguous": 75, "no_answer": 37}


def test_golden_v1_trait_counts_match_the_manifest(golden: Golden) -> None:
    traits = Counter(t for q in golden.questions for t in q.traits)
    manifest = json.loads((V1 / "MANIFEST.json").read_text(encoding="utf-8"))
    assert traits == {
        "paraphrase": 69, "exact_identifier": 66, "straddle": 26,
        "multi_document": 70, "long_document": 73, "non_english": 31,
    }
    assert manifest["counts"]["traits"] == dict(traits)
    assert min(traits.values()) >= 15


def test_every_answer_span_slices_its_quote_out_of_the_decoded_document(golden: Golden) -> None:
    for question in golden.questions:
        for answer in question.answers:
            text = golden.documents[answer.doc_id]
            assert text[answer.start : answer.end] == answer.quote, question.id


def test_documents_are_decoded_like_groundkit_with_the_bom_stripped(golden: Golden) -> None:
    for doc_id, text in golden.documents.items():
        assert decode_bytes((V1 / "docs" / doc_id).read_bytes()).text == text
    raw = (V1 / "docs" / "product" / "faq-ja.md").read_bytes()
    assert raw.startswith(b"\xef\xbb\xbf")
    assert golden.documents["product/faq-ja.md"].startswith("# Birchline よくあるご質問")


def test_the_corpus_keeps_its_awkward_properties(golden: Golden) -> None:
    crlf = [d for d in golden.documents if b"\r\n" in (V1 / "docs" / d).read_bytes()]
    long_docs = [d for d, t in golden.documents.items() if len(t) > LONG_DOCUMENT_CHARS]
    everything = "".join(golden.documents.values())
    assert len(crlf) >= 3
    assert sorted(long_docs) == ["people/employee-handbook.md", "product/api-reference.md"]
    for sample in ("télétravail", "Datenschutz", "予約", "ραντεβού", "📈"):
        assert sample in everything


def test_a_crlf_quote_keeps_its_carriage_returns(golden: Golden) -> None:
    q = next(q for q in golden.questions if q.id == "q0038")
    (answer,) = q.answers
    assert answer.doc_id == "policies/leave-policy.md"
    assert "\r\n\r\n" in answer.quote
    assert "straddle" in q.traits


def test_a_repeated_quote_resolves_to_the_occurrence_it_names(golden: Golden) -> None:
    q = next(q for q in golden.questions if q.id == "q0123")
    answer = q.answers[0]
    text = golden.documents["product/api-reference.md"]
    assert answer.quote == "Requires `bookings:write`."
    assert answer.occurrence == 3
    assert answer.start == find_all(text, answer.quote)[2]
    assert "### Cancel a booking" in text[answer.start - 80 : answer.start]


def test_sampled_questions_have_the_expected_shape(golden: Golden) -> None:
    questions = {q.id: q for q in golden.questions}
    first = questions["q0001"]
    assert first.kind == "answerable" and first.traits == ("paraphrase",)
    assert first.answers[0].doc_id == "policies/data-retention.md"
    assert "30 days" in first.answers[0].quote
    no_answer = [q for q in golden.questions if q.kind == "no_answer"]
    assert all(q.answers == () for q in no_answer)
    multi = [q for q in golden.questions if "multi_document" in q.traits]
    assert all(len({a.doc_id for a in q.answers}) >= 2 for q in multi)


def test_every_document_is_cited(golden: Golden) -> None:
    cited = {a.doc_id for q in golden.questions for a in q.answers}
    assert cited == set(golden.documents)


def test_writing_the_manifest_again_changes_no_byte(copy: Path) -> None:
    before = (copy / "MANIFEST.json").read_bytes()
    write_manifest(copy)
    assert (copy / "MANIFEST.json").read_bytes() == before
    assert (copy / "MANIFEST.json").read_bytes() == (V1 / "MANIFEST.json").read_bytes()


def test_a_released_manifest_is_not_rewritten_with_new_checksums(copy: Path) -> None:
    (copy / "docs" / "runbooks" / "deploy.md").write_bytes(b"# changed\n")
    with pytest.raises(IntegrityError, match="never edited in place"):
        write_manifest(copy)


# --- broken copies --------------------------------------------------------------------------


def test_a_quote_not_in_its_document_names_the_question(copy: Path) -> None:
    questions = read_questions(copy)
    by_id(questions, "q0002")["answers"][0]["quote"] = "Audit logs are kept forever."
    rewrite_questions(copy, questions)
    assert lint_golden(copy) == [
        'q0002: answer 1: quote not found in policies/data-retention.md: '
        '"Audit logs are kept forever."'
    ]


def test_a_crlf_quote_written_with_bare_newlines_gets_a_hint(copy: Path) -> None:
    questions = read_questions(copy)
    answer = by_id(questions, "q0038")["answers"][0]
    answer["quote"] = answer["quote"].replace("\r\n", "\n")
    rewrite_questions(copy, questions)
    (problem,) = lint_golden(copy)
    assert problem.startswith("q0038: answer 1: quote not found in policies/leave-policy.md")
    assert "CRLF line endings" in problem


def test_a_repeated_quote_without_occurrence_is_rejected(copy: Path) -> None:
    questions = read_questions(copy)
    del by_id(questions, "q0123")["answers"][0]["occurrence"]
    rewrite_questions(copy, questions)
    (problem,) = lint_golden(copy)
    assert problem.startswith("q0123: answer 1: quote occurs")
    assert "set occurrence" in problem


def test_an_occurrence_past_the_last_one_is_rejected(copy: Path) -> None:
    questions = read_questions(copy)
    by_id(questions, "q0123")["answers"][0]["occurrence"] = 99
    rewrite_questions(copy, questions)
    assert lint_golden(copy) == ["q0123: answer 1: occurrence 99 but the quote occurs 4 times"]


def test_a_duplicate_id_is_reported(copy: Path) -> None:
    questions = read_questions(copy)
    by_id(questions, "q0005")["id"] = "q0004"
    rewrite_questions(copy, questions)
    assert "q0004: duplicate question id (2 times)" in lint_golden(copy)


def test_an_unknown_kind_lists_the_valid_kinds(copy: Path) -> None:
    questions = read_questions(copy)
    by_id(questions, "q0009")["kind"] = "maybe"
    rewrite_questions(copy, questions)
    assert lint_golden(copy) == [
        "q0009: unknown kind 'maybe'; valid kinds: answerable, ambiguous, no_answer"
    ]


def test_kind_and_answer_count_must_agree(copy: Path) -> None:
    questions = read_questions(copy)
    answerable = by_id(questions, "q0001")
    answerable["answers"].append(by_id(questions, "q0002")["answers"][0])
    by_id(questions, "q0011")["kind"] = "ambiguous"  # a no_answer question with no answers
    rewrite_questions(copy, questions)
    problems = lint_golden(copy)
    assert "q0001: kind answerable needs 1 answer(s), has 2" in problems
    assert "q0011: kind ambiguous needs at least 2 answer(s), has 0" in problems


def test_an_unknown_trait_and_an_unsupported_trait_are_reported(copy: Path) -> None:
    questions = read_questions(copy)
    by_id(questions, "q0001")["traits"] = ["paraphrase", "tricky"]
    by_id(questions, "q0002")["traits"] = ["straddle"]
    rewrite_questions(copy, questions)
    problems = lint_golden(copy)
    assert any(p.startswith("q0001: unknown trait 'tricky'") for p in problems)
    assert "q0002: trait straddle but no quote spans a blank line" in problems


def test_a_changed_document_fails_its_checksum(copy: Path) -> None:
    path = copy / "docs" / "runbooks" / "deploy.md"
    path.write_bytes(path.read_bytes().replace(b"15 minutes", b"20 minutes"))
    problems = lint_golden(copy)
    assert "docs/runbooks/deploy.md: checksum mismatch with MANIFEST.json" in problems
    with pytest.raises(IntegrityError, match=r"docs/runbooks/deploy\.md: checksum mismatch"):
        load_golden(copy)


def test_an_edited_questions_file_fails_its_checksum(copy: Path) -> None:
    questions = read_questions(copy)
    by_id(questions, "q0003")["question"] = "Reworded?"
    rewrite_questions(copy, questions, False)
    assert lint_golden(copy) == ["questions.jsonl: checksum mismatch with MANIFEST.json"]


def test_files_and_manifest_entries_must_match_both_ways(copy: Path) -> None:
    (copy / "docs" / "stray.md").write_text("# Stray\n", encoding="utf-8")
    (copy / "docs" / "product" / "faq.md").unlink()
    problems = lint_golden(copy, coverage=False)
    assert "docs/stray.md: present but not listed in MANIFEST.json" in problems
    assert "docs/product/faq.md: listed in MANIFEST.json but missing" in problems


def test_an_uncited_document_is_reported_unless_coverage_is_off(copy: Path) -> None:
    (copy / "docs" / "policies" / "travel-2019.md").write_text("# Old travel\n", encoding="utf-8")
    write_manifest(copy, force=True)
    assert lint_golden(copy) == ["docs/policies/travel-2019.md: not cited by any question"]
    assert lint_golden(copy, coverage=False) == []


def test_too_few_questions_for_a_trait_is_a_corpus_problem(copy: Path) -> None:
    questions = read_questions(copy)
    for question in questions:
        question["traits"] = [t for t in question["traits"] if t != "non_english"]
    rewrite_questions(copy, questions)
    assert lint_golden(copy) == [
        "corpus: trait non_english covers 0 question(s), needs at least 15"
    ]


def test_a_document_that_is_not_utf8_is_reported(copy: Path) -> None:
    (copy / "docs" / "policies" / "expenses.md").write_bytes("Café £45\n".encode("latin-1"))
    write_manifest(copy, force=True)
    problems = lint_golden(copy)
    assert problems[0].startswith("docs/policies/expenses.md: cannot be decoded: not UTF-8")


def test_an_unparsable_line_names_its_line_number(copy: Path) -> None:
    with (copy / "questions.jsonl").open("a", encoding="utf-8") as f:
        f.write('{"id": "q9999", "kind": \n')
    write_manifest(copy, force=True)
    assert lint_golden(copy) == ["questions.jsonl line 349: invalid JSON: Expecting value"]


def test_loading_a_broken_copy_raises_an_integrity_error_naming_the_question(copy: Path) -> None:
    questions = read_questions(copy)
    by_id(questions, "q0042")["answers"][0]["doc_id"] = "policies/holidays.md"
    rewrite_questions(copy, questions)
    with pytest.raises(IntegrityError) as info:
        load_golden(copy)
    assert "q0042: answer 1: document 'policies/holidays.md' is not in docs/" in str(info.value)


# --- command line ---------------------------------------------------------------------------


def test_the_lint_command_exits_zero_on_the_real_corpus(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["lint", str(V1)]) == 0
    assert capsys.readouterr().out == ""


def test_the_lint_command_prints_one_line_per_problem(
    copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    questions = read_questions(copy)
    by_id(questions, "q0009")["kind"] = "maybe"
    by_id(questions, "q0020")["kind"] = "perhaps"
    rewrite_questions(copy, questions)
    assert main(["lint", str(copy)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in lines] == ["q0009", "q0020"]


def test_the_manifest_command_refuses_a_released_version(
    copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (copy / "docs" / "runbooks" / "deploy.md").write_bytes(b"# changed\n")
    assert main(["lint", str(copy), "--write-manifest"]) == IntegrityError.exit_code
    assert "never edited in place" in capsys.readouterr().err


def test_cached_vectors_of_another_embedding_identity_are_not_current(
    make_tree: Any, home: Path,
) -> None:
    """The harness re-embeds a cached collection whose vectors another identity made
    (an upgraded runtime, a rebuilt model file) instead of failing on them."""
    pytest.importorskip("lancedb")
    from evals.golden.suite import _vectors_current
    from groundkit.collection import Collection, IndexConfig, index
    from groundkit.testing.ollama_standin import OllamaStandin, hashing_embedder

    root = str(make_tree({"a.md": "alpha beta gamma\n", "b.md": "delta epsilon\n"}))
    with (OllamaStandin(hashing_embedder(64), models=["nomic-embed-text"]) as same,
          OllamaStandin(hashing_embedder(32), models=["nomic-embed-text"]) as other):
        embedding = {"spec": "ollama:nomic-embed-text", "options": {"host": same.url}}
        index("k", IndexConfig(roots=(root,), extra={"embedding": embedding}), home=home)
        moved = {"spec": "ollama:nomic-embed-text", "options": {"host": other.url}}
        with Collection.open("k", home) as coll:
            assert _vectors_current(coll, embedding)
            assert not _vectors_current(coll, moved)  # 32-d now: another identity
