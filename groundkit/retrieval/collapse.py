"""Duplicate collapse: one passage found at several places is one hit.

Two passages are the same when their words are, case aside (:func:`passage_key`):
one README installed in six folders. :func:`distinct` keeps the first of each in a
ranking and lists where the rest recur; :func:`deepened` searches deeper until a
ranking holds ``top_k`` distinct passages (or ends); :class:`CollapsedRetriever`
is any retriever with its copies folded away, for a harness that ranks positions.
Collection search (:func:`groundkit.collection.search.search`) folds its hits with
the same functions, so both rank the same passages in the same order.

Collection search looks for copies among the first :data:`CANDIDATES` of the ranking
whatever ``top_k`` is, so where a passage recurs (``also_in``, and the verified copy
a search with ``verify`` shows in place of one whose file is gone) does not depend on
how many hits were asked for. :func:`passage_keys` keys such a candidate list at a
fraction of :func:`passage_key`'s cost.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import TypeVar

from .base import Retriever, Scored

T = TypeVar("T")

CANDIDATES = 100
"""How deep collection search looks for copies of its hits, whatever ``top_k`` is (deeper
only when the first ``CANDIDATES`` hold fewer than ``top_k`` distinct passages)."""
HEAD_WORDS = 8
"""Words of a passage compared first by :func:`passage_keys`."""
_HEAD_CHARS = 160


def passage_key(text: str) -> str:
    """What two passages must share to count as the same: their words, case aside."""
    return " ".join(text.split()).casefold()


def passage_keys(texts: Sequence[str]) -> list[str]:
    """Keys equal exactly where the texts' :func:`passage_key` are, cheaply.

    A passage's first :data:`HEAD_WORDS` words (case aside) are compared first, from
    its first characters when they hold that many whole words; only passages whose
    first words another one shares get their whole key. A passage that shares its first
    words with none keys as those words, which no whole key of another passage equals
    (that passage would share them).
    """
    heads = [_head(t) for t in texts]
    seen = Counter(heads)
    return [passage_key(t) if seen[h] > 1 else h for t, h in zip(texts, heads, strict=True)]


def _head(text: str) -> str:
    """The first :data:`HEAD_WORDS` words of ``text``, joined by one space, case aside."""
    words = text[:_HEAD_CHARS].split()
    if len(words) <= HEAD_WORDS:  # the last may be cut short: split the whole text
        words = text.split()
    return " ".join(words[:HEAD_WORDS]).casefold()


def distinct(keys: Sequence[str]) -> tuple[list[int], dict[int, list[int]]]:
    """The index of the first of each distinct key, in order, and where each one recurs
    (``{first: [later, ...]}``, an empty list for a passage found once)."""
    first: dict[str, int] = {}
    also: dict[int, list[int]] = {}
    for i, key in enumerate(keys):
        if key in first:
            also[first[key]].append(i)
        else:
            first[key] = i
            also[i] = []
    return list(first.values()), also


def deepened(search: Callable[[int], Sequence[T]], keys: Callable[[Sequence[T]], Sequence[str]],
             top_k: int, *, limit: int, candidates: int = 0
             ) -> tuple[Sequence[T], list[int], dict[int, list[int]]]:
    """``search(depth)`` from ``top_k`` deep (at least ``candidates``, at most ``limit``),
    twice as deep each time, until its ranking holds ``top_k`` distinct passages, ends
    (fewer results than asked for) or reaches ``limit``: the last ranking, and
    :func:`distinct` of its ``keys`` (``kept`` cut to ``top_k``).

    A ranking whose first hits do not change as it deepens keeps the same passages
    whatever the first depth; ``candidates`` only widens where their copies are
    looked for."""
    depth = min(limit, max(top_k, candidates))
    while True:
        ranked = search(depth)
        kept, also = distinct(keys(ranked))
        if len(kept) >= top_k or len(ranked) < depth or depth >= limit:
            return ranked, kept[:top_k], also
        depth = min(limit, depth * 2)


class CollapsedRetriever:
    """``inner`` with each passage's copies folded into its best-ranked place, filled to
    ``top_k`` distinct passages from deeper in ``inner``'s ranking (at most ``limit`` deep).

    ``texts()`` gives every position's passage text, asked for on the first search;
    :func:`passage_key` is computed once per position. A retriever that ranks bare
    ``(position, score)`` pairs keeps that face (:attr:`pairs`), so a harness needs no
    explained hits from it.
    """

    def __init__(self, inner: Retriever, texts: Callable[[], Sequence[str]], *,
                 limit: int) -> None:
        self.inner = inner
        self.name = inner.name
        self.limit = limit
        self._texts = texts
        self._keys: list[str] | None = None

    def key_of(self, positions: Sequence[int]) -> list[str]:
        """The passage key of each position."""
        if self._keys is None:
            self._keys = [passage_key(t) for t in self._texts()]
        keys = self._keys
        return [keys[p] for p in positions]

    def search(self, query: str, top_k: int, *, score_threshold: float | None = None,
               explain: bool = False) -> list[Scored]:
        ranked, kept, _ = deepened(
            lambda depth: self.inner.search(query, depth, score_threshold=score_threshold,
                                            explain=explain),
            lambda hits: self.key_of([s.position for s in hits]), top_k, limit=self.limit)
        return [ranked[i] for i in kept]

    @property
    def pairs(self) -> Callable[[str, int], list[tuple[int, float]]] | None:
        """``(query, top_k) -> (position, score)`` pairs, collapsed, when ``inner`` has them."""
        inner: Callable[[str, int], Sequence[tuple[int, float]]] | None = getattr(
            self.inner, "pairs", None)
        if inner is None:
            return None

        def collapsed(query: str, top_k: int) -> list[tuple[int, float]]:
            ranked, kept, _ = deepened(
                lambda depth: inner(query, depth),
                lambda pairs: self.key_of([p for p, _ in pairs]), top_k, limit=self.limit)
            return [ranked[i] for i in kept]

        return collapsed
