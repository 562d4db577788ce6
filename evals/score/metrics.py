"""Retrieval metrics over plain data: qrels and runs as nested dicts.

A *qrels* maps ``query_id -> {doc_id: relevance}`` (non-negative ints; graded
judgments 1 and 2 occur) and a *run* maps ``query_id -> {doc_id: score}``. Here
``doc_id`` is whatever unit is judged: for groundkit's golden corpus, a chunk id.

Measures are named and defined by ir_measures (the reference); result keys are
its canonical measure strings (``"nDCG@10"``, ``"Success@5"``). The default set
is hit-rate recall@1/5/10 (``Success@k``), ``nDCG@10``, ``RR@10`` (MRR@10) and
``R@100``.

Conventions, identical to trec_eval / pytrec_eval:

* **Relevance.** ``Success@k``, ``RR@k``, ``R@k`` and ``P@k`` count a result as
  relevant when its judgment is ``>= rel`` (default 1), so grades 1 and 2 both
  count. ``nDCG@k`` uses the judgments as linear gains, ``gain / log2(rank + 1)``,
  normalised by the ideal ordering of the qrels.
* **Ordering.** A run is ranked by score descending, ties broken by ``doc_id``
  descending. To evaluate an explicit ranking, build the run with
  :func:`run_from_ranking`, whose scores strictly decrease with rank.
* **Every judged query counts.** The judged queries are the qrels' keys (or the
  ``query_ids`` given). A judged query missing from the run, or with an empty
  result list, scores 0 on every measure; it is never skipped. Queries in the run
  but not judged are ignored. Aggregates are means over the judged queries.

:func:`per_query` computes the measures above with a vectorised numpy kernel
(1,000 queries x 100 results in a few tens of milliseconds) and falls back to
ir_measures for any other measure. :func:`per_query_reference` always uses
ir_measures; the tests check the two agree.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import chain, repeat
from typing import Any

import ir_measures
import numpy as np
import numpy.typing as npt

from evals.trec import trec_order
from groundkit.errors import GroundkitError

Qrels = Mapping[str, Mapping[str, int]]
Run = Mapping[str, Mapping[str, float]]
PerQuery = dict[str, dict[str, float]]

DEFAULT_MEASURES: tuple[str, ...] = (
    "Success@1",
    "Success@5",
    "Success@10",
    "nDCG@10",
    "RR@10",
    "R@100",
)
"""The measures every report carries, in report order."""


class MeasureError(GroundkitError, ValueError):
    """A measure string, qrels or run that cannot be evaluated."""


def canonical_measure(measure: str) -> str:
    """The ir_measures canonical string for ``measure`` (``"nDCG@10"``)."""
    try:
        return str(ir_measures.parse_measure(measure))
    except (ValueError, NameError, SyntaxError, TypeError) as exc:
        raise MeasureError(
            f"unknown measure {measure!r}: use an ir_measures measure string such as "
            f"{', '.join(DEFAULT_MEASURES)}"
        ) from exc


def per_query(
    qrels: Qrels,
    run: Run,
    measures: Iterable[str] = DEFAULT_MEASURES,
    *,
    query_ids: Iterable[str] | None = None,
) -> PerQuery:
    """``{measure: {query_id: value}}`` for every judged query, zeros included."""
    judged = _judged_ids(qrels, query_ids)
    parsed = [ir_measures.parse_measure(canonical_measure(m)) for m in measures]
    kernels = [(m, _fast_kernel(m)) for m in parsed]
    fast = [(m, k) for m, k in kernels if k is not None]
    slow = [m for m, k in kernels if k is None]
    values: PerQuery = {}
    if fast:
        values.update(_fast_per_query(qrels, run, judged, fast))
    if slow:
        values.update(per_query_reference(qrels, run, [str(m) for m in slow], query_ids=judged))
    return {str(m): values[str(m)] for m in parsed}


def per_query_reference(
    qrels: Qrels,
    run: Run,
    measures: Iterable[str] = DEFAULT_MEASURES,
    *,
    query_ids: Iterable[str] | None = None,
) -> PerQuery:
    """:func:`per_query` computed by ir_measures itself (the reference).

    The run is re-scored by its trec_eval ordering first, so every provider
    ir_measures picks sees the same untied ranking.
    """
    judged = _judged_ids(qrels, query_ids)
    parsed = [ir_measures.parse_measure(canonical_measure(m)) for m in measures]
    _check_qrels(qrels, judged)
    out: PerQuery = {str(m): dict.fromkeys(judged, 0.0) for m in parsed}
    judged_qrels = {q: dict(qrels[q]) for q in judged if qrels.get(q)}
    ranked = {q: _trec_order(run.get(q) or {}) for q in judged}
    untied = run_from_ranking({q: ds for q, ds in ranked.items() if ds})
    if judged_qrels and untied:
        for metric in ir_measures.iter_calc(parsed, judged_qrels, untied):
            if metric.query_id in out[str(metric.measure)]:
                out[str(metric.measure)][metric.query_id] = float(metric.value)
    return out


def aggregate(scores: PerQuery) -> dict[str, float]:
    """The mean of each measure over its judged queries."""
    means: dict[str, float] = {}
    for measure, by_query in scores.items():
        if not by_query:
            raise MeasureError(f"cannot average {measure}: there are no judged queries")
        means[measure] = float(np.mean(list(by_query.values())))
    return means


def abstention(
    run: Run, answerable_ids: Iterable[str], no_answer_ids: Iterable[str]
) -> dict[str, int]:
    """Counts of abstentions: a query abstains when its result list is empty.

    ``no_answer_abstained`` is the good kind (nothing returned for a question the
    corpus cannot answer); ``answerable_abstained`` the bad kind.
    """
    answerable, no_answer = set(answerable_ids), set(no_answer_ids)
    both = sorted(answerable & no_answer)
    if both:
        raise MeasureError(f"queries cannot be both answerable and no-answer: {both[:5]}")
    return {
        "answerable_total": len(answerable),
        "answerable_abstained": sum(1 for q in answerable if not run.get(q)),
        "no_answer_total": len(no_answer),
        "no_answer_abstained": sum(1 for q in no_answer if not run.get(q)),
    }


DOCUMENTS_DEPTH = 10
"""How deep a stage's distinct documents are counted in a report."""
DOCUMENTS = f"distinct_documents@{DOCUMENTS_DEPTH}"
"""The name of that figure in a report's stage block (not an ir_measures measure: it
needs no judgments)."""


def distinct_documents(documents: Mapping[str, Sequence[str]], query_ids: Sequence[str],
                       depth: int = DOCUMENTS_DEPTH) -> float | None:
    """How many distinct documents the top ``depth`` results come from, averaged over
    ``query_ids`` (no results: 0). ``documents`` maps a query to its results' documents in
    rank order (the *document*, not the judged unit: a chunk's file); ``None`` when a result
    there does not name its document (``""``)."""
    counts = []
    for query_id in query_ids:
        top = documents.get(query_id, ())[:depth]
        if "" in top:
            return None
        counts.append(len(set(top)))
    return sum(counts) / len(counts) if counts else None


def run_from_ranking(ranking: Mapping[str, Sequence[str]]) -> dict[str, dict[str, float]]:
    """A run whose scores strictly decrease with rank (``n, n-1, ..., 1``)."""
    run: dict[str, dict[str, float]] = {}
    for query_id, doc_ids in ranking.items():
        if len(set(doc_ids)) != len(doc_ids):
            raise MeasureError(f"ranking for query {query_id!r} repeats a doc_id")
        run[query_id] = {d: float(len(doc_ids) - i) for i, d in enumerate(doc_ids)}
    return run


# --- validation and ordering -------------------------------------------------


def _judged_ids(qrels: Qrels, query_ids: Iterable[str] | None) -> list[str]:
    ids = qrels.keys() if query_ids is None else query_ids
    return sorted(set(ids))


def _check_qrels(qrels: Qrels, judged: Sequence[str]) -> None:
    for q in judged:
        for doc_id, rel in (qrels.get(q) or {}).items():
            if isinstance(rel, bool) or not isinstance(rel, int | np.integer) or rel < 0:
                raise MeasureError(
                    f"relevance of {doc_id!r} for query {q!r} must be a non-negative int, "
                    f"got {rel!r}"
                )


def _trec_order(results: Mapping[str, float]) -> list[str]:
    """doc ids in trec_eval's order (:func:`evals.trec.trec_order`)."""
    return [d for d, _ in trec_order([(d, float(s)) for d, s in results.items()])]


# --- the vectorised kernel ---------------------------------------------------

Array = npt.NDArray[np.float64]
Kernel = Callable[[Array, Array, int | None, int], Array]


def _floats(values: Any) -> Array:
    return np.asarray(values, dtype=np.float64)


def _success(rel: Array, ideal: Array, k: int | None, t: int) -> Array:
    return _floats((rel[:, :k] >= t).any(axis=1))


def _reciprocal_rank(rel: Array, ideal: Array, k: int | None, t: int) -> Array:
    hits = rel[:, :k] >= t
    first = hits.argmax(axis=1)
    return _floats(np.where(hits.any(axis=1), 1.0 / (first + 1.0), 0.0))


def _recall(rel: Array, ideal: Array, k: int | None, t: int) -> Array:
    found = _floats((rel[:, :k] >= t).sum(axis=1))
    total = _floats((ideal >= t).sum(axis=1))
    return _floats(np.divide(found, total, out=np.zeros_like(found), where=total > 0))


def _precision(rel: Array, ideal: Array, k: int | None, t: int) -> Array:
    if k is None:
        raise MeasureError("P needs a cutoff, e.g. P@10")
    return _floats((rel[:, :k] >= t).sum(axis=1) / float(k))


def _ndcg(rel: Array, ideal: Array, k: int | None, t: int) -> Array:
    def dcg(gains: Array) -> Array:
        top = gains[:, :k]
        return _floats((top / np.log2(np.arange(2, top.shape[1] + 2))).sum(axis=1))

    actual, best = dcg(rel), dcg(ideal)
    return _floats(np.divide(actual, best, out=np.zeros_like(actual), where=best > 0))


_KERNELS: dict[str, tuple[Kernel, frozenset[str]]] = {
    "Success": (_success, frozenset({"cutoff", "rel"})),
    "RR": (_reciprocal_rank, frozenset({"cutoff", "rel"})),
    "R": (_recall, frozenset({"cutoff", "rel"})),
    "P": (_precision, frozenset({"cutoff", "rel"})),
    "nDCG": (_ndcg, frozenset({"cutoff"})),
}


def _fast_kernel(measure: ir_measures.Measure) -> Kernel | None:
    entry = _KERNELS.get(str(measure.NAME))
    if entry is None or not set(measure.params) <= entry[1]:
        return None
    if int(measure.params.get("rel", 1)) < 1:
        return None
    return entry[0]


def _fast_per_query(
    qrels: Qrels,
    run: Run,
    judged: Sequence[str],
    measures: Sequence[tuple[ir_measures.Measure, Kernel]],
) -> PerQuery:
    _check_qrels(qrels, judged)
    rel = _ranked_relevance(qrels, run, judged)
    ideal = _ideal_relevance(qrels, judged)
    out: PerQuery = {}
    for m, kernel in measures:
        cutoff = m.params.get("cutoff")
        values = kernel(rel, ideal, cutoff, int(m.params.get("rel", 1)))
        out[str(m)] = dict(zip(judged, values.tolist(), strict=True))
    return out


def _ideal_relevance(qrels: Qrels, judged: Sequence[str]) -> Array:
    graded = [sorted((qrels.get(q) or {}).values(), reverse=True) for q in judged]
    ideal = np.zeros((len(judged), max(map(len, graded), default=0) or 1))
    for i, gains in enumerate(graded):
        ideal[i, : len(gains)] = gains
    return ideal


def _ranked_relevance(qrels: Qrels, run: Run, judged: Sequence[str]) -> Array:
    """Relevance of each query's results in rank order, zero-padded to a matrix."""
    rows = [run.get(q) or {} for q in judged]
    lens = np.fromiter(map(len, rows), np.int64, count=len(rows))
    total = int(lens.sum())
    scores = np.fromiter(chain.from_iterable(r.values() for r in rows), np.float64, total)
    if not np.isfinite(scores).all():
        raise MeasureError("run scores must be finite numbers")
    pairs = zip(judged, rows, strict=True)
    lookups = (map((qrels.get(q) or {}).get, r, repeat(0)) for q, r in pairs)
    rels = np.fromiter(chain.from_iterable(lookups), np.float64, total)
    row_idx = np.repeat(np.arange(len(rows)), lens)
    col_idx = np.arange(total) - np.repeat(np.cumsum(lens) - lens, lens)
    shape = (len(rows), max(int(lens.max(initial=0)), 1))
    score_m = np.full(shape, -np.inf)
    score_m[row_idx, col_idx] = scores
    rel_m = np.zeros(shape)
    rel_m[row_idx, col_idx] = rels
    order = np.argsort(-score_m, axis=1, kind="stable")
    ranked_scores = np.take_along_axis(score_m, order, axis=1)
    ranked = np.take_along_axis(rel_m, order, axis=1)
    tied = (ranked_scores[:, 1:] == ranked_scores[:, :-1]) & np.isfinite(ranked_scores[:, 1:])
    for i in np.flatnonzero(tied.any(axis=1)).tolist():
        judged_q = qrels.get(judged[i]) or {}
        ranked[i, : lens[i]] = [judged_q.get(d, 0) for d in _trec_order(rows[i])]
    return ranked
