"""grk questions split: the golden deal, stored in the file, respected by calibrate and eval."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import TreeMaker
from questions_corpus import DOCS, entry, good_rows, write_lines

from groundkit.cli import main
from groundkit.questions.split import SEED

REPO = Path(__file__).resolve().parents[2]
TOPICS = ("payroll", "parking", "canteen", "laptops", "travel", "visas", "pensions", "badges",
          "printers", "plants", "bikes", "showers", "lockers", "pets", "music", "uniforms",
          "taxis", "hotels", "gifts", "lotteries", "dentists", "gyms", "tickets", "stamps",
          "umbrellas", "kettles", "mugs", "chairs", "desks", "lamps")


def rows_with_no_answers() -> list[dict]:
    rows = good_rows()
    rows += [entry(f"q{100 + i:04d}", f"What is the policy on {t}?", "no_answer")
             for i, t in enumerate(TOPICS)]
    return rows


def parts(path: Path) -> dict[str, str]:
    return {r["id"]: r.get("split", "") for r in map(json.loads, path.read_text().splitlines())}


def test_golden_v2_dealt_with_its_seed_is_its_manifest_split(tmp_path: Path) -> None:
    path = tmp_path / "v2.jsonl"
    path.write_bytes((REPO / "golden" / "v2" / "questions.jsonl").read_bytes())
    assert main(["questions", "split", str(path), "--seed", str(SEED)]) == 0
    manifest = json.loads((REPO / "golden" / "v2" / "MANIFEST.json").read_text())
    assert parts(path) == manifest["split"]["questions"]


def test_a_split_file_keeps_its_lines_and_is_not_dealt_again_by_accident(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_lines(tmp_path / "q.jsonl", rows_with_no_answers())
    before = [json.loads(line) for line in path.read_text().splitlines()]
    assert main(["questions", "split", str(path), "--seed", "3", "--json"]) == 0
    done = json.loads(capsys.readouterr().out)
    assert done["parts"] == {"train": 7, "calibration": 14, "test": 13}
    after = [json.loads(line) for line in path.read_text().splitlines()]
    assert [{k: v for k, v in r.items() if k != "split"} for r in after] == before
    first = parts(path)
    assert main(["questions", "split", str(path), "--seed", "4"]) == 2
    assert "already have a part" in capsys.readouterr().err and parts(path) == first
    with path.open("a") as f:
        f.write(json.dumps(entry("q0200", "Who waters the plants?", "no_answer")) + "\n")
    assert main(["questions", "split", str(path), "--seed", "4", "--keep"]) == 0
    kept = parts(path)
    assert {k: kept[k] for k in first} == first and kept["q0200"] in ("train", "calibration",
                                                                      "test")
    assert main(["questions", "split", str(path), "--seed", "4", "--force"]) == 0
    assert parts(path) != kept


def test_calibrate_uses_only_the_calibration_part_and_refuses_drafts(
        make_tree: TreeMaker, home: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["index", str(make_tree(DOCS)), "-c", "ops"]) == 0
    path = write_lines(tmp_path / "q.jsonl", rows_with_no_answers())
    assert main(["questions", "split", str(path), "--seed", "3"]) == 0
    wanted = sum(1 for r in map(json.loads, path.read_text().splitlines())
                 if r["kind"] == "no_answer" and r["split"] == "calibration")
    capsys.readouterr()
    assert main(["calibrate", "-c", "ops", "--questions", str(path), "--json"]) == 0
    (bm25,) = json.loads(capsys.readouterr().out)["calibrations"]
    assert bm25["n0"] == wanted < len(TOPICS)
    draft = entry("q0300", "", doc="eng/release.md", status="draft",
                  quote="The release manager signs the tag with the team key.")
    with path.open("a") as f:
        f.write(json.dumps(draft) + "\n")
    assert main(["calibrate", "-c", "ops", "--questions", str(path)]) == 2
    assert "a draft question" in capsys.readouterr().err


def test_grk_eval_calibrates_its_gate_on_the_calibration_part_and_reports_the_test_part(
        make_tree: TreeMaker, home: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["index", str(make_tree(DOCS)), "-c", "ops"]) == 0
    path = write_lines(tmp_path / "q.jsonl", rows_with_no_answers())
    out = tmp_path / "out"
    argv = ["eval", "--collection", "ops", "--questions", str(path), "--out", str(out),
            "--resamples", "50", "--permutations", "50", "--stages", "bm25"]
    assert main(argv) == 0
    assert json.loads((out / "latest.json").read_text())["gate"]["stages"] == {}
    assert main(["questions", "split", str(path), "--seed", "3"]) == 0
    assert main(argv) == 0
    report = json.loads((out / "latest.json").read_text())
    shipped = report["gate"]["stages"]["bm25"]["scorers"]["default"]["shipped"]
    split = parts(path)
    no_answer = {r["id"] for r in rows_with_no_answers() if r["kind"] == "no_answer"}
    assert shipped["n0"] == sum(1 for q in no_answer if split[q] == "calibration")
    assert {q["query_id"]: q["split"] for q in report["questions"]} == split


def test_grk_eval_refuses_a_file_with_drafts(
        make_tree: TreeMaker, home: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["index", str(make_tree(DOCS)), "-c", "ops"]) == 0
    draft = entry("q0300", "Who signs the tags?", doc="eng/release.md", status="draft",
                  quote="The release manager signs the tag with the team key.")
    path = write_lines(tmp_path / "q.jsonl", [*good_rows(), draft])
    capsys.readouterr()
    assert main(["eval", "--collection", "ops", "--questions", str(path), "--out",
                 str(tmp_path / "out")]) == 4
    assert "q0300: a draft, not yet accepted by a person" in capsys.readouterr().err
