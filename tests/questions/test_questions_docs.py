"""docs/your-own-questions.md runs as written; docs/cli.md documents every grk questions option."""

from __future__ import annotations

import argparse
import io
import json
import re
import shlex
import subprocess
from pathlib import Path

import pytest

from groundkit.cli import build_parser, main

REPO = Path(__file__).resolve().parents[2]
PAGE = REPO / "docs" / "your-own-questions.md"
CLI_DOC = (REPO / "docs" / "cli.md").read_text()
STAND_IN = REPO / "golden" / "v2" / "docs" / "birchline"
"""The documents standing in for ~/Documents/work."""


def _actions() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    top = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    questions = top.choices["questions"]
    nested = next(a for a in questions._actions if isinstance(a, argparse._SubParsersAction))
    return dict(nested.choices)


@pytest.mark.parametrize(("name", "option"), [
    (name, opt) for name, sub in sorted(_actions().items()) for action in sub._actions
    for opt in [*action.option_strings, *([action.dest.upper()] if not action.option_strings
                                           else [])]
    if opt not in {"--help", "-h", "--json", "--home"}])
def test_every_questions_option_is_documented(name: str, option: str) -> None:
    section = CLI_DOC.split(f"#### `grk questions {name}")[1].split("\n#### ")[0].split(
        "\n### ")[0]
    assert f"`{option}" in section


def commands() -> list[str]:
    blocks = re.findall(r"```sh\n(.*?)```", PAGE.read_text(), re.DOTALL)
    return [line.split(" #")[0].strip() for block in blocks for line in block.splitlines()
            if line.strip() and not line.lstrip().startswith("#")]


def review_answers(path: Path) -> str:
    """What a person types: a question for every draft, in the file's order."""
    typed, used = [], set()
    for row in map(json.loads, path.read_text().splitlines()):
        if row["kind"] == "no_answer":
            a, b = re.findall(r"'([^']+)'", row["notes"])[:2]
            question = f"What is the rule that links {a} with {b}?"
        else:
            words = [w for w in re.findall(r"[A-Za-z]{4,}", row["answers"][0]["quote"])][:3]
            question = f"What do the notes say about {' '.join(words)}?"
        if question in used:
            question = question[:-1] + f" ({row['id']})?"
        used.add(question)
        typed += ["e", question]
    return "\n".join(typed) + "\n"


def test_the_page_runs_from_an_empty_folder_to_a_report(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("GROUNDKIT_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    notes = tmp_path / "notes"
    ran = []
    for line in commands():
        line = line.replace("~/Documents/work", str(STAND_IN)).replace("~/notes", str(notes))
        argv = shlex.split(line)
        if argv[0] != "grk":
            subprocess.run(argv, check=True, cwd=tmp_path)
        else:
            if argv[1:3] == ["questions", "review"]:
                monkeypatch.setattr("sys.stdin", io.StringIO(review_answers(Path(argv[3]))))
            code = main(argv[1:])
            out, err = capsys.readouterr()
            assert code == 0, f"{line} exited {code}:\n{out}\n{err}"
        ran.append(argv[:3])
    assert ["grk", "calibrate", "-c"] in ran and ["grk", "eval", "--collection"] in ran
    rows = [json.loads(line) for line in (tmp_path / "questions.jsonl").read_text().splitlines()]
    assert rows and all(r["status"] == "accepted" and r["split"] for r in rows)
    report = (tmp_path / "report.html").read_text()
    assert report.startswith("<!DOCTYPE html>") and "questions.jsonl" in report
