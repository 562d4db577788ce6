"""The report's breakdowns: each stage's per-question scores averaged by question kind, by
trait and (when questions have one) by domain, over the judged questions."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from evals.score import metrics

from .model import Question


def breakdowns(by_id: Mapping[str, Question], judged: list[str],
               scores: Mapping[str, Any]) -> dict[str, Any]:
    """Per-question scores grouped by kind, by trait and (when questions have one) by domain."""
    out = {
        "kind": _group(by_id, judged, scores, lambda q: (q.kind,)),
        "trait": _group(by_id, judged, scores, lambda q: q.traits),
    }
    if any(q.domain for q in by_id.values()):
        out["domain"] = _group(by_id, judged, scores, lambda q: (q.domain,))
    return out


def _group(
    by_id: Mapping[str, Question],
    judged: list[str],
    scores: Mapping[str, metrics.PerQuery],
    groups_of: Callable[[Question], Iterable[str]],
) -> dict[str, Any]:
    members: dict[str, list[str]] = {}
    for query_id in judged:
        for group in groups_of(by_id[query_id]):
            members.setdefault(group, []).append(query_id)
    return {
        group: {
            "n": len(ids),
            "stages": {
                stage: {m: sum(per[m][q] for q in ids) / len(ids) for m in per}
                for stage, per in scores.items()
            },
        }
        for group, ids in members.items()
    }
