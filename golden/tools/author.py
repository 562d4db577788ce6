"""Authoring aids for golden questions: find exact quotes, check overlap, check a draft file.

    python golden/tools/author.py locate DOC_ID "words of the passage" [--golden golden/v2]
    python golden/tools/author.py overlap "QUESTION" "QUOTE" ["QUOTE" ...]
    python golden/tools/author.py check golden/v2-drafts/DOMAIN.jsonl [--golden golden/v2]
    python golden/tools/author.py grep "pattern" [--golden golden/v2]
    python golden/tools/author.py view DOC_ID [--start N] [--length N] [--golden golden/v3]

``view`` prints a document as the harness reads it: for a PDF, HTML, DOCX, ODT or
EPUB file its text view (what groundkit indexes and quotes are anchored in), with
the code-point offset of every 20th line. ``locate`` matches the words with any
whitespace between them and prints the
exact text as a JSON string (ready to paste as a quote) and how often it
occurs. ``check`` applies every per-question lint rule of the version (the
corpus-wide minimums are checked on the assembled version by
``python -m evals.golden lint``). Quotes are never typed by hand.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from evals.golden.corpus import read_documents, version_of  # noqa: E402
from evals.golden.model import rules_for  # noqa: E402
from evals.golden.parse import parse_lines  # noqa: E402
from evals.golden.rules import question_problems, shared_stems  # noqa: E402


def _documents(golden: Path) -> dict[str, str]:
    read = read_documents(golden / "docs")
    for problem in read.problems:
        print(f"warning: {problem}", file=sys.stderr)
    return read.texts


def locate(args: argparse.Namespace) -> int:
    docs = _documents(args.golden)
    if args.doc_id not in docs:
        close = [d for d in docs if args.doc_id.split("/")[-1] in d][:10]
        print(f"no document {args.doc_id!r}; similar: {', '.join(close) or 'none'}")
        return 1
    text = docs[args.doc_id]
    pattern = re.compile(r"\s+".join(map(re.escape, args.words.split())))
    found = [m.group(0) for m in pattern.finditer(text)]
    if not found:
        print("not found (words must appear in this order, any whitespace between them)")
        return 1
    exact = found[0]
    n = text.count(exact)
    print(json.dumps(exact, ensure_ascii=False))
    print(f"occurs {n} time(s) in {args.doc_id}" + ("; set occurrence" if n > 1 else ""))
    elsewhere = [d for d, t in docs.items() if d != args.doc_id and exact in t]
    if elsewhere:
        print(f"also in: {', '.join(elsewhere[:10])}")
    return 0


def overlap(args: argparse.Namespace) -> int:
    shared = shared_stems(args.question, args.quotes)
    print("no shared content stems: a paraphrase" if not shared
          else f"shared stems: {', '.join(sorted(shared))}")
    return 0 if not shared else 1


def check(args: argparse.Namespace) -> int:
    docs = _documents(args.golden)
    rules = rules_for(version_of(args.golden))
    text = Path(args.draft).read_text(encoding="utf-8")
    questions, problems, incomplete = parse_lines(text, args.draft, docs, rules)
    for q in questions:
        problems += question_problems(q, docs, rules, complete=q.id not in incomplete)
    ids = Counter(q.id for q in questions)
    problems += [f"{q}: duplicate id ({n} times)" for q, n in ids.items() if n > 1]
    for problem in problems:
        print(problem)
    kinds = Counter(q.kind for q in questions)
    traits = Counter(t for q in questions for t in q.traits)
    near = sum(1 for q in questions if q.near_miss is not None)
    print(f"{len(questions)} questions: {dict(kinds)}; traits {dict(traits)}; near misses {near}; "
          f"{len(problems)} problem(s)", file=sys.stderr)
    return 1 if problems else 0


def grep(args: argparse.Namespace) -> int:
    pattern = re.compile(args.pattern, re.IGNORECASE)
    for doc_id, text in sorted(_documents(args.golden).items()):
        for m in pattern.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            start = max(0, m.start() - 60)
            context = " ".join(text[start:m.end() + 60].split())
            print(f"{doc_id}:{line}: {context}")
    return 0


def view(args: argparse.Namespace) -> int:
    docs = _documents(args.golden)
    if args.doc_id not in docs:
        print(f"no document {args.doc_id!r}")
        return 1
    text = docs[args.doc_id]
    end = len(text) if args.length is None else min(len(text), args.start + args.length)
    print(f"# {args.doc_id}: {len(text)} code points; showing [{args.start}, {end})")
    offset = args.start
    for n, line in enumerate(text[args.start:end].splitlines(keepends=True)):
        prefix = f"[{offset}] " if n % 20 == 0 else ""
        sys.stdout.write(prefix + line)
        offset += len(line)
    print()
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--golden", type=Path, default=REPO / "golden" / "v2")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("locate", help="find a passage and print its exact text")
    p.add_argument("doc_id")
    p.add_argument("words")
    p.set_defaults(run=locate)
    p = sub.add_parser("overlap", help="content stems a question shares with quotes")
    p.add_argument("question")
    p.add_argument("quotes", nargs="+")
    p.set_defaults(run=overlap)
    p = sub.add_parser("check", help="lint a draft file of questions")
    p.add_argument("draft")
    p.set_defaults(run=check)
    p = sub.add_parser("grep", help="every match of a regex in the corpus, with context")
    p.add_argument("pattern")
    p.set_defaults(run=grep)
    p = sub.add_parser("view", help="print a document's text (an extracted format's text view)")
    p.add_argument("doc_id")
    p.add_argument("--start", type=int, default=0, help="first code point shown")
    p.add_argument("--length", type=int, default=None, help="code points shown (default: all)")
    p.set_defaults(run=view)
    args = parser.parse_args()
    return int(args.run(args))


if __name__ == "__main__":
    raise SystemExit(main())
