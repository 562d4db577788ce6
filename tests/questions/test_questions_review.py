"""grk questions review: the loop's decisions, and the loop itself in a real terminal (tmux)."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import TreeMaker
from questions_corpus import DOCS

from groundkit.cli import main
from groundkit.questions.documents import Indexed
from groundkit.questions.review import review

DEADLINE = 60.0


@pytest.fixture
def drafts(make_tree: TreeMaker, home: Path, tmp_path: Path) -> Path:
    assert main(["index", str(make_tree(DOCS)), "-c", "ops"]) == 0
    out = tmp_path / "drafts.jsonl"
    assert main(["questions", "draft", "-c", "ops", "--n", "3", "--no-answer", "1",
                 "--out", str(out)]) == 0
    return out


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_each_decision_is_saved_at_once_and_quitting_keeps_the_rest(
        drafts: Path, home: Path) -> None:
    before = rows(drafts)
    answers = iter(["x", "a", "e", "Who signs the release tags?", "d", "s"])
    seen: list[str] = []

    def ask(prompt: str) -> str:
        if prompt.startswith("question>"):
            return next(answers)
        if len(seen) == 5:  # at the last draft: the edit and the drop are saved already
            saved = {r["id"]: r for r in rows(drafts)}
            assert saved[before[0]["id"]]["question"] == "Who signs the release tags?"
            assert before[1]["id"] not in saved
            raise EOFError
        seen.append(prompt)
        return next(answers)

    out: list[str] = []
    tally = review(drafts, Indexed.open("ops", home), ask=ask, say=out.append)
    assert ">>>" + before[0]["answers"][0]["quote"] + "<<<" in "\n".join(out)
    assert "type a, e, d, s or q" in out and "no question yet: write one with e" in out
    assert (tally.edited, tally.dropped, tally.skipped, tally.left) == (1, 1, 1, 1)
    after = {r["id"]: r for r in rows(drafts)}
    assert after[before[0]["id"]]["status"] == "accepted"
    assert after[before[2]["id"]] == before[2]  # skipped: unchanged, still a draft


def _pane(socket: str) -> str:
    return subprocess.run(["tmux", "-L", socket, "capture-pane", "-p", "-J", "-S", "-2000",
                           "-t", "review"], capture_output=True, text=True, check=True).stdout


def _wait_for(socket: str, text: str, count: int = 1) -> str:
    end = time.monotonic() + DEADLINE
    while time.monotonic() < end:
        pane = _pane(socket)
        if pane.count(text) >= count:
            return pane
        time.sleep(0.05)  # polling the pane for the text: a condition, not a fixed wait
    raise AssertionError(f"{text!r} (x{count}) never appeared in the terminal:\n{_pane(socket)}")


@pytest.fixture
def tmux() -> Iterator[str]:
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed: the review loop is not tested in a real terminal")
    socket = f"grk-review-{uuid.uuid4().hex[:8]}"
    yield socket
    subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True, check=False)


def test_the_review_loop_runs_in_a_real_terminal(drafts: Path, home: Path, tmux: str) -> None:
    before = rows(drafts)
    command = (f"{shlex.quote(sys.executable)} -m groundkit questions review "
               f"{shlex.quote(str(drafts))} -c ops --home {shlex.quote(str(home))}; "
               "echo EXIT=$?; exec cat")
    subprocess.run(["tmux", "-L", tmux, "-f", "/dev/null", "new-session", "-d", "-s", "review",
                    "-x", "160", "-y", "50", "sh", "-c", command], check=True)

    def keys(*typed: str) -> None:
        for text in typed:
            subprocess.run(["tmux", "-L", tmux, "send-keys", "-t", "review", "-l", text],
                           check=True)
            subprocess.run(["tmux", "-L", tmux, "send-keys", "-t", "review", "Enter"],
                           check=True)

    pane = _wait_for(tmux, "[a]ccept")
    assert "[1/4]" in pane and before[0]["answers"][0]["quote"][:40] in pane
    keys("e")
    _wait_for(tmux, "question>")
    keys("Who signs the release tags?")
    _wait_for(tmux, "[2/4]")
    assert rows(drafts)[0]["question"] == "Who signs the release tags?"  # saved already
    keys("d")
    _wait_for(tmux, "[3/4]")
    keys("q")
    pane = _wait_for(tmux, "EXIT=0")
    assert "edited 1, dropped 1, skipped 0, left 2" in pane
    after = rows(drafts)
    assert [r["id"] for r in after] == [before[0]["id"], *(r["id"] for r in before[2:])]
    assert after[0]["status"] == "accepted" and after[1:] == before[2:]
