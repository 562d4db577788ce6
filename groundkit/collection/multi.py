"""Several collections searched as one ranking (``grk search -c A -c B``).

Each collection is searched on its own (its own index, analyzer and embedding); the
hits are merged by score, ties by their rank in their own collection and then by
collection name, as the MCP ``search`` tool merges them. With ``collapse`` a passage
found in several collections (the same words, case aside:
:func:`~groundkit.retrieval.collapse.passage_key`) is one hit, the best-scored, and the
other places join its ``also_in``, their chunk ids naming their collections.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from ..model import Duplicate, Hit
from ..retrieval import collapse as collapse_ranking
from ..retrieval.collapse import passage_key


def merged(found: Sequence[tuple[str, Hit]], top_k: int, *,
           collapse: bool = True) -> list[tuple[str, Hit]]:
    """``(collection, hit)`` pairs of several searches as one ranking of ``top_k``, re-ranked."""
    order = sorted(found, key=lambda pair: (-pair[1].score, pair[1].rank, pair[0]))
    if collapse:
        kept, also = collapse_ranking.distinct([passage_key(h.chunk.text) for _, h in order])
        order = [(order[i][0], _with_copies(order[i][1], [order[j][1] for j in also.get(i, ())]))
                 for i in kept]
    return [(name, dataclasses.replace(hit, rank=rank))
            for rank, (name, hit) in enumerate(order[:top_k], 1)]


def _with_copies(hit: Hit, copies: Sequence[Hit]) -> Hit:
    if not copies:
        return hit
    extra = [Duplicate(c.chunk.doc_id, c.chunk.chunk_id, c.chunk.start, c.chunk.end)
             for c in copies]
    extra += [d for c in copies for d in c.also_in]
    return dataclasses.replace(hit, also_in=(*hit.also_in, *extra))
