"""Maintenance: ``grk gc`` (old generations and the chunk rows nothing retained references)
and ``grk drop`` (a whole collection)."""

from __future__ import annotations

import argparse
import sys

from ..collection import collect_garbage, collection_dir, list_collections, resolve_home
from ..collection.home import drop_collection
from ..errors import CollectionNotFoundError, UsageError
from .registry import Handler, command, emit


def _mib(n: int) -> str:
    return f"{n / 1_048_576:.1f} MiB"


@command("gc", "Remove old generations, their derived files and unreferenced chunk rows.")
def _gc(p: argparse.ArgumentParser) -> Handler:
    p.add_argument("--collection", "-c", required=True, metavar="NAME")
    p.add_argument("--keep", type=int, metavar="N", help="generations to keep, the current "
                   "one included (default: the collection's setting, else 2)")
    p.add_argument("--vacuum", action="store_true", help="also rewrite the store file to "
                   "return free pages to the filesystem (needs free space about its size)")

    def run(args: argparse.Namespace) -> int:
        if args.keep is not None and args.keep < 1:
            raise UsageError(f"--keep must be at least 1, got {args.keep}")
        report = collect_garbage(args.collection, home=args.home, keep=args.keep,
                                 vacuum=args.vacuum)
        data = {"collection": args.collection, **report.to_dict()}

        def human() -> None:
            print(f"{args.collection}: removed {len(report.generations_removed)} generation(s), "
                  f"{report.chunks_removed} chunk rows, {_mib(report.derived_bytes_removed)} "
                  f"of derived files; store {_mib(report.store_bytes_before)} -> "
                  f"{_mib(report.store_bytes_after)}")
            print(f"  kept generations {', '.join(map(str, sorted(report.retained))) or 'none'}")
            if report.held_by_readers:
                print("  held by open readers (collected once they close): "
                      + ", ".join(map(str, report.held_by_readers)))
            if report.checkpoint and report.checkpoint["busy"]:
                print("  WAL checkpoint partial: readers are reading; run grk gc again later")

        emit(args, data, human)
        return 0

    return run


@command("drop", "Delete a collection (its index and settings; never your documents).")
def _drop(p: argparse.ArgumentParser) -> Handler:
    p.add_argument("name", metavar="NAME", help="the collection to delete")
    p.add_argument("--yes", "-y", action="store_true",
                   help="do not ask for confirmation (needed when stdin is not a terminal)")

    def run(args: argparse.Namespace) -> int:
        directory = collection_dir(args.name, args.home)
        if args.name not in list_collections(args.home):
            raise CollectionNotFoundError(f"no collection named {args.name!r} in "
                                          f"{resolve_home(args.home)}")
        if not args.yes:
            if not sys.stdin.isatty():
                raise UsageError(f"refusing to delete {args.name!r} without confirmation: "
                                 "pass --yes")
            print(f"delete collection {args.name!r} ({directory})? Your documents are not "
                  "touched. [y/N] ", end="", file=sys.stderr, flush=True)
            answer = sys.stdin.readline()
            if answer.strip().lower() not in {"y", "yes"}:
                print("kept", file=sys.stderr)
                return 1
        removed = drop_collection(args.name, args.home)
        emit(args, {"collection": args.name, "removed": str(removed)},
             lambda: print(f"deleted collection {args.name} ({removed})"))
        return 0

    return run
