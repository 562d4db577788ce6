"""The MCP server: four read-only tools over the collections of one home.

``search``, ``fetch_chunk``, ``list_collections`` and ``index_status`` (see
``docs/mcp-clients.md`` and ADR-0008). This is the only module that imports the
``mcp`` SDK; ``grk serve`` imports it lazily.

* Inputs are strict: every tool's argument model forbids unknown keys, takes
  no lax coercions (``true`` is not a ``top_k``, ``1`` not a ``verify``), and
  sizes are bounded (query length, ``top_k``, number of collections). A bad
  argument is one line naming it and what it must be (:mod:`.arguments`).
* Outputs are structured (an ``outputSchema`` per tool) and the same JSON is
  repeated as a text block; that JSON is at most
  :data:`~groundkit.mcp_server.schema.MAX_RESPONSE_BYTES` bytes, document text
  being cut (and flagged) to fit.
* Domain failures (unknown collection, damaged index, unavailable mode) are
  tool results with ``isError``; their messages carry no traceback and no path.
  An unknown tool name is a protocol error (JSON-RPC -32602), and only the
  ``tools`` capability is declared (no prompts, no resources: -32601).
* Retrieved text is labelled ``content_trust: "untrusted-document-text"``.
* Over HTTP, hits and fetched chunks carry ``view_url``, their citation page on this
  server (:meth:`_Server.serve_views`), as a field of the structured result, not as a
  ``resource_link`` content item: a resource link names "a resource that the server is
  capable of reading" with ``resources/read``, and this server declares no resources
  (ADR-0023).
* Nothing here writes: collections are opened read-only, cached per server
  (:mod:`.pool`), and re-opened when a new generation is published.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, ConfigDict, ValidationError

from .. import __version__
from ..collection import Collection
from ..collection.home import Home
from ..viewer.links import ViewServer
from .arguments import argument_error, shown, unstringify
from .pool import CollectionPool
from .schema import MAX_REQUEST_BYTES, UNTRUSTED_NOTE
from .tools import ToolFailure, Tools


def _result(out: BaseModel) -> CallToolResult:
    text = out.model_dump_json()
    return CallToolResult(content=[TextContent(type="text", text=text)],
                          structured_content=out.model_dump(mode="json"))


def _as_tool_result(body: Callable[..., BaseModel]) -> Callable[..., CallToolResult]:
    """``body`` returning a call result, its failures as tool errors; same signature."""

    @functools.wraps(body)
    def tool(**arguments: Any) -> CallToolResult:
        try:
            return _result(body(**arguments))
        except ToolFailure as exc:
            raise ToolError(str(exc)) from None

    return tool


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
        "computed against their own collection and merged by score. With abstain, a "
        "calibrated gate first decides per collection whether its documents answer the query "
        "at all; abstained=true means nothing there answers it (at a stated risk alpha), which "
        "is different from not having looked." + UNTRUSTED_NOTE),
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


class _StrictTool(Tool):
    """A tool whose argument failures are one line (see :mod:`.arguments`), not pydantic's."""

    async def run(self, arguments: dict[str, Any], context: Any,
                  convert_result: bool = False) -> Any:
        model = self.fn_metadata.arg_model
        arguments = unstringify(arguments, model)
        try:
            self.fn_metadata.validate_arguments(arguments)
        except ValidationError as exc:
            raise ToolError(f"Error executing tool {self.name}: "
                            f"{argument_error(exc, list(model.model_fields))}") from exc
        return await super().run(arguments, context, convert_result=convert_result)


UNSERVED = ("prompts/list", "prompts/get", "resources/list", "resources/templates/list",
            "resources/read")
"""The methods ``MCPServer`` registers whatever the server holds; groundkit has no prompts and
no resources, so it withdraws them (python-sdk issue 2473)."""


class _Server(MCPServer):
    """Declares only ``tools``; an unknown tool name is a protocol error in one escaped line.

    The SDK derives the declared capabilities from the registered request handlers
    and answers a method without one with -32601 (Method not found), which is what
    the spec (2026-07-28 schema, ``MethodNotFoundError``) asks for a method behind a
    capability the server did not declare. So the handlers of :data:`UNSERVED` are
    removed, and ``initialize`` (or ``server/discover``) declares ``tools`` alone.
    ``subscriptions/listen`` (2026-07-28) is not served either (``subscriptions=False``
    in :func:`build_server`): the tool list never changes, so there is nothing to
    notify, and ``tools.listChanged`` is false in both eras.
    An unknown tool is a JSON-RPC -32602 (Invalid params) error, not an ``isError``
    result: the spec's tools page lists it under protocol errors.
    """

    def __init__(self, *args: Any, groundkit_tools: Tools, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.groundkit_tools = groundkit_tools
        handlers = self._lowlevel_server._request_handlers  # no public removal in mcp 2.3
        for method in UNSERVED:
            handlers.pop(method, None)

    def serve_views(self, views: ViewServer) -> None:
        """Link every hit and fetched chunk to its page on ``views`` (this server over
        HTTP, once it listens: the port may be picked only then)."""
        self.groundkit_tools.views = views

    async def call_tool(self, name: str, arguments: dict[str, Any],
                        context: Any = None) -> Any:
        if name not in DESCRIPTIONS:
            raise MCPError(code=INVALID_PARAMS, message=f"unknown tool {shown(name)}; "
                           f"tools: {', '.join(DESCRIPTIONS)}")
        return await super().call_tool(name, arguments, context)


def _strict_tool(tools: Tools, name: str) -> Tool:
    """Register ``tools.<name>`` with an argument model that is strict and rejects unknown keys."""
    title, description = DESCRIPTIONS[name]
    tool = _StrictTool.from_function(
        _as_tool_result(getattr(tools, name)), name=name, title=title, description=description,
        annotations=ToolAnnotations(title=title, **_READ_ONLY))
    base = tool.fn_metadata.arg_model
    strict: type[BaseModel] = type(base.__name__, (base,), {
        "__module__": __name__, "model_config": ConfigDict(**{**base.model_config,
                                                              "extra": "forbid", "strict": True})})
    tool.fn_metadata.arg_model = strict  # type: ignore[assignment]
    tool.parameters = strict.model_json_schema(by_alias=True)
    return tool


def build_server(home: Home = None,
                 collections: list[str] | tuple[str, ...] | None = None) -> MCPServer:
    """An MCP server over ``home``'s collections (or only ``collections``)."""
    only = None
    if collections:
        only = tuple(dict.fromkeys(collections))
        for name in only:
            Collection.open(name, home).close()  # fail now, not on the first call
    tools = Tools(CollectionPool(home=home, only=only))
    return _Server(
        "groundkit", title="groundkit", version=__version__, instructions=INSTRUCTIONS,
        tools=[_strict_tool(tools, name) for name in DESCRIPTIONS], log_level="WARNING",
        subscriptions=False, groundkit_tools=tools)


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
