"""Links to a citation's page, as every face gives them (standard library only: ``grk
search`` imports this and nothing else of the viewer).

A page exists only while something serves it, so a face gives two things:

* ``view_command``, ``grk open CHUNK_ID`` (with ``--start``/``--end`` for a quote inside
  the chunk, ``--home`` where the command was given one): it works whenever the
  collection does, because it starts its own one-shot server;
* ``view_url``, the page's URL on a running ``grk serve --transport http``, or ``null``.
  The MCP server gives its own; the CLI gives one only when told where a server runs,
  by :data:`SERVER_ENV` (``http://127.0.0.1:8765``), with the token of a server started
  with ``--token-env`` in :data:`TOKEN_ENV`. Such a URL works only while that server runs
  and serves that collection.

A URL carries, instead of the token, the page's key: an HMAC of the token and the chunk
id (:func:`view_key`), which opens that one chunk's page and reveals nothing else.
"""

from __future__ import annotations

import hmac
import ipaddress
import os
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import quote, urlsplit

from ..errors import UsageError

SERVER_ENV = "GROUNDKIT_VIEW_SERVER"
"""The base URL of a running ``grk serve --transport http`` the CLI links its pages to."""
TOKEN_ENV = "GROUNDKIT_VIEW_TOKEN"
"""That server's bearer token, where it was started with ``--token-env``."""
MIN_TOKEN_CHARS = 16


def view_key(token: str, chunk_id: str) -> str:
    """The key of ``chunk_id``'s page on a server whose bearer token is ``token``."""
    return hmac.new(token.encode(), f"groundkit view {chunk_id}".encode(),
                    "sha256").hexdigest()[:32]


def view_path(chunk_id: str, key: str | None, start: int | None = None,
              end: int | None = None) -> str:
    """The path and query of a page (add ``#quote`` to scroll to the highlight)."""
    query = [f"key={quote(key, safe='')}"] if key else []
    if start is not None and end is not None:
        query += [f"start={start}", f"end={end}"]
    return f"/view/{quote(chunk_id, safe=':')}" + ("?" + "&".join(query) if query else "")


def open_command(chunk_id: str, start: int | None = None, end: int | None = None,
                 home: str | None = None) -> str:
    """The shell command that opens the page: ``grk open CHUNK_ID [--start N --end N]``."""
    argv = ["grk", "open", chunk_id]
    if start is not None and end is not None:
        argv += ["--start", str(start), "--end", str(end)]
    if home is not None:
        argv += ["--home", str(home)]
    return shlex.join(argv)


@dataclass(frozen=True, slots=True)
class ViewServer:
    """A running server of pages: its base URL (``http://127.0.0.1:8765``) and token."""

    base: str
    token: str | None = None

    def url(self, chunk_id: str, start: int | None = None, end: int | None = None) -> str:
        """The page's URL, keyed when the server wants a token, ending in ``#quote``."""
        key = view_key(self.token, chunk_id) if self.token else None
        return self.base + view_path(chunk_id, key, start, end) + "#quote"


def server_from_env(environ: Mapping[str, str] | None = None) -> ViewServer | None:
    """The server :data:`SERVER_ENV` names, or ``None`` when it is unset. A value that is
    not ``http://`` on a loopback address with a port, or a token too short, is a
    :class:`UsageError` (a link is never made to another machine)."""
    env = os.environ if environ is None else environ
    value = env.get(SERVER_ENV, "").strip()
    if not value:
        return None
    parts = urlsplit(value)
    try:
        port = parts.port
        loopback = ipaddress.ip_address("127.0.0.1" if parts.hostname == "localhost"
                                        else parts.hostname or "").is_loopback
    except ValueError:
        port, loopback = None, False
    if parts.scheme != "http" or not loopback or port is None or \
            parts.path.strip("/") or parts.query or parts.fragment or parts.username:
        raise UsageError(f"{SERVER_ENV}={value!r}: give the base URL of a grk serve "
                         "--transport http on this machine, e.g. http://127.0.0.1:8765")
    token = env.get(TOKEN_ENV) or None
    if token is not None and len(token) < MIN_TOKEN_CHARS:
        raise UsageError(f"{TOKEN_ENV}: shorter than {MIN_TOKEN_CHARS} characters; give the "
                         "token of the server's --token-env")
    return ViewServer(base=f"http://{parts.netloc}", token=token)


@dataclass(frozen=True, slots=True)
class Views:
    """How a CLI command links its hits and citations to their pages."""

    server: ViewServer | None = None
    home: str | None = None
    """The ``--home`` the command was given, repeated in ``grk open``'s command line."""

    def of(self, chunk_id: str, start: int | None = None,
           end: int | None = None) -> dict[str, str | None]:
        """``view_url`` (``None`` without a server) and ``view_command`` of a citation."""
        return {"view_url": self.server.url(chunk_id, start, end) if self.server else None,
                "view_command": open_command(chunk_id, start, end, self.home)}

    def line(self, chunk_id: str, start: int | None = None, end: int | None = None) -> str:
        """What the human output shows: the URL where a server runs, else the command."""
        view = self.of(chunk_id, start, end)
        return view["view_url"] or view["view_command"] or ""
