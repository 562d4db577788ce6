"""The MCP server's collection pool: new generations are noticed, leases keep old ones open."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from conftest import TreeMaker
from mcp_helpers import DOCS, error, ok

from groundkit.collection import Collection, IndexConfig, index
from groundkit.mcp_server.server import build_server


@pytest.fixture
def root(make_tree: TreeMaker) -> Path:
    return make_tree(DOCS)


def test_a_new_generation_is_noticed_reloaded_and_counted(root: Path, home: Path) -> None:
    index("k", IndexConfig(roots=(str(root),)), home=home)
    server = build_server(home=home)
    assert ok(server, "search", {"query": "zeppelin"})["hits"] == []
    before = ok(server, "index_status", {"collection": "k", "check_changes": False})["retriever"]
    assert (before["opens"], before["bm25_loads"], before["generation_changes"]) == (1, 1, 0)
    (root / "z.md").write_text("The zeppelin hangar.", encoding="utf-8")
    index("k", IndexConfig(roots=(str(root),)), home=home)
    assert ok(server, "search", {"query": "zeppelin"})["hits"][0]["path"] == "z.md"
    after = ok(server, "index_status", {"collection": "k", "check_changes": False})["retriever"]
    assert after["serving_generation"] == 2 and after["last_generation_change_at"]
    assert (after["opens"], after["bm25_loads"], after["generation_changes"]) == (2, 2, 1)
    ok(server, "search", {"query": "zeppelin"})
    again = ok(server, "index_status", {"collection": "k", "check_changes": False})["retriever"]
    assert (again["opens"], again["bm25_loads"]) == (2, 2)


def test_restricting_the_server_to_named_collections_hides_the_others(
        make_tree: TreeMaker, home: Path) -> None:
    index("a", IndexConfig(roots=(str(make_tree({"x.md": "alpha logs"})),)), home=home)
    index("b", IndexConfig(roots=(str(make_tree({"y.md": "beta logs"})),)), home=home)
    other = Collection.open("b", home)
    b_chunk = other.chunks()[0].chunk_id
    other.close()
    server = build_server(home=home, collections=["a"])
    assert [c["name"] for c in ok(server, "list_collections", {})["collections"]] == ["a"]
    assert [h["collection"] for h in ok(server, "search", {"query": "logs"})["hits"]] == ["a"]
    assert "unknown collection 'b'" in error(server, "search",
                                             {"query": "logs", "collections": ["b"]})
    out = ok(server, "fetch_chunk", {"chunk_id": b_chunk})
    assert out["status"] == "unresolvable" and out["stored_text"] is None


def test_an_unknown_restricted_collection_fails_at_startup(home: Path) -> None:
    from groundkit.errors import CollectionNotFoundError

    with pytest.raises(CollectionNotFoundError):
        build_server(home=home, collections=["missing"])


def test_an_empty_home_lists_nothing_and_search_says_why(home: Path) -> None:
    server = build_server(home=home)
    assert ok(server, "list_collections", {})["collections"] == []
    assert "no collections" in error(server, "search", {"query": "logs"})


def test_a_collection_in_use_stays_open_until_its_last_lease_ends(
        root: Path, home: Path) -> None:

    from groundkit.mcp_server.server import CollectionPool

    index("k", IndexConfig(roots=(str(root),)), home=home)
    pool = CollectionPool(home=home)
    with pool.lease("k", bm25=True) as old:
        (root / "z.md").write_text("zeppelin", encoding="utf-8")
        index("k", IndexConfig(roots=(str(root),)), home=home)
        with pool.lease("k", bm25=True) as new:
            assert new.generation == old.generation + 1 and new.search("zeppelin")
        assert old.search("logs") and not old.search("zeppelin")  # its own snapshot
    with pytest.raises(sqlite3.ProgrammingError):
        old.snapshot.conn.execute("SELECT 1")
    with pool.lease("k") as again:
        assert again is new
