"""Several collections searched as one ranking (``grk search -c A -c B``).

Each collection is searched on its own (its own index, analyzer and embedding); the
hits are merged by score, ties by their rank in their own collection and then by
collection name, as the MCP ``search`` tool merges them. With ``collapse`` a passage
found in several collections (the same words, case aside:
:func:`~groundkit.retrieval.collapse.passage_key`) is one hit, the best-scored, and the
other places join its ``also_in``, their chunk ids naming their collections; when the
best was re-read and does not verify, its first copy that does is shown in its place
(its score and rank), the places checked before it in ``replaced``, as
:func:`groundkit.collection.search.search` does within one collection.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from ..model import Duplicate, Hit, Replaced, Status
from ..retrieval import collapse as collapse_ranking
from ..retrieval.collapse import passage_key


def merged(found: Sequence[tuple[str, Hit]], top_k: int, *,
           collapse: bool = True) -> list[tuple[str, Hit]]:
    """``(collection, hit)`` pairs of several searches as one ranking of ``top_k``, re-ranked."""
    order = sorted(found, key=lambda pair: (-pair[1].score, pair[1].rank, pair[0]))
    if collapse:
        kept, also = collapse_ranking.distinct([passage_key(h.chunk.text) for _, h in order])
        order = [_folded(order[i], [order[j] for j in also.get(i, ())]) for i in kept]
    return [(name, dataclasses.replace(hit, rank=rank))
            for rank, (name, hit) in enumerate(order[:top_k], 1)]


def _folded(best: tuple[str, Hit], copies: Sequence[tuple[str, Hit]]) -> tuple[str, Hit]:
    """``best`` with its ``copies`` folded in; a verified copy in its place when ``best``
    was re-read and did not verify (the places that did not, best first, in ``replaced``)."""
    name, hit = best
    n = next((k for k, (_, c) in enumerate(copies) if _holds(c)), None)
    if n is None or hit.verdict is None or _holds(hit):
        return name, _with_copies(hit, [c for _, c in copies])
    before = [hit, *(c for _, c in copies[:n])]
    shown_in, shown = copies[n]
    folded = _with_copies(shown, [c for _, c in copies[n + 1:]])
    return shown_in, dataclasses.replace(
        folded, score=hit.score, replaced=tuple(r for c in before for r in _checked(c)),
        also_in=(*folded.also_in, *(d for c in before for d in c.also_in)))


def _holds(hit: Hit) -> bool:
    return hit.verdict is not None and hit.verdict.status is Status.VERIFIED


def _checked(hit: Hit) -> tuple[Replaced, ...]:
    """The places of ``hit`` that were re-read and did not verify, best first."""
    c, verdict = hit.chunk, hit.verdict
    own = () if verdict is None else (Replaced(
        place=Duplicate(c.doc_id, c.chunk_id, c.start, c.end), status=verdict.status,
        reason=verdict.reason),)
    return (*hit.replaced, *own)


def _with_copies(hit: Hit, copies: Sequence[Hit]) -> Hit:
    if not copies:
        return hit
    extra = [Duplicate(c.chunk.doc_id, c.chunk.chunk_id, c.chunk.start, c.chunk.end)
             for c in copies]
    extra += [d for c in copies for d in c.also_in]
    return dataclasses.replace(hit, also_in=(*hit.also_in, *extra))
