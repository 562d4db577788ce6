"""``grk questions draft``: passages worth asking about, sampled across a collection.

Candidates are the quotable units of each document as indexed (a sentence, list
item or table row; :func:`groundkit.answer.sentences.units`), kept when they are
long enough to answer something (:data:`MIN_CHARS`-:data:`MAX_CHARS`, at least
:data:`MIN_TERMS` index terms, mostly letters) and quotable exactly once in the
whole collection: a unit found word for word twice (a licence header, a copied
paragraph) is boilerplate or a duplicate and skipped. The sample is spread:
documents are taken in a seeded order, one passage each per round, and each pick
cycles through the cells of (position in the document: start, middle, end) x
(length: short, medium, long), so neither the top of each file nor one length
dominates.

No-answer drafts come from :mod:`.noanswer`.
"""

from __future__ import annotations

import random
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..answer.sentences import Unit, units
from ..collection import Collection
from ..collection.home import Home
from .documents import Indexed
from .model import KINDS
from .noanswer import no_answer_entries
from .parse import find_all

MIN_CHARS, MAX_CHARS, MIN_TERMS = 40, 400, 5
QUOTED = ("sentence", "item", "row")
CELLS = [(p, s) for p in range(3) for s in range(3)]


@dataclass(frozen=True, slots=True)
class Passage:
    doc_id: str
    start: int
    end: int
    kind: str
    quote: str
    position: int
    """0, 1, 2: the document's first, middle or last third."""
    size: int
    """0, 1, 2: short, medium or long among the collection's candidates."""


def candidates(indexed: Indexed) -> dict[str, list[Passage]]:
    """doc_id -> its quotable, once-only passages (see the module docstring)."""
    found: list[tuple[str, Unit, str]] = []
    seen: Counter[str] = Counter()
    for doc_id, text in sorted(indexed.documents.items()):
        for u in units(text):
            quote = text[u.start:u.end]
            seen[quote] += 1
            if u.kind in QUOTED and _worth_asking(quote, indexed):
                found.append((doc_id, u, quote))
    lengths = sorted(len(q) for _, _, q in found)
    cuts = (lengths[len(lengths) // 3], lengths[2 * len(lengths) // 3]) if lengths else (0, 0)
    out: dict[str, list[Passage]] = defaultdict(list)
    for doc_id, u, quote in found:
        text = indexed.documents[doc_id]
        if seen[quote] > 1 or len(find_all(text, quote)) != 1:
            continue
        size = 0 if len(quote) < cuts[0] else 1 if len(quote) < cuts[1] else 2
        out[doc_id].append(Passage(doc_id, u.start, u.end, u.kind, quote,
                                   min(2, 3 * u.start // max(1, len(text))), size))
    return dict(out)


def _worth_asking(quote: str, indexed: Indexed) -> bool:
    if not MIN_CHARS <= len(quote) <= MAX_CHARS:
        return False
    letters = sum(c.isalpha() for c in quote)
    return letters >= 0.5 * len(quote) and len(indexed.analyzer.analyze(quote)) >= MIN_TERMS


def _elsewhere(quote: str, doc_id: str, indexed: Indexed) -> bool:
    return indexed.words.containing(quote) != [doc_id]


def sample(pool: dict[str, list[Passage]], n: int, seed: int,
           keep: Callable[[Passage], bool] = lambda p: True) -> list[Passage]:
    """``n`` passages spread over documents, positions and lengths (seeded), each one
    ``keep`` accepts (checked only for the passages picked: it may be costly)."""
    rng = random.Random(seed)
    docs = sorted(pool)
    rng.shuffle(docs)
    queues = {d: _cell_order(pool[d], rng) for d in docs}
    picked: list[Passage] = []
    turn = 0
    while len(picked) < n and any(queues.values()):
        for d in docs:
            if len(picked) == n:
                break
            while queues[d]:
                chosen = _take(queues[d], CELLS[turn % len(CELLS)])
                if keep(chosen):
                    picked.append(chosen)
                    turn += 1
                    break
    return picked


def _cell_order(passages: Sequence[Passage], rng: random.Random) -> list[Passage]:
    shuffled = list(passages)
    rng.shuffle(shuffled)
    return shuffled


def _take(queue: list[Passage], cell: tuple[int, int]) -> Passage:
    """The first passage of ``queue`` in ``cell``, else the nearest one."""
    best = min(range(len(queue)), key=lambda i: (abs(queue[i].position - cell[0])
                                                + abs(queue[i].size - cell[1]), i))
    return queue.pop(best)


def answerable_entry(qid: str, p: Passage, documents: dict[str, str]) -> dict[str, Any]:
    share = round(100 * p.start / max(1, len(documents[p.doc_id])))
    return {"id": qid, "kind": KINDS[0], "question": "", "traits": [],
            "answers": [{"doc_id": p.doc_id, "quote": p.quote}], "status": "draft",
            "notes": f"drafted: {p.kind} {share}% into {p.doc_id}; write the question it "
                     "answers"}


def draft(name: str, *, n: int = 50, no_answer: int | None = None, seed: int = 0,
          home: Home = None, indexed: Indexed | None = None) -> list[dict[str, Any]]:
    """Draft entries: ``n`` answerable ones and ``no_answer`` (default n // 5) no-answer ones."""
    indexed = indexed or Indexed.open(name, home)
    pool = candidates(indexed)
    picked = sample(pool, n, seed, keep=lambda p: not _elsewhere(p.quote, p.doc_id, indexed))
    rows = [answerable_entry(f"q{i:04d}", p, indexed.documents) for i, p in enumerate(picked, 1)]
    wanted = n // 5 if no_answer is None else no_answer
    with Collection.open(name, home) as coll:
        rows += list(no_answer_entries(indexed, coll, wanted, seed, first=len(rows) + 1))
    return rows
