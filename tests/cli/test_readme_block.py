"""README's "Using it" block runs as written on a fixture folder: index, search, fetch,
status, check, add vectors, re-index (the vectors stay), hybrid, several collections with
filters, ask, drop. The dense provider is the Ollama stand-in (the recommended onnx one
builds its model with torch first); lines that need a model server, a questions file or a
long-running process are named and skipped."""

from __future__ import annotations

import io
import json
import re
import shlex
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import TreeMaker

from groundkit.cli import main
from groundkit.testing.ollama_standin import OllamaStandin, hashing_embedder

pytest.importorskip("lancedb")

REPO = Path(__file__).resolve().parents[2]
NOTES = {"ops/logs.md": "# Logs\n\nWe keep deployment logs for 30 days, then delete them.\n",
         "cars/upkeep.md": "# Car upkeep\n\nThe car is serviced every spring.\n"}
PAPERS = {"cars/maintenance.md": "# Maintenance\n\nCar upkeep costs are tracked yearly.\n"}
SKIPPED = ("grk ask \"…\"", "grk calibrate", "grk search \"who signs off expenses\"",
           "grk watch", "grk serve", "grk questions draft", "grk eval")
"""Lines needing an LLM, a questions file (and the calibration it gives) or a process
that keeps running; each is tested on its own elsewhere."""


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def readme_lines() -> list[str]:
    block = (REPO / "README.md").read_text().split("## Using it")[1].split("```sh\n")[1]
    lines = block.split("```")[0].splitlines()
    return [line.split("  #")[0].strip() for line in lines if line.strip()]


@pytest.fixture
def ollama() -> Iterator[OllamaStandin]:
    with OllamaStandin(hashing_embedder(64), models=["nomic-embed-text"]) as server:
        yield server


def test_the_readme_block_runs_from_indexing_to_drop(
        make_tree: TreeMaker, home: Path, ollama: OllamaStandin,
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    notes, papers = make_tree(NOTES), make_tree(PAPERS)
    monkeypatch.setattr("sys.stdin", Terminal("y\n"))  # grk drop asks on a terminal
    chunk_id, ran, embedded = "", [], False
    for line in readme_lines():
        if line.startswith(SKIPPED):
            continue
        line = line.replace("~/notes", str(notes)).replace("~/papers", str(papers))
        line = re.sub(r"--embed \S+", f"--embed ollama:nomic-embed-text --ollama-host "
                      f"{ollama.url}", line)
        argv = shlex.split(line.replace("notes:3f2a9c...", chunk_id))
        assert argv[0] == "grk"
        code = main(argv[1:])
        out, err = capsys.readouterr()
        assert code == 0, f"{line} exited {code}:\n{out}\n{err}"
        ran.append(line)
        if argv[1] == "search" and not chunk_id:
            main([*argv[1:], "--json"])
            chunk_id = json.loads(capsys.readouterr().out)["hits"][0]["chunk_id"]
        if "--mode" in argv and "hybrid" in argv:
            assert "ops/logs.md" in out or "cars/upkeep.md" in out
        if argv[1:3] == ["index", str(notes)] and embedded:  # the plain re-index after it
            assert "embedding ollama:nomic-embed-text)" in err  # the vectors stay
        embedded = embedded or "--embed" in argv
    assert [r.split()[1] for r in ran] == [
        "index", "index", "search", "search", "fetch", "status", "check", "index", "index",
        "search", "search", "ask", "drop"]
    assert main(["collections"]) == 0
    assert capsys.readouterr().out.startswith("papers\t")  # notes dropped, papers kept
    assert not (home / "collections" / "notes").exists()
