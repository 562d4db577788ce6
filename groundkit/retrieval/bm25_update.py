"""Updating a BM25 index for a few changed documents without re-analysing the rest.

A re-index that changes a handful of chunks out of thousands (a file watcher's run)
would spend nearly all its time analysing text it has analysed before. Here the
previous index's postings are reused: documents that survive keep their (term, tf)
postings, moved to their new positions; only the new documents' texts go through the
analyzer; terms left with no document disappear; and the whole is scored afresh
(idf and average length change with every edit). The result is array for array the
index a full build over the same documents gives (``tests/retrieval/test_bm25_update.py``
compares them).

Surviving documents must keep their relative order (the collection's canonical order,
by document id and offset, guarantees it), so the old postings stay sorted and the new
ones are merged in, with no global sort.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise

import numpy as np
import numpy.typing as npt

from ..errors import UsageError
from .bm25 import BM25Index
from .bm25_build import Builder, Postings, vocabulary

IntArray = npt.NDArray[np.int64]


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
    n_docs = int(np.count_nonzero(old_to_new >= 0)) + len(added)
    fresh_builder = Builder(previous.analyzer)
    for text in added_texts:
        fresh_builder.add(text)
    fresh = fresh_builder.finish()

    old_terms = np.repeat(np.arange(previous.n_terms, dtype=np.int64), np.diff(previous.indptr))
    new_docs = old_to_new[previous.docs]
    keep = new_docs >= 0
    old_terms, new_docs, old_tfs = old_terms[keep], new_docs[keep], previous.tfs[keep]
    terms, order, old_rank, fresh_rank = _merged_terms(previous, old_terms, fresh)

    old_keys = (old_rank[old_terms] << 32) | new_docs
    fresh_terms_of = np.repeat(np.arange(len(fresh_rank), dtype=np.int64), np.diff(fresh.indptr))
    fresh_keys = (fresh_rank[fresh_terms_of] << 32) | added[fresh.docs]
    fresh_sort = np.argsort(fresh_keys, kind="stable")
    fresh_keys = fresh_keys[fresh_sort]
    at = np.searchsorted(old_keys, fresh_keys)
    keys = np.insert(old_keys, at, fresh_keys)
    tf_type = np.promote_types(old_tfs.dtype, fresh.tfs.dtype)
    tfs = np.insert(old_tfs.astype(tf_type), at, fresh.tfs[fresh_sort].astype(tf_type))

    lengths = np.zeros(n_docs, dtype=np.int64)
    survivors = np.flatnonzero(old_to_new >= 0)
    lengths[old_to_new[survivors]] = previous.doc_lengths[survivors]
    lengths[added] = fresh.doc_lengths
    term_of = keys >> 32
    indptr = np.zeros(len(terms) + 1, dtype=np.int64)
    np.cumsum(np.bincount(term_of, minlength=len(terms)), out=indptr[1:])
    ordered = [terms[i].decode("utf-8", "surrogatepass") for i in order.tolist()]
    return BM25Index.from_postings(
        terms=ordered, indptr=indptr, docs=(keys & 0xFFFFFFFF).astype(np.int32), tfs=tfs,
        doc_lengths=lengths, analyzer=previous.analyzer, params=previous.params)


def _merged_terms(previous: BM25Index, old_terms: IntArray, fresh: Postings,
                  ) -> tuple[list[bytes], IntArray, IntArray, IntArray]:
    """The surviving old terms and the fresh ones: (terms, vocabulary order, rank of each
    old term id (-1: gone), rank of each fresh term id)."""
    surviving = np.flatnonzero(np.bincount(old_terms, minlength=previous.n_terms))
    offsets = fresh.vocabulary.offsets.tolist()
    fresh_terms = [bytes(fresh.vocabulary.blob[a:b])
                   for a, b in pairwise(offsets)]
    by_term = {previous.term(int(t)).encode("utf-8", "surrogatepass"): i
               for i, t in enumerate(surviving.tolist())}
    terms = list(by_term)
    for term in fresh_terms:
        if term not in by_term:
            by_term[term] = len(terms)
            terms.append(term)
    order, _ = vocabulary(terms)
    rank = np.empty(len(terms), dtype=np.int64)
    rank[order] = np.arange(len(terms))
    old_rank = np.full(previous.n_terms, -1, dtype=np.int64)
    old_rank[surviving] = rank[: len(surviving)]
    fresh_rank = rank[np.array([by_term[t] for t in fresh_terms], dtype=np.int64)]
    return terms, order, old_rank, fresh_rank


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
                       or len(np.unique(every)) != n_docs):
        raise UsageError("new positions must cover 0..n-1 exactly once")
