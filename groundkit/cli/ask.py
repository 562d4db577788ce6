"""``grk ask``: a grounded answer, every quote re-verified against its file now."""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from typing import Any

from ..answer.extractive import DEFAULT, MAX_SENTENCES
from ..collection import Collection
from ..embeddings.ollama import OLLAMA_DEFAULT_HOST
from ..errors import UsageError
from ..text import terminal
from ..viewer.links import Views
from .numbers import finite
from .options import abstain_arguments, mode_arguments, mode_options
from .registry import EXIT_NO_ANSWER, Handler, command, emit
from .render import views_of


@command("ask", "Answer a question from a collection with exact, re-verified quotes "
         "(extractive by default; --llm ollama:MODEL to synthesise).")
def _ask(p: argparse.ArgumentParser) -> Handler:
    p.add_argument("question", metavar="QUESTION")
    p.add_argument("--collection", "-c", required=True, metavar="NAME")
    p.add_argument("--top-k", type=int, default=5, metavar="N",
                   help="passages to answer from (default 5)")
    mode_arguments(p)
    abstain_arguments(p)
    p.add_argument("--sentences", type=_sentences, metavar="N",
                   help=f"extractive: quote up to N sentences (1-{MAX_SENTENCES}; default "
                   f"{DEFAULT.max_sentences}, the measured choice); a further one must score "
                   f"at least {DEFAULT.keep:g} of the best and add a query term")
    p.add_argument("--superseded-as-current", action="store_true",
                   help="rank passages of documents that say they are superseded (archived, "
                   "deprecated, replaced) like any other; they stay marked (default: offered "
                   "after current ones, their sentences counting half)")
    p.add_argument("--llm", metavar="PROVIDER:MODEL", help="write the answer with a local "
                   "model: ollama:MODEL (an Ollama server) or llamacpp:MODEL (a pinned GGUF "
                   "model from `make llm`, or a .gguf path, run in-process); every quote in its "
                   "reply is checked against the passage it cites, and a reply whose quotes all "
                   "fail is withheld")
    p.add_argument("--llm-host", metavar="URL", help=f"the Ollama server (default "
                   f"{OLLAMA_DEFAULT_HOST}; OLLAMA_HOST is not read)")
    p.add_argument("--llm-timeout", type=finite, metavar="SECONDS",
                   help="seconds to wait for the model (default 120)")
    p.add_argument("--rewrite", action="store_true", help="with --llm: rewrite the question "
                   "into a search query first (shown; the original's hits stay in --json)")
    p.add_argument("--judge", action="store_true", help="with --llm: an advisory faithfulness "
                   "judgement of the answer (labelled advisory; it changes no verdict)")

    def run(args: argparse.Namespace) -> int:
        from ..answer import ask

        if not args.question.strip():
            raise UsageError("empty question: give the words to ask")
        if args.sentences is not None and args.llm:
            raise UsageError("--sentences applies to extractive answers (drop --llm)")
        choice = replace(DEFAULT, max_sentences=args.sentences or DEFAULT.max_sentences,
                         superseded=1.0 if args.superseded_as_current else DEFAULT.superseded)
        with Collection.open(args.collection, args.home) as coll:
            answer = ask(coll, args.question, mode=args.mode, top_k=args.top_k,
                         abstain=args.abstain, alpha=args.alpha, llm=args.llm,
                         llm_host=args.llm_host, llm_timeout=args.llm_timeout,
                         rewrite=args.rewrite, judge=args.judge, choice=choice,
                         **mode_options(args))
        data = with_views(answer.to_dict(), views_of(args))
        emit(args, data, lambda: print_answer(data))
        return 0 if data["kind"] in ("extractive", "llm") else EXIT_NO_ANSWER

    return run


def _sentences(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {value!r}") from None
    if not 1 <= n <= MAX_SENTENCES:
        raise argparse.ArgumentTypeError(f"must be 1 to {MAX_SENTENCES}, got {n}")
    return n


def with_views(data: dict[str, Any], views: Views) -> dict[str, Any]:
    """``data`` with ``view_url`` and ``view_command`` on every citation (the quote's own
    offsets) and every passage (its whole chunk)."""
    cited = [c for s in data.get("sentences", []) for c in
             [*s["citations"], *([s["context"]] if s.get("context") else [])]]
    cited += data.get("citations", [])
    cited += [side["citation"] for c in data.get("conflicts", []) for side in c["sides"]]
    for c in cited:
        c.update(views.of(c["chunk_id"], c["start"], c["end"]))
    for p in data.get("passages", []):
        p.update(views.of(p["chunk_id"]))
    return data


def _where(c: dict[str, Any]) -> str:
    """Where a citation is, on one line: the page of a PDF (an extracted view's line numbers
    mean nothing to a reader), the lines of any other file."""
    lines = (f"line {c['start_line']}" if c["start_line"] == c["end_line"]
             else f"lines {c['start_line']}-{c['end_line']}")
    place = c.get("page") or lines
    return (f"{c['collection']}:{c['path']} {place}, chars {c['start']}-{c['end']} "
            f"({c['verdict']})" + (f" — superseded ({c['superseded']})"
                                   if c.get("superseded") else "")
            + "".join(f" — in place of {r['path']} ({r['status']}: {r['reason']})"
                      for r in c.get("replaced", [])))


def print_answer(data: dict[str, Any]) -> None:
    """The answer, each sentence followed by where it comes from."""
    if "rewrite" in data:
        print(f"(searched for: {data['rewrite']['query']})")
    if data["kind"] not in ("extractive", "llm"):
        print(data["message"] or "no answer")
        return
    for n, sentence in enumerate(data["sentences"], start=1):
        mark = "" if sentence["supported"] else "  [unsupported: no verified quote]"
        if sentence.get("context"):
            print(terminal.line(f"  (table header: {sentence['context']['text']})"))
        print(terminal.block(f"{sentence['text']}{mark}"))
        for c in sentence["citations"]:
            print(terminal.line(f"  [{n}] {_where(c)}"))
            if c["headings"]:
                print(terminal.line("      " + " › ".join(c["headings"])))
            if c.get("link"):
                print(terminal.line(f"      open: {c['link']}"))
            if c.get("view_command"):
                print(terminal.line(f"      view: {c['view_url'] or c['view_command']}"))
    for conflict in data.get("conflicts", []):
        print(f"Sources disagree on {conflict['about']}:")
        for side in conflict["sides"]:
            print(terminal.line(f"  {', '.join(side['values'])} — {_where(side['citation'])}"))
    if data.get("superseded_only"):
        print(f"note: {data['superseded_only']}")
    if "judge" in data:
        j = data["judge"]
        print(f"advisory judgement ({j.get('model', 'model')}): {j['verdict']} — {j['reason']}",
              file=sys.stderr)
