"""The server declares what it serves and nothing else: the ``tools`` capability alone.

Both protocol eras (the initialize handshake and 2026-07-28's ``server/discover``),
in memory, over a real stdio subprocess and over HTTP; the methods of the undeclared
capabilities answer JSON-RPC -32601, an unknown tool -32602 (the attack corpus
has the hostile variants of both).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from attack_helpers import TOKEN, http_server
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_helpers import DOCS, MODES, session, write_tree
from mcp_types import INVALID_PARAMS, METHOD_NOT_FOUND, DiscoverResult, ServerCapabilities

from groundkit.collection import IndexConfig, index
from groundkit.mcp_server.server import UNSERVED, build_server

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("capabilities")
    docs = write_tree(base / "docs", {"logs.md": DOCS["logs.md"]})
    index("k", IndexConfig(roots=(str(docs),)), home=base / "home")
    return base / "home"


@pytest.mark.parametrize("mode", MODES)
def test_only_the_tools_capability_is_declared(home: Path, mode: str) -> None:
    async def declared(client: Client) -> ServerCapabilities:
        if mode == "legacy":
            return client.server_capabilities  # from the initialize result
        raw = await client.session.send_discover(mode)  # server/discover itself, not cached
        return DiscoverResult.model_validate(raw).capabilities

    found = session(build_server(home=home), declared, mode)
    assert found.model_dump(exclude_none=True, by_alias=True) == {"tools": {"listChanged": False}}


def test_no_subscription_stream_is_served_the_tool_list_never_changes(home: Path) -> None:
    async def listen(client: Client) -> None:
        async with client.listen(tools_list_changed=True, prompts_list_changed=True):
            raise AssertionError("subscriptions/listen was acknowledged")

    raised: list[MCPError] = []
    try:
        session(build_server(home=home), listen, "2026-07-28")
    except* MCPError as group:  # raised inside the client's task group
        raised = _errors(group)
    assert [e.code for e in raised] == [METHOD_NOT_FOUND]


def _stdio(home: Path, *messages: dict[str, Any]) -> dict[int, dict[str, Any]]:
    """Send ``messages`` to ``grk serve`` over stdio; the reply to each request, by id.

    stdin stays open until every request is answered (at EOF the server cancels what
    is still in flight)."""
    proc = subprocess.Popen([sys.executable, "-m", "groundkit", "serve", "--home", str(home)],
                            cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    assert proc.stdin and proc.stdout
    replies: dict[int, dict[str, Any]] = {}
    try:
        for message in messages:
            proc.stdin.write(json.dumps(message) + "\n")
            proc.stdin.flush()
            if "id" in message:
                reply = json.loads(proc.stdout.readline())
                replies[reply["id"]] = reply
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)
        proc.stdout.close()
    return replies


def test_over_stdio_the_undeclared_methods_are_method_not_found(home: Path) -> None:
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"}}}
    requests = [{"jsonrpc": "2.0", "id": i, "method": m, "params": {"name": "search",
                                                                     "uri": "file:///etc/passwd"}}
                for i, m in enumerate(UNSERVED, 1)]
    unknown = {"jsonrpc": "2.0", "id": 99, "method": "tools/call",
               "params": {"name": "../bin/sh", "arguments": {}}}
    replies = _stdio(home, init, {"jsonrpc": "2.0", "method": "notifications/initialized"},
                     *requests, unknown)
    assert replies[0]["result"]["capabilities"].keys() == {"tools"}
    for i, method in enumerate(UNSERVED, 1):
        assert replies[i]["error"]["code"] == METHOD_NOT_FOUND, (method, replies[i])
    assert replies[99]["error"]["code"] == INVALID_PARAMS
    assert replies[99]["error"]["message"].startswith("unknown tool '../bin/sh'; tools: search")
    assert "result" not in replies[99]


def _errors(group: BaseExceptionGroup[MCPError]) -> list[MCPError]:
    return [leaf for exc in group.exceptions
            for leaf in (_errors(exc) if isinstance(exc, BaseExceptionGroup) else [exc])]


@pytest.mark.parametrize("mode", MODES)
def test_over_http_an_unknown_tool_and_a_prompt_are_protocol_errors(
        home: Path, mode: str, tmp_path: Path) -> None:
    async def code_of(url: str, request: Callable[[Client], Awaitable[Any]]) -> int:
        async with (httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"},
                                       timeout=60) as http,
                    Client(streamable_http_client(url, http_client=http), mode=mode) as client):
            raised: list[MCPError] = []
            try:
                answer = await request(client)
            except* MCPError as group:
                raised = _errors(group)
            else:
                raise AssertionError(f"answered {answer!r}")
            [exc] = raised
            return exc.code

    with http_server(home, tmp_path / "serve.log") as server:
        assert anyio.run(code_of, server.url, lambda c: c.call_tool("nope", {})) == INVALID_PARAMS
        assert anyio.run(code_of, server.url, lambda c: c.get_prompt("search")) == \
            METHOD_NOT_FOUND
