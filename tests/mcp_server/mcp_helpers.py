"""Shared by the MCP tests: a small document tree and a client session in memory."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.server.mcpserver import MCPServer
from mcp_types import CallToolResult

MODES = ["legacy", "2026-07-28"]
N_DOCS = 50
DOCS = {
    "logs.md": "# Logs\n\n🚀 Deployment logs are kept for 30 days. Audit logs for a year.\n",
    "oncall.md": "# On-call\n\nThe on-call engineer restarts the ingest worker.\n",
    "notes/codes.txt": "Error E4012 means the upload quota was exceeded.\n",
}


def session(server: MCPServer, body: Callable[[Client], Awaitable[Any]],
            mode: str = "2026-07-28") -> Any:
    async def main() -> Any:
        async with Client(server, mode=mode) as client:
            return await body(client)

    return anyio.run(main)


def call(server: MCPServer, tool: str, args: dict[str, Any],
         mode: str = "2026-07-28") -> CallToolResult:
    result: CallToolResult = session(server, lambda c: c.call_tool(tool, args), mode)
    return result


def ok(server: MCPServer, tool: str, args: dict[str, Any], mode: str = "2026-07-28",
       ) -> dict[str, Any]:
    result = call(server, tool, args, mode)
    assert not result.is_error, result.content
    data: dict[str, Any] = result.structured_content
    return data


def error(server: MCPServer, tool: str, args: dict[str, Any]) -> str:
    result = call(server, tool, args)
    assert result.is_error and result.structured_content is None
    text: str = result.content[0].text  # type: ignore[union-attr]
    return text


def tool_definitions(server: MCPServer) -> list[dict[str, Any]]:
    return [t.model_dump(mode="json", by_alias=True, exclude_none=True)
            for t in anyio.run(server.list_tools)]


def many_docs() -> dict[str, str]:
    docs = {f"doc{i:02d}.md": f"# Note {i}\n\nThe marker word{i:02d} appears here once. "
            f"Shared text about logs and workers.\n" for i in range(N_DOCS)}
    docs["logs.md"] = "# Logs\n\nDeployment logs are kept for 30 days.\n"
    return docs


def write_tree(root: Path, files: dict[str, str]) -> Path:
    root.mkdir(parents=True)
    for rel, text in files.items():
        (root / rel).write_text(text, encoding="utf-8")
    return root
