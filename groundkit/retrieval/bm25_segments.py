"""A BM25 index held as immutable segments plus tombstones, scored with global statistics.

An update that rewrites the whole index costs time that grows with the collection
(12.6 s for one edited file at 10^6 passages, docs/scale.md). Here a generation is a list
of segments, each an ordinary :class:`~.bm25.BM25Index` written once and never changed,
and per segment its :class:`~.bm25_merge.Tombstones`: which of its documents are
deleted, and by how much each term's document frequency drops with them. An edit writes
a small segment for the new chunks and tombstones for the ones they replace;
:mod:`.bm25_merge` folds segments together later (ADR-0025).

**Exact scores.** BM25 depends on collection-wide statistics: the number of non-empty
documents, their average length and each term's document frequency. A segment's stored
scores were computed with its own statistics, so they are not the generation's. A query
here scores with the generation's statistics (summed over the segments, the tombstoned
documents taken out), so hits and scores are those of a full build over the live
documents in segment order, bit for bit (``tests/retrieval/test_bm25_segments.py``).
What a query reads, its *parts*:

* the **tail**: every segment of at most :data:`SMALL_DOCS` documents, merged in memory
  when the generation is opened (tombstoned documents dropped), so that many small
  segments cost a query one pass, not one each; scored exhaustively, every posting
  rescored from its tf and document length with the build's own float32 arithmetic;
* each **large** segment: its own pruned kernel gives its best ``k'`` documents by
  *stored* scores. Where the segment's statistics give the query terms the generation's
  weights and the same average length, the stored scores are the exact ones (no
  rescoring); otherwise the candidates are rescored exactly and a proven bound
  (:meth:`SegmentedBM25.bound`) must show that no other document reaches the k-th exact
  total, else ``k'`` grows (at worst, the segment is scored exhaustively). The bound is
  Lucene's formula's (the default method); other methods are scored exhaustively.

Documents are numbered by position in the concatenation of the segments, tombstoned
ones included (a position is stable for the life of the generation); ties go to the
lower position, as in a full build over the documents in that order.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from ..errors import UsageError
from ..text.analysis import check_query
from . import scoring
from .bm25 import BM25Index, TermExplanation
from .bm25_build import posting_scores
from .bm25_merge import Tombstones, merged
from .bm25_params import IDF
from .bm25_query import compiled_kernel

IntArray = npt.NDArray[np.int64]
F32Array = npt.NDArray[np.float32]
F64Array = npt.NDArray[np.float64]
Hits = list[tuple[int, float]]
Found = list[tuple[float, int]]
"""(-total, position) pairs: sorting them puts the best first, ties to the lower position."""
Spec = list[tuple[int, int, int, float]]
"""A query for one part: (term id there, count in the query, global df, global weight)."""

SMALL_DOCS = 1024
"""Segments of at most this many documents go to the tail (module docstring)."""
EXHAUSTIVE_POSTINGS = 512
"""A part whose stored scores are not exact and whose query terms hold at most this many
postings is scored exhaustively; above, through its own pruned kernel and the bound
(measured at 10^4 passages: 512 against 0 and 4,096, ADR-0025)."""
DENSE_TOTALS = 8192
"""An exhaustive pass over a part of at most this many documents sums into a table of
every document (``np.bincount``); above, over the touched documents only."""
ROUNDING = 2.0**-21
"""Bound on a float32 Lucene score's rounding error, as a share of its term's weight (the
four float32 steps of ``w - w / (1 + tf * normInverse)`` err by at most ``2^-22 w``)."""


class Stats:
    """A generation's collection statistics: live non-empty documents and their average
    length (a term's document frequency is summed per query)."""

    __slots__ = ("avgdl", "n_docs")

    def __init__(self, segments: Sequence[tuple[BM25Index, Tombstones]]) -> None:
        nonempty = total = 0
        for index, dead in segments:
            lengths = np.asarray(index.doc_lengths)[dead.docs]
            nonempty += index.n_docs_nonempty - int(np.count_nonzero(lengths))
            total += int(np.asarray(index.doc_lengths, dtype=np.int64).sum()) - int(lengths.sum())
        self.n_docs = nonempty
        self.avgdl = float(total) / nonempty if nonempty else 0.0  # as score_postings does


class Part:
    """What a query reads: a large segment with its tombstones, or the tail."""

    __slots__ = ("_ni", "_norms", "dropped", "index", "live", "n_dead", "offset", "positions")

    def __init__(self, index: BM25Index, *, dead: Tombstones, offset: int,
                 positions: IntArray | None = None) -> None:
        self.index, self.offset, self.positions = index, offset, positions
        self.n_dead = len(dead)
        self.live: npt.NDArray[np.bool_] | None = None
        """Which documents are live; ``None``: all."""
        if len(dead):
            self.live = np.ones(index.n_docs, dtype=bool)
            self.live[dead.docs] = False
        self.dropped: dict[int, int] = dict(zip(dead.terms.tolist(), dead.counts.tolist(),
                                                strict=True))
        self._norms: npt.NDArray[np.int32] | None = None
        self._ni: F32Array | None = None

    def position(self, local: npt.NDArray[Any]) -> IntArray:
        """Generation positions of local documents."""
        if self.positions is None:
            return local.astype(np.int64) + self.offset
        out: IntArray = self.positions[local]
        return out

    def df(self, tid: int) -> int:
        if tid < 0:
            return 0
        return int(self.index.document_frequency(tid)) - self.dropped.get(tid, 0)

    def norms(self, lucene_norms: bool) -> npt.NDArray[np.int32]:
        """Document lengths as scoring uses them (Lucene's byte, if on)."""
        if self._norms is None:
            lengths = np.asarray(self.index.doc_lengths)
            quantised = scoring.length_lucene_byte(lengths) if lucene_norms else lengths
            self._norms = quantised.astype(np.int32)
        return self._norms

    def norm_inverse(self, stats: Stats) -> F32Array:
        """Lucene's normInverse of every document with the generation's average length."""
        if self._ni is None:
            p = self.index.params
            self._ni = scoring.norm_inverse_lucene(self.norms(p.lucene_norms), stats.avgdl,
                                                   p.k1, p.b)
        return self._ni


class SegmentedBM25:
    """Search over segments with the generation's statistics (module docstring)."""

    def __init__(self, segments: Sequence[tuple[BM25Index, Tombstones]], *,
                 version: int = 0) -> None:
        if not segments:
            raise UsageError("a segmented index needs at least one segment")
        first = segments[0][0]
        for index, dead in segments:
            if index.params != first.params or index.analyzer.identity != first.analyzer.identity:
                raise UsageError("segments must share their analyzer and BM25 parameters")
            if len(dead.docs) and dead.docs[-1] >= index.n_docs:
                raise UsageError(f"a tombstone names document {int(dead.docs[-1])} of a "
                                 f"segment of {index.n_docs}")
            if len(dead.terms) and (dead.terms[-1] >= index.n_terms or np.any(
                    np.diff(np.asarray(index.indptr))[dead.terms] < dead.counts)):
                raise UsageError("a tombstone drops a term the segment lacks, or more of its "
                                 "documents than hold it")
        self.version = version
        """The manifest version it was opened from (:mod:`.bm25_segment_store`)."""
        self.segments = [index for index, _ in segments]
        self.tombstones = [dead for _, dead in segments]
        self.analyzer, self.params = first.analyzer, first.params
        self.offsets = np.concatenate(([0], np.cumsum([s.n_docs for s in self.segments])))
        self.n_docs = int(self.offsets[-1])
        """Positions, tombstoned documents included."""
        self.stats = Stats(segments)
        self._lucene = (self.params.method == "lucene"
                        and not any(s._kernels.negative for s in self.segments))
        self._compiled = compiled_kernel()
        self._term_ids: dict[str, int] = {}
        self._terms: list[str] = []
        self._lock = threading.Lock()
        self.parts = self._parts(segments)
        self._whole = (self.segments[0] if len(self.segments) == 1 and not self.tombstones[0]
                       else None)

    def _parts(self, segments: Sequence[tuple[BM25Index, Tombstones]]) -> list[Part]:
        parts, small = [], []
        for (index, dead), offset in zip(segments, self.offsets.tolist(), strict=False):
            if index.n_docs <= SMALL_DOCS and len(segments) > 1:
                small.append((index, dead, offset))
            else:
                parts.append(Part(index, dead=dead, offset=offset))
        if small:
            tail = merged([(index, dead) for index, dead, _ in small], blocks=False)
            positions = np.concatenate([
                np.setdiff1d(np.arange(index.n_docs), dead.docs) + offset
                for index, dead, offset in small])
            parts.append(Part(tail, dead=Tombstones(), offset=0, positions=positions))
        return parts

    @property
    def n_live(self) -> int:
        return self.n_docs - sum(len(d) for d in self.tombstones)

    def live_positions(self) -> IntArray:
        """Positions of the live documents, ascending (a full build's document order)."""
        return np.concatenate([np.setdiff1d(np.arange(s.n_docs), d.docs) + off
                               for s, d, off in zip(self.segments, self.tombstones,
                                                    self.offsets.tolist(), strict=False)])

    def document_frequency(self, term: str) -> int:
        """How many live documents hold ``term``."""
        return sum(p.df(p.index.term_id(term)) for p in self.parts)

    # -- the rest of BM25Index's reading API, generation-wide --------------------------

    def term_id(self, term: str) -> int:
        """An id for ``term`` in this generation (ids are per generation, not per segment),
        or -1 when no live document holds it."""
        tid = self._term_ids.get(term)
        if tid is None:  # kept for the generation's life: ids must not change under callers
            tid = -1
            if self.document_frequency(term) > 0:
                with self._lock:  # two threads must not hand out one id
                    tid = self._term_ids.setdefault(term, len(self._terms))
                    if tid == len(self._terms):
                        self._terms.append(term)
        return tid

    def term(self, term_id: int) -> str:
        return self._terms[term_id]

    def idf(self, term_id: int) -> float:
        """As :meth:`.BM25Index.idf`, with the generation's statistics."""
        df = max(1, self.document_frequency(self.term(term_id)) if term_id >= 0 else 0)
        return float(IDF[self.params.method](float(df), self.stats.n_docs))

    def holds(self, term_ids: Sequence[int], positions: Sequence[int]) -> list[list[bool]]:
        """For each position, which of the terms its document holds (False: deleted)."""
        rows = []
        for position in positions:
            found = self._locate(position)
            if found is None:
                rows.append([False] * len(term_ids))
                continue
            part, local = found
            ids = [part.index.term_id(self.term(t)) if t >= 0 else -1 for t in term_ids]
            rows.append(part.index.holds(ids, [local])[0])
        return rows

    def explain(self, query: str, position: int) -> list[TermExplanation]:
        """As :meth:`.BM25Index.explain`, with the generation's statistics."""
        found = self._locate(position)
        if found is None:
            raise UsageError(f"position {position} is not a live document of this generation")
        part, local = found
        index = part.index
        dl = int(index.doc_lengths[local])
        norm = int(part.norms(self.params.lucene_norms)[local])
        counts: dict[str, int] = {}
        for term in self.analyzer.analyze(check_query(query)):
            if self.term_id(term) >= 0:
                counts[term] = counts.get(term, 0) + 1
        dfs = [self.document_frequency(t) for t in counts]
        out = []
        for (term, count), df, w in zip(counts.items(), dfs, self.weights(dfs), strict=True):
            tid = index.term_id(term)
            lo, hi = (int(index.indptr[tid]), int(index.indptr[tid + 1])) if tid >= 0 else (0, 0)
            at = lo + int(np.searchsorted(index.docs[lo:hi], local))
            held = at < hi and int(index.docs[at]) == local
            score = (float(self._scores(part, (tid, 1, df, w), np.array([at]))[0]) * count
                     if held else 0.0)
            out.append(TermExplanation(
                term=term, query_count=count, df=df,
                idf=float(IDF[self.params.method](float(df), self.stats.n_docs)),
                tf=int(index.tfs[at]) if held else 0, doc_length=dl, norm_length=norm,
                score=score))
        return out

    def _locate(self, position: int) -> tuple[Part, int] | None:
        """The part and local document of a live position; ``None`` if deleted."""
        if not 0 <= position < self.n_docs:
            raise UsageError(f"position {position} is outside 0..{self.n_docs - 1}")
        for part in self.parts:
            if part.positions is not None:
                at = int(np.searchsorted(part.positions, position))
                if at < len(part.positions) and part.positions[at] == position:
                    return part, at
            elif part.offset <= position < part.offset + part.index.n_docs:
                local = position - part.offset
                return None if part.live is not None and not part.live[local] else (part, local)
        return None

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
        if self._whole is not None:  # one segment, nothing deleted: its own index answers
            return self._whole.search_terms(terms, top_k, score_threshold=score_threshold)
        counts: dict[str, int] = {}
        for term in terms:
            counts[term] = counts.get(term, 0) + 1
        ids = [[p.index.term_id(t) for t in counts] for p in self.parts]
        df = [sum(p.df(ids[i][j]) for i, p in enumerate(self.parts)) for j in range(len(counts))]
        query = [(j, c, d) for j, (c, d) in enumerate(zip(counts.values(), df, strict=True))
                 if d > 0]
        if not query:
            return []
        weights = self.weights([d for _, _, d in query])
        found: Found = []
        large: list[tuple[Part, Spec, F32Array | None]] = []
        for i, part in enumerate(self.parts):
            spec = [(ids[i][j], c, d, w) for (j, c, d), w in zip(query, weights, strict=True)
                    if ids[i][j] >= 0]
            if not spec:
                continue
            if not self._lucene:
                found += self._exhaustive(part, spec, top_k)
                continue
            own = self.own_weights(part, spec)
            if np.array_equal(own, [w for *_, w in spec]) and np.float32(part.index.avgdl) \
                    == np.float32(self.stats.avgdl):  # stored scores exact: its kernel answers
                large.append((part, spec, None))
            elif sum(part.index.document_frequency(t) for t, *_ in spec) > EXHAUSTIVE_POSTINGS:
                large.append((part, spec, own))
            else:
                found += self._exhaustive(part, spec, top_k)
        found = sorted(found)[:top_k]
        for part, spec, stored_weights in large:
            found = sorted(found + self._pruned(part, spec, stored_weights, top_k, found))[:top_k]
        hits = [(position, -negated) for negated, position in found]
        if score_threshold is not None:
            hits = [h for h in hits if h[1] >= score_threshold]
        return hits

    def weights(self, dfs: Sequence[int]) -> list[float]:
        """Lucene's float32 weight (idf) of terms of these global document frequencies,
        computed as the build computes them (one float64 array, then float32)."""
        if not self._lucene:
            return [0.0] * len(dfs)  # unused: other methods score through posting_scores
        idf = scoring.idf_lucene(np.asarray(dfs, dtype=np.float64), self.stats.n_docs)
        return np.asarray(idf, dtype=np.float32).tolist()  # type: ignore[no-any-return]

    def _exhaustive(self, part: Part, spec: Spec, k: int) -> Found:
        """The best ``k`` live documents of ``part`` holding a query term, exact totals."""
        ptr, n = part.index.indptr, part.index.n_docs
        every = np.concatenate([part.index.docs[ptr[t] : ptr[t + 1]] for t, *_ in spec])
        small = n <= DENSE_TOTALS  # a table of every document costs less than a sort
        touched = np.flatnonzero(np.bincount(every, minlength=n)) if small else np.unique(every)
        if self._compiled is not None and self._lucene:
            return self._found(part, touched, self._rescored(part, spec, touched), k)
        ranges = [np.arange(ptr[t], ptr[t + 1]) for t, *_ in spec]
        docs = [part.index.docs[at] for at in ranges]
        if small:
            table = np.zeros(n, dtype=np.float64)
            for at, d, term in zip(ranges, docs, spec, strict=True):
                table += np.bincount(d, self._scores(part, term, at), minlength=n)
            return self._found(part, touched, table[touched], k)
        totals = np.zeros(len(touched), dtype=np.float64)
        for at, d, term in zip(ranges, docs, spec, strict=True):
            np.add.at(totals, np.searchsorted(touched, d), self._scores(part, term, at))
        return self._found(part, touched, totals, k)

    def _found(self, part: Part, local: npt.NDArray[Any], totals: F64Array, k: int) -> Found:
        """The best ``k`` live documents among ``local`` by their ``totals``."""
        if part.live is not None:
            keep = part.live[local]
            local, totals = local[keep], totals[keep]
        positions = part.position(local)
        if len(totals) > k:
            best = np.lexsort((positions, -totals))[:k]
            positions, totals = positions[best], totals[best]
        return list(zip((-totals).tolist(), positions.tolist(), strict=True))

    def _scores(self, part: Part, term: tuple[int, int, int, float], at: IntArray) -> F64Array:
        """The exact scores of postings ``at`` (of ``term``): float32 as the build scores
        them, times the query count in float32, as float64 (sums of them are exact)."""
        _, c, df, w = term
        index, stats = part.index, self.stats
        d = index.docs[at]
        if self._lucene:  # bm25_build.lucene_scores, step for step
            x = part.norm_inverse(stats)[d]
            np.multiply(x, index.tfs[at], out=x, dtype=np.float32)
            x += np.float32(1)
            weight = np.float32(w)
            np.divide(weight, x, out=x)
            score = np.subtract(weight, x, out=x)
        else:
            score = posting_scores(self.params, index.tfs[at],
                                   part.norms(self.params.lucene_norms)[d],
                                   np.full(len(at), df, dtype=np.int32), stats.n_docs,
                                   stats.avgdl)
        if c != 1:
            score = score * np.float32(c)
        return score.astype(np.float64)

    def _pruned(self, part: Part, spec: Spec, own: F32Array | None, k: int,
                found: Found) -> Found:
        """``part``'s share of the top ``k``: its kernel's best ``k'`` by stored score,
        exact as stored (``own`` None) or rescored (``own``: the weights it stored with),
        ``k'`` grown until nothing else can enter."""
        index = part.index
        stored = {t: c for t, c, _, _ in spec}
        same = own is None
        ratio, slack = (1.0, 0.0) if own is None else self.bound(part, spec, own)
        want = k + part.n_dead if same and part.n_dead <= 4 * k + 64 else 2 * k + 16
        while want < max(index.n_docs // 4, k + part.n_dead + 1):
            top = index._kernels.top_k(stored, want)
            local = np.fromiter((d for d, _ in top), dtype=np.int64, count=len(top))
            if same:
                mine = self._found(part, local, np.array([t for _, t in top]), k)
            else:
                local.sort()
                mine = self._found(part, local, self._rescored(part, spec, local), k)
            if len(top) < want:  # every document holding a query term is here
                return mine
            best = sorted(found + mine)[:k]
            if len(best) == k:
                kth, at = -best[-1][0], best[-1][1]
                tau, last = top[-1][1], int(part.position(np.array([top[-1][0]]))[0])
                # the rest: stored totals <= tau, and at tau lower in the tie order than `last`
                if kth > ratio * tau + slack or (same and kth == tau and at <= last):
                    return mine
            want *= 4
        return self._exhaustive(part, spec, k)

    def _rescored(self, part: Part, spec: Spec, local: npt.NDArray[np.integer[Any]]
                  ) -> F64Array:
        """Exact totals of the documents ``local`` (ascending) of ``part`` (in C where the
        kernel is built: the same float32 steps; else a bisection per term in numpy)."""
        ptr, docs = part.index.indptr, part.index.docs
        totals = np.zeros(len(local), dtype=np.float64)
        if self._compiled is not None and self._lucene:
            terms = tuple((int(ptr[t]), int(ptr[t + 1]), w, float(c)) for t, c, _, w in spec)
            self._compiled.rescore(docs, part.index.tfs, part.norm_inverse(self.stats),
                                   np.ascontiguousarray(local, dtype=np.int64), totals, terms)
            return totals
        for term in spec:
            lo, hi = int(ptr[term[0]]), int(ptr[term[0] + 1])
            at = lo + np.searchsorted(docs[lo:hi], local)
            hold = at < hi
            hold[hold] = docs[at[hold]] == local[hold]
            if hold.any():
                np.add.at(totals, np.flatnonzero(hold), self._scores(part, term, at[hold]))
        return totals

    def own_weights(self, part: Part, spec: Spec) -> F32Array:
        """The float32 weights ``part``'s stored scores of these terms were computed with
        (its own document frequencies and count)."""
        index = part.index
        idf = scoring.idf_lucene(np.array([index.document_frequency(t) for t, *_ in spec],
                                          dtype=np.float64), index.n_docs_nonempty)
        return np.asarray(idf, dtype=np.float32)

    def bound(self, part: Part, spec: Spec, own_weights: F32Array) -> tuple[float, float]:
        """``(ratio, slack)``: a document of ``part`` whose stored total is ``s`` totals at
        most ``ratio * s + slack`` with the generation's statistics (Lucene's formula).

        A term's stored score is ``w - w / (1 + tf * ni)`` with the segment's weight ``w``
        and normInverse ``ni``; with the generation's (``w'``, ``ni'``) the exact value
        changes by the factor ``w'/w * ni'/ni * (1 + tf ni) / (1 + tf ni')``, at most
        ``w'/w * max(1, avgdl'/avgdl)`` (``ni'/ni`` lies between 1 and ``avgdl'/avgdl``).
        Float32 rounding adds at most :data:`ROUNDING` of each weight, on both sides, and
        the query counts' float32 products a relative ``2^-24`` each.
        """
        index = part.index
        own = own_weights.astype(np.float64)
        glob = np.array([w for _, _, _, w in spec], dtype=np.float64)
        f32 = np.float32
        growth = max(1.0, float(f32(self.stats.avgdl)) / float(f32(index.avgdl))) * (1 + 1e-6)
        ratio = glob / own * growth
        counts = np.array([c for _, c, _, _ in spec], dtype=np.float64)
        slack = float(np.sum(counts * (ratio * own + glob) * ROUNDING))
        grow = 1 + 2.0**-22
        return float(ratio.max()) * grow, slack * grow
