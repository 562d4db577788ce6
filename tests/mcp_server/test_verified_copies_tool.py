"""The MCP ``search`` tool with ``verify``: a hit whose file is gone comes back as its
verified copy, naming the place it replaces (:mod:`tests.collection.test_verified_copies`)."""

from __future__ import annotations

from pathlib import Path

from conftest import TreeMaker
from mcp_helpers import ok

from groundkit.collection import Collection, IndexConfig, index
from groundkit.mcp_server.server import build_server

LAMP = "# Lamp\n\nThe lamp keeper trims the wick every evening at dusk.\n"
QUERY = "when does the lamp keeper trim the wick"


def test_search_with_verify_returns_the_copy_and_what_it_replaces(
        make_tree: TreeMaker, home: Path) -> None:
    root = make_tree({"a/lamp.md": LAMP, "b/lamp.md": LAMP,
                      "oil.md": "# Oil\n\nThe keeper sells lamp oil.\n"})
    index("docs", IndexConfig(roots=(str(root),)), home=home)
    with Collection.open("docs", home) as coll:
        first = coll.search(QUERY, top_k=1)[0]
    (root / first.chunk.doc_id).unlink()
    server = build_server(home=home)

    hit = ok(server, "search", {"query": QUERY, "top_k": 1, "verify": True})["hits"][0]
    assert hit["path"] == first.also_in[0].path and hit["verdict"]["status"] == "verified"
    assert hit["replaced"] == [{"path": first.chunk.doc_id, "chunk_id": first.chunk.chunk_id,
                                "start": first.chunk.start, "end": first.chunk.end,
                                "status": "unresolvable",
                                "reason": "file missing (deleted or renamed)"}]
    plain = ok(server, "search", {"query": QUERY, "top_k": 1})["hits"][0]
    assert plain["path"] == first.chunk.doc_id and plain["replaced"] == []
    assert plain["also_in"] == [first.also_in[0].to_dict()]
