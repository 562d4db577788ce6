"""A load driver for ``grk serve --transport http``: many concurrent MCP clients, raw JSON-RPC.

Each client opens its own MCP session (``initialize``, ``notifications/initialized``)
with its own HTTP connection and then calls the ``search`` tool until the shared budget
of calls is spent; every call's latency and outcome is recorded. Optionally a *stalled*
client sends a request whose large reply it never reads, holding its connection open for
the whole run: the others must not wait for it. Used by ``tests/mcp_server/test_load.py``
and ``bench/bench_mcp_load.py``; it needs ``httpx`` and ``anyio`` (the ``mcp`` extra).
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

PROTOCOL = "2025-11-25"
INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
    "protocolVersion": PROTOCOL, "capabilities": {},
    "clientInfo": {"name": "groundkit-load", "version": "0"}}}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


@dataclass
class LoadResult:
    """Every call's latency (ms, in completion order) and every failure's description."""

    latencies_ms: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    wall_s: float = 0.0
    samples: list[tuple[int, float]] = field(default_factory=list)
    """(calls done, a caller-supplied measurement) taken every ``sample_every`` calls."""


def search_call(i: int, query: str, top_k: int = 10) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": i, "method": "tools/call",
            "params": {"name": "search", "arguments": {"query": query, "top_k": top_k}}}


def reply_of(body: bytes) -> dict[str, Any]:
    """The JSON-RPC message of a reply, plain JSON or one server-sent event."""
    text = body.decode("utf-8")
    if text.lstrip().startswith("{"):
        return dict(json.loads(text))
    data = [line[5:].strip() for line in text.splitlines() if line.startswith("data:")]
    return dict(json.loads(data[-1])) if data else {}


def run_load(url: str, token: str, queries: Sequence[str], *, calls: int, clients: int,
             stalled: bool = False, sample: Callable[[], float] | None = None,
             sample_every: int = 1000) -> LoadResult:
    """``calls`` searches from ``clients`` concurrent sessions; see the module docstring."""
    import anyio

    result = LoadResult()
    budget = iter(range(calls))
    blocker = _stall(url, token, queries[0]) if stalled else None
    started = time.perf_counter()
    try:
        async def main() -> None:
            async with anyio.create_task_group() as group:
                for c in range(clients):
                    group.start_soon(_client, url, token, queries, budget, result, c,
                                     sample, sample_every)

        anyio.run(main)
    finally:
        result.wall_s = time.perf_counter() - started
        if blocker is not None:
            blocker.close()
    return result


async def _client(url: str, token: str, queries: Sequence[str], budget: Any,
                  result: LoadResult, c: int, sample: Callable[[], float] | None,
                  sample_every: int) -> None:
    import httpx

    headers = {"content-type": "application/json", "authorization": f"Bearer {token}",
               "accept": "application/json, text/event-stream"}
    async with httpx.AsyncClient(timeout=120, limits=httpx.Limits(max_connections=1)) as http:
        try:
            reply = await http.post(url, json=INIT, headers=headers)
            headers |= {"mcp-session-id": reply.headers["mcp-session-id"],
                        "mcp-protocol-version": PROTOCOL}
            await http.post(url, json=INITIALIZED, headers=headers)
        except Exception as exc:  # noqa: BLE001 - every failure is counted, none raised
            result.errors.append(f"client {c}: initialize failed: {exc!r}")
            return
        for i in budget:
            t = time.perf_counter_ns()
            try:
                reply = await http.post(url, json=search_call(i + 1, queries[i % len(queries)]),
                                        headers=headers)
                message = reply_of(reply.content)
                ok = reply.status_code == 200 and message.get("result", {}).get("isError") is False
            except Exception as exc:  # noqa: BLE001
                ok, message = False, {"exception": repr(exc)}
            result.latencies_ms.append((time.perf_counter_ns() - t) / 1e6)
            if not ok:
                result.errors.append(f"call {i}: {str(message)[:200]}")
            done = len(result.latencies_ms)
            if sample is not None and done % sample_every == 0:
                result.samples.append((done, sample()))


def _stall(url: str, token: str, query: str, requests: int = 64) -> socket.socket:
    """A session that asks for ``requests`` large replies on one connection (HTTP/1.1
    pipelining) and never reads them: the server's writes to it block once the socket
    buffers are full."""
    import httpx

    headers = {"content-type": "application/json", "authorization": f"Bearer {token}",
               "accept": "application/json, text/event-stream"}
    reply = httpx.post(url, json=INIT, headers=headers, timeout=60)
    session = reply.headers["mcp-session-id"]
    httpx.post(url, json=INITIALIZED, timeout=60,
               headers={**headers, "mcp-session-id": session, "mcp-protocol-version": PROTOCOL})
    parts = urlsplit(url)
    sock = socket.create_connection((parts.hostname or "127.0.0.1", parts.port or 80))
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    for i in range(requests):
        body = json.dumps(search_call(10_000 + i, query, top_k=50)).encode()
        sock.sendall(
            f"POST {parts.path} HTTP/1.1\r\nHost: {parts.netloc}\r\n"
            f"Authorization: Bearer {token}\r\nContent-Type: application/json\r\n"
            "Accept: application/json, text/event-stream\r\n"
            f"Mcp-Session-Id: {session}\r\nMcp-Protocol-Version: {PROTOCOL}\r\n"
            f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
    return sock
