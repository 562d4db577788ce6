"""The qmd stage: qmd's own CLI searches a golden suite's files, judged at file level."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from golden_fixture import DOCS, QUESTIONS

from evals.__main__ import main
from evals.engines import unavailable as engine_unavailable
from evals.external.suite import ExternalSuite
from evals.golden import write_manifest
from evals.golden.corpus import load_golden
from evals.peers import qmd
from evals.stages import STAGES

REASON = qmd.unavailable()
if REASON is not None and os.environ.get("GROUNDKIT_REQUIRE_QMD") == "1":
    raise RuntimeError(f"GROUNDKIT_REQUIRE_QMD=1 but the qmd peer cannot run: {REASON}")
needs_qmd = pytest.mark.skipif(REASON is not None, reason=f"qmd: {REASON}")

NESTED = "team notes/Runbook.md"
EXTRA = [
    {"id": "q0007", "kind": "answerable", "question": "deployment logs kept", "traits": [],
     "answers": [{"doc_id": "retention.md", "quote": "Deployment logs are kept for 30 days."}]},
    {"id": "q0008", "kind": "answerable", "question": "--help audit logs", "traits": [],
     "answers": [{"doc_id": "retention.md", "quote": "Audit logs are kept for seven years."}]},
    {"id": "q0009", "kind": "answerable", "question": "rotate the signing key", "traits": [],
     "answers": [{"doc_id": NESTED, "quote": "Rotate the signing key every quarter."}]},
]


def golden(root: Path) -> Path:
    """The tiny corpus, a nested file with a space in its path, and questions qmd can match
    (it requires every query word), one beginning with ``--``."""
    docs = root / "docs"
    for name, text in {**DOCS, NESTED: "# Runbook\n\nRotate the signing key every quarter.\n"
                       }.items():
        (docs / name).parent.mkdir(parents=True, exist_ok=True)
        (docs / name).write_text(text)
    (root / "questions.jsonl").write_text(
        "".join(json.dumps(q) + "\n" for q in [*QUESTIONS, *EXTRA]))
    write_manifest(root)
    return root


def test_an_empty_peer_folder_says_how_to_set_it_up(tmp_path: Path) -> None:
    assert "make qmd" in str(qmd.unavailable(tmp_path))


def test_model_commands_are_never_measured_here(tmp_path: Path) -> None:
    for command in ("query", "vsearch"):
        reason = str(qmd.command_unavailable(command, tmp_path))
        assert qmd.NOT_MEASURED in reason and "embeddinggemma" in reason
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "hf_ggml-org_embeddinggemma-300M-Q8_0.gguf").write_bytes(b"")
    assert "not measured" in str(qmd.command_unavailable("vsearch", tmp_path))


def test_every_qmd_stage_is_skipped_with_its_reason_when_it_cannot_run() -> None:
    for name in ("qmd-query", "qmd-vsearch"):
        assert "not measured" in str(engine_unavailable(STAGES[name]))
    assert engine_unavailable(STAGES["qmd"]) == REASON
    external = ExternalSuite.unavailable(None, STAGES["qmd"])  # type: ignore[arg-type]
    assert "golden and your own collection only" in str(external)


def test_a_snippet_maps_to_a_span_only_where_its_lines_are_the_text() -> None:
    text = "# T\n\nfirst line\nsecond line\n"
    start, end = qmd.span_of(text, "@@ -3,2 @@ (2 before, 0 after)\nfirst line\nsecond line")
    assert text[start:end] == "first line\nsecond line"
    assert qmd.span_of(text, "@@ -3,2 @@\nfirst line\nsecond LINE") is None
    assert qmd.span_of(text, "@@ -9,2 @@\nfirst line\nsecond line") is None
    assert qmd.span_of(text, "no hunk header") is None


def test_the_mask_names_every_readable_extension_and_bare_name() -> None:
    assert qmd.mask(["a.md", "b/c.txt", "README"]) == "**/*.{md,txt},README"
    assert qmd.mask(["a.md"]) == "**/*.md"


def test_extracted_formats_are_left_out_and_counted(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("words")
    (tmp_path / "b.pdf").write_bytes(b"%PDF-1.4\n")
    (tmp_path / "empty.txt").write_text("")
    paths, left = qmd.readable(tmp_path, {"a.md": "words", "b.pdf": "x", "empty.txt": ""}, {})
    assert paths == ["a.md"]
    assert left["b.pdf"].startswith("PDF:") and "empty" in left["empty.txt"]


def test_questions_qmd_would_read_specially_are_recorded() -> None:
    notes = qmd.handling("--soft reset -e")
    assert any("after '--'" in n for n in notes)
    assert sum("exclusion" in n for n in notes) == 2
    assert qmd.handling("plain words") == ()


@needs_qmd
def test_a_query_beginning_with_a_dash_is_searched_not_parsed_as_an_option(
        tmp_path: Path) -> None:
    docs = golden(tmp_path / "v1") / "docs"
    with qmd.Workspace() as peer:
        assert peer.index(docs, ["retention.md", "oncall.md", NESTED]) == {
            "retention.md", "oncall.md", NESTED}
        for query in ("--help audit logs", "-n audit logs", "--version audit"):
            found = peer.search(query, 10)
            assert [r["file"] for r in found] == ["qmd://golden/retention.md"], query
        assert peer.env["HOME"] == str(peer.state)  # qmd's index, config, models: all here
        assert peer.env["INDEX_PATH"].startswith(str(peer.state))


@needs_qmd
def test_results_name_golden_doc_ids_with_the_spans_qmd_showed(tmp_path: Path) -> None:
    suite = load_golden(golden(tmp_path / "v1"), coverage=False, rules=False)
    answers = qmd.ask_all(suite.root / "docs", suite.documents, suite.extractors,
                          [(q.id, q.question) for q in suite.questions], 100)
    assert answers.asked["q0009"].results[0].path == NESTED
    assert answers.asked["q0008"].status == "hits" and answers.asked["q0008"].handling
    assert answers.asked["q0006"].status == "nothing"
    for entry in answers.entries("span"):
        assert entry.path in suite.documents
        assert entry.start is not None and entry.end is not None
        assert suite.documents[entry.path][entry.start:entry.end].strip()
    summary = answers.summary()
    assert summary["indexed"] == 4 and "q0006" in summary["returned_nothing"]


@needs_qmd
def test_the_qmd_stage_is_judged_at_file_level_beside_bm25_at_file(tmp_path: Path) -> None:
    root = golden(tmp_path / "v1")
    out = tmp_path / "out"
    assert main(["run", "--golden", str(root), "--stages", "bm25", "qmd", "--out",
                 str(out)]) == 0
    report = json.loads((out / "latest.json").read_text())
    stages = {s["name"]: s for s in report["stages"]}
    config = stages["qmd"]["config"]
    assert config["engine"] == "qmd" and config["granularity"] == "file"
    assert config["compared_with"] == "bm25@file" and "bm25@file" in stages
    assert config["no_answer"]["returned_nothing"] == 2
    assert config["qmd"]["handled"]["q0008"]
    assert {c["baseline"] for c in report["comparisons"] if c["stage"] == "qmd"} == {
        "bm25@file"}
