"""Names the walk must survive (issue 45 items 4 and 5): a file or folder name that is
not valid UTF-8 is skipped with a one-line reason (ADR 0018), and folders nested past
:data:`~groundkit.sources.MAX_DEPTH` are skipped, not recursed into."""

from __future__ import annotations

import os
from pathlib import Path

from groundkit.collection import Collection, IndexConfig, index
from groundkit.sources import MAX_DEPTH, NOT_UTF8, Candidate, Skipped, discover, discover_paths


def test_names_that_are_not_utf8_are_skipped_and_every_run_goes_on(tmp_path: Path) -> None:
    root = tmp_path / "docs"
    root.mkdir()
    (root / "good.md").write_text("hello wombat\n")
    with open(os.fsencode(root) + b"/bad\xffname.md", "wb") as bad:
        bad.write(b"hello\n")
    os.mkdir(os.fsencode(root) + b"/dir\xfe")
    with open(os.fsencode(root) + b"/dir\xfe/inner.md", "wb") as inner:
        inner.write(b"hello\n")
    found = list(discover(root))
    assert [c.relpath for c in found if isinstance(c, Candidate)] == ["good.md"]
    assert [s for s in found if isinstance(s, Skipped)] == [
        Skipped("bad\\xffname.md", NOT_UTF8), Skipped("dir\\xfe", NOT_UTF8)]
    home = tmp_path / "home"
    for _ in range(2):  # the name stays: every later run indexes the rest all the same
        report = index("c", IndexConfig(roots=(str(root),)), home=home)
        assert sorted(s.path for s in report.skipped) == ["bad\\xffname.md", "dir\\xfe"]
    with Collection.open("c", home) as coll:
        assert [c.doc_id for c in coll.chunks()] == ["good.md"]


def test_a_changed_path_that_is_not_utf8_is_skipped_too(tmp_path: Path) -> None:
    (tmp_path / "good.md").write_text("hello\n")
    bad = os.fsdecode(b"bad\xffname.md")
    assert list(discover_paths(tmp_path, ["good.md", bad])) == [
        Skipped("bad\\xffname.md", NOT_UTF8),
        Candidate(tmp_path, "good.md", 6, (tmp_path / "good.md").stat().st_mtime_ns,
                  ((st := (tmp_path / "good.md").stat()).st_dev, st.st_ino))]


def test_folders_nested_past_the_limit_are_skipped_without_recursion(tmp_path: Path) -> None:
    deep = tmp_path
    for _ in range(330):  # ~660 characters of path: a RecursionError before
        deep = deep / "d"
        deep.mkdir()
        if len(deep.relative_to(tmp_path).parts) == 10:
            (deep / "ten.md").write_text("ten levels down\n")
    (deep / "bottom.md").write_text("never reached\n")
    found = list(discover(tmp_path))
    assert [c.relpath for c in found if isinstance(c, Candidate)] == ["d/" * 10 + "ten.md"]
    assert [s for s in found if isinstance(s, Skipped)] == [Skipped(
        "d/" * (MAX_DEPTH + 1), f"folder nested deeper than {MAX_DEPTH} levels")]
