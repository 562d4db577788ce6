"""The MCP server as a system under test: stages that search through ``grk serve``.

An MCP stage runs every question through the ``search`` tool of a real ``grk serve``
subprocess, over stdio or streamable HTTP (on a free loopback port with a fresh bearer
token), against the very collection its *twin* (the direct stage with the same mode and
settings) searches. The client speaks the protocol on the wire (:mod:`evals.mcp_wire`:
handshake, ids, every result validated against the tool's declared output schema).
The harness then compares the two question by question (:func:`compare`): the same
chunk ids with the same offsets and scores in the same order, down to
:data:`MAX_TOP_K`. Any difference fails the run and is shown in the report; each
call's latency is measured and reported beside the metrics.
"""

from __future__ import annotations

import math
import secrets
import time
from collections.abc import Mapping, Sequence
from contextlib import ExitStack
from typing import Any, Protocol

from evals import mcp_wire
from evals import report as rpt
from evals.score import metrics
from evals.stages import Stage
from groundkit.collection import Collection
from groundkit.collection.snapshot import Snapshot
from groundkit.errors import GroundkitError
from groundkit.store import StoredChunk

MCP_ENGINES = {"mcp-stdio": "stdio", "mcp-http": "http"}
MAX_TOP_K = 10
"""How deep an MCP stage ranks (the tool allows 50): deep enough for nDCG@10 and its
comparison with the twin, and every hit is one more for the server to build and send."""
SHOWN_DIFFERENCES = 5


class VerdictCache(Protocol):
    """The suite's verdicts, one re-read per span (:class:`evals.golden.evidence.Verdicts`)."""

    def of(self, snap: Snapshot, stored: StoredChunk) -> str: ...


class McpRun:
    """A :class:`~evals.harness.StageRun` whose ranking comes from the MCP ``search`` tool."""

    def __init__(self, stage: Stage, coll: Collection, qrels: metrics.Qrels,
                 config: dict[str, Any], description: str, verdicts: VerdictCache) -> None:
        self.stage, self.coll, self.snapshot = stage, coll, coll.snapshot
        self.home = coll.snapshot.directory.parents[1]  # <home>/collections/<name>
        self.qrels: metrics.Qrels | None = qrels
        self.config = {**config, "engine": stage.engine, "twin": stage.twin,
                       "transport": MCP_ENGINES[stage.engine], "top_k": MAX_TOP_K}
        self.depth = MAX_TOP_K
        """It ranks this deep whatever the suite asks (:class:`evals.harness.StageRun`)."""
        self.description = description
        self.gate_mode: str | None = None
        self.signals: dict[str, dict[str, float]] = {}
        self.verdicts = verdicts
        self.latencies_ms: list[float] = []
        self._stack = ExitStack()
        self._call: Any = None
        self._known: dict[str, StoredChunk | None] = {}

    def prime(self, queries: Sequence[str]) -> None:
        """Start the server and a client; the collection is re-opened here, so a stage
        may run in another thread than the one that opened it (SQLite's rule)."""
        self.coll = self._stack.enter_context(Collection.open(self.coll.name, self.home))
        transport = MCP_ENGINES[self.stage.engine]
        self._call = self._stack.enter_context(mcp_wire.session(
            transport, self.home, self.coll.name, secrets.token_hex(16))).call

    def rank(self, question: rpt.Question, depth: int, shown: int) -> list[rpt.HitRecord]:
        # Uncollapsed: the twin ranks every copy of a passage, and so must this stage.
        args = {"query": question.text, "collections": [self.coll.name],
                "top_k": min(depth, MAX_TOP_K), "mode": self.stage.mode, "collapse": False}
        t = time.perf_counter_ns()
        out = self._call("search", args)
        self.latencies_ms.append((time.perf_counter_ns() - t) / 1e6)
        hits = out["hits"]
        records = []
        for hit, stored in zip(hits, self._stored([h["chunk_id"] for h in hits]), strict=True):
            if hit["rank"] <= shown:
                records.append(rpt.HitRecord.from_hit(hit, self._verdict(hit["chunk_id"],
                                                                         stored)))
            else:
                records.append(_unshown(hit, stored))
        return records

    def _stored(self, chunk_ids: Sequence[str]) -> list[StoredChunk | None]:
        """The stored chunks the hits name, read once per run: the collection's current
        chunks in one query per call, any other id by itself (``None`` if unknown)."""
        snap, known = self.coll.snapshot, self._known
        positions = snap.positions()
        wanted = [c for c in dict.fromkeys(chunk_ids) if c not in known]
        current = [c for c in wanted if c in positions]
        known.update(zip(current, snap.stored_chunks([positions[c] for c in current]),
                         strict=True))
        known.update((c, snap.lookup(c)) for c in wanted if c not in positions)
        return [known[c] for c in chunk_ids]

    def close(self) -> None:
        """Stop the server (and the client); the latencies stay in :attr:`latencies_ms`."""
        self._stack.close()

    def _verdict(self, chunk_id: str, stored: StoredChunk | None) -> str:
        """The shown hit's verdict (re-read once per run, whichever stage shows it first)."""
        if stored is None:
            raise GroundkitError(f"the MCP server returned chunk {chunk_id!r}, which the "
                                 "collection does not hold")
        return self.verdicts.of(self.coll.snapshot, stored)


def _unshown(hit: dict[str, Any], stored: StoredChunk | None) -> rpt.HitRecord:
    """A hit below the shown ones, recorded as the direct stages record it (id, score and,
    this high in the ranking, document; no passage, heading path or source); offsets that
    disagree with the stored chunk are kept, so they differ."""
    agrees = stored is not None and (stored.chunk.start, stored.chunk.end, stored.chunk.doc_id
                                     ) == (hit["start"], hit["end"], hit["path"])
    if agrees:
        return rpt.HitRecord(rank=hit["rank"], chunk_id=hit["chunk_id"], doc_id=hit["path"],
                             start=0, end=0, score=hit["score"], text="")
    return rpt.HitRecord.from_hit({**hit, "text": "", "headings": (), "source": None})


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
