"""BM25 query kernels over term-major postings: exact top-k with MaxScore pruning."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import numpy.typing as npt

from .bm25_build import LONG

IntArray = npt.NDArray[np.int64]


class Kernels:
    """Top-k over the posting arrays of one index (thread-safe: scratch is per thread)."""

    def __init__(self, arrays: dict[str, Any], ptr_view: Any, negative: bool) -> None:
        self.docs = arrays["docs"]
        self.scores = arrays["scores"]
        self.max_scores = arrays["max_scores"]
        self.kth10 = arrays["kth10"]
        self.kth100 = arrays["kth100"]
        self.n_docs = len(arrays["doc_lengths"])
        self._ptr_view = ptr_view
        self._negative = negative
        self._local = threading.local()

    def top_k(self, weights: dict[int, int], k: int) -> list[tuple[int, float]]:
        docs, totals = self._candidates(weights, k)
        best = _top_k(docs, totals, k)
        return [(int(d), float(s)) for d, s in zip(docs[best], totals[best], strict=True)]

    def _candidates(self, weights: dict[int, int], k: int) -> tuple[Any, Any]:
        """Documents that can still be in the top ``k``, with their exact totals.

        MaxScore (Turtle and Flood 1995), vectorised: ``theta`` is a lower bound
        on the k-th best total (from single-term k-th scores and the full totals
        of the best term's top documents; scores are non-negative). Terms whose
        maxima sum below ``theta`` cannot lift a document into the top k alone, so
        only the other ("essential") terms' postings are gathered; the rest are
        looked up by binary search for the candidates still able to reach ``theta``.
        """
        ptr, f32 = self._ptr_view, np.float32
        terms = []
        for tid, c in weights.items():
            lo, hi = ptr[tid], ptr[tid + 1]
            terms.append((float(self.max_scores[tid] * f32(c)), lo, hi, c, tid))
        terms.sort()
        theta = self._theta(terms, k)
        split, bound = 0, 0.0
        while split < len(terms) and bound + terms[split][0] < theta:
            bound += terms[split][0]
            split += 1
        docs, totals = self._gather(terms[split:], theta - bound)
        for i in range(split - 1, -1, -1):
            keep = totals + sum(t[0] for t in terms[: i + 1]) >= theta
            docs, totals = docs[keep], totals[keep]
            _, lo, hi, c, _ = terms[i]
            totals += self._lookup(lo, hi, c, docs)
        if theta > 0:
            keep = totals >= theta
            docs, totals = docs[keep], totals[keep]
        return docs, totals

    def _lookup(self, lo: int, hi: int, c: int, docs: Any) -> Any:
        """Each of ``docs``' score for the term whose postings are ``[lo, hi)`` (0 if absent)."""
        plist = self.docs[lo:hi]
        pos = np.minimum(np.searchsorted(plist, docs), hi - lo - 1)
        got = np.where(plist[pos] == docs, self.scores[lo:hi][pos], np.float32(0))
        return got if c == 1 else got * np.float32(c)

    def _theta(self, terms: list[tuple[float, int, int, int, int]], k: int) -> float:
        """A lower bound on the k-th best total (``-inf`` when scores can be negative)."""
        if self._negative:
            return -np.inf  # negative idf: a total can be below one term's score
        theta, f32, best = 0.0, np.float32, None
        table = self.kth10 if k <= 10 else self.kth100 if k <= 100 else None
        for _, lo, hi, c, tid in terms:
            n = hi - lo
            if n < k:
                continue
            if table is not None and n >= LONG:
                kth = float(table[tid] * f32(c))
            elif n < LONG:
                kth = float(np.partition(self.scores[lo:hi], n - k)[n - k] * f32(c))
            else:
                continue
            if kth > theta:
                theta, best = kth, (lo, hi, c, kth)
        if len(terms) > 1:  # full totals of the rare terms' docs and the best term's top docs
            seeds = [self.docs[lo:hi] for _, lo, hi, _, _ in terms if hi - lo < k]
            if best is not None:
                lo, hi, c, kth = best
                scores = self.scores[lo:hi] if c == 1 else self.scores[lo:hi] * f32(c)
                seeds.append(self.docs[lo:hi][scores >= kth])
            docs = np.unique(np.concatenate(seeds)) if seeds else np.zeros(0, np.int32)
            if len(docs) >= k:
                totals = np.zeros(len(docs), dtype=np.float64)
                for _, lo2, hi2, c2, _ in terms:
                    totals += self._lookup(lo2, hi2, c2, docs)
                theta = max(theta, float(np.partition(totals, len(totals) - k)[len(totals) - k]))
        return theta

    def _gather(self, terms: list[tuple[float, int, int, int, int]], floor: float) -> Any:
        """Union of the terms' postings whose summed score reaches ``floor``: docs, totals."""
        parts = [(self.docs[lo:hi], self.scores[lo:hi] if c == 1 else
                  self.scores[lo:hi] * np.float32(c)) for _, lo, hi, c, _ in terms]
        if len(parts) == 1:
            docs, scores = parts[0]
            if floor > 0:
                keep = scores >= floor
                docs, scores = docs[keep], scores[keep]
            return docs, scores.astype(np.float64)
        every = np.concatenate([d for d, _ in parts])
        if len(every) <= 2048:
            unique, inverse = np.unique(every, return_inverse=True)
            scores = np.concatenate([s for _, s in parts], dtype=np.float64)
            return unique, np.bincount(inverse, weights=scores)
        acc = self._scratch()
        for d, sc in parts:
            acc[d] += sc
        totals = acc[every]
        acc[every] = 0.0
        keep = totals >= floor
        docs, inverse = np.unique(every[keep], return_index=True)
        return docs, totals[keep][inverse]

    def _scratch(self) -> npt.NDArray[np.float64]:
        """A zeroed per-thread accumulator over all documents (callers re-zero it)."""
        acc: npt.NDArray[np.float64] | None = getattr(self._local, "acc", None)
        if acc is None:
            acc = self._local.acc = np.zeros(self.n_docs, dtype=np.float64)
        return acc


def _top_k(docs: npt.NDArray[Any], scores: npt.NDArray[Any], k: int) -> IntArray:
    """Positions of the ``k`` best scores; ties go to the lower doc id."""
    if len(scores) > k:
        part = np.argpartition(scores, len(scores) - k)[len(scores) - k :]
        cand = np.flatnonzero(scores >= scores[part].min())
    else:
        cand = np.arange(len(scores))
    order = np.lexsort((docs[cand], -scores[cand]))[:k]
    return np.asarray(cand[order], dtype=np.int64)
