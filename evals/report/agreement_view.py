"""The agreement block (:mod:`evals.agreement`) in the run summary and the HTML report."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .markup import e

Report = Mapping[str, Any]


def _reasons(entry: Mapping[str, Any]) -> str:
    shown = [f"{reason} {n}" for reason, n in entry["reasons"].items() if n]
    return ", ".join(shown) if shown else "none"


LABELS = {"identical_share": "identical top 10", "ndcg10_delta": "nDCG@10 delta"}


def _missed(name: str, target: Mapping[str, Any]) -> str:
    """A missed target: what was observed, and what was asked."""
    observed = target["observed"]
    shown = ("not measured" if observed is None
             else f"{observed:+.4f}" if name == "ndcg10_delta" else f"{observed:.1%}")
    return f"{LABELS.get(name, name)} {shown} ({target['target']})"


def _targets(entry: Mapping[str, Any]) -> str:
    missed = [_missed(name, t) for name, t in entry["targets"].items() if not t["met"]]
    return "targets met" if not missed else "target missed: " + ", ".join(missed)


def agreement_lines(report: Report) -> list[str]:
    """One line per reference engine: identical top 10s, τ, why the others differ."""
    block = report.get("agreement")
    if not block:
        return []
    lines = ["\nreference engines against their counterpart (top 10, question by question):"]
    for name, b in block.items():
        tau = "—" if b["tau_mean"] is None else f"{b['tau_mean']:.4f}"
        lines.append(f"  {name:<14} identical top 10 {b['identical_top10']}/{b['questions']} "
                     f"as {b['counterpart']}, same units {b['same_set_top10']}, mean tau {tau}; "
                     f"differing: {_reasons(b)}; units analysed differently "
                     f"{b['units_analysed_differently']['count']}; {_targets(b)}")
    return lines


def agreement_section(report: Report) -> str:
    block = report.get("agreement")
    if not block:
        return ""
    rows = []
    for name, b in block.items():
        terms = b["indexed_terms"]
        tokens = " / ".join(f"{k} {v:,}" for k, v in sorted(terms.items()))
        tau = "—" if b["tau_mean"] is None else f"{b['tau_mean']:.4f}"
        rows.append(f'<tr><th scope="row">{e(name)}</th><td>{e(b["counterpart"])}</td>'
                    f"<td>{b['identical_top10']}/{b['questions']}</td>"
                    f"<td>{b['same_set_top10']}</td><td>{tau}</td><td>{e(_reasons(b))}</td>"
                    f"<td>{e(tokens)}</td><td>{b['units_analysed_differently']['count']}</td>"
                    f"<td>{e(_targets(b))}</td></tr>")
    head = "".join(f'<th scope="col">{h}</th>' for h in (
        "stage", "counterpart", "identical top 10", "same units in top 10", "mean Kendall τ",
        "differing questions, by reason", "tokens indexed", "units analysed differently",
        "targets"))
    return ('<section id="agreement"><h2>Reference engines, question by question</h2>'
            '<p class="note">Each reference engine ranks the same units as its groundkit '
            "counterpart; a differing question is put down to query analysis, float32 ties, "
            "collection statistics (the engines indexed different token counts) or scores. "
            "Targets: identical top 10 on at least 95% of questions, nDCG@10 within ±0.002."
            "</p>"
            f'<table id="agreement-table"><thead><tr>{head}</tr></thead><tbody>'
            f'{"".join(rows)}</tbody></table></section>')
