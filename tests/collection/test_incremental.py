"""A run restricted to dirty paths builds the generation a full run builds."""

from __future__ import annotations

import os
import random
import sqlite3
from pathlib import Path

from conftest import TreeMaker

from groundkit.collection import Collection, IndexConfig, collection_dir
from groundkit.collection.derived import analyzer_of, bm25_params_of, default_builders
from groundkit.collection.indexer import index_collection
from groundkit.retrieval.bm25 import _FILES, BM25Index


def run(root: Path, home: Path, name: str, dirty: list[Path] | None) -> dict[str, object]:
    report = index_collection(
        name, collection_dir(name, home), IndexConfig(roots=(str(root),)),
        builders=default_builders(), skip_dirs=(home,),
        dirty=None if dirty is None else [str(p) for p in dirty])
    return report.to_dict()


def content(home: Path, name: str) -> tuple[object, ...]:
    """What a generation holds, without its number: documents, chunks, skipped, BM25."""
    with Collection.open(name, home) as coll:
        snap = coll.snapshot
        docs = sorted(snap.conn.execute(
            "SELECT doc_id, sha256, size, encoding FROM documents WHERE generation = ?",
            (snap.generation,)))
        skipped = sorted(snap.conn.execute(
            "SELECT path, reason FROM skipped WHERE generation = ?", (snap.generation,)))
        chunks = [c.chunk_id.split(":", 1)[1] for c in coll.chunks()]
        index = snap.bm25()
        fresh = BM25Index.build_from_texts([c.text for c in coll.chunks()],
                                           analyzer_of(snap.config), bm25_params_of(snap.config))
        for name_ in _FILES:
            assert index._arrays[name_].tolist() == \
                fresh._arrays[name_].tolist(), name_
        assert coll.check() == []
        return docs, skipped, chunks


def test_dirty_runs_match_full_runs_through_a_random_stream_of_edits(
        make_tree: TreeMaker, tmp_path: Path) -> None:
    files = {f"d{i % 4}/n{i}.md": f"Note {i} about topic{i % 5} and more words.\n" * (1 + i % 9)
             for i in range(40)}
    a, b = make_tree(files), make_tree(files)
    home = tmp_path / "home"
    run(a, home, "inc", None)
    run(b, home, "full", None)
    for step in range(25):
        dirty: list[Path] = []
        for root in (a, b):
            r = random.Random(step)
            name = f"d{r.randrange(5)}/n{r.randrange(60)}.md"
            action = r.choice(["write", "write", "delete", "rename-dir", "symlink-out"])
            _apply(root, name, action, step, tmp_path)
            if root is a:
                dirty = [root / name, root / name.split("/")[0], root / f"moved{step}"]
        report = run(a, home, "inc", dirty)
        run(b, home, "full", None)
        assert content(home, "inc") == content(home, "full"), (step, report)


def _apply(root: Path, name: str, action: str, step: int, tmp: Path) -> None:
    path = root / name
    if action == "write":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"Step {step} wrote {name}: word{step}.\n" * (1 + step % 4))
    elif action == "delete" and path.exists():
        path.unlink()
    elif action == "rename-dir" and path.parent.is_dir():
        os.rename(path.parent, root / f"moved{step}")
    elif action == "symlink-out":
        outside = tmp / f"outside{step}.md"
        outside.write_text("outside the root\n")
        if path.exists() or path.is_symlink():
            path.unlink()
        path.parent.mkdir(parents=True, exist_ok=True)
        path.symlink_to(outside)


def test_a_dirty_run_reads_only_the_dirty_files(make_tree: TreeMaker, home: Path) -> None:
    root = make_tree({f"n{i}.md": f"note {i}\n" for i in range(50)})
    run(root, home, "k", None)
    (root / "n3.md").write_text("changed\n")
    report = run(root, home, "k", [root / "n3.md"])
    assert (report["changed"], report["unchanged"], report["bytes_read"]) == (1, 49, 8)


def test_a_dirty_run_with_changed_settings_is_a_full_run(
        make_tree: TreeMaker, home: Path) -> None:
    root = make_tree({"a.md": "alpha\n", "b.md": "beta\n"})
    run(root, home, "k", None)
    (root / "b.md").write_text("beta two\n")
    report = index_collection("k", collection_dir("k", home),
                              IndexConfig(roots=(str(root),), max_bytes=1000),
                              builders=default_builders(), dirty=[str(root / "a.md")])
    assert report.changed == 1 and report.bytes_read == len("alpha\n") + len("beta two\n")


def test_nothing_changed_publishes_nothing_only_when_asked(
        make_tree: TreeMaker, home: Path) -> None:
    root = make_tree({"a.md": "alpha\n"})
    first = run(root, home, "k", None)
    again = run(root, home, "k", None)
    assert again["generation"] == first["generation"] + 1  # grk index always publishes
    quiet = index_collection("k", collection_dir("k", home), IndexConfig(roots=(str(root),)),
                             builders=default_builders(), publish_unchanged=False)
    assert not quiet.published and quiet.generation == again["generation"]
    other = IndexConfig(roots=(str(root),), extra={"bm25": {"k1": 1.2, "b": 0.75}})
    changed = index_collection("k", collection_dir("k", home), other,
                               builders=default_builders(), publish_unchanged=False)
    assert changed.published and changed.generation > again["generation"]  # other settings
    conn = sqlite3.connect(collection_dir("k", home) / "store.sqlite3")
    try:
        states = conn.execute("SELECT state FROM generations ORDER BY id").fetchall()
    finally:
        conn.close()
    assert ("building",) not in states
