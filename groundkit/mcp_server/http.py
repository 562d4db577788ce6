"""Streamable HTTP for the MCP server, on loopback, with every transport check in one place.

Every request passes :class:`HttpGuard` first: an Origin header, when present,
must be listed in ``allow_origins`` (else 403, checked first), its Host header
must be on the allow-list (this server's own loopback names and port, plus
``allow_hosts``; else 421), and with a token configured it must carry
``Authorization: Bearer TOKEN`` (compared with :func:`hmac.compare_digest`).
The SDK's own Host/Origin checks run behind it with the same lists. An error
response whose JSON-RPC message spans lines (the SDK's pydantic text for a
batch or a malformed message, echoing the input) is rewritten to one line. The
guard reads the whole body first (at most ``max_body`` bytes, else 413), so a
client that vanishes mid-request is dropped quietly before the SDK sees it.
``GET /view/ID`` is a citation's page (:mod:`groundkit.viewer`), never the SDK's:
the same Host and Origin checks, and the token as a bearer header or as the page's
``key`` (:func:`~groundkit.viewer.links.view_key`, an HMAC of the token and the id:
a browser following a link cannot send a header).
:func:`http_options` validates the settings before anything binds; ``uvicorn``
and the SDK are imported only by :func:`run_http`.
"""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
import json
import os
import re
import socket
import sys
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, unquote

from ..errors import UsageError
from ..viewer.links import ViewServer, view_key
from ..viewer.serve import HEADERS as VIEW_HEADERS
from ..viewer.serve import Answer

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
MIN_TOKEN_CHARS = 16
_ORIGIN = re.compile(r"https?://[^/\s*?#@]+")
BAD_MESSAGE = ("Invalid JSON-RPC message: send one request, notification or response object "
               "(batches are not supported)")

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]


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


def http_options(*, host: str | None = None, port: int | None = None,
                 allow_origins: Sequence[str] = (), allow_hosts: Sequence[str] = (),
                 token_env: str | None = None) -> HttpOptions:
    """Validated HTTP settings; a bad one is a :class:`UsageError` naming its flag."""
    origins = []
    for origin in allow_origins:
        if not _ORIGIN.fullmatch(origin.rstrip("/")):
            raise UsageError(f"--allow-origin {origin!r}: give an exact origin such as "
                             "http://localhost:6274 (scheme, host, optional port; no wildcard)")
        origins.append(origin.rstrip("/").lower())
    port = DEFAULT_PORT if port is None else port
    if not 0 <= port <= 65535:
        raise UsageError(f"--port {port}: use 0 to 65535")
    return HttpOptions(host=_loopback(host or DEFAULT_HOST), port=port,
                       allow_origins=tuple(origins), allow_hosts=tuple(allow_hosts),
                       token=_token(token_env))


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

    In this order: repeated headers: 400. Origin present and not on the list:
    403 (whatever the Host; the transport spec's MUST). Host not on the list: 421.
    Token missing or wrong (when one is configured): 401. Body over
    ``max_body``: 413.
    """

    def __init__(self, app: App, *, hosts: list[str], origins: list[str],
                 token: str | None, max_body: int | None = None,
                 views: Callable[[str, str], Answer] | None = None) -> None:
        self.app = app
        self.views = views
        self.max_body = max_body
        self.hosts = frozenset(h.lower() for h in hosts)
        self.origins = frozenset(o.lower() for o in origins)
        self.token = token.encode() if token else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and self.views is not None and \
                scope["path"].startswith("/view/"):
            await self._view(scope, send, self.views)
            return
        if scope["type"] == "http":
            refusal = self.check(scope["headers"])
            if refusal is not None:
                await _refuse(send, *refusal)
                return
            try:
                receive = _replay(await _read_body(receive, self.max_body), receive)
            except _ClientGone:
                return
            except _TooLarge:
                await _refuse(send, 413, "request body too large")
                return
            send = _one_line_errors(send)
        await self.app(scope, receive, send)

    async def _view(self, scope: Scope, send: Send, views: Callable[[str, str], Answer],
                    ) -> None:
        chunk_id = unquote(scope["path"][len("/view/"):])
        query = scope.get("query_string", b"").decode("latin-1")
        refusal = self.check(scope["headers"], view=(chunk_id, query))
        if refusal is None and scope["method"] != "GET":
            refusal = 405, "a page is read with GET"
        if refusal is not None:
            await _refuse(send, *refusal)
            return
        status, page = await asyncio.to_thread(views, chunk_id, query)
        body = page.encode("utf-8")
        kind = b"text/html; charset=utf-8" if status == 200 else b"text/plain; charset=utf-8"
        headers = [(b"content-type", kind), (b"content-length", str(len(body)).encode())]
        headers += [(k.lower().encode(), v.encode()) for k, v in VIEW_HEADERS]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    def check(self, raw: list[tuple[bytes, bytes]],
              view: tuple[str, str] | None = None) -> tuple[int, str] | None:
        headers: dict[bytes, list[bytes]] = {}
        for key, value in raw:
            headers.setdefault(key.lower(), []).append(value)
        if any(len(headers.get(k, ())) > 1 for k in (b"host", b"origin", b"authorization")):
            return 400, "repeated Host, Origin or Authorization header"
        origin = headers.get(b"origin")
        if origin is not None and origin[0].decode("latin-1").lower() not in self.origins:
            return 403, "Origin not allowed"  # first: a present, invalid Origin MUST get 403
        host = headers.get(b"host", [b""])[0].decode("latin-1").lower()
        if host not in self.hosts:
            return 421, "Host header not allowed"
        if self.token is not None:
            scheme, _, value = headers.get(b"authorization", [b""])[0].partition(b" ")
            bearer = scheme.lower() == b"bearer" and hmac.compare_digest(value.strip(),
                                                                         self.token)
            if not bearer and not (view and _keyed(view, self.token.decode())):
                return 401, "missing or wrong bearer token"
        return None


def _keyed(view: tuple[str, str], token: str) -> bool:
    """Whether a page's query carries the key of its chunk id."""
    chunk_id, query = view
    keys = parse_qs(query).get("key", [])
    return len(keys) == 1 and hmac.compare_digest(keys[0].encode(),
                                                   view_key(token, chunk_id).encode())


class _ClientGone(Exception):
    pass


class _TooLarge(Exception):
    pass


async def _read_body(receive: Receive, limit: int | None) -> bytes:
    body = bytearray()
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise _ClientGone
        body.extend(message.get("body", b""))
        if limit is not None and len(body) > limit:
            raise _TooLarge
        if not message.get("more_body", False):
            return bytes(body)


def _replay(body: bytes, receive: Receive) -> Receive:
    """``receive`` that first hands over the already-read ``body``."""
    pending = [{"type": "http.request", "body": body, "more_body": False}]

    async def replayed() -> MutableMapping[str, Any]:
        return pending.pop() if pending else await receive()

    return replayed


async def _refuse(send: Send, status: int, message: str) -> None:
    body = (message + "\n").encode()
    headers = [(b"content-type", b"text/plain; charset=utf-8"),
               (b"content-length", str(len(body)).encode())]
    if status == 401:
        headers.append((b"www-authenticate", b'Bearer realm="groundkit"'))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _one_line_errors(send: Send) -> Send:
    """``send``, holding back an error response (status 400 and up) to clean its message."""
    held: list[MutableMapping[str, Any]] = []
    body = bytearray()

    async def wrapped(message: MutableMapping[str, Any]) -> None:
        if message["type"] == "http.response.start" and message["status"] >= 400:
            held.append(message)
            return
        if not held or message["type"] != "http.response.body":
            await send(message)
            return
        body.extend(message.get("body", b""))
        if message.get("more_body", False):
            return
        start, data = held.pop(), _one_line(bytes(body))
        headers = [(k, v) for k, v in start["headers"] if k.lower() != b"content-length"]
        headers.append((b"content-length", str(len(data)).encode()))
        await send({**start, "headers": headers})
        await send({"type": "http.response.body", "body": data})

    return wrapped


def _one_line(body: bytes) -> bytes:
    """A JSON-RPC error body with a multi-line message given :data:`BAD_MESSAGE` instead."""
    try:
        doc = json.loads(body)
    except (ValueError, RecursionError):
        return body
    error = doc.get("error") if isinstance(doc, dict) else None
    if not isinstance(error, dict) or "\n" not in str(error.get("message", "")):
        return body
    error["message"] = BAD_MESSAGE
    error.pop("data", None)
    return json.dumps(doc).encode()


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


def run_http(server: Any, options: HttpOptions,
             views: Callable[[str, str], Answer] | None = None) -> None:
    """Serve streamable HTTP at ``/mcp`` (and citation pages at ``/view/ID`` with
    ``views``) until interrupted (SIGINT or SIGTERM)."""
    import uvicorn

    from .schema import MAX_REQUEST_BYTES
    from .server import http_app

    sock = bind(options.host, options.port)
    port = sock.getsockname()[1]
    hosts = options.allowed_hosts(port)
    own = f"[{options.host}]" if ":" in options.host else options.host
    if views is not None:
        server.serve_views(ViewServer(base=f"http://{own}:{port}", token=options.token))
    app = HttpGuard(http_app(server, hosts, list(options.allow_origins)), hosts=hosts,
                    origins=list(options.allow_origins), token=options.token,
                    max_body=MAX_REQUEST_BYTES, views=views)
    config = uvicorn.Config(app, log_config=None, access_log=False, log_level="warning",
                            lifespan="on", timeout_graceful_shutdown=2)
    print(f"grk serve: MCP over streamable HTTP at http://{own}:{port}/mcp "
          f"(bearer token {'required' if options.token else 'not required'})",
          file=sys.stderr, flush=True)
    uvicorn.Server(config).run(sockets=[sock])
