from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import TreeMaker

from groundkit.cli import EXIT_DRIFTED, EXIT_UNRESOLVABLE, main

TEXT = "# Runbook\n\nRestart the ingest worker with `svc restart ingest`.\n"


def grk(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_index_then_fetch_round_trip_in_json(
    make_tree: TreeMaker, home: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    root = make_tree({"run.md": TEXT})
    code, out, _ = grk(capsys, "index", str(root), "--collection", "ops", "--json")
    assert code == 0 and json.loads(out)["added"] == 1
    code, out, _ = grk(capsys, "status", "ops", "--json")
    status = json.loads(out)
    assert (status["documents"], status["generation"]) == (1, 1)
    assert status["changed_since_indexing"] == {"added": [], "missing": [], "modified": []}
    from groundkit.collection import Collection

    with Collection.open("ops") as coll:
        chunk_id = coll.chunks()[0].chunk_id
    code, out, _ = grk(capsys, "fetch", chunk_id, "--json")
    verdict = json.loads(out)
    assert code == 0 and verdict["status"] == "verified" and verdict["offset_unit"] == "codepoint"
    (root / "run.md").write_text("Moved.\n" + TEXT)
    code, out, _ = grk(capsys, "fetch", chunk_id)
    assert code == EXIT_DRIFTED and out.startswith("drifted:")
    code, out, _ = grk(capsys, "status", "ops", "--json")
    assert json.loads(out)["changed_since_indexing"]["modified"] == ["run.md"]
    (root / "run.md").unlink()
    assert grk(capsys, "fetch", chunk_id)[0] == EXIT_UNRESOLVABLE


def test_search_marks_hits_whose_file_changed_and_says_so_in_json(
    make_tree: TreeMaker, home: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    root = make_tree({"run.md": TEXT})
    grk(capsys, "index", str(root), "--collection", "ops")
    code, out, _ = grk(capsys, "search", "restart ingest", "--collection", "ops")
    assert code == 0 and "stale" not in out
    (root / "run.md").write_text(TEXT + "More.\n")
    code, out, _ = grk(capsys, "search", "restart ingest", "--collection", "ops")
    assert code == 0 and "[stale: file changed since indexing]" in out
    code, out, _ = grk(capsys, "search", "restart ingest", "--collection", "ops", "--json")
    assert json.loads(out)["hits"][0]["stale"] is True


def test_collections_and_check_list_what_exists(
    make_tree: TreeMaker, home: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    assert "no collections yet" in grk(capsys, "collections")[1]
    grk(capsys, "index", str(make_tree({"a.md": TEXT})), "-c", "one")
    code, out, _ = grk(capsys, "collections", "--json")
    assert code == 0 and [c["collection"] for c in json.loads(out)] == ["one"]
    assert grk(capsys, "check", "one") == (0, "one: ok\n", "")


@pytest.mark.parametrize(
    ("argv", "exit_code", "message"),
    [(["status", "nope"], 3, "no collection named 'nope'"),
     (["index", "/definitely/missing", "-c", "x"], 2, "not a folder"),
     (["index", ".", "-c", "bad name"], 2, "invalid collection name"),
     (["index", ".", "-c", "x", "--chunk-size", "5"], 2, "chunk target"),
     (["index", "-c", "x"], 2, "collection 'x' is new: give the folders or files"),
     (["fetch", "0123456789abcdef0123"], 2, "malformed chunk id"),
     (["fetch", "nope:0123456789abcdef0123"], 3, "no collection named 'nope'"),
     (["search", "", "-c", "x"], 2, "empty query"),
     (["search", "  ", "-c", "x"], 2, "empty query"),
     (["drop", "nope", "--yes"], 3, "no collection named 'nope'")],
)
def test_user_errors_are_one_line_with_a_documented_exit_code(
    home: Path, capsys: pytest.CaptureFixture[str], argv: list[str], exit_code: int, message: str,
) -> None:
    code, out, err = grk(capsys, *argv)
    assert code == exit_code and out == ""
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


def test_the_console_script_runs_without_a_traceback(home: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "groundkit", "fetch", "x:y"],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == "grk fetch: error: malformed chunk id 'x:y': expected " \
        "COLLECTION:<20 hex digits>\n"


def test_version_names_the_compiled_bm25_parts_that_run(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    from groundkit import __version__
    from groundkit.retrieval import bm25_tokens

    monkeypatch.delenv("GROUNDKIT_BM25_KERNEL", raising=False)
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out == (
        f"grk {__version__} (BM25 kernel: compiled (C); index build: compiled (C))\n")
    monkeypatch.setenv("GROUNDKIT_BM25_KERNEL", "numpy")
    monkeypatch.setattr(bm25_tokens, "compiled_table", lambda: None)  # as if not built
    with pytest.raises(SystemExit):
        main(["--version"])
    assert capsys.readouterr().out.endswith("(BM25 kernel: numpy; index build: Python)\n")
