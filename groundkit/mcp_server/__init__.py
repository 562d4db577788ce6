"""The MCP server: four read-only tools for assistants (``grk serve``).

:mod:`.schema` (inputs, outputs, bounds; pydantic only), :mod:`.pool` (open
collections, reloaded per generation), :mod:`.tools` (the tool bodies),
:mod:`.http` (the HTTP transport and all its checks), :mod:`.server` (the only
module that imports the ``mcp`` SDK). Importing this package loads none of them.
"""
