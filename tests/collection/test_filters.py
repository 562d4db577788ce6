"""Search filters (path globs, formats, modification date) in the Python API: the ranking
of an unfiltered search with the other documents struck out, deep enough for top_k."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import pytest
from conftest import TreeMaker

from groundkit.collection import Collection, IndexConfig, index
from groundkit.collection.filters import Filters
from groundkit.errors import UsageError

DOCS = {f"notes/n{i:02d}.md": f"# Note {i}\n\nThe pump runs every {i} hours.\n"
        for i in range(30)}
DOCS |= {"manuals/pump.txt": "The pump manual: the pump runs on mains power.\n",
         "manuals/old.txt": "An old pump note.\n",
         "site/pump.html": "<html><body><p>The pump page: pump pump pump.</p></body></html>"}


@pytest.fixture
def coll(make_tree: TreeMaker, home: Path) -> Collection:
    root = make_tree(DOCS)
    old = dt.datetime(2020, 1, 1).timestamp()
    os.utime(root / "manuals" / "old.txt", (old, old))
    index("k", IndexConfig(roots=(str(root),)), home=home)
    return Collection.open("k", home)


def paths(hits: list) -> list[str]:
    return [h.chunk.doc_id for h in hits]


def test_a_filter_keeps_the_unfiltered_order_with_the_others_struck_out(
        coll: Collection) -> None:
    everything = coll.search("pump", top_k=40, collapse=False)
    wanted = [h for h in everything if h.chunk.doc_id.startswith("manuals/")]
    found = coll.search("pump", top_k=40, collapse=False,
                        filters=Filters.parse(path="manuals/"))
    assert [(h.chunk.chunk_id, h.score) for h in found] == [
        (h.chunk.chunk_id, h.score) for h in wanted]
    assert [h.rank for h in found] == [1, 2]


def test_a_selective_filter_searches_deep_enough_to_fill_top_k(coll: Collection) -> None:
    # the manuals rank below most notes for "runs hours": still found, top_k of them
    hits = coll.search("runs every hours", top_k=1, filters=Filters.parse(path="*.txt"))
    assert paths(hits) == ["manuals/pump.txt"]


def test_formats_by_extractor_or_extension_and_the_modification_date(
        coll: Collection) -> None:
    assert set(paths(coll.search("pump", top_k=50, filters=Filters.parse(format="html")))) \
        == {"site/pump.html"}
    assert set(paths(coll.search("pump", top_k=50, filters=Filters.parse(format=["txt"])))) \
        == {"manuals/pump.txt", "manuals/old.txt"}
    recent = coll.search("pump", top_k=50, filters=Filters.parse(
        path="manuals/*", modified_since="2021-06-01"))
    assert paths(recent) == ["manuals/pump.txt"]
    assert coll.search("pump", filters=Filters.parse(path="nowhere/*")) == []


def test_bad_filters_fail_closed_naming_the_value() -> None:
    with pytest.raises(UsageError, match="2026-13-45"):
        Filters.parse(modified_since="2026-13-45")
    with pytest.raises(UsageError, match="empty"):
        Filters.parse(path=[""])
    assert Filters.parse() is None
