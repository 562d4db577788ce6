"""The MCP search tool's ``rerank`` argument: a reranker registered for the collection, by
name; a path from the client is refused. A real tiny cross-encoder (random weights)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import RERANK_DOCS, TreeMaker
from mcp_helpers import error, ok

from groundkit.cli import main
from groundkit.collection import IndexConfig, index
from groundkit.mcp_server.server import build_server

DOCS = RERANK_DOCS


@pytest.fixture
def model(tiny_cross_encoder: Path) -> Path:
    return tiny_cross_encoder


def test_the_mcp_search_tool_takes_a_registered_name_never_a_path(
        make_tree: TreeMaker, model: Path, home: Path) -> None:
    index("k", IndexConfig(roots=(str(make_tree(DOCS)),)), home=home)
    assert main(["rerankers", "-c", "k", "--add", "tiny", str(model)]) == 0
    server = build_server(home=home)
    out = ok(server, "search", {"query": "lamps keepers", "rerank": "tiny", "top_k": 5})
    assert out["hits"] and any(e["retriever"] == "rerank" for e in out["hits"][0]["explanation"])
    unknown = error(server, "search", {"query": "x", "rerank": "nosuch"})
    assert "unknown reranker 'nosuch'" in unknown
    refused = error(server, "search", {"query": "x", "rerank": str(model)})
    assert "invalid argument rerank" in refused and str(model) not in refused
    short = error(server, "search", {"query": "x", "rerank": "/m/ce"})  # under 40 characters
    assert "invalid argument rerank" in short and "/m/ce" not in short
    assert "a string of 5 characters" in short
