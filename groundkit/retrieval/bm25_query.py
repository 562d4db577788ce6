"""BM25 top-k kernels: exact results with as few numpy calls as possible.

Every path returns what exhaustive scoring returns: each document's total is the
float64 sum, in query order, of its terms' float32 scores (each times the term's
query count, in float32); the ``k`` best totals win and ties go to the lower doc.

* **One term** (the commonest query): a long posting list's impact-ordered prefix
  (:func:`impact_prefixes`: best score first, ties by doc) *is* its ranking, so the
  top ``k`` are read off with no arithmetic.
* **Several terms**: every posting is added, in query order, into a per-thread
  float64 accumulator (``np.add.at`` with intp/float64 operands, about a
  nanosecond a posting; no per-query allocation, whose fresh pages cost more
  than the sums). Then the top ``k`` are selected above ``theta``, a lower bound
  on the k-th best total (the best k-th single-term score, read from the impact
  prefixes, or the best k-th exact total among seed documents: each long list's
  top ``k``, every short list). A query adding few postings (under one per
  ``GATHER_RATIO`` documents) reads its candidates from the touched documents;
  otherwise a small collection scans the accumulator and a large one lets one
  term propose every candidate, by MaxScore's argument (Turtle and Flood 1995):
  a document reaching ``theta`` scores at least ``theta - (sum of the other
  terms' maxima)`` on every term, so a term whose floor is positive proposes them
  all (a prefix of its impact order, or a filter of its list). The accumulator is
  re-zeroed where it was touched, or by a memset when that is cheaper.

In numpy, adding every posting beat the pruned strategies tried at 100,000 passages
(ADR-0003 lists them): their bookkeeping costs more than the memory-bound sums.

* **Compiled** (when the optional C extension ``_bm25c`` is built, the default
  install): several-term queries over non-negative scores go document at a time
  through MaxScore in C (``_bm25c.c``), reading the doc-ordered lists in step and
  skipping the documents that cannot enter the top ``k``. Its answers are the numpy
  kernel's, bit for bit: it runs only when every sum is exact in float64 (every
  score is a multiple of the smallest positive score's float32 ulp, and the terms'
  maxima sum to under 2^53 of them), so the order of addition cannot matter;
  otherwise, and with ``GROUNDKIT_BM25_KERNEL=numpy``, the numpy kernel answers.
* **Block-max** (compiled, long queries over long lists; :mod:`.bm25_blocks`): each list
  with at least one posting per block of 128 documents stores per block its best score,
  rounded up to whole power-of-two steps (a multiple of the same unit, so bounds add up
  exactly). When a query's lists hold at least ``bm25_blocks.DENSE`` postings a block,
  MaxScore goes block by block: a block whose bounds cannot lift a document into the top
  ``k`` is skipped unread, inside a block the block bounds choose the essential lists
  and filter the probes, and a list probed twice in a block has that block's scores laid
  out for look-ups (ADR-0003, "Revision 2026-12-04").
* **Score columns** (compiled; :mod:`.bm25_blocks`): a list in a quarter of the documents
  or more also stores its score for every document, so a probe into it is one read
  (ADR-0003, "Revision 2026-12-07").
* **Windowed** (compiled, lists of at least ``bm25_blocks.WINDOWED`` postings a block):
  where even block bounds leave nearly every document to complete, windows of 16 blocks
  are summed instead, the essential lists' scores added into float64 totals in the L1
  cache with no branch per posting, the totals that could still enter picked eight at a
  time, and the next list added too while that costs less than probing it for each of
  them; windows where the essential lists are sparse go block by block (ADR-0003,
  "Revision 2026-12-06").
"""

from __future__ import annotations

import functools
import os
import threading
from types import ModuleType
from typing import Any

import numpy as np
import numpy.typing as npt

from . import bm25_blocks

IntArray = npt.NDArray[np.int64]
F32Array = npt.NDArray[np.float32]
Hits = list[tuple[int, float]]

SHORT = 128
"""Posting lists this long or shorter are always read whole (no impact prefix stored)."""
DEPTH = 1024
"""Impact prefixes hold at most this many postings (a clean cut at a score boundary)."""
SCAN_DOCS = 131_072
"""Up to this many documents, scanning the accumulator (about 0.25 ns a document) costs
less than the numpy calls that propose candidates without a scan."""
SCAN_RATIO = 16
"""...and so does it when the query added at least one posting per this many documents."""
GATHER_RATIO = 16
"""Below one posting per this many documents, candidates are read from the touched
documents (a gather, about a nanosecond a posting) rather than by scanning them all."""
FILL_RATIO = 8
"""Above one posting per this many documents, the accumulator is re-zeroed by a memset."""
_F32 = np.float32
COMPILED_VERSION = 9
"""The ``_bm25c`` interface this module speaks (its ``VERSION``); another is not used."""


def compiled_kernel() -> ModuleType | None:
    """The built C kernel, or ``None``: not built, another version, or
    ``GROUNDKIT_BM25_KERNEL=numpy`` (the numpy kernel gives the same answers)."""
    if os.environ.get("GROUNDKIT_BM25_KERNEL", "").strip().lower() == "numpy":
        return None
    try:
        from . import _bm25c
    except ImportError:
        return None
    return _bm25c if getattr(_bm25c, "VERSION", None) == COMPILED_VERSION else None


def score_unit(scores: npt.NDArray[np.float32]) -> float:
    """The float32 ulp of the smallest positive score (0.0 when none is positive): every
    score is a whole multiple of it, so sums of fewer than 2^53 units are exact in float64,
    which lets the compiled kernel add a document's scores in any order."""
    smallest = np.min(scores, initial=np.inf, where=scores > 0)
    return float(np.spacing(_F32(smallest))) if np.isfinite(smallest) else 0.0


def impact_prefixes(indptr: IntArray, docs: npt.NDArray[np.int32],
                    scores: F32Array) -> dict[str, npt.NDArray[Any]]:
    """Per posting list longer than ``SHORT``: its best postings, best first.

    ``imp_docs[imp_ptr[t]:imp_ptr[t + 1]]`` (and ``imp_scores``) are term ``t``'s
    postings scoring above ``imp_next[t]``, ordered by score descending, then doc;
    every other posting of ``t`` scores at most ``imp_next[t]`` (0 when the prefix is
    the whole list). At most ``DEPTH`` postings: the cut is at the ``DEPTH``-th
    best score, excluding its ties, so the prefix is exactly a top of the ranking.
    """
    df = np.diff(indptr)
    long_terms = np.flatnonzero(df > SHORT)
    starts = indptr[long_terms]
    pieces: list[tuple[Any, Any]] = []
    lengths = np.zeros(len(df), dtype=np.int64)
    nxt = np.zeros(len(df), dtype=np.float32)
    for t, lo, n in zip(long_terms.tolist(), starts.tolist(), df[long_terms].tolist(),
                        strict=True):
        s = scores[lo : lo + n]
        if n <= DEPTH:
            keep = np.arange(n)
        else:
            cut = np.partition(s, n - DEPTH)[n - DEPTH]
            keep = np.flatnonzero(s > cut)
            nxt[t] = cut
        order = keep[np.argsort(-s[keep], kind="stable")]
        pieces.append((docs[lo + order], s[order]))
        lengths[t] = len(order)
    imp_ptr = np.zeros(len(df) + 1, dtype=np.int64)
    np.cumsum(lengths, out=imp_ptr[1:])
    imp_docs = np.concatenate([d for d, _ in pieces]) if pieces else np.zeros(0, np.int32)
    imp_scores = np.concatenate([s for _, s in pieces]) if pieces else np.zeros(0, np.float32)
    return {"imp_ptr": imp_ptr, "imp_docs": imp_docs.astype(np.int32, copy=False),
            "imp_scores": imp_scores.astype(np.float32, copy=False), "imp_next": nxt}


class Kernels:
    """Top-k over one index's arrays (thread-safe: each thread has its own scratch)."""

    def __init__(self, arrays: dict[str, Any], *, negative: bool,
                 unit: float | None = None, shift: int | None = None) -> None:
        self.negative = negative
        """Whether some score is negative (classic idf): then a term can lower a total."""
        self.docs, self.scores = arrays["docs"], arrays["scores"]
        self.imp_docs, self.imp_scores = arrays["imp_docs"], arrays["imp_scores"]
        self.n_docs = len(arrays["doc_lengths"])
        self._ptr = _view(arrays["indptr"], "q")
        self._imp_ptr = _view(arrays["imp_ptr"], "q")
        self._imp_next = _view(arrays["imp_next"], "f")
        self._imp_scores = _view(arrays["imp_scores"], "f")
        self._local = threading.local()
        self.compiled = None if negative else compiled_kernel()
        """The C kernel several-term queries go through, or ``None`` (numpy)."""
        self._unit = unit
        self._blocks: tuple[Any, Any, Any, int] | None = None
        """Block maxima for the C kernel (quanta, slots, steps, shift), or ``None`` (an
        index written before them: plain MaxScore, the same answers)."""
        if "block_quanta" in arrays and shift is not None:
            self._blocks = (arrays["block_quanta"], _view(arrays["block_slots"], "i"),
                            _view(arrays["block_steps"], "f"), shift)
        self._columns: tuple[Any, Any, Any] | None = None
        """Score columns (scores, starts, slots), or ``None`` (none: the same answers)."""
        if self._blocks is not None and len(arrays.get("column_scores", ())):
            self._columns = (arrays["column_scores"], arrays["column_starts"],
                             _view(arrays["column_slots"], "i"))

    @functools.cached_property
    def exact_limit(self) -> float:
        """Totals under this are exact float64 sums: 2^53 times the index's
        :func:`score_unit`, recorded at build (derived here, one pass over the scores, for
        an index written before it was recorded)."""
        return 2.0**53 * (self._unit if self._unit is not None else score_unit(self.scores))

    def top_k(self, weights: dict[int, int], k: int) -> Hits:
        """The ``k`` best (doc, total) for term id -> query count ``weights``."""
        if len(weights) > 1 and self.compiled is not None:
            hits = self._maxscore(weights, k)
            if hits is not None:
                return hits
        ptr, imp = self._ptr, self._imp_ptr
        terms = [_Term(self, tid, c, ptr[tid], ptr[tid + 1], imp[tid], imp[tid + 1])
                 for tid, c in weights.items()]
        if len(terms) == 1:
            t = terms[0]
            if t.c == 1 and k <= t.ihi - t.ilo:
                docs = self.imp_docs[t.ilo : t.ilo + k].tolist()
                return list(zip(docs, self.imp_scores[t.ilo : t.ilo + k].tolist(), strict=True))
            docs, scores = t.postings()
            return _best(docs, scores.astype(np.float64), k)
        return self._several(terms, k)

    def _maxscore(self, weights: dict[int, int], k: int) -> Hits | None:
        """The compiled kernel's answer, or ``None`` where its sums might round."""
        ptr, imp = self._ptr, self._imp_ptr
        spec: list[tuple[Any, ...]] = [(ptr[tid], ptr[tid + 1], float(c), imp[tid], imp[tid + 1])
                                       for tid, c in weights.items()]
        paths: tuple[Any, ...] = ()
        if self._blocks is not None:  # each term names its row of block maxima (-1: none)
            quanta, slots, steps, shift = self._blocks
            spec = [(*t, slots[tid], steps[tid]) for t, tid in zip(spec, weights, strict=True)]
            paths = (quanta, shift, bm25_blocks.DENSE, bm25_blocks.WINDOWED)
        if self._columns is not None:  # ... and its score column (-1: none)
            columns, starts, cols = self._columns
            spec = [(*t, cols[tid]) for t, tid in zip(spec, weights, strict=True)]
            paths += (columns, starts)
        hits: Hits | None = self.compiled.maxscore(  # type: ignore[union-attr]
            self.docs, self.scores, self.imp_scores, spec, k, self.exact_limit, *paths)
        return hits

    def _several(self, terms: list[_Term], k: int) -> Hits:
        postings = [t.postings() for t in terms]
        n = sum(len(d) for d, _ in postings)
        acc, every, weights = self.scratch(n)
        # query order, float64, into scratch: no allocation (fresh pages cost more than the sums)
        np.concatenate([d for d, _ in postings], out=every)
        np.concatenate([s for _, s in postings], out=weights)
        np.add.at(acc, every, weights)
        try:
            return self._select(terms, postings, acc, every, k)
        finally:
            if n * FILL_RATIO > len(acc):  # a memset beats scattering zeros
                acc.fill(0.0)
            else:
                acc[every] = 0.0

    def _select(self, terms: list[_Term], postings: list[tuple[Any, Any]],
                totals: npt.NDArray[np.float64], every: npt.NDArray[np.intp], k: int) -> Hits:
        """The top ``k`` of ``totals`` (exact for every touched document), read selectively.

        Candidates (documents whose total reaches ``theta``, a lower bound on the k-th
        best total) are read from the touched documents when the query added fewer
        than one posting per ``GATHER_RATIO`` documents, else by a scan of the
        accumulator (small collections) or proposed by one term: a document reaching
        ``theta`` scores at least ``theta - (sum of the other terms' maxima)`` on
        *every* term (were it below on one, the others could not make up the
        difference), so one term with a positive floor proposes every candidate.
        """
        candidates: npt.NDArray[Any]
        touched_first = len(every) * GATHER_RATIO <= len(totals)
        if not self.negative:
            # a k-th best single-term score bounds the k-th best total
            theta = max(t.times_c(self._imp_scores[t.ilo + k - 1]) if t.ihi - t.ilo >= k
                        else 0.0 for t in terms)
            if theta > 0.0 and touched_first:
                return _best_touched(totals, every, theta, k)
            if theta > 0.0 and len(totals) <= max(SCAN_DOCS, SCAN_RATIO * len(every)):
                candidates = np.flatnonzero(totals >= theta)
                return _best(candidates, totals[candidates], k)
        theta = max(_kth(totals[t.seeds(d, k)], k) for t, (d, _) in
                    zip(terms, postings, strict=True))
        if theta <= 0.0:  # fewer than k touched documents can score: rank them all
            touched = _distinct(every)
            return _best(touched, totals[touched], k)
        proposer = self._proposer(terms, postings, theta, len(every) if touched_first
                                  else len(totals) // 16)
        if proposer is None:  # no cheap proposer: read the touched documents or scan
            if touched_first:
                return _best_touched(totals, every, theta, k)
            candidates = np.flatnonzero(totals >= theta)
        else:
            t, floor, d, s = proposer
            candidates = t.at_least(floor, d, s)
            candidates = np.sort(candidates[totals[candidates] >= theta])
        return _best(candidates, totals[candidates], k)

    @staticmethod
    def _proposer(terms: list[_Term], postings: list[tuple[Any, Any]], theta: float,
                  best_cost: int) -> tuple[_Term, float, Any, Any] | None:
        """The term whose floor proposes the fewest candidates (under ``best_cost``)."""
        maxima = [max(t.best(s), 0.0) for t, (_, s) in zip(terms, postings, strict=True)]
        everything = sum(maxima)
        slack = 1e-9 * (theta + everything)  # float rounding may only add candidates
        proposer = None
        for t, m, (d, s) in zip(terms, maxima, postings, strict=True):
            floor = theta - (everything - m) - slack
            if floor > 0.0:
                cost = t.count_at_least(floor, len(d))
                if cost < best_cost:
                    best_cost, proposer = cost, (t, floor, d, s)
        return proposer

    def scratch(self, n: int) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.intp],
                                       npt.NDArray[np.float64]]:
        """This thread's zeroed accumulator over all documents (callers re-zero it) and
        room for ``n`` postings (doc ids as intp, scores as float64)."""
        local = self._local
        acc: npt.NDArray[np.float64] | None = getattr(local, "acc", None)
        if acc is None:
            acc = local.acc = np.zeros(self.n_docs, dtype=np.float64)
        if len(getattr(local, "every", ())) < n:
            size = max(n, 2 * len(getattr(local, "every", ())), 4096)
            local.every = np.empty(size, dtype=np.intp)
            local.weights = np.empty(size, dtype=np.float64)
        return acc, local.every[:n], local.weights[:n]


class _Term:
    """One query term: doc-ordered postings ``[lo, hi)``, impact prefix ``[ilo, ihi)``."""

    __slots__ = ("c", "hi", "ihi", "ilo", "kernels", "lo", "tid")

    def __init__(self, kernels: Kernels, tid: int, c: int, lo: int, hi: int, ilo: int,
                 ihi: int) -> None:
        self.kernels, self.tid, self.c = kernels, tid, c
        self.lo, self.hi, self.ilo, self.ihi = lo, hi, ilo, ihi

    def times_c(self, score: float) -> float:
        return score if self.c == 1 else float(_F32(score) * _F32(self.c))

    def postings(self) -> tuple[npt.NDArray[np.int32], F32Array]:
        docs = self.kernels.docs[self.lo : self.hi]
        scores = self.kernels.scores[self.lo : self.hi]
        return docs, scores if self.c == 1 else scores * _F32(self.c)

    def seeds(self, docs: npt.NDArray[np.int32], k: int) -> npt.NDArray[np.int32]:
        """Documents likely among this term's best: its top ``k``, or all of a short list."""
        if self.ihi > self.ilo:
            return self.kernels.imp_docs[self.ilo : min(self.ilo + k, self.ihi)]  # type: ignore[no-any-return]
        return docs

    def best(self, scores: F32Array) -> float:
        if self.ihi > self.ilo:
            return self.times_c(self.kernels._imp_scores[self.ilo])
        return float(scores.max())

    def _cut(self, floor: float) -> int:
        """End of the impact prefix's scores >= ``floor`` (they descend: bisect)."""
        imp = self.kernels._imp_scores
        lo, hi = self.ilo, self.ihi
        while lo < hi:
            mid = (lo + hi) >> 1
            if self.times_c(imp[mid]) >= floor:
                lo = mid + 1
            else:
                hi = mid
        return lo

    def _in_prefix(self, floor: float) -> bool:
        return self.ihi > self.ilo and floor > self.times_c(self.kernels._imp_next[self.tid])

    def count_at_least(self, floor: float, df: int) -> int:
        """How many postings :meth:`at_least` returns (or reads, for a whole-list filter)."""
        return self._cut(floor) - self.ilo if self._in_prefix(floor) else df

    def at_least(self, floor: float, docs: npt.NDArray[np.int32],
                 scores: F32Array) -> npt.NDArray[np.int32]:
        """The documents whose score for this term is at least ``floor``."""
        if self._in_prefix(floor):
            return self.kernels.imp_docs[self.ilo : self._cut(floor)]  # type: ignore[no-any-return]
        return docs[scores >= floor]  # type: ignore[no-any-return]


def _kth(values: npt.NDArray[np.float64], k: int) -> float:
    """The k-th largest value, or 0.0 when there are fewer than ``k``."""
    n = len(values)
    return float(np.partition(values, n - k)[n - k]) if n >= k else 0.0


def _distinct(docs: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """``docs`` sorted, without repeats."""
    docs = np.sort(docs)
    first = np.empty(len(docs), dtype=bool)
    first[:1] = True
    np.not_equal(docs[1:], docs[:-1], out=first[1:])
    return docs[first]


def _best_touched(totals: npt.NDArray[np.float64], every: npt.NDArray[np.intp], theta: float,
                  k: int) -> Hits:
    """The top ``k`` among the touched documents ``every`` (repeats allowed) reaching ``theta``."""
    candidates = every[totals.take(every) >= theta]
    candidates = _distinct(candidates)
    return _best(candidates, totals[candidates], k)


def _best(docs: npt.NDArray[Any], totals: npt.NDArray[np.float64], k: int) -> Hits:
    """The ``k`` best (doc, total), best first; ``docs`` ascend, so ties keep the lower doc."""
    if len(totals) > max(k, 256):  # else sorting them all is cheaper than a partition
        cut = np.partition(totals, len(totals) - k)[len(totals) - k]
        top = np.flatnonzero(totals >= cut)
        docs, totals = docs[top], totals[top]
    order = np.argsort(-totals, kind="stable")[:k]
    return list(zip(docs[order].tolist(), totals[order].tolist(), strict=True))


def _view(arr: npt.NDArray[Any], fmt: str) -> Any:
    """A flat memoryview whose items index as Python numbers (no numpy scalar per read)."""
    buffer: Any = np.ascontiguousarray(arr)
    return memoryview(buffer).cast("B").cast(fmt)  # type: ignore[call-overload]
