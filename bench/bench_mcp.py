"""MCP search-tool latency over stdio and streamable HTTP, on golden v1.

Indexes ``golden/v1/docs`` into a throwaway home, starts ``grk serve`` as a
subprocess (stdio, then HTTP on a free loopback port), and times the ``search``
tool (BM25, top_k 10) for every golden question, two ways:

* ``sdk``: as the MCP SDK's Python client sees it (both protocol revisions),
  including the client's own parsing and output-schema validation;
* ``raw``: one JSON-RPC request written and its response read, with no client
  library, which is the server's share plus the transport.

The in-process Python API is timed on the same queries for reference.
Goal: p50 under 10 ms for BM25.

    python bench/bench_mcp.py [--rounds N]
"""

from __future__ import annotations

import argparse
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

import anyio
import httpx
import httpx2
from common import ROOT as REPO
from common import Stopwatch, latency_summary, load_average, machine, timed_ms, write_result
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

GOLDEN = REPO / "golden" / "v1"
REVISIONS = {"2025-11-25": "legacy", "2026-07-28": "2026-07-28"}


def questions() -> list[str]:
    lines = (GOLDEN / "questions.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line)["question"] for line in lines if line.strip()]


def calls_summary(ms_values: list[float]) -> dict[str, float]:
    """:func:`common.latency_summary` of per-call milliseconds, its count named ``calls``."""
    s = latency_summary(ms_values)
    return {"calls": s.pop("n"), **s}


async def time_searches(client: Client, queries: list[str], rounds: int) -> list[float]:
    for query in queries[:20]:  # warm up: imports, the BM25 load, the page cache
        await client.call_tool("search", {"query": query})
    times = []
    for _ in range(rounds):
        for query in queries:
            with Stopwatch() as sw:
                result = await client.call_tool("search", {"query": query, "top_k": 10})
            times.append(sw.ms)
            if result.is_error:
                raise SystemExit(f"search failed: {result.content}")
    return times


def over_stdio(home: str, mode: str, queries: list[str], rounds: int) -> list[float]:
    params = StdioServerParameters(command=sys.executable, cwd=REPO,
                                   args=["-m", "groundkit", "serve", "--home", home])

    async def main() -> list[float]:
        with open(os.devnull, "w") as errlog:
            async with Client(stdio_client(params, errlog=errlog), mode=mode) as client:
                return await time_searches(client, queries, rounds)

    return anyio.run(main)


def over_http(home: str, queries: list[str], rounds: int) -> dict[str, list[float]]:
    """SDK clients of both revisions, then raw requests, against one HTTP server."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "groundkit", "serve", "--home", home, "--transport", "http",
         "--port", "0"], cwd=REPO, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, text=True)
    assert proc.stderr
    try:
        if not select.select([proc.stderr], [], [], 60)[0]:
            raise SystemExit("grk serve did not start")
        url = proc.stderr.readline().split(" at ")[1].split()[0]
        results = {}
        for revision, mode in REVISIONS.items():
            results[f"sdk/{revision}"] = anyio.run(_http_run, url, mode,
                                                   lambda c: time_searches(c, queries, rounds))
        results["raw/2025-11-25"] = raw_http(url, queries, rounds)
        return results
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)
        proc.stderr.close()


async def _http_run(url: str, mode: str, body: Callable[[Client], Awaitable[Any]]) -> Any:
    async with (httpx2.AsyncClient(timeout=60) as http,
                Client(streamable_http_client(url, http_client=http), mode=mode) as client):
        return await body(client)


INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {},
    "clientInfo": {"name": "bench", "version": "0"}}}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def _call(i: int, query: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": i, "method": "tools/call",
            "params": {"name": "search", "arguments": {"query": query, "top_k": 10}}}


def _time_raw(send: Callable[[dict[str, Any]], bytes], queries: list[str],
              rounds: int) -> list[float]:
    for i, query in enumerate(queries[:20]):
        send(_call(i + 1, query))
    times = []
    for i, query in enumerate(queries * rounds):
        ms, reply = timed_ms(partial(send, _call(i + 100, query)))
        times.append(ms)
        if b'"isError":false' not in reply:
            raise SystemExit(f"search failed: {reply[:300]!r}")
    return times


def raw_stdio(home: str, queries: list[str], rounds: int) -> list[float]:
    proc = subprocess.Popen([sys.executable, "-m", "groundkit", "serve", "--home", home],
                            cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)
    assert proc.stdin and proc.stdout
    stdin, stdout = proc.stdin, proc.stdout

    def send(message: dict[str, Any]) -> bytes:
        stdin.write(json.dumps(message).encode() + b"\n")
        stdin.flush()
        return stdout.readline() if "id" in message else b""

    try:
        send(INIT)
        send(INITIALIZED)
        return _time_raw(send, queries, rounds)
    finally:
        stdin.close()
        proc.wait(timeout=30)
        stdout.close()


def raw_http(url: str, queries: list[str], rounds: int) -> list[float]:
    headers = {"content-type": "application/json",
               "accept": "application/json, text/event-stream"}
    with httpx.Client(timeout=60) as http:
        reply = http.post(url, json=INIT, headers=headers)
        headers |= {"mcp-session-id": reply.headers["mcp-session-id"],
                    "mcp-protocol-version": "2025-11-25"}
        http.post(url, json=INITIALIZED, headers=headers)
        return _time_raw(lambda m: http.post(url, json=m, headers=headers).content,
                         queries, rounds)


def in_process(home: str, queries: list[str], rounds: int) -> list[float]:
    from groundkit.collection import Collection

    with Collection.open("golden", home) as coll:
        for query in queries[:20]:
            coll.search(query)
        times = []
        for _ in range(rounds):
            for query in queries:
                times.append(timed_ms(partial(coll.search, query, top_k=10))[0])
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=2, help="passes over the questions")
    args = parser.parse_args()
    from groundkit.collection import IndexConfig, index

    queries = questions()
    facts = machine()
    with tempfile.TemporaryDirectory() as home:
        report = index("golden", IndexConfig(roots=(str(GOLDEN / "docs"),)), home=home)
        runs = {"python_api": calls_summary(in_process(home, queries, args.rounds))}
        for revision, mode in REVISIONS.items():
            runs[f"stdio/sdk/{revision}"] = calls_summary(
                over_stdio(home, mode, queries, args.rounds))
        runs["stdio/raw/2025-11-25"] = calls_summary(raw_stdio(home, queries, args.rounds))
        for name, times in over_http(home, queries, args.rounds).items():
            runs[f"http/{name}"] = calls_summary(times)
    result = {"corpus": "golden/v1", "documents": report.added, "chunks": report.chunks,
              "queries": len(queries), "rounds": args.rounds, "tool": "search (bm25, top_k 10)",
              "load_average_1min": load_average()[0], "cpus": facts["cpu_count"],
              "runs": runs, "goal": {"p50_ms": "< 10"}}
    out = write_result("mcp", result)
    print(f"MCP search latency on golden v1 ({result['documents']} documents, "
          f"{result['chunks']} chunks, {len(queries)} questions x {args.rounds})")
    for name, s in runs.items():
        flag = "" if name == "python_api" else ("  ok" if s["p50_ms"] < 10 else "  OVER GOAL")
        print(f"  {name:<22} p50 {s['p50_ms']:7.3f} ms   p99 {s['p99_ms']:7.3f} ms   "
              f"mean {s['mean_ms']:7.3f} ms{flag}")
    print(f"  goal: p50 < 10 ms; load average {result['load_average_1min']} on "
          f"{result['cpus']} CPUs; written to {out.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
