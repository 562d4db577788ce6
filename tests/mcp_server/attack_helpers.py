"""Shared by the attack corpus: a real ``grk serve --transport http`` and raw HTTP helpers."""

from __future__ import annotations

import itertools
import json
import os
import select
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from server_process import interrupt

REPO = Path(__file__).resolve().parents[2]
TOKEN = "attack-token-0123456789abcdef"
ORIGIN = "http://localhost:6274"
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {},
    "clientInfo": {"name": "attacker", "version": "0"}}}


@dataclass
class HttpServer:
    url: str
    port: int
    stderr: Path
    session: dict[str, str]

    def base_headers(self) -> dict[str, str]:
        return {"authorization": f"Bearer {TOKEN}", "content-type": "application/json",
                "accept": "application/json, text/event-stream", **self.session}


@contextmanager
def http_server(home: Path, log: Path) -> Iterator[HttpServer]:
    """``grk serve --transport http`` on a free loopback port, with a token and one origin."""
    env = {**os.environ, "GRK_ATTACK_TOKEN": TOKEN}
    with open(log, "wb") as errlog:
        proc = subprocess.Popen(
            [sys.executable, "-m", "groundkit", "serve", "--home", str(home), "--collection",
             "k", "--transport", "http", "--port", "0", "--token-env", "GRK_ATTACK_TOKEN",
             "--allow-origin", ORIGIN],
            cwd=REPO, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=errlog)
    assert proc.stdout
    try:
        url, deadline = "", time.monotonic() + 60
        while not url:
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
            for line in log.read_text().splitlines():
                if "streamable HTTP at http://127.0.0.1:" in line:
                    url = line.split(" at ")[1].split()[0]
            time.sleep(0.05)
        server = HttpServer(url=url, port=int(url.rsplit(":", 1)[1].split("/")[0]),
                            stderr=log, session={})
        server.session = open_session(server)
        yield server
    finally:
        interrupt(proc, proc.stdout)


def open_session(server: HttpServer) -> dict[str, str]:
    """A 2025-11-25 session: initialize, then the initialized notification."""
    reply = httpx.post(server.url, json=INIT, headers=server.base_headers(), timeout=30)
    assert reply.status_code == 200, reply.text
    session = {"mcp-session-id": reply.headers["mcp-session-id"],
               "mcp-protocol-version": "2025-11-25"}
    httpx.post(server.url, json={"jsonrpc": "2.0", "method": "notifications/initialized"},
               headers={**server.base_headers(), **session}, timeout=30)
    return session


def raw_exchange(port: int, data: bytes, *, read: bool = True, timeout: float = 10) -> bytes:
    """Send ``data`` on a fresh TCP connection; the reply until the server closes (or none)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(data)
        if not read:
            return b""
        chunks, deadline = [], time.monotonic() + timeout
        while time.monotonic() < deadline:
            ready, _, _ = select.select([sock], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                break
            chunk = sock.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
            if b"\r\n\r\n" in b"".join(chunks) and _complete(b"".join(chunks)):
                break
        return b"".join(chunks)


def _complete(reply: bytes) -> bool:
    head, _, body = reply.partition(b"\r\n\r\n")
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return len(body) >= int(value.strip())
    return False


def raw_request(method: str, headers: list[tuple[str, str]], body: bytes = b"",
                version: str = "HTTP/1.1") -> bytes:
    lines = [f"{method} /mcp {version}", *(f"{k}: {v}" for k, v in headers),
             f"Content-Length: {len(body)}", "Connection: close"]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


def status_of(reply: bytes) -> int:
    return int(reply.split(b" ", 2)[1]) if reply.startswith(b"HTTP/") else 0


_IDS = itertools.count(7)


def tool_call(name: str, arguments: Any, id_: int | None = None) -> dict[str, Any]:
    """A ``tools/call`` request with an id of its own: a request id must not be reused within
    a session (the MCP spec), and the server keys a request's reply stream by its id, so a
    request abandoned in flight and a new one with its id would share a stream (the
    ``vanish-before-reply`` case then failed under load with 500, "Session terminated")."""
    return {"jsonrpc": "2.0", "id": next(_IDS) if id_ is None else id_,
            "method": "tools/call", "params": {"name": name, "arguments": arguments}}


def json_or_none(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None
