"""An MCP server re-checking a hostile file keeps answering other sessions (issue 45).

Session A asks ``fetch_chunk`` for a citation whose page became 30,000 nested ``div``
(seconds of lexbor, in the sandbox); session B, on the same server meanwhile, lists the
collections and searches: every one of B's answers comes back before A's (the tools
run in worker threads, the extraction in its own process), and A's is the verdict.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import anyio
from mcp import Client

from groundkit.collection import Collection, IndexConfig, index
from groundkit.mcp_server.server import build_server

sys.path.insert(0, str(Path(__file__).parents[1] / "mcp_server"))
from mcp_helpers import DOCS, write_tree


def test_other_sessions_are_answered_while_a_hostile_file_is_rechecked(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "docs", {"logs.md": DOCS["logs.md"]})
    (root / "page.html").write_text("<p>wombat page</p>")
    home = tmp_path / "home"
    index("c", IndexConfig(roots=(str(root),)), home=home)
    with Collection.open("c", home) as coll:
        cited = next(c.chunk_id for c in coll.chunks() if c.doc_id == "page.html")
    depth = 30_000
    (root / "page.html").write_bytes(b"<p>" + b"<div>" * depth + b"wombat" + b"</div>" * depth)
    server = build_server(home)
    ends: dict[str, float] = {}
    answers: list[str] = []

    async def slow() -> None:
        async with Client(server) as client:
            result = await client.call_tool("fetch_chunk", {"chunk_id": cited})
        ends["fetch"] = time.monotonic()
        data = result.structured_content or {}
        answers.append(f"{data.get('status')}: {data.get('reason')}")

    async def others() -> None:
        await anyio.sleep(0.3)  # A's extraction is under way
        async with Client(server) as client:
            for _ in range(3):
                listed = await client.call_tool("list_collections", {})
                found = await client.call_tool("search", {"query": "deployment logs",
                                                          "collections": ["c"]})
                assert not listed.is_error and not found.is_error
                ends.setdefault("first", time.monotonic())
        ends["others"] = time.monotonic()

    async def main() -> None:
        async with anyio.create_task_group() as group:
            group.start_soon(slow)
            group.start_soon(others)

    start = time.monotonic()
    anyio.run(main)
    assert ends["others"] < ends["fetch"], (ends, start)
    assert ends["first"] - start < 2.0
    assert answers == ["drifted: the cited text is no longer in the file"]
