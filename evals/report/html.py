"""Render a report JSON to one self-contained HTML page that works offline.

No network at view time: inline CSS, inline SVG plots drawn here, and a little
vanilla JavaScript for the drill-down (the filter, and each question's body
built from an inline JSON data block when it is opened). A Content-Security-Policy
forbids every external load and allows only this module's own style and script
(by hash), so even text that escaped escaping could not run. All report text is
untrusted (it comes from the user's documents) and is escaped everywhere.
"""

from __future__ import annotations

import base64
import hashlib
import json
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from evals.score.metrics import DOCUMENTS

from .agreement_view import agreement_section
from .assets import CSS, SCRIPT
from .gate_html import answers_section, gate_section, mcp_section, twins_section
from .markup import e, num, pval, signed, source_label

Report = Mapping[str, Any]

def _csp_hash(source: str) -> str:
    digest = hashlib.sha256(source.encode("utf-8")).digest()
    return "'sha256-" + base64.b64encode(digest).decode("ascii") + "'"


def render(report: Report, views_home: str | None = None) -> str:
    """The whole page as a string; ``views_home`` is the home of the collections the
    stages searched, named in each hit's ``grk open`` command (:func:`_drilldown`)."""
    policy = (
        f"default-src 'none'; style-src {_csp_hash(CSS)}; script-src {_csp_hash(SCRIPT)}; "
        "img-src data:; base-uri 'none'; form-action 'none'"
    )
    body = "\n".join(
        [
            _header(report),
            _summary(report),
            _forest_section(report),
            _abstention(report),
            gate_section(report),
            answers_section(report),
            mcp_section(report), agreement_section(report), twins_section(report),
            _breakdowns(report),
            _drilldown(report, views_home),
        ]
    )
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{e(policy)}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>groundkit evaluation — golden {e(report['golden']['version'])}</title>\n"
        f"<style>{CSS}</style>\n</head>\n<body>\n<main>\n{body}\n</main>\n"
        f"<script>{SCRIPT}</script>\n</body>\n</html>\n"
    )


def write_html(report: Report, path: str | Path, *, views_home: str | Path | None = None
               ) -> Path:
    """Render ``report`` to ``path`` (UTF-8); returns the path. ``views_home``: where the
    stages' collections are kept, for the drill-down's ``grk open`` commands."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    home = None if views_home is None else str(Path(views_home).resolve())
    target.write_text(render(report, home), encoding="utf-8", newline="\n")
    return target


# --- formatting ---------------------------------------------------------------


def _verdict_class(c: Mapping[str, Any]) -> str:
    """better/worse only when the interval excludes 0 and Holm's p <= 1 - confidence;
    ``unclear na`` (grey) for one not made, a side ranking too shallow for the measure."""
    if c.get("unreachable"):
        return "unclear na"
    if c["p_holm"] > 1.0 - c["confidence"]:
        return "unclear"
    if c["ci_low"] > 0:
        return "better"
    if c["ci_high"] < 0:
        return "worse"
    return "unclear"


def _comparison_index(report: Report) -> dict[tuple[str, str], Mapping[str, Any]]:
    return {(c["stage"], c["measure"]): c for c in report["comparisons"]}


def _primary_measure(report: Report) -> str:
    measures: list[str] = report["measures"]
    return "nDCG@10" if "nDCG@10" in measures else measures[0]


# --- sections -----------------------------------------------------------------


def _header(report: Report) -> str:
    run, golden, kit, stats = (
        report["run"],
        report["golden"],
        report["groundkit"],
        report["statistics"],
    )
    facts = [
        ("golden", f"{golden['version']} · manifest {golden['manifest_sha256'][:16]}"),
        ("groundkit", f"{kit['version']} · {kit['git_commit'] or 'unknown commit'}"),
        ("run", f"{run.get('created_at', '?')} on {run.get('host', '?')}"),
        ("baseline", report["baseline"]),
        (
            "statistics",
            f"{stats['confidence']:.0%} percentile bootstrap ({stats['resamples']:,} resamples), "
            f"paired randomisation ({stats['permutations']:,}), Holm across "
            f"{sum(not c.get('unreachable') for c in report['comparisons'])} comparisons, "
            f"seed {report['seed']}",
        ),
    ]
    items = "".join(f"<dt>{e(k)}</dt><dd>{e(v)}</dd>" for k, v in facts)
    return f'<header><h1>groundkit evaluation report</h1><dl class="facts">{items}</dl></header>'


def _summary(report: Report) -> str:
    measures: list[str] = report["measures"]
    index = _comparison_index(report)
    head = "".join(f'<th scope="col">{e(m)}</th>' for m in measures)
    rows = []
    for stage in report["stages"]:
        name = stage["name"]
        cells = []
        for m in measures:
            cell = f'<span class="mean">{_value(stage, m, stage["metrics"][m])}</span>'
            c = index.get((name, m))
            if c is not None and not c.get("unreachable"):
                cell += (
                    f'<span class="delta {_verdict_class(c)}">{signed(c["delta"])} '
                    f"[{signed(c['ci_low'])}, {signed(c['ci_high'])}]</span>"
                    f'<span class="p">p<sub>Holm</sub> {pval(c["p_holm"])}</span>'
                )
            cells.append(f"<td>{cell}</td>")
        tag = ' <span class="tag">baseline</span>' if name == report["baseline"] else ""
        docs = stage.get(DOCUMENTS)
        rows.append(
            f'<tr><th scope="row">{e(name)}{tag}<div class="desc">{e(stage["description"])}'
            f'</div></th><td class="n">{stage["judged"]}</td>{"".join(cells)}'
            f'<td class="n">{"—" if docs is None else f"{docs:.2f}"}</td></tr>'
        )
    for name, reason in report["config"].get("skipped_stages", {}).items():
        rows.append(f'<tr class="not-measured"><th scope="row">{e(name)}</th><td class="n">—'
                    f'</td><td colspan="{len(measures) + 1}">{e(reason)}</td></tr>')
    return (
        '<section><h2>Summary</h2><p class="note">Mean over every judged question (no result '
        "counts as 0). Under each mean: the difference from the baseline with its "
        f"{report['statistics']['confidence']:.0%} bootstrap interval, and the Holm-adjusted "
        "p-value; n/a: the stage ranks too shallow for the measure (not compared). "
        "Documents: how many distinct documents the top 10 come from.</p>"
        '<div class="scroll"><table id="summary"><thead><tr><th scope="col">'
        f'stage</th><th scope="col">n</th>{head}<th scope="col">documents in top 10</th>'
        f'</tr></thead><tbody>{"".join(rows)}</tbody></table></div></section>'
    )


def _value(stage: Mapping[str, Any], measure: str, value: float | None) -> str:
    """A stage's ``value`` on ``measure``, or the n/a text (grey) of one it ranks too
    shallow for."""
    missing = stage.get("unreachable", {}).get(measure)
    return num(value) if missing is None else f'<span class="unclear na">{e(missing)}</span>'


def _forest_section(report: Report) -> str:
    if not report["comparisons"]:
        return (
            "<section><h2>Differences from the baseline</h2><p>Only the baseline ran.</p></section>"
        )
    plots = "".join(
        _forest_plot(m, [c for c in report["comparisons"] if c["measure"] == m])
        for m in report["measures"]
    )
    return (
        '<section><h2>Differences from the baseline</h2><p class="note">Each dot is a mean '
        "difference from the baseline; the bar its bootstrap interval. Green (red): the "
        "interval lies above (below) 0 and the Holm-adjusted p-value is at most "
        f"{1 - report['statistics']['confidence']:.2g}; grey: no clear difference.</p>"
        f'<div class="forest">{plots}</div></section>'
    )


def _forest_plot(measure: str, rows: Sequence[Mapping[str, Any]]) -> str:
    # The label column grows with the longest stage name (about 7 px a character).
    left = 16 + 7 * max([len(str(r["stage"])) for r in rows] or [8])
    width, right, row_h, top = 260, 170, 26, 28
    extent = [abs(float(r[k])) for r in rows if not r.get("unreachable")
              for k in ("ci_low", "ci_high", "delta")]
    limit = 1.1 * max([0.01, *extent])
    height = top + row_h * len(rows) + 22

    def x(v: float) -> float:
        return round(left + (v + limit) / (2 * limit) * width, 2)

    parts = [
        f'<text x="{left + width / 2}" y="16" class="title">{e(measure)}</text>',
        f'<line x1="{x(0)}" y1="{top - 6}" x2="{x(0)}" y2="{height - 18}" class="zero"/>',
    ]
    for tick in (-limit, 0.0, limit):
        label = signed(tick) if tick else "0"
        parts.append(f'<text x="{x(tick)}" y="{height - 4}" class="tick">{label}</text>')
    for i, r in enumerate(rows):
        y = top + row_h * i + row_h / 2
        cls = _verdict_class(r)
        if r.get("unreachable"):  # not compared: the label and why, no interval or dot
            parts.append(f'<g class="{cls}"><text x="{left - 8}" y="{y + 4}" class="label">'
                         f'{e(r["stage"])}</text><text x="{left + 8}" y="{y + 4}" class='
                         f'"value">{e(r["unreachable"])}</text></g>')
            continue
        interval = f"{signed(r['delta'])} [{signed(r['ci_low'])}, {signed(r['ci_high'])}]"
        parts.append(
            f'<g class="{cls}"><title>{e(r["stage"])} − {e(r["baseline"])}, {e(measure)}: '
            f"{interval}</title>"
            f'<text x="{left - 8}" y="{y + 4}" class="label">{e(r["stage"])}</text>'
            f'<line x1="{x(r["ci_low"])}" y1="{y}" x2="{x(r["ci_high"])}" y2="{y}" '
            f'class="ci"/><circle cx="{x(r["delta"])}" cy="{y}" r="4.5"/>'
            f'<text x="{left + width + 10}" y="{y + 4}" class="value">{interval}</text></g>'
        )
    total = left + width + right
    return (
        f'<svg class="plot" viewBox="0 0 {total} {height}" width="{total}" height="{height}" '
        f'role="img" aria-label="{e(measure)} differences from the baseline" '
        f'xmlns="http://www.w3.org/2000/svg">{"".join(parts)}</svg>'
    )


def _abstention(report: Report) -> str:
    rows = []
    for stage in report["stages"]:
        a = stage["abstention"]
        rows.append(
            f'<tr><th scope="row">{e(stage["name"])}</th>'
            f"<td>{a['no_answer_abstained']} / {a['no_answer_total']}</td>"
            f"<td>{a['answerable_abstained']} / {a['answerable_total']}</td></tr>"
        )
    return (
        '<section><h2>Abstention</h2><p class="note">A stage abstains when it returns nothing. '
        "Abstaining on a no-answer question is right; on an answerable one, a miss. Not part "
        'of the differences above.</p><table id="abstention"><thead><tr><th scope="col">'
        'stage</th><th scope="col">no-answer abstained</th><th scope="col">answerable '
        f"abstained</th></tr></thead><tbody>{''.join(rows)}</tbody></table></section>"
    )


def _breakdowns(report: Report) -> str:
    measures: list[str] = report["measures"]
    head = "".join(f'<th scope="col">{e(m)}</th>' for m in measures)
    tables = []
    for axis in [a for a in ("kind", "trait", "domain") if a in report["breakdowns"]]:
        rows = []
        for group in sorted(report["breakdowns"][axis]):
            entry = report["breakdowns"][axis][group]
            for i, block in enumerate(report["stages"]):
                stage = block["name"]
                lead = (
                    f'<th scope="row" rowspan="{len(report["stages"])}">{e(group)}'
                    f'<div class="desc">n = {entry["n"]}</div></th>'
                    if i == 0
                    else ""
                )
                values = "".join(f"<td>{_value(block, m, entry['stages'][stage][m])}</td>"
                                 for m in measures)
                rows.append(f"<tr>{lead}<td>{e(stage)}</td>{values}</tr>")
        tables.append(
            f'<h3>By {axis}</h3><div class="scroll"><table class="breakdown"><thead><tr>'
            f'<th scope="col">{axis}</th><th scope="col">stage</th>{head}</tr></thead>'
            f"<tbody>{''.join(rows)}</tbody></table></div>"
        )
    return f"<section><h2>Breakdowns</h2>{''.join(tables)}</section>"


def _drilldown(report: Report, views_home: str | None = None) -> str:
    """One line per question; each body is built by the page's script when it is opened.

    The bodies' data (gold spans, each stage's shown hits, and every passage once)
    is one JSON data block: a passage shown by eleven stages is stored once, not
    eleven times, so the page stays small at golden v2's size.

    Each hit and each gold quote links to its citation page the only way a static file
    can: the ``grk open`` command that serves it (the page is made, and its verdict
    checked, when the command runs). A gold quote opens in the chunk of a shown hit
    that holds it whole; one that no shown hit holds has no command.
    """
    kinds = sorted({q["kind"] for q in report["questions"]})
    options = "".join(f'<option value="{e(k)}">{e(k)}</option>' for k in kinds)
    primary = _primary_measure(report)
    items = "".join(_question(report, i, q, primary) for i, q in enumerate(report["questions"]))
    return (
        '<section><h2>Questions</h2><div class="filters">'
        '<input id="filter-text" type="search" placeholder="filter by id, text, trait or domain" '
        'aria-label="filter questions">'
        f'<select id="filter-kind" aria-label="kind"><option value="">every kind</option>'
        f'{options}</select><label><input id="filter-differs" type="checkbox"> only where a '
        f"stage differs from the baseline on {e(primary)}</label>"
        '<button id="expand-all" type="button">expand</button>'
        '<button id="collapse-all" type="button">collapse</button>'
        '<span id="filter-count"></span></div>'
        f"{_views_note(views_home)}"
        f'<div id="questions">{items}</div></section>'
        f'<script type="application/json" id="drilldown">{_drilldown_data(report, views_home)}'
        "</script>"
    )


def _views_note(views_home: str | None) -> str:
    where = (f"the stages' collections are kept in <code>{e(views_home)}</code>, named by "
             "each command's <code>--home</code>" if views_home is not None else
             "add <code>--home DIR</code>, the home of the collections the stages searched "
             "(this report does not record it; <code>make eval</code>'s is "
             "<code>.cache/golden</code> in the checkout)")
    return ('<p class="note" id="views-note">Each hit and gold quote has a <b>view</b>: the '
            "<code>grk open</code> command that shows its citation page (the verdict "
            "checked when it runs, the words highlighted in the file); "
            f"{where}. A gold quote no shown hit holds whole has none.</p>")


VERDICT_CODES = ("unchecked", "verified", "drifted", "unresolvable")


def _drilldown_data(report: Report, views_home: str | None = None) -> str:
    """The bodies' data as compact JSON that cannot close its script element.

    Passages are stitched into *segments*: the overlapping chunks of one document
    (several chunkings, several stages) become one stretch of its text, and a
    passage is (segment, offset, length) in code points. Passages whose texts do
    not agree where they overlap (snippets of external documents) keep their own.
    A passage under headings or from an extracted format has a fourth item: its
    *place*, the heading path and source label it shares with others (:func:`_places`).
    ``ids`` holds a chunk id of each passage (the first shown; any of a passage's ids
    opens the same span), ``home`` the ``--home`` words of the ``grk open`` commands.
    """
    stages = [s["name"] for s in report["stages"]]
    measures = list(report["measures"])
    segments, passages = _segments(report["passages"])
    data = {
        "stages": stages, "measures": measures, "verdicts": list(VERDICT_CODES),
        "segments": segments, "passages": passages,
        "places": _places(report["passages"], passages),
        "ids": _passage_ids(report),
        "home": "" if views_home is None else shlex.join(["--home", views_home]),
        "questions": [
            {"gold": [[g["doc_id"], g["start"], g["end"], g["quote"]] for g in q["gold"]],
             "traits": q["traits"], "domain": q["domain"], "split": q["split"],
             "stages": [_stage_data(q["stages"][name], measures) for name in stages]}
            for q in report["questions"]
        ],
    }
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return text.replace("<", "\\u003c").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def _passage_ids(report: Report) -> list[str]:
    """The chunk id of each passage: the first hit shown with it ("" for none)."""
    ids = [""] * len(report["passages"])
    for q in report["questions"]:
        for entry in q["stages"].values():
            for h in entry["hits"]:
                if not ids[h["passage"]]:
                    ids[h["passage"]] = h["chunk_id"]
    return ids


def _segments(rows: Sequence[Mapping[str, Any]]) -> tuple[list[list[Any]], list[list[int]]]:
    """``([doc_id, start, text] segments, [segment, offset, length] per passage)``."""
    order = sorted(range(len(rows)), key=lambda i: (rows[i]["doc_id"], rows[i]["start"],
                                                     rows[i]["end"]))
    segments: list[list[Any]] = []
    located: dict[int, list[int]] = {}
    for i in order:
        row = rows[i]
        doc, start, text = row["doc_id"], row["start"], row["text"]
        last = segments[-1] if segments else None
        if last is not None and last[0] == doc and start <= last[1] + len(last[2]):
            offset = start - last[1]
            shared = last[2][offset:offset + len(text)]
            if text.startswith(shared):
                last[2] += text[len(shared):]
                located[i] = [len(segments) - 1, offset, len(text)]
                continue
        segments.append([doc, start, text])
        located[i] = [len(segments) - 1, 0, len(text)]
    return segments, [located[i] for i in range(len(rows))]


def _places(rows: Sequence[Mapping[str, Any]], located: Sequence[list[int]]) -> list[list[Any]]:
    """``[[heading, ...], source label]`` for every distinct place a passage names, each
    once (a section's chunks share their heading path); each such passage's ``located``
    entry gets the index of its place."""
    places: list[list[Any]] = []
    index: dict[tuple[tuple[str, ...], str], int] = {}
    for row, where in zip(rows, located, strict=True):
        key = (tuple(row.get("headings", ())), source_label(row.get("source")))
        if key[0] or key[1]:
            if key not in index:
                index[key] = len(places)
                places.append([list(key[0]), key[1]])
            where.append(index[key])
    return places


def _stage_data(entry: Mapping[str, Any], measures: Sequence[str]) -> list[Any]:
    hits = [[h["passage"], float(f"{h['score']:.4g}"), h["relevance"],
             VERDICT_CODES.index(h["verdict"] or "unchecked")] for h in entry["hits"]]
    scores = [entry["scores"][m] for m in measures] if entry["scores"] else None
    return [int(entry["abstained"]), entry["retrieved"], scores, hits]


def _outcome(entry: Mapping[str, Any], primary: str) -> str:
    """A judged question's score on the primary measure, else whether it abstained."""
    if primary in entry["scores"]:
        return "n/a" if entry["scores"][primary] is None else num(entry["scores"][primary])
    return "abstained" if entry["abstained"] else f"{entry['retrieved']} hits"


def _question(report: Report, index: int, q: Mapping[str, Any], primary: str) -> str:
    baseline = report["baseline"]
    stages = [s["name"] for s in report["stages"]]
    outcome = {s: _outcome(q["stages"][s], primary) for s in stages}
    differs = any(outcome[s] != outcome[baseline] for s in stages)
    badges = "".join(f'<span class="badge">{e(s)} {outcome[s]}</span>' for s in stages)
    search = " ".join([q["query_id"], q["text"], *q["traits"], q["domain"]]).lower()
    return (
        f'<details class="question" id="q-{e(q["query_id"])}" data-kind="{e(q["kind"])}" '
        f'data-differs="{int(differs)}" data-search="{e(search)}" data-index="{index}"><summary>'
        f'<code>{e(q["query_id"])}</code> <span class="kind">{e(q["kind"])}</span> '
        f'{e(q["text"])} <span class="badges">{badges}</span></summary>'
        '<div class="body"></div></details>'
    )
