"""``grk ask --llm`` end to end: the real CLI, the real ollama client, the loopback stand-in."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import TreeMaker

from groundkit.cli import main
from groundkit.collection import IndexConfig, index
from groundkit.testing.ollama_standin import OllamaStandin

DOCS = {"logging.md": "# Logging\n\nDeployment logs are kept for 30 days, then deleted by "
                      "the nightly job.\nAudit logs are kept for seven years.\n"}
QUESTION = "how long do we keep deployment logs?"


@pytest.fixture
def home_with_notes(make_tree: TreeMaker, home: Path) -> Path:
    index("notes", IndexConfig(roots=(str(make_tree(DOCS)),)), home=home)
    return home


def ask(home: Path, capsys: pytest.CaptureFixture[str], reply: str, *extra: str
        ) -> tuple[int, str, str, list[dict[str, object]]]:
    with OllamaStandin(models=["demo"], chat=[reply, reply]) as server:
        code = main(["ask", QUESTION, "-c", "notes", "--home", str(home), "--llm",
                     "ollama:demo", "--llm-host", server.url, *extra])
        chats = list(server.chat_requests)
    out, err = capsys.readouterr()
    return code, out, err, chats


def test_a_checked_reply_prints_each_quote_at_its_file_offsets(
        home_with_notes: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _, chats = ask(home_with_notes, capsys,
                              'They are kept "kept for 30 days" [1].')
    start = DOCS["logging.md"].index("kept for 30 days")
    assert code == 0
    lines = out.splitlines()
    assert lines[:3] == ['They are kept "kept for 30 days" [1].',
                         f"  [1] notes:logging.md line 3, chars {start}-{start + 16} "
                         "(verified)", "      Logging"]
    assert lines[3].startswith("      open: /") and lines[3].endswith("/logging.md:3")
    assert re.fullmatch(rf"      view: grk open notes:[0-9a-f]{{20}} --start {start} "
                        rf"--end {start + 16} --home {re.escape(str(home_with_notes))}",
                        lines[4])
    assert len(lines) == 5
    assert "Deployment logs are kept" in chats[0]["messages"][1]["content"]


def test_a_reply_whose_quotes_all_fail_is_withheld_with_exit_12(
        home_with_notes: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _, _ = ask(home_with_notes, capsys, 'Ninety days: "retained for 90 days" [1].')
    assert code == 12 and "withheld" in out and "90 days" not in out


def test_json_keeps_the_reply_every_quote_check_and_the_rewrite_beside_the_original(
        home_with_notes: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _, chats = ask(home_with_notes, capsys, '"kept for 30 days" [1]',
                              "--rewrite", "--json")
    data = json.loads(out)
    assert code == 0 and data["kind"] == "llm" and len(chats) == 2  # rewrite, then answer
    assert data["rewrite"]["original_query"] == QUESTION
    assert data["rewrite"]["original_hits"][0]["path"] == "logging.md"
    assert data["sentences"][0]["quotes"][0]["status"] == "verified"
    assert data["llm"]["model"] == "demo" and data["llm"]["reply"] == '"kept for 30 days" [1]'


def test_a_reply_quoting_only_a_superseded_passage_is_marked(
        make_tree: TreeMaker, home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    docs = {"logging.md": DOCS["logging.md"],
            "archive/logging-2022.md": "# Logging (2022)\n\nDeployment logs are kept for "
                                       "14 days.\n"}
    index("notes", IndexConfig(roots=(str(make_tree(docs)),)), home=home)
    code, out, _, chats = ask(home, capsys, 'Two weeks: "kept for 14 days" [2].')
    assert code == 0
    assert ", SUPERSEDED" in chats[0]["messages"][1]["content"]  # the model saw the label
    assert out.splitlines()[1].endswith("— superseded (in a folder named archive/)")
    assert out.rstrip().splitlines()[-1] == (
        "note: every citation is of a document that says it is superseded, though current "
        "passages were found (passage(s) 1): check them first")
