"""Rankers for external benchmarks: groundkit's BM25 and independent references.

Every ranker scores the same *units* (the chunks of the imported collection,
in index position order) and returns ``(position, score)`` pairs, best first;
:func:`to_documents` then turns chunk hits into document hits by the maximum
score over each document's chunks (a no-op when every document is one chunk).

* groundkit: the collection's own persisted BM25 index (the product path), or a
  :class:`~groundkit.retrieval.bm25.BM25Index` built in memory from the same
  chunk texts the way the collection's derived index is built, for parameter
  variants that would otherwise need another index run.
* bm25s (Lù 2024) and rank-bm25 (Brown 2020): given groundkit's own analyzer
  terms for every unit and query, so the comparison isolates scoring from
  text analysis. Units that match no query term are never returned (groundkit
  abstains the same way).
"""

from __future__ import annotations

import hashlib
import importlib
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from groundkit.errors import MissingDependencyError
from groundkit.retrieval.bm25 import BM25Index, BM25Params
from groundkit.text.analysis import Analyzer

Ranked = list[tuple[int, float]]
"""(unit position, score), best first."""
Ranker = Callable[[str], Ranked]


def _require(module: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingDependencyError(module, "dev", f"the {module} reference stage") from exc


def groundkit_ranker(index: BM25Index, depth: int,
                     terms: Callable[[str], list[str]] | None = None) -> Ranker:
    """Search ``index``; ``terms`` replaces its analyzer for queries when given."""
    if terms is None:
        return lambda query: index.search(query, depth)
    return lambda query: index.search_terms(terms(query), depth)


def bm25s_ranker(unit_terms: Sequence[list[str]], analyze: Callable[[str], list[str]],
                 params: BM25Params, depth: int) -> Ranker:
    """bm25s over pre-analysed units (method ``lucene`` unless ``params.method`` says)."""
    bm25s = _require("bm25s")
    method = "lucene" if params.method == "lucene" else params.method.replace("+", "plus")
    retriever = bm25s.BM25(method=method, k1=params.k1, b=params.b, delta=params.delta)
    retriever.index(list(unit_terms), show_progress=False)
    k = min(depth, len(unit_terms))

    def rank(query: str) -> Ranked:
        terms = analyze(query)
        if not terms:
            return []
        docs, scores = retriever.retrieve([terms], k=k, show_progress=False, n_threads=1)
        return [(int(d), float(s)) for d, s in zip(docs[0], scores[0], strict=True) if s > 0]

    return rank


def rank_bm25_ranker(unit_terms: Sequence[list[str]], analyze: Callable[[str], list[str]],
                     params: BM25Params, depth: int) -> Ranker:
    """rank-bm25's ``BM25Okapi`` (Robertson idf, negative idf floored at 0.25 x mean idf).

    Only units holding a query term are scored (``get_batch_scores``); the others
    score 0 in ``get_scores`` too, so the ranking is the same, about twice as fast.
    """
    module = _require("rank_bm25")
    # rank-bm25 divides by zero on empty units; a placeholder term matches no query
    model = module.BM25Okapi([t or ["\x00"] for t in unit_terms], k1=params.k1, b=params.b)
    postings: dict[str, list[int]] = {}
    for unit, terms in enumerate(unit_terms):
        for term in set(terms):
            postings.setdefault(term, []).append(unit)

    def rank(query: str) -> Ranked:
        terms = analyze(query)
        candidates = sorted({u for t in terms for u in postings.get(t, ())})
        if not candidates:
            return []
        scores = np.zeros(len(unit_terms))
        scores[candidates] = model.get_batch_scores(terms, candidates)
        return top_positive(scores, depth)

    return rank


def top_positive(scores: npt.NDArray[np.floating[Any]], depth: int) -> Ranked:
    """The ``depth`` best positive scores, best first, ties to the lower position."""
    candidates = np.flatnonzero(scores > 0)
    if len(candidates) > depth:
        cut = np.partition(scores[candidates], len(candidates) - depth)[len(candidates) - depth]
        candidates = candidates[scores[candidates] >= cut]
    order = np.lexsort((candidates, -scores[candidates]))[:depth]
    return [(int(candidates[i]), float(scores[candidates[i]])) for i in order]


def to_documents(ranked: Ranked, doc_of: npt.NDArray[np.int64], depth: int,
                 ) -> list[tuple[int, float, int]]:
    """``(doc, score, best unit)`` by max score per document, best first, ``depth`` docs."""
    if not ranked:
        return []
    positions = np.fromiter((p for p, _ in ranked), np.int64, len(ranked))
    docs = doc_of[positions]
    _, first = np.unique(docs, return_index=True)  # a document's first hit is its best
    first.sort()
    first = first[:depth]
    return [(int(d), ranked[i][1], int(p))
            for i, d, p in zip(first.tolist(), docs[first].tolist(), positions[first].tolist(),
                               strict=True)]


def analyzed(analyzer: Analyzer, texts: Sequence[str],
             keep: Callable[[str], bool] | None = None) -> list[list[str]]:
    """Each text's index terms through ``analyzer`` (surface tokens filtered by ``keep``)."""
    if keep is None:
        return [analyzer.analyze(t) for t in texts]
    cache = analyzer.term_cache()
    return [[term for tok in analyzer.split(t) if keep(tok) and (term := cache[tok])]
            for t in texts]


def dense_ranker(unit_texts: Sequence[str], spec: str, depth: int, cache: Path) -> Ranker:
    """Exact cosine ranking of units embedded by ``spec`` (vectors cached under ``cache``).

    The cache key hashes the embedding identity and every unit text, so a changed
    model or corpus never reuses stale vectors.
    """
    from groundkit.embeddings import make_provider

    provider = make_provider(spec)
    identity = provider.identity
    digest = hashlib.sha256(json.dumps(identity.to_dict(), sort_keys=True).encode())
    for text in unit_texts:
        digest.update(hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest())
    path = cache / f"vectors-{digest.hexdigest()[:24]}.npy"
    if path.is_file():
        vectors = np.load(path)
    else:
        vectors = provider.embed(list(unit_texts), kind="document")
        cache.mkdir(parents=True, exist_ok=True)
        np.save(path, vectors)
    k = min(depth, len(unit_texts))

    def rank(query: str) -> Ranked:
        if not query.strip():
            return []
        scores = vectors @ provider.embed([query], kind="query")[0]
        top = np.argpartition(-scores, k - 1)[:k] if k < len(scores) else np.arange(len(scores))
        order = top[np.lexsort((top, -scores[top]))]
        return [(int(i), float(scores[i])) for i in order]

    return rank


def hybrid_ranker(lexical: Ranker, dense: Ranker, rrf_k: int, depth: int) -> Ranker:
    """Reciprocal Rank Fusion of two unit rankings (rank-only, as ``grk search --mode hybrid``)."""
    from groundkit.retrieval.fusion import rrf

    def rank(query: str) -> Ranked:
        lists = {name: [(str(p), s) for p, s in ranker(query)]
                 for name, ranker in (("bm25", lexical), ("dense", dense))}
        return [(int(h.chunk_id), h.score) for h in rrf(lists, rrf_k, top_k=depth)]

    return rank
