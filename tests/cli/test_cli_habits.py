"""The CLI people expect: global options anywhere, several collections searched as one,
grk drop, grk index FILE, readable status, a lock message naming its holder, a drifted
fetch shown as a diff, and help that stands on its own."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import TreeMaker

from groundkit.cli import build_parser, main
from groundkit.cli.registry import EXIT_CODES, EXIT_DRIFTED

REPO = Path(__file__).resolve().parents[2]
SHARED = "# Shared\n\nThe on-call engineer acknowledges a page within five minutes.\n"
A = {"shared.md": SHARED, "a.md": "# Alpha\n\nPages about the alpha ingest worker.\n"}
B = {"copy.md": SHARED, "b.md": "# Beta\n\nPages about the beta billing worker.\n"}


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def grk(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_home_and_json_go_before_or_after_the_command(
        make_tree: TreeMaker, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    home = str(tmp_path / "elsewhere")
    assert grk(capsys, "--home", home, "index", str(make_tree(A)), "-c", "a")[0] == 0
    code, out, _ = grk(capsys, "--json", "--home", home, "collections")
    assert code == 0 and [c["collection"] for c in json.loads(out)] == ["a"]
    code, out, _ = grk(capsys, "collections", "--home", home, "--json")
    assert code == 0 and [c["collection"] for c in json.loads(out)] == ["a"]
    code, out, _ = grk(capsys, "--home", home, "search", "alpha", "-c", "a", "--json")
    assert code == 0 and json.loads(out)["hits"][0]["path"] == "a.md"


def test_several_collections_are_one_ranking_with_copies_folded_across_them(
        make_tree: TreeMaker, home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    grk(capsys, "index", str(make_tree(A)), "-c", "a")
    grk(capsys, "index", str(make_tree(B)), "-c", "b")
    code, out, _ = grk(capsys, "search", "pages", "-c", "a", "-c", "b", "--json")
    data = json.loads(out)
    assert code == 0 and data["collections"] == ["a", "b"]
    assert {h["collection"] for h in data["hits"]} == {"a", "b"}
    assert [h["rank"] for h in data["hits"]] == list(range(1, len(data["hits"]) + 1))
    scores = [h["score"] for h in data["hits"]]
    assert scores == sorted(scores, reverse=True)
    code, out, _ = grk(capsys, "search", "acknowledges page", "-c", "a", "-c", "b", "--json")
    [hit] = [h for h in json.loads(out)["hits"] if "acknowledges" in h["text"]]
    assert [d["chunk_id"].split(":")[0] for d in hit["also_in"]] == [
        "b" if hit["collection"] == "a" else "a"]
    code, out, _ = grk(capsys, "search", "acknowledges page", "-c", "a", "-c", "b", "--json",
                       "--no-collapse")
    assert len([h for h in json.loads(out)["hits"] if "acknowledges" in h["text"]]) == 2


def test_drop_asks_first_refuses_without_a_terminal_and_deletes_with_yes(
        make_tree: TreeMaker, home: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    root = make_tree(A)
    grk(capsys, "index", str(root), "-c", "a")
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    code, _, err = grk(capsys, "drop", "a")
    assert code == 2 and "without confirmation: pass --yes" in err
    monkeypatch.setattr("sys.stdin", Terminal("n\n"))
    assert grk(capsys, "drop", "a")[0] == 1
    assert (home / "collections" / "a").is_dir()
    monkeypatch.setattr("sys.stdin", Terminal("y\n"))
    code, out, _ = grk(capsys, "drop", "a")
    assert code == 0 and out.startswith("deleted collection a")
    assert not (home / "collections" / "a").exists() and (root / "a.md").is_file()
    grk(capsys, "index", str(root), "-c", "a")
    assert grk(capsys, "drop", "a", "--yes")[0] == 0
    assert "no collections yet" in grk(capsys, "collections")[1]


def test_index_takes_files_as_well_as_folders(
        make_tree: TreeMaker, home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = make_tree({**A, "sub/a.md": "# Another alpha\n\nA second file named a.md.\n",
                      "left-out.md": "# Left out\n\nNot given.\n"})
    code, out, _ = grk(capsys, "index", str(root / "a.md"), str(root / "sub" / "a.md"),
                       str(root / "shared.md"), "-c", "f", "--json")
    assert code == 0 and json.loads(out)["added"] == 3
    code, out, _ = grk(capsys, "search", "alpha", "-c", "f", "--json")
    assert sorted(h["path"] for h in json.loads(out)["hits"]) == sorted(
        [f"{root.name}/a.md", "sub/a.md"])  # two files named a.md: told apart by folder
    assert grk(capsys, "index", "-c", "f")[0] == 0  # the files again, as recorded
    code, _, err = grk(capsys, "index", str(root / "a.md"), "-c", "g", "--watch")
    assert code == 2 and "--watch follows folders" in err


def test_status_reads_as_text_and_names_the_embedding(
        make_tree: TreeMaker, home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    grk(capsys, "index", str(make_tree(A)), "-c", "a")
    code, out, _ = grk(capsys, "status", "a", "--no-changes")
    assert code == 0 and "{" not in out and "'" not in out
    assert "  chunks: 1000 characters, overlap 150, boundaries structure\n" in out
    assert "  analyzer: lucene-english\n" in out
    assert "  embedding: none (BM25 only; add one with grk index -c a --embed" in out
    code, out, _ = grk(capsys, "collections")
    assert "\tbm25 only\t" in out


def test_a_busy_collection_names_the_process_that_holds_it(
        make_tree: TreeMaker, home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = make_tree(A)
    grk(capsys, "index", str(root), "-c", "a")
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys; from groundkit.collection import collection_dir; "
         "from groundkit.collection.indexer import exclusive\n"
         "with exclusive(collection_dir('a')):\n print('held', flush=True); sys.stdin.read()",
         "holding-it"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        code, _, err = grk(capsys, "index", "-c", "a")
        assert code == 7
        assert f"(pid {holder.pid}: -c holding-it); wait for it to finish" in err
    finally:
        holder.communicate("")


def test_a_drifted_fetch_shows_a_diff_of_the_indexed_and_the_current_text(
        make_tree: TreeMaker, home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = make_tree(A)
    grk(capsys, "index", str(root), "-c", "a")
    code, out, _ = grk(capsys, "search", "alpha", "-c", "a", "--json")
    chunk_id = json.loads(out)["hits"][0]["chunk_id"]
    (root / "a.md").write_text(A["a.md"].replace("alpha", "gamma"))
    code, out, _ = grk(capsys, "fetch", chunk_id)
    assert code == EXIT_DRIFTED
    assert "\n--- indexed\n+++ now\n" in out
    assert "\n-Pages about the alpha ingest worker.\n+Pages about the gamma ingest worker." in out


def test_help_stands_on_its_own_and_lists_every_exit_code(
        capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    top = capsys.readouterr().out
    assert "docs/" not in top and "  130  interrupted" in top
    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    for name, command in sub.choices.items():
        assert "docs/" not in command.format_help(), name


def test_the_exit_codes_of_the_docs_are_the_ones_grk_returns() -> None:
    page = (REPO / "docs" / "cli.md").read_text().split("## Exit codes")[1]
    documented = [int(m) for m in re.findall(r"^\| (\d+) \|", page, re.MULTILINE)]
    assert documented == list(EXIT_CODES)


def test_search_filters_by_path_format_and_date(
        make_tree: TreeMaker, home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = make_tree({**A, "sub/pages.txt": "Pages about pages.\n"})
    grk(capsys, "index", str(root), "-c", "a")
    code, out, _ = grk(capsys, "search", "pages", "-c", "a", "--json", "--path", "sub/")
    assert code == 0 and [h["path"] for h in json.loads(out)["hits"]] == ["sub/pages.txt"]
    code, out, _ = grk(capsys, "search", "pages", "-c", "a", "--json", "--format", "md")
    assert code == 0 and {h["path"] for h in json.loads(out)["hits"]} == {"a.md", "shared.md"}
    code, out, _ = grk(capsys, "search", "pages", "-c", "a", "--modified-since", "2999-01-01")
    assert code == 0 and out.startswith("no hits")
    code, _, err = grk(capsys, "search", "pages", "-c", "a", "--modified-since", "soon")
    assert code == 2 and "--modified-since wants a date" in err


def test_every_command_is_mapped_to_the_module_that_registers_it() -> None:
    from groundkit.cli.registry import COMMANDS, MODULES

    build_parser()  # loads every command module
    assert {name: configure.__module__.rsplit(".", 1)[1]
            for name, (_, configure) in COMMANDS.items()} == MODULES


def test_a_command_loads_only_its_own_module_at_start_up() -> None:
    probe = ("import sys; from groundkit.cli import build_parser; build_parser(only='search'); "
             "print(sorted(m for m in ('groundkit.answer', 'groundkit.mcp_server', "
             "'groundkit.viewer', 'asyncio', 'http.server') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True)
    assert done.stdout == "[]\n"
