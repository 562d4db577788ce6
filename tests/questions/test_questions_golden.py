"""grk questions lint on the shipped golden versions: v1's loose paraphrases flagged, v2 clean."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from groundkit.cli import main

REPO = Path(__file__).resolve().parents[2]


def lint(version: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, dict]:
    root = REPO / "golden" / version
    assert main(["index", str(root / "docs"), "-c", version]) == 0
    capsys.readouterr()
    code = main(["questions", "lint", str(root / "questions.jsonl"), "-c", version, "--json"])
    return code, json.loads(capsys.readouterr().out)


def test_golden_v1_paraphrases_sharing_a_stem_with_their_quote_are_flagged(
        home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, report = lint("v1", capsys)
    errors = [f for f in report["findings"] if f["level"] == "error"]
    assert code == 4 and {f["check"] for f in errors} == {"paraphrase"}
    shared = [f for f in errors if "shares the stem(s)" in f["message"]]
    answerable = [r for r in map(json.loads, (REPO / "golden" / "v1" / "questions.jsonl")
                                 .read_text().splitlines())
                  if "paraphrase" in r["traits"] and r["answers"]]
    # golden/README.md: "Of v1's 69 paraphrase questions 20 pass" (one is a no-answer one)
    assert (len(shared), len(answerable)) == (49, 68)
    assert len(errors) - len(shared) == 1


def test_golden_v2_passes_the_lint(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, report = lint("v2", capsys)
    assert code == 0 and report["errors"] == 0
    assert report["counts"]["questions"] == 1211
    assert len(report["quotes"]) == sum(
        len(r["answers"]) + bool(r.get("near_miss"))
        for r in map(json.loads, (REPO / "golden" / "v2" / "questions.jsonl")
                     .read_text().splitlines()))
