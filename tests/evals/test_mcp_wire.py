"""The harness's wire-level MCP client: what it refuses (a scripted peer), and a real server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from evals import mcp_wire
from evals.mcp_wire import PROTOCOL, Session, WireError

SCHEMA = {"type": "object", "properties": {"hits": {"type": "array"}}, "required": ["hits"]}


def peer(*, protocol: str = PROTOCOL, result: dict[str, Any] | None = None,
         wrong_id: bool = False) -> Any:
    """A scripted server: answers initialize, tools/list and tools/call."""
    def send(message: dict[str, Any]) -> dict[str, Any] | None:
        if "id" not in message:
            return None
        method = message["method"]
        if method == "initialize":
            body: dict[str, Any] = {"protocolVersion": protocol, "capabilities": {"tools": {}},
                                    "serverInfo": {"name": "scripted"}}
        elif method == "tools/list":
            body = {"tools": [{"name": "search", "outputSchema": SCHEMA}]}
        else:
            body = result or {"structuredContent": {"hits": []}, "isError": False}
        return {"jsonrpc": "2.0", "id": message["id"] + wrong_id, "result": body}
    return send


def test_a_result_is_validated_against_the_declared_output_schema() -> None:
    assert Session(peer()).open().call("search", {}) == {"hits": []}
    bad = peer(result={"structuredContent": {"hits": "none"}, "isError": False})
    with pytest.raises(WireError, match="breaks its output schema"):
        Session(bad).open().call("search", {})


def test_a_tool_error_a_wrong_id_and_another_protocol_are_refused() -> None:
    failing = peer(result={"content": [{"type": "text", "text": "no such collection"}],
                           "isError": True})
    with pytest.raises(WireError, match="no such collection"):
        Session(failing).open().call("search", {})
    with pytest.raises(WireError, match="does not answer request"):
        Session(peer(wrong_id=True)).open()
    with pytest.raises(WireError, match="protocol"):
        Session(peer(protocol="2024-11-05")).open()


def test_a_result_without_structured_content_is_refused() -> None:
    with pytest.raises(WireError, match="no structured content"):
        Session(peer(result={"content": [], "isError": False})).open().call("search", {})


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_both_transports_search_a_real_server(transport: str, tmp_path: Path) -> None:
    from groundkit.collection import IndexConfig, index

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("The lighthouse keeper logs every ship.\n", encoding="utf-8")
    home = tmp_path / "home"
    index("notes", IndexConfig(roots=(str(docs),)), home=home)
    with mcp_wire.session(transport, home, "notes", "t" * 32) as session:
        out = session.call("search", {"query": "lighthouse ship", "collections": ["notes"]})
    assert [h["path"] for h in out["hits"]] == ["a.md"]
    assert session.server.get("name")
