"""Calibrating a real collection, abstaining through the API and the CLI, failing closed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import TreeMaker

from groundkit.cli import main
from groundkit.collection import Collection, IndexConfig, calibration, index
from groundkit.errors import CalibrationError, UsageError

DOCS = {
    "logs.md": "# Logs\n\nDeployment logs are kept for 30 days. Audit logs for a year.\n",
    "oncall.md": "# On-call\n\nThe on-call engineer restarts the ingest worker at night.\n",
    "codes.txt": "Error E4012 means the upload quota was exceeded.\n",
    "backup.md": "# Backups\n\nDatabase backups run nightly and are kept for two weeks.\n",
}
ANSWERABLE = ["how long are deployment logs kept", "who restarts the ingest worker",
              "what does error E4012 mean", "how often do database backups run"]
# Unanswerable, but sharing a word with the documents (near misses, as real ones do).
NO_ANSWER = ["how long are chat logs archived on tape", "who restarts the mail server",
             "what does error E9999 mean for printers", "how are database schemas migrated",
             "which engineer approves holiday requests", "where are audit reports published",
             "how big is the upload button", "when was the night shift introduced",
             "are kept promises rewarded", "what quota applies to parking"]


def questions_file(tmp_path: Path, answerable: list[str], no_answer: list[str]) -> Path:
    path = tmp_path / "questions.jsonl"
    rows = [{"question": q, "kind": "answerable"} for q in answerable]
    rows += [{"question": q, "kind": "no_answer"} for q in no_answer]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def grk(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def root(make_tree: TreeMaker) -> Path:
    return make_tree(DOCS)


@pytest.fixture
def calibrated(root: Path, home: Path, tmp_path: Path,
               capsys: pytest.CaptureFixture[str]) -> Path:
    index("k", IndexConfig(roots=(str(root),)), home=home)
    code, out, err = grk(capsys, "calibrate", "-c", "k", "--questions",
                         str(questions_file(tmp_path, ANSWERABLE, NO_ANSWER)))
    assert code == 0, err
    assert out.startswith("bm25: n0 = 10 no-answer questions, alpha = 0.1;")
    assert "exceeds 0.15 with probability 20%" in err  # ten is few, and calibrate says so
    assert "about 15 would bring that under 10%" in err
    return root


def test_calibrate_reports_what_it_measured_on_its_own_questions(
        calibrated: Path, home: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = grk(capsys, "calibrate", "-c", "k", "--json", "--questions",
                       str(questions_file(tmp_path, ANSWERABLE, NO_ANSWER)))
    [stored] = json.loads(out)["calibrations"]
    assert code == 0 and stored["mode"] == "bm25" and stored["n0"] == 10
    assert stored["signals"] == {"bm25": "bm25.idf_coverage"} and stored["scores"] is None
    assert stored["stats"]["false_answer_rate_in_sample"] <= 0.1
    assert stored["stats"]["coverage_in_sample"] == 1.0  # every answerable question is covered


@pytest.mark.parametrize("options", [{}, {"top_k": 3}, {"top_k": 20}, {"explain": True},
                                     {"score_threshold": 1.0}, {"verify": True},
                                     {"collapse": False}, {"collapse": False, "verify": True}])
def test_an_answering_gate_shows_exactly_the_searchs_hits(
        calibrated: Path, home: Path, options: dict[str, object]) -> None:
    query = "how long are deployment logs kept for audit"
    with Collection.open("k", home) as coll:
        gated = coll.search_or_abstain(query, alpha=0.5, **options)
        plain = coll.search(query, **options)
    assert gated.decision.answer
    assert [h.to_dict("k") for h in gated.hits] == [h.to_dict("k") for h in plain]


def test_a_calibration_stored_while_the_collection_is_open_is_used(
        calibrated: Path, home: Path, tmp_path: Path) -> None:
    with Collection.open("k", home) as coll:
        assert coll.decide("logs").n0 == 10
        coll.calibrate(questions_file(tmp_path, ANSWERABLE, NO_ANSWER[:9]))
        assert coll.decide("logs").n0 == 9


def test_abstaining_search_keeps_the_ranking_and_drops_hits_only_when_it_abstains(
        calibrated: Path, home: Path) -> None:
    with Collection.open("k", home) as coll:
        answered = coll.search_or_abstain("how long are deployment logs kept")
        plain = coll.search("how long are deployment logs kept")
        refused = coll.search_or_abstain("who restarts the mail server")
    assert answered.decision.answer and answered.decision.p_value <= 0.1
    assert [h.chunk.chunk_id for h in answered.hits] == [h.chunk.chunk_id for h in plain]
    assert refused.decision.abstained and refused.hits == []
    assert refused.decision.n0 == 10 and refused.decision.mode == "bm25"


def test_search_abstain_in_json_and_in_words(
        calibrated: Path, home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = grk(capsys, "search", "who restarts the mail server", "-c", "k",
                       "--abstain", "--json")
    data = json.loads(out)
    assert code == 0 and data["abstained"] is True and data["hits"] == []
    assert data["p_value"] > data["alpha"] == 0.1 and data["reason"]
    code, out, _ = grk(capsys, "search", "who restarts the mail server", "-c", "k", "--abstain")
    assert out.startswith("nothing in this collection answers that (p = ")
    code, out, _ = grk(capsys, "search", "what does error E4012 mean", "-c", "k", "--abstain",
                       "--json")
    data = json.loads(out)
    assert data["abstained"] is False and data["hits"][0]["path"] == "codes.txt"
    code, out, _ = grk(capsys, "search", "zebra", "-c", "k", "--abstain", "--json")
    assert json.loads(out)["reason"] == "no query term occurs in the collection"


def test_without_a_calibration_abstain_is_an_error_naming_grk_calibrate(
        root: Path, home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    index("k", IndexConfig(roots=(str(root),)), home=home)
    code, _, err = grk(capsys, "search", "logs", "-c", "k", "--abstain")
    assert code == CalibrationError.exit_code == 9
    assert "has no calibration for mode 'bm25'" in err and "grk calibrate" in err
    code, _, err = grk(capsys, "search", "logs", "-c", "k", "--alpha", "0.2")
    assert code == UsageError.exit_code and "--alpha applies with --abstain only" in err


def test_reindexing_changed_documents_makes_the_calibration_stale(
        calibrated: Path, home: Path) -> None:
    (calibrated / "logs.md").write_text("# Logs\n\nLogs are now kept forever.\n")
    index("k", IndexConfig(roots=(str(calibrated),)), home=home)
    with Collection.open("k", home) as coll, pytest.raises(CalibrationError, match="stale") as e:
        coll.search_or_abstain("logs")
    assert "generation" in str(e.value) and "recalibrate" in str(e.value)


def test_an_alpha_below_what_the_questions_support_fails_closed(
        calibrated: Path, home: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    with Collection.open("k", home) as coll, pytest.raises(CalibrationError,
                                                           match="add at least 9 more"):
        coll.search_or_abstain("logs", alpha=0.05)
    code, _, err = grk(capsys, "calibrate", "-c", "k", "--alpha", "0.01", "--questions",
                       str(questions_file(tmp_path, ANSWERABLE, NO_ANSWER)))
    assert code == 9 and "add at least 89 more" in err


def test_bad_question_files_are_usage_errors_with_the_line(
        root: Path, home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    index("k", IndexConfig(roots=(str(root),)), home=home)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"question": "a", "kind": "answerable"}\n{"question": "b"}\n')
    code, _, err = grk(capsys, "calibrate", "-c", "k", "--questions", str(bad))
    assert code == UsageError.exit_code and "bad.jsonl:2:" in err
    only_answerable = questions_file(tmp_path, ANSWERABLE, [])
    code, _, err = grk(capsys, "calibrate", "-c", "k", "--questions", str(only_answerable))
    assert code == 9 and "needs no_answer questions" in err
    with pytest.raises(UsageError, match="cannot read"):
        calibration.read_questions(tmp_path / "missing.jsonl")


def test_the_python_api_calibrates_and_the_same_open_collection_then_abstains(
        root: Path, home: Path, tmp_path: Path) -> None:
    index("k", IndexConfig(roots=(str(root),)), home=home)
    with Collection.open("k", home) as coll:
        [made] = coll.calibrate(questions_file(tmp_path, ANSWERABLE, NO_ANSWER))
        assert (made.mode, made.n0, made.generation) == ("bm25", 10, coll.generation)
        assert coll.decide("who restarts the mail server").abstained
        assert coll.decide("what does error E4012 mean").answer


def test_status_lists_each_calibration_and_says_when_it_went_stale(
        calibrated: Path, home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = grk(capsys, "status", "k", "--json", "--no-changes")
    assert code == 0
    [info] = json.loads(out)["calibrations"]
    assert (info["mode"], info["n0"], info["alpha"], info["stale"]) == ("bm25", 10, 0.1, None)
    (calibrated / "logs.md").write_text("# Logs\n\nKept forever now.\n")
    index("k", IndexConfig(roots=(str(calibrated),)), home=home)
    code, out, _ = grk(capsys, "status", "k", "--no-changes")
    assert code == 0 and "calibrated bm25: n0 = 10, alpha = 0.1" in out and "(STALE: " in out
