"""The meta-analysis as one self-contained HTML page: the decisions table, then a forest
plot per comparison (each suite's effect and interval, the pooled estimate as a diamond, the
prediction interval for a new collection as a bar under it), then the suites read.

No network at view time and no script: inline CSS (the report's, :mod:`evals.report.assets`)
and inline SVG drawn here, under a Content-Security-Policy that allows only that style (by
hash). Suite and stage names come from reports and are escaped everywhere.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from evals.report.assets import CSS as REPORT_CSS
from evals.report.markup import e, pct, signed

CSS = REPORT_CSS + """
svg.plot .pooled{fill:var(--fg)}svg.plot .pi{stroke:var(--fg);stroke-width:6;opacity:.25}
svg.plot .sep{stroke:var(--line)}.verdict-word{font-weight:600}
svg.plot .better rect{fill:var(--good)}svg.plot .worse rect{fill:var(--bad)}
svg.plot .unclear rect{fill:var(--neutral)}
"""
VERDICT_CLASS = {"robust": "better", "helps on average": "better", "robustly worse": "worse",
                 "hurts on average": "worse"}


def _interval(low: float | None, high: float | None) -> str:
    return "—" if low is None or high is None else f"[{signed(low)}, {signed(high)}]"


def render(result: Mapping[str, Any]) -> str:
    """The whole page as a string."""
    digest = hashlib.sha256(CSS.encode("utf-8")).digest()
    policy = (f"default-src 'none'; style-src 'sha256-{base64.b64encode(digest).decode()}'; "
              "base-uri 'none'; form-action 'none'")
    body = "\n".join([_header(result), _decisions(result), _forests(result), _suites(result)])
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{e(policy)}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>groundkit evidence across collections — {e(result['measure'])}</title>\n"
        f"<style>{CSS}</style>\n</head>\n<body>\n<main>\n{body}\n</main>\n</body>\n</html>\n")


def write_html(result: Mapping[str, Any], path: str | Path) -> Path:
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(render(result), encoding="utf-8", newline="\n")
    return target


def _header(result: Mapping[str, Any]) -> str:
    pooled = sum(1 for s in result["suites"] if s["pooled"])
    return (
        "<h1>Evidence across collections</h1><dl class=\"facts\">"
        f"<dt>measure</dt><dd>{e(result['measure'])}, each stage − {e(result['baseline'])}</dd>"
        f"<dt>model</dt><dd>random effects: {e(result['method_description'])}; "
        f"{100 * result['confidence']:g}% intervals; prediction interval for a new "
        "collection with t on k − 2 degrees of freedom (Higgins, Thompson &amp; Spiegelhalter "
        "2009)</dd>"
        f"<dt>suites</dt><dd>{pooled} pooled of {len(result['suites'])} read from "
        f"{len(result['reports'])} report(s)</dd></dl>")


def _decisions(result: Mapping[str, Any]) -> str:
    rows = []
    for c in result["comparisons"]:
        p = c["pooled"] or {}
        cls = VERDICT_CLASS.get(c["verdict"], "unclear")
        cells = ([signed(p["estimate"]), _interval(p["ci_low"], p["ci_high"]),
                  f"{p['tau2']:.5f}", pct(p["i2"]), _interval(p["pi_low"], p["pi_high"])]
                 if p else ["—"] * 5)
        rows.append(f"<tr><td>{e(c['stage'])}</td><td>{c['k']}</td>"
                    + "".join(f"<td>{x}</td>" for x in cells)
                    + f'<td class="verdict-word {cls}">{e(c["verdict"])}</td></tr>')
    words = "".join(f"<dt>{e(w)}</dt><dd>{e(rule)}</dd>" for w, rule in result["verdicts"].items())
    return (
        '<section><h2>Decisions</h2><table id="decisions"><thead><tr><th>stage</th><th>k</th>'
        "<th>pooled</th><th>CI</th><th>τ²</th><th>I²</th><th>prediction interval</th>"
        f"<th>verdict</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
        f'<dl class="facts">{words}</dl></section>')


def _forests(result: Mapping[str, Any]) -> str:
    plots = "".join(forest_plot(c, result["measure"]) for c in result["comparisons"]
                    if c["suites"])
    return (
        '<section><h2>Forest plots</h2><p class="note">Each row is one suite: its mean paired '
        "difference from the baseline and its interval (the square's area is its random-"
        "effects weight). The diamond is the pooled estimate and its interval; the grey bar "
        "under it the prediction interval for a new collection.</p>"
        f'<div class="forest">{plots}</div></section>')


def forest_plot(comparison: Mapping[str, Any], measure: str) -> str:
    rows: Sequence[Mapping[str, Any]] = comparison["suites"]
    pooled = comparison["pooled"]
    left = 16 + 7 * max(len(str(r["suite"])) for r in rows)
    width, right, row_h, top = 300, 230, 22, 30
    values = [v for r in rows for v in (r["ci_low"], r["ci_high"])]
    if pooled is not None:
        values += [v for v in (pooled["pi_low"], pooled["pi_high"]) if v is not None]
    limit: float = 1.1 * max([0.01, *(abs(v) for v in values)])
    extra = 2 if pooled is not None else 0
    height = top + row_h * (len(rows) + extra) + 24

    def x(v: float) -> float:
        return round(left + (v + limit) / (2 * limit) * width, 2)

    title = f"{comparison['stage']} − {comparison['baseline']}, {measure}: {comparison['verdict']}"
    parts = [f'<text x="{left + width / 2}" y="16" class="title">{e(title)}</text>',
             f'<line x1="{x(0)}" y1="{top - 6}" x2="{x(0)}" y2="{height - 20}" class="zero"/>']
    for tick in (-limit, 0.0, limit):
        parts.append(f'<text x="{x(tick)}" y="{height - 4}" class="tick">'
                     f'{signed(tick) if tick else "0"}</text>')
    for i, r in enumerate(rows):
        y = top + row_h * i + row_h / 2
        cls = "better" if r["ci_low"] > 0 else "worse" if r["ci_high"] < 0 else "unclear"
        side = round(4 + 10 * r.get("weight", 0.0) ** 0.5, 2)
        label = f"{signed(r['effect'])} {_interval(r['ci_low'], r['ci_high'])}  n={r['n']}"
        parts.append(
            f'<g class="{cls} suite"><title>{e(r["suite"])}: {label}</title>'
            f'<text x="{left - 8}" y="{y + 4}" class="label">{e(r["suite"])}</text>'
            f'<line x1="{x(r["ci_low"])}" y1="{y}" x2="{x(r["ci_high"])}" y2="{y}" class="ci"/>'
            f'<rect x="{round(x(r["effect"]) - side / 2, 2)}" y="{round(y - side / 2, 2)}" '
            f'width="{side}" height="{side}"/>'
            f'<text x="{left + width + 10}" y="{y + 4}" class="value">{e(label)}</text></g>')
    if pooled is not None:
        parts.append(_pooled_rows(pooled, top + row_h * len(rows), row_h, left, width, x))
    total = left + width + right
    return (f'<svg class="plot" viewBox="0 0 {total} {height}" width="{total}" '
            f'height="{height}" role="img" aria-label="{e(title)}" '
            f'xmlns="http://www.w3.org/2000/svg">{"".join(parts)}</svg>')


def _pooled_rows(pooled: Mapping[str, Any], y0: float, row_h: int, left: int, width: int,
                 x: Callable[[float], float]) -> str:
    """The pooled diamond and the prediction-interval bar under it, with their labels."""
    y, y_pi = y0 + row_h / 2, y0 + row_h * 1.5
    m, lo, hi = x(pooled["estimate"]), x(pooled["ci_low"]), x(pooled["ci_high"])
    diamond = f"{lo},{y} {m},{y - 7} {hi},{y} {m},{y + 7}"
    label = f"{signed(pooled['estimate'])} {_interval(pooled['ci_low'], pooled['ci_high'])}"
    out = [f'<line x1="{left - 4}" y1="{y0}" x2="{left + width}" y2="{y0}" class="sep"/>',
           f'<g class="pooled-row"><title>pooled (k={pooled["k"]}): {label}</title>'
           f'<text x="{left - 8}" y="{y + 4}" class="label">pooled (k={pooled["k"]})</text>'
           f'<polygon points="{diamond}" class="pooled"/>'
           f'<text x="{left + width + 10}" y="{y + 4}" class="value">{label}</text></g>']
    if pooled["pi_low"] is not None:
        pi = _interval(pooled["pi_low"], pooled["pi_high"])
        out.append(f'<g class="pi-row"><title>prediction interval: {pi}</title>'
                   f'<text x="{left - 8}" y="{y_pi + 4}" class="label">new collection</text>'
                   f'<line x1="{x(pooled["pi_low"])}" y1="{y_pi}" x2="{x(pooled["pi_high"])}" '
                   f'y2="{y_pi}" class="pi"/>'
                   f'<text x="{left + width + 10}" y="{y_pi + 4}" class="value">PI {pi}</text>'
                   "</g>")
    return "".join(out)


def _suites(result: Mapping[str, Any]) -> str:
    rows = "".join(
        f"<tr><td>{e(s['name'])}</td><td>{e(s['kind'])}</td><td>{s['judged']}</td>"
        f"<td>{'pooled' if s['pooled'] else e('left out: ' + str(s['excluded']))}</td>"
        f"<td class=\"desc\">{e(s['report'])}</td></tr>" for s in result["suites"])
    return ('<section><h2>Suites</h2><table id="suites"><thead><tr><th>suite</th><th>kind</th>'
            "<th>judged</th><th>state</th><th>report</th></tr></thead>"
            f"<tbody>{rows}</tbody></table></section>")
