"""A small JSON-over-HTTP request handler for loopback stand-ins of real services.

Bounded and silent: a body over :attr:`JsonHandler.body_limit` is refused (413)
and the connection closed, nothing is logged to stderr, and every reply carries
its length (HTTP/1.1 keep-alive).
"""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler
from typing import Any


class HttpError(Exception):
    """A reply with this status and ``{"error": message}``."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class JsonHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 10.0

    @property
    def body_limit(self) -> int:
        return 8 * 1024 * 1024

    def log_message(self, format: str, *args: Any) -> None:
        """Silent: library code never writes to stderr."""

    def read_json(self) -> dict[str, Any]:
        """The request body as a JSON object, or :class:`HttpError` (400, 413)."""
        length = int(self.headers.get("Content-Length") or 0)
        if length > self.body_limit:
            self.close_connection = True
            raise HttpError(413, f"request body too large: {length} bytes")
        raw = self.rfile.read(length) if length else b""
        if not raw:
            raise HttpError(400, "missing request body")
        try:
            body = json.loads(raw)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise HttpError(400, f"invalid JSON: {exc}") from exc
        if not isinstance(body, dict):
            raise HttpError(400, "request body must be a JSON object")
        return body

    def drain(self) -> None:
        """Read and drop a body that will not be used (or close if it is too large)."""
        length = int(self.headers.get("Content-Length") or 0)
        if 0 < length <= self.body_limit:
            self.rfile.read(length)
        elif length:
            self.close_connection = True

    def send_json(self, status: int, payload: Any) -> None:
        self.send_bytes(status, json.dumps(payload).encode("utf-8"),
                        "application/json; charset=utf-8")

    def send_bytes(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)
