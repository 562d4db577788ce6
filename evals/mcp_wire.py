"""A protocol-level MCP client for the harness's MCP stages: JSON-RPC on the wire.

The MCP stages measure ``grk serve`` as a client sees it, once per question, so the
client's own cost counts in every figure. The official SDK client costs more than the
server: about 0.6 ms a hit, most of it validating each result against the tool's
output schema in pure Python (profiled). This client speaks the protocol directly, and
is synchronous:

* **stdio**: ``grk serve`` as a child process, one JSON-RPC message a line each way;
* **streamable HTTP**: one keep-alive connection (``http.client``), ``POST`` per
  message with the bearer token, the ``Mcp-Session-Id`` the server assigned and the
  protocol version; a reply is plain JSON or server-sent events.

It still checks what a careful client checks: the ``initialize`` handshake (protocol
version, a ``tools`` capability), that every reply answers the request's id, and that
every ``structuredContent`` validates against the ``outputSchema`` the server declared
in ``tools/list`` (with ``jsonschema_rs``, compiled). Tests keep driving the server
through the SDK client and the MCP Inspector too (tests/mcp_server/).
"""

from __future__ import annotations

import http.client
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from groundkit.errors import GroundkitError
from groundkit.testing.serve_http import http_server

PROTOCOL = "2025-11-25"
"""The protocol version this client asks for (the server must agree)."""
CLIENT_INFO = {"name": "groundkit-evals", "version": "1"}

Send = Callable[[dict[str, Any]], "dict[str, Any] | None"]
"""Send one JSON-RPC message; the reply for a request, ``None`` for a notification."""


class WireError(GroundkitError):
    """The server broke the protocol or a tool call failed (the run stops)."""


class Session:
    """An initialised MCP session over one transport's ``send``."""

    def __init__(self, send: Send) -> None:
        self._send = send
        self._next = 0
        self.server: Mapping[str, Any] = {}
        self._schemas: dict[str, Any] = {}

    def open(self) -> Session:
        """``initialize``, ``notifications/initialized``, then ``tools/list``."""
        result = self.request("initialize", {"protocolVersion": PROTOCOL, "capabilities": {},
                                             "clientInfo": CLIENT_INFO})
        if result.get("protocolVersion") != PROTOCOL:
            raise WireError(f"the server answered protocol {result.get('protocolVersion')!r}, "
                            f"not {PROTOCOL}")
        if "tools" not in result.get("capabilities", {}):
            raise WireError("the server does not offer tools")
        self.server = result.get("serverInfo", {})
        self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        import jsonschema_rs

        for tool in self.request("tools/list", {}).get("tools", []):
            if "outputSchema" in tool:
                self._schemas[tool["name"]] = jsonschema_rs.validator_for(tool["outputSchema"])
        return self

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """One request's ``result`` (a JSON-RPC error raises :class:`WireError`)."""
        self._next += 1
        reply = self._send({"jsonrpc": "2.0", "id": self._next, "method": method,
                            "params": params})
        if reply is None or reply.get("id") != self._next:
            raise WireError(f"{method}: the reply does not answer request {self._next}")
        if "error" in reply:
            raise WireError(f"{method} failed: {reply['error'].get('message')}")
        return dict(reply["result"])

    def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """The tool's ``structuredContent``, validated against its declared output schema."""
        result = self.request("tools/call", {"name": tool, "arguments": arguments})
        if result.get("isError"):
            text = " ".join(c.get("text", "") for c in result.get("content", []))
            raise WireError(f"MCP {tool} failed: {text}")
        content = result.get("structuredContent")
        validator = self._schemas.get(tool)
        if content is None or validator is None:
            raise WireError(f"MCP {tool} returned no structured content or declared no schema")
        errors = [e.message for e in validator.iter_errors(content)]
        if errors:
            raise WireError(f"MCP {tool} result breaks its output schema: {errors[0]}")
        return dict(content)


@contextmanager
def session(transport: str, home: Path, name: str, token: str) -> Iterator[Session]:
    """An open :class:`Session` with a ``grk serve`` child serving collection ``name``."""
    with ExitStack() as stack:
        if transport == "http":
            url, _ = stack.enter_context(http_server(home, token, collections=[name]))
            send = stack.enter_context(_http(url, token))
        elif transport == "stdio":
            send = stack.enter_context(_stdio(home, name))
        else:
            raise ValueError(f"unknown MCP transport {transport!r}")
        yield Session(send).open()


@contextmanager
def _stdio(home: Path, name: str) -> Iterator[Send]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "groundkit", "serve", "--home", str(home), "--collection", name],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        env=dict(os.environ))
    assert proc.stdin is not None and proc.stdout is not None
    stdin, stdout = proc.stdin, proc.stdout

    def send(message: dict[str, Any]) -> dict[str, Any] | None:
        stdin.write(json.dumps(message).encode() + b"\n")
        stdin.flush()
        if "id" not in message:
            return None
        while line := stdout.readline():
            reply = json.loads(line)
            if reply.get("id") == message["id"]:  # skip the server's notifications
                return dict(reply)
        raise WireError(f"grk serve (stdio) exited (status {proc.poll()}) before answering")

    try:
        yield send
    finally:
        stdin.close()  # end of input: the server exits
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        stdout.close()


@contextmanager
def _http(url: str, token: str) -> Iterator[Send]:
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=120)
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {token}",
               "Accept": "application/json, text/event-stream"}

    def send(message: dict[str, Any]) -> dict[str, Any] | None:
        conn.request("POST", parts.path, body=json.dumps(message).encode(), headers=headers)
        response = conn.getresponse()
        body = response.read()
        if response.status >= 400 or ("id" in message) != (response.status == 200):
            raise WireError(f"HTTP {response.status} for {message.get('method')}: "
                            f"{body[:200]!r}")
        if "mcp-session-id" not in {k.lower() for k in headers}:
            session_id = response.getheader("mcp-session-id")
            if session_id is None:
                raise WireError("the server assigned no Mcp-Session-Id")
            headers.update({"Mcp-Session-Id": session_id, "Mcp-Protocol-Version": PROTOCOL})
        return _reply(body, message["id"]) if "id" in message else None

    try:
        yield send
    finally:
        conn.close()


def _reply(body: bytes, request_id: int) -> dict[str, Any]:
    """The message answering ``request_id`` in a JSON body or a server-sent event stream."""
    text = body.decode("utf-8")
    if text.lstrip().startswith("{"):
        return dict(json.loads(text))
    for line in text.splitlines():
        if line.startswith("data:"):
            message = json.loads(line[5:])
            if message.get("id") == request_id:
                return dict(message)
    raise WireError(f"no reply to request {request_id} in the event stream")
