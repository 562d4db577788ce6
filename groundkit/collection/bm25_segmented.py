"""BM25 segments in a collection: opt-in (``grk index --segments on``, ADR-0025).

With ``settings["segments"] == "on"`` a generation's ``bm25/`` folder is a segmented index
(:mod:`groundkit.retrieval.bm25_segment_store`) instead of one whole index, and beside it

* ``gen-<N>/bm25-order.npy`` — the store row id of every *segment position* (the
  concatenation of the segments, tombstoned documents included: ``-1``).

An update hard-links the previous generation's segment files into the new ``bm25/`` (they are
immutable: written once under a fresh name, never modified, so a generation shares them
without copying and gc of a generation removes only its own links), tombstones the rows the
new generation no longer has, appends one small segment for the rows it adds, and merges
while :class:`~groundkit.retrieval.bm25_merge.TieredPolicy` says so (synchronously). Every
file under ``gen-<N>/`` is still checksummed at publish (:mod:`.integrity`), so ``grk check``
covers the segment files.

Every other derived index keeps the canonical order (``rowids.npy``); :class:`CanonicalSegments`
maps segment positions to canonical ones and re-breaks ties by canonical position, so hits,
scores and their order are those of a full build over the generation in canonical order.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from .. import store
from ..errors import IndexMismatchError, UsageError
from ..retrieval import bm25_segment_store as segment_store
from ..retrieval.bm25 import BM25Index, TermExplanation
from ..retrieval.bm25_merge import TieredPolicy
from ..retrieval.bm25_segments import SegmentedBM25
from ..text.analysis import Analyzer

BM25 = "bm25"
ORDER = "bm25-order.npy"
MODES = ("on", "off")
WIDER = 8
"""A search asks the segments for this many hits beyond ``top_k`` first (ties, see
:meth:`CanonicalSegments.search_terms`)."""

IntArray = npt.NDArray[np.int64]


def enabled(settings: dict[str, Any]) -> bool:
    """Whether a generation with these settings publishes BM25 as segments."""
    return settings.get("segments") == "on"


# -- writing -------------------------------------------------------------------------


def write(conn: sqlite3.Connection, gen_dir: Path, rowids: IntArray,
          full: Callable[[], BM25Index], *, previous: Path | None, at_most: float) -> None:
    """Write ``gen_dir/bm25`` (segmented) and its order file for the chunks ``rowids``.

    ``previous``: the previous generation's folder when its segments may be extended (same
    analyzer and parameters, files intact); else, or when more than ``at_most`` of the
    chunks are new, ``full()`` is written as the only segment.
    """
    root = gen_dir / BM25
    shutil.rmtree(root, ignore_errors=True)  # a crashed run's leftovers of this generation
    order = None if previous is None else _extended(conn, previous, root, rowids, at_most)
    if order is None:
        shutil.rmtree(root, ignore_errors=True)
        segment_store.create(root, full())
        order = rowids
    _save(gen_dir / ORDER, order)


def _extended(conn: sqlite3.Connection, previous: Path, root: Path, rowids: IntArray,
              at_most: float) -> IntArray | None:
    """The previous generation's segments, linked into ``root``, updated for ``rowids``:
    the new order, or ``None`` (build anew) when it cannot be read or too much changed."""
    try:
        old = _load(previous / ORDER)
    except IndexMismatchError:
        return None
    live = old >= 0
    deleted = np.flatnonzero(live & ~np.isin(old, rowids))
    added = rowids[~np.isin(rowids, old[live])]
    if len(added) > at_most * max(len(rowids), 1):
        return None
    try:
        shutil.copytree(previous / BM25, root, copy_function=_link)
        current = None
        if len(deleted) or len(added):
            current = segment_store.update(
                root, deleted.tolist(), _texts(conn, added),
                deleted_texts=_texts(conn, old[deleted]))
        order = old.copy()
        order[deleted] = -1
        return _merged(root, np.concatenate([order, added]), current)
    except IndexMismatchError:
        return None  # unreadable, though its checksums held: build anew (an OSError, a
        # full or failing disk, is the run's failure: the indexer reports it)


def _texts(conn: sqlite3.Connection, rowids: IntArray) -> list[str]:
    return [c.chunk.text for c in store.chunks_by_rowid(conn, rowids.tolist())]


def _link(source: str, target: str) -> None:
    """A hard link (the file is immutable), a copy where the filesystem has none."""
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


def _merged(root: Path, order: IntArray, current: SegmentedBM25 | None) -> IntArray:
    """Merge while the policy says so; the order follows each merge (its run of segments
    becomes their live rows, in order). ``current``: the generation just published, open."""
    policy = TieredPolicy()
    while True:
        current = current or segment_store.open_segmented(root)
        plan = policy.plan([s.n_docs for s in current.segments],
                           [len(d) for d in current.tombstones])
        if plan is None or not segment_store.merge(root, policy):
            _check(current, order)
            return order
        lo, hi = plan
        a, b = int(current.offsets[lo]), int(current.offsets[hi])
        run = order[a:b]
        order = np.concatenate([order[:a], run[run >= 0], order[b:]])
        current = None


def _check(index: SegmentedBM25, order: IntArray) -> None:
    if len(order) != index.n_docs or int(np.count_nonzero(order >= 0)) != index.n_live:
        raise IndexMismatchError(
            f"BM25 segment order lists {len(order)} positions, the segments hold "
            f"{index.n_docs} ({index.n_live} live); re-run grk index --rebuild")


def _save(path: Path, order: IntArray) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "wb") as fh:
        np.save(fh, np.asarray(order, dtype=np.int64))
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def _load(path: Path) -> IntArray:
    try:
        order = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise IndexMismatchError(f"BM25 segment order {path} is missing or damaged ({exc}); "
                                 "re-run grk index --rebuild") from exc
    if order.ndim != 1 or order.dtype != np.int64:
        raise IndexMismatchError(f"BM25 segment order {path} is not a list of row ids")
    return np.asarray(order)


# -- reading -------------------------------------------------------------------------


def load(gen_dir: Path, analyzer: Analyzer, rowids: IntArray) -> CanonicalSegments:
    """The generation's segmented index, answering in canonical positions (``rowids``)."""
    index = segment_store.open_segmented(gen_dir / BM25, analyzer=analyzer)
    order = _load(gen_dir / ORDER)
    _check(index, order)
    return CanonicalSegments(index, order, rowids)


class CanonicalSegments:
    """:class:`~groundkit.retrieval.bm25_segments.SegmentedBM25` behind
    :class:`~groundkit.retrieval.bm25.BM25Index`'s reading API, in canonical positions."""

    def __init__(self, index: SegmentedBM25, order: IntArray, rowids: IntArray) -> None:
        live = np.flatnonzero(order >= 0)
        sorter = np.argsort(rowids, kind="stable")
        at = np.minimum(np.searchsorted(rowids, order[live], sorter=sorter),
                        max(len(rowids) - 1, 0))
        canonical = sorter[at] if len(rowids) else at
        if len(live) != len(rowids) or not np.array_equal(rowids[canonical], order[live]):
            raise IndexMismatchError("BM25 segments do not hold exactly the generation's "
                                     "chunks; re-run grk index --rebuild")
        self.index = index
        self.analyzer = index.analyzer
        self.params = index.params
        self.n_docs = len(rowids)
        self._canonical = np.full(len(order), -1, dtype=np.int64)
        self._canonical[live] = canonical
        self._segment = np.empty(len(rowids), dtype=np.int64)
        self._segment[canonical] = live

    def term_id(self, term: str) -> int:
        return self.index.term_id(term)

    def term(self, term_id: int) -> str:
        return self.index.term(term_id)

    def idf(self, term_id: int) -> float:
        return self.index.idf(term_id)

    def holds(self, term_ids: Sequence[int], positions: Sequence[int]) -> list[list[bool]]:
        return self.index.holds(term_ids, [int(self._segment[p]) for p in positions])

    def explain(self, query: str, position: int) -> list[TermExplanation]:
        return self.index.explain(query, int(self._segment[position]))

    def search(self, query: str, top_k: int = 10, *,
               score_threshold: float | None = None) -> list[tuple[int, float]]:
        return self._ranked(lambda k: self.index.search(
            query, k, score_threshold=score_threshold), top_k)

    def search_terms(self, terms: Sequence[str], top_k: int = 10, *,
                     score_threshold: float | None = None) -> list[tuple[int, float]]:
        """As :meth:`.BM25Index.search_terms`, in canonical positions.

        The segments break ties by segment position; a full build breaks them by canonical
        position. So more hits are asked for until the last one scores below the ``top_k``-th
        (or the segments run out): every document tying the ``top_k``-th is then in hand, and
        sorting by (score, canonical position) gives the full build's ranking exactly.
        """
        return self._ranked(lambda k: self.index.search_terms(
            terms, k, score_threshold=score_threshold), top_k)

    def _ranked(self, search: Callable[[int], list[tuple[int, float]]],
                top_k: int) -> list[tuple[int, float]]:
        if not isinstance(top_k, int) or top_k < 1:
            raise UsageError(f"top_k must be a positive integer, got {top_k!r}")
        want = top_k + WIDER
        while True:
            hits = search(want)
            if len(hits) < want or hits[-1][1] < hits[top_k - 1][1]:
                break
            want *= 4
        ranked = sorted(((int(self._canonical[p]), s) for p, s in hits),
                        key=lambda hit: (-hit[1], hit[0]))
        return ranked[:top_k]
