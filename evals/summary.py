"""The plain-text summary of a report that ``python -m evals run`` prints: one row per
stage (metrics with delta and interval against the baseline, distinct documents in the top
10, abstention), then the abstention gate, the extractive answers, the MCP stages, the
stages not run and the checks."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from evals.report.agreement_view import agreement_lines
from evals.score import abstention
from evals.score.metrics import DOCUMENTS


def gate_lines(report: Mapping[str, Any], alpha: float = 0.1) -> list[str]:
    """One line per gated stage: its abstention gate at ``alpha`` on the test part."""
    gated = report.get("gate", {}).get("stages", {})
    if not gated:
        return []
    lines = [f"\nabstention gate at alpha {alpha:g} (test part; re-split means over "
             f"{report['gate']['resplits']}):"]
    width = max(len(name) for name in gated) + 1
    for name, stage in gated.items():
        scorer = stage["scorers"][abstention.default_label(stage["mode"])]
        at = next(r for r in scorer["shipped"]["at_alpha"] if r["alpha"] == alpha)
        band = next(r for r in scorer["resplits"]["at_alpha"] if r["alpha"] == alpha)
        low, high = at["false_answer_interval"]
        lines.append(f"  {name:<{width}} AUROC {scorer['shipped']['auroc']:.3f}  false answers "
                     f"{at['false_answer_rate']:.1%} [{low:.1%}, {high:.1%}] (re-splits "
                     f"{band['false_answer_rate_mean']:.1%})  coverage "
                     f"{at['coverage_retrieved']:.1%} (re-splits "
                     f"{band['coverage_retrieved_mean']:.1%})")
    return lines


def answer_lines(report: Mapping[str, Any]) -> list[str]:
    """The extractive answer stages, without and with the gate."""
    block = report.get("answers")
    if not block:
        return []
    lines = [f"\ngrk ask, extractive ({block['extractive']['mode']}, top "
             f"{block['extractive']['top_k']} passages):"]
    for label, part in (("every question", block["extractive"]["all"]),
                        ("test part, gate on", block["extractive"]["gate"])):
        if part:
            lines.append(f"  {label:<20} answer success {_share(part['answer_success'])}  "
                         f"citation precision {_share(part['citation_precision'])}  "
                         f"no-answer questions answered {_share(part['no_answer_answered'])}")
    for mode, part in block["extractive"].get("by_mode", {}).items():
        if not part["measured"]:
            lines.append(f"  {mode + ', test part':<20} {part['reason']}")
            continue
        lines.append(f"  {mode + ', test part':<20} answer success "
                     f"{_share(part['answer_success'])}  citation precision "
                     f"{_share(part['citation_precision'])}  kept {_share(part['kept'])} of "
                     f"the {_share(part['retrieved_top5'])} found in the top 5  duplicate "
                     f"citations {part['duplicate_citations']}")
    lines.append(f"  answers by a language model: {block['llm']['reason']}"
                 if not block["llm"]["measured"] else "  answers by a language model: measured")
    return lines


def mcp_lines(report: Mapping[str, Any]) -> list[str]:
    """Each MCP stage: questions ranked as its twin ranks them, and latency per call."""
    block = report.get("mcp")
    if not block:
        return []
    timings = report["run"].get("mcp_latency_ms", {})
    lines = ["\nthrough grk serve (top 10, compared with the direct twin):"]
    for name, b in block.items():
        t = timings.get(name) or {}
        lines.append(f"  {name:<18} {b['questions'] - b['differing']}/{b['questions']} "
                     f"questions as {b['twin']}  per call p50 {t.get('p50')} ms, "
                     f"p99 {t.get('p99')} ms")
    return lines


def twins_lines(report: Mapping[str, Any]) -> list[str]:
    """Same content, two formats (golden v3 on): each stage from HTML against Markdown."""
    block = report.get("twins")
    if not block:
        return []
    lines = [f"\nsame content, two formats ({block['documents']} documents, "
             f"{block['questions']} questions; html - markdown, paired):"]
    for name, row in block["stages"].items():
        d = row["delta"]["nDCG@10"]
        lines.append(f"  {name:<14} nDCG@10 markdown {row['markdown']['nDCG@10']:.3f}  html "
                     f"{row['html']['nDCG@10']:.3f}  delta {d['delta']:+.3f} "
                     f"[{d['ci_low']:+.3f},{d['ci_high']:+.3f}]")
    if block["left_out"]:
        lines.append("  left out: " + "; ".join(f"{n} ({reason})"
                                                for reason, n in block["left_out"].items()))
    return lines


def _share(value: float | None) -> str:
    return "—" if value is None else f"{value:.1%}"


def _cell(stage: Mapping[str, Any], measure: str, c: Mapping[str, Any] | None) -> str:
    """A stage's value on ``measure`` with its delta and interval against the baseline; the
    n/a text where the stage ranks too shallow for it, and no delta where either side does."""
    value = stage["metrics"][measure]
    if value is None:
        return str(stage.get("unreachable", {}).get(measure, "n/a"))
    if c is None or c.get("unreachable"):
        return f"{value:.3f}"
    return f"{value:.3f}  {c['delta']:+.3f} [{c['ci_low']:+.3f},{c['ci_high']:+.3f}]"


def summary_table(report: Mapping[str, Any], measures: Sequence[str] | None = None) -> str:
    """A plain-text table: one row per stage, metrics with delta and interval vs baseline."""
    measures = list(measures or report["measures"])
    comps = {(c["stage"], c["measure"]): c for c in report["comparisons"]}
    width = max([18, *(len(s["name"]) + 1 for s in report["stages"])])
    head = (f"{'stage':<{width}}" + "".join(f"{m:>30}" for m in measures) + f"{'docs@10':>9}"
            + f"{'abstained':>12}")
    lines = [head, "-" * len(head)]
    for stage in report["stages"]:
        cells = [_cell(stage, m, comps.get((stage["name"], m))) for m in measures]
        ab = stage["abstention"]
        docs = stage.get(DOCUMENTS)
        lines.append(f"{stage['name']:<{width}}" + "".join(f"{cell:>30}" for cell in cells)
                     + (f"{docs:>9.2f}" if docs is not None else f"{'—':>9}")
                     + f"{ab['no_answer_abstained']:>8}/{ab['no_answer_total']:<3}")
    lines.append("cells: value  delta vs baseline [95% bootstrap CI]; n/a (ranks N deep): the "
                 "stage ranks too shallow for the measure (not compared); docs@10: distinct "
                 "documents in the top 10 (mean); abstained: no-answer questions answered with "
                 "nothing")
    lines += gate_lines(report)
    lines += answer_lines(report)
    lines += mcp_lines(report)
    lines += agreement_lines(report)
    lines += twins_lines(report)
    skipped = report["config"].get("skipped_stages", {})
    lines += ["\nstages not run:"] * bool(skipped)
    lines += [f"  {name}: {reason}" for name, reason in skipped.items()]
    for c in report["config"].get("checks", []):
        got = "n/a" if c["observed"] is None else f"{c['observed']:.4f}"
        lines.append(f"  [{'pass' if c['passed'] else 'FAIL'}] {c['kind']}: {c['stage']} "
                     f"{c['measure']} = {got} vs {c['expected']:.4f} ± {c['tolerance']:g}")
    return "\n".join(lines)
