"""Run files from any system on golden and your own questions, judged by the quote rule at
their own granularity (evals/golden/runfile.py, evals/golden/runfile_stage.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evals import report as rpt
from evals import trec
from evals.__main__ import main
from evals.golden import write_manifest
from evals.golden.runfile import Entry, RunFile
from evals.golden.runfile_stage import FILE_BASELINE, companions, file_token
from evals.golden.suite import golden_suite
from evals.harness import evaluate
from evals.stages import STAGES, resolve, run_file_stage
from groundkit.collection import IndexConfig, index
from groundkit.errors import UsageError

SECTIONS = [
    "## Install\n\nRun the installer with --prefix to choose where the files go. The "
    "default prefix is /usr/local and needs root.",
    "## Configure\n\nThe configuration file lives in /etc/widget/widget.conf and is read "
    "once at start. Reload it with widgetctl reload.",
    "## Logs\n\nWidget writes its logs to /var/log/widget and rotates them weekly. Old "
    "logs are compressed with gzip and kept for four weeks.",
    "## Backups\n\nBackups run nightly at two in the morning. Each backup is verified by "
    "restoring it into a scratch directory.",
    "## Upgrades\n\nUpgrade one minor version at a time; skipping versions is not supported "
    "and the migration refuses to run.",
]
FILLER = " ".join(["Nothing else of note is said in this paragraph about widgets."] * 8)
DOCS = {
    "manual.md": "# Widget manual\n\n" + "\n\n".join(f"{s}\n\n{FILLER}" for s in SECTIONS)
                 + "\n",
    "retention.md": "# Retention\n\nDeployment logs are kept for 30 days.\n",
    "errors.txt": "E4012: upload quota exceeded.\nE5003: storage backend unavailable.\n",
}
QUESTIONS = [
    {"id": "q0001", "kind": "answerable", "question": "where does widget write its logs",
     "traits": [], "answers": [{"doc_id": "manual.md",
                                "quote": "Widget writes its logs to /var/log/widget"}]},
    {"id": "q0002", "kind": "answerable", "question": "when do backups run", "traits": [],
     "answers": [{"doc_id": "manual.md", "quote": "Backups run nightly at two in the morning."}]},
    {"id": "q0003", "kind": "answerable", "question": "what does E5003 mean", "traits": [],
     "answers": [{"doc_id": "errors.txt", "quote": "E5003: storage backend unavailable."}]},
    {"id": "q0004", "kind": "answerable", "question": "how long are deployment logs kept",
     "traits": [], "answers": [{"doc_id": "retention.md",
                                "quote": "Deployment logs are kept for 30 days."}]},
    {"id": "q0005", "kind": "no_answer", "question": "what is the parental leave policy",
     "traits": [], "answers": []},
    {"id": "q0006", "kind": "no_answer", "question": "zebra xylophone", "traits": [],
     "answers": []},
]
SETTINGS = rpt.Settings(resamples=200, permutations=200, hits_shown=100)


def write_golden(root: Path) -> Path:
    (root / "docs").mkdir(parents=True)
    for name, text in DOCS.items():
        (root / "docs" / name).write_text(text)
    (root / "questions.jsonl").write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS))
    write_manifest(root)
    return root


@pytest.fixture(scope="module")
def golden(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_golden(tmp_path_factory.mktemp("rf") / "golden" / "v1")


@pytest.fixture(scope="module")
def plain(golden: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """bm25 alone, every hit shown (its passages name each hit's file and span)."""
    out = tmp_path_factory.mktemp("plain")
    built = measure(golden, out, {})
    built["bm25_run"] = trec.ranking(trec.read_run(out / "runs" / "bm25.trec"))
    built["trec_path"] = out / "runs" / "bm25.trec"
    return built


def measure(golden: Path, out: Path, runs: dict[str, Path]) -> dict[str, Any]:
    suite = golden_suite(golden, out / "home")
    try:
        extra = [run_file_stage(f"{name}={path}") for name, path in runs.items()]
        extra += companions(suite, extra)
        stages = resolve(["bm25", *(s.name for s in extra)],
                         {**STAGES, **{s.name: s for s in extra}})
        return evaluate(suite, stages, settings=SETTINGS, runs_dir=out / "runs",
                        log=lambda _: None, serial=True)
    finally:
        suite.close()


def hits(report: dict[str, Any], stage: str) -> dict[str, list[dict[str, Any]]]:
    """Each question's shown hits with their passage's file and span."""
    passages = report["passages"]
    return {q["query_id"]: [{**h, **passages[h["passage"]]} for h in q["stages"][stage]["hits"]]
            for q in report["questions"]}


def stage(report: dict[str, Any], name: str) -> dict[str, Any]:
    return next(s for s in report["stages"] if s["name"] == name)


def write_jsonl(path: Path, rows: list[dict[str, Any]], depth: int | None = None) -> Path:
    lines = [json.dumps({"depth": depth})] if depth else []
    path.write_text("".join(line + "\n" for line in [*lines, *map(json.dumps, rows)]))
    return path


def test_the_fixture_cuts_a_file_into_several_chunks(plain: dict[str, Any]) -> None:
    spans = {(h["doc_id"], h["start"]) for hs in hits(plain, "bm25").values() for h in hs}
    assert len({s for s in spans if s[0] == "manual.md"}) >= 3


def test_a_chunk_id_run_equal_to_bm25s_scores_exactly_bm25s_numbers(
        golden: Path, plain: dict[str, Any], tmp_path: Path) -> None:
    rows = [{"query_id": q, "rank": r, "score": s, "chunk_id": c}
            for q, ranked in plain["bm25_run"].items()
            for r, (c, s) in enumerate(ranked, start=1)]
    jsonl = write_jsonl(tmp_path / "chunks.jsonl", rows, depth=100)
    built = measure(golden, tmp_path / "out", {"chunks": jsonl, "trec": plain["trec_path"]})
    bm25 = stage(built, "bm25")
    for name in ("chunks", "trec"):
        mine = stage(built, name)
        assert mine["abstention"] == bm25["abstention"]
        assert mine["config"]["granularity"] == "chunk"
        assert mine["config"]["compared_with"] == "bm25"
    assert stage(built, "chunks")["metrics"] == bm25["metrics"]
    # a TREC run has no depth line: it ranks as deep as its deepest list, and a measure
    # reading deeper is n/a for it (evals/report/reach.py), never a loss
    replayed = stage(built, "trec")
    assert replayed["config"]["docids"] == "chunk ids"
    assert replayed["config"]["depth"] == max(map(len, plain["bm25_run"].values())) < 10
    assert replayed["depth"] == replayed["config"]["depth"]
    assert replayed["metrics"]["Success@1"] == bm25["metrics"]["Success@1"]
    assert replayed["metrics"]["nDCG@10"] is None and "nDCG@10" in replayed["unreachable"]
    assert FILE_BASELINE not in {s["name"] for s in built["stages"]}
    shown = hits(built, "chunks")["q0001"][0]
    assert shown["verdict"] == "verified" and shown == {**hits(built, "bm25")["q0001"][0]}


def collapsed_to_files(plain: dict[str, Any]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for q, hs in hits(plain, "bm25").items():
        out[q] = list(dict.fromkeys(h["doc_id"] for h in hs))
    return out


def test_a_file_run_collapsed_from_bm25_scores_exactly_bm25_at_file_level(
        golden: Path, plain: dict[str, Any], tmp_path: Path) -> None:
    files = collapsed_to_files(plain)
    rows = [{"query_id": q, "path": p} for q, paths in files.items() for p in paths]
    run = write_jsonl(tmp_path / "files.jsonl", rows, depth=100)
    trec_run = tmp_path / "files.trec"
    trec.write_run(trec_run, {q: [(p, 1.0 / r) for r, p in enumerate(ps, 1)]
                              for q, ps in files.items() if ps}, tag="t")
    built = measure(golden, tmp_path / "out", {"files": run, "filetrec": trec_run})
    names = [s["name"] for s in built["stages"]]
    assert names == ["bm25", "files", "filetrec", FILE_BASELINE]
    baseline = stage(built, FILE_BASELINE)
    assert stage(built, "files")["metrics"] == baseline["metrics"]
    for name, value in stage(built, "filetrec")["metrics"].items():  # no depth line in TREC
        assert value in (None, baseline["metrics"][name])
    for name in ("files", "filetrec"):
        assert stage(built, name)["config"]["compared_with"] == FILE_BASELINE
    assert stage(built, "filetrec")["config"]["docids"] == "document paths"
    compared = [c for c in built["comparisons"] if c["stage"] == "files"]
    assert compared and all(c["baseline"] == FILE_BASELINE and c["delta"] == 0
                            for c in compared)
    assert all(c["baseline"] == "bm25" for c in built["comparisons"]
               if c["stage"] == FILE_BASELINE)
    assert baseline["config"]["granularity"] == "file"
    # a file holding a whole quote is relevant 2, the others 0
    first = hits(built, "files")["q0001"]
    assert (first[0]["doc_id"], first[0]["relevance"]) == ("manual.md", 2)


def test_a_span_run_of_bm25s_chunks_scores_exactly_bm25s_numbers(
        golden: Path, plain: dict[str, Any], tmp_path: Path) -> None:
    rows = [{"query_id": q, "path": h["doc_id"], "start": h["start"], "end": h["end"]}
            for q, hs in hits(plain, "bm25").items() for h in hs]
    built = measure(golden, tmp_path / "out",
                    {"spans": write_jsonl(tmp_path / "spans.jsonl", rows, depth=100)})
    mine, bm25 = stage(built, "spans"), stage(built, "bm25")
    assert mine["metrics"] == bm25["metrics"]
    assert mine["config"]["granularity"] == "span" and mine["config"]["compared_with"] == "bm25"
    relevance = [(h["relevance"], h["start"], h["end"]) for h in hits(built, "spans")["q0001"]]
    assert relevance == [(h["relevance"], h["start"], h["end"])
                         for h in hits(built, "bm25")["q0001"]]


def test_a_shallow_run_declares_its_deepest_list_and_how_it_treats_no_answer_questions(
        golden: Path, tmp_path: Path) -> None:
    run = write_jsonl(tmp_path / "few.jsonl", [
        {"query_id": "q0001", "path": "manual.md", "score": 3},
        {"query_id": "q0001", "path": "errors.txt", "score": 1},
        {"query_id": "q0005", "path": "retention.md"}])
    built = measure(golden, tmp_path / "out", {"few": run})
    config = stage(built, "few")["config"]
    assert config["depth"] == 2 and stage(built, "few")["depth"] == 2
    assert config["no_answer"] == {"questions": 2, "returned_nothing": 1, "returned_hits": 1}
    assert config["questions_without_entries"] == 4
    assert stage(built, "few")["metrics"]["Success@1"] == 0.25


def test_a_list_of_every_file_ranks_fully(golden: Path, tmp_path: Path) -> None:
    run = write_jsonl(tmp_path / "all.jsonl", [
        {"query_id": "q0001", "path": p} for p in DOCS])
    built = measure(golden, tmp_path / "out", {"all": run})
    assert "depth" not in stage(built, "all") and stage(built, "all")["config"]["depth"] == 100


def test_from_entries_takes_entries_made_in_code(golden: Path, tmp_path: Path) -> None:
    suite = golden_suite(golden, tmp_path / "home")
    try:
        made = RunFile.from_entries([Entry("q0003", path="errors.txt", score=2.0),
                                     Entry("q0001", path="manual.md")], source="peer",
                                    depth=10)
        assert made.granularity == "file" and made.depth == 10
        opened = suite.run_files.open_entries(run_file_stage("peer=-"), made, lambda _: None)
        assert opened.depth == 10 and opened.config["format"] == "entries"
        [record] = opened.rank(suite.questions[2], 100, 5)
        assert (record.chunk_id, record.doc_id, record.score) == ("errors.txt", "errors.txt", 2.0)
        assert opened.qrels["q0003"] == {"errors.txt": 2}
        with pytest.raises(UsageError, match=r"unknown path 'nope\.md'"):
            suite.run_files.open_entries(run_file_stage("p=-"), RunFile.from_entries(
                [Entry("q0001", path="nope.md")], source="peer"), lambda _: None)
    finally:
        suite.close()


def test_a_path_with_whitespace_is_a_docid_without_any() -> None:
    assert file_token("a b/c.md") == "a%20b/c.md" and file_token("x%y") == "x%25y"
    assert file_token("plain/path.md") == "plain/path.md"


@pytest.mark.parametrize(("lines", "message"), [
    (['{"query_id": "q0001", "path": "manual.md"}', '{"query_id": "q0001", "chunk_id": "c"}'],
     r"runs\.jsonl:2: a chunk entry in a run of file entries"),
    (['{"query_id": "q0001", "rank": 1, "path": "manual.md"}',
      '{"query_id": "q0001", "rank": 1, "path": "errors.txt"}'],
     r"runs\.jsonl:2: rank 1 appears twice for q0001"),
    (['{"query_id": "q0001", "path": "manual.md"}', '{"query_id": "q0001", "path": "manual.md"}'],
     r"runs\.jsonl:2: file 'manual.md' appears twice"),
    (['{"query_id": "q0001", "path": "manual.md"}', '{"query_id": "q0001", "path": '],
     r"runs\.jsonl:2: not JSON"),
    (['{"query_id": "q0001", "paht": "manual.md"}'], r"runs\.jsonl:1: unknown key\(s\) paht"),
    (['{"query_id": "q0001", "rank": 1, "path": "manual.md"}',
      '{"query_id": "q0001", "path": "errors.txt"}'],
     r"runs\.jsonl:2: ranks are given on every line or on none"),
    (['{"query_id": "q0001", "path": "manual.md", "start": 5}'],
     r"runs\.jsonl:1: start and end come together"),
    (['{"query_id": "q0001", "path": "manual.md", "start": 5, "end": 5}'],
     r"runs\.jsonl:1: span \[5, 5\) is empty"),
    (['{"query_id": "q0001", "rank": 0, "path": "manual.md"}'], r"rank must be a whole number"),
    (['{"query_id": "q0001", "path": "manual.md"}', '{"depth": 10}'],
     r"runs\.jsonl:2: a depth line comes first"),
    (['q0001 Q0 manual.md 1 x t'], r"score 'x' is not a number"),
])
def test_a_malformed_run_file_fails_naming_its_line(tmp_path: Path, lines: list[str],
                                                    message: str) -> None:
    path = tmp_path / "runs.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(UsageError, match=message):
        RunFile.read(path)


@pytest.mark.parametrize(("row", "message"), [
    ({"query_id": "q9999", "path": "manual.md"}, r"1 question id\(s\) not among the questions: "
     "q9999"),
    ({"query_id": "q0001", "path": "nope.md"}, r"runs\.jsonl:1: unknown path 'nope.md'"),
    ({"query_id": "q0001", "path": "errors.txt", "start": 10, "end": 10_000},
     r"runs\.jsonl:1: span \[10, 10000\) ends past the 66 code points of errors.txt"),
    ({"query_id": "q0001", "chunk_id": "golden-x:nope"},
     r"1 chunk id\(s\) not in the baseline collection 'golden-\w+': .*runs\.jsonl:1: "
     "'golden-x:nope'"),
    ({"query_id": "q0001", "chunk_id": "manual.md"}, r"1 of them are document paths"),
])
def test_a_run_that_does_not_fit_the_questions_or_the_collection_fails_closed(
        golden: Path, tmp_path: Path, row: dict[str, Any], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        measure(golden, tmp_path / "out", {"bad": write_jsonl(tmp_path / "runs.jsonl", [row])})
    assert not (tmp_path / "out" / "runs" / "bad.trec").exists()


def test_a_trec_run_mixing_paths_and_chunk_ids_fails_closed(golden: Path,
                                                            tmp_path: Path) -> None:
    run = tmp_path / "mixed.trec"
    run.write_text("q0001 Q0 manual.md 1 2.0 t\nq0001 Q0 golden-x:y 2 1.0 t\n")
    with pytest.raises(UsageError, match=r"2 chunk id.*1 of them are document paths"):
        measure(golden, tmp_path / "out", {"mixed": run})


def test_python_m_evals_run_scores_a_run_file_on_golden_end_to_end(
        golden: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = write_jsonl(tmp_path / "peer.jsonl", [
        {"query_id": "q0001", "rank": 1, "score": 9.5, "path": "manual.md"},
        {"query_id": "q0003", "rank": 1, "path": "errors.txt"},
        {"query_id": "q0004", "rank": 1, "path": "errors.txt"},
        {"query_id": "q0004", "rank": 2, "path": "retention.md"}], depth=10)
    out = tmp_path / "out"
    assert main(["run", "--golden", str(golden), "--stages", "bm25", "--run-file",
                 f"peer={run}", "--out", str(out), "--cache", str(tmp_path / "cache"),
                 "--resamples", "200", "--permutations", "200", "--no-twins",
                 "--html", str(tmp_path / "r.html")]) == 0
    printed = capsys.readouterr().out
    assert "\npeer " in printed and f"\n{FILE_BASELINE} " in printed
    built = json.loads((out / "latest.json").read_text())
    assert [s["name"] for s in built["stages"]] == ["bm25", "peer", FILE_BASELINE]
    assert stage(built, "peer")["metrics"]["Success@1"] == 0.5
    assert (out / "runs" / "peer.trec").read_text().startswith("q0001 Q0 manual.md 1 9.5 peer")
    rpt.validate(built)
    assert "bm25@file" in (tmp_path / "r.html").read_text()


def test_grk_eval_scores_a_run_file_on_your_own_collection(tmp_path: Path) -> None:
    root = tmp_path / "notes"
    root.mkdir()
    for name, text in DOCS.items():
        (root / name).write_text(text)
    questions = tmp_path / "q.jsonl"
    questions.write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS))
    home = tmp_path / "home"
    index("notes", IndexConfig(roots=(str(root),)), home=home)
    run = write_jsonl(tmp_path / "peer.jsonl", [
        {"query_id": "q0002", "path": "manual.md", "start": 0, "end": 400},
        {"query_id": "q0002", "path": "manual.md", "start": 500, "end": 1100}], depth=10)
    out = tmp_path / "out"
    assert main(["-c", "notes", "--questions", str(questions), "--home", str(home),
                 "--stages", "bm25", "--run-file", f"spans={run}", "--out", str(out),
                 "--cache", str(tmp_path / "cache"), "--resamples", "200",
                 "--permutations", "200"], face="grk eval") == 0
    built = json.loads((out / "latest.json").read_text())
    spans = stage(built, "spans")
    assert spans["config"]["granularity"] == "span"
    assert [s["name"] for s in built["stages"]] == ["bm25", "spans"]
    assert main(["-c", "notes", "--questions", str(questions), "--home", str(home),
                 "--stages", "bm25", "--run-file", f"bad={tmp_path / 'none.jsonl'}",
                 "--out", str(out)], face="grk eval") == UsageError.exit_code
