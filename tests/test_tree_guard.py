"""The conftest guard: a test that writes into the checkout is caught; reads, tmp_path and
the tools' own caches are not."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import conftest
import pytest

REPO = Path(__file__).resolve().parent.parent


def caught() -> list[str]:
    found = list(conftest._TREE_WRITES)
    conftest._TREE_WRITES.clear()  # what this test provoked on purpose must not fail it
    return found


def test_opening_a_file_in_the_tree_for_writing_is_caught() -> None:
    target = REPO / "no-such-folder-gk" / "latest.json"
    with pytest.raises(FileNotFoundError):  # the hook sees the attempt before the OS refuses
        target.open("w")
    assert caught() == [f"open {target}"]


def test_a_folder_made_in_the_tree_or_a_database_opened_there_is_caught() -> None:
    with pytest.raises(FileNotFoundError):
        (REPO / "no-such-folder-gk" / "sub").mkdir()
    with pytest.raises(sqlite3.OperationalError):
        sqlite3.connect(REPO / "no-such-folder-gk" / "store.sqlite")
    assert [line.split()[0] for line in caught()] == ["os.mkdir", "sqlite3.connect"]


def test_reads_tmp_path_and_tool_caches_are_not_caught(tmp_path: Path) -> None:
    (REPO / "pyproject.toml").read_text()
    shutil.copyfile(REPO / "pyproject.toml", tmp_path / "copy.toml")  # read from the tree
    shutil.copytree(REPO / "adr", tmp_path / "adr")
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "out.json").write_text("{}")
    shutil.rmtree(tmp_path / "d")  # removes by names relative to a directory descriptor
    with pytest.raises(sqlite3.OperationalError):
        sqlite3.connect(f"file:{REPO / 'no-such-gk.sqlite'}?mode=ro", uri=True)
    assert conftest._in_tree(REPO / ".hypothesis" / "examples" / "x") is None
    assert conftest._in_tree(REPO / "groundkit" / "__pycache__" / "x.pyc") is None
    assert conftest._in_tree(REPO / ".cache" / "onnx-models" / "m.onnx") is None
    assert conftest._in_tree(REPO / "evals" / "results" / "latest.json") is not None
    assert conftest._in_tree("/tmp/elsewhere") is None
    assert caught() == []
