"""Serving a citation's page: the one-shot loopback server of ``grk open``, and the
answer ``grk serve --transport http`` gives at ``/view/ID``.

A page's URL is ``http://127.0.0.1:PORT/view/CHUNK_ID?key=KEY#quote`` (``&start=N&end=N``
for a quote inside the chunk). A browser cannot send a bearer token when it follows a
link, so the key travels in the URL:

* ``grk open`` makes a random key (:data:`KEY_BYTES` bytes, URL-safe base64) for the one
  page it serves; its server binds 127.0.0.1 on a free port, answers only a ``GET`` of
  that path with that key, a ``Host`` of its own address and no ``Origin`` header (a
  page elsewhere cannot fetch it), serves it once and ends, or ends at its timeout;
* ``grk serve`` with a token accepts, for ``/view/ID`` only, the bearer token or the key
  :func:`~.links.view_key` derives from the token and the id (an HMAC: a link grants that one
  page and never reveals the token); without a token, no key, as for MCP.

The links the faces give to these pages are made by :mod:`.links`.

The page is made when it is requested, so its verdict is as of the moment it is opened.
"""

from __future__ import annotations

import hmac
import http.server
import secrets
import time
from collections.abc import Callable
from urllib.parse import parse_qs, urlsplit

from ..errors import InvalidSpanError
from .citation import resolve
from .links import view_path
from .page import HEADER_POLICY, render_html

KEY_BYTES = 24
Answer = tuple[int, str]
"""An HTTP status and its body (an HTML page, or one line of text)."""
HEADERS = (("Content-Security-Policy", HEADER_POLICY), ("X-Content-Type-Options", "nosniff"),
           ("Cache-Control", "no-store"), ("Referrer-Policy", "no-referrer"))
"""Sent with every page."""


def answer(chunk_id: str, query: str, *, home: str | None,
           served: tuple[str, ...] | None) -> Answer:
    """The page of ``chunk_id`` with the quote the query names (``start``, ``end``); 400
    for a malformed quote."""
    fields = parse_qs(query, keep_blank_values=True)
    try:
        start, end = (_number(fields, name) for name in ("start", "end"))
        if (start is None) != (end is None):
            raise ValueError
        return 200, render_html(resolve(chunk_id, home=home, start=start, end=end,
                                        served=served))
    except ValueError as exc:  # InvalidSpanError included
        reason = str(exc) if isinstance(exc, InvalidSpanError) else \
            "start and end must both be given, as numbers"
        return 400, f"bad quote: {reason}\n"


def _number(fields: dict[str, list[str]], name: str) -> int | None:
    values = fields.get(name)
    if not values:
        return None
    if len(values) > 1 or not values[0].isdigit() or len(values[0]) > 12:
        raise ValueError
    return int(values[0])


def serve_once(make: Callable[[str, str], Answer], chunk_id: str, *, timeout_s: float,
               on_ready: Callable[[str], None], start: int | None = None,
               end: int | None = None) -> bool:
    """Serve the page ``make(chunk_id, query)`` once from 127.0.0.1 (see the module);
    ``on_ready(url)`` is called once the server listens. True when the page was served,
    False at the timeout."""
    key = secrets.token_urlsafe(KEY_BYTES)
    path = view_path(chunk_id, key, start, end)
    served: list[bool] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        timeout = 10

        def do_GET(self) -> None:  # the name http.server calls
            refusal = _refusal(self, path, key, port)
            if refusal is not None:
                self._send(refusal[0], refusal[1], "text/plain; charset=utf-8")
                return
            status, body = make(chunk_id, urlsplit(self.path).query)
            self._send(status, body, "text/html; charset=utf-8" if status == 200
                       else "text/plain; charset=utf-8")
            served.append(status == 200)

        def _send(self, status: int, body: str, kind: str) -> None:
            data = body.encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            for name, value in HEADERS:
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: object) -> None:
            return  # nothing on the terminal per request

    with http.server.HTTPServer(("127.0.0.1", 0), Handler) as server:
        port = server.server_address[1]
        on_ready(f"http://127.0.0.1:{port}{path}#quote")
        deadline = time.monotonic() + timeout_s
        while not any(served):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            server.timeout = remaining
            server.handle_request()
    return True


def _refusal(request: http.server.BaseHTTPRequestHandler, path: str, key: str,
             port: int) -> tuple[int, str] | None:
    """Why the one-shot server refuses ``request``, or ``None``."""
    headers = request.headers
    if len(headers.get_all("Host") or ()) != 1 or headers.get_all("Origin"):
        return 403, "refused: one Host header and no Origin header\n"
    if headers["Host"].lower() not in (f"127.0.0.1:{port}", f"localhost:{port}"):
        return 421, "Host header not allowed\n"
    wanted, got = urlsplit(path), urlsplit(request.path)
    keys = parse_qs(got.query).get("key", [""])
    if got.path != wanted.path or not hmac.compare_digest(keys[0].encode(), key.encode()):
        return 404, "not found\n"
    return None
