"""The MCP server: four read-only tools over the collections of one home.

``search``, ``fetch_chunk``, ``list_collections`` and ``index_status`` (see
``docs/mcp-clients.md`` and ADR-0008). This is the only module that imports the
``mcp`` SDK; ``grk serve`` imports it lazily.

* Inputs are strict: every tool's argument model forbids unknown keys, and
  sizes are bounded (query length, ``top_k``, number of collections).
* Outputs are structured (an ``outputSchema`` per tool) and the same JSON is
  repeated as a text block; that JSON is at most :data:`MAX_RESPONSE_BYTES`
  bytes, document text being cut (and flagged) to fit.
* Domain failures (unknown collection, damaged index, unavailable mode) are
  tool results with ``isError``; their messages carry no traceback and no path.
* Retrieved text is labelled ``content_trust: "untrusted-document-text"``.
* Nothing here writes: collections are opened read-only, cached per server,
  and re-opened when a new generation is published.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Annotated, Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.server.transport_security import TransportSecuritySettings
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, ConfigDict

from . import __version__, store
from .collection import Collection, list_collections, resolve_home
from .errors import CollectionNotFoundError, GroundkitError, IndexMismatchError, IntegrityError
from .mcp_schema import (
    CONTENT_TRUST,
    MAX_LIST_ITEMS,
    MAX_REQUEST_BYTES,
    UNTRUSTED_NOTE,
    CheckChanges,
    ChunkId,
    CollectionInfo,
    CollectionName,
    CollectionNames,
    FetchOutput,
    ListCollectionsOutput,
    Mode,
    Query,
    RetrieverStats,
    SearchOutput,
    StatusOutput,
    TopK,
    Verify,
    fetch_output,
    fit_fetch,
    fit_search,
    fit_status,
    hit_output,
    status_output,
)
from .model import COLLECTION_NAME, Hit, split_chunk_id
from .status import collection_status
from .verify import unresolvable

log = logging.getLogger(__name__)

def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


@dataclass
class _Entry:
    coll: Collection
    users: int = 0
    retired: bool = False
    bm25_loaded: bool = False


@dataclass
class _Counters:
    opens: int = 0
    bm25_loads: int = 0
    generation_changes: int = 0
    last_generation_change_at: str | None = None


@dataclass
class CollectionPool:
    """Opened collections, one per name, re-opened when a new generation is published.

    A lease keeps a collection open while a tool uses it; a collection retired by
    a newer generation is closed when its last lease ends.
    """

    home: str | os.PathLike[str] | None = None
    only: tuple[str, ...] | None = None
    started_at: str = field(default_factory=_now)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _entries: dict[str, _Entry] = field(default_factory=dict)
    _counters: dict[str, _Counters] = field(default_factory=dict)

    def served(self) -> list[str]:
        return list(self.only) if self.only is not None else list_collections(self.home)

    def check_served(self, name: str) -> str:
        if not COLLECTION_NAME.fullmatch(name) or name not in self.served():
            served = ", ".join(self.served()) or "none"
            raise CollectionNotFoundError(f"unknown collection {name!r}; served: {served}")
        return name

    @contextmanager
    def lease(self, name: str, *, bm25: bool = False) -> Iterator[Collection]:
        entry = self._acquire(self.check_served(name), bm25)
        try:
            yield entry.coll
        finally:
            with self._lock:
                entry.users -= 1
                if entry.retired and entry.users == 0:
                    entry.coll.close()

    def stats(self, name: str, generation: int) -> RetrieverStats:
        with self._lock:
            c = self._counters.get(name, _Counters())
            return RetrieverStats(
                serving_generation=generation, opens=c.opens, bm25_loads=c.bm25_loads,
                generation_changes=c.generation_changes,
                last_generation_change_at=c.last_generation_change_at,
                server_started_at=self.started_at)

    def _acquire(self, name: str, bm25: bool) -> _Entry:
        with self._lock:
            counters = self._counters.setdefault(name, _Counters())
            entry = self._entries.get(name)
            if entry is not None and _published(entry.coll) != entry.coll.generation:
                del self._entries[name]
                entry.retired = True
                if entry.users == 0:
                    entry.coll.close()
                entry = None
                counters.generation_changes += 1
                counters.last_generation_change_at = _now()
            if entry is None:
                entry = self._entries[name] = _Entry(Collection.open(name, self.home))
                counters.opens += 1
            if bm25 and not entry.bm25_loaded:
                entry.coll.bm25()
                entry.coll.rowids()
                entry.bm25_loaded = True
                counters.bm25_loads += 1
            entry.users += 1
            return entry


def _published(coll: Collection) -> int | None:
    """The generation published now (one indexed SELECT on the open connection)."""
    try:
        return store.current_generation(coll.conn)
    except sqlite3.Error:
        return None


# ---- the tools -----------------------------------------------------------------------


class Tools:
    """The four tools' bodies; each returns a structured, size-bounded result."""

    def __init__(self, pool: CollectionPool) -> None:
        self.pool = pool
        home = str(resolve_home(pool.home))
        self._hide = sorted({home, os.path.realpath(home)}, key=len, reverse=True)

    def search(self, query: Query, collections: CollectionNames = None, top_k: TopK = 10,
               mode: Mode = "bm25", verify: Verify = False,
               ) -> Annotated[CallToolResult, SearchOutput]:
        with self._domain_errors():
            names = list(dict.fromkeys(collections or self.pool.served()))
            if not names:
                raise CollectionNotFoundError("this server has no collections to search yet")
            options = {} if mode == "bm25" else {"rrf_k": 60, "embed_model": None}
            found: list[tuple[Hit, str]] = []
            for name in names:
                with self.pool.lease(name, bm25=True) as coll:
                    hits = coll.search(query, top_k=top_k, mode=mode, verify=verify, **options)
                found.extend((hit, name) for hit in hits)
        found.sort(key=lambda pair: (-pair[0].score, pair[0].rank, pair[1]))
        out = SearchOutput(
            query=query, mode=mode, collections=names, content_trust=CONTENT_TRUST,
            truncated=False,
            hits=[hit_output(hit, name, rank) for rank, (hit, name) in enumerate(found[:top_k], 1)])
        return _result(fit_search(out))

    def fetch_chunk(self, chunk_id: ChunkId) -> Annotated[CallToolResult, FetchOutput]:
        name, _ = split_chunk_id(chunk_id)
        with self._domain_errors():
            if name not in self.pool.served():
                verdict = unresolvable(chunk_id, f"collection {name!r} is not served here")
                return _result(fit_fetch(fetch_output(verdict, None)))
            with self.pool.lease(name) as coll:
                verdict = coll.fetch(chunk_id)
                stored = store.lookup_chunk(coll.conn, chunk_id)
        return _result(fit_fetch(fetch_output(verdict, stored, name)))

    def list_collections(self) -> Annotated[CallToolResult, ListCollectionsOutput]:
        infos, names = [], self.pool.served()
        with self._domain_errors():
            for name in names[:MAX_LIST_ITEMS]:
                with self.pool.lease(name) as coll:
                    s = collection_status(coll, changes=False)
                infos.append(CollectionInfo(
                    name=name, roots=s["roots"], documents=s["documents"], chunks=s["chunks"],
                    generation=s["generation"], indexed_at=s["indexed_at"]))
        return _result(ListCollectionsOutput(collections=infos,
                                             truncated=len(names) > MAX_LIST_ITEMS))

    def index_status(self, collection: CollectionName, check_changes: CheckChanges = True,
                     ) -> Annotated[CallToolResult, StatusOutput]:
        with self._domain_errors(), self.pool.lease(collection) as coll:
            s = collection_status(coll, changes=check_changes)
            out = status_output(s, coll.config, self.pool.stats(collection, coll.generation))
        return _result(fit_status(out))

    @contextmanager
    def _domain_errors(self) -> Iterator[None]:
        """Turn a groundkit error into a tool error whose message names no path."""
        try:
            yield
        except (IndexMismatchError, IntegrityError) as exc:
            log.warning("index problem: %s", exc)
            raise ToolError("the collection's index is damaged or out of date; run "
                            "`grk check NAME` and re-run `grk index`") from None
        except GroundkitError as exc:
            message = str(exc)
            for path in self._hide:
                message = message.replace(path, "<home>")
            raise ToolError(message) from None


def _result(out: BaseModel) -> CallToolResult:
    text = out.model_dump_json()
    return CallToolResult(content=[TextContent(type="text", text=text)],
                          structured_content=out.model_dump(mode="json"))


# ---- the server ----------------------------------------------------------------------

_READ_ONLY = {"read_only_hint": True, "destructive_hint": False, "idempotent_hint": True,
              "open_world_hint": False}

DESCRIPTIONS = {
    "search": (
        "Search Collections",
        "Find the passages of the user's indexed documents that best match a query, best "
        "first. BM25 by default (no setup; returns no hits when nothing matches). Each hit "
        "is a citation: chunk id, collection, document path, code-point offsets (offset_unit)"
        ", UTF-16 offsets for JavaScript, line range, score, rank and text; with verify, a "
        "verdict from re-reading the span now. Scores of different collections are each "
        "computed against their own collection and merged by score." + UNTRUSTED_NOTE),
    "fetch_chunk": (
        "Fetch and Verify a Chunk",
        "Re-read a cited chunk from its file now and say whether the citation still holds: "
        "verified (the text is unchanged), drifted (the file changed; relocated offsets are "
        "given when the text occurs exactly once elsewhere) or unresolvable (file gone, "
        "unreadable, outside the collection, or unknown id), with the reason, the stored "
        "and current text and the offsets." + UNTRUSTED_NOTE),
    "list_collections": (
        "List Collections",
        "List the collections this server serves: name, root folders, document and chunk "
        "counts, published generation and when it was indexed."),
    "index_status": (
        "Index Status",
        "Describe one collection's index: document and chunk counts, generation, analyzer, "
        "BM25 parameters, embedding identity (or null), this server's retriever reload "
        "counters, files skipped at indexing with reasons, and (with check_changes) the "
        "files modified, missing or added since indexing."),
}

INSTRUCTIONS = (
    "groundkit searches the user's own documents and returns citations that can be checked: "
    "use search to find passages, fetch_chunk to re-verify a citation before relying on it, "
    "list_collections to see what is indexed and index_status for an index's health. All "
    "tools are read-only." + UNTRUSTED_NOTE)


def _strict_tool(tools: Tools, name: str) -> Tool:
    """Register ``tools.<name>`` with an argument model that rejects unknown keys."""
    title, description = DESCRIPTIONS[name]
    tool = Tool.from_function(
        getattr(tools, name), name=name, title=title, description=description,
        annotations=ToolAnnotations(title=title, **_READ_ONLY))
    base = tool.fn_metadata.arg_model
    strict: type[BaseModel] = type(base.__name__, (base,), {
        "__module__": __name__, "model_config": ConfigDict(**{**base.model_config,
                                                              "extra": "forbid"})})
    tool.fn_metadata.arg_model = strict  # type: ignore[assignment]
    tool.parameters = strict.model_json_schema(by_alias=True)
    return tool


def build_server(home: str | os.PathLike[str] | None = None,
                 collections: list[str] | tuple[str, ...] | None = None) -> MCPServer:
    """An MCP server over ``home``'s collections (or only ``collections``)."""
    only = None
    if collections:
        only = tuple(dict.fromkeys(collections))
        for name in only:
            Collection.open(name, home).close()  # fail now, not on the first call
    tools = Tools(CollectionPool(home=home, only=only))
    return MCPServer(
        "groundkit", title="groundkit", version=__version__, instructions=INSTRUCTIONS,
        tools=[_strict_tool(tools, name) for name in DESCRIPTIONS], log_level="WARNING")


def security_settings(hosts: list[str], origins: list[str]) -> TransportSecuritySettings:
    return TransportSecuritySettings(enable_dns_rebinding_protection=True,
                                     allowed_hosts=hosts, allowed_origins=origins)


def http_app(server: MCPServer, hosts: list[str], origins: list[str]) -> Any:
    """The streamable HTTP ASGI app at ``/mcp``, with the SDK's own Host/Origin checks on."""
    return server.streamable_http_app(transport_security=security_settings(hosts, origins),
                                      json_response=True, max_request_body_size=MAX_REQUEST_BYTES)


def run_stdio(server: MCPServer) -> None:
    """Serve over stdin/stdout until the client closes stdin (stdout carries JSON-RPC only)."""
    anyio.run(server.run_stdio_async)
