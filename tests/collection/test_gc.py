"""Garbage collection of a collection's store: real SQLite, real files, real readers."""

from __future__ import annotations

import gc as pygc
import json
import os
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from conftest import TreeMaker

from groundkit.cli import main
from groundkit.collection import (
    Collection,
    IndexConfig,
    Snapshot,
    collect_garbage,
    collection_dir,
    index,
)
from groundkit.collection.gc import store_bytes
from groundkit.errors import CollectionBusyError
from groundkit.model import Status


def paragraph(i: int, n: int = 60) -> str:
    return f"Section {i}. " + " ".join(f"word{i}x{j}" for j in range(n)) + ".\n\n"


def config(root: Path, **gc: object) -> IndexConfig:
    return IndexConfig(roots=(str(root),), extra={"gc": gc} if gc else {})


def edit(root: Path, i: int) -> None:
    (root / "edited.md").write_text(paragraph(10_000 + i) * 8)


def store_state(home: Path) -> tuple[set[int], set[str], set[int], set[int]]:
    """Generation ids, gen-* folders, chunk rowids, rowids referenced by any generation."""
    directory = collection_dir("k", home)
    conn = sqlite3.connect(directory / "store.sqlite3")
    try:
        gens = {r[0] for r in conn.execute("SELECT id FROM generations")}
        rows = {r[0] for r in conn.execute("SELECT rowid FROM chunks")}
        members = {r[0] for r in conn.execute("SELECT chunk_rowid FROM generation_chunks")}
    finally:
        conn.close()
    return gens, {p.name for p in directory.glob("gen-*")}, rows, members


@pytest.fixture
def tree(make_tree: TreeMaker) -> Path:
    return make_tree({f"d{i}.md": paragraph(i) * 3 for i in range(5)} | {"edited.md": "start"})


def test_gc_keeps_only_the_retained_generations_and_their_chunks(
    tree: Path, home: Path,
) -> None:
    for i in range(6):
        edit(tree, i)
        last = index("k", config(tree, auto=False), home=home)
    gens, folders, rows, members = store_state(home)
    assert len(gens) == 6 and len(folders) == 6 and rows == members
    report = collect_garbage("k", home=home)
    gens, folders, rows, members = store_state(home)
    assert gens == {last.generation, last.generation - 1}
    assert folders == {f"gen-{g}" for g in gens}
    assert rows == members  # every remaining chunk row belongs to a retained generation
    assert report.generations_removed == list(range(1, last.generation - 1))
    assert report.chunks_removed > 0 and report.derived_bytes_removed > 0
    assert report.held_by_readers == []
    with Collection.open("k", home) as coll:
        assert coll.check() == []
        hit = coll.search("word10005x3")[0]
        assert hit.chunk.doc_id == "edited.md"
        assert coll.fetch(hit.chunk.chunk_id).status is Status.VERIFIED


def test_keep_one_leaves_only_the_current_generation(tree: Path, home: Path) -> None:
    for i in range(3):
        edit(tree, i)
        last = index("k", config(tree, auto=False), home=home)
    collect_garbage("k", home=home, keep=1)
    gens, folders, rows, members = store_state(home)
    assert gens == {last.generation} and folders == {f"gen-{last.generation}"}
    assert rows == members


def test_auto_gc_off_keeps_everything_and_the_setting_is_remembered(
    tree: Path, home: Path,
) -> None:
    edit(tree, 0)
    index("k", config(tree, auto=False), home=home)
    for i in range(1, 4):
        edit(tree, i)
        index("k", config(tree), home=home)  # no gc setting given: the recorded one holds
    gens, folders, _, _ = store_state(home)
    assert len(gens) == 4 and len(folders) == 4
    with Collection.open("k", home) as coll:
        assert coll.status(changes=False).gc == {"auto": False, "keep": 2}


def test_auto_gc_after_publish_keeps_the_recorded_number(tree: Path, home: Path) -> None:
    edit(tree, 0)
    index("k", config(tree, keep=3), home=home)
    for i in range(1, 6):
        edit(tree, i)
        last = index("k", config(tree), home=home)
    gens, folders, rows, members = store_state(home)
    assert gens == {last.generation - 2, last.generation - 1, last.generation}
    assert len(folders) == 3 and rows == members


def test_a_reader_keeps_its_generation_until_it_closes(tree: Path, home: Path) -> None:
    edit(tree, 0)
    first = index("k", config(tree), home=home)
    reader = Collection.open("k", home)
    old = {c.doc_id: c for c in reader.chunks()}
    for i in range(1, 5):
        edit(tree, i)
        index("k", config(tree), home=home)  # auto-gc runs after each publish
    gens, folders, _, _ = store_state(home)
    assert first.generation in gens and f"gen-{first.generation}" in folders
    report = collect_garbage("k", home=home)
    assert report.held_by_readers == [first.generation]
    hit = reader.search("word1x5")[0]
    assert hit.chunk.doc_id == "d1.md"
    assert reader.fetch(hit.chunk.chunk_id).status is Status.VERIFIED
    assert reader.fetch(old["edited.md"].chunk_id).status is Status.DRIFTED
    assert reader.snapshot.rowids() is not None and reader.snapshot.bm25() is not None
    reader.close()
    report = collect_garbage("k", home=home)
    assert report.generations_removed == [first.generation] and report.held_by_readers == []
    with Collection.open("k", home) as coll:
        verdict = coll.fetch(old["edited.md"].chunk_id)
        assert verdict.status is Status.UNRESOLVABLE
        assert "no such chunk in the store" in verdict.reason and "gc" in verdict.reason
        assert coll.fetch(hit.chunk.chunk_id).status is Status.VERIFIED  # still current


def test_readers_opening_during_index_and_gc_never_fail(tree: Path, home: Path) -> None:
    edit(tree, 0)
    index("k", config(tree, keep=1), home=home)
    errors: list[BaseException] = []
    stop = threading.Event()

    def read() -> None:
        while not stop.is_set():
            try:
                with Collection.open("k", home) as coll:
                    assert coll.search("word2x7")[0].chunk.doc_id == "d2.md"
                    assert coll.snapshot.generation_dir.is_dir()
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)
                return

    threads = [threading.Thread(target=read) for _ in range(3)]
    for t in threads:
        t.start()
    try:
        for i in range(1, 15):
            edit(tree, i)
            index("k", config(tree), home=home)
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert errors == []


HOLD_LOCK = """
import sys
from pathlib import Path
from groundkit.collection.indexer import exclusive
with exclusive(Path(sys.argv[1])):
    print("locked", flush=True)
    sys.stdin.read()
"""


def test_gc_is_refused_while_the_writer_lock_is_held(
    tree: Path, home: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    index("k", config(tree), home=home)
    # The writer lock is a POSIX record lock: another process must hold it.
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(collection_dir("k", home))],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": str(Path.cwd())})
    assert holder.stdin is not None and holder.stdout is not None
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(CollectionBusyError):
            collect_garbage("k", home=home)
        assert main(["gc", "--collection", "k"]) == CollectionBusyError.exit_code
    finally:
        holder.stdin.close()
        holder.wait()
        holder.stdout.close()
    assert "being indexed" in capsys.readouterr().err
    assert main(["gc", "--collection", "k"]) == 0


def test_status_shows_what_gc_would_reclaim(tree: Path, home: Path) -> None:
    for i in range(5):
        edit(tree, i)
        index("k", config(tree, auto=False), home=home)
    with Collection.open("k", home) as coll:
        before = coll.status(changes=False).reclaimable
    assert before is not None
    assert before.generations == (1, 2, 3) and before.chunk_rows > 0
    assert before.derived_bytes > 0 and before.total_bytes > before.chunk_bytes > 0
    report = collect_garbage("k", home=home)
    assert report.chunks_removed == before.chunk_rows
    with Collection.open("k", home) as coll:
        after = coll.status(changes=False).reclaimable
    assert after is not None
    assert (after.generations, after.derived_bytes, after.chunk_rows) == ((), 0, 0)


def test_the_store_stays_bounded_with_auto_gc(make_tree: TreeMaker, tmp_path: Path) -> None:
    sizes: dict[bool, list[int]] = {}
    for auto in (True, False):
        home = tmp_path / f"home-{auto}"
        root = make_tree({f"d{i}.md": paragraph(i) * 3 for i in range(5)})
        sizes[auto] = []
        for i in range(50):
            (root / "edited.md").write_text(paragraph(10_000 + i, 400) * 10)
            index("k", config(root, auto=auto), home=home)
            sizes[auto].append(store_bytes(collection_dir("k", home)))
        assert len(list(collection_dir("k", home).glob("gen-*"))) == (2 if auto else 50)
    assert sizes[True][-1] <= sizes[True][9] * 1.25  # flat after the first cycles
    assert sizes[True][-1] * 3 < sizes[False][-1]


def test_opening_and_closing_snapshots_leaks_no_descriptors(tree: Path, home: Path) -> None:
    index("k", config(tree), home=home)
    fds = Path("/proc/self/fd")
    if not fds.is_dir():
        pytest.skip("needs /proc")
    Snapshot.open("k", home).close()
    pygc.collect()  # what earlier tests left for the collector closes now, not mid-count
    before = len(os.listdir(fds))
    for _ in range(2000):
        snap = Snapshot.open("k", home)
        snap.close()
        snap.close()  # idempotent
    for _ in range(200):
        with Collection.open("k", home) as coll:
            coll.search("word1x1")
    del coll  # its memory maps hold descriptors until it is freed
    pygc.collect()
    assert len(os.listdir(fds)) == before


def test_cli_gc_json_and_status(tree: Path, home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for i in range(4):
        edit(tree, i)
        assert main(["index", str(tree), "-c", "k", "--no-auto-gc", "--json"]) == 0
    capsys.readouterr()
    assert main(["status", "k", "--json", "--no-changes"]) == 0
    status = json.loads(capsys.readouterr().out)
    assert status["gc"] == {"auto": False, "keep": 2}
    assert status["reclaimable"]["generations"] == [1, 2]
    assert status["reclaimable"]["total_bytes"] > 0
    assert main(["gc", "--collection", "k", "--keep", "1", "--vacuum", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["collection"] == "k" and data["generations_removed"] == [1, 2, 3]
    assert data["retained"] == [4] and data["vacuumed"] is True
    assert data["chunks_removed"] > 0 and data["store_bytes_after"] < data["store_bytes_before"]
    assert data["checkpoint"]["busy"] == 0
    assert main(["gc", "-c", "k"]) == 0
    assert "removed 0 generation(s)" in capsys.readouterr().out
    assert main(["gc", "-c", "k", "--keep", "0"]) == 2
    assert main(["gc", "-c", "nope"]) == 3
    assert main(["index", str(tree), "-c", "k", "--keep-generations", "0"]) == 2


def test_human_status_and_gc_output(tree: Path, home: Path,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    for i in range(3):
        edit(tree, i)
        index("k", config(tree, auto=False), home=home)
    capsys.readouterr()
    assert main(["status", "k", "--no-changes"]) == 0
    assert "reclaimable by grk gc: about" in capsys.readouterr().out
    reader = Collection.open("k", home)
    index("k", config(tree, auto=False), home=home)
    index("k", config(tree, auto=False), home=home)
    assert main(["gc", "-c", "k"]) == 0
    out = capsys.readouterr().out
    assert f"held by open readers (collected once they close): {reader.generation}" in out
    reader.close()
