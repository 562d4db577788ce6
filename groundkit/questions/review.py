"""``grk questions review``: a terminal loop over a file's drafts, saving as it goes.

Each draft (``status: draft``, or an empty question) is shown with its passage in
its document: the path and line, the text around it, the quote between ``>>>``
and ``<<<``; a no-answer draft shows its near miss and probes. The person then
accepts it (a question is needed), edits the question (which accepts it), drops
it, skips it or quits. Every decision rewrites the file at once (atomically), so
quitting, an interrupt or a lost terminal loses nothing decided.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .documents import Indexed
from .files import read_rows, write_rows
from .parse import find_all
from .rules import shared_stems

AROUND = 240
"""Characters of the document shown on each side of the passage."""
PROMPT = "[a]ccept  [e]dit question  [d]rop  [s]kip  [q]uit > "
_COUNTERS = {"accept": "accepted", "edit": "edited", "drop": "dropped", "skip": "skipped"}


@dataclass(slots=True)
class Tally:
    accepted: int = 0
    edited: int = 0
    dropped: int = 0
    skipped: int = 0
    left: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"accepted": self.accepted, "edited": self.edited, "dropped": self.dropped,
                "skipped": self.skipped, "left": self.left}


def is_draft(row: dict[str, Any]) -> bool:
    return row.get("status") == "draft" or not str(row.get("question", "")).strip()


def passage_view(documents: dict[str, str], span: dict[str, Any]) -> str:
    """``path, line N`` and the passage with the text around it, the quote marked."""
    text = documents.get(span.get("doc_id", ""))
    if text is None:
        return f"{span.get('doc_id')!r} is not in the collection"
    starts = find_all(text, span.get("quote", ""))
    if not starts:
        return f"{span['doc_id']}: the quote is not in the file as indexed"
    start = starts[(span.get("occurrence") or 1) - 1]
    end = start + len(span["quote"])
    line = text.count("\n", 0, start) + 1
    before = text[max(0, start - AROUND):start]
    after = text[end:end + AROUND]
    return (f"{span['doc_id']}, line {line}:\n" + ("…" if start > AROUND else "") + before
            + ">>>" + text[start:end] + "<<<" + after + ("…" if end + AROUND < len(text) else ""))


def show(row: dict[str, Any], documents: dict[str, str], say: Callable[[str], None]) -> None:
    say(f"── {row['id']} ({row.get('kind')}"
        + (f"; {', '.join(row['traits'])}" if row.get("traits") else "") + ")")
    for answer in row.get("answers", []):
        say(passage_view(documents, answer))
    if row.get("near_miss"):
        say("near miss (seems to answer, does not):")
        say(passage_view(documents, row["near_miss"]))
    if row.get("probes"):
        say("probes (absent from the documents): " + "; ".join(row["probes"]))
    if row.get("notes"):
        say(f"notes: {row['notes']}")
    say(f"question: {row.get('question') or '(none yet)'}")


def review(path: str | Path, indexed: Indexed, *, ask: Callable[[str], str] = input,
           say: Callable[[str], None] = print) -> Tally:
    """Walk the drafts of ``path`` (see the module docstring); returns what was decided."""
    rows = read_rows(path)
    tally = Tally()
    queue = [r["id"] for r in rows if is_draft(r)]
    for number, qid in enumerate(queue, start=1):
        row = next(r for r in rows if r["id"] == qid)
        say(f"\n[{number}/{len(queue)}]")
        show(row, indexed.documents, say)
        decision = _decide(row, ask, say)
        if decision == "quit":
            tally.left = len(queue) - number + 1
            break
        if decision == "drop":
            rows = [r for r in rows if r["id"] != qid]
        counter = _COUNTERS[decision]
        setattr(tally, counter, getattr(tally, counter) + 1)
        if decision != "skip":
            write_rows(path, rows)
    return tally


def _decide(row: dict[str, Any], ask: Callable[[str], str], say: Callable[[str], None]) -> str:
    while True:
        try:
            choice = ask(PROMPT).strip().lower()[:1]
        except EOFError:
            return "quit"
        if choice == "q":
            return "quit"
        if choice in ("s", "d"):
            return {"s": "skip", "d": "drop"}[choice]
        if choice == "a" and not str(row.get("question", "")).strip():
            say("no question yet: write one with e")
            continue
        if choice == "e":
            try:
                text = " ".join(ask("question> ").split())
            except EOFError:
                return "quit"
            if not text:
                say("empty: nothing changed")
                continue
            row["question"] = text
        if choice in ("a", "e"):
            row["status"] = "accepted"
            _warn(row, say)
            return "accept" if choice == "a" else "edit"
        say("type a, e, d, s or q")


def _warn(row: dict[str, Any], say: Callable[[str], None]) -> None:
    """The paraphrase rule at once, so a person can fix it while the passage is in view."""
    if "paraphrase" in row.get("traits", []):
        shared = shared_stems(row["question"], (a.get("quote", "") for a in row["answers"]))
        if shared:
            say(f"note: trait paraphrase, but the question shares {', '.join(sorted(shared))} "
                "with its quote (grk questions lint will flag it)")
