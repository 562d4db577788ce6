"""The single-file update's shortcuts (the grk watch path) give what the long way gives:
the chunk order read from rowids.npy only when it is as published, the position map by a
row-id table, the dirty-path test without splitting every document id."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
from conftest import TreeMaker

from groundkit.collection import Collection, IndexConfig, collection_dir, derived
from groundkit.collection.derived import analyzer_of, bm25_params_of, default_builders
from groundkit.collection.incremental import under
from groundkit.collection.indexer import index_collection
from groundkit.retrieval import bm25_update
from groundkit.retrieval.bm25 import _FILES, BM25Index
from groundkit.retrieval.bm25_update import position_map


def _under_by_parts(doc_id: str, dirty_ids: set[str]) -> bool:
    """The definition: the id itself, or any of its folder prefixes, is dirty."""
    parts = doc_id.split("/")
    return doc_id in dirty_ids or any("/".join(parts[:i]) in dirty_ids
                                      for i in range(1, len(parts)))


def test_under_is_the_folder_prefix_test() -> None:
    rng = random.Random(5)
    pieces = ["a", "b", "", "ab", "a.md"]
    for _ in range(20_000):
        doc = "/".join(rng.choice(pieces) for _ in range(rng.randint(1, 4)))
        dirty = {"/".join(rng.choice(pieces) for _ in range(rng.randint(1, 3)))
                 for _ in range(rng.randint(0, 3))}
        assert under(doc, dirty) == _under_by_parts(doc, dirty), (doc, dirty)


@pytest.mark.parametrize("spread", [1, 10**12])  # dense row ids (a table), sparse (sorting)
def test_position_map_finds_every_survivor_and_every_new_chunk(spread: int) -> None:
    rng = random.Random(spread)
    for _ in range(200):
        pool = rng.sample(range(1, 400), rng.randint(0, 120))
        old = [r * spread for r in pool[: rng.randint(0, len(pool))]]
        new = [r * spread for r in rng.sample(pool, rng.randint(0, len(pool)))]
        old_to_new, added = position_map(np.array(old, dtype=np.int64),
                                          np.array(new, dtype=np.int64))
        where = {r: i for i, r in enumerate(new)}
        assert old_to_new.tolist() == [where.get(r, -1) for r in old]
        assert added.tolist() == [i for i, r in enumerate(new) if r not in set(old)]


def _assert_bm25_is_a_full_build(home: Path) -> None:
    with Collection.open("u", home) as coll:
        snap = coll.snapshot
        fresh = BM25Index.build_from_texts([c.text for c in coll.chunks()],
                                           analyzer_of(snap.config), bm25_params_of(snap.config))
        for name in _FILES:
            assert np.array_equal(snap.bm25()._arrays[name], fresh._arrays[name]), name
        assert coll.check() == []


def _update(root: Path, home: Path, path: Path) -> None:
    index_collection("u", collection_dir("u", home), IndexConfig(roots=(str(root),)),
                     builders=default_builders(), skip_dirs=(home,), dirty=[str(path)])


def test_a_previous_chunk_order_not_as_published_is_read_from_the_store(
        make_tree: TreeMaker, home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """rowids.npy of the previous generation permuted (a valid file, same size): the update
    must not trust it, and still equals a full build; the update path is taken."""
    root = make_tree({f"d/n{i}.md": f"note {i} about topic {i % 7}\n\nmore {i}\n"
                      for i in range(40)})
    _update(root, home, root)  # the first run is a full one (no previous generation)
    directory = collection_dir("u", home)
    with Collection.open("u", home) as coll:
        current = coll.snapshot.generation
    path = directory / f"gen-{current}" / derived.ROWIDS
    rowids = np.load(path)
    np.save(path, rowids[::-1].copy())
    calls = []
    real = bm25_update.updated
    monkeypatch.setattr(bm25_update, "updated",
                        lambda *a: calls.append(1) or real(*a))  # type: ignore[func-returns-value]
    (root / "d" / "n5.md").write_text("note five rewritten with brandnew words\n")
    _update(root, home, root / "d" / "n5.md")
    assert calls == [1]
    _assert_bm25_is_a_full_build(home)


def test_a_run_of_single_file_updates_stays_a_full_build(
        make_tree: TreeMaker, home: Path) -> None:
    rng = random.Random(3)
    words = ["alpha", "beta", "gamma", "zeta", "running", "the", "東京", "plumless", "buckeroo"]
    files = {f"f{i:02d}.md": " ".join(rng.choice(words) for _ in range(30)) + "\n"
             for i in range(30)}
    root = make_tree(files)
    _update(root, home, root)
    for n in range(6):
        path = root / rng.choice(sorted(files))
        extra = "\n\n".join(" ".join(rng.choice(words) for _ in range(rng.randint(0, 40)))
                            for _ in range(rng.randint(0, 3)))
        path.write_text(f"new{n} {extra}\n")
        _update(root, home, path)
        _assert_bm25_is_a_full_build(home)
