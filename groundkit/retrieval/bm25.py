"""BM25 over an in-memory or memory-mapped inverted index with precomputed scores.

Eager scoring (as bm25s does): at build time every (term, document) posting gets
its final float32 BM25 contribution, stored term by term (CSC layout: for term
``t``, ``docs[indptr[t]:indptr[t + 1]]`` ascending and ``scores`` alongside).
A query gathers only its terms' postings, sums per document, and selects the
top ``k`` among the documents it touched; no array the size of the collection is
scanned. Ranks are deterministic: equal scores are ordered by lower doc index.

Defaults follow Anserini's BEIR baselines, the published reference this engine
is checked against: ``k1=0.9, b=0.4``, Lucene 9's BM25Similarity including its
one-byte document-length norms (:func:`~groundkit.retrieval.scoring.length_lucene_byte`),
``N`` and ``avgdl`` over documents that have at least one term (Lucene's ``docCount``).
A term repeated in a query counts once per occurrence: Anserini's bag-of-words
query boosts a term by its count, so repeated terms add.

Persistence: ``save`` writes ``.npy`` arrays and ``meta.json`` into a temporary
directory and renames it into place; ``load`` memory-maps the arrays and refuses
(``IndexMismatchError``) an index whose stamp, analyzer or arrays disagree.
"""

from __future__ import annotations

import functools
import json
import mmap
import os
import shutil
import tempfile
import threading
import zlib
from array import array
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ..analysis import DEFAULT_PRESET, Analyzer, check_query
from ..errors import GroundkitError, IndexMismatchError, UsageError
from . import scoring

IntArray = npt.NDArray[np.int64]
F32Array = npt.NDArray[np.float32]

METHODS: dict[str, str] = {
    "lucene": "Lucene >= 8 BM25Similarity: idf_lucene * tfc_lucene, float32 as Lucene",
    "robertson": "classic BM25: idf_robertson * tfc_robertson (idf may be negative)",
    "atire": "ATIRE: idf_atire * tfc_robertson",
    "bm25l": "BM25L (Lv & Zhai 2011): idf_bm25l * tfc_bm25l",
    "bm25+": "BM25+ (Lv & Zhai 2011): idf_bm25plus * tfc_bm25plus",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class BM25Params:
    """Scoring parameters. Defaults: Anserini's BEIR ``bm25-flat`` (k1=0.9, b=0.4, Lucene).

    ``lucene_norms`` stores each document length in Lucene's one byte (exact up
    to 23 terms, then three significant bits); turn it off for textbook BM25.
    ``delta`` is used by ``bm25l`` and ``bm25+`` only.
    """

    k1: float = 0.9
    b: float = 0.4
    method: str = "lucene"
    delta: float = 0.5
    lucene_norms: bool = True

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise UsageError(
                f"unknown BM25 method {self.method!r}; valid choices: {', '.join(METHODS)}"
            )
        if not (self.k1 >= 0 and 0 <= self.b <= 1 and self.delta >= 0):
            raise UsageError(
                f"BM25 needs k1 >= 0, 0 <= b <= 1, delta >= 0; got k1={self.k1}, "
                f"b={self.b}, delta={self.delta}"
            )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BM25Params:
        return cls(**data)


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


_IDF: dict[str, Callable[[float, float], float]] = {
    "lucene": scoring.idf_lucene, "robertson": scoring.idf_robertson, "atire": scoring.idf_atire,
    "bm25l": scoring.idf_bm25l, "bm25+": scoring.idf_bm25plus,
}


def term_hash(term: str) -> int:
    """The stable 32-bit key the vocabulary is ordered by (CRC-32 of the UTF-8 bytes)."""
    return zlib.crc32(term.encode("utf-8", "surrogatepass"))


class _Builder:
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

    def finish(self, params: BM25Params) -> BM25Index:
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
        return BM25Index.from_postings(
            terms=terms, indptr=csc.indptr.astype(np.int64), docs=csc.indices.astype(np.int32),
            tfs=csc.data, doc_lengths=dl, analyzer=self.analyzer, params=params,
        )


def _concat3(parts: list[tuple[npt.NDArray[np.int32], ...]]) -> tuple[npt.NDArray[Any], ...]:
    if not parts:
        return tuple(np.zeros(0, np.int32) for _ in range(3))
    return tuple(np.concatenate([p[i] for p in parts]) for i in range(3))


@dataclass(frozen=True, slots=True, kw_only=True)
class TermExplanation:
    """One query term's share of a document's score."""

    term: str
    query_count: int
    df: int
    idf: float
    tf: int
    doc_length: int
    norm_length: int
    score: float


_FILES = ("indptr", "docs", "scores", "tfs", "doc_lengths", "term_hashes", "term_offsets",
          "max_scores", "kth10", "kth100")
_LONG = 1024
"""Posting lists at least this long get their 10th and 100th best scores precomputed."""
FORMAT = "groundkit-bm25/1"


class BM25Index:
    """A built (or loaded) BM25 index: search it, explain a score, save it.

    Build with :meth:`build_from_texts` (raw texts through the analyzer) or
    :meth:`build` (texts or already-analysed term lists); open a saved one with
    :meth:`load`. Arrays may be memory-mapped; an index is read-only once built.
    """

    def __init__(
        self, *, analyzer: Analyzer, params: BM25Params, arrays: dict[str, Any],
        terms_blob: bytes | Any, n_docs_nonempty: int, avgdl: float,
    ) -> None:
        self.analyzer, self.params = analyzer, params
        # plain ndarray views of memory maps: np.memmap slicing costs Python calls
        arrays = {k: v.view(np.ndarray) if isinstance(v, np.memmap) else v
                  for k, v in arrays.items()}
        self.indptr: IntArray = arrays["indptr"]
        self.docs: npt.NDArray[np.int32] = arrays["docs"]
        self.scores: F32Array = arrays["scores"]
        self.tfs: npt.NDArray[np.unsignedinteger] = arrays["tfs"]
        self.doc_lengths: npt.NDArray[np.int32] = arrays["doc_lengths"]
        self.term_hashes: npt.NDArray[np.uint32] = arrays["term_hashes"]
        self.term_offsets: IntArray = arrays["term_offsets"]
        self.n_docs = len(self.doc_lengths)
        self.n_docs_nonempty, self.avgdl = n_docs_nonempty, avgdl
        self._blob = terms_blob
        self._hash_view = _view(self.term_hashes, "I")
        self._ptr_view = _view(self.indptr, "q")
        self._off_view = _view(self.term_offsets, "q")
        self._local = threading.local()
        self.max_scores: F32Array = arrays["max_scores"]
        self.kth10: F32Array = arrays["kth10"]
        self.kth100: F32Array = arrays["kth100"]

    # -- building ---------------------------------------------------------------------

    @classmethod
    def build_from_texts(
        cls, texts: Iterable[str], analyzer: Analyzer | None = None,
        params: BM25Params | None = None,
    ) -> BM25Index:
        """Index raw texts (document ``i`` is the ``i``-th text) through ``analyzer``."""
        return cls.build(texts, analyzer, params)

    @classmethod
    def build(
        cls, corpus: Iterable[str | Sequence[str]], analyzer: Analyzer | None = None,
        params: BM25Params | None = None,
    ) -> BM25Index:
        """Index texts, or term lists already produced by ``analyzer`` (used as-is)."""
        builder = _Builder(analyzer or Analyzer.preset(DEFAULT_PRESET))
        for item in corpus:
            builder.add(item)
        return builder.finish(params or BM25Params())

    @classmethod
    def from_postings(
        cls, *, terms: Sequence[str], indptr: IntArray, docs: npt.NDArray[np.int32],
        tfs: npt.NDArray[Any], doc_lengths: IntArray, analyzer: Analyzer, params: BM25Params,
    ) -> BM25Index:
        """Score a term-major posting layout (terms ordered by :func:`term_hash`)."""
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
        return cls(analyzer=analyzer, params=params, arrays=arrays,
                   terms_blob=b"".join(encoded), n_docs_nonempty=nonempty, avgdl=avgdl)

    # -- vocabulary -------------------------------------------------------------------

    @property
    def n_terms(self) -> int:
        return len(self.term_hashes)

    def term(self, term_id: int) -> str:
        off = self._off_view
        return bytes(self._blob[off[term_id] : off[term_id + 1]]).decode("utf-8", "surrogatepass")

    def term_id(self, term: str) -> int:
        """The id of an index term, or -1 when the collection never contains it."""
        encoded = term.encode("utf-8", "surrogatepass")
        h, hashes, off = zlib.crc32(encoded), self._hash_view, self._off_view
        lo, hi = 0, len(hashes)
        while lo < hi:  # bisect on a memoryview: no numpy call overhead
            mid = (lo + hi) >> 1
            if hashes[mid] < h:
                lo = mid + 1
            else:
                hi = mid
        while lo < len(hashes) and hashes[lo] == h:
            if self._blob[off[lo] : off[lo + 1]] == encoded:
                return lo
            lo += 1
        return -1

    # -- searching --------------------------------------------------------------------

    def search(
        self, query: str, top_k: int = 10, *, score_threshold: float | None = None
    ) -> list[tuple[int, float]]:
        """The ``top_k`` best ``(doc index, score)`` pairs for a raw query, best first.

        Returns ``[]`` (abstains) when no query term occurs in the collection.
        ``score_threshold`` drops hits scoring below it (``score >= threshold``
        is kept). BM25 scores are not comparable across queries or collections,
        so a threshold is a per-collection calibration, never a relevance
        probability. ``UsageError`` for ``top_k < 1`` or a query over
        ``MAX_QUERY_CHARS``.
        """
        return self.search_terms(
            self.analyzer.analyze(check_query(query)), top_k, score_threshold=score_threshold
        )

    def search_terms(
        self, terms: Sequence[str], top_k: int = 10, *, score_threshold: float | None = None
    ) -> list[tuple[int, float]]:
        """As :meth:`search` for already-analysed query terms."""
        if not isinstance(top_k, int) or top_k < 1:
            raise UsageError(f"top_k must be a positive integer, got {top_k!r}")
        weights = self._query_weights(terms)
        if not weights:
            return []
        docs, totals = self._candidates(weights, top_k)
        best = _top_k(docs, totals, top_k)
        hits = [(int(d), float(s)) for d, s in zip(docs[best], totals[best], strict=True)]
        if score_threshold is not None:
            hits = [h for h in hits if h[1] >= score_threshold]
        return hits

    def _query_weights(self, terms: Sequence[str]) -> dict[int, int]:
        """term id -> occurrences in the query, for the terms the collection has."""
        weights: dict[int, int] = {}
        for term in terms:
            tid = self.term_id(term)
            if tid >= 0:
                weights[tid] = weights.get(tid, 0) + 1
        return weights

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
        if self.params.method == "robertson":
            return -np.inf  # negative idf: a total can be below one term's score
        theta, f32, best = 0.0, np.float32, None
        table = self.kth10 if k <= 10 else self.kth100 if k <= 100 else None
        for _, lo, hi, c, tid in terms:
            n = hi - lo
            if n < k:
                continue
            if table is not None and n >= _LONG:
                kth = float(table[tid] * f32(c))
            elif n < _LONG:
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

    def explain(self, query: str, doc_index: int) -> list[TermExplanation]:
        """Each known query term's contribution to ``doc_index``'s score, in query order.

        The contributions sum to the document's score for ``query`` (terms the
        document lacks contribute 0 and are listed with ``tf=0``).
        """
        if not 0 <= doc_index < self.n_docs:
            raise UsageError(f"doc_index {doc_index} is outside 0..{self.n_docs - 1}")
        dl = int(self.doc_lengths[doc_index])
        norm = scoring.length_lucene_byte([dl])[0] if self.params.lucene_norms else dl
        out = []
        for tid, count in self._query_weights(self.analyzer.analyze(check_query(query))).items():
            lo, hi = self._ptr_view[tid], self._ptr_view[tid + 1]
            pos = lo + int(np.searchsorted(self.docs[lo:hi], doc_index))
            found = pos < hi and int(self.docs[pos]) == doc_index
            df = hi - lo
            out.append(TermExplanation(
                term=self.term(tid), query_count=count, df=df,
                idf=float(_IDF[self.params.method](float(df), self.n_docs_nonempty)),
                tf=int(self.tfs[pos]) if found else 0, doc_length=dl, norm_length=int(norm),
                score=float(self.scores[pos]) * count if found else 0.0,
            ))
        return out


    # -- persistence ------------------------------------------------------------------

    def save(self, directory: str | os.PathLike[str], stamp: dict[str, Any]) -> Path:
        """Write the index to ``directory`` atomically, recording ``stamp``.

        Files go to a sibling temporary directory, are fsynced, and the directory is
        renamed into place; an existing index there is replaced (moved aside, then
        removed), so a reader sees the old or the new index, never half of one.
        """
        target = Path(directory)
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
        try:
            files: dict[str, Any] = {}
            for name in _FILES:
                arr = np.ascontiguousarray(getattr(self, name))
                _write_file(tmp / f"{name}.npy", functools.partial(_save_npy, arr))
                files[name] = {"dtype": arr.dtype.str, "shape": list(arr.shape),
                               "bytes": (tmp / f"{name}.npy").stat().st_size}
            blob = bytes(self._blob)
            _write_file(tmp / "terms.bin", lambda f: f.write(blob))
            files["terms"] = {"bytes": len(blob)}
            meta = {
                "format": FORMAT, "stamp": stamp, "analyzer": self.analyzer.to_dict(),
                "analyzer_identity": self.analyzer.identity, "params": self.params.to_dict(),
                "n_docs": self.n_docs, "n_docs_nonempty": self.n_docs_nonempty,
                "avgdl": self.avgdl, "n_terms": self.n_terms, "n_postings": len(self.docs),
                "files": files,
            }
            text = json.dumps(meta, indent=1, sort_keys=True)
            _write_file(tmp / "meta.json", lambda f: f.write(text.encode()))
            _replace_dir(tmp, target)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        return target

    @classmethod
    def load(
        cls, directory: str | os.PathLike[str], expected_stamp: dict[str, Any], *,
        analyzer: Analyzer | None = None,
    ) -> BM25Index:
        """Open a saved index with its arrays memory-mapped (read-only).

        ``IndexMismatchError`` when files are missing or damaged, or the stamp (or
        ``analyzer``, when given) differs from what the index was built with.
        """
        root = Path(directory)
        meta = _read_meta(root)
        if meta.get("stamp") != expected_stamp:
            raise IndexMismatchError(
                f"BM25 index at {root} was built for {meta.get('stamp')!r}, not "
                f"{expected_stamp!r}; rebuild the index"
            )
        try:
            built_with = Analyzer.from_dict(meta["analyzer"])
            params = BM25Params.from_dict(meta["params"])
        except (GroundkitError, TypeError, KeyError) as exc:
            raise IndexMismatchError(f"BM25 index at {root}: unreadable settings ({exc})") from exc
        if built_with.identity != meta.get("analyzer_identity"):
            raise IndexMismatchError(
                f"BM25 index at {root} was built with analyzer {meta.get('analyzer_identity')!r}"
                f"; this version analyzes as {built_with.identity!r}; rebuild the index"
            )
        if analyzer is not None and analyzer.identity != built_with.identity:
            raise IndexMismatchError(
                f"BM25 index at {root} uses analyzer {built_with.identity!r}, "
                f"not {analyzer.identity!r}; rebuild it or query with its analyzer"
            )
        arrays = {name: _open_array(root, name, meta["files"].get(name)) for name in _FILES}
        blob = _open_blob(root / "terms.bin", meta["files"].get("terms", {}).get("bytes"))
        _check_shapes(root, meta, arrays, len(blob))
        return cls(analyzer=built_with, params=params, arrays=arrays, terms_blob=blob,
                   n_docs_nonempty=int(meta["n_docs_nonempty"]), avgdl=float(meta["avgdl"]))


def _impact_bounds(indptr: IntArray, scores: F32Array) -> dict[str, F32Array]:
    """Per term: the best score, and the 10th / 100th best for long posting lists."""
    n_terms = len(indptr) - 1
    best = np.zeros(n_terms, dtype=np.float32)
    if len(scores):
        best = np.maximum.reduceat(scores, indptr[:-1]).astype(np.float32)
    kth = {10: np.zeros(n_terms, np.float32), 100: np.zeros(n_terms, np.float32)}
    for tid in np.flatnonzero(np.diff(indptr) >= _LONG):
        lo, hi = indptr[tid], indptr[tid + 1]
        top = np.partition(scores[lo:hi], hi - lo - 100)[hi - lo - 100 :]
        kth[100][tid] = top.min()
        kth[10][tid] = np.partition(top, 90)[90]
    return {"max_scores": best, "kth10": kth[10], "kth100": kth[100]}


def _top_k(docs: npt.NDArray[Any], scores: npt.NDArray[Any], k: int) -> IntArray:
    """Positions of the ``k`` best scores; ties go to the lower doc id."""
    if len(scores) > k:
        part = np.argpartition(scores, len(scores) - k)[len(scores) - k :]
        cand = np.flatnonzero(scores >= scores[part].min())
    else:
        cand = np.arange(len(scores))
    order = np.lexsort((docs[cand], -scores[cand]))[:k]
    return np.asarray(cand[order], dtype=np.int64)


def _view(arr: npt.NDArray[Any], fmt: str) -> Any:
    """A flat memoryview whose items index as Python ints (no numpy scalar per lookup)."""
    buffer: Any = np.ascontiguousarray(arr)
    return memoryview(buffer).cast("B").cast(fmt)  # type: ignore[call-overload]


def _save_npy(arr: npt.NDArray[Any], f: Any) -> None:
    np.save(f, arr)


def _write_file(path: Path, write: Callable[[Any], Any]) -> None:
    with open(path, "wb") as f:
        write(f)
        f.flush()
        os.fsync(f.fileno())


def _replace_dir(tmp: Path, target: Path) -> None:
    old = None
    if target.exists():
        old = target.with_name(f".{target.name}.old-{os.getpid()}-{id(tmp)}")
        os.replace(target, old)
    os.replace(tmp, target)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def _damaged(root: Path, what: str) -> IndexMismatchError:
    return IndexMismatchError(f"BM25 index at {root} is damaged ({what}); rebuild the index")


def _read_meta(root: Path) -> dict[str, Any]:
    try:
        meta = json.loads((root / "meta.json").read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise IndexMismatchError(f"no BM25 index at {root} (meta.json missing)") from exc
    except (OSError, ValueError) as exc:
        raise _damaged(root, f"meta.json unreadable: {exc}") from exc
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise _damaged(root, f"meta.json is not {FORMAT}")
    return meta


def _open_array(root: Path, name: str, spec: dict[str, Any] | None) -> npt.NDArray[Any]:
    path = root / f"{name}.npy"
    try:
        if spec is None or path.stat().st_size != spec["bytes"]:
            raise _damaged(root, f"{path.name} is missing from meta.json or has the wrong size")
        empty = 0 in spec["shape"]
        arr: npt.NDArray[Any] = np.load(path, mmap_mode=None if empty else "r",
                                        allow_pickle=False)
    except OSError as exc:
        raise _damaged(root, f"{path.name}: {exc}") from exc
    except ValueError as exc:
        raise _damaged(root, f"{path.name}: {exc}") from exc
    if arr.dtype.str != spec["dtype"] or list(arr.shape) != spec["shape"]:
        raise _damaged(root, f"{path.name} holds {arr.dtype.str}{list(arr.shape)}, "
                             f"expected {spec['dtype']}{spec['shape']}")
    return arr


def _open_blob(path: Path, size: int | None) -> bytes | mmap.mmap:
    try:
        if path.stat().st_size != size:
            raise _damaged(path.parent, f"{path.name} has the wrong size")
        if size == 0:
            return b""
        with open(path, "rb") as f:
            return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    except OSError as exc:
        raise _damaged(path.parent, f"{path.name}: {exc}") from exc


def _check_shapes(root: Path, meta: dict[str, Any], a: dict[str, Any], blob_len: int) -> None:
    n_terms, nnz, n_docs = meta["n_terms"], meta["n_postings"], meta["n_docs"]
    problems = [
        len(a["indptr"]) != n_terms + 1, len(a["term_hashes"]) != n_terms,
        len(a["term_offsets"]) != n_terms + 1, len(a["docs"]) != nnz,
        len(a["scores"]) != nnz, len(a["tfs"]) != nnz, len(a["doc_lengths"]) != n_docs,
        int(a["indptr"][0]) != 0 or int(a["indptr"][-1]) != nnz,
        int(a["term_offsets"][-1]) != blob_len,
    ]
    if any(problems):
        raise _damaged(root, "array shapes disagree with meta.json")
