"""docs/answers.md's superseded-source example is what ``grk ask`` prints on golden v1."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from groundkit.cli import main

REPO = Path(__file__).resolve().parents[2]


def test_the_deployment_logs_example_in_the_docs_is_what_grk_ask_prints(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    doc = (REPO / "docs" / "answers.md").read_text(encoding="utf-8")
    block = re.search(r"On golden v1's documents.*?```\n\$ grk ask \"(.*?)\" -c bl\n(.*?)```",
                      doc, re.S)
    assert block is not None, "the example is gone from docs/answers.md"
    question, shown = block.group(1), block.group(2)
    monkeypatch.setenv("GROUNDKIT_HOME", str(tmp_path / "home"))  # as a default home reads
    assert main(["index", str(REPO / "golden" / "v1" / "docs"), "-c", "bl", "--include",
                 "*"]) == 0
    capsys.readouterr()
    assert main(["ask", question, "-c", "bl"]) == 0
    assert capsys.readouterr().out.replace(str(REPO), "<checkout>") == shown
