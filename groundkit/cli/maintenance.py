"""``grk gc``: remove old generations and the chunk rows nothing retained references."""

from __future__ import annotations

import argparse

from ..collection import collect_garbage
from ..errors import UsageError
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
