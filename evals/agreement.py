"""A reference engine against its groundkit counterpart, question by question.

The lucene stage runs Lucene itself over the units groundkit's ``bm25`` ranks; the
measures say whether the two *score* alike, and this block says whether they *rank*
alike: for each question, whether the top 10s are identical (same units, same order),
Kendall's τ-b of the two engines' scores over the union of their top 10s, and, where
they differ, why:

- ``analysis``: Lucene analysed the query into other terms than groundkit's analyzer;
- ``ties``: every place the lists differ swaps units whose scores tie, in one engine or
  the other, to float32 precision (Lucene scores in float32, groundkit in float64);
- ``statistics``: scores differ beyond that, and some units' text is analysed into other
  terms by the two engines (``units_analysed_differently``), so the collection's
  statistics differ: the average unit length (``indexed_terms``), and with it every
  score's length normalisation, moves a little, and so do those terms' frequencies;
- ``scores``: scores differ beyond float precision with the same token count: document
  length norms, or a term's frequency in a unit.

Scores below the top 10 come from the next :data:`DEPTH` - 10 hits, so a unit that
drops to rank 11 still has a score to compare.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from scipy import stats as sps

from evals import report as rpt

TOP = 10
DEPTH = 20
"""Hits per question the agreement reads (the parent keeps at least these)."""
TIE = 1e-5
"""Relative score difference within which two units tie (float32 sums of a few terms)."""
SHOWN = 20
"""Differing questions listed in the block, the first by query id."""
REASONS = ("analysis", "ties", "statistics", "scores")


def compare(stages: Sequence[rpt.StageResult], pairs: Mapping[str, str],
            questions: Sequence[rpt.Question]) -> dict[str, Any]:
    """Each reference stage in ``pairs`` (name -> counterpart) against its counterpart."""
    by_name = {s.name: s for s in stages}
    text = {q.query_id: q.text for q in questions}
    block: dict[str, Any] = {}
    for name, other in pairs.items():
        if name not in by_name or other not in by_name:
            continue
        mine, theirs = by_name[name], by_name[other]
        analysis = mine.config.get("query_analysis", {})
        terms = mine.config.get("indexed_terms", {})
        units = mine.config.get("units_analysed_differently", {}).get("count", 0)
        statistics = "statistics" if len(set(terms.values())) > 1 or units else "scores"
        rows = [_question(qid, theirs.hits.get(qid, []), hits, analysis.get(text[qid]),
                          statistics) for qid, hits in sorted(mine.hits.items())]
        block[name] = {**_summary(other, rows), "indexed_terms": dict(terms),
                       "units_analysed_differently": dict(mine.config.get(
                           "units_analysed_differently", {"count": 0, "examples": []}))}
    return block


def _question(qid: str, ours: Sequence[rpt.HitRecord], peers: Sequence[rpt.HitRecord],
              analysis: Mapping[str, list[str]] | None, scores: str) -> dict[str, Any]:
    """One question: identical top 10s, τ-b, and if they differ, where and why."""
    a = [h.chunk_id for h in ours[:TOP]]
    b = [h.chunk_id for h in peers[:TOP]]
    g = {h.chunk_id: h.score for h in ours[:DEPTH]}
    lu = {h.chunk_id: h.score for h in peers[:DEPTH]}
    union = list(dict.fromkeys(a + b))
    row: dict[str, Any] = {"query_id": qid, "identical": a == b, "same_set": set(a) == set(b),
                           "tau": _tau([g.get(u, 0.0) for u in union],
                                       [lu.get(u, 0.0) for u in union])}
    if a != b:
        rank = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y),
                    min(len(a), len(b)))
        row.update(first_rank=rank + 1, reason=_reason(a, b, g, lu, analysis) or scores,
                   groundkit=[[u, g.get(u)] for u in a[rank:rank + 2]],
                   lucene=[[u, lu.get(u)] for u in b[rank:rank + 2]])
        if analysis is not None:
            row["terms"] = dict(analysis)
    return row


def _tau(x: list[float], y: list[float]) -> float | None:
    """Kendall's τ-b of two score lists (``None`` where it is undefined: under two units,
    or every score tied on one side)."""
    if len(x) < 2:
        return None if not x else 1.0
    tau = sps.kendalltau(x, y).statistic
    return None if tau != tau else round(float(tau), 6)  # NaN: all tied


def _reason(a: list[str], b: list[str], g: Mapping[str, float], lu: Mapping[str, float],
            analysis: Mapping[str, list[str]] | None) -> str | None:
    """``analysis`` or ``ties``; ``None`` when scores differ beyond float precision."""
    if analysis is not None:
        return "analysis"
    for x, y in zip(a, b, strict=False):
        if x != y and not (_ties(g, x, y) or _ties(lu, x, y)):
            return None
    return "ties" if len(a) == len(b) else None


def _ties(scores: Mapping[str, float], x: str, y: str) -> bool:
    if x not in scores or y not in scores:
        return False
    sx, sy = scores[x], scores[y]
    return abs(sx - sy) <= TIE * max(abs(sx), abs(sy), 1e-12)


def _summary(other: str, rows: list[dict[str, Any]]) -> dict[str, Any]:
    n = len(rows)
    taus = [r["tau"] for r in rows if r["tau"] is not None]
    differing = [r for r in rows if not r["identical"]]
    reasons = Counter(r["reason"] for r in differing)
    return {"counterpart": other, "questions": n,
            "identical_top10": sum(r["identical"] for r in rows),
            "identical_share": round(sum(r["identical"] for r in rows) / n, 6) if n else None,
            "same_set_top10": sum(r["same_set"] for r in rows),
            "tau_mean": round(sum(taus) / len(taus), 6) if taus else None,
            "tau_min": min(taus) if taus else None,
            "reasons": {reason: reasons.get(reason, 0) for reason in REASONS},
            "differing": differing[:SHOWN]}


TARGETS = {"identical_share": 0.95, "ndcg10_delta": 0.002}
"""Identical top 10s on at least 95% of the questions; nDCG@10 within ±0.002."""


def with_targets(block: Mapping[str, Any], deltas: Mapping[str, float]) -> dict[str, Any]:
    """``block`` with each stage's targets, observed and met or not (``deltas``: each
    stage's nDCG@10 delta against the baseline, from the report's comparisons). The
    targets are reported, not gated: the pinned values (``agreement.*`` in
    ``evals/expected``) catch a change; a missed target is explained in
    docs/external-benchmarks.md."""
    out = {}
    for name, entry in block.items():
        share, delta = entry["identical_share"], deltas.get(name)
        out[name] = {**entry, "targets": {
            "identical_share": {"target": f">= {TARGETS['identical_share']}",
                                "observed": share,
                                "met": share is not None
                                and share >= TARGETS["identical_share"]},
            "ndcg10_delta": {"target": f"within ±{TARGETS['ndcg10_delta']}",
                             "observed": delta,
                             "met": delta is not None
                             and abs(delta) <= TARGETS["ndcg10_delta"] + 1e-12}}}
    return out
