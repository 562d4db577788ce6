"""A measure a stage cannot reach is not a loss.

A stage may rank less deep than its suite asks: an MCP stage ranks its ``top_k`` (10,
:data:`evals.mcp_stage.MAX_TOP_K`), a run file as deep as its deepest list. It declares so
(:attr:`evals.harness.StageRun.depth`, recorded as :attr:`~evals.report.model.StageResult.depth`),
and a measure that reads a deeper ranking (``R@100`` of a stage ranking 10 deep; a measure
without a cut-off reads the suite's whole depth) is *unreachable* for it: the report shows
``"n/a (ranks 10 deep)"`` instead of its value (``null`` in the JSON, with the stage's
``unreachable`` map saying why), and its comparison with the baseline has no delta,
interval or p-value and is out of the Holm family (:class:`evals.score.stats.Unreached`).
The depth is declared, never guessed from the hits a question got: a stage may return fewer
hits for a question (BM25 abstains when no term matches) and still rank the suite's depth.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import ir_measures

from evals.score import metrics, stats


def needed_depth(measure: str) -> int | None:
    """How deep a ranking ``measure`` reads: its cut-off (``R@100``: 100, ``nDCG@10``: 10);
    ``None`` for a measure without one (it reads the whole ranking, the suite's depth)."""
    cutoff = ir_measures.parse_measure(metrics.canonical_measure(measure)).params.get("cutoff")
    return None if cutoff is None else int(cutoff)


def unreachable(depth: int | None, measures: Iterable[str]) -> dict[str, str]:
    """The measures a stage ranking ``depth`` deep cannot reach, each with the text a report
    shows instead of its value (``"n/a (ranks 10 deep)"``); empty for a stage that ranks as
    deep as the suite (``depth`` ``None``)."""
    if depth is None:
        return {}
    return {m: f"n/a (ranks {depth} deep)" for m in measures
            if (need := needed_depth(m)) is None or need > depth}


def blanked(values: Mapping[str, Any], missing: Mapping[str, str]) -> dict[str, Any]:
    """``values`` (measure -> value) with each unreachable measure's value ``None``."""
    return {m: None if m in missing else v for m, v in values.items()}


def declared(depth: int | None, missing: Mapping[str, str]) -> dict[str, Any]:
    """What a stage's report block adds: its ``depth`` when it declares one, and the
    ``unreachable`` measures (measure -> n/a text) when there are any."""
    return {**({"depth": depth} if depth is not None else {}),
            **({"unreachable": dict(missing)} if missing else {})}


def blanked_breakdowns(breakdowns: dict[str, Any],
                       missing: Mapping[str, Mapping[str, str]]) -> dict[str, Any]:
    """The breakdowns (axis -> group -> stages -> measure -> mean) with each stage's
    unreachable measures ``None``; ``missing`` maps a stage to them."""
    for groups in breakdowns.values():
        for entry in groups.values():
            entry["stages"] = {name: blanked(means, missing.get(name, {}))
                               for name, means in entry["stages"].items()}
    return breakdowns


def unreached(n: int, baseline_mean: float | None, stage_mean: float | None, confidence: float,
              reason: str) -> stats.Unreached:
    """The comparison not made on a measure one side cannot reach (its mean ``None``)."""
    return stats.Unreached(n=n, baseline_mean=baseline_mean, stage_mean=stage_mean,
                           confidence=confidence, unreachable=reason)
