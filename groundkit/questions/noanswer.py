"""No-answer drafts: a topic the collection seems to cover, joined in a way it never is.

A chunk is sampled (seeded); from its words that are rare in the collection (in at
most a quarter of the documents, yet found at least twice, so not a typo or a flag
string) two with different stems that stand more than :data:`NEAR` words apart are
paired. If the two never occur within :data:`NEAR` words of each other anywhere in
the collection, a question joining them has no answer there: the draft's probes are
those two patterns (checked absent, so the lint passes them), and its near miss is
the passage BM25 ranks first for the two words, the most confusable place, which
such a question seems to be about but which does not answer it.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Iterator
from typing import Any

from ..answer.sentences import units
from ..collection import Collection
from ..text.analysis import LUCENE_STOPWORDS, split_tokens
from .documents import Indexed
from .parse import find_all

NEAR = 6
"""Words between the two words of a no-answer probe."""
RAREST = 8
MIN_NEAR_MISS = 40


class _Words:
    """How many documents hold each word, and how often it occurs in all."""

    def __init__(self, indexed: Indexed) -> None:
        self.df: Counter[str] = Counter()
        self.cf: Counter[str] = Counter()
        self.per_doc: dict[str, set[str]] = {}
        for doc_id, text in indexed.documents.items():
            tokens = split_tokens(text)
            self.cf.update(tokens)
            self.per_doc[doc_id] = set(tokens)
            self.df.update(self.per_doc[doc_id])
        self.cap = max(2, len(indexed.documents) // 4)

    def rare(self, word: str) -> bool:
        return (word.isalpha() and len(word) >= 4 and word not in LUCENE_STOPWORDS
                and self.df[word] <= self.cap and self.cf[word] >= 2)


def probe(a: str, b: str) -> str:
    """``re:`` a probe: ``a``, then ``b`` within :data:`NEAR` words."""
    return rf"re:\b{re.escape(a)}\b\W+(?:\w+\W+){{0,{NEAR}}}?{re.escape(b)}\b"


def no_answer_entries(indexed: Indexed, coll: Collection, wanted: int, seed: int, *,
                      first: int) -> Iterator[dict[str, Any]]:
    """Up to ``wanted`` no-answer drafts, ids from ``q<first>`` (see the module docstring)."""
    if wanted <= 0:
        return
    rng = random.Random(f"{seed}:no_answer")
    words = _Words(indexed)
    chunks = [(d, c.start, c.end) for d, spans in sorted(indexed.chunks.items()) for c in spans]
    rng.shuffle(chunks)
    made, used = 0, set()
    for doc_id, start, end in chunks:
        pair = _pair(split_tokens(indexed.documents[doc_id][start:end]), words, indexed, rng)
        if pair is None:
            continue
        a, b = pair
        probes = [probe(a, b), probe(b, a)]
        both = [indexed.documents[d] for d, w in words.per_doc.items() if a in w and b in w]
        if any(re.search(p[3:], t, re.IGNORECASE) for p in probes for t in both):
            continue
        near = near_miss(coll, indexed, (a, b))
        if near is None or (near["doc_id"], near["quote"]) in used:
            continue
        used.add((near["doc_id"], near["quote"]))
        yield {"id": f"q{first + made:04d}", "kind": "no_answer", "question": "", "traits": [],
               "answers": [], "probes": probes, "near_miss": near, "status": "draft",
               "notes": f"drafted: '{a}' and '{b}' never occur within {NEAR} words of each "
                        "other; ask something joining them that the near miss seems to, but "
                        "does not, answer"}
        made += 1
        if made == wanted:
            return


def _pair(tokens: list[str], words: _Words, indexed: Indexed,
          rng: random.Random) -> tuple[str, str] | None:
    """Two rare words of ``tokens`` with different stems, more than NEAR words apart."""
    where: dict[str, list[int]] = {}
    for i, t in enumerate(tokens):
        if words.rare(t):
            where.setdefault(t, []).append(i)
    rarest = sorted(where, key=lambda w: (words.df[w], w))[:RAREST]
    pairs = [(a, b) for i, a in enumerate(rarest) for b in rarest[i + 1:]]
    rng.shuffle(pairs)
    for a, b in pairs:
        if indexed.analyzer.analyze(a) == indexed.analyzer.analyze(b):
            continue
        if min(abs(i - j) for i in where[a] for j in where[b]) > NEAR + 1:
            return a, b
    return None


def near_miss(coll: Collection, indexed: Indexed, pair: tuple[str, str]
              ) -> dict[str, str] | None:
    """The unit of BM25's best hits for the pair holding most of it, as an exact quote."""
    wanted = set(pair)
    for hit in coll.search(" ".join(pair), top_k=3):
        c = hit.chunk
        text = indexed.documents.get(c.doc_id)
        if text is None:
            continue
        found = [u for u in units(text) if c.start <= u.start and u.end <= c.end
                 and u.kind in ("sentence", "item", "row") and u.end - u.start >= MIN_NEAR_MISS]
        found.sort(key=lambda u: (-len(wanted & set(split_tokens(text[u.start:u.end]))),
                                  u.start))
        for u in found:
            quote = text[u.start:u.end]
            if wanted & set(split_tokens(quote)) and len(find_all(text, quote)) == 1:
                return {"doc_id": c.doc_id, "quote": quote}
    return None
