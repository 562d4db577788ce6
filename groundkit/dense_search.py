"""Dense and hybrid search modes, registered into :data:`groundkit.search.MODES`.

* ``dense`` embeds the query with the collection's recorded embedding model
  and ranks chunks by cosine similarity (exact). ``score_threshold`` is a
  cosine threshold and is the only way dense search abstains; there is no
  default (KNOWN_LIMITATIONS.md).
* ``hybrid`` fuses a BM25 list and a dense list with Reciprocal Rank Fusion
  (``rrf_k``, default 60) or, for ablations, a convex combination of min-max
  normalised scores (``fusion="convex"``). Fusion is rank-only: a score
  threshold on fused scores is refused (ADR-0005).

Both fail closed when the collection has no vectors, when the vectors belong
to another generation, or when ``embed_model`` names a model other than the
one the collection was indexed with (SPEC §2).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .errors import IndexMismatchError, UsageError
from .model import Contribution
from .retrieval.fusion import DEFAULT_K, convex, rrf
from .search import Mode, Ranked, register_mode

if TYPE_CHECKING:
    from .collection import Collection

CANDIDATES = 100
"""How deep each list goes before fusion."""
QUERY_CACHE = 4096
"""Query embeddings kept per open collection (the harness asks each question per stage)."""


def _check_model(coll: Collection, embed_model: str | None) -> None:
    recorded = coll.embedding_spec()
    if recorded is None:
        raise UsageError(
            f"collection {coll.name!r} has no embedding index; re-index it with "
            "grk index PATH --collection NAME --embed local:all-MiniLM-L6-v2 (or ollama:MODEL)"
        )
    if embed_model is not None and embed_model != recorded:
        raise IndexMismatchError(
            f"collection {coll.name!r} was embedded with {recorded}, not {embed_model}; "
            f"search it with --embed-model {recorded} or re-index with --embed {embed_model}"
        )


def _dense_list(coll: Collection, query: str, depth: int,
                score_threshold: float | None) -> list[tuple[str, float]]:
    if not query.strip():
        return []
    provider = coll.embedder()
    store = coll.vectors(provider.identity)
    cache: dict[str, Any] = coll._cache.setdefault("query_vectors", {})
    if query not in cache:
        if len(cache) >= QUERY_CACHE:
            cache.pop(next(iter(cache)))
        cache[query] = provider.embed([query], kind="query")[0]
    return store.search(cache[query], depth, score_threshold)


def prime_queries(coll: Collection, queries: list[str]) -> None:
    """Embed many queries in one batch ahead of searching them (the harness does)."""
    cache: dict[str, Any] = coll._cache.setdefault("query_vectors", {})
    todo = [q for q in dict.fromkeys(queries) if q.strip() and q not in cache]
    if todo:
        for query, vector in zip(todo, coll.embedder().embed(todo, kind="query"), strict=True):
            cache[query] = vector


def _dense(coll: Collection, query: str, top_k: int, *, score_threshold: float | None,
           embed_model: str | None = None, **_: Any) -> Ranked:
    _check_model(coll, embed_model)
    positions = coll.positions()
    return [
        (positions[chunk_id], score,
         (Contribution(retriever="dense", rank=rank, score=score),))
        for rank, (chunk_id, score) in enumerate(
            _dense_list(coll, query, top_k, score_threshold), start=1)
    ]


def _hybrid(coll: Collection, query: str, top_k: int, *, score_threshold: float | None,
            embed_model: str | None = None, rrf_k: float = DEFAULT_K, fusion: str = "rrf",
            weights: dict[str, float] | None = None, **_: Any) -> Ranked:
    if score_threshold is not None:
        raise UsageError(
            "hybrid search takes no score threshold: fused scores are rank-derived, so a "
            "cutoff would measure list overlap, not relevance (ADR-0005); threshold dense instead"
        )
    _check_model(coll, embed_model)
    depth = max(top_k, CANDIDATES)
    chunk_ids = coll.chunk_ids()
    lists = {
        "bm25": [(chunk_ids[p], s) for p, s in coll.bm25().search(query, depth)],
        "dense": _dense_list(coll, query, depth, None),
    }
    if fusion == "rrf":
        fused = rrf(lists, rrf_k, top_k=top_k)
    elif fusion == "convex":
        fused = convex(lists, weights or {"bm25": 0.5, "dense": 0.5}, top_k)
    else:
        raise UsageError(f"unknown fusion {fusion!r}; valid: rrf, convex")
    positions = coll.positions()
    return [(positions[h.chunk_id], h.score, h.contributions) for h in fused]


register_mode(Mode("dense", "embedding cosine similarity (needs an embedding index; "
                   "abstains only with a score threshold)", _dense))
register_mode(Mode("hybrid", "BM25 and dense fused by Reciprocal Rank Fusion (rank-only; "
                   "never abstains)", _hybrid))
