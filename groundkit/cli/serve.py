"""``grk serve``: run the MCP server (:mod:`groundkit.mcp_server`) over stdio or loopback HTTP.

The MCP SDK is imported only when the command runs, so ``grk search`` never
loads it. Over HTTP every request passes :class:`HttpGuard` first: its Host
header must be on the allow-list (this server's own loopback names and port,
plus ``--allow-host``), an Origin header, when present, must be listed with
``--allow-origin``, and with ``--token-env`` it must carry that bearer token.
"""

from __future__ import annotations

import argparse
import hmac
import ipaddress
import logging
import os
import re
import socket
import sys
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any

from .cli import Handler, command
from .errors import MissingDependencyError, UsageError

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
MIN_TOKEN_CHARS = 16
_ORIGIN = re.compile(r"https?://[^/\s*?#@]+")
_HTTP_ONLY = ("host", "port", "allow_origin", "allow_host", "token_env")

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]


@command("serve", "Serve collections to MCP clients: four read-only tools over stdio or "
         "loopback HTTP.")
def _serve(p: argparse.ArgumentParser) -> Handler:
    p.add_argument("--transport", choices=("stdio", "http"), default="stdio",
                   help="stdio (default: JSON-RPC on stdin/stdout, logs on stderr) or http "
                   "(streamable HTTP at http://HOST:PORT/mcp)")
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
        mcp_server = _import_server()
        server = mcp_server.build_server(home=args.home, collections=args.collection)
        if http is None:
            print("grk serve: MCP over stdio", file=sys.stderr, flush=True)
            mcp_server.run_stdio(server)
        else:
            run_http(server, http)
        return 0

    return run


def _import_server() -> Any:
    try:
        from . import mcp_server
    except ModuleNotFoundError as exc:
        if exc.name and not exc.name.startswith("groundkit"):
            raise MissingDependencyError("mcp", "mcp", "grk serve") from None
        raise
    return mcp_server


@dataclass(frozen=True, slots=True, kw_only=True)
class HttpOptions:
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    allow_origins: tuple[str, ...] = ()
    allow_hosts: tuple[str, ...] = ()
    token: str | None = None

    def allowed_hosts(self, port: int) -> list[str]:
        own = f"[{self.host}]" if ":" in self.host else self.host
        names = [f"{own}:{port}", f"localhost:{port}"]
        names += [h if _has_port(h) else f"{h}:{port}" for h in self.allow_hosts]
        return list(dict.fromkeys(n.lower() for n in names))


def _has_port(host: str) -> bool:
    return bool(re.search(r":\d+$", host)) and (not host.startswith("[") or "]:" in host)


def _http_options(args: argparse.Namespace) -> HttpOptions | None:
    if args.transport == "stdio":
        for name in _HTTP_ONLY:
            if getattr(args, name) is not None:
                flag = "--" + name.replace("_", "-")
                raise UsageError(f"{flag} applies to --transport http only")
        return None
    origins = []
    for origin in args.allow_origin or ():
        if not _ORIGIN.fullmatch(origin.rstrip("/")):
            raise UsageError(f"--allow-origin {origin!r}: give an exact origin such as "
                             "http://localhost:6274 (scheme, host, optional port; no wildcard)")
        origins.append(origin.rstrip("/").lower())
    port = DEFAULT_PORT if args.port is None else args.port
    if not 0 <= port <= 65535:
        raise UsageError(f"--port {port}: use 0 to 65535")
    return HttpOptions(host=_loopback(args.host or DEFAULT_HOST), port=port,
                       allow_origins=tuple(origins), allow_hosts=tuple(args.allow_host or ()),
                       token=_token(args.token_env))


def _loopback(host: str) -> str:
    try:
        address = ipaddress.ip_address("127.0.0.1" if host == "localhost" else host)
    except ValueError:
        address = None
    if address is None or not address.is_loopback:
        raise UsageError(f"--host {host!r}: grk serve binds loopback addresses only "
                         "(127.0.0.1, ::1 or localhost)")
    return str(address)


def _token(var: str | None) -> str | None:
    if var is None:
        return None
    token = os.environ.get(var, "")
    if len(token) < MIN_TOKEN_CHARS:
        raise UsageError(f"--token-env {var}: the variable is unset or shorter than "
                         f"{MIN_TOKEN_CHARS} characters; generate one with: python -c "
                         "'import secrets; print(secrets.token_urlsafe(32))'")
    return token


class HttpGuard:
    """ASGI middleware: refuse a request unless its Host, Origin and bearer token check out.

    Host not on the list: 421. Origin present and not on the list: 403. Token
    missing or wrong (when one is configured): 401. Repeated headers: 400.
    """

    def __init__(self, app: App, *, hosts: list[str], origins: list[str],
                 token: str | None) -> None:
        self.app = app
        self.hosts = frozenset(h.lower() for h in hosts)
        self.origins = frozenset(o.lower() for o in origins)
        self.token = token.encode() if token else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            refusal = self.check(scope["headers"])
            if refusal is not None:
                await _refuse(send, *refusal)
                return
        await self.app(scope, receive, send)

    def check(self, raw: list[tuple[bytes, bytes]]) -> tuple[int, str] | None:
        headers: dict[bytes, list[bytes]] = {}
        for key, value in raw:
            headers.setdefault(key.lower(), []).append(value)
        if any(len(headers.get(k, ())) > 1 for k in (b"host", b"origin", b"authorization")):
            return 400, "repeated Host, Origin or Authorization header"
        host = headers.get(b"host", [b""])[0].decode("latin-1").lower()
        if host not in self.hosts:
            return 421, "Host header not allowed"
        origin = headers.get(b"origin")
        if origin is not None and origin[0].decode("latin-1").lower() not in self.origins:
            return 403, "Origin not allowed"
        if self.token is not None:
            scheme, _, value = headers.get(b"authorization", [b""])[0].partition(b" ")
            if scheme.lower() != b"bearer" or not hmac.compare_digest(value.strip(), self.token):
                return 401, "missing or wrong bearer token"
        return None


async def _refuse(send: Send, status: int, message: str) -> None:
    body = (message + "\n").encode()
    headers = [(b"content-type", b"text/plain; charset=utf-8"),
               (b"content-length", str(len(body)).encode())]
    if status == 401:
        headers.append((b"www-authenticate", b'Bearer realm="groundkit"'))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on a loopback ``host`` (port 0: any free port)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # With the protocol named, asyncio sets TCP_NODELAY on accepted connections; without
    # it, Nagle and delayed ACKs add about 40 ms to every response.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise UsageError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    sock.listen(128)
    return sock


def run_http(server: Any, options: HttpOptions) -> None:
    """Serve streamable HTTP at ``/mcp`` until interrupted (SIGINT or SIGTERM)."""
    import uvicorn

    from .mcp_server import http_app

    sock = bind(options.host, options.port)
    port = sock.getsockname()[1]
    hosts = options.allowed_hosts(port)
    app = HttpGuard(http_app(server, hosts, list(options.allow_origins)), hosts=hosts,
                    origins=list(options.allow_origins), token=options.token)
    config = uvicorn.Config(app, log_config=None, access_log=False, log_level="warning",
                            lifespan="on", timeout_graceful_shutdown=2)
    own = f"[{options.host}]" if ":" in options.host else options.host
    print(f"grk serve: MCP over streamable HTTP at http://{own}:{port}/mcp "
          f"(bearer token {'required' if options.token else 'not required'})",
          file=sys.stderr, flush=True)
    uvicorn.Server(config).run(sockets=[sock])
