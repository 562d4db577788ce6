"""The report's abstention-gate and answer sections.

The gate section: the guarantee checked, the rivals, the signals.

Rendered from the report's ``gate`` block (:mod:`evals.score.abstention`): per
stage, what the calibrated gate does on the test part at each alpha, the same over
the re-splits, which rule and signal carried what, and a risk–coverage plot per
mode. Nothing here computes; every number is the JSON's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from evals.score import abstention

from .markup import e, num, pct

Report = Mapping[str, Any]
ALPHA = 0.1
"""The alpha the summary tables show (the gate's default)."""
PALETTE = 6
"""Curves per plot with their own colour (CSS classes c0..c5); more reuse them."""


def gate_section(report: Report) -> str:
    gate = report.get("gate")
    if not gate or not gate["stages"]:
        return ""
    stages: Mapping[str, Any] = gate["stages"]
    return (
        '<section id="gate"><h2>Abstention gate</h2><p class="note">Each stage is gated by '
        "its mode's calibrated test: answer only when the conformal p-value against the "
        "calibration part's no-answer questions is at most alpha. Measured on the test part "
        f"(and over {gate['resplits']} seeded re-splits of calibration and test, seed "
        f"{gate['seed']}). A false answer is answering a no-answer question; coverage is the "
        "share of answerable questions whose gold is in the stage's top 10 that are "
        f"answered. Risk: {e(gate['risk'])}.</p>"
        + _summary(stages)
        + _by_alpha(stages, gate["alphas"])
        + _rivals(stages)
        + _plots(stages)
        + _signals(stages)
        + "</section>"
    )


def _default(stage: Mapping[str, Any]) -> tuple[str, Mapping[str, Any]]:
    label = abstention.default_label(stage["mode"])
    return label, stage["scorers"][label]


def _row_at(rows: Sequence[Mapping[str, Any]], alpha: float) -> Mapping[str, Any]:
    return next(r for r in rows if r["alpha"] == alpha)


def _at_alpha(scorer: Mapping[str, Any]) -> tuple[Mapping[str, Any], ...]:
    """The scorer's shipped results, its row at :data:`ALPHA`, and its re-split row there."""
    shipped = scorer["shipped"]
    return (shipped, _row_at(shipped["at_alpha"], ALPHA),
            _row_at(scorer["resplits"]["at_alpha"], ALPHA))


def _interval(low: float, high: float) -> str:
    return f"[{pct(low)}, {pct(high)}]"


def _scorer_name(scorer: Mapping[str, Any]) -> str:
    signals = " + ".join(scorer["signals"].values())
    return signals if scorer["rule"] == "single" else f"{scorer['rule']}({signals})"


def _summary(stages: Mapping[str, Any]) -> str:
    rows = []
    for name, stage in stages.items():
        _, scorer = _default(stage)
        shipped, at, band = _at_alpha(scorer)
        rows.append(
            f'<tr><th scope="row">{e(name)}<div class="desc">{e(_scorer_name(scorer))}</div>'
            f"</th><td>{shipped['n0']}</td><td>{num(shipped['auroc'])}</td>"
            f"<td>{num(shipped.get('auroc_near_miss'))}</td>"
            f"<td>{pct(at['false_answer_rate'])} {_interval(*at['false_answer_interval'])}</td>"
            f"<td>{pct(at['near_miss_false_answer_rate'])}</td>"
            f"<td>{pct(at['coverage_retrieved'])}</td>"
            f"<td>{at['wrongful_abstentions_retrieved']} / {at['counts']['retrieved']}</td>"
            f"<td>{at['abstentions_not_retrieved']} / {at['counts']['missed']}</td>"
            f"<td>{pct(band['false_answer_rate_mean'])} "
            f"{_interval(*band['false_answer_rate_band'])}</td>"
            f"<td>{pct(band['coverage_retrieved_mean'])}</td>"
            f"<td>{num(shipped['excess_aurc'])}</td><td>{num(at.get('crag_score'))}</td></tr>")
    head = "".join(f'<th scope="col">{h}</th>' for h in (
        "stage (gate)", "n0", "AUROC", "AUROC near misses", "false answers (95% CI)",
        "near misses answered", "coverage", "wrongful abstentions (gold in top 10)",
        "abstentions (gold not retrieved)",
        "re-split false answers (5–95%)", "re-split coverage", "excess AURC",
        "CRAG score (+1 good, 0 abstain, −1 wrong)"))
    return (f"<h3>At alpha = {ALPHA:g}</h3><div class=\"scroll\"><table id=\"gate-summary\">"
            f"<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>")


def _by_alpha(stages: Mapping[str, Any], alphas: Sequence[float]) -> str:
    head = "".join(f'<th scope="col">alpha {a:g}: false answers / coverage</th>' for a in alphas)
    rows = []
    for name, stage in stages.items():
        _, scorer = _default(stage)
        cells = []
        for a in alphas:
            at = _row_at(scorer["shipped"]["at_alpha"], a)
            band = _row_at(scorer["resplits"]["at_alpha"], a)
            cells.append(f"<td>{pct(at['false_answer_rate'])} / {pct(at['coverage_retrieved'])}"
                         f"<div class=\"desc\">re-splits {pct(band['false_answer_rate_mean'])} / "
                         f"{pct(band['coverage_retrieved_mean'])}</div></td>")
        rows.append(f'<tr><th scope="row">{e(name)}</th>{"".join(cells)}</tr>')
    return (f'<h3>By alpha</h3><div class="scroll"><table id="gate-alphas"><thead><tr>'
            f'<th scope="col">stage</th>{head}</tr></thead><tbody>{"".join(rows)}</tbody>'
            "</table></div>")


def _rivals(stages: Mapping[str, Any]) -> str:
    rows = []
    for name, stage in stages.items():
        if len(stage["scorers"]) < 2:
            continue
        for label, scorer in stage["scorers"].items():
            shipped, at, band = _at_alpha(scorer)
            rows.append(
                f'<tr><th scope="row">{e(name)}: {e(label)}<div class="desc">'
                f"{e(_scorer_name(scorer))}</div></th><td>{num(shipped['auroc'])}</td>"
                f"<td>{pct(at['false_answer_rate'])}</td><td>{pct(at['coverage_retrieved'])}</td>"
                f"<td>{pct(band['false_answer_rate_mean'])}</td>"
                f"<td>{pct(band['coverage_retrieved_mean'])}</td>"
                f"<td>{num(shipped['excess_aurc'])}</td></tr>")
    if not rows:
        return ""
    head = "".join(f'<th scope="col">{h}</th>' for h in (
        "gate", "AUROC", f"false answers (alpha {ALPHA:g})", "coverage", "re-split false answers",
        "re-split coverage", "excess AURC"))
    return ('<h3>Which rule and signal carried what</h3><p class="note">The hybrid gate and '
            "its measured rivals on the same questions: each retriever alone, the "
            "combined-p rule, and the rank agreement of the two lists as a third test.</p>"
            f'<div class="scroll"><table id="gate-rivals"><thead><tr>{head}</tr></thead>'
            f"<tbody>{''.join(rows)}</tbody></table></div>")


def _plots(stages: Mapping[str, Any]) -> str:
    by_mode: dict[str, list[tuple[str, Mapping[str, Any]]]] = {}
    for name, stage in stages.items():
        by_mode.setdefault(stage["mode"], []).append((name, _default(stage)[1]["shipped"]))
    plots = "".join(_risk_plot(mode, curves) for mode, curves in by_mode.items())
    return ('<h3>Risk against coverage</h3><p class="note">Answering questions from the most '
            "to the least confident (ascending p-value): the error rate among those answered. "
            "Lower is better; the right end is answering everything.</p>"
            f'<div class="forest">{plots}</div>')


def _risk_plot(mode: str, curves: Sequence[tuple[str, Mapping[str, Any]]]) -> str:
    left, top, width, height = 44, 26, 240, 160
    legend_w = 16 + 7 * max(len(name) for name, _ in curves)

    def xy(coverage: float, risk: float) -> str:
        return f"{left + coverage * width:.1f},{top + (1 - risk) * height:.1f}"

    parts = [f'<text x="{left + width / 2}" y="16" class="title">{e(mode)}</text>',
             f'<rect x="{left}" y="{top}" width="{width}" height="{height}" class="frame"/>']
    for tick in (0.0, 0.5, 1.0):
        parts.append(f'<text x="{left + tick * width}" y="{top + height + 14}" '
                     f'class="tick">{tick:g}</text>')
        parts.append(f'<text x="{left - 6}" y="{top + (1 - tick) * height + 4}" '
                     f'class="label">{tick:g}</text>')
    parts.append(f'<text x="{left + width / 2}" y="{top + height + 30}" class="tick">'
                 "coverage</text>")
    parts.append(f'<text x="12" y="{top + height / 2}" class="tick" transform="rotate(-90 12 '
                 f'{top + height / 2})">risk</text>')
    for i, (name, shipped) in enumerate(curves):
        points = " ".join(xy(c, r) for c, r in shipped["curve"])
        cls = f"c{i % PALETTE}"
        y = top + 12 + 16 * i
        parts.append(f'<g class="{cls}"><title>{e(name)}: AURC {num(shipped["aurc"])}</title>'
                     f'<polyline points="{points}" class="curve"/>'
                     f'<line x1="{left + width + 12}" y1="{y - 4}" x2="{left + width + 26}" '
                     f'y2="{y - 4}" class="curve"/><text x="{left + width + 30}" y="{y}">'
                     f"{e(name)}</text></g>")
    total, full = left + width + 34 + legend_w, top + height + 38
    return (f'<svg class="plot risk" viewBox="0 0 {total} {full}" width="{total}" '
            f'height="{full}" role="img" aria-label="{e(mode)} risk against coverage" '
            f'xmlns="http://www.w3.org/2000/svg">{"".join(parts)}</svg>')


def _signals(stages: Mapping[str, Any]) -> str:
    shown: set[str] = set()
    blocks = []
    for name, stage in stages.items():
        if stage["mode"] in shown:
            continue
        shown.add(stage["mode"])
        rows = sorted(stage["signals"].items(),
                      key=lambda kv: -(kv[1]["train_retrieved_vs_no_answer"] or 0))
        body = "".join(
            f'<tr><th scope="row">{e(signal)}</th>'
            f"<td>{num(v['train_retrieved_vs_no_answer'])}</td>"
            f"<td>{num(v['test_answerable_vs_no_answer'])}</td>"
            f"<td>{num(v['test_answerable_vs_near_miss'])}</td>"
            f"<td>{num(v['test_retrieved_vs_no_answer'])}</td></tr>" for signal, v in rows)
        blocks.append(
            f"<details><summary>{e(stage['mode'])} signals (stage {e(name)})</summary>"
            '<table class="gate-signals"><thead><tr><th scope="col">signal</th>'
            '<th scope="col">train: gold in top 10 vs no answer</th><th scope="col">test: '
            'answerable vs no answer</th><th scope="col">test: vs near misses</th>'
            '<th scope="col">test: gold in top 10 vs no answer</th></tr></thead>'
            f"<tbody>{body}</tbody></table></details>")
    return ('<h3>Candidate confidence signals (AUROC)</h3><p class="note">Each mode\'s gate '
            "uses the signal with the best train AUROC; the test columns show how that "
            f"choice held up. 0.5 is chance.</p>{''.join(blocks)}")


def answers_section(report: Report) -> str:
    """The answer stages: ``grk ask``'s extractive answers, without and with the gate."""
    block = report.get("answers")
    if not block:
        return ""
    ex = block["extractive"]
    parts = [("every question (bm25)", ex["all"]), ("test part, gate on (bm25)", ex["gate"]),
             *((f"test part, {mode}", part) for mode, part in ex.get("by_mode", {}).items())]
    rows = []
    for label, part in parts:
        if part and part.get("measured") is False:
            rows.append(f'<tr><th scope="row">{e(label)}</th><td colspan="8">'
                        f"{e(part['reason'])}</td></tr>")
        elif part:
            rows.append(
                f'<tr><th scope="row">{e(label)}</th><td>{part["questions"]}</td>'
                f"<td>{pct(part['answer_success'])}</td><td>{pct(part['citation_precision'])}"
                f"</td><td>{pct(part['no_answer_answered'])}</td><td>{part['answered']}</td>"
                f"<td>{_number(part.get('citations_per_answer'))}</td>"
                f"<td>{pct(part.get('kept'))} of {pct(part.get('retrieved_top5'))}</td>"
                f"<td>{part.get('duplicate_citations', '—')}</td></tr>")
    head = "".join(f'<th scope="col">{h}</th>' for h in (
        "questions", "n", "answer success", "citation precision", "no-answer answered",
        "answered", "citations per answer", "kept of found in top 5", "duplicate citations"))
    llm = ("measured" if block["llm"]["measured"] else e(block["llm"]["reason"]))
    return ('<section id="answers"><h2>Answers (grk ask)</h2><p class="note">Extractive '
            f"answers ({e(ex['mode'])}, top {ex['top_k']} passages, no model): a citation is "
            "correct when it overlaps a gold quote. Answer success: judged questions with a "
            "correct citation; citation precision: correct citations among all given.</p>"
            f'<table id="answers-table"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}'
            f"</tbody></table>{_choices(ex.get('choices'))}{_conflicts(ex.get('conflicts'))}"
            f"<p>Answers by a language model: {llm}</p></section>")


def _choices(block: Mapping[str, Any] | None) -> str:
    """Each way of choosing sentences, on the tuning parts and the test part."""
    if not block or not block.get("measured"):
        return ""
    rows = "".join(
        f'<tr><th scope="row">{e(name)}</th>'
        + "".join(f"<td>{pct(v[part]['answer_success'])}</td>"
                  f"<td>{pct(v[part]['citation_precision'])}</td><td>{pct(v[part]['kept'])}</td>"
                  f"<td>{_number(v[part]['citations_per_answer'])}</td>"
                  for part in ("tune", "test")) + "</tr>"
        for name, v in block["variants"].items())
    head = "".join(f'<th scope="col">{h}</th>' for h in (
        "choice", *(f"{part}: {m}" for part in ("train+calibration", "test")
                    for m in ("success", "precision", "kept", "citations"))))
    return ('<h3>Sentence choices</h3><p class="note">Each way of choosing the quoted '
            f"sentences ({e(block['mode'])}), measured on the parts a default may be chosen "
            "on and on the test part.</p>"
            f'<table id="choices-table"><thead><tr>{head}</tr></thead><tbody>{rows}'
            "</tbody></table>")


def _conflicts(block: Mapping[str, Any] | None) -> str:
    """How answers to the conflict questions show the disagreement."""
    if not block:
        return ""
    return (f'<h3>Conflicting sources</h3><p id="conflicts">On the {block["questions"]} '
            "questions whose current and superseded documents disagree, the answer shows "
            f"the disagreement for {pct(block['shown'])} and cites the current source first "
            f"for {pct(block['current_first'])}; of the {block['other_questions']} other "
            f"judged questions, {pct(block['false_alarms'])} get a conflict reported.</p>")


def _number(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def mcp_section(report: Report) -> str:
    """MCP stages against their direct twins, with each call's latency (the run's timings)."""
    block = report.get("mcp")
    if not block:
        return ""
    timings = report.get("run", {}).get("mcp_latency_ms", {})
    rows = []
    for name, b in block.items():
        t = timings.get(name, {})
        same = b["questions"] - b["differing"]
        verdict = "identical" if b["differing"] == 0 else f"{b['differing']} differ: FAIL"
        rows.append(f'<tr><th scope="row">{e(name)}</th><td>{e(b["transport"])}</td>'
                    f"<td>{e(b['twin'])}</td><td>{same}/{b['questions']} ({e(verdict)})</td>"
                    f"<td>{_ms(t.get('p50'))}</td><td>{_ms(t.get('p99'))}</td></tr>")
    head = "".join(f'<th scope="col">{h}</th>' for h in (
        "stage", "transport", "twin", "questions ranked identically", "p50 per call",
        "p99 per call"))
    return ('<section id="mcp"><h2>Through the MCP server</h2><p class="note">Each MCP stage '
            "runs every question through the search tool of a real grk serve subprocess and "
            "must rank it exactly as its twin does (rank, chunk id, offsets, score; top 10). "
            "Latency per call includes the transport and the server; it varies between "
            "runs.</p>"
            f'<table id="mcp-table"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}'
            "</tbody></table></section>")


def _ms(value: float | None) -> str:
    return "—" if value is None else f"{value:.1f} ms"


def twins_section(report: Report) -> str:
    """Same content, two formats: each stage on the original HTML against the Markdown."""
    block = report.get("twins")
    if not block:
        return ""
    rows = []
    for name, row in block["stages"].items():
        cells = []
        for m in block["measures"]:
            d = row["delta"][m]
            cells.append(f"<td>{row['markdown'][m]:.3f}</td><td>{row['html'][m]:.3f}</td>"
                         f"<td>{d['delta']:+.3f} [{d['ci_low']:+.3f}, {d['ci_high']:+.3f}]</td>")
        rows.append(f'<tr><th scope="row">{e(name)}</th>{"".join(cells)}</tr>')
    head = '<th scope="col">stage</th>' + "".join(
        f'<th scope="col">{e(m)} markdown</th><th scope="col">{e(m)} html</th>'
        f'<th scope="col">{e(m)} delta [95% CI]</th>' for m in block["measures"])
    left = "; ".join(f"{n} {e(reason)}" for reason, n in block["left_out"].items())
    return ('<section id="twins"><h2>Same content, two formats</h2><p class="note">'
            f"{block['documents']} documents indexed from their original HTML and from their "
            f"Markdown conversion; {block['questions']} questions answered in them, each quote "
            "found again in the HTML text view. Delta = html − markdown, paired by question."
            + (f" Left out: {left}." if left else "") + "</p>"
            f'<table id="twins-table"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}'
            "</tbody></table></section>")
