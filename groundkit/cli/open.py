"""``grk open ID``: a citation's page in the browser (:mod:`groundkit.viewer`).

The id is looked up first (a malformed id, an unknown collection or chunk, or a quote
outside the chunk is an error before anything listens); then a one-shot server on
127.0.0.1 serves the page once, made when the browser asks for it, and ends, or ends at
``--timeout``.
"""

from __future__ import annotations

import argparse
import sys
import webbrowser

from ..collection import Collection
from ..errors import UsageError
from ..model import split_chunk_id
from ..viewer.serve import answer, serve_once
from .registry import Handler, command

DEFAULT_TIMEOUT_S = 120.0


@command("open", "Open a citation in the browser: the cited words highlighted where they "
         "stand in the file, with the verdict checked now.")
def _open(p: argparse.ArgumentParser) -> Handler:
    p.add_argument("chunk_id", metavar="CHUNK_ID", help="the chunk to show")
    p.add_argument("--start", type=int, metavar="N", help="a quote inside the chunk: its "
                   "first code point (document offsets, as search and ask print them)")
    p.add_argument("--end", type=int, metavar="N", help="the quote's end (exclusive)")
    p.add_argument("--print", action="store_true", dest="print_url", help="print the URL "
                   "instead of opening the default browser (then serve it once)")
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, metavar="S",
                   help=f"stop serving after S seconds if nobody opened the page (default "
                   f"{DEFAULT_TIMEOUT_S:g})")

    def run(args: argparse.Namespace) -> int:
        _check(args)

        def ready(url: str) -> None:
            if args.print_url or not webbrowser.open(url):
                print(url, flush=True)

        def make(chunk_id: str, query: str) -> tuple[int, str]:
            return answer(chunk_id, query, home=args.home, served=None)

        if serve_once(make, args.chunk_id, timeout_s=args.timeout, on_ready=ready,
                      start=args.start, end=args.end):
            return 0
        print(f"grk open: nobody opened the page within {args.timeout:g} s; stopped",
              file=sys.stderr)
        return 1

    return run


def _check(args: argparse.Namespace) -> None:
    """Fail before listening: a bad id, collection, chunk or quote, or a bad timeout."""
    if args.timeout <= 0:
        raise UsageError(f"--timeout {args.timeout:g}: give a positive number of seconds")
    if (args.start is None) != (args.end is None):
        raise UsageError("--start and --end go together")
    name, _ = split_chunk_id(args.chunk_id)
    with Collection.open(name, args.home) as coll:
        chunk = coll.chunk(args.chunk_id)
    if args.start is not None and not chunk.start <= args.start < args.end <= chunk.end:
        raise UsageError(f"--start {args.start} --end {args.end}: the quote must lie inside "
                         f"the chunk [{chunk.start}, {chunk.end})")
