"""A BM25 index held as immutable segments plus tombstones, scored with global statistics.

An update that rewrites the whole index costs time that grows with the collection
(12.6 s for one edited file at 10^6 passages, docs/scale.md). Here a generation is a list
of segments, each an ordinary :class:`~.bm25.BM25Index` written once and never changed,
and per segment the *tombstones*: which of its documents are deleted, and by how much
each term's document frequency drops with them. An edit writes a small segment for the
new chunks and tombstones for the ones they replace; :mod:`.bm25_merge` folds segments
together later (ADR-0025).

**Exact scores.** BM25 depends on collection-wide statistics: the number of non-empty
documents, their average length and each term's document frequency. A segment's stored
scores were computed with its own statistics, so they are not the generation's. A query
here scores with the generation's statistics (summed over the segments, the tombstoned
documents taken out), so hits and scores are those of a full build over the live
documents in segment order, bit for bit (``tests/retrieval/test_bm25_segments.py``):

* a segment whose query postings are few is scored exhaustively, every posting rescored
  from its tf and document length (:func:`~.bm25_build.posting_scores`, the build's own
  element-wise arithmetic);
* a larger one asks its own pruned kernel for its best ``k'`` documents by *stored*
  scores, rescores those exactly, and stops once a proven bound shows no other document
  can reach the k-th exact total (:func:`upper_bound`); else ``k'`` grows, and at worst
  the segment is scored exhaustively. The bound is Lucene's formula's (the default
  method); other methods are scored exhaustively.

Documents are numbered by position in the concatenation of the segments, tombstoned
ones included (a position is stable for the life of the generation); ties go to the
lower position, as in a full build over the documents in that order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from ..errors import UsageError
from ..text.analysis import check_query
from . import scoring
from .bm25 import BM25Index
from .bm25_build import posting_scores

IntArray = npt.NDArray[np.int64]
F64Array = npt.NDArray[np.float64]
Hits = list[tuple[int, float]]

EXHAUSTIVE_POSTINGS = 20_000
"""A segment whose query terms hold at most this many postings is scored exhaustively;
above, through its own pruned kernel and the bound (``bench/bench_segments.py``)."""
ROUNDING = 2.0**-21
"""Bound on a float32 Lucene score's rounding error, as a share of its term's weight (the
four float32 steps of ``w - w / (1 + tf * normInverse)`` err by at most ``2^-22 w``)."""


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


class Stats:
    """A generation's collection statistics: live non-empty documents, their average
    length, each term's document frequency (summed over segments, tombstones taken out)."""

    __slots__ = ("avgdl", "n_docs")

    def __init__(self, segments: Sequence[tuple[BM25Index, Tombstones]]) -> None:
        nonempty = total = 0
        for index, dead in segments:
            lengths = np.asarray(index.doc_lengths)[dead.docs]
            nonempty += index.n_docs_nonempty - int(np.count_nonzero(lengths))
            total += int(np.asarray(index.doc_lengths, dtype=np.int64).sum()) - int(lengths.sum())
        self.n_docs = nonempty
        self.avgdl = float(total) / nonempty if nonempty else 0.0  # as score_postings does


class SegmentedBM25:
    """Search over segments with the generation's statistics (module docstring)."""

    def __init__(self, segments: Sequence[tuple[BM25Index, Tombstones]]) -> None:
        if not segments:
            raise UsageError("a segmented index needs at least one segment")
        first = segments[0][0]
        for index, dead in segments:
            if index.params != first.params or index.analyzer.identity != first.analyzer.identity:
                raise UsageError("segments must share their analyzer and BM25 parameters")
            if len(dead.docs) and dead.docs[-1] >= index.n_docs:
                raise UsageError(f"a tombstone names document {int(dead.docs[-1])} of a "
                                 f"segment of {index.n_docs}")
        self.segments = [index for index, _ in segments]
        self.tombstones = [dead for _, dead in segments]
        self.analyzer, self.params = first.analyzer, first.params
        self.offsets = np.concatenate(([0], np.cumsum([s.n_docs for s in self.segments])))
        self.n_docs = int(self.offsets[-1])
        """Positions, tombstoned documents included."""
        self.stats = Stats(segments)
        self._live = [_live_mask(s.n_docs, d.docs) for s, d in segments]
        self._dropped: list[dict[int, int]] = [dict(zip(d.terms.tolist(), d.counts.tolist(), strict=True))
                         for d in self.tombstones]
        self._norms: list[npt.NDArray[np.int32] | None] = [None] * len(self.segments)
        self._bounded = (self.params.method == "lucene"
                         and not any(s._kernels.negative for s in self.segments))

    @property
    def n_live(self) -> int:
        return self.n_docs - sum(len(d) for d in self.tombstones)

    def live_positions(self) -> IntArray:
        """Positions of the live documents, ascending (a full build's document order)."""
        return np.concatenate([np.flatnonzero(live) + off
                               for live, off in zip(self._live, self.offsets.tolist(),
                                                    strict=False)])

    def document_frequency(self, term: str) -> int:
        """How many live documents hold ``term``."""
        return sum(self._segment_df(i, s.term_id(term)) for i, s in enumerate(self.segments))

    def _segment_df(self, i: int, tid: int) -> int:
        if tid < 0:
            return 0
        return int(self.segments[i].document_frequency(tid)) - self._dropped[i].get(tid, 0)

    # -- searching --------------------------------------------------------------------

    def search(self, query: str, top_k: int = 10, *,
               score_threshold: float | None = None) -> Hits:
        """As :meth:`.BM25Index.search`: ``(position, score)`` pairs, best first."""
        return self.search_terms(self.analyzer.analyze(check_query(query)), top_k,
                                 score_threshold=score_threshold)

    def search_terms(self, terms: Sequence[str], top_k: int = 10, *,
                     score_threshold: float | None = None) -> Hits:
        """As :meth:`search` for already-analysed query terms."""
        if not isinstance(top_k, int) or top_k < 1:
            raise UsageError(f"top_k must be a positive integer, got {top_k!r}")
        counts: dict[str, int] = {}
        for term in terms:
            counts[term] = counts.get(term, 0) + 1
        ids = [[s.term_id(t) for t in counts] for s in self.segments]
        df = [sum(self._segment_df(i, ids[i][j]) for i in range(len(self.segments)))
              for j in range(len(counts))]
        query = [(j, c, d) for j, (c, d) in enumerate(zip(counts.values(), df, strict=True))
                 if d > 0]
        if not query:
            return []
        found: list[tuple[float, int]] = []  # (-score, position)
        large = []
        for i, segment in enumerate(self.segments):
            spec = [(ids[i][j], c, d) for j, c, d in query if ids[i][j] >= 0]
            if not spec:
                continue
            postings = sum(segment.document_frequency(tid) for tid, _, _ in spec)
            if not self._bounded or postings <= EXHAUSTIVE_POSTINGS:
                found += self._exhaustive(i, spec)
            else:
                large.append((i, spec))
        found = sorted(found)[:top_k]
        for i, spec in large:
            found = sorted(found + self._pruned(i, spec, top_k, found))[:top_k]
        hits = [(position, -negated) for negated, position in found]
        if score_threshold is not None:
            hits = [h for h in hits if h[1] >= score_threshold]
        return hits

    def _exhaustive(self, i: int, spec: list[tuple[int, int, int]]) -> list[tuple[float, int]]:
        """Every live document of segment ``i`` holding a query term, with its exact total."""
        segment, ptr = self.segments[i], self.segments[i].indptr
        docs = [segment.docs[ptr[tid] : ptr[tid + 1]] for tid, _, _ in spec]
        every = np.concatenate(docs)
        touched = np.unique(every)
        totals = self._totals(i, spec, touched, docs)
        live = self._live[i][touched]
        offset = int(self.offsets[i])
        return list(zip((-totals[live]).tolist(), (touched[live] + offset).tolist(),
                        strict=True))

    def _pruned(self, i: int, spec: list[tuple[int, int, int]], k: int,
                found: list[tuple[float, int]]) -> list[tuple[float, int]]:
        """Segment ``i``'s part of the top ``k``: its kernel's best ``k'`` by stored score,
        rescored exactly, ``k'`` grown until :func:`upper_bound` rules out the rest."""
        segment = self.segments[i]
        stored = {tid: c for tid, c, _ in spec}
        want = 2 * k + 16
        while want < segment.n_docs // 4:
            top = segment._kernels.top_k(stored, want)
            touched = np.sort(np.fromiter((d for d, _ in top), dtype=np.int64, count=len(top)))
            totals = self._totals(i, spec, touched, None)
            live = self._live[i][touched]
            offset = int(self.offsets[i])
            mine = list(zip((-totals[live]).tolist(), (touched[live] + offset).tolist(),
                            strict=True))
            if len(top) < want:  # every document holding a query term is here
                return mine
            best = sorted(found + mine)[:k]
            if len(best) == k and -best[-1][0] > self.upper_bound(i, spec, top[-1][1]):
                return mine
            want *= 4
        return self._exhaustive(i, spec)

    def upper_bound(self, i: int, spec: list[tuple[int, int, int]], stored: float) -> float:
        """The most any document of segment ``i`` whose stored total is at most ``stored``
        can total with the generation's statistics (Lucene's formula).

        A term's stored score is ``w - w / (1 + tf * ni)`` with the segment's weight ``w``
        and normInverse ``ni``; with the generation's (``w'``, ``ni'``) the exact value
        changes by the factor ``w'/w * ni'/ni * (1 + tf ni) / (1 + tf ni')``, at most
        ``w'/w * max(1, avgdl'/avgdl)`` (``ni'/ni`` lies between 1 and ``avgdl'/avgdl``).
        Float32 rounding adds at most :data:`ROUNDING` of each weight, on both sides.
        """
        segment = self.segments[i]
        dfs = np.array([segment.document_frequency(tid) for tid, _, _ in spec] +
                       [d for _, _, d in spec], dtype=np.float64)
        n = len(spec)
        w = np.empty(2 * n, dtype=np.float32)
        w[:n] = scoring.idf_lucene(dfs[:n], segment.n_docs_nonempty)
        w[n:] = scoring.idf_lucene(dfs[n:], self.stats.n_docs)
        f32 = np.float32
        growth = max(1.0, float(f32(self.stats.avgdl)) / float(f32(segment.avgdl))) * (1 + 1e-6)
        ratio = w[n:].astype(np.float64) / w[:n] * growth
        counts = np.array([c for _, c, _ in spec], dtype=np.float64)
        slack = float(np.sum(counts * (ratio * w[:n] + w[n:]) * ROUNDING))
        return (float(ratio.max()) * stored + slack) * (1 + 2.0**-22)

    def _totals(self, i: int, spec: list[tuple[int, int, int]],
                touched: npt.NDArray[np.integer[Any]],
                docs: list[npt.NDArray[Any]] | None) -> F64Array:
        """Exact totals of the ``touched`` documents (ascending) of segment ``i``: each
        term's postings among them rescored with the generation's statistics, in float32
        as the build scores, multiplied by the query count in float32, summed in float64."""
        segment, ptr = self.segments[i], self.segments[i].indptr
        norms = self._norm_lengths(i)
        totals = np.zeros(len(touched), dtype=np.float64)
        for j, (tid, c, df) in enumerate(spec):
            lo, hi = int(ptr[tid]), int(ptr[tid + 1])
            if docs is not None:  # every posting: positions of the list's docs in touched
                at = np.arange(lo, hi)
                rows = np.searchsorted(touched, docs[j])
            else:  # the touched documents this list holds
                at = lo + np.searchsorted(segment.docs[lo:hi], touched)
                hold = at < hi
                hold[hold] = segment.docs[at[hold]] == touched[hold]
                at, rows = at[hold], np.flatnonzero(hold)
            if len(at) == 0:
                continue
            d = segment.docs[at]
            score = posting_scores(self.params, segment.tfs[at], norms[d],
                                   np.full(len(at), df, dtype=np.int32), self.stats.n_docs,
                                   self.stats.avgdl)
            if c != 1:
                score = score * np.float32(c)
            np.add.at(totals, rows, score.astype(np.float64))
        return totals

    def _norm_lengths(self, i: int) -> npt.NDArray[np.int32]:
        """Segment ``i``'s document lengths as scoring uses them (Lucene's byte, if on)."""
        norms = self._norms[i]
        if norms is None:
            lengths = np.asarray(self.segments[i].doc_lengths)
            quantised = (scoring.length_lucene_byte(lengths) if self.params.lucene_norms
                         else lengths)
            norms = self._norms[i] = quantised.astype(np.int32)
        return norms


def _live_mask(n: int, dead: npt.NDArray[np.int64]) -> npt.NDArray[np.bool_]:
    live = np.ones(n, dtype=bool)
    live[dead] = False
    return live

