"""Saved reports as suites: per-question scores of one measure, and what each suite shares.

A report (``python -m evals run``'s JSON) holds, per judged question, every stage's
score on every measure (``questions[*].stages[STAGE].scores``). A report whose questions
carry two or more domains (golden v2 on) becomes one suite per domain unless asked to
stay whole: a golden domain is its own folder of documents, so its questions search
documents no other domain's do.

What a suite shares with another is stated, never guessed from names alone:

- ``documents``: keys for the documents it searches: ``golden-docs:DOMAIN`` for a golden
  domain (the same domain of two golden versions is the same folder, largely the same
  files), every domain's key for a whole golden report, ``dataset:NAME`` for an external
  dataset, ``collection:NAME`` for a person's own collection;
- ``texts``: its questions' texts, case and spacing folded.

Two suites overlap when they share a document key or a question text;
:func:`disjoint` keeps the first of any overlapping group and says of every other which
suite it overlaps and how, so no question or collection is counted twice.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evals.report import ReportError, load_json


@dataclass(frozen=True, slots=True, kw_only=True)
class Suite:
    """One suite's per-question scores on one measure, and what it shares."""

    name: str
    report: str
    kind: str
    """``golden-domain``, ``golden``, ``external`` or ``own``."""
    baseline: str
    scores: Mapping[str, Mapping[str, float]]
    """stage -> query id -> score, judged questions only; a stage the report ranks too
    shallow for the measure (or without a score) is absent."""
    documents: frozenset[str]
    texts: frozenset[str] = field(repr=False)
    features: Mapping[str, float] = field(default_factory=dict)
    """Simple collection features for the exploratory meta-regression (:mod:`.regression`)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Excluded:
    suite: Suite
    reason: str


def load_suites(paths: Sequence[str | Path], measure: str, *, domains: bool = True
                ) -> list[Suite]:
    """The suites of the reports at ``paths``, in order (a report's domains sorted)."""
    suites: list[Suite] = []
    for path in paths:
        report = load_json(path)
        if measure not in report["measures"]:
            raise ReportError(f"report {str(path)!r} has no {measure} scores; its measures: "
                              f"{', '.join(report['measures'])}")
        suites.extend(_suites_of(report, str(path), measure, domains=domains))
    return suites


def _suites_of(report: Mapping[str, Any], path: str, measure: str, *, domains: bool
               ) -> list[Suite]:
    judged = [q for q in report["questions"] if q["judged"]]
    version = str(report["golden"]["version"])
    kind, name, documents = _identity(report, version)
    by_domain: dict[str, list[Mapping[str, Any]]] = {}
    for q in judged:
        by_domain.setdefault(str(q.get("domain") or ""), []).append(q)
    named = sorted(d for d in by_domain if d)
    if kind == "golden" or len(named) >= 2:
        documents = frozenset({*documents, *(f"golden-docs:{d}" for d in named)})
    if not domains or len(named) < 2:
        return [_suite(report, path, name, kind, judged, measure, documents)]
    return [_suite(report, path, f"{name}/{d or '(no domain)'}", f"{kind}-domain",
                   by_domain[d], measure, frozenset({f"golden-docs:{d}"}) if d else documents)
            for d in sorted(by_domain)]


def _identity(report: Mapping[str, Any], version: str) -> tuple[str, str, frozenset[str]]:
    """The report's kind, suite name and document keys (see the module doc)."""
    dataset = report["config"].get("dataset")
    if dataset is not None:
        return "external", str(dataset["name"]), frozenset({f"dataset:{dataset['name']}"})
    if version.startswith("questions:"):
        collection = re.sub(r" generation \S+$", "", version).rpartition(" on ")[2]
        return "own", version, frozenset({f"collection:{collection}"})
    return "golden", f"golden {version}", frozenset()


def _suite(report: Mapping[str, Any], path: str, name: str, kind: str,
           questions: Sequence[Mapping[str, Any]], measure: str,
           documents: frozenset[str]) -> Suite:
    unreachable = {s["name"] for s in report["stages"] if measure in s.get("unreachable", {})}
    scores: dict[str, dict[str, float]] = {}
    for stage in (s["name"] for s in report["stages"] if s["name"] not in unreachable):
        column = {q["query_id"]: q["stages"].get(stage, {}).get("scores", {}).get(measure)
                  for q in questions}
        if column and all(v is not None for v in column.values()):
            scores[stage] = {qid: float(v) for qid, v in column.items()}
    if report["baseline"] not in scores:
        raise ReportError(f"report {path!r}: its baseline {report['baseline']!r} has no "
                          f"{measure} score for every judged question of {name}")
    return Suite(name=name, report=path, kind=kind, baseline=str(report["baseline"]),
                 scores=scores, documents=documents,
                 texts=frozenset(_fold(q["text"]) for q in questions if _fold(q["text"])),
                 features=_features(questions))


def _fold(text: str) -> str:
    return " ".join(text.casefold().split())


def _features(questions: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """Mean query length in words; shares of identifier and non-English questions."""
    n = len(questions) or 1
    traits = [set(q.get("traits") or ()) for q in questions]
    return {
        "query_words": sum(len(q["text"].split()) for q in questions) / n,
        "identifier_share": sum("exact_identifier" in t for t in traits) / n,
        "non_english_share": sum(bool(t & {"non_english", "cross_language"})
                                 for t in traits) / n,
    }


def disjoint(suites: Iterable[Suite]) -> tuple[list[Suite], list[Excluded]]:
    """The suites to pool (the first of every overlapping group) and the others, each
    with the suite it overlaps and what they share."""
    kept: list[Suite] = []
    excluded: list[Excluded] = []
    for suite in suites:
        clash = next((k for k in kept if overlap(k, suite)), None)
        if clash is None:
            kept.append(suite)
        else:
            excluded.append(Excluded(suite=suite, reason=f"overlaps {clash.name}: "
                                     f"{overlap(clash, suite)}"))
    return kept, excluded


def overlap(a: Suite, b: Suite) -> str:
    """What ``a`` and ``b`` share, in words; "" when nothing."""
    parts = []
    docs = sorted(a.documents & b.documents)
    if docs:
        parts.append(f"documents ({', '.join(docs[:3])}{', …' if len(docs) > 3 else ''})")
    texts = len(a.texts & b.texts)
    if texts:
        parts.append(f"{texts} question text{'s' if texts > 1 else ''}")
    return " and ".join(parts)
