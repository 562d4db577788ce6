"""``grk questions import`` and ``export``: other tools' question sets in and out."""

from __future__ import annotations

import argparse
from collections import Counter
from typing import Any

from .questions_base import Action, action, collection_argument, write_rows
from .registry import emit


def _format_argument(p: argparse.ArgumentParser) -> None:
    from ..questions.interchange import FORMATS

    p.add_argument("format", metavar="FORMAT", choices=tuple(FORMATS),
                   help="; ".join(f"{k}: {v}" for k, v in FORMATS.items()))


@action("import", "Read another tool's question set, aligning each context to an exact "
        "quote of the collection (what cannot be aligned is reported, never guessed).")
def _import(p: argparse.ArgumentParser) -> Action:
    _format_argument(p)
    p.add_argument("source", metavar="SOURCE", help="the file (RAGAS, LlamaIndex) or folder "
                   "(BEIR) to read")
    collection_argument(p)
    p.add_argument("--out", required=True, metavar="FILE", help="the question file to write")
    p.add_argument("--force", action="store_true", help="replace --out if it exists")

    def run(args: argparse.Namespace) -> int:
        from ..collection import Collection
        from ..questions.align import Aligner
        from ..questions.documents import Indexed
        from ..questions.interchange import read, to_entries

        foreign = read(args.format, args.source)
        indexed = Indexed.open(args.collection, args.home)
        with Collection.open(args.collection, args.home) as coll:
            rows, problems = to_entries(foreign, Aligner(indexed, coll))
        write_rows(args.out, rows, force=args.force)
        report = import_report(foreign, rows, problems, args.out)
        emit(args, report, lambda: print_import(report))
        return 0

    return run


def import_report(foreign: list[Any], rows: list[dict[str, Any]],
                  problems: list[dict[str, Any]], out: str) -> dict[str, Any]:
    contexts = sum(len(f.contexts) for f in foreign)
    fuzzy = sum(r["notes"].count("aligned fuzzily") for r in rows)
    written = {r["notes"].split("source id ", 1)[1].split(";")[0] for r in rows}
    return {"out": out, "questions_read": len(foreign), "questions_written": len(rows),
            "questions_dropped": sorted(f.source_id for f in foreign
                                        if f.source_id not in written),
            "contexts": contexts, "unaligned": problems,
            "aligned": contexts - len(problems), "fuzzy": fuzzy,
            "kinds": dict(sorted(Counter(r["kind"] for r in rows).items()))}


def print_import(r: dict[str, Any]) -> None:
    share = f" ({r['aligned'] / r['contexts']:.1%})" if r["contexts"] else ""
    print(f"wrote {r['questions_written']} of {r['questions_read']} questions to {r['out']}: "
          f"{r['aligned']} of {r['contexts']} contexts aligned to exact quotes{share}, "
          f"{r['fuzzy']} of them fuzzily (those questions are drafts: check them)")
    for p in r["unaligned"]:
        print(f"  not aligned: {p['source_id']} context {p['context']}: {p['reason']}")
    if r["questions_dropped"]:
        print(f"  not written (no context aligned): {', '.join(r['questions_dropped'])}")


@action("export", "Write a question file in another tool's format (drafts are left out).")
def _export(p: argparse.ArgumentParser) -> Action:
    p.add_argument("file", metavar="FILE", help="the question file")
    _format_argument(p)
    collection_argument(p)
    p.add_argument("--out", required=True, metavar="PATH",
                   help="the file (RAGAS, LlamaIndex) or folder (BEIR) to write")
    p.add_argument("--force", action="store_true", help="write over --out if it exists")

    def run(args: argparse.Namespace) -> int:
        from pathlib import Path

        from ..errors import UsageError
        from ..questions.documents import Indexed
        from ..questions.files import read_rows
        from ..questions.interchange import write

        rows = read_rows(args.file)
        kept = [r for r in rows if r.get("status") != "draft"]
        if Path(args.out).exists() and not args.force:
            raise UsageError(f"{args.out} exists; choose another --out or pass --force")
        counts = write(args.format, kept, args.out, Indexed.open(args.collection,
                                                                 args.home).documents)
        data = {"out": args.out, "format": args.format, **counts,
                "drafts_left_out": len(rows) - len(kept)}
        emit(args, data, lambda: print(
            f"wrote {args.format} to {args.out}: " + ", ".join(
                f"{k} {v}" for k, v in data.items() if isinstance(v, int))))
        return 0

    return run


@action("review", "Walk the file's drafts in the terminal: each with its passage in context; "
        "accept, edit, drop or skip it (the file is saved after every decision).")
def _review(p: argparse.ArgumentParser) -> Action:
    p.add_argument("file", metavar="FILE", help="the question file, rewritten as you decide")
    collection_argument(p)

    def run(args: argparse.Namespace) -> int:
        from ..questions.documents import Indexed
        from ..questions.review import review

        tally = review(args.file, Indexed.open(args.collection, args.home))
        data = {"file": args.file, **tally.to_dict()}
        emit(args, data, lambda: print(
            f"\n{args.file}: accepted {tally.accepted}, edited {tally.edited}, dropped "
            f"{tally.dropped}, skipped {tally.skipped}, left {tally.left}"))
        return 0

    return run
