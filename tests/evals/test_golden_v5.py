"""Golden corpus v5: v4 carried over, scanned copies read by OCR, and table-row questions."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from evals.golden import lint_golden
from groundkit import extract

GOLDEN = Path(__file__).resolve().parents[2] / "golden"
V4, V5 = GOLDEN / "v4", GOLDEN / "v5"


def _questions(root: Path) -> list[dict]:
    lines = (root / "questions.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


def _new() -> list[dict]:
    old = {q["id"] for q in _questions(V4)}
    return [q for q in _questions(V5) if q["id"] not in old]


def test_v4_questions_are_carried_byte_for_byte() -> None:
    v4 = (V4 / "questions.jsonl").read_bytes()
    assert (V5 / "questions.jsonl").read_bytes().startswith(v4)
    new = _new()
    assert Counter((q["domain"], q["kind"]) for q in new) == {
        ("r-manuals", "answerable"): 12, ("r-manuals", "ambiguous"): 6,
        ("tables", "answerable"): 42, ("tables", "no_answer"): 5}
    traits = Counter(t for q in new for t in q["traits"])
    assert (traits["scanned"], traits["table_row"], traits["table_header"]) == (18, 42, 16)


def test_every_scanned_question_is_answered_in_an_ocr_view() -> None:
    pins = json.loads((V5 / "MANIFEST.json").read_text(encoding="utf-8"))["extractors"]
    scanned = [q for q in _new() if "scanned" in q["traits"]]
    for q in scanned:
        assert any(pins[a["doc_id"]].startswith("ocr/") for a in q["answers"]), q["id"]
    assert {d for d, pin in pins.items() if pin.startswith("ocr/")} == {
        "r-manuals/scanned/R-admin-p6-13.pdf", "r-manuals/scanned/R-data-p7-20.pdf"}


def _rows(doc_id: str) -> set[tuple[int, int]]:
    """The spans of the body rows (not header rows) of every marked table of a view."""
    data = (V5 / "docs" / doc_id).read_bytes()
    fmt = extract.for_file(doc_id, data)
    assert fmt is not None
    view = extract.extract(fmt, data)
    rows = set()
    for _, end, header_end in view.tables:
        at = header_end
        for line in view.text[header_end:end].split("\n"):
            rows.add((at, at + len(line)))
            at += len(line) + 1
    return rows


def _span(doc_id: str, quote: str, occurrence: int) -> tuple[int, int]:
    data = (V5 / "docs" / doc_id).read_bytes()
    fmt = extract.for_file(doc_id, data)
    assert fmt is not None
    text = extract.extract(fmt, data).text
    at = -1
    for _ in range(occurrence):
        at = text.index(quote, at + 1)
    return at, at + len(quote)


def test_every_table_answer_and_near_miss_is_one_whole_marked_row() -> None:
    tables = [q for q in _new() if q["domain"] == "tables"]
    rows: dict[str, set[tuple[int, int]]] = {}
    for q in tables:
        assert ("table_row" in q["traits"]) == (q["kind"] != "no_answer"), q["id"]
        assert "table_header" not in q["traits"] or "table_row" in q["traits"], q["id"]
        for a in q["answers"] + ([q["near_miss"]] if q.get("near_miss") else []):
            if a["doc_id"] not in rows:
                rows[a["doc_id"]] = _rows(a["doc_id"])
            span = _span(a["doc_id"], a["quote"], a.get("occurrence", 1))
            assert span in rows[a["doc_id"]], (q["id"], a["quote"])


@pytest.mark.skipif(not extract.extractor("ocr").available(),
                    reason="OCR is not installed (make ocr; pip install 'groundkit[ocr]'): "
                           "golden v5's scanned copies cannot be read")
def test_golden_v5_lints_clean_with_every_minimum() -> None:
    assert lint_golden(V5) == []
