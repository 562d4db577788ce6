"""Every human face escapes control characters and newlines in names and text (issue 45
item 6), and cuts over-long values in messages (a 120 KB chunk id)."""

from __future__ import annotations

from pathlib import Path

import pytest

from groundkit.cli import main
from groundkit.collection import Collection
from groundkit.text import terminal

FORGED_NAME = "evil\x1b]0;pwned\x07\nskipped forged.md: a line of its own.md"
HOSTILE_TEXT = "wombat \x1b[2J\x1b]0;title\x07 cleared \u202egnp.exe \x9b31m end\n"


def test_line_writes_every_control_as_an_escape() -> None:
    assert terminal.line(FORGED_NAME) == (
        "evil\\x1b]0;pwned\\x07\\x0askipped forged.md: a line of its own.md")
    assert terminal.line("tab\there\r\x7f\x85\u2028\u2066") == (
        "tab\\x09here\\x0d\\x7f\\x85\\u2028\\u2066")
    assert terminal.line("plain ünïcode › text 🚀") == "plain ünïcode › text 🚀"


def test_block_keeps_newlines_and_tabs_only() -> None:
    assert terminal.block("a\n\tb\x1b[2J\r\n") == "a\n\tb\\x1b[2J\\x0d\n"


def test_message_is_one_line_cut_to_its_limit() -> None:
    shown = terminal.message("bad id " + "x" * 120_000 + "\n")
    assert len(shown) == terminal.MESSAGE_CHARS and "\n" not in shown
    assert shown.endswith("… (120008 characters)")
    assert terminal.message("short\n") == "short\\x0a"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_index_status_search_and_fetch_never_write_a_raw_control(
        tmp_path: Path, home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "docs"
    root.mkdir()
    (root / f"{FORGED_NAME}").write_bytes(b"binary\x00file")
    (root / "notes\x1b[31m.md").write_text(HOSTILE_TEXT)
    outputs = []
    code, out, err = run(capsys, "index", str(root), "--collection", "c")
    assert code == 0
    outputs.append(out + err)
    assert [line for line in out.splitlines() if "forged" in line] == [
        "  skipped evil\\x1b]0;pwned\\x07\\x0askipped forged.md: a line of its own.md: "
        "binary file (NUL byte)"]
    outputs.append("".join(run(capsys, "status", "c")[1:]))
    code, out, err = run(capsys, "search", "wombat", "--collection", "c", "--verify")
    assert code == 0 and "notes\\x1b[31m.md" in out and "\\x1b[2J" in out
    outputs.append(out + err)
    with Collection.open("c") as coll:
        chunk_id = coll.chunks()[0].chunk_id
    code, out, err = run(capsys, "fetch", chunk_id)
    assert code == 0 and "wombat \\x1b[2J" in out
    outputs.append(out + err)
    for shown in outputs:
        assert not set(shown) & {"\x1b", "\x07", "\x9b", "\r", "\u202e"}


def test_fetch_of_a_120_kb_id_says_so_in_one_short_line(
        home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "fetch", "c:" + "f" * 120_000)
    assert code != 0 and out == ""
    assert err.count("\n") == 1 and len(err) < 1100 and err.endswith(" characters)\n")
