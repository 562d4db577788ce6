"""Tombstones and merges for segmented BM25 (:mod:`.bm25_segments`, ADR-0025).

:func:`tombstones` records deletions in a segment (:class:`Tombstones`) without touching
its files: which documents, and by how much each term's document frequency drops. It reads
the deleted documents' terms off their texts when the caller has them (re-analysed: a few
chunks, milliseconds), checked against the lengths the segment recorded, and otherwise off
the segment's postings (one pass over them).

:func:`merged` folds adjacent segments into one index over their live documents in
order: array for array the index a full build over those documents' texts gives, but
from the postings, nothing re-analysed (:func:`scored` scores postings, optionally without
block maxima, for small segments). :class:`TieredPolicy` is the merge policy (logarithmic
tiers over *adjacent* segments, because document order is the tie order).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import pairwise

import numpy as np
import numpy.typing as npt

from ..errors import UsageError
from ..text.analysis import Analyzer
from .bm25 import BM25Index
from .bm25_build import Builder, Postings, score_postings, vocabulary
from .bm25_params import BM25Params

IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True, kw_only=True)
class Tombstones:
    """The deleted documents of one segment and the document frequencies they take away."""

    docs: npt.NDArray[np.int64] = field(default_factory=lambda: np.zeros(0, np.int64))
    """Deleted local document numbers, ascending, distinct."""
    terms: npt.NDArray[np.int64] = field(default_factory=lambda: np.zeros(0, np.int64))
    """Term ids of the segment whose document frequency drops, ascending, distinct."""
    counts: npt.NDArray[np.int64] = field(default_factory=lambda: np.zeros(0, np.int64))
    """By how much each drops (how many deleted documents hold it)."""

    def __post_init__(self) -> None:
        for name in ("docs", "terms"):
            a = getattr(self, name)
            if a.ndim != 1 or (len(a) > 1 and np.any(np.diff(a) <= 0)):
                raise UsageError(f"tombstone {name} must be ascending and distinct")
        if self.counts.shape != self.terms.shape or np.any(self.counts <= 0):
            raise UsageError("tombstone counts must be positive, one per term")

    def __len__(self) -> int:
        return len(self.docs)


def tombstones(index: BM25Index, docs: Sequence[int] | IntArray,
               texts: Sequence[str] | None = None,
               previous: Tombstones | None = None) -> Tombstones:
    """``previous`` plus the deletion of local documents ``docs`` of ``index``.

    ``texts``, when given, are those documents' texts (in the order of ``docs``): their
    terms come from the analyzer, used only if every document's length matches the one
    the segment recorded and every term is the segment's; else from the postings.
    """
    previous = previous or Tombstones()
    new = np.unique(np.asarray(docs, dtype=np.int64))
    if len(new) != len(docs):
        raise UsageError("a document is deleted twice in one update")
    if len(new) and (new[0] < 0 or new[-1] >= index.n_docs):
        raise UsageError(f"deleted documents must lie in 0..{index.n_docs - 1}")
    if len(np.intersect1d(new, previous.docs)):
        raise UsageError("a deleted document was deleted before")
    if len(new) == 0:
        return previous
    found = None if texts is None else _terms_from_texts(index, np.asarray(docs), texts)
    terms, counts = found if found is not None else _terms_from_postings(index, new)
    every = np.concatenate([previous.terms, terms])
    weights = np.concatenate([previous.counts, counts])
    merged_terms, at = np.unique(every, return_inverse=True)
    summed = np.bincount(at, weights=weights, minlength=len(merged_terms)).astype(np.int64)
    return Tombstones(docs=np.union1d(previous.docs, new), terms=merged_terms, counts=summed)


def _terms_from_texts(index: BM25Index, docs: npt.NDArray[np.int64],
                      texts: Sequence[str]) -> tuple[IntArray, IntArray] | None:
    if len(texts) != len(docs):
        raise UsageError(f"{len(texts)} texts for {len(docs)} deleted documents")
    builder = Builder(index.analyzer)
    for text in texts:
        builder.add(text)
    postings = builder.finish()
    if not np.array_equal(postings.doc_lengths, np.asarray(index.doc_lengths)[docs]):
        return None  # not the texts this segment indexed
    blob, offsets = postings.vocabulary.blob, postings.vocabulary.offsets.tolist()
    ids = np.array([index.term_id(blob[a:b].decode("utf-8", "surrogatepass"))
                    for a, b in pairwise(offsets)], dtype=np.int64)
    if np.any(ids < 0):
        return None
    order = np.argsort(ids)
    return ids[order], np.diff(postings.indptr)[order]


def _terms_from_postings(index: BM25Index, docs: IntArray) -> tuple[IntArray, IntArray]:
    gone = np.zeros(index.n_docs, dtype=bool)
    gone[docs] = True
    hit = np.flatnonzero(gone[index.docs])
    term_of = np.searchsorted(np.asarray(index.indptr), hit, side="right") - 1
    terms, counts = np.unique(term_of, return_counts=True)
    return terms.astype(np.int64), counts.astype(np.int64)


def merged(segments: Sequence[tuple[BM25Index, Tombstones]], *,
           blocks: bool = True) -> BM25Index:
    """One index over the live documents of ``segments``, in order (their analyzer and
    parameters): equal, array for array, to a full build over those documents' texts
    (``blocks=False``: without block maxima and score columns, as :func:`scored`)."""
    if not segments:
        raise UsageError("nothing to merge")
    first = segments[0][0]
    ids: dict[bytes, int] = {}
    terms_of, docs_of, tfs_of, lengths = [], [], [], []
    base = 0
    for index, dead in segments:
        live = np.ones(index.n_docs, dtype=bool)
        live[dead.docs] = False
        rank = np.cumsum(live) - 1 + base
        ptr = np.asarray(index.indptr)
        blob, offsets = bytes(index._blob), np.asarray(index.term_offsets).tolist()
        local = np.fromiter((ids.setdefault(blob[a:b], len(ids)) for a, b in pairwise(offsets)),
                            dtype=np.int64, count=index.n_terms)
        keep = live[index.docs]
        terms_of.append(np.repeat(local, np.diff(ptr))[keep])
        docs_of.append(rank[index.docs[keep]])
        tfs_of.append(np.asarray(index.tfs)[keep])
        lengths.append(np.asarray(index.doc_lengths, dtype=np.int64)[live])
        base += int(live.sum())
    term = np.concatenate(terms_of)
    df = np.bincount(term, minlength=len(ids))
    encoded = list(ids)
    used = np.flatnonzero(df > 0)
    order, vocab = vocabulary([encoded[t] for t in used.tolist()])
    new_id = np.full(len(ids), -1, dtype=np.int64)
    new_id[used[order]] = np.arange(len(used))
    term = new_id[term]
    sort = np.argsort(term, kind="stable")  # each segment's lists ascend, segments in order
    indptr = np.zeros(len(used) + 1, dtype=np.int64)
    np.cumsum(df[used[order]], out=indptr[1:])
    docs = np.concatenate(docs_of)[sort].astype(np.int32)
    tfs = np.concatenate(tfs_of)[sort]
    postings = Postings(vocab, indptr, docs, tfs, np.concatenate(lengths))
    return scored(postings, first.analyzer, first.params, blocks=blocks)


def scored(postings: Postings, analyzer: Analyzer, params: BM25Params, *,
           blocks: bool = True) -> BM25Index:
    """The index of ``postings``; ``blocks=False`` for a small segment, always scored
    exhaustively (:mod:`.bm25_segments`): no block maxima or score columns to compute."""
    arrays, stats = score_postings(postings, params, blocks=blocks)
    return BM25Index(analyzer=analyzer, params=params, arrays=arrays,
                     terms_blob=postings.vocabulary.blob, stats=stats)


@dataclass(frozen=True, slots=True, kw_only=True)
class TieredPolicy:
    """Which adjacent segments to merge next (Lucene's ``LogMergePolicy``, adjacent only:
    a merge must keep document order, the order ties are broken in).

    A segment's level is ``floor(log_ratio(live documents))``. For the lowest level ``L``
    where it happens, a maximal run of adjacent segments of level ``L`` or below that holds
    ``per_level`` segments of level ``L`` is merged whole (the result sits a level up, so
    merges cascade; the smaller segments between are swept in). A segment with more than
    ``max_deleted`` of its documents tombstoned is rewritten alone.
    """

    per_level: int = 10
    ratio: float = 10.0
    max_deleted: float = 0.25

    def plan(self, sizes: Sequence[int], deleted: Sequence[int]) -> tuple[int, int] | None:
        """``(lo, hi)``: merge segments ``lo..hi-1``; ``None``: nothing to do.
        ``sizes``: each segment's documents, tombstoned included; ``deleted``: tombstoned."""
        for i, (size, dead) in enumerate(zip(sizes, deleted, strict=True)):
            if size and dead > self.max_deleted * size:
                return i, i + 1
        levels = [self.level(size - dead) for size, dead in zip(sizes, deleted, strict=True)]
        for level in sorted(set(levels)):
            start = 0
            for i, at in enumerate([*levels, level + 1]):  # a sentinel above ends the last run
                if at <= level:
                    continue
                if levels[start:i].count(level) >= self.per_level:
                    return start, i
                start = i + 1
        return None

    def level(self, live: int) -> int:
        level, bound = 0, self.ratio
        while live >= bound:
            level, bound = level + 1, bound * self.ratio
        return level
