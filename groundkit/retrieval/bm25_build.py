"""Building a BM25 index: texts (or term lists) in, term-major postings and scores out."""

from __future__ import annotations

import zlib
from array import array
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from ..analysis import Analyzer
from . import scoring
from .bm25_params import BM25Params

IntArray = npt.NDArray[np.int64]
F32Array = npt.NDArray[np.float32]
LONG = 1024
"""Posting lists at least this long get their 10th and 100th best scores precomputed."""


class Postings(NamedTuple):
    """A term-major posting layout (terms ordered by :func:`term_hash`)."""

    terms: list[str]
    indptr: IntArray
    docs: npt.NDArray[np.int32]
    tfs: npt.NDArray[Any]
    doc_lengths: IntArray


def term_hash(term: str) -> int:
    """The stable 32-bit key the vocabulary is ordered by (CRC-32 of the UTF-8 bytes)."""
    return zlib.crc32(term.encode("utf-8", "surrogatepass"))


def posting_scores(
    params: BM25Params, tf: npt.NDArray[Any], dl: npt.NDArray[Any],
    df: npt.NDArray[Any], n_docs: int, avgdl: float,
) -> F32Array:
    """Each posting's contribution, from its tf, its document's length and its term's df.

    ``dl`` is the length scoring uses (already byte-quantised under ``lucene_norms``).
    """
    k1, b = params.k1, params.b
    if params.method == "lucene":
        idf = scoring.idf_lucene(df.astype(np.float64), n_docs)
        return scoring.score_lucene_float32(idf, tf, dl, avgdl, k1, b)
    tf64, dl64, df64 = tf.astype(np.float64), dl.astype(np.float64), df.astype(np.float64)
    if params.method == "robertson":
        out = scoring.idf_robertson(df64, n_docs) * scoring.tfc_robertson(tf64, dl64, avgdl, k1, b)
    elif params.method == "atire":
        out = scoring.idf_atire(df64, n_docs) * scoring.tfc_robertson(tf64, dl64, avgdl, k1, b)
    elif params.method == "bm25l":
        tfc = scoring.tfc_bm25l(tf64, dl64, avgdl, k1, b, params.delta)
        out = scoring.idf_bm25l(df64, n_docs) * tfc
    else:
        tfc = scoring.tfc_bm25plus(tf64, dl64, avgdl, k1, b, params.delta)
        out = scoring.idf_bm25plus(df64, n_docs) * tfc
    return out.astype(np.float32)


def score_postings(p: Postings, params: BM25Params) -> tuple[dict[str, Any], bytes, int, float]:
    """The index arrays for ``p`` under ``params``: (arrays, term blob, docCount, avgdl)."""
    indptr, docs, tfs, doc_lengths, terms = p.indptr, p.docs, p.tfs, p.doc_lengths, p.terms
    df = np.diff(indptr)
    nonempty = int(np.count_nonzero(doc_lengths))
    avgdl = float(doc_lengths.sum()) / nonempty if nonempty else 0.0
    per_posting_df = np.repeat(df.astype(np.int32), df)
    dl = scoring.length_lucene_byte(doc_lengths) if params.lucene_norms else doc_lengths
    scores = posting_scores(params, tfs, dl.astype(np.int32)[docs], per_posting_df, nonempty,
                            avgdl)
    del per_posting_df
    encoded = [t.encode("utf-8", "surrogatepass") for t in terms]
    offsets = np.zeros(len(terms) + 1, dtype=np.int64)
    np.cumsum([len(e) for e in encoded], out=offsets[1:])
    tf_type = np.uint16 if len(tfs) == 0 or tfs.max() < 2**16 else np.uint32
    arrays = {
        "indptr": indptr, "docs": docs, "scores": scores, "tfs": tfs.astype(tf_type),
        "doc_lengths": doc_lengths.astype(np.int32),
        "term_hashes": np.array([term_hash(t) for t in terms], dtype=np.uint32),
        "term_offsets": offsets,
    }
    arrays.update(_impact_bounds(indptr, scores))
    return arrays, b"".join(encoded), nonempty, avgdl


def _impact_bounds(indptr: IntArray, scores: F32Array) -> dict[str, F32Array]:
    """Per term: the best score, and the 10th / 100th best for long posting lists."""
    n_terms = len(indptr) - 1
    best = np.zeros(n_terms, dtype=np.float32)
    if len(scores):
        best = np.maximum.reduceat(scores, indptr[:-1]).astype(np.float32)
    kth = {10: np.zeros(n_terms, np.float32), 100: np.zeros(n_terms, np.float32)}
    for tid in np.flatnonzero(np.diff(indptr) >= LONG):
        lo, hi = indptr[tid], indptr[tid + 1]
        top = np.partition(scores[lo:hi], hi - lo - 100)[hi - lo - 100 :]
        kth[100][tid] = top.min()
        kth[10][tid] = np.partition(top, 90)[90]
    return {"max_scores": best, "kth10": kth[10], "kth100": kth[100]}


class Builder:
    """Streams texts (or term lists) into batches of (doc, term, tf) triples."""

    BATCH = 8192

    def __init__(self, analyzer: Analyzer) -> None:
        self.analyzer = analyzer
        self.term_ids: dict[str, int] = {}
        self.lengths: list[IntArray] = []
        self.triples: list[tuple[npt.NDArray[np.int32], ...]] = []
        self.n_docs = 0
        self._ids = array("i")
        self._raw_lens = array("q")
        cache, term_ids = analyzer.new_term_cache(), self.term_ids

        class Surface(dict[str, int]):
            def __missing__(self, token: str) -> int:
                term = cache[token]
                tid = term_ids.setdefault(term, len(term_ids)) if term else -1
                self[token] = tid
                return tid

        class Terms(dict[str, int]):
            def __missing__(self, term: str) -> int:
                tid = term_ids.setdefault(term, len(term_ids)) if term else -1
                self[term] = tid
                return tid

        self.surface_id: Callable[[str], int] = Surface().__getitem__
        self.term_id: Callable[[str], int] = Terms().__getitem__

    def add(self, item: str | Sequence[str]) -> None:
        if isinstance(item, str):
            tokens = self.analyzer.split(item)
            self._ids.extend(map(self.surface_id, tokens))
            self._raw_lens.append(len(tokens))
        else:
            self._ids.extend(map(self.term_id, item))
            self._raw_lens.append(len(item))
        if len(self._raw_lens) >= self.BATCH:
            self._flush()

    def _flush(self) -> None:
        import scipy.sparse as sp

        n = len(self._raw_lens)
        if n == 0:
            return
        ids = np.frombuffer(self._ids, dtype=np.int32) if self._ids else np.zeros(0, np.int32)
        rows = np.repeat(np.arange(n, dtype=np.int32), np.frombuffer(self._raw_lens, np.int64))
        keep = ids >= 0
        ids, rows = ids[keep], rows[keep]
        self.lengths.append(np.bincount(rows, minlength=n).astype(np.int64))
        ones = np.ones(len(ids), dtype=np.int32)
        csr = sp.csr_matrix((ones, (rows, ids)), shape=(n, len(self.term_ids)))
        csr.sum_duplicates()
        doc = np.repeat(np.arange(n, dtype=np.int32) + np.int32(self.n_docs), np.diff(csr.indptr))
        self.triples.append((doc, csr.indices.astype(np.int32), csr.data.astype(np.int32)))
        self.n_docs += n
        self._ids, self._raw_lens = array("i"), array("q")

    def finish(self) -> Postings:
        import scipy.sparse as sp

        self._flush()
        self.surface_id = self.term_id = lambda _: -1  # drop the token caches
        terms = sorted(self.term_ids, key=lambda t: (term_hash(t), t))
        new_id = np.empty(len(terms), dtype=np.int32)
        new_id[[self.term_ids[t] for t in terms]] = np.arange(len(terms), dtype=np.int32)
        self.term_ids.clear()
        doc, col, tf = _concat3(self.triples)
        self.triples.clear()
        dl = np.concatenate(self.lengths) if self.lengths else np.zeros(0, np.int64)
        csc = sp.csc_matrix((tf, (doc, new_id[col])), shape=(self.n_docs, len(terms)))
        del doc, col, tf
        csc.sort_indices()
        return Postings(terms=terms, indptr=csc.indptr.astype(np.int64),
                        docs=csc.indices.astype(np.int32), tfs=csc.data, doc_lengths=dl)


def _concat3(parts: list[tuple[npt.NDArray[np.int32], ...]]) -> tuple[npt.NDArray[Any], ...]:
    if not parts:
        return tuple(np.zeros(0, np.int32) for _ in range(3))
    return tuple(np.concatenate([p[i] for p in parts]) for i in range(3))
