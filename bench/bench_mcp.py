"""MCP search-tool latency over stdio and streamable HTTP, on golden v1.

Indexes ``golden/v1/docs`` into a throwaway home, starts ``grk serve`` as a
subprocess (stdio, then HTTP on a free loopback port), and times the ``search``
tool (BM25, top_k 10) for every golden question, as the SDK's client sees it:
JSON-RPC framing, validation, the tool, serialization and the transport.
Both protocol revisions are measured. The in-process Python API is timed on the
same queries for reference. Goal: p50 under 10 ms for BM25.

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
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import httpx2
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

REPO = Path(__file__).resolve().parent.parent
GOLDEN = REPO / "golden" / "v1"
OUT = REPO / ".bench" / "mcp.json"
REVISIONS = {"2025-11-25": "legacy", "2026-07-28": "2026-07-28"}


def questions() -> list[str]:
    lines = (GOLDEN / "questions.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line)["question"] for line in lines if line.strip()]


def summary(times: list[float]) -> dict[str, float]:
    times = sorted(times)
    return {"calls": len(times), "p50_ms": round(times[len(times) // 2] * 1e3, 3),
            "p99_ms": round(times[min(len(times) - 1, int(len(times) * 0.99))] * 1e3, 3),
            "mean_ms": round(sum(times) / len(times) * 1e3, 3)}


async def time_searches(client: Client, queries: list[str], rounds: int) -> list[float]:
    for query in queries[:20]:  # warm up: imports, the BM25 load, the page cache
        await client.call_tool("search", {"query": query})
    times = []
    for _ in range(rounds):
        for query in queries:
            start = time.perf_counter()
            result = await client.call_tool("search", {"query": query, "top_k": 10})
            times.append(time.perf_counter() - start)
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
            results[revision] = anyio.run(_http_run, url, mode,
                                          lambda c: time_searches(c, queries, rounds))
        return results
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)
        proc.stderr.close()


async def _http_run(url: str, mode: str, body: Callable[[Client], Awaitable[Any]]) -> Any:
    async with (httpx2.AsyncClient(timeout=60) as http,
                Client(streamable_http_client(url, http_client=http), mode=mode) as client):
        return await body(client)


def in_process(home: str, queries: list[str], rounds: int) -> list[float]:
    from groundkit.collection import Collection

    with Collection.open("golden", home) as coll:
        for query in queries[:20]:
            coll.search(query)
        times = []
        for _ in range(rounds):
            for query in queries:
                start = time.perf_counter()
                coll.search(query, top_k=10)
                times.append(time.perf_counter() - start)
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=2, help="passes over the questions")
    args = parser.parse_args()
    from groundkit.collection import IndexConfig, index

    queries = questions()
    with tempfile.TemporaryDirectory() as home:
        report = index("golden", IndexConfig(roots=(str(GOLDEN / "docs"),)), home=home)
        runs = {"python_api": summary(in_process(home, queries, args.rounds))}
        for revision, mode in REVISIONS.items():
            runs[f"stdio/{revision}"] = summary(over_stdio(home, mode, queries, args.rounds))
        for revision, times in over_http(home, queries, args.rounds).items():
            runs[f"http/{revision}"] = summary(times)
    result = {"corpus": "golden/v1", "documents": report.added, "chunks": report.chunks,
              "queries": len(queries), "rounds": args.rounds, "tool": "search (bm25, top_k 10)",
              "runs": runs, "goal": {"p50_ms": "< 10"}}
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_text(json.dumps(result, indent=2) + "\n")
    print(f"MCP search latency on golden v1 ({result['documents']} documents, "
          f"{result['chunks']} chunks, {len(queries)} questions x {args.rounds})")
    for name, s in runs.items():
        flag = "" if name == "python_api" else ("  ok" if s["p50_ms"] < 10 else "  OVER GOAL")
        print(f"  {name:<18} p50 {s['p50_ms']:7.3f} ms   p99 {s['p99_ms']:7.3f} ms   "
              f"mean {s['mean_ms']:7.3f} ms{flag}")
    print(f"  goal: p50 < 10 ms; written to {OUT.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
