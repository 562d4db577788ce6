"""``grk questions``: draft, lint, split, import, export and review a question file.

Each action is a nested subcommand with its own options; ``--json`` and ``--home``
may come before or after the action's name.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from typing import Any

from ..retrieval.gate import ALPHA
from . import questions_io
from .numbers import finite
from .questions_base import (
    ACTIONS,
    EXIT_LINT_ERRORS,
    Action,
    action,
    collection_argument,
    write_rows,
)
from .registry import Handler, command, emit

_LOADED = (questions_io,)  # importing it registers import, export and review
ORDER = ("draft", "review", "lint", "split", "import", "export")
"""The order ``grk questions --help`` lists the actions in: the order of the work."""

@command("questions", "Draft, lint, split, import, export and review your own question file.")
def _questions(p: argparse.ArgumentParser) -> Handler:
    sub = p.add_subparsers(dest="questions_action", metavar="ACTION", required=True)
    for name in sorted(ACTIONS, key=lambda n: (ORDER.index(n) if n in ORDER else len(ORDER), n)):
        help_text, configure = ACTIONS[name]
        nested = sub.add_parser(name, help=help_text, description=help_text)
        nested.add_argument("--home", metavar="DIR", default=argparse.SUPPRESS,
                            help="where collections live (overrides $GROUNDKIT_HOME)")
        nested.add_argument("--json", action="store_true", default=argparse.SUPPRESS,
                            help="machine-readable JSON on stdout")
        nested.set_defaults(questions_run=configure(nested))

    def run(args: argparse.Namespace) -> int:
        chosen: Action = args.questions_run
        return chosen(args)

    return run


@action("lint", "Check a question file against a collection: quotes, paraphrases, duplicates, "
        "leaks, drafts, and counts against what each measurement needs.")
def _lint(p: argparse.ArgumentParser) -> Action:
    p.add_argument("file", metavar="FILE", help="the question file (JSON lines)")
    collection_argument(p)
    p.add_argument("--alpha", type=finite, default=ALPHA, metavar="A",
                   help=f"the alpha a calibration would use (default {ALPHA})")
    p.add_argument("--show", type=int, default=50, metavar="N",
                   help="findings to print (default 50; --json has them all)")

    def run(args: argparse.Namespace) -> int:
        from ..questions.documents import Indexed
        from ..questions.lint import lint

        report = lint(args.file, Indexed.open(args.collection, args.home), alpha=args.alpha)
        emit(args, report.to_dict(), lambda: print_lint(report.to_dict(), args.show))
        if report.errors and not args.json:
            print(f"grk questions lint: {len(report.errors)} error(s)", file=sys.stderr)
        return EXIT_LINT_ERRORS if report.errors else 0

    return run


def print_lint(data: dict[str, Any], show: int) -> None:
    c, m = data["counts"], data["measurements"]
    print(f"{data['path']} on {data['collection']} (generation {data['generation']}): "
          f"{c['questions']} questions, {data['errors']} error(s), "
          f"{data['warnings']} warning(s)")
    print("  kinds: " + ", ".join(f"{k} {n}" for k, n in sorted(c["kinds"].items())))
    if c["traits"]:
        print("  traits: " + ", ".join(f"{k} {n}" for k, n in c["traits"].items()))
    if c["split"]:
        print("  split: " + ", ".join(f"{k} {n}" for k, n in c["split"].items()))
    quotes = data["quotes"]
    whole = sum(1 for q in quotes if q["whole_in_chunk"])
    unique = sum(1 for q in quotes if q["occurrences"] == 1)
    print(f"  quotes: {len(quotes)} found exactly, {unique} unique in their document, "
          f"{whole} inside one chunk")
    cal, delta = m["calibration"], m["ndcg10_delta"]
    chance = cal["overshoot_chance"]
    print(f"  calibration ({cal['part']}): {cal['no_answer']} no-answer at alpha {cal['alpha']:g}"
          + ("" if chance is None else f": P(false-answer rate > {cal['overshoot_limit']:.2g})"
             f" = {chance:.1%}")
          + f"; needs {cal['needed_first']} (and stays under from {cal['needed_steady']})")
    width = delta["ci95_width"]
    print(f"  nDCG@10 delta ({delta['part']}): {delta['answerable']} answerable: "
          + ("too few for an interval" if width is None else
             f"expected 95% interval ±{width / 2:.3f} (per-question sd {delta['sd_assumed']}; "
             f"worst case ±{delta['ci95_width_worst_case'] / 2:.3f})"))
    for f in data["findings"][:show]:
        print(f"{f['level']}: {f['message']}")
    if len(data["findings"]) > show:
        print(f"… and {len(data['findings']) - show} more (--show N, or --json)")


@action("draft", "Draft a question file from the collection: sampled passages with exact "
        "quotes and empty questions, and no-answer drafts with probes and a near miss.")
def _draft(p: argparse.ArgumentParser) -> Action:
    collection_argument(p)
    p.add_argument("--n", type=int, default=50, metavar="N",
                   help="passages to draft answerable questions for (default 50)")
    p.add_argument("--no-answer", type=int, metavar="N",
                   help="no-answer drafts (default N / 5)")
    p.add_argument("--seed", type=int, default=0, metavar="S",
                   help="the sample's seed (default 0; the same seed, the same drafts)")
    p.add_argument("--out", metavar="FILE", help="write the drafts here (default: stdout)")
    p.add_argument("--force", action="store_true", help="replace --out if it exists")
    p.add_argument("--llm", metavar="ollama:MODEL", help="a chat model proposes each "
                   "question, a paraphrase and a near miss (all kept as drafts)")
    p.add_argument("--ollama-host", metavar="URL",
                   help="Ollama server for --llm (default http://127.0.0.1:11434)")

    def run(args: argparse.Namespace) -> int:
        from ..errors import UsageError
        from ..questions.draft import draft

        if args.n < 1 or (args.no_answer is not None and args.no_answer < 0):
            raise UsageError("--n must be at least 1 and --no-answer at least 0")
        if args.ollama_host and not args.llm:
            raise UsageError("--ollama-host only applies with --llm ollama:MODEL")
        chat = _chat(args) if args.llm else None  # a bad --llm fails before sampling
        try:
            rows = draft(args.collection, n=args.n, no_answer=args.no_answer, seed=args.seed,
                         home=args.home)
        except BaseException:
            if chat is not None:
                chat.close()
            raise
        if chat is not None:
            from ..questions.propose import propose

            try:
                rows = propose(rows, chat, args.llm)
            finally:
                chat.close()
        if args.out is None:
            for row in rows:
                print(json.dumps(row, ensure_ascii=False))
            return 0
        write_rows(args.out, rows, force=args.force)
        summary = draft_summary(rows, args.out)
        emit(args, summary, lambda: print_draft(summary, args))
        return 0

    return run


def _chat(args: argparse.Namespace) -> Any:
    from ..answer.llm import ChatModel, parse_llm

    _, model = parse_llm(args.llm)
    return ChatModel(model, **({"host": args.ollama_host} if args.ollama_host else {}))


def draft_summary(rows: list[dict[str, Any]], out: str) -> dict[str, Any]:
    passages = [r["answers"][0] for r in rows if r["kind"] != "no_answer" and r["answers"]]
    return {"out": out, "entries": len(rows), "passages": len(passages),
            "documents": len({a["doc_id"] for a in passages}),
            "kinds": dict(sorted(Counter(r["kind"] for r in rows).items())),
            "proposed": sum(1 for r in rows if r["question"])}


def print_draft(s: dict[str, Any], args: argparse.Namespace) -> None:
    print(f"wrote {s['entries']} drafts to {s['out']}: {s['passages']} passages from "
          f"{s['documents']} documents; " + ", ".join(f"{k} {n}" for k, n in s["kinds"].items())
          + (f"; {s['proposed']} with a proposed question" if s["proposed"] else ""))
    print(f"next: grk questions review {s['out']} -c {args.collection} (write or accept each "
          f"question), then grk questions lint {s['out']} -c {args.collection}")


@action("split", "Deal the file's seeded train / calibration / test parts into it "
        "(grk calibrate uses calibration, grk eval reports abstention on test).")
def _split(p: argparse.ArgumentParser) -> Action:
    p.add_argument("file", metavar="FILE", help="the question file, rewritten in place")
    p.add_argument("--seed", type=int, required=True, metavar="S", help="the deal's seed")
    p.add_argument("--keep", action="store_true",
                   help="keep the parts lines already have; deal only the others")
    p.add_argument("--force", action="store_true", help="deal every line anew")

    def run(args: argparse.Namespace) -> int:
        from ..questions.splitfile import split_file

        done = split_file(args.file, args.seed, keep=args.keep, force=args.force)

        def human() -> None:
            print(f"{done['path']}: dealt {done['dealt']} question(s) with seed {done['seed']}"
                  + (f", kept {done['kept']}" if done["kept"] else "") + ": "
                  + ", ".join(f"{k} {n}" for k, n in done["parts"].items())
                  + " (no_answer: " + ", ".join(f"{k} {n}" for k, n in
                                                done["no_answer"].items()) + ")")

        emit(args, done, human)
        return 0

    return run
