"""Building a BM25 index: texts (or term lists) in, term-major postings and scores out.

It holds one batch of the corpus, every batch's postings (:class:`Part`), then the final
arrays and :data:`SCORE_SLICE`-long temporaries: at 10^6 passages, the corpus streamed,
a peak RSS 1.19x the index's size on disk (issue 31, ``bench/bench_scale.py``)."""

from __future__ import annotations

import mmap
import zlib
from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from ..text.analysis import Analyzer
from . import bm25_blocks, scoring
from .bm25_params import BM25Params
from .bm25_query import impact_prefixes, score_unit
from .bm25_tokens import ChunkTerms, TermBags, batch_term_ids

IntArray = npt.NDArray[np.int64]
I32Array = npt.NDArray[np.int32]
F32Array = npt.NDArray[np.float32]


class Vocabulary(NamedTuple):
    """Terms in index order: UTF-8 ``blob``, ``offsets`` into it, sorted CRC-32 ``hashes``."""

    blob: bytes
    offsets: IntArray
    hashes: npt.NDArray[np.uint32]


class Postings(NamedTuple):
    """A term-major posting layout (terms ordered by :func:`term_hash`)."""

    vocabulary: Vocabulary
    indptr: IntArray
    docs: npt.NDArray[np.int32]
    tfs: npt.NDArray[Any]
    doc_lengths: IntArray


def vocabulary(encoded: Sequence[bytes]) -> tuple[IntArray, Vocabulary]:
    """(order, vocabulary): ``encoded[order[i]]`` is term ``i`` of the index.

    Terms are ordered by :func:`term_hash`, then by the term itself.
    """
    hashes = np.fromiter(map(zlib.crc32, encoded), dtype=np.uint32, count=len(encoded))
    order = np.argsort(hashes, kind="stable")
    sorted_hashes = hashes[order]
    for at in np.flatnonzero(sorted_hashes[1:] == sorted_hashes[:-1]):
        end = at + 2
        while end < len(order) and sorted_hashes[end] == sorted_hashes[at]:
            end += 1
        order[at:end] = sorted(order[at:end].tolist(),
                               key=lambda i: encoded[i].decode("utf-8", "surrogatepass"))
    lengths = np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded))
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum(lengths[order], out=offsets[1:])
    blob = b"".join(map(encoded.__getitem__, order.tolist()))
    return order, Vocabulary(blob, offsets, hashes[order])


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


SCORE_SLICE = 1 << 18
"""Postings scored at a time: the float temporaries of :func:`score_postings` are this
long (1-2 MB: they fit the cache, and malloc serves them from memory it already
holds), never as long as the index (10^8 postings at 10^6 passages)."""


def term_slices(indptr: IntArray, size: int) -> Iterator[tuple[int, int]]:
    """Consecutive term ranges ``[lo, hi)`` of at most ``size`` postings each (a longer
    posting list makes a range of its own), covering every term in order."""
    n_terms = len(indptr) - 1
    lo = 0
    while lo < n_terms:
        hi = int(np.searchsorted(indptr, indptr[lo] + size, side="right")) - 1
        hi = min(max(hi, lo + 1), n_terms)
        yield lo, hi
        lo = hi


def lucene_scores(
    df: IntArray, dl: npt.NDArray[Any], docs: I32Array, tfs: npt.NDArray[Any], n_docs: int,
    avgdl: float, k1: float, b: float,
) -> F32Array:
    """:func:`~.scoring.score_lucene_float32` for every posting, a slice of terms at a time:
    the same float32 operations on the same operands (``normInverse`` per document, the
    float32 weight per term), element by element, so the same bits."""
    scores = np.empty(len(docs), dtype=np.float32)
    if len(docs) == 0:  # no postings (and avgdl 0): nothing to score
        return scores
    weight = np.asarray(scoring.idf_lucene(df.astype(np.float64), n_docs), dtype=np.float32)
    norm_inverse = scoring.norm_inverse_lucene(dl.astype(np.int32), avgdl, k1, b)
    indptr = np.concatenate(([0], np.cumsum(df)))
    for lo, hi in term_slices(indptr, SCORE_SLICE):
        start, stop = int(indptr[lo]), int(indptr[hi])
        x = norm_inverse[docs[start:stop]]
        np.multiply(x, tfs[start:stop], out=x, dtype=np.float32)  # tf * normInverse
        x += np.float32(1)
        w = np.repeat(weight[lo:hi], df[lo:hi])
        np.divide(w, x, out=x)  # weight / (1 + tf * normInverse)
        np.subtract(w, x, out=scores[start:stop])
    return scores


def variant_scores(p: Postings, params: BM25Params, dl: npt.NDArray[Any], n_docs: int,
                   avgdl: float) -> F32Array:
    """:func:`posting_scores` of every posting of ``p``, a slice of terms at a time (every
    step is element-wise: the same values, float64 intermediates of a slice only)."""
    indptr, docs, tfs = p.indptr, p.docs, p.tfs
    df = np.diff(indptr)
    df32, dl32 = df.astype(np.int32), dl.astype(np.int32)
    scores = np.empty(len(docs), dtype=np.float32)
    for lo, hi in term_slices(indptr, SCORE_SLICE):
        start, stop = int(indptr[lo]), int(indptr[hi])
        scores[start:stop] = posting_scores(params, tfs[start:stop], dl32[docs[start:stop]],
                                            np.repeat(df32[lo:hi], df[lo:hi]), n_docs, avgdl)
    return scores


def score_postings(p: Postings, params: BM25Params, *, blocks: bool = True,
                   ) -> tuple[dict[str, Any], dict[str, Any]]:
    """The index arrays for ``p`` under ``params``, and its scalar statistics.

    ``blocks=False`` leaves out the block maxima and score columns (the same answers,
    more slowly): for a small segment that is always scored exhaustively (ADR-0025)."""
    indptr, docs, tfs, doc_lengths = p.indptr, p.docs, p.tfs, p.doc_lengths
    df = np.diff(indptr)
    nonempty = int(np.count_nonzero(doc_lengths))
    avgdl = float(doc_lengths.sum()) / nonempty if nonempty else 0.0
    dl = scoring.length_lucene_byte(doc_lengths) if params.lucene_norms else doc_lengths
    if params.method == "lucene":
        scores = lucene_scores(df, dl, docs, tfs, nonempty, avgdl, params.k1, params.b)
    else:
        scores = variant_scores(p, params, dl, nonempty, avgdl)
    tf_type = np.uint16 if len(tfs) == 0 or tfs.max() < 2**16 else np.uint32
    arrays = {
        "indptr": indptr, "docs": docs, "scores": scores, "tfs": tfs.astype(tf_type, copy=False),
        "doc_lengths": doc_lengths.astype(np.int32), "term_hashes": p.vocabulary.hashes,
        "term_offsets": p.vocabulary.offsets,
    }
    arrays.update(impact_prefixes(indptr, docs, scores))
    negative = bool(len(scores) and scores.min() < 0)
    for derived in (bm25_blocks.block_maxima, bm25_blocks.score_columns) if blocks else ():
        arrays.update(derived(indptr, docs, scores, len(doc_lengths), negative=negative))
    stats = {"n_docs_nonempty": nonempty, "avgdl": avgdl, "negative_scores": negative,
             "score_unit": sliced_score_unit(scores), "block_shift": bm25_blocks.BLOCK_SHIFT}
    return arrays, stats


def sliced_score_unit(scores: F32Array) -> float:
    """:func:`~.bm25_query.score_unit` of ``scores`` without a mask as long as the index:
    that of the slices' smallest positive scores (``inf`` for a slice with none)."""
    smallest = [np.min(part, initial=np.inf, where=part > 0)
                for part in np.split(scores, range(SCORE_SLICE, len(scores), SCORE_SLICE))]
    return score_unit(np.array(smallest, dtype=np.float32))


class Bag:
    """Text ``index``'s terms in ``bags`` (:class:`.bm25_tokens.TermBags`): a document
    already analysed elsewhere (a Ray task), given to :meth:`Builder.add` as it is."""

    __slots__ = ("bags", "index")

    def __init__(self, bags: TermBags, index: int) -> None:
        self.bags, self.index = bags, index

    def __len__(self) -> int:
        ends = self.bags.ends
        return int(ends[self.index] - (ends[self.index - 1] if self.index else 0))


Item = str | Sequence[str] | Bag
"""What a build indexes as one document: a text, its term list, or its :class:`Bag`."""


class Part(NamedTuple):
    """One batch's postings, sorted by term, then doc, in about 5 bytes a posting (the
    final arrays take 10): term ``terms[i]`` (ascending) has the next ``counts[i]``
    postings; ``docs`` count from ``first_doc`` (in two bytes in a batch of at most 65,536
    documents, as :attr:`Builder.BATCH_DOCS` is), ``tfs`` in two bytes unless one needs four."""

    terms: I32Array
    counts: I32Array
    docs: npt.NDArray[Any]
    tfs: npt.NDArray[Any]
    first_doc: int

    @classmethod
    def mapped(cls, terms: I32Array, counts: I32Array, docs: npt.NDArray[Any],
               tfs: npt.NDArray[Any], first_doc: int) -> Part:
        """A part whose arrays are copied into one anonymous memory map of their own.

        Why: a part is a few MB, which malloc serves from its heap, and a heap gives
        freed memory back to the OS only from its top: the parts, freed one by one as
        :func:`_place` places them, would stay resident under the scores allocated
        next (about 1 GB at 10^6 passages). A map is unmapped when its last view goes.
        """
        arrays = (terms, counts, docs, tfs)
        offsets = np.cumsum([0] + [-(-a.nbytes // 8) * 8 for a in arrays]).tolist()
        buf = mmap.mmap(-1, max(offsets[-1], 1))
        views = []
        for a, at in zip(arrays, offsets, strict=False):
            view = np.frombuffer(buf, dtype=a.dtype, count=len(a), offset=at)
            view[...] = a
            views.append(view)
        return cls._make((*views, first_doc))


class Builder:
    """Streams texts (or term lists, or bags) in batches into per-batch postings (:class:`Part`).

    Texts go through :mod:`.bm25_tokens` a batch at a time; each batch's postings are
    counted with one sort of packed (term, doc) keys and kept sorted by term, then
    doc. :meth:`finish` places every batch's postings into the final term-major
    arrays with a counting sort (terms ordered by :func:`term_hash`), no global sort.
    The corpus may be any iterable: nothing but the current batch of it is held.
    """

    BATCH_DOCS = 4096
    BATCH_CHARS = 4_000_000
    KEY_LIMIT = 2**31
    """(term, doc) keys pack into int32 below this, int64 above (a sort twice as fast)."""

    def __init__(self, analyzer: Analyzer) -> None:
        self.analyzer = analyzer
        self.term_ids: dict[str, int] = {}
        self.chunks = ChunkTerms(analyzer, self.term_ids)
        self.parts: list[Part] = []
        self.lengths: list[I32Array] = []
        self.n_docs = 0
        self._pending: list[Item] = []
        self._interned: dict[int, tuple[TermBags, I32Array]] = {}
        self._pending_chars = 0

    def add(self, item: Item) -> None:
        self._pending.append(item)
        self._pending_chars += len(item)
        if len(self._pending) >= self.BATCH_DOCS or self._pending_chars >= self.BATCH_CHARS:
            self._flush()

    def _term_pairs(self, batch: list[Item]) -> tuple[I32Array, I32Array]:
        """(term id, doc within batch) of every kept token of ``batch``."""
        lower = self.analyzer.lowercase
        texts = [item for item in batch if isinstance(item, str)]
        if len(texts) == len(batch):
            return batch_term_ids(texts, self.chunks, lower)
        tids, docs = batch_term_ids(texts, self.chunks, lower)
        where = [i for i, item in enumerate(batch) if isinstance(item, str)]
        docs = np.asarray(where, dtype=np.int32)[docs] if where else docs
        lists = [(i, item) for i, item in enumerate(batch) if not isinstance(item, str | Bag)]
        term_ids = self.term_ids
        flat = [term_ids.setdefault(t, len(term_ids)) if t else -1
                for _, item in lists for t in item]
        list_tids = np.array(flat, dtype=np.int32)
        list_docs = np.repeat(np.array([i for i, _ in lists], dtype=np.int32),
                              [len(item) for _, item in lists])
        keep = list_tids >= 0
        bag_tids, bag_docs = self._bag_pairs(
            [(i, item) for i, item in enumerate(batch) if isinstance(item, Bag)])
        return (np.concatenate([tids, list_tids[keep], bag_tids]),
                np.concatenate([docs, list_docs[keep], bag_docs]))

    def _bag_pairs(self, bags: list[tuple[int, Bag]]) -> tuple[I32Array, I32Array]:
        """:meth:`_term_pairs` of the bags, one gather per :class:`TermBags` they come from."""
        groups: dict[int, list[tuple[int, int]]] = {}
        for doc, bag in bags:
            groups.setdefault(id(bag.bags), []).append((doc, bag.index))
        owners = {id(bag.bags): bag.bags for _, bag in bags}
        tids, docs = [np.zeros(0, np.int32)], [np.zeros(0, np.int32)]
        for key, members in groups.items():
            source, to_global = self._global_ids(owners[key])
            at = np.array(members, dtype=np.int64).reshape(-1, 2)
            stops = source.ends[at[:, 1]]
            starts = np.where(at[:, 1] > 0, source.ends[at[:, 1] - 1], 0)
            counts = stops - starts
            pos = np.repeat(starts - (np.cumsum(counts) - counts), counts)
            pos += np.arange(len(pos))
            tids.append(to_global[source.ids[pos]])
            docs.append(np.repeat(at[:, 0].astype(np.int32), counts))
        return np.concatenate(tids), np.concatenate(docs)

    def _global_ids(self, bags: TermBags) -> tuple[TermBags, I32Array]:
        """``bags`` and its terms' ids in this build (registered on first sight)."""
        known = self._interned.get(id(bags))
        if known is None:
            if len(self._interned) >= 64:  # bags arrive grouped: keep a few, free the rest
                self._interned.clear()
            term_ids = self.term_ids
            ids = np.fromiter((term_ids.setdefault(t, len(term_ids)) for t in bags.terms),
                              dtype=np.int32, count=len(bags.terms))
            known = self._interned[id(bags)] = (bags, ids)
        return known

    def _flush(self) -> None:
        batch, self._pending, self._pending_chars = self._pending, [], 0
        n = len(batch)
        if n == 0:
            return
        tids, docs = self._term_pairs(batch)
        self.lengths.append(np.bincount(docs, minlength=n).astype(np.int32))
        bits = max(n - 1, 1).bit_length()
        wide = (len(self.term_ids) << bits) >= self.KEY_LIMIT
        key: Any = tids.astype(np.int64 if wide else np.int32)
        key <<= bits
        key |= docs
        del tids, docs
        key.sort()
        first = np.empty(len(key), dtype=bool)
        first[:1] = True
        np.not_equal(key[1:], key[:-1], out=first[1:])
        starts = np.flatnonzero(first)
        del first
        tf = np.diff(starts, append=len(key))
        key = key[starts]
        doc = (key & ((1 << bits) - 1)).astype(np.uint16 if n <= 2**16 else np.int32)
        key >>= bits
        runs = np.flatnonzero(np.diff(key, prepend=-1))
        tf_type = np.uint16 if len(tf) == 0 or tf.max() < 2**16 else np.uint32
        self.parts.append(Part.mapped(key[runs].astype(np.int32),
                                      np.diff(runs, append=len(key)).astype(np.int32),
                                      doc, tf.astype(tf_type), self.n_docs))
        self.n_docs += n

    def finish(self) -> Postings:
        self._flush()
        self.chunks.release()  # the chunk tables are the build's largest structure
        encoded = [t.encode("utf-8", "surrogatepass") for t in self.term_ids]
        self.term_ids.clear()
        n_terms = len(encoded)
        order, vocab = vocabulary(encoded)
        del encoded
        df = np.zeros(n_terms, dtype=np.int64)
        for part in self.parts:
            df[part.terms] += part.counts  # a part's terms are distinct
        indptr = np.zeros(n_terms + 1, dtype=np.int64)
        np.cumsum(df[order], out=indptr[1:])
        new_id = np.empty(n_terms, dtype=np.int64)
        new_id[order] = np.arange(n_terms)
        cursor = indptr[new_id]
        del new_id, df
        docs, tfs = _place(self.parts, cursor, int(indptr[-1]))
        lengths = np.concatenate(self.lengths) if self.lengths else np.zeros(0, np.int32)
        return Postings(vocab, indptr, docs, tfs, lengths.astype(np.int64))


def _place(parts: list[Part], cursor: IntArray, nnz: int) -> tuple[I32Array, npt.NDArray[Any]]:
    """Counting-sort placement of every part's postings into term-major arrays.

    Each part is sorted by term then doc and parts come in doc order, so appending
    each term's postings at its cursor keeps every posting list ascending by doc.
    Parts are taken off ``parts`` (and so freed) as they are placed.
    """
    tf_type = np.uint32 if any(p.tfs.dtype == np.uint32 for p in parts) else np.uint16
    docs = np.empty(nnz, dtype=np.int32)
    tfs = np.empty(nnz, dtype=tf_type)
    parts.reverse()
    while parts:
        terms, counts, doc, tf, first_doc = parts.pop()
        if len(doc) == 0:
            continue
        run_starts = np.cumsum(counts) - counts
        pos = np.repeat(cursor[terms] - run_starts, counts)
        pos += np.arange(len(doc))
        global_doc = doc.astype(np.int32)
        global_doc += first_doc
        docs[pos] = global_doc
        tfs[pos] = tf
        cursor[terms] += counts
    return docs, tfs
