"""``grk eval`` on a person's own collection that holds a PDF: the questions' quotes are
found in the PDF's text view, as the index made it (not in its raw bytes)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evals.__main__ import main
from groundkit.collection import IndexConfig, index

pytest.importorskip("pypdfium2")
PDF = Path(__file__).resolve().parents[1] / "extract" / "fixtures" / "pdf" / "gnuplot-p21-23.pdf"
QUESTIONS = [
    {"id": "q0001", "kind": "answerable", "question": "where is the gnuplot home page",
     "traits": [], "answers": [{"doc_id": "manual.pdf", "quote":
                                "The canonical gnuplot home page can be found at"}]},
    {"id": "q0002", "kind": "answerable", "question": "how long do lamps burn",
     "traits": [], "answers": [{"doc_id": "notes.md", "quote": "Lamps burn for six hours."}]},
    {"id": "q0003", "kind": "no_answer", "question": "zebra xylophone", "traits": [],
     "answers": []},
]


def test_your_own_collection_with_a_pdf_is_measured(tmp_path: Path) -> None:
    root = tmp_path / "docs"
    root.mkdir()
    (root / "manual.pdf").write_bytes(PDF.read_bytes())
    (root / "notes.md").write_text("# Lamps\n\nLamps burn for six hours.\n")
    questions = tmp_path / "q.jsonl"
    questions.write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS))
    home = tmp_path / "home"
    index("mine", IndexConfig(roots=(str(root),)), home=home)
    assert main(["run", "-c", "mine", "--questions", str(questions), "--home", str(home),
                 "--out", str(tmp_path / "out"), "--cache", str(tmp_path / "cache"),
                 "--resamples", "200", "--permutations", "200"]) == 0
    built = json.loads((tmp_path / "out" / "latest.json").read_text())
    scores = {q["query_id"]: q["stages"]["bm25"]["scores"] for q in built["questions"]}
    assert scores["q0001"]["nDCG@10"] > 0  # the quote was found in the PDF's view
