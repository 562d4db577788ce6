"""Expected-score gates, in the spirit of Anserini's regression configs.

``evals/expected/<name>.json`` pins the values a report must reproduce::

    {"manifest_sha256": "...",           # what the values were measured on
     "source": "make eval, 2026-11-30",  # how they were produced
     "stages": {"bm25": {"nDCG@10": {"value": 0.71, "tolerance": 0.005}, ...}}}

Besides every stage's metrics (not one it ranks too shallow for, which is n/a and not
pinned: :mod:`evals.report.reach`), distinct documents in the top 10
(``distinct_documents@10``) and abstention counts, a report with a ``gate``
block pins each gated stage's abstention gate at alpha 0.1 (``gate.*``: its
AUROC, false-answer rate and coverage on the test part, their re-split means,
excess AURC), and the baseline stage carries the extractive answer stages
(``answers.*``: answer success, citation precision, no-answer questions answered,
with and without the gate, and on golden v4's conflict questions the share that shows
the disagreement and leads with the current source; per mode, ``answers.<mode>.*``, on
the stage whose collection answered); on golden v3 on, each twinned stage's two-formats values
(``twins.markdown.*``, ``twins.html.*``, ``twins.delta.*``); a reference engine with an
agreement block, its share of identical top 10s and mean τ (``agreement.*``). A metric outside
``value ± tolerance`` fails the run
loudly. Values are written by ``python -m evals expect`` from a report, never by
hand, and changing them is a deliberate commit.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from evals.score import abstention
from evals.score.metrics import DOCUMENTS
from groundkit.errors import GroundkitError

DEFAULT_TOLERANCE = 0.005
GATE_ALPHA = 0.1


class GateFailure(GroundkitError, AssertionError):
    """A metric left its expected band."""

    exit_code = 8


def check(report: Mapping[str, Any], expected: Mapping[str, Any]) -> list[str]:
    """Every way ``report`` misses ``expected``, one line each; empty when all pass."""
    failures = []
    want_manifest = expected.get("manifest_sha256")
    have_manifest = report.get("golden", {}).get("manifest_sha256")
    if want_manifest and have_manifest and want_manifest != have_manifest:
        failures.append(f"expected values were measured on manifest {want_manifest[:12]}…, "
                        f"this report on {have_manifest[:12]}…")
    stages = {s["name"]: s for s in report["stages"]}
    for stage_name, measures in expected.get("stages", {}).items():
        stage = stages.get(stage_name)
        if stage is None:
            continue  # not run this time; gates apply to what ran
        observed = _observed(report, stage)
        for measure, band in measures.items():
            if measure in stage.get("unreachable", {}):
                continue  # n/a: the stage ranks too shallow for it (evals.report.reach)
            if measure not in observed:
                if measure.startswith("twins.") and "twins" not in report:
                    continue  # the two-formats run was skipped on purpose (--no-twins)
                failures.append(f"{stage_name}: {measure} is not in the report")
                continue
            value, tol = float(band["value"]), float(band["tolerance"])
            got = float(observed[measure])
            if abs(got - value) > tol + 1e-12:
                failures.append(f"{stage_name}: {measure} = {got:.4f}, expected {value:.4f} "
                                f"± {tol:g}")
    return failures


def _observed(report: Mapping[str, Any], stage: Mapping[str, Any]) -> dict[str, float]:
    """A stage's pinnable values: metrics, distinct documents in the top 10, abstention
    counts and its gate at alpha 0.1."""
    out = {**{m: v for m, v in stage["metrics"].items() if v is not None},  # None: n/a
           **{f"abstention.{k}": v for k, v in stage["abstention"].items()}}
    if DOCUMENTS in stage:
        out[DOCUMENTS] = stage[DOCUMENTS]
    gated = report.get("gate", {}).get("stages", {}).get(stage["name"])
    if gated is not None:
        scorer = gated["scorers"][abstention.default_label(gated["mode"])]
        shipped = scorer["shipped"]
        at = next(r for r in shipped["at_alpha"] if r["alpha"] == GATE_ALPHA)
        band = next(r for r in scorer["resplits"]["at_alpha"] if r["alpha"] == GATE_ALPHA)
        values = {"auroc": shipped["auroc"], "auroc_near_miss": shipped.get("auroc_near_miss"),
                  "excess_aurc": shipped["excess_aurc"],
                  "false_answer_rate": at["false_answer_rate"],
                  "coverage_retrieved": at["coverage_retrieved"],
                  "resplit_false_answer_rate": band["false_answer_rate_mean"],
                  "resplit_coverage_retrieved": band["coverage_retrieved_mean"]}
        out.update({f"gate.{k}": v for k, v in values.items() if v is not None})
    answers = report.get("answers", {}).get("extractive")
    if answers is not None and stage["name"] == report.get("baseline"):
        for part in ("all", "gate", "conflicts", "furniture"):
            if answers.get(part):
                out.update({f"answers.{part}.{k}": v for k, v in answers[part].items()
                            if isinstance(v, int | float) and not isinstance(v, bool)})
    for mode, part in (answers or {}).get("by_mode", {}).items():
        if part.get("stage") == stage["name"]:  # pinned on the stage whose collection answered
            out.update({f"answers.{mode}.{k}": v for k, v in part.items()
                        if isinstance(v, int | float) and not isinstance(v, bool)})
    agrees = report.get("agreement", {}).get(stage["name"])
    if agrees is not None:  # a reference engine against its counterpart (evals.agreement)
        out.update({f"agreement.{k}": agrees[k] for k in ("identical_share", "tau_mean")
                    if agrees[k] is not None})
    twins = report.get("twins", {}).get("stages", {}).get(stage["name"])
    if twins is not None:
        for side in ("markdown", "html"):
            out.update({f"twins.{side}.{m}": v for m, v in twins[side].items()})
        out.update({f"twins.delta.{m}": d["delta"] for m, d in twins["delta"].items()})
    return out


def checked_stages(expected: Mapping[str, Any]) -> list[str]:
    return sorted(expected.get("stages", {}))


def expected_from(report: Mapping[str, Any], *, tolerance: float = DEFAULT_TOLERANCE,
                  source: str = "") -> dict[str, Any]:
    """Expected values for every stage and measure of ``report`` (abstention exact)."""
    stages: dict[str, Any] = {}
    for stage in report["stages"]:
        stages[stage["name"]] = {
            m: {"value": v, "tolerance": 0 if m.startswith("abstention.") else tolerance}
            for m, v in _observed(report, stage).items()}
    return {"manifest_sha256": report.get("golden", {}).get("manifest_sha256"),
            "source": source, "stages": stages}


def load(path: str | Path, *, table: str = "stages",
         what: str = "expected values") -> dict[str, Any]:
    """A pinned file: a JSON object whose ``table`` is an object (``GroundkitError`` if not)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise GroundkitError(f"cannot read {what} {path}: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get(table), dict):
        raise GroundkitError(f"{path}: {what} need a '{table}' object")
    return data


def write(path: str | Path, expected: Mapping[str, Any]) -> Path:
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(expected, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return target
