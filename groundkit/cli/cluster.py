"""``grk index --ray [ADDRESS]``: where the indexer's parallel work runs (ADR-0014)."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from contextlib import contextmanager

from ..collection import Executor


def ray_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--ray", nargs="?", const="", default=None, metavar="ADDRESS",
                   help="read, chunk and embed on a Ray cluster (extra 'ray'): files in "
                   "partitions as Ray tasks, embedding in Ray actors (the model loaded once "
                   "per actor); the generation is the same bytes a single process builds. "
                   "ADDRESS is the head's HOST:PORT (or ray://HOST:PORT); omitted, the "
                   "cluster RAY_ADDRESS names or one started on this machine with ray "
                   "start, else a new local Ray. Every node reads the documents at the same "
                   "paths (a shared filesystem)")


@contextmanager
def executor(args: argparse.Namespace) -> Iterator[Executor | None]:
    """The executor ``--ray`` asks for (``None``: in-process), closed afterwards."""
    if getattr(args, "ray", None) is None:
        yield None
        return
    from ..collection.ray_executor import RayExecutor

    chosen = RayExecutor(args.ray or None)
    try:
        yield chosen
    finally:
        chosen.close()
