"""``grk serve``: the MCP server's command (registered when the server exists)."""

from __future__ import annotations
