from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import TreeMaker

from groundkit.collection import Collection, IndexConfig, index
from groundkit.errors import CollectionBusyError, CollectionNotFoundError, UsageError
from groundkit.model import Status
from groundkit.text.chunking import ChunkerConfig


def paragraph(i: int) -> str:
    return f"Section {i}. " + " ".join(f"word{i}x{j}" for j in range(60)) + ".\n\n"


def config(root: Path, **kw: object) -> IndexConfig:
    return IndexConfig(roots=(str(root),), **kw)  # type: ignore[arg-type]


def test_reindexing_is_incremental_by_content_hash(make_tree: TreeMaker, home: Path) -> None:
    root = make_tree({"a.md": paragraph(1), "b.md": paragraph(2), "c.md": paragraph(3)})
    first = index("k", config(root), home=home)
    assert (first.added, first.changed, first.removed, first.unchanged) == (3, 0, 0, 0)
    (root / "a.md").write_text(paragraph(9))
    (root / "c.md").unlink()
    (root / "d.md").write_text(paragraph(4))
    os.utime(root / "b.md")  # touched but unchanged
    second = index("k", config(root), home=home)
    assert (second.added, second.changed, second.removed, second.unchanged) == (1, 1, 1, 1)
    with Collection.open("k", home) as coll:
        assert sorted({c.doc_id for c in coll.chunks()}) == ["a.md", "b.md", "d.md"]
        assert coll.generation == second.generation == first.generation + 1


def test_changing_the_chunk_size_rechunks_every_file(make_tree: TreeMaker, home: Path) -> None:
    root = make_tree({"a.md": paragraph(1) * 20})
    index("k", config(root), home=home)
    report = index("k", config(root, chunker=ChunkerConfig(target=300, overlap=30)), home=home)
    assert report.changed == 1 and report.unchanged == 0
    with Collection.open("k", home) as coll:
        assert all(len(c.text) <= 600 for c in coll.chunks())


def test_several_roots_prefix_document_ids_with_the_root_name(
    make_tree: TreeMaker, home: Path,
) -> None:
    a, b = make_tree({"x.md": "alpha"}), make_tree({"x.md": "beta"})
    index("k", IndexConfig(roots=(str(a), str(b))), home=home)
    with Collection.open("k", home) as coll:
        assert sorted(c.doc_id for c in coll.chunks()) == [f"{a.name}/x.md", f"{b.name}/x.md"]


def test_the_index_folder_inside_a_root_is_not_indexed(make_tree: TreeMaker) -> None:
    root = make_tree({"a.md": "alpha"})
    index("k", config(root), home=root / "gk-home")
    (root / "gk-home" / "notes.md").write_text("not mine")
    index("k", config(root), home=root / "gk-home")
    with Collection.open("k", root / "gk-home") as coll:
        assert [c.doc_id for c in coll.chunks()] == ["a.md"]


def test_bad_inputs_are_clear_errors(make_tree: TreeMaker, home: Path, tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="not a folder"):
        index("k", config(tmp_path / "missing"), home=home)
    with pytest.raises(UsageError, match="invalid collection name"):
        index("../evil", config(make_tree({"a.md": "x"})), home=home)
    with pytest.raises(CollectionNotFoundError, match="grk index"):
        Collection.open("never", home)


def test_a_second_indexer_on_the_same_collection_is_refused(
    make_tree: TreeMaker, home: Path,
) -> None:
    root = make_tree({"a.md": "x"})
    holder = ("import sys; from pathlib import Path\n"
              "from groundkit.collection.indexer import exclusive\n"
              "with exclusive(Path(sys.argv[1])):\n    print('locked', flush=True)\n"
              "    sys.stdin.read()\n")
    proc = subprocess.Popen([sys.executable, "-c", holder, str(home / "collections" / "k")],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(Path.cwd())})
    assert proc.stdout is not None and proc.stdin is not None
    try:
        assert proc.stdout.readline().strip() == "locked"
        with pytest.raises(CollectionBusyError, match="another process"):
            index("k", config(root), home=home)
    finally:
        proc.stdin.close()
        proc.wait()
        proc.stdout.close()
    assert index("k", config(root), home=home).added == 1


KILLABLE = textwrap.dedent("""
    import sys, time
    from groundkit.collection import index, IndexConfig
    def progress(done, total, path):
        print("file", done, flush=True)
    def slow_builder(conn, generation, gen_dir, settings):
        print("building", flush=True)
        (gen_dir / "partial.bin").write_bytes(b"x" * 1000)
        time.sleep(0.2)
    index("k", IndexConfig(roots=(sys.argv[1],)), home=sys.argv[2],
          builders=[slow_builder], progress=progress)
    print("done", flush=True)
""")


def _index_and_kill_after(root: Path, home: Path, marker: str) -> bool:
    """Run an indexer subprocess, SIGKILL it when it prints ``marker``; True if killed."""
    proc = subprocess.Popen([sys.executable, "-c", KILLABLE, str(root), str(home)],
                            stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(Path.cwd())})
    assert proc.stdout is not None
    with proc.stdout:
        for line in proc.stdout:
            if line.strip() == marker:
                proc.send_signal(signal.SIGKILL)
                proc.wait()
                return True
    proc.wait()
    return False


@pytest.mark.parametrize("marker", ["file 0", "file 1", "file 37", "file 119", "file 120",
                                    "building"])
def test_a_killed_reindex_leaves_the_previous_generation_whole(
    make_tree: TreeMaker, home: Path, marker: str,
) -> None:
    root = make_tree({f"d{i:03}.md": paragraph(i) * 3 for i in range(120)})
    first = index("k", config(root), home=home)
    with Collection.open("k", home) as coll:
        before = [c.chunk_id for c in coll.chunks()]
    for i in range(0, 120, 2):
        (root / f"d{i:03}.md").write_text(paragraph(1000 + i) * 3)
    assert _index_and_kill_after(root, home, marker)
    with Collection.open("k", home) as coll:
        assert coll.generation == first.generation
        assert [c.chunk_id for c in coll.chunks()] == before
        assert coll.check() == []
        unchanged = next(c for c in coll.chunks() if c.doc_id == "d001.md")
        assert coll.fetch(unchanged.chunk_id).status is Status.VERIFIED
    report = index("k", config(root), home=home)  # the next run clears the debris
    assert (report.changed, report.unchanged) == (60, 60)
    assert sorted(p.name for p in (home / "collections" / "k").glob("gen-*")) == [
        f"gen-{first.generation}", f"gen-{report.generation}"]
    with Collection.open("k", home) as coll:
        assert coll.check() == [] and coll.generation == report.generation


def test_the_number_of_worker_processes_does_not_change_the_result(
    make_tree: TreeMaker, tmp_path: Path,
) -> None:
    from groundkit.collection import collection_dir
    from groundkit.collection.indexer import index_collection

    root = make_tree({f"d{i:02}.md": paragraph(i) * (1 + i % 5) for i in range(40)})
    results = []
    for workers in (1, 2):
        home = tmp_path / f"home{workers}"
        index_collection("k", collection_dir("k", home), config(root), workers=workers)
        with Collection.open("k", home) as coll:
            results.append(coll.chunks())
    assert results[0] == results[1] and len(results[0]) > 40
