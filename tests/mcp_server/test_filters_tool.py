"""The MCP search tool's filters: path globs, formats, modification date."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import TreeMaker
from mcp.server.mcpserver import MCPServer
from mcp_helpers import error, ok

from groundkit.collection import IndexConfig, index
from groundkit.mcp_server.server import build_server

DOCS = {"ops/logs.md": "# Logs\n\nDeployment logs are kept for 30 days.\n",
        "ops/audit.txt": "Audit logs are kept for 400 days.\n",
        "eng/logs.md": "# Build logs\n\nBuild logs are kept for a week.\n"}


@pytest.fixture
def server(make_tree: TreeMaker, home: Path) -> MCPServer:
    index("k", IndexConfig(roots=(str(make_tree(DOCS)),)), home=home)
    return build_server(home=home)


def test_search_keeps_only_the_documents_the_filters_allow(server: MCPServer) -> None:
    def found(**filters: object) -> list[str]:
        out = ok(server, "search", {"query": "logs kept", **filters})
        return sorted(h["path"] for h in out["hits"])

    assert found() == ["eng/logs.md", "ops/audit.txt", "ops/logs.md"]
    assert found(path=["ops/*"]) == ["ops/audit.txt", "ops/logs.md"]
    assert found(path=["ops/*"], format=["md"]) == ["ops/logs.md"]
    assert found(format=["txt", "html"]) == ["ops/audit.txt"]
    assert found(modified_since="2999-01-01") == []


def test_a_bad_filter_is_a_tool_error(server: MCPServer) -> None:
    assert "--modified-since wants a date" in error(
        server, "search", {"query": "logs", "modified_since": "next week"})
    assert "format" in error(server, "search", {"query": "logs", "format": ["p d f"]})


def test_a_path_filter_only_narrows_the_collection_never_reads_elsewhere(
        server: MCPServer) -> None:
    assert ok(server, "search", {"query": "root", "path": ["/etc/passwd"]})["hits"] == []
    assert "path" in error(server, "search", {"query": "logs", "path": "/etc/passwd"})
