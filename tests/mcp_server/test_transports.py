"""``grk serve`` as a real process: stdio and streamable HTTP, through the SDK's client.

Also: stdout carries nothing but JSON-RPC, the HTTP guard refuses bad Host,
Origin and tokens, and 50 concurrent searches all come back right. Read-only
stores are in test_readonly.py.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import IO, Any

import anyio
import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp_helpers import MODES, N_DOCS, many_docs, write_tree

from groundkit.collection import Collection, IndexConfig, index

REPO = Path(__file__).resolve().parents[2]
TOKEN = "test-token-0123456789abcdef"
ORIGIN = "http://localhost:6274"
INIT = {"protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"}}


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("mcp")
    index("k", IndexConfig(roots=(str(write_tree(base / "docs", many_docs())),)),
          home=base / "home")
    return base / "home"


def _serve_args(home: Path, *extra: str) -> list[str]:
    return ["-m", "groundkit", "serve", "--home", str(home), *extra]


def _readline(stream: IO[bytes], deadline: float) -> bytes:
    """One line from a child's pipe, failing (not hanging) past ``deadline``."""
    ready, _, _ = select.select([stream], [], [], max(0.0, deadline - time.monotonic()))
    assert ready, "timed out waiting for the server"
    return stream.readline()


# ---- stdio ---------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_stdio_subprocess_serves_every_tool_under_both_protocol_revisions(
        home: Path, tmp_path: Path, mode: str) -> None:
    params = StdioServerParameters(command=sys.executable, args=_serve_args(home), cwd=REPO)

    async def main() -> tuple[str, list[str], dict[str, Any]]:
        with open(tmp_path / "stderr.txt", "w") as errlog:
            async with Client(stdio_client(params, errlog=errlog), mode=mode) as client:
                names = sorted(t.name for t in (await client.list_tools()).tools)
                found = (await client.call_tool("search", {"query": "word07"})).structured_content
                fetched = await client.call_tool("fetch_chunk",
                                                 {"chunk_id": found["hits"][0]["chunk_id"]})
                return client.session.protocol_version, names, fetched.structured_content

    version, names, fetched = anyio.run(main)
    assert version == {"legacy": "2025-11-25"}.get(mode, mode)
    assert names == ["fetch_chunk", "index_status", "list_collections", "search"]
    assert fetched["status"] == "verified" and fetched["path"] == "doc07.md"
    assert "grk serve: MCP over stdio" in (tmp_path / "stderr.txt").read_text()


def test_stdio_writes_nothing_but_json_rpc_to_stdout_and_logs_to_stderr(
        home: Path, tmp_path: Path) -> None:
    broken = tmp_path / "home"
    shutil.copytree(home, broken)
    with Collection.open("k", broken) as coll:
        (coll.snapshot.generation_dir / "rowids.npy").write_bytes(b"junk")  # forces a warning log
    proc = subprocess.Popen([sys.executable, *_serve_args(broken)], cwd=REPO,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdin and proc.stdout and proc.stderr
    deadline = time.monotonic() + 60
    requests = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
         "params": {"name": "search", "arguments": {"query": "logs"}}},
        {"jsonrpc": "2.0", "id": 4, "method": "tools/call",
         "params": {"name": "index_status", "arguments": {"collection": "k"}}},
        {"jsonrpc": "2.0", "id": 5, "method": "tools/call",
         "params": {"name": "search", "arguments": {"query": "logs", "bogus": 1}}},
    ]
    replies = []
    try:
        for request in requests:
            proc.stdin.write(json.dumps(request).encode() + b"\n")
            proc.stdin.flush()
            if "id" in request:
                replies.append(_readline(proc.stdout, deadline))
        proc.stdin.close()
        rest = proc.stdout.read()
        assert proc.wait(timeout=30) == 0
    finally:
        proc.kill()
        proc.wait()
        err = proc.stderr.read().decode()
        proc.stdout.close()
        proc.stderr.close()
    messages = [json.loads(line) for line in replies + rest.splitlines() if line.strip()]
    assert [m["id"] for m in messages] == [1, 2, 3, 4, 5]
    assert all(m["jsonrpc"] == "2.0" for m in messages)
    assert messages[2]["result"]["isError"] and messages[4]["result"]["isError"]
    assert "grk serve: MCP over stdio" in err and "index problem" in err
    assert "Traceback" not in err


# ---- streamable HTTP -----------------------------------------------------------------


@pytest.fixture(scope="module")
def http_url(home: Path) -> Iterator[str]:
    env = {**os.environ, "GRK_TEST_TOKEN": TOKEN}
    proc = subprocess.Popen(
        [sys.executable, *_serve_args(home, "--transport", "http", "--port", "0",
                                      "--token-env", "GRK_TEST_TOKEN", "--allow-origin", ORIGIN)],
        cwd=REPO, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE)
    assert proc.stdout and proc.stderr
    try:
        deadline, line = time.monotonic() + 60, ""
        while "streamable HTTP at http://127.0.0.1:" not in line:
            line = _readline(proc.stderr, deadline).decode()
            assert line, "grk serve exited"
        yield line.split(" at ")[1].split()[0]
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=20)
        finally:
            proc.kill()
            proc.wait()
            out = proc.stdout.read()
            proc.stdout.close()
            proc.stderr.close()
    assert out == b""  # logs never go to stdout, on any transport


@asynccontextmanager
async def _client(url: str, mode: str, token: str = TOKEN) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {token}"}
    async with (httpx2.AsyncClient(headers=headers, timeout=60) as http,
                Client(streamable_http_client(url, http_client=http), mode=mode) as client):
        yield client


def _run(url: str, mode: str, body: Callable[[Client], Awaitable[Any]]) -> Any:
    async def main() -> Any:
        async with _client(url, mode) as client:
            return await body(client)

    return anyio.run(main)


@pytest.mark.parametrize("mode", MODES)
def test_http_serves_every_tool_under_both_protocol_revisions(http_url: str, mode: str) -> None:
    async def body(client: Client) -> tuple[str, list[Any]]:
        found = await client.call_tool("search", {"query": "deployment logs", "verify": True})
        results = [found] + [await client.call_tool(name, args) for name, args in [
            ("fetch_chunk", {"chunk_id": found.structured_content["hits"][0]["chunk_id"]}),
            ("list_collections", {}), ("index_status", {"collection": "k"})]]
        return client.session.protocol_version, results

    version, results = _run(http_url, mode, body)
    assert version == {"legacy": "2025-11-25"}.get(mode, mode)
    assert not any(r.is_error for r in results)
    search, fetched, listed, status = (r.structured_content for r in results)
    assert search["hits"][0]["path"] == "logs.md"
    assert search["hits"][0]["verdict"]["status"] == fetched["status"] == "verified"
    assert listed["collections"][0]["documents"] == N_DOCS + 1
    assert status["retriever"]["bm25_loads"] == 1


def test_fifty_concurrent_http_searches_all_return_the_right_hits(
        http_url: str, home: Path) -> None:
    with Collection.open("k", home) as coll:
        expected = {i: [(h.chunk.chunk_id, h.score) for h in coll.search(f"word{i:02d} logs",
                                                                         top_k=3)]
                    for i in range(N_DOCS)}
    got: dict[int, list[tuple[str, float]]] = {}

    async def one(client: Client, i: int) -> None:
        result = await client.call_tool("search", {"query": f"word{i:02d} logs", "top_k": 3})
        got[i] = [(h["chunk_id"], h["score"]) for h in result.structured_content["hits"]]

    async def main() -> None:
        async with (_client(http_url, "legacy") as a, _client(http_url, "2026-07-28") as b,
                    anyio.create_task_group() as tg):
            for i in range(N_DOCS):
                tg.start_soon(one, (a, b)[i % 2], i)

    anyio.run(main)
    assert got == expected
    assert all(expected[i][0][0] != expected[j][0][0] for i in range(3) for j in range(i))


def _post(url: str, headers: dict[str, str]) -> httpx.Response:
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT}
    base = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    return httpx.post(url, json=body, headers={**base, **headers}, timeout=30)


@pytest.mark.parametrize(("headers", "status"), [
    ({"authorization": f"Bearer {TOKEN}"}, 200),
    ({"authorization": f"bearer {TOKEN}", "origin": ORIGIN}, 200),
    ({}, 401),
    ({"authorization": "Bearer wrong-token-0123456789abcdef"}, 401),
    ({"authorization": f"Basic {TOKEN}"}, 401),
    ({"authorization": f"Bearer {TOKEN}", "host": "evil.example"}, 421),
    ({"authorization": f"Bearer {TOKEN}", "host": "localhost:1"}, 421),
    ({"authorization": f"Bearer {TOKEN}", "origin": "http://evil.example"}, 403),
    ({"authorization": f"Bearer {TOKEN}", "origin": "http://localhost:6275"}, 403),
    ({"authorization": f"Bearer {TOKEN}", "origin": "null"}, 403),
])
def test_http_refuses_a_bad_host_origin_or_token(
        http_url: str, headers: dict[str, str], status: int) -> None:
    response = _post(http_url, headers)
    assert response.status_code == status, response.text
    if status == 401:
        assert response.headers["www-authenticate"].startswith("Bearer")


def test_http_refuses_an_oversized_request_body(http_url: str) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "search", "arguments": {"query": "x" * 300_000}}}
    response = httpx.post(http_url, json=body, timeout=30, headers={
        "authorization": f"Bearer {TOKEN}", "accept": "application/json, text/event-stream"})
    assert response.status_code == 413


@pytest.mark.parametrize("mode", MODES)
def test_an_sdk_client_with_a_wrong_token_gets_no_answer(http_url: str, mode: str) -> None:
    async def main() -> None:
        async with _client(http_url, mode, token="wrong-token-0123456789abcdef") as client:
            await client.list_tools()

    with pytest.raises(BaseException) as info:  # the SDK raises it inside exception groups
        anyio.run(main)
    assert "MCPError" in repr(info.value) and "tools" not in repr(info.value)


# ---- read-only collections, unprivileged server --------------------------------------
