"""Same content, two formats: golden documents indexed from their original HTML.

Golden v3 keeps, under ``twins/``, the original HTML page of every v2 document that was
converted from one whole page (``PROVENANCE.json``'s ``twins``). The *twins* measurement
indexes those pages as they are, through groundkit's HTML extractor, and the Markdown
conversions of the same pages, each as a collection of its own, and asks the questions
answered in them of both. Each question's quotes are found again in the HTML text view
(the same words in the same order; the converter's list markers, pipes and fences are
not words), so both sides are judged by the same rule on the same passages.

The block it adds to a golden report (``twins``) holds each stage's measures on either
side and the paired difference ``html - markdown`` with its bootstrap interval, and the
questions left out with the reason: the question is what extraction costs retrieval,
content held constant.
"""

from __future__ import annotations

import itertools
import json
import re
import shutil
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from evals import report as rpt
from evals.golden.model import Answer, Golden, Question
from evals.harness import Log, evaluate
from evals.score import stats
from evals.stages import BASELINE, Stage
from groundkit import extract
from groundkit.collection import IndexConfig
from groundkit.retrieval.bm25 import BM25Params
from groundkit.text.analysis import Analyzer

PROVENANCE_FILE = "PROVENANCE.json"
SIDES = ("markdown", "html")
STAGES = (BASELINE, "dense-minilm", "hybrid-rrf60")
"""The stages measured on both sides, when the run has them."""
MEASURES = ("nDCG@10", "Success@10", "R@100")
_WORD = re.compile(r"\w+")


def pairs(golden: Golden) -> dict[str, str]:
    """Markdown doc_id -> its twin's path under the golden folder (empty before v3)."""
    path = golden.root / PROVENANCE_FILE
    if not path.is_file():
        return {}
    recorded = json.loads(path.read_text(encoding="utf-8")).get("twins", {})
    return {doc_id: entry["twin"] for doc_id, entry in sorted(recorded.items())
            if doc_id in golden.documents}


def twin_id(doc_id: str) -> str:
    return doc_id.rsplit(".", 1)[0] + ".html"


def words_pattern(quote: str) -> re.Pattern[str] | None:
    """The quote's words in order: any non-word run between words that a space separated
    in the quote, any (or none) where the quote had only punctuation (``2^31`` / ``231``)."""
    words = list(_WORD.finditer(quote))
    if not words:
        return None
    parts = [re.escape(words[0].group())]
    for before, word in itertools.pairwise(words):
        gap = quote[before.end():word.start()]
        parts.append(r"\W+" if any(c.isspace() for c in gap) else r"\W*")
        parts.append(re.escape(word.group()))
    return re.compile("".join(parts))


def reanchor(answer: Answer, markdown: str, html: str) -> Answer | str:
    """``answer`` found in the HTML view (the same occurrence), or why it cannot be."""
    pattern = words_pattern(answer.quote)
    if pattern is None:
        return "quote has no words"
    ours = [m.start() for m in pattern.finditer(markdown)]
    theirs = list(pattern.finditer(html))
    if not theirs:
        return "quote's words not found in the HTML view"
    first = answer.start + _WORD.search(answer.quote).start()  # type: ignore[union-attr]
    if len(ours) != len(theirs) or first not in ours:
        return "quote's words occur a different number of times in the two views"
    found = theirs[ours.index(first)]
    return Answer(doc_id=twin_id(answer.doc_id), quote=found.group(), occurrence=None,
                  start=found.start(), end=found.end())


def sides(golden: Golden, root: Path) -> tuple[dict[str, Golden], Counter[str]]:
    """Both sides' documents written under ``root/<side>/`` and their judged questions,
    and why the other questions were left out (a count per reason)."""
    twins = pairs(golden)
    views = {doc_id: extract.extract("html", (golden.root / twin).read_bytes()).text
             for doc_id, twin in twins.items()}
    for side in SIDES:
        shutil.rmtree(root / side, ignore_errors=True)
    for doc_id, twin in twins.items():
        _copy(golden.root / "docs" / doc_id, root / "markdown" / doc_id)
        _copy(golden.root / twin, root / "html" / twin_id(doc_id))
    kept: dict[str, list[Question]] = {side: [] for side in SIDES}
    left_out: Counter[str] = Counter()
    for q in golden.questions:
        if not q.answers or any(a.doc_id not in twins for a in q.answers):
            continue  # no answer, or an answer outside the twinned documents
        found = [reanchor(a, golden.documents[a.doc_id], views[a.doc_id]) for a in q.answers]
        reasons = [f for f in found if isinstance(f, str)]
        if reasons:
            left_out[reasons[0]] += 1
            continue
        kept["markdown"].append(q)
        kept["html"].append(replace(q, answers=tuple(a for a in found if isinstance(a, Answer)),
                                    near_miss=None))
    documents = {"markdown": {d: golden.documents[d] for d in twins},
                 "html": {twin_id(d): views[d] for d in twins}}
    return ({side: Golden(version=golden.version, root=root / side, documents=documents[side],
                          questions=tuple(kept[side])) for side in SIDES}, left_out)


def _copy(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dst)


def measure(golden: Golden, stages: Sequence[Stage], *, home: Path, provenance: rpt.Provenance,
            settings: rpt.Settings, embedding_cache: Path | None, log: Log) -> dict[str, Any]:
    """The report's ``twins`` block: ``stages`` (those of :data:`STAGES` present) on both
    sides, and each measure's paired difference ``html - markdown``."""
    from evals.golden.suite import CollectionSuite

    chosen = [s for s in stages if s.name in STAGES]
    by_side, left_out = sides(golden, home / "twins")
    reports: dict[str, dict[str, Any]] = {}
    for side, side_golden in by_side.items():
        base = IndexConfig(roots=(str(side_golden.root),), include=("*",),
                           extra={"analyzer": Analyzer().to_dict(),
                                  "bm25": BM25Params().to_dict()})
        suite = CollectionSuite(label=f"twins ({side})", golden=side_golden, base=base,
                                provenance=provenance, home=home / "twin-collections",
                                embedding_cache=embedding_cache)
        suite.answers = False
        try:
            reports[side] = evaluate(suite, chosen, settings=settings, runs_dir=None, log=log,
                                     serial=True)
        finally:
            suite.close()
    documents = len(by_side["html"].documents)
    block: dict[str, Any] = rpt.canonical(_block(reports, [s.name for s in chosen], by_side,
                                                 left_out, documents, settings))
    return block


def _per_question(report: Mapping[str, Any], stage: str, measure: str) -> dict[str, float]:
    return {q["query_id"]: q["stages"][stage]["scores"][measure]
            for q in report["questions"] if q["judged"] and stage in q["stages"]}


def _block(reports: Mapping[str, Mapping[str, Any]], stage_names: Sequence[str],
           by_side: Mapping[str, Golden], left_out: Counter[str], documents: int,
           settings: rpt.Settings) -> dict[str, Any]:
    stages_out: dict[str, Any] = {}
    for name in stage_names:
        ran = {side: next((s for s in reports[side]["stages"] if s["name"] == name), None)
               for side in SIDES}
        if any(r is None for r in ran.values()):
            continue  # skipped on a side (a missing optional dependency)
        row: dict[str, Any] = {side: {m: ran[side]["metrics"][m] for m in MEASURES}  # type: ignore[index]
                               for side in SIDES}
        row["delta"] = {}
        for m in MEASURES:
            c = stats.compare(_per_question(reports["markdown"], name, m),
                              _per_question(reports["html"], name, m),
                              resamples=settings.resamples, permutations=settings.permutations,
                              seed=settings.seed)
            row["delta"][m] = {"delta": c.delta, "ci_low": c.ci_low, "ci_high": c.ci_high,
                               "p_value": c.p_value, "wins": c.wins, "ties": c.ties,
                               "losses": c.losses}
        stages_out[name] = row
    return {"documents": documents, "questions": len(by_side["html"].questions),
            "left_out": dict(sorted(left_out.items())), "measures": list(MEASURES),
            "stages": stages_out,
            "what": "the v2 documents converted from whole HTML pages, indexed from the "
                    "original HTML (html) and from their Markdown conversion (markdown); "
                    "delta = html - markdown, paired by question"}
