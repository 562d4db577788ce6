"""The MCP server as a system under test: stages that search through ``grk serve``.

An MCP stage runs every question through the ``search`` tool of a real ``grk serve``
subprocess, over stdio (the official SDK client starts the server) or streamable
HTTP (the harness starts the server on a free loopback port with a bearer token),
against the very collection its *twin* (the direct stage with the same mode and
settings) searches. The harness then compares the two question by question
(:func:`compare`): the same chunk ids with the same offsets and scores in the same
order, down to :data:`MAX_TOP_K`. Any difference fails the run and is shown
in the report; each call's latency is measured and reported beside the metrics.
"""

from __future__ import annotations

import math
import os
import secrets
import sys
import time
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from contextlib import ExitStack, asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

from evals import report as rpt
from evals.score import metrics
from evals.stages import Stage
from groundkit.collection import Collection
from groundkit.errors import GroundkitError
from groundkit.testing.serve_http import http_server

MCP_ENGINES = {"mcp-stdio": "stdio", "mcp-http": "http"}
MAX_TOP_K = 10
"""How deep an MCP stage ranks (the tool allows 50): deep enough for nDCG@10 and its
comparison with the twin; each hit costs about 0.6 ms, most of it the SDK client's
jsonschema validation of the result (profiled in process), so 50 would add minutes
to ``make eval``."""
SHOWN_DIFFERENCES = 5


class McpRun:
    """A :class:`~evals.harness.StageRun` whose ranking comes from the MCP ``search`` tool."""

    def __init__(self, stage: Stage, coll: Collection, qrels: metrics.Qrels,
                 config: dict[str, Any], description: str, verdicts: dict[str, str]) -> None:
        self.stage, self.coll, self.snapshot = stage, coll, coll.snapshot
        self.home = coll.snapshot.directory.parents[1]  # <home>/collections/<name>
        self.qrels: metrics.Qrels | None = qrels
        self.config = {**config, "engine": stage.engine, "twin": stage.twin,
                       "transport": MCP_ENGINES[stage.engine], "top_k": MAX_TOP_K}
        self.description = description
        self.gate_mode: str | None = None
        self.signals: dict[str, dict[str, float]] = {}
        self.verdicts = verdicts
        self.latencies_ms: list[float] = []
        self._stack = ExitStack()
        self._call: Any = None

    def prime(self, queries: Sequence[str]) -> None:
        self._call = self._stack.enter_context(_client(MCP_ENGINES[self.stage.engine],
                                                       self.home, self.coll.name))

    def rank(self, question: rpt.Question, depth: int, shown: int) -> list[rpt.HitRecord]:
        args = {"query": question.text, "collections": [self.coll.name],
                "top_k": min(depth, MAX_TOP_K), "mode": self.stage.mode}
        t = time.perf_counter_ns()
        out = self._call("search", args)
        self.latencies_ms.append((time.perf_counter_ns() - t) / 1e6)
        records = []
        for hit in out["hits"]:
            if hit["rank"] <= shown:
                records.append(rpt.HitRecord.from_hit(hit, self._verdict(hit["chunk_id"])))
            else:
                records.append(self._unshown(hit))
        return records

    def _unshown(self, hit: dict[str, Any]) -> rpt.HitRecord:
        """A hit below the shown ones, recorded as the direct stages record it (id and
        score); offsets that disagree with the stored chunk are kept, so they differ."""
        stored = self.coll.snapshot.lookup(hit["chunk_id"])
        agrees = stored is not None and (stored.chunk.start, stored.chunk.end, stored.chunk.doc_id
                                         ) == (hit["start"], hit["end"], hit["path"])
        if agrees:
            return rpt.HitRecord(rank=hit["rank"], chunk_id=hit["chunk_id"], doc_id="", start=0,
                                 end=0, score=hit["score"], text="")
        return rpt.HitRecord.from_hit({**hit, "text": ""})

    def close(self) -> None:
        """Stop the server (and the client); the latencies stay in :attr:`latencies_ms`."""
        self._stack.close()

    def _verdict(self, chunk_id: str) -> str:
        """The shown hit's verdict (re-read once per run, whichever stage shows it first)."""
        if chunk_id not in self.verdicts:
            stored = self.coll.snapshot.lookup(chunk_id)
            if stored is None:
                raise GroundkitError(f"the MCP server returned chunk {chunk_id!r}, which the "
                                     "collection does not hold")
            self.verdicts[chunk_id] = self.coll.snapshot.verify(stored).status.value
        return self.verdicts[chunk_id]


def latency(values: Sequence[float]) -> dict[str, float | int | None]:
    """p50 and p99 (nearest rank, as bench/common.py) and the mean, in milliseconds."""
    if not values:
        return {"p50": None, "p99": None, "mean": None, "n": 0}
    ordered = sorted(values)

    def rank(pct: float) -> float:
        at = min(len(ordered), max(1, math.ceil(len(ordered) * pct / 100)))
        return round(ordered[at - 1], 3)

    return {"p50": rank(50), "p99": rank(99), "mean": round(sum(values) / len(values), 3),
            "n": len(values)}


# -- comparing with the twin -------------------------------------------------------------


def compare(stages: Sequence[rpt.StageResult], twins: Mapping[str, str]) -> dict[str, Any]:
    """Each MCP stage against its twin: questions compared, differing, the first differences."""
    by_name = {s.name: s for s in stages}
    block: dict[str, Any] = {}
    for name, twin in twins.items():
        if name not in by_name or twin not in by_name:
            continue
        mine, theirs = by_name[name].hits, by_name[twin].hits
        differing = []
        for qid, hits in mine.items():
            depth = len(hits) if len(hits) < MAX_TOP_K else MAX_TOP_K
            a = [_key(h) for h in hits[:depth]]
            b = [_key(h) for h in theirs.get(qid, [])[:MAX_TOP_K]][: max(depth, 0)]
            if a != b:
                differing.append({"query_id": qid, "first_rank": _first_difference(a, b),
                                  "mcp": a[:3], "direct": b[:3]})
        block[name] = {"twin": twin, "transport": by_name[name].config.get("transport"),
                       "questions": len(mine), "differing": len(differing),
                       "first_differences": differing[:SHOWN_DIFFERENCES]}
    return block


def _key(hit: rpt.HitRecord) -> tuple[Any, ...]:
    return (hit.rank, hit.chunk_id, hit.start, hit.end, hit.score)


def _first_difference(a: list[tuple[Any, ...]], b: list[tuple[Any, ...]]) -> int:
    for i, (x, y) in enumerate(zip(a, b, strict=False), start=1):
        if x != y:
            return i
    return min(len(a), len(b)) + 1


def checks(block: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One report check per MCP stage: zero differing questions, or the run fails."""
    return [{"kind": "mcp-twin", "stage": name, "measure": f"questions differing from {b['twin']}",
             "observed": float(b["differing"]), "expected": 0.0, "tolerance": 0.0,
             "passed": b["differing"] == 0} for name, b in block.items()]


# -- clients -------------------------------------------------------------------------------


@contextmanager
def _client(transport: str, home: Path, name: str) -> Iterator[Any]:
    """``call(tool, args) -> structured result`` over a real ``grk serve`` subprocess.

    The SDK client is async; it lives in a blocking portal's event loop (entered and
    exited by one task there), and the harness's synchronous loop calls into it.
    """
    from anyio.from_thread import start_blocking_portal

    with ExitStack() as stack:
        portal = stack.enter_context(start_blocking_portal())
        if transport == "http":
            token = secrets.token_hex(16)
            url, _ = stack.enter_context(http_server(home, token, collections=[name]))
            client = stack.enter_context(portal.wrap_async_context_manager(_http(url, token)))
        else:
            client = stack.enter_context(portal.wrap_async_context_manager(_stdio(home, name)))

        def call(tool: str, args: dict[str, Any]) -> dict[str, Any]:
            result = portal.call(client.call_tool, tool, args)
            if result.is_error:
                text = " ".join(getattr(c, "text", "") for c in result.content)
                raise GroundkitError(f"MCP {tool} failed: {text}")
            return dict(result.structured_content)

        yield call


@asynccontextmanager
async def _stdio(home: Path, name: str) -> AsyncIterator[Any]:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(
        command=sys.executable, args=["-m", "groundkit", "serve", "--home", str(home),
                                      "--collection", name], env=dict(os.environ))
    with open(os.devnull, "w") as errlog:
        async with Client(stdio_client(params, errlog=errlog)) as client:
            yield client


@asynccontextmanager
async def _http(url: str, token: str) -> AsyncIterator[Any]:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {token}"}
    async with (httpx2.AsyncClient(headers=headers, timeout=120) as http,
                Client(streamable_http_client(url, http_client=http)) as client):
        yield client
