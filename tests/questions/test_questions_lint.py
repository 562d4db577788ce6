"""grk questions lint: quotes, paraphrases, duplicates, leaks, drafts and counts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import TreeMaker
from questions_corpus import DOCS, entry, good_rows, write_lines

from groundkit.cli import main
from groundkit.collection import Collection
from groundkit.collection.calibration import needed_no_answer
from groundkit.questions.needs import Z95, delta_ci_width, steady_no_answer
from groundkit.retrieval import gate


@pytest.fixture
def ops(make_tree: TreeMaker, home: Path) -> str:
    assert main(["index", str(make_tree(DOCS)), "-c", "ops", "--chunk-size", "200",
                 "--chunk-overlap", "0"]) == 0
    return "ops"


def lint(capsys: pytest.CaptureFixture[str], path: Path, *extra: str) -> tuple[int, dict]:
    capsys.readouterr()
    code = main(["questions", "lint", str(path), "-c", "ops", "--json", *extra])
    return code, json.loads(capsys.readouterr().out)


def messages(report: dict, check: str) -> list[str]:
    return [f["message"] for f in report["findings"] if f["check"] == check]


def test_a_clean_file_passes_and_names_each_quotes_chunk(
        ops: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, report = lint(capsys, write_lines(tmp_path / "q.jsonl", good_rows()))
    assert code == 0 and report["errors"] == 0
    with Collection.open("ops") as coll:
        chunks = {c.chunk_id: c for c in coll.chunks()}
    for record in report["quotes"]:
        text = DOCS[record["doc_id"]]
        assert text[record["start"]:record["end"]] in text and record["occurrences"] == 1
        held = chunks[record["whole_in_chunk"]]
        assert held.doc_id == record["doc_id"]
        assert held.start <= record["start"] and record["end"] <= held.end
    # q0003's quote is word for word in the copy too: a hit there is judged not relevant
    assert [m.split(":")[0] for m in messages(report, "quote_elsewhere")] == ["q0003"]


def test_quotes_not_found_or_not_unique_are_errors_and_exit_non_zero(
        ops: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = [*good_rows(),
            entry("q0010", "How long are logs kept?", doc="ops/logging.md",
                  quote="Deployment logs are kept for 31 days"),
            entry("q0011", "How long are audit logs kept?", doc="ops/logging.md",
                  quote="400 days")]
    code, report = lint(capsys, write_lines(tmp_path / "q.jsonl", rows))
    assert code == 4
    found = messages(report, "quote")
    assert any(m.startswith("q0010: answer 1: quote not found in ops/logging.md") for m in found)
    assert any(m.startswith("q0011") and "occurs 2 times" in m for m in found)


def test_a_paraphrase_sharing_a_content_stem_with_its_quote_is_an_error(
        ops: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = [*good_rows(),
            entry("q0012", "How long do we keep deployment logs around?", doc="ops/logging.md",
                  quote="Deployment logs are kept for 30 days in the log store.",
                  traits=["paraphrase"])]
    code, report = lint(capsys, write_lines(tmp_path / "q.jsonl", rows))
    assert code == 4
    assert messages(report, "paraphrase") == [
        "q0012: trait paraphrase but the question shares the stem(s) deploy, log with "
        "its quote(s)"]


def test_duplicates_are_errors_near_duplicates_and_leaks_warnings(
        ops: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = [*good_rows(),
            entry("q0013", "how long are DEPLOYMENT logs kept", doc="ops/logging.md",
                  quote="Deployment logs are kept for 30 days in the log store."),
            entry("q0014", "When is the release branch cut?", doc="eng/release.md",
                  quote="A release branch is cut on the first Tuesday of each month."),
            entry("q0015", "Is it true that the database is snapshotted every six hours?",
                  doc="eng/backups.md",
                  quote="The database is snapshotted every six hours and the snapshots are "
                        "copied to a second region.")]
    code, report = lint(capsys, write_lines(tmp_path / "q.jsonl", rows))
    assert code == 4
    assert messages(report, "duplicate") == ["q0013: the same question as q0001"]
    assert [m.split(" (")[0] for m in messages(report, "near_duplicate")] == [
        "q0014: nearly the same question as q0002"]
    leak = messages(report, "leak")
    assert len(leak) == 1 and leak[0].startswith("q0015: the question copies 7 consecutive")
    rows.append({**rows[0], "question": "How long is a deployment log retained?"})
    code, report = lint(capsys, write_lines(tmp_path / "q.jsonl", rows))
    assert "q0001: duplicate question id (2 times)" in messages(report, "duplicate")


def test_drafts_are_errors_until_accepted(
        ops: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    draft = entry("q0016", "", doc="eng/release.md",
                  quote="The release manager signs the tag with the team key.", status="draft")
    code, report = lint(capsys, write_lines(tmp_path / "q.jsonl", [*good_rows(), draft]))
    assert code == 4 and len(messages(report, "draft")) == 1
    assert "q0016: the question text is empty" in messages(report, "format")
    accepted = {**draft, "question": "Who signs release tags?", "status": "accepted"}
    code, report = lint(capsys, write_lines(tmp_path / "q.jsonl", [*good_rows(), accepted]))
    assert code == 0


def test_counts_are_set_against_what_calibration_and_a_delta_need(
        ops: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, report = lint(capsys, write_lines(tmp_path / "q.jsonl", good_rows()))
    cal = report["measurements"]["calibration"]
    assert (cal["no_answer"], cal["needed_first"], cal["needed_steady"]) == (1, 15, 60)
    assert cal["overshoot_chance"] == gate.overshoot(1, 0.1, 0.05)
    delta = report["measurements"]["ndcg10_delta"]
    assert delta["answerable"] == 3
    assert delta["ci95_width"] == pytest.approx(2 * 1.96 * 0.42 / 3 ** 0.5, rel=1e-3)
    assert report["counts"]["kinds"] == {"answerable": 3, "no_answer": 1}
    short = messages(report, "counts")
    assert any("1 no_answer question(s)" in m for m in short)
    assert any(m.startswith("no split") for m in short)
    assert code == 0  # warnings only


def test_the_calibration_law_counts_are_those_of_gate_overshoot() -> None:
    first = needed_no_answer(0.1)
    assert gate.overshoot(first, 0.1, 0.05) <= 0.1 < gate.overshoot(first - 1, 0.1, 0.05) or \
        first - 1 < 9  # below 1/alpha - 1 nothing is ever answered
    steady = steady_no_answer(0.1)
    assert gate.overshoot(steady - 1, 0.1, 0.05) > 0.1
    assert all(gate.overshoot(n, 0.1, 0.05) <= 0.1 for n in range(steady, 1000))
    assert delta_ci_width(100, 0.5) == 2 * Z95 * 0.5 / 10
