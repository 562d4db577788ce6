"""BM25 over an in-memory or memory-mapped inverted index with precomputed scores.

Eager scoring (as bm25s does): at build time every (term, document) posting gets
its final float32 BM25 contribution, stored term by term (CSC layout: for term
``t``, ``docs[indptr[t]:indptr[t + 1]]`` ascending and ``scores`` alongside), and
each long posting list also gets an impact-ordered prefix (its best postings, best
first). A query reads only its terms' postings: one term's top ``k`` is read off
its prefix; several terms' postings are summed per document and the top ``k``
selected above a proven lower bound (:mod:`.bm25_query`). Results always equal
exhaustive scoring; ranks are deterministic: equal scores go to the lower doc index.

Defaults follow Anserini's BEIR baselines, the published reference this engine
is checked against: ``k1=0.9, b=0.4``, Lucene 9's BM25Similarity including its
one-byte document-length norms (:func:`~groundkit.retrieval.scoring.length_lucene_byte`),
``N`` and ``avgdl`` over documents that have at least one term (Lucene's ``docCount``).
A term repeated in a query counts once per occurrence: Anserini's bag-of-words
query boosts a term by its count, so repeated terms add.

The work is split by concern: :mod:`.bm25_params` (parameters and variants),
:mod:`.bm25_build` (texts to scored postings), :mod:`.bm25_query` (top-k kernels),
:mod:`.bm25_store` (atomic save, memory-mapped load that fails closed on a stamp,
analyzer or array mismatch). This module is the facade the rest of groundkit uses.
"""

from __future__ import annotations

import bisect
import os
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ..errors import GroundkitError, IndexMismatchError, UsageError
from ..text.analysis import DEFAULT_PRESET, Analyzer, check_query
from . import bm25_blocks, bm25_store, scoring
from .bm25_build import (
    Builder,
    Item,
    Postings,
    posting_scores,
    score_postings,
    term_hash,
    vocabulary,
)
from .bm25_params import IDF, METHODS, BM25Params
from .bm25_query import Kernels, compiled_kernel

__all__ = ["METHODS", "BM25Index", "BM25Params", "TermExplanation", "posting_scores",
           "term_hash"]

IntArray = npt.NDArray[np.int64]
F32Array = npt.NDArray[np.float32]
_FILES = ("indptr", "docs", "scores", "tfs", "doc_lengths", "term_hashes", "term_offsets",
          "imp_ptr", "imp_docs", "imp_scores", "imp_next")
_STATS = ("n_docs_nonempty", "avgdl", "negative_scores")
_LATER_STATS = ("score_unit", "block_shift")
"""Stats an index written before they existed lacks (then derived when first needed, or,
for the block maxima, done without: the same answers, more slowly)."""
_TERM_CACHE_SIZE = 65_536


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


class BM25Index:
    """A built (or loaded) BM25 index: search it, explain a score, save it.

    Build with :meth:`build_from_texts` (raw texts through the analyzer) or
    :meth:`build` (texts or already-analysed term lists); open a saved one with
    :meth:`load`. Arrays may be memory-mapped; an index is read-only once built.
    """

    def __init__(
        self, *, analyzer: Analyzer, params: BM25Params, arrays: dict[str, Any],
        terms_blob: bytes | Any, stats: dict[str, Any],
    ) -> None:
        self.analyzer, self.params = analyzer, params
        # plain ndarray views of memory maps: np.memmap slicing costs Python calls
        arrays = {k: v.view(np.ndarray) if isinstance(v, np.memmap) else v
                  for k, v in arrays.items()}
        self._arrays = arrays
        self._stats = {k: stats[k] for k in (*_STATS, *_LATER_STATS) if k in stats}
        self.indptr: IntArray = arrays["indptr"]
        self.docs: npt.NDArray[np.int32] = arrays["docs"]
        self.scores: F32Array = arrays["scores"]
        self.tfs: npt.NDArray[np.unsignedinteger] = arrays["tfs"]
        self.doc_lengths: npt.NDArray[np.int32] = arrays["doc_lengths"]
        self.term_hashes: npt.NDArray[np.uint32] = arrays["term_hashes"]
        self.term_offsets: IntArray = arrays["term_offsets"]
        self.n_docs = len(self.doc_lengths)
        self.n_docs_nonempty: int = int(stats["n_docs_nonempty"])
        self.avgdl: float = float(stats["avgdl"])
        self._blob = terms_blob
        self._hash_view = _view(self.term_hashes, "I")
        self._ptr_view = _view(self.indptr, "q")
        self._docs_view = _view(self.docs, {4: "i", 8: "q"}[self.docs.dtype.itemsize])
        self._off_view = _view(self.term_offsets, "q")
        self._term_ids: dict[str, int] = {}
        self._compiled = compiled_kernel()
        self._kernels = Kernels(arrays, negative=bool(stats["negative_scores"]),
                                unit=stats.get("score_unit"), shift=stats.get("block_shift"))

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
        cls, corpus: Iterable[Item], analyzer: Analyzer | None = None,
        params: BM25Params | None = None,
    ) -> BM25Index:
        """Index texts, or term lists or bags (:class:`~.bm25_build.Bag`) already produced
        by ``analyzer`` (used as-is)."""
        analyzer = analyzer or Analyzer.preset(DEFAULT_PRESET)
        builder = Builder(analyzer)
        for item in corpus:
            builder.add(item)
        return cls._scored(builder.finish(), analyzer, params or BM25Params())

    @classmethod
    def from_postings(
        cls, *, terms: Sequence[str], indptr: IntArray, docs: npt.NDArray[np.int32],
        tfs: npt.NDArray[Any], doc_lengths: IntArray, analyzer: Analyzer, params: BM25Params,
    ) -> BM25Index:
        """Score a term-major posting layout (terms ordered by :func:`term_hash`)."""
        order, vocab = vocabulary([t.encode("utf-8", "surrogatepass") for t in terms])
        if not np.array_equal(order, np.arange(len(terms))):
            raise UsageError("from_postings needs the terms in term_hash order")
        return cls._scored(Postings(vocab, indptr, docs, tfs, doc_lengths), analyzer, params)

    @classmethod
    def _scored(cls, postings: Postings, analyzer: Analyzer, params: BM25Params) -> BM25Index:
        arrays, stats = score_postings(postings, params)
        return cls(analyzer=analyzer, params=params, arrays=arrays,
                   terms_blob=postings.vocabulary.blob, stats=stats)

    # -- vocabulary -------------------------------------------------------------------

    @property
    def n_terms(self) -> int:
        return len(self.term_hashes)

    def term(self, term_id: int) -> str:
        off = self._off_view
        return bytes(self._blob[off[term_id] : off[term_id + 1]]).decode("utf-8", "surrogatepass")

    def term_id(self, term: str) -> int:
        """The id of an index term, or -1 when the collection never contains it."""
        tid = self._term_ids.get(term)
        if tid is None:
            if len(self._term_ids) >= _TERM_CACHE_SIZE:
                self._term_ids.clear()
            tid = self._term_ids[term] = self._find_term(term)
        return tid

    def _find_term(self, term: str) -> int:
        encoded = term.encode("utf-8", "surrogatepass")
        h, hashes, off = zlib.crc32(encoded), self._hash_view, self._off_view
        if self._compiled is not None:  # the same search in C: 0.6 us a term, not 1.8
            found: int = self._compiled.find_term(hashes, off, self._blob, encoded, h)
            return found
        lo = bisect.bisect_left(hashes, h)  # on a memoryview: no numpy call overhead
        while lo < len(hashes) and hashes[lo] == h:
            if self._blob[off[lo] : off[lo + 1]] == encoded:
                return lo
            lo += 1
        return -1

    def document_frequency(self, term_id: int) -> int:
        """How many documents hold the term (0 for an unknown id, -1)."""
        return 0 if term_id < 0 else self._ptr_view[term_id + 1] - self._ptr_view[term_id]

    def idf(self, term_id: int) -> float:
        """The term's idf under this index's method; an unknown term (-1) counts as the
        rarest a term can be here (in one document)."""
        df = max(1, self.document_frequency(term_id))
        return float(IDF[self.params.method](float(df), self.n_docs_nonempty))

    def contains(self, term_id: int, doc_index: int) -> bool:
        """Whether document ``doc_index`` holds the term."""
        return self.holds([term_id], [doc_index])[0][0]

    def holds(self, term_ids: Sequence[int], doc_indexes: Sequence[int]
              ) -> list[list[bool]]:
        """For each document, which of the terms it holds (a bisection of each posting list)."""
        docs, ptr = self._docs_view, self._ptr_view
        rows = []
        for doc in doc_indexes:
            row = []
            for term_id in term_ids:
                if term_id < 0:
                    row.append(False)
                    continue
                hi = ptr[term_id + 1]
                at = bisect.bisect_left(docs, doc, ptr[term_id], hi)
                row.append(at < hi and docs[at] == doc)
            rows.append(row)
        return rows

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
        hits = self._kernels.top_k(weights, top_k)
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
                idf=float(IDF[self.params.method](float(df), self.n_docs_nonempty)),
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
        meta = {
            "stamp": stamp, "analyzer": self.analyzer.to_dict(),
            "analyzer_identity": self.analyzer.identity, "params": self.params.to_dict(),
            "n_docs": self.n_docs, "n_terms": self.n_terms, "n_postings": len(self.docs),
            **self._stats,
        }
        arrays = {name: self._arrays[name]
                  for name in (*_FILES, *bm25_blocks.FILES, *bm25_blocks.COLUMN_FILES)
                  if name in self._arrays}
        return bm25_store.save_index(Path(directory), arrays, bytes(self._blob), meta)

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
        meta = bm25_store.read_meta(root)
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
        files = meta.get("files")
        names = list(_FILES)
        for group in (bm25_blocks.FILES, bm25_blocks.COLUMN_FILES):  # later: optional
            if isinstance(files, dict) and any(n in files for n in group):
                names += group
        arrays, blob = bm25_store.open_arrays(root, meta, names)
        _check_shapes(root, meta, arrays, len(blob))
        return cls(analyzer=built_with, params=params, arrays=arrays, terms_blob=blob,
                   stats=meta)


def _view(arr: npt.NDArray[Any], fmt: str) -> Any:
    """A flat memoryview whose items index as Python ints (no numpy scalar per lookup)."""
    buffer: Any = np.ascontiguousarray(arr)
    return memoryview(buffer).cast("B").cast(fmt)  # type: ignore[call-overload]


def _check_shapes(root: Path, meta: dict[str, Any], a: dict[str, Any], blob_len: int) -> None:
    n_terms, nnz, n_docs = meta["n_terms"], meta["n_postings"], meta["n_docs"]
    problems = [
        len(a["indptr"]) != n_terms + 1, len(a["term_hashes"]) != n_terms,
        len(a["term_offsets"]) != n_terms + 1, len(a["docs"]) != nnz,
        len(a["scores"]) != nnz, len(a["tfs"]) != nnz, len(a["doc_lengths"]) != n_docs,
        int(a["indptr"][0]) != 0 or int(a["indptr"][-1]) != nnz,
        int(a["term_offsets"][-1]) != blob_len, len(a["imp_ptr"]) != n_terms + 1,
        len(a["imp_next"]) != n_terms, len(a["imp_docs"]) != len(a["imp_scores"]),
        int(a["imp_ptr"][-1]) != len(a["imp_docs"]),
        any(not isinstance(meta.get(k), int | float) for k in _STATS),
        any(not isinstance(meta[k], int | float) for k in _LATER_STATS if k in meta),
        "block_quanta" in a and not bm25_blocks.valid(a, n_terms, n_docs,
                                                      meta.get("block_shift", -1)),
        "column_scores" in a and ("block_quanta" not in a or not bm25_blocks.columns_valid(
            a, a["indptr"], n_docs, meta.get("block_shift", -1))),
    ]
    if any(problems):
        raise bm25_store.damaged(root, "array shapes disagree with meta.json")
