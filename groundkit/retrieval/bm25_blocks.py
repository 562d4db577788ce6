"""Per-block score maxima of the long BM25 posting lists, for block-max MaxScore.

The documents fall in blocks of ``2**BLOCK_SHIFT`` (128) consecutive ids. For every
term whose list holds at least one posting per block on average (``df >= n_blocks``),
``block_quanta[block_slots[t], b]`` bounds its best score in block ``b`` in whole steps
of ``block_steps[t]``: ``quanta * step >= `` every score of ``t`` there (0: none there).
The step is a power of two at least the term's maximum / 255, so a bound is an 8-bit
integer times a power of two: exact in float32, a multiple of the index's score unit
(``bm25_query.score_unit``), and sums of bounds are as exact as sums of scores, which
keeps the compiled kernel's pruning decisions exact (``_bm25c.c``, ADR-0003).

One byte per (long term, block) is stored with the index, not derived at open: deriving
reads every posting of the long lists (about 1 GB at 10^6 passages) before the first
query; stored, it is 17 MB there (1.5% of the index) and memory-mapped like the rest.
``block_maxima`` is called by ``bm25_build.score_postings``, so a full build and an
incremental update (``bm25_update``) produce the same arrays.

**Score columns.** The commonest lists (in at least ``1 / COLUMN_SHARE`` of the
documents) also store their scores as one float32 column over every document (0 where the
term is absent): ``column_scores[column_slots[t], d]``, no larger than twice their
postings (8 bytes a posting, 4 a document). The compiled kernel adds a window of a column
with vector instructions and no doc ids, and looks a document's score up in one read
instead of searching the list; ``column_starts[column_slots[t], b]`` is the offset in
``t``'s list of its first posting in doc block ``b`` (the last entry: its length), which
moves the list's cursor without a search. At 10^6 passages: 25 lists, 96 MiB (8% of
the index; ADR-0003, revision 2026-12-07). Adding 0 changes no total, so the answers are
the same bits.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

BLOCK_SHIFT = 7
"""A doc block is 2**BLOCK_SHIFT documents (128: measured against 64 and 256 at 10^6
passages, ADR-0003)."""
DENSE = 16
"""The compiled kernel goes block by block when a query's lists hold at least this many
postings per block (below, plain MaxScore costs less than the blocks' bookkeeping)..."""
WINDOWED = 8
"""... and, checked first, from this many it sums windows of 16 blocks (`_bm25c.c`,
``run_windows``), going block by block only through windows where the lists that must be
read are sparse. Long queries of common words gain most: MaxScore would complete nearly
every document they offer (ADR-0003, revision 2026-12-06). Below ``DENSE``, so ``DENSE``
only matters when this is raised (the tests do, to reach the block path directly)."""
FILES = ("block_slots", "block_steps", "block_quanta")
"""The stored arrays; an index written before them has none (plain MaxScore answers)."""
COLUMN_SHARE = 4
"""A list in at least 1 / COLUMN_SHARE of the documents also stores a score column."""
COLUMN_FILES = ("column_slots", "column_scores", "column_starts")
"""The score columns' arrays; an index written before them has none (the kernel searches
the lists instead: the same answers)."""


def n_blocks(n_docs: int, shift: int = BLOCK_SHIFT) -> int:
    return max(1, -(-n_docs >> shift))


def block_maxima(indptr: npt.NDArray[np.int64], docs: npt.NDArray[np.int32],
                 scores: npt.NDArray[np.float32], n_docs: int, *,
                 negative: bool) -> dict[str, npt.NDArray[Any]]:
    """The block arrays (module docstring; blocks of ``2**BLOCK_SHIFT`` documents) of a
    term-major index; none for one with negative scores (the compiled kernel does not
    answer those). One pass per long list (0.6 s of CPU at 10^6 passages, 1,845 lists;
    temporaries the size of the longest list)."""
    shift = BLOCK_SHIFT
    df = np.diff(indptr)
    nb = n_blocks(n_docs, shift)
    long_terms = np.zeros(0, np.int64) if negative else np.flatnonzero(df >= nb)
    slots = np.full(len(df), -1, dtype=np.int32)
    slots[long_terms] = np.arange(len(long_terms), dtype=np.int32)
    quanta = np.zeros((len(long_terms), nb), dtype=np.uint8)
    steps = np.zeros(len(df), dtype=np.float32)
    for slot, t in enumerate(long_terms.tolist()):
        lo, hi = int(indptr[t]), int(indptr[t + 1])
        blocks = docs[lo:hi] >> shift  # non-decreasing: a list's docs ascend
        starts = np.flatnonzero(np.diff(blocks, prepend=-1))
        maxima = np.maximum.reduceat(scores[lo:hi], starts).astype(np.float64)
        step = _steps(maxima.max(keepdims=True))
        steps[t] = step[0]
        quanta[slot, blocks[starts]] = _whole_steps(maxima, step)
    return {"block_slots": slots, "block_steps": steps, "block_quanta": quanta}


def score_columns(indptr: npt.NDArray[np.int64], docs: npt.NDArray[np.int32],
                  scores: npt.NDArray[np.float32], n_docs: int, *,
                  negative: bool) -> dict[str, npt.NDArray[Any]]:
    """The score columns (module docstring) of the lists in at least ``1 / COLUMN_SHARE``
    of the ``n_docs`` documents, with their block starts (blocks of ``2**BLOCK_SHIFT``);
    none for an index with negative scores (the compiled kernel does not answer those)."""
    shift = BLOCK_SHIFT
    df = np.diff(indptr)
    common = (np.zeros(0, np.int64) if negative or n_docs == 0
              else np.flatnonzero(df * COLUMN_SHARE >= max(n_docs, 1)))
    slots = np.full(len(df), -1, dtype=np.int32)
    slots[common] = np.arange(len(common), dtype=np.int32)
    columns = np.zeros((len(common), n_docs), dtype=np.float32)
    block_starts = np.arange(n_blocks(n_docs, shift) + 1, dtype=np.int64) << shift
    starts = np.zeros((len(common), len(block_starts)), dtype=np.int32)
    for slot, t in enumerate(common.tolist()):
        lo, hi = int(indptr[t]), int(indptr[t + 1])
        columns[slot, docs[lo:hi]] = scores[lo:hi]
        starts[slot] = np.searchsorted(docs[lo:hi], block_starts)
    return {"column_slots": slots, "column_scores": columns, "column_starts": starts}


def columns_valid(arrays: dict[str, Any], indptr: npt.NDArray[np.int64], n_docs: int,
                  shift: int) -> bool:
    """Whether the score columns fit an index of these lists and ``n_docs`` documents
    (each column's list ends where its last block start says)."""
    slots, columns, starts = (arrays[name] for name in COLUMN_FILES)
    if not (isinstance(shift, int) and 0 <= shift <= 30
            and slots.dtype == np.int32 and len(slots) == len(indptr) - 1
            and columns.dtype == np.float32 and columns.ndim == 2
            and columns.shape[1] == n_docs and starts.dtype == np.int32
            and starts.shape == (len(columns), n_blocks(n_docs, shift) + 1)):
        return False
    listed = np.flatnonzero(slots >= 0)
    return bool(np.array_equal(slots[listed], np.arange(len(columns)))
                and np.array_equal(starts[:, -1], indptr[listed + 1] - indptr[listed]))


def _steps(best: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """Per list, the least power of two at or above its maximum / 255 (1.0 for a list
    scoring nothing: any step bounds 0)."""
    mantissa, exponent = np.frexp(best / 255.0)
    exponent = np.where(mantissa == 0.5, exponent - 1, exponent)
    return np.where(best > 0, np.ldexp(1.0, exponent), 1.0)


def _whole_steps(maxima: npt.NDArray[np.float64],
                 steps: npt.NDArray[np.float64]) -> npt.NDArray[np.uint8]:
    """``ceil(maxima / steps)``, exact (a division by a power of two), checked to bound."""
    quanta = np.ceil(maxima / steps)
    if len(quanta) and (quanta.max() > 255 or np.any(quanta * steps < maxima)):
        raise AssertionError("a block bound does not fit 8 bits or does not bound")
    return quanta.astype(np.uint8)


def valid(arrays: dict[str, Any], n_terms: int, n_docs: int, shift: int) -> bool:
    """Whether the block arrays fit an index of ``n_terms`` and ``n_docs`` (a mismatch is
    a damaged index, never silently different answers)."""
    slots, steps, quanta = (arrays[name] for name in FILES)
    return bool(
        isinstance(shift, int) and 0 <= shift <= 30 and slots.dtype == np.int32
        and steps.dtype == np.float32 and quanta.dtype == np.uint8 and quanta.ndim == 2
        and len(slots) == n_terms and len(steps) == n_terms
        and quanta.shape[1] == n_blocks(n_docs, shift)
        and (not len(slots) or (int(slots.max()) < len(quanta) and int(slots.min()) >= -1))
        and bool(np.all(steps[slots >= 0] > 0)))
