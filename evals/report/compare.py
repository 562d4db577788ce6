"""Compare any two saved reports: ``python -m evals compare A.json B.json``.

Each stage of report B is compared with a stage of report A (by default the
stage of the same name) on every measure both reports carry, paired by query id
over the judged questions both hold, with the same statistics as a report:
percentile bootstrap interval of the mean difference ``B - A``, paired
randomisation test, Holm adjustment across every comparison printed, and
wins/ties/losses (a *win* is a question where B scores higher). A measure either stage
ranks too shallow for (its report's ``unreachable``, :mod:`evals.report.reach`) is not
compared: its row says why and has no delta, interval or p-value, and it is not in the
Holm family.

Exit codes: 0 success; 2 bad arguments; otherwise the ``exit_code`` of the
:class:`groundkit.errors.GroundkitError` raised (e.g. 1 for an unreadable or
invalid report).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from evals.report import ReportError, canonical, load_json, reach
from evals.score import stats


def compare_runs(
    path_a: str | Path,
    path_b: str | Path,
    *,
    pairs: Sequence[tuple[str, str]] | None = None,
    measures: Sequence[str] | None = None,
    resamples: int = 10_000,
    permutations: int = 10_000,
    confidence: float = 0.95,
    seed: int = 0,
    domains: Sequence[str] | None = None,
) -> dict[str, Any]:
    """The comparison of B against A as a canonical dict (see the module doc);
    ``domains`` keeps only the questions of those golden domains (in report A)."""
    a, b = load_json(path_a), load_json(path_b)
    pairs = list(pairs) if pairs else _same_named_stages(a, b)
    measures = list(measures) if measures else [m for m in a["measures"] if m in b["measures"]]
    scores_a, scores_b = _question_scores(a), _question_scores(b)
    paired = sorted(scores_a.keys() & scores_b.keys())
    if domains:
        paired = [q for q in paired if q in _in_domains(a, domains)]
    if not paired:
        raise ReportError("the two reports share no judged question: nothing to pair")
    settings = {
        "resamples": resamples,
        "permutations": permutations,
        "confidence": confidence,
        "seed": seed,
    }
    missing = (_unreachable(a), _unreachable(b))
    comparisons = _compare_pairs(scores_a, scores_b, paired, pairs, measures, settings, missing)
    outcome = {
        "a": _describe(path_a, a),
        "b": _describe(path_b, b),
        "warnings": _warnings(a, b),
        "questions": {
            "paired": len(paired),
            "only_a": sorted(scores_a.keys() - scores_b.keys()),
            "only_b": sorted(scores_b.keys() - scores_a.keys()),
        },
        "statistics": settings,
        "domains": sorted(domains) if domains else None,
        "comparisons": comparisons,
    }
    result: dict[str, Any] = canonical(outcome)
    return result


def _in_domains(report: dict[str, Any], domains: Sequence[str]) -> set[str]:
    """The ids of ``report``'s questions in ``domains``; ``ReportError`` for a domain it
    has no question in (a typo would otherwise compare nothing, or everything)."""
    known = {q.get("domain", "") for q in report["questions"]}
    unknown = sorted(set(domains) - known)
    if unknown:
        raise ReportError(f"report A has no question in domain(s) {', '.join(unknown)}; "
                          f"its domains: {', '.join(sorted(known - {''})) or 'none'}")
    return {q["query_id"] for q in report["questions"] if q.get("domain") in set(domains)}


def _compare_pairs(
    scores_a: dict[str, dict[str, dict[str, float]]],
    scores_b: dict[str, dict[str, dict[str, float]]],
    paired: list[str],
    pairs: Sequence[tuple[str, str]],
    measures: Sequence[str],
    settings: dict[str, Any],
    missing: tuple[dict[str, dict[str, str]], dict[str, dict[str, str]]],
) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    results: list[stats.Comparison | stats.Unreached] = []
    for stage_a, stage_b in pairs:
        for measure in measures:
            rows.append({"stage_a": stage_a, "stage_b": stage_b, "measure": measure})
            gone = (missing[0].get(stage_a, {}).get(measure),
                    missing[1].get(stage_b, {}).get(measure))
            columns = [None if why else _column(scores, paired, stage, measure, side)
                       for scores, stage, side, why in ((scores_a, stage_a, "A", gone[0]),
                                                        (scores_b, stage_b, "B", gone[1]))]
            if columns[0] is None or columns[1] is None:
                means = [None if c is None else sum(c.values()) / len(c) for c in columns]
                results.append(reach.unreached(len(paired), means[0], means[1],
                                               settings["confidence"], gone[0] or gone[1] or ""))
            else:
                results.append(stats.compare(columns[0], columns[1], **settings))
    return [
        {**row, **_renamed(asdict(result))}
        for row, result in zip(rows, stats.apply_holm(results), strict=True)
    ]


def _unreachable(report: dict[str, Any]) -> dict[str, dict[str, str]]:
    """Each stage's measures it ranks too shallow for (stage -> measure -> n/a text)."""
    return {s["name"]: s.get("unreachable", {}) for s in report["stages"]}


def _same_named_stages(a: dict[str, Any], b: dict[str, Any]) -> list[tuple[str, str]]:
    names_b = {s["name"] for s in b["stages"]}
    common = [(s["name"], s["name"]) for s in a["stages"] if s["name"] in names_b]
    if not common:
        raise ReportError("the reports share no stage name; pass --pair A_STAGE:B_STAGE")
    return common


def _question_scores(report: dict[str, Any]) -> dict[str, dict[str, dict[str, float]]]:
    """query_id -> stage -> measure -> score, for judged questions."""
    return {
        q["query_id"]: {name: s["scores"] for name, s in q["stages"].items()}
        for q in report["questions"]
        if q["judged"]
    }


def _column(
    scores: dict[str, dict[str, dict[str, float]]],
    paired: list[str],
    stage: str,
    measure: str,
    side: str,
) -> dict[str, float]:
    try:
        return {q: scores[q][stage][measure] for q in paired}
    except KeyError as exc:
        raise ReportError(f"report {side} has no {measure} scores for stage {stage!r}") from exc


def _renamed(fields: dict[str, Any]) -> dict[str, Any]:
    fields["mean_a"] = fields.pop("baseline_mean")
    fields["mean_b"] = fields.pop("stage_mean")
    return fields


def _describe(path: str | Path, report: dict[str, Any]) -> dict[str, Any]:
    return {
        "path": str(path),
        "created_at": report["run"].get("created_at"),
        "golden": report["golden"],
        "groundkit": report["groundkit"],
    }


def _warnings(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    warnings = []
    if a["golden"] != b["golden"]:
        warnings.append("the reports were made on different golden corpora (version or manifest)")
    texts_a = {q["query_id"]: q["text"] for q in a["questions"]}
    changed = sorted(
        q["query_id"] for q in b["questions"] if texts_a.get(q["query_id"], q["text"]) != q["text"]
    )
    if changed:
        warnings.append(f"{len(changed)} paired question(s) changed wording, e.g. {changed[:3]}")
    return warnings


def format_table(outcome: dict[str, Any]) -> str:
    """A plain-text rendering of :func:`compare_runs`' result."""
    lines = [
        f"A: {_label(outcome['a'])}",
        f"B: {_label(outcome['b'])}",
        f"paired questions: {outcome['questions']['paired']} "
        f"(only in A: {len(outcome['questions']['only_a'])}, "
        f"only in B: {len(outcome['questions']['only_b'])})",
        *(f"warning: {w}" for w in outcome["warnings"]),
        "",
        f"{'A -> B':<24} {'measure':<12} {'mean A':>8} {'mean B':>8} {'delta':>8} "
        f"{'CI':>20} {'p':>7} {'p_holm':>7}  W/T/L",
    ]
    for c in outcome["comparisons"]:
        pair = f"{c['stage_a']} -> {c['stage_b']}"
        if c.get("unreachable"):
            means = [" " * 8 if v is None else f"{v:>8.3f}" for v in (c["mean_a"], c["mean_b"])]
            lines.append(f"{pair:<24} {c['measure']:<12} {means[0]} {means[1]} "
                         f"{c['unreachable']:>29}")
            continue
        ci = f"[{c['ci_low']:+.3f}, {c['ci_high']:+.3f}]"
        lines.append(
            f"{pair:<24} {c['measure']:<12} {c['mean_a']:>8.3f} {c['mean_b']:>8.3f} "
            f"{c['delta']:>+8.3f} {ci:>20} {c['p_value']:>7.4f} {c['p_holm']:>7.4f}  "
            f"{c['wins']}/{c['ties']}/{c['losses']}"
        )
    return "\n".join(lines) + "\n"


def _label(side: dict[str, Any]) -> str:
    golden, kit = side["golden"], side["groundkit"]
    commit = (kit["git_commit"] or "unknown")[:12]
    return (
        f"{side['path']} (golden {golden['version']} {golden['manifest_sha256'][:12]}, "
        f"groundkit {kit['version']} {commit}, {side['created_at']})"
    )
