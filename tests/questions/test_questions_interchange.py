"""grk questions import / export: RAGAS, LlamaIndex and BEIR, contexts aligned to exact spans."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import TreeMaker
from questions_corpus import DOCS, entry, good_rows, write_lines

from groundkit.cli import main
from groundkit.questions.model import USER_RULES
from groundkit.questions.parse import parse_lines

REPO = Path(__file__).resolve().parents[2]
ONCALL = "The on-call engineer acknowledges a page within five minutes."


@pytest.fixture
def ops(make_tree: TreeMaker, home: Path) -> str:
    assert main(["index", str(make_tree(DOCS)), "-c", "ops"]) == 0
    return "ops"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:
    capsys.readouterr()
    assert main(["questions", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def spans(path: Path, documents: dict[str, str]) -> list[tuple[str, set[tuple[str, int, int]]]]:
    parsed, problems, _ = parse_lines(path.read_text(), path.name, documents, USER_RULES)
    assert problems == []
    return [(q.kind, {(a.doc_id, a.start, a.end) for a in q.answers}) for q in parsed]


def rows_for_export() -> list[dict]:
    rows = good_rows()
    rows[2] = entry("q0003", "Who gets paged first?", "ambiguous", answers=[
        {"doc_id": "ops/oncall.md", "quote": ONCALL},
        {"doc_id": "ops/oncall-copy.md", "quote": ONCALL}])
    return rows


@pytest.mark.parametrize("fmt", ["ragas", "llamaindex", "beir"])
def test_an_export_imports_back_to_the_same_spans(
        fmt: str, ops: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = write_lines(tmp_path / "q.jsonl", rows_for_export())
    out = tmp_path / f"export.{fmt}"
    run(capsys, "export", str(source), fmt, "-c", "ops", "--out", str(out))
    back = tmp_path / "back.jsonl"
    report = run(capsys, "import", fmt, str(out), "-c", "ops", "--out", str(back))
    assert report["unaligned"] == [] and report["questions_written"] == 4
    assert spans(back, DOCS) == spans(source, DOCS)


def test_rewrapped_typographic_and_edited_contexts_align_or_are_reported(
        ops: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    contexts = [
        ["Deployment logs are kept\nfor 30 days in the log store."],         # re-wrapped
        ["A release branch is cut on the first Tuesday of each month."],    # exact
        ["The database is snapshotted every six hours and the snapshots are copied to a "
         "region."],                                                         # a word dropped
        [ONCALL],                                                           # in two files
        ["Our parrots are fed twice a day with sunflower seeds."],          # not there
        [ONCALL, ONCALL],                                                   # both places
    ]
    ragas = tmp_path / "set.jsonl"
    write_lines(ragas, [{"user_input": f"question {i}", "reference_contexts": c}
                        for i, c in enumerate(contexts, 1)])
    back = tmp_path / "back.jsonl"
    report = run(capsys, "import", "ragas", str(ragas), "-c", "ops", "--out", str(back))
    reasons = {p["source_id"]: p["reason"] for p in report["unaligned"]}
    assert reasons["4"].startswith("ambiguous: found 2 times")
    assert reasons["5"].startswith("no passage matches well enough")
    assert report["questions_dropped"] == ["4", "5"] and report["fuzzy"] == 1
    rows = {r["notes"].split("source id ")[1].split(";")[0]: r
            for r in map(json.loads, back.read_text().splitlines())}
    assert rows["1"]["answers"] == [{"doc_id": "ops/logging.md", "quote":
                                     "Deployment logs are kept for 30 days in the log store."}]
    assert "status" not in rows["1"] and "status" not in rows["2"]
    assert rows["3"]["status"] == "draft" and "aligned fuzzily" in rows["3"]["notes"]
    assert rows["3"]["answers"][0]["quote"] == DOCS["eng/backups.md"].split("\n\n")[1].split(
        " A restore")[0]
    assert rows["6"]["kind"] == "ambiguous"
    assert {a["doc_id"] for a in rows["6"]["answers"]} == {"ops/oncall.md", "ops/oncall-copy.md"}


def test_a_ragas_csv_reads_its_list_columns(
        ops: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import csv

    path = tmp_path / "set.csv"
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["user_input", "reference_contexts", "reference"])
        writer.writerow(["When is a release branch cut?",
                         repr(["A release branch is cut on the first Tuesday of each month."]),
                         "the first Tuesday"])
        writer.writerow(["Which cloud hosts the backups?", "[]", ""])
    back = tmp_path / "back.jsonl"
    report = run(capsys, "import", "ragas", str(path), "-c", "ops", "--out", str(back))
    assert report["kinds"] == {"answerable": 1, "no_answer": 1} and report["unaligned"] == []


def test_a_beir_qrel_on_a_whole_file_has_no_passage_to_quote(
        ops: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "beir"
    (folder / "qrels").mkdir(parents=True)
    write_lines(folder / "queries.jsonl", [{"_id": "a", "text": "When are releases cut?"},
                                           {"_id": "b", "text": "How are logs kept?"}])
    write_lines(folder / "corpus.jsonl", [
        {"_id": "p1", "title": "eng/release.md",
         "text": "A release branch is cut on the first Tuesday of each month."},
        {"_id": "ops/logging.md", "title": "ops/logging.md", "text": DOCS["ops/logging.md"]}])
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\na\tp1\t1\n"
                                               "b\tops/logging.md\t1\n")
    back = tmp_path / "back.jsonl"
    report = run(capsys, "import", "beir", str(folder), "-c", "ops", "--out", str(back))
    assert [p["reason"] for p in report["unaligned"]] == [
        "judged at file level (ops/logging.md): no passage to quote"]
    (row,) = map(json.loads, back.read_text().splitlines())
    assert row["answers"] == [{"doc_id": "eng/release.md", "quote":
                               "A release branch is cut on the first Tuesday of each month."}]


def test_golden_v2_exported_to_ragas_imports_back_with_99_percent_of_its_spans(
        home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    docs = REPO / "golden" / "v2" / "docs"
    assert main(["index", str(docs), "-c", "v2"]) == 0
    source = REPO / "golden" / "v2" / "questions.jsonl"
    ragas, back = tmp_path / "v2.ragas.jsonl", tmp_path / "back.jsonl"
    run(capsys, "export", str(source), "ragas", "-c", "v2", "--out", str(ragas))
    run(capsys, "import", "ragas", str(ragas), "-c", "v2", "--out", str(back))
    documents = {p.relative_to(docs).as_posix(): p.read_bytes().decode("utf-8")
                 for p in docs.rglob("*") if p.is_file()}
    original = spans(source, documents)
    rows = [json.loads(line) for line in back.read_text().splitlines()]
    recovered = dict(zip((int(r["notes"].split("source id ")[1].split(";")[0]) for r in rows),
                         (s for _, s in spans(back, documents)), strict=True))
    found = sum(len(s & recovered.get(i, set())) for i, (_, s) in enumerate(original, 1))
    total = sum(len(s) for _, s in original)
    assert total == 1249 and found / total >= 0.99
