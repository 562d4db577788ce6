"""Updating a BM25 index for a few changed documents without re-analysing the rest.

A re-index that changes a handful of chunks out of thousands (a file watcher's run)
would spend nearly all its time analysing text it has analysed before. Here the
previous index's postings are reused: documents that survive keep their (term, tf)
postings, moved to their new positions; only the new documents' texts go through the
analyzer; terms left with no document disappear; and the whole is scored afresh
(idf and average length change with every edit). The result is array for array the
index a full build over the same documents gives (``tests/retrieval/test_bm25_update.py``
compares them).

Nothing here walks the vocabulary or the postings in Python. Surviving documents keep
their relative order (the collection's canonical order, by document id and offset,
guarantees it), so the old postings stay sorted: the removed documents' postings are
found with one pass over the old documents array, the new terms are placed into the old
vocabulary by bisection (it is ordered by :func:`~.bm25_build.term_hash`, then the
term), each new posting's place by a bisection of its term's list, and the arrays are
spliced (:mod:`.bm25_splice`): one copy of every kept run, the new postings dropped in.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from ..errors import UsageError
from .bm25 import BM25Index
from .bm25_build import Builder, Postings, Vocabulary
from .bm25_splice import dropped_positions, renumbering, segment_search, splice

IntArray = npt.NDArray[np.int64]


class Merged(NamedTuple):
    """The new vocabulary and term layout, and where each fresh term sits in both."""

    vocabulary: Vocabulary
    indptr: IntArray
    fresh_rank: IntArray
    """Each fresh term's id in the new vocabulary."""
    fresh_lo: IntArray
    fresh_hi: IntArray
    """Each fresh term's posting list in the previous index (empty at its place if new)."""


def updated(previous: BM25Index, old_to_new: IntArray, added: IntArray,
            added_texts: Sequence[str]) -> BM25Index:
    """The index of the new document list, built from ``previous`` and the added texts.

    ``old_to_new[i]`` is the new position of previous document ``i`` (-1: removed);
    ``added`` holds the new positions of the documents in ``added_texts``, in order.
    Every new position is either a survivor's or an added one's.
    """
    old_to_new = np.asarray(old_to_new, dtype=np.int64)
    added = np.asarray(added, dtype=np.int64)
    _check(previous, old_to_new, added, len(added_texts))
    builder = Builder(previous.analyzer)
    for text in added_texts:
        builder.add(text)
    fresh = builder.finish()
    gone = old_to_new < 0
    dropped = dropped_positions(previous.docs, gone)
    merged = merge_vocabulary(previous, dropped, fresh)
    at, fresh_docs, fresh_tfs = _insertions(previous, old_to_new, added, fresh, merged,
                                            dropped)
    docs = splice(previous.docs, dropped, at, fresh_docs, np.int32, renumbering(old_to_new))
    tf_type = np.promote_types(previous.tfs.dtype, fresh.tfs.dtype)
    tfs = splice(previous.tfs, dropped, at, fresh_tfs, tf_type)
    survivors = np.flatnonzero(~gone)
    lengths = np.zeros(len(survivors) + len(added), dtype=np.int64)
    lengths[old_to_new[survivors]] = previous.doc_lengths[survivors]
    lengths[added] = fresh.doc_lengths
    postings = Postings(merged.vocabulary, merged.indptr, docs, tfs, lengths)
    return BM25Index._scored(postings, previous.analyzer, previous.params)


def position_map(old_rowids: IntArray, new_rowids: IntArray) -> tuple[IntArray, IntArray]:
    """``(old_to_new, added)`` for :func:`updated` between two chunk orders (store row ids,
    unique within each): where each old chunk went (-1: gone), and the positions of the new
    chunks no old position maps to, ascending. Through a table indexed by row id when the
    ids are dense enough (they are: the store numbers its rows), else by sorting."""
    old_rowids = np.asarray(old_rowids, dtype=np.int64)
    new_rowids = np.asarray(new_rowids, dtype=np.int64)
    top = int(max(old_rowids.max(initial=0), new_rowids.max(initial=0)))
    if old_rowids.min(initial=0) >= 0 and new_rowids.min(initial=0) >= 0 \
            and top < 8 * (len(old_rowids) + len(new_rowids)) + 1024:
        where = np.full(top + 1, -1, dtype=np.int64)
        where[new_rowids] = np.arange(len(new_rowids))
        old_to_new = where[old_rowids]
    else:
        sorter = np.argsort(new_rowids, kind="stable")
        at = np.searchsorted(new_rowids, old_rowids, sorter=sorter).clip(0, max(len(sorter) - 1, 0))
        hit = (new_rowids[sorter[at]] == old_rowids if len(sorter)
               else np.zeros(len(old_rowids), dtype=bool))
        old_to_new = np.where(hit, sorter[at] if len(sorter) else 0, -1)
    covered = np.zeros(len(new_rowids), dtype=bool)
    covered[old_to_new[old_to_new >= 0]] = True
    return old_to_new, np.flatnonzero(~covered)


def merge_vocabulary(previous: BM25Index, dropped: IntArray, fresh: Postings) -> Merged:
    """The terms left with a posting plus the fresh ones, in vocabulary order.

    ``dropped``: positions of the previous index's postings that are removed.
    """
    old_ptr = np.asarray(previous.indptr, dtype=np.int64)
    n_old = len(old_ptr) - 1
    kept_df = np.diff(old_ptr)
    if len(dropped):
        term_of = np.searchsorted(old_ptr, dropped, side="right") - 1
        kept_df -= np.bincount(term_of, minlength=n_old)
    fv = fresh.vocabulary
    fresh_terms = [bytes(fv.blob[a:b]) for a, b in pairwise(fv.offsets.tolist())]
    old_id = np.array([previous.term_id(t.decode("utf-8", "surrogatepass"))
                       for t in fresh_terms], dtype=np.int64)
    new = np.flatnonzero(old_id < 0)
    place = _places(previous, fv.hashes[new], [fresh_terms[i] for i in new])
    alive = kept_df > 0
    alive[old_id[old_id >= 0]] = True
    alive_before = np.zeros(n_old + 1, dtype=np.int64)
    np.cumsum(alive, out=alive_before[1:])
    p = alive_before[place]  # where each new term goes among the surviving ones
    fresh_rank = np.empty(len(fresh_terms), dtype=np.int64)
    known = np.flatnonzero(old_id >= 0)
    before = alive_before[old_id[known]]
    fresh_rank[known] = before + np.searchsorted(p, before, side="right")
    fresh_rank[new] = p + np.arange(len(new))
    df = np.insert(kept_df[alive], p, 0)
    df[fresh_rank] += np.diff(fresh.indptr)
    indptr = np.zeros(len(df) + 1, dtype=np.int64)
    np.cumsum(df, out=indptr[1:])
    lo, hi = np.empty_like(old_id), np.empty_like(old_id)
    lo[known], hi[known] = old_ptr[old_id[known]], old_ptr[old_id[known] + 1]
    lo[new] = hi[new] = old_ptr[place]
    vocab = _spliced_vocabulary(previous, alive, p, [fresh_terms[i] for i in new],
                                fv.hashes[new])
    return Merged(vocab, indptr, fresh_rank, lo, hi)


def _places(previous: BM25Index, hashes: npt.NDArray[np.uint32],
            terms: list[bytes]) -> IntArray:
    """Each new term's place in the previous vocabulary (ordered by hash, then term)."""
    old_hashes = previous.term_hashes
    place = np.searchsorted(old_hashes, hashes, side="left").astype(np.int64)
    end = np.searchsorted(old_hashes, hashes, side="right")
    for q in np.flatnonzero(end > place).tolist():  # equal hashes: by the term itself
        term = terms[q].decode("utf-8", "surrogatepass")
        while place[q] < end[q] and previous.term(int(place[q])) < term:
            place[q] += 1
    return place


def _spliced_vocabulary(previous: BM25Index, alive: npt.NDArray[np.bool_], p: IntArray,
                        new_terms: list[bytes], new_hashes: npt.NDArray[np.uint32],
                        ) -> Vocabulary:
    """The previous vocabulary without its dead terms, the new ones inserted at ``p``."""
    offsets = np.asarray(previous.term_offsets, dtype=np.int64)
    lengths = np.diff(offsets)
    new_lengths = np.fromiter(map(len, new_terms), dtype=np.int64, count=len(new_terms))
    raw = np.frombuffer(previous._blob, dtype=np.uint8)  # the previous index's term blob
    if alive.all() and not new_terms:
        return Vocabulary(raw.tobytes(), offsets.copy(), np.array(previous.term_hashes))
    kept_offsets = np.zeros(int(np.count_nonzero(alive)) + 1, dtype=np.int64)
    np.cumsum(lengths[alive], out=kept_offsets[1:])
    kept = raw[np.repeat(alive, lengths)]
    added = np.frombuffer(b"".join(new_terms), dtype=np.uint8)
    blob = np.insert(kept, np.repeat(kept_offsets[p], new_lengths), added).tobytes()
    all_lengths = np.insert(lengths[alive], p, new_lengths)
    new_offsets = np.zeros(len(all_lengths) + 1, dtype=np.int64)
    np.cumsum(all_lengths, out=new_offsets[1:])
    hashes = np.insert(np.asarray(previous.term_hashes)[alive], p, new_hashes)
    return Vocabulary(blob, new_offsets, hashes.astype(np.uint32))


def _insertions(previous: BM25Index, old_to_new: IntArray, added: IntArray, fresh: Postings,
                merged: Merged, dropped: IntArray) -> tuple[IntArray, IntArray, npt.NDArray[Any]]:
    """(position in the kept postings, new doc, tf) of every fresh posting, in final order."""
    term_of = np.repeat(np.arange(len(merged.fresh_rank), dtype=np.int64),
                        np.diff(fresh.indptr))
    new_doc = added[fresh.docs]
    order = np.lexsort((new_doc, merged.fresh_rank[term_of]))
    term_of, new_doc = term_of[order], new_doc[order]
    # A kept posting precedes the new doc d when its document survives to before d: its
    # old position is below the first survivor that lands after d.
    survivors = np.flatnonzero(old_to_new >= 0)
    first_after = np.searchsorted(old_to_new[survivors], new_doc)
    bound = np.append(survivors, len(old_to_new))[first_after]
    g = segment_search(previous.docs, merged.fresh_lo[term_of], merged.fresh_hi[term_of],
                       bound)
    at = g - np.searchsorted(dropped, g, side="left")
    return at, new_doc, fresh.tfs[order]


def _check(previous: BM25Index, old_to_new: IntArray, added: IntArray, n_texts: int) -> None:
    if len(old_to_new) != previous.n_docs:
        raise UsageError(f"old_to_new has {len(old_to_new)} entries for {previous.n_docs} "
                         "documents")
    if len(added) != n_texts:
        raise UsageError(f"{len(added)} positions for {n_texts} added texts")
    kept = old_to_new[old_to_new >= 0]
    if len(kept) and np.any(np.diff(kept) <= 0):
        raise UsageError("surviving documents must keep their relative order")
    n_docs = len(kept) + len(added)
    every = np.concatenate([kept, added])
    if len(every) and (every.min() < 0 or every.max() >= n_docs
                       or np.any(np.bincount(every, minlength=n_docs) != 1)):
        raise UsageError("new positions must cover 0..n-1 exactly once")
    if n_docs >= 2**31:
        raise UsageError(f"{n_docs} documents: more than a BM25 index holds (2^31 - 1)")
