"""Golden v5's slice figures, from a saved report of ``python -m evals run --golden golden/v5``.

    .venv/bin/python golden/tools/slice_figures.py pairs REPORT [--stage bm25]
    .venv/bin/python golden/tools/slice_figures.py answers REPORT [--home .cache/golden]

``pairs``: each re-anchored scanned question (its notes say ``re-anchored from v4 qNNNN``)
against its v4 original, paired on the same ranking (the two ask the same words; one's gold
is the scanned copy, the other's the text original): the means, the paired delta with its
bootstrap interval and randomisation p-value (:func:`evals.score.stats.compare`, as
``python -m evals compare`` pairs two reports), and wins/ties/losses. ``evals compare``
pairs the *same* question id across two reports, so it cannot pair these.

``answers``: extractive answers (``grk ask``, bm25, top 5) on the table and scanned questions,
scored as the harness scores answers (:mod:`evals.golden.answers`), by the default way of
choosing sentences and without the table header as context. The report keeps no answer per
question, so they are asked again, of the collection the run kept (its name read from the
report's hits, in the harness's kept home). Loading golden v5 reads the scans by OCR
(about a minute).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

V5 = REPO / "golden" / "v5"
MEASURES = ("nDCG@10", "Success@10", "RR@10")


def _questions() -> dict[str, dict]:
    lines = (V5 / "questions.jsonl").read_text(encoding="utf-8").splitlines()
    return {q["id"]: q for q in map(json.loads, lines)}


def reanchored() -> dict[str, str]:
    """Scanned question id -> the v4 question it was re-anchored from."""
    return {qid: q["notes"].split()[3] for qid, q in _questions().items()
            if "scanned" in q["traits"] and q["notes"].startswith("re-anchored from v4 ")}


def pairs(report: dict, stage: str) -> int:
    from evals.score import stats

    by_id = {q["query_id"]: q for q in report["questions"]}
    twins = reanchored()
    for measure in MEASURES:
        text = {s: by_id[o]["stages"][stage]["scores"][measure] for s, o in twins.items()}
        scan = {s: by_id[s]["stages"][stage]["scores"][measure] for s in twins}
        c = stats.compare(text, scan)
        print(f"{stage} {measure}: text originals {c.baseline_mean:.3f}, scanned copies "
              f"{c.stage_mean:.3f}, delta {c.delta:+.3f} [{c.ci_low:+.3f}, {c.ci_high:+.3f}] "
              f"p={c.p_value:.3f} wins/ties/losses {c.wins}/{c.ties}/{c.losses} "
              f"(n={len(twins)} pairs)")
    for trait in ("scanned", "table_row", "table_header"):
        group = report["breakdowns"]["trait"].get(trait)
        if group:
            scores = group["stages"][stage]
            print(f"{stage} trait {trait} (n={group['n']}): "
                  + ", ".join(f"{m} {scores[m]:.3f}" for m in MEASURES))
    return 0


def answers(report: dict, home: Path) -> int:
    from evals.golden import load_golden
    from evals.golden.answers import CHOICES, _scores
    from evals.golden.suite import questions_of
    from groundkit.answer import ask
    from groundkit.collection import Collection

    hits = [h for q in report["questions"] for s in q["stages"].values() for h in s["hits"]]
    name = hits[0]["chunk_id"].split(":", 1)[0]
    questions = {q.query_id: q for q in questions_of(load_golden(V5, coverage=False,
                                                                 rules=False))}
    twins = reanchored()
    groups = {
        "tables (all)": [q for q in questions.values() if q.domain == "tables"],
        "table_header": [q for q in questions.values() if "table_header" in q.traits],
        "table_row, not table_header": [q for q in questions.values()
                                        if "table_row" in q.traits
                                        and "table_header" not in q.traits],
        "scanned, re-anchored (gold: the scan)": [questions[s] for s in twins],
        "their v4 originals (gold: the text)": [questions[o] for o in twins.values()],
    }
    coll = Collection.open(name, home)
    try:
        for choice in ("default", "no-header-context"):
            answered = {}
            for group in groups.values():
                for q in group:
                    if q.query_id not in answered:
                        answered[q.query_id] = ask(coll, q.text, mode="bm25",
                                                   choice=CHOICES[choice])
            for title, group in groups.items():
                s = _scores(group, answered)
                right = round((s["answer_success"] or 0) * s["judged"])
                print(f"[{choice}] {title}: answer success {right}/{s['judged']}"
                      f" ({(s['answer_success'] or 0):.1%}), found in the top 5 "
                      f"{s['retrieved_top5']:.1%}, no-answer answered "
                      f"{s['no_answer_answered'] if s['no_answer'] else '-'}")
    finally:
        coll.close()
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python golden/tools/slice_figures.py",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("command", choices=("pairs", "answers"))
    ap.add_argument("report", type=Path, help="latest.json of a golden v5 run")
    ap.add_argument("--stage", default="bm25", help="pairs: the stage (default bm25)")
    ap.add_argument("--home", type=Path, default=REPO / ".cache" / "golden",
                    help="answers: the run's kept home (default .cache/golden)")
    args = ap.parse_args(argv)
    report = json.loads(args.report.read_text(encoding="utf-8"))
    if args.command == "pairs":
        return pairs(report, args.stage)
    return answers(report, args.home)


if __name__ == "__main__":
    sys.exit(main())
