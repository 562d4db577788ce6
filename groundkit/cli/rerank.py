"""Reranking on the command line: ``grk search --rerank`` and ``grk rerankers``."""

from __future__ import annotations

import argparse
from typing import Any

from ..collection import Collection, collection_dir
from ..collection import rerankers as registry
from ..retrieval.rerank import DEPTH, METHODS
from .registry import Handler, command, emit


def rerank_arguments(p: argparse.ArgumentParser) -> None:
    """``--rerank`` and its options (``grk search``)."""
    p.add_argument("--rerank", metavar="NAME|PATH", help="re-score the top hits with a local "
                   "cross-encoder: a reranker registered for the collection (grk rerankers), "
                   "a sentence-transformers CrossEncoder model folder, or llamacpp:MODEL (the "
                   "local reader judging each passage)")
    p.add_argument("--rerank-depth", type=int, default=DEPTH, metavar="N",
                   help=f"with --rerank: how many of the first stage's hits it re-scores "
                   f"(default {DEPTH})")
    p.add_argument("--rerank-method", choices=METHODS, default=METHODS[0],
                   help="with --rerank: replace the first stage's order within the shortlist "
                   "(default), or fuse both orders by reciprocal rank (rrf)")


def rerank_options(args: argparse.Namespace, coll: Collection) -> dict[str, Any]:
    """The search options ``--rerank`` asks for (the model loaded), or none."""
    if args.rerank is None:
        return {}
    reranker = registry.load(coll.snapshot, args.rerank, allow_path=True)
    return {"rerank": reranker, "rerank_depth": args.rerank_depth,
            "rerank_method": args.rerank_method}


@command("rerankers", "List, add or remove the rerankers registered for a collection.")
def _rerankers(p: argparse.ArgumentParser) -> Handler:
    p.add_argument("--collection", "-c", required=True, metavar="NAME")
    p.add_argument("--add", nargs=2, metavar=("NAME", "PATH"), help="register the "
                   "cross-encoder model folder PATH (or llamacpp:MODEL, the local reader as a "
                   "relevance judge) as NAME (its weights are hashed: a changed model is "
                   "refused later)")
    p.add_argument("--remove", metavar="NAME", help="forget the reranker NAME")

    def run(args: argparse.Namespace) -> int:
        directory = collection_dir(args.collection, args.home)
        with Collection.open(args.collection, args.home):  # it must exist
            pass
        if args.add:
            registry.register(directory, args.add[0], args.add[1])
        if args.remove:
            registry.unregister(directory, args.remove)
        with Collection.open(args.collection, args.home) as coll:
            table = registry.registered(coll.snapshot)

        def human() -> None:
            if not table:
                print(f"no rerankers registered for {args.collection}")
            for name, entry in sorted(table.items()):
                identity = entry["identity"]
                print(f"{name}: {entry['path']} (sha256 {identity['weights_sha256'][:12]}…, "
                      f"max length {identity['max_length']})")

        emit(args, {"collection": args.collection, "rerankers": table}, human)
        return 0

    return run
