"""``grk serve``: run the MCP server (:mod:`groundkit.mcp_server`) over stdio or loopback HTTP.

The MCP SDK is imported only when the command runs, so ``grk search`` never
loads it. The HTTP transport's checks (Host, Origin, bearer token) live in
:mod:`groundkit.mcp_server.http`; this module only maps flags onto them.
"""

from __future__ import annotations

import argparse
import logging
import sys
from typing import Any

from ..errors import MissingDependencyError, UsageError
from ..mcp_server.http import DEFAULT_HOST, DEFAULT_PORT, MIN_TOKEN_CHARS, HttpOptions, http_options
from .registry import Handler, command

_HTTP_ONLY = ("host", "port", "allow_origin", "allow_host", "token_env")


@command("serve", "Serve collections to MCP clients: four read-only tools over stdio or "
         "loopback HTTP.")
def _serve(p: argparse.ArgumentParser) -> Handler:
    p.add_argument("--transport", choices=("stdio", "http"), default="stdio",
                   help="stdio (default: JSON-RPC on stdin/stdout, logs on stderr) or http "
                   "(streamable HTTP at http://HOST:PORT/mcp, citation pages at /view/ID)")
    p.add_argument("--host", metavar="ADDR", help=f"http: loopback address to bind (default "
                   f"{DEFAULT_HOST}); non-loopback addresses are refused")
    p.add_argument("--port", type=int, metavar="N", help=f"http: TCP port (default "
                   f"{DEFAULT_PORT}; 0 picks a free port, printed on stderr)")
    p.add_argument("--allow-origin", action="append", metavar="URL", help="http: accept "
                   "requests whose Origin header is exactly URL (repeatable; default: only "
                   "requests without an Origin header)")
    p.add_argument("--allow-host", action="append", metavar="HOST", help="http: also accept "
                   "this Host header, HOST or HOST:PORT (repeatable; 127.0.0.1:PORT and "
                   "localhost:PORT are always accepted)")
    p.add_argument("--token-env", metavar="VAR", help="http: require 'Authorization: Bearer "
                   f"TOKEN', TOKEN read from environment variable VAR (at least "
                   f"{MIN_TOKEN_CHARS} characters; never pass the token itself)")
    p.add_argument("--collection", "-c", action="append", metavar="NAME", help="serve only "
                   "this collection (repeatable; default: every collection in the home, "
                   "including ones created later)")

    def run(args: argparse.Namespace) -> int:
        logging.basicConfig(stream=sys.stderr, level=logging.WARNING,
                            format="grk serve: %(levelname)s %(name)s: %(message)s")
        http = _http_options(args)
        server_module = _import_server()
        server = server_module.build_server(home=args.home, collections=args.collection)
        if http is None:
            print("grk serve: MCP over stdio", file=sys.stderr, flush=True)
            server_module.run_stdio(server)
        else:
            from ..mcp_server.http import run_http
            from ..viewer.serve import answer

            served = tuple(args.collection) if args.collection else None

            def views(chunk_id: str, query: str) -> tuple[int, str]:
                return answer(chunk_id, query, home=args.home, served=served)

            run_http(server, http, views)
        return 0

    return run


def _import_server() -> Any:
    try:
        from ..mcp_server import server
    except ModuleNotFoundError as exc:
        if exc.name and not exc.name.startswith("groundkit"):
            raise MissingDependencyError("mcp", "mcp", "grk serve") from None
        raise
    return server


def _http_options(args: argparse.Namespace) -> HttpOptions | None:
    if args.transport == "stdio":
        for name in _HTTP_ONLY:
            if getattr(args, name) is not None:
                flag = "--" + name.replace("_", "-")
                raise UsageError(f"{flag} applies to --transport http only")
        return None
    return http_options(host=args.host, port=args.port, allow_origins=args.allow_origin or (),
                        allow_hosts=args.allow_host or (), token_env=args.token_env)
