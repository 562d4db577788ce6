"""Array surgery for :mod:`.bm25_update`: a few postings out, a few in, one copy of the rest.

An update that changes a handful of documents touches a handful of positions in arrays of
a hundred million postings. :func:`splice` builds ``np.insert(np.delete(src, drop), at,
values)`` with one copy of each kept run, not the boolean masks and temporaries
``np.delete`` and ``np.insert`` allocate; past :data:`MANY_EVENTS` cut points it uses
them anyway (a large update: per-run Python overhead would dominate).

Documents are renumbered and found by the runs they form, not through a table lookup per
posting: removed documents are a few ranges of old positions (one file's chunks are
contiguous), and the survivors' shift (new minus old position) changes only at a few
places, so :func:`dropped_positions` compares each posting with each range and
:func:`renumbering` adds each change of shift to the postings past it (measured on 11.7M
postings: 30 ms a range or a step, a lookup through a table 125-150 ms). With more than
:data:`FEW` ranges or steps they use the table. :func:`segment_search` is
``np.searchsorted`` within many sorted segments of one array at once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]

FEW = 8
"""Up to this many removed ranges (or shift changes), compare with each; beyond, a table."""

MANY_EVENTS = 20_000
"""Above this many removed plus inserted positions, :func:`splice` uses numpy's delete and
insert (every element through a mask) instead of a Python loop over the kept runs."""


def splice(src: npt.NDArray[Any], drop: IntArray, at: IntArray, values: npt.NDArray[Any],
           dtype: Any, remap: Callable[[npt.NDArray[Any]], None] | None = None,
           ) -> npt.NDArray[Any]:
    """``np.insert(kept, at, values)`` as ``dtype``, ``kept`` being ``np.delete(src, drop)``
    passed through ``remap`` (in place, when given: it renumbers the survivors' values).

    ``drop``: ascending positions of ``src``; ``at``: nondecreasing positions in ``kept``
    (numpy's insert semantics: ``values[q]`` goes before ``kept[at[q]]``, equal positions
    in the order given).
    """
    if len(drop) + len(at) > MANY_EVENTS:
        kept = np.delete(src, drop).astype(dtype, copy=False)
        if remap is not None:
            remap(kept)
        return np.insert(kept, at, values.astype(dtype))
    n_kept = len(src) - len(drop)
    out = np.empty(n_kept + len(values), dtype=dtype)
    if n_kept:
        _copy_runs(src, drop, at, out)
    slots = at + np.arange(len(at))
    if remap is not None:
        out[slots] = 0  # defined values for remap; overwritten below
        remap(out)
    out[slots] = values
    return out


def _copy_runs(src: npt.NDArray[Any], drop: IntArray, at: IntArray,
               out: npt.NDArray[Any]) -> None:
    """Copy every kept run of ``src`` to its place in ``out`` (``splice``'s layout)."""
    n_kept = len(src) - len(drop)
    # Kept runs of src between dropped positions, as [start, stop) in src.
    run_starts = np.concatenate([[0], drop + 1]).astype(np.int64)
    run_stops = np.concatenate([drop, [len(src)]]).astype(np.int64)
    live = run_stops > run_starts
    run_starts, run_stops = run_starts[live], run_stops[live]
    # Each run starts at this index of the kept array; insertions cut runs further.
    kept_starts = np.concatenate([[0], np.cumsum(run_stops - run_starts)[:-1]])
    cuts = np.union1d(kept_starts, at[(at > 0) & (at < n_kept)]).astype(np.int64)
    run_of_cut = np.searchsorted(kept_starts, cuts, side="right") - 1
    seg_src = run_starts[run_of_cut] + (cuts - kept_starts[run_of_cut])
    seg_len = np.diff(np.concatenate([cuts, [n_kept]]))
    seg_out = cuts + np.searchsorted(at, cuts, side="right")
    for s, o, n in zip(seg_src.tolist(), seg_out.tolist(), seg_len.tolist(), strict=True):
        out[o : o + n] = src[s : s + n]


def segment_search(values: npt.NDArray[Any], lo: IntArray, hi: IntArray,
                   targets: IntArray) -> IntArray:
    """For each query ``q``: ``lo[q] + np.searchsorted(values[lo[q]:hi[q]], targets[q])``
    (side ``left``), every slice sorted ascending; one vectorised bisection for all."""
    lo, hi = lo.astype(np.int64, copy=True), hi.astype(np.int64, copy=True)
    active = np.flatnonzero(lo < hi)
    while len(active):
        a, b = lo[active], hi[active]
        mid = (a + b) >> 1
        below = values[mid] < targets[active]
        lo[active] = np.where(below, mid + 1, a)
        hi[active] = np.where(below, b, mid)
        active = active[lo[active] < hi[active]]
    return lo


def dropped_positions(docs: npt.NDArray[Any], gone: npt.NDArray[np.bool_]) -> IntArray:
    """Ascending positions of ``docs`` whose document ``gone`` marks as removed."""
    edges = np.diff(np.concatenate([[0], gone.view(np.int8), [0]]))
    starts, stops = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    if len(starts) == 0:
        return np.zeros(0, dtype=np.int64)
    if len(starts) > FEW:
        return np.flatnonzero(gone[docs])
    mask = (docs >= starts[0]) & (docs < stops[0])
    for a, b in zip(starts[1:].tolist(), stops[1:].tolist(), strict=True):
        mask |= (docs >= a) & (docs < b)
    return np.flatnonzero(mask)


def renumbering(old_to_new: IntArray) -> Callable[[npt.NDArray[Any]], None] | None:
    """An in-place map of surviving old positions to new ones (``None``: none moves).

    Values that are not a survivor's position come out arbitrary (``splice`` overwrites
    them).
    """
    survivors = np.flatnonzero(old_to_new >= 0)
    shift = old_to_new[survivors] - survivors
    change = np.flatnonzero(np.diff(shift)) + 1
    bounds = np.concatenate([survivors[:1], survivors[change]])
    steps = np.concatenate([shift[:1], shift[change] - shift[change - 1]])
    bounds, steps = bounds[steps != 0], steps[steps != 0]
    if len(bounds) == 0:
        return None
    if len(bounds) > FEW:
        table = old_to_new.astype(np.int32)

        def through_table(a: npt.NDArray[Any]) -> None:
            a[:] = table[a]

        return through_table

    def by_steps(a: npt.NDArray[Any]) -> None:
        # Highest bound first: a survivor moved by a later step still lies at or above
        # every lower bound (survivors keep their order), so each comparison sees its
        # original side of the bound.
        for bound, step in zip(bounds[::-1].tolist(), steps[::-1].tolist(), strict=True):
            np.add(a, step, out=a, where=a >= bound)

    return by_steps
