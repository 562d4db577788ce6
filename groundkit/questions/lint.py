"""``grk questions lint``: a question file checked against a collection as indexed.

Errors (the file cannot be used as it is; exit non-zero): a line that does not
parse, a quote not found word for word in its document as indexed (or found
several times without ``occurrence``), a ``paraphrase`` question sharing a
content-word stem with its quote (:func:`.rules.shared_stems`, the golden
rule), a probe found in the documents, a draft not yet accepted, an empty
question, the same question twice. Warnings (it can be used, but says less than
it seems to): a quote found in other documents too, near-duplicate questions (index
terms, as the collection's analyzer makes them, :data:`NEAR_JACCARD` alike, and the
texts :data:`NEAR_RATIO` similar by :mod:`difflib`), a
question leaking its quote (a run of :data:`LEAK_WORDS` or more words copied
from it), and counts short of what a measurement needs (:mod:`.needs`).
"""

from __future__ import annotations

import difflib
import re
from collections import Counter, defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..retrieval import gate
from ..text.analysis import Analyzer, split_tokens
from . import needs
from .documents import Indexed
from .files import read_text
from .model import USER_RULES, Answer, Question
from .parse import DRAFT_PROBLEM, QUESTION_ID, find_all, parse_lines
from .rules import set_problems

LEAK_WORDS = 6
"""A question copying this many consecutive words of its quote leaks it (BM25 finds it
by those words alone); a CJK bigram counts half a word."""
NEAR_JACCARD = 0.8
NEAR_RATIO = 0.9
LINT_RULES = replace(USER_RULES, paraphrase_checked=True)
"""A person's rules, with ``paraphrase`` meaning what it means from golden v2 on."""
_QID = re.compile(rf"({QUESTION_ID}):")
_CJK = re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")
"""Kana, CJK ideographs, Hangul: split into overlapping bigrams, so each counts half a word."""


@dataclass(frozen=True, slots=True)
class Finding:
    level: str
    """``error`` or ``warning``."""
    check: str
    message: str
    question: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"level": self.level, "check": self.check, "message": self.message,
                "question": self.question}


@dataclass(slots=True)
class LintReport:
    path: str
    collection: str
    generation: int
    questions: list[Question] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    quotes: list[dict[str, Any]] = field(default_factory=list)
    counts: dict[str, Any] = field(default_factory=dict)
    measurements: dict[str, Any] = field(default_factory=dict)

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.level == "error"]

    @property
    def warnings(self) -> list[Finding]:
        return [f for f in self.findings if f.level == "warning"]

    def by_check(self) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = defaultdict(lambda: {"error": 0, "warning": 0})
        for f in self.findings:
            out[f.check][f.level] += 1
        return dict(sorted(out.items()))

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "collection": self.collection, "generation": self.generation,
                "ok": not self.errors, "errors": len(self.errors),
                "warnings": len(self.warnings), "by_check": self.by_check(),
                "findings": [f.to_dict() for f in self.findings], "quotes": self.quotes,
                "counts": self.counts, "measurements": self.measurements}


def lint(path: str | Path, indexed: Indexed, *, alpha: float = gate.ALPHA) -> LintReport:
    """Every check of the module docstring, on ``path`` against ``indexed``."""
    text = read_text(path)
    report = LintReport(str(path), indexed.name, indexed.generation)
    parsed, problems, incomplete = parse_lines(text, Path(path).name, indexed.documents,
                                               LINT_RULES)
    problems += set_problems(parsed, indexed.documents, LINT_RULES, incomplete)
    report.findings += [_classified(p) for p in problems]
    report.questions = parsed
    report.quotes = [quote_record(q, role, a, indexed) for q in parsed
                     for role, a in spans(q)]
    report.findings += _quote_findings(report.quotes)
    report.findings += duplicates(parsed, indexed.analyzer)
    report.findings += list(leaks(parsed))
    report.counts = needs.counts(parsed, LINT_RULES.traits)
    report.measurements, short = needs.measurements(
        [q for q in parsed if q.id not in incomplete], alpha)
    report.findings += [Finding("warning", "counts", w) for w in short]
    return report


def _classified(problem: str) -> Finding:
    m = _QID.match(problem)
    qid = m.group(1) if m else None
    if DRAFT_PROBLEM in problem:
        check = "draft"
    elif "trait paraphrase" in problem:
        check = "paraphrase"
    elif "probe" in problem:
        check = "probe"
    elif "quote" in problem or "occurrence" in problem:
        check = "quote"
    elif "duplicate question id" in problem:
        check = "duplicate"
    else:
        check = "format"
    return Finding("error", check, problem, qid)


def spans(q: Question) -> Iterator[tuple[str, Answer]]:
    for a in q.answers:
        yield "answer", a
    if q.near_miss is not None:
        yield "near_miss", q.near_miss
    for a in q.conflicting:
        yield "conflicting", a


def quote_record(q: Question, role: str, a: Answer, indexed: Indexed) -> dict[str, Any]:
    """Where a resolved quote is: its span, how often it occurs, the chunks holding it."""
    chunks = indexed.chunks_over(a.doc_id, a.start, a.end)
    whole = [c.chunk_id for c in chunks if c.start <= a.start and a.end <= c.end]
    cited = {b.doc_id for _, b in spans(q)}
    elsewhere = [d for d in indexed.words.containing(a.quote) if d not in cited]
    return {"question": q.id, "role": role, "doc_id": a.doc_id, "start": a.start,
            "end": a.end, "occurrences": len(find_all(indexed.documents[a.doc_id], a.quote)),
            "occurrence": a.occurrence, "other_documents": elsewhere,
            "chunks": [c.chunk_id for c in chunks], "whole_in_chunk": whole[0] if whole else None}


def _quote_findings(records: Sequence[dict[str, Any]]) -> list[Finding]:
    out = []
    for r in records:
        others = r["other_documents"]
        if r["role"] == "answer" and others:
            shown = ", ".join(others[:3]) + (f" and {len(others) - 3} more" if len(others) > 3
                                             else "")
            out.append(Finding("warning", "quote_elsewhere",
                               f"{r['question']}: the quote in {r['doc_id']} is also word for "
                               f"word in {shown}: a hit there is judged not relevant (add "
                               "those places as answers of an ambiguous question if they "
                               "answer it too)", r["question"]))
        if not r["chunks"]:
            out.append(Finding("error", "quote", f"{r['question']}: no chunk of the index "
                               f"covers {r['doc_id']} [{r['start']}, {r['end']})",
                               r["question"]))
    return out


def normalised(text: str) -> str:
    return " ".join(split_tokens(text))


def duplicates(questions: Sequence[Question], analyzer: Analyzer) -> list[Finding]:
    """The same question twice (an error) and near duplicates (a warning)."""
    asked = [q for q in questions if q.question.strip()]
    keys = {q.id: normalised(q.question) for q in asked}
    first: dict[str, str] = {}
    out = []
    for q in asked:
        key = keys[q.id]
        if key in first:
            out.append(Finding("error", "duplicate", f"{q.id}: the same question as "
                               f"{first[key]}", q.id))
        else:
            first.setdefault(key, q.id)
    out += _near_duplicates([q for q in asked if first[keys[q.id]] == q.id], keys, analyzer)
    return out


def _near_duplicates(asked: Sequence[Question], keys: dict[str, str],
                     analyzer: Analyzer) -> list[Finding]:
    stems = {q.id: set(analyzer.analyze(q.question)) for q in asked}
    index: dict[str, list[int]] = defaultdict(list)
    for i, q in enumerate(asked):
        for s in stems[q.id]:
            index[s].append(i)
    out = []
    for i, q in enumerate(asked):
        shared = Counter(j for s in stems[q.id] for j in index[s] if j > i)
        for j in sorted(shared):
            other = asked[j]
            a, b = stems[q.id], stems[other.id]
            if len(a & b) / len(a | b) < NEAR_JACCARD:
                continue
            ratio = difflib.SequenceMatcher(None, keys[q.id], keys[other.id],
                                            autojunk=False).ratio()
            if ratio >= NEAR_RATIO:
                out.append(Finding("warning", "near_duplicate",
                                   f"{other.id}: nearly the same question as {q.id} "
                                   f"(similarity {ratio:.2f})", other.id))
    return out


def leaks(questions: Sequence[Question]) -> Iterator[Finding]:
    """Questions copying :data:`LEAK_WORDS` or more consecutive words of an answer's quote."""
    for q in questions:
        asked = split_tokens(q.question)
        for a in q.answers:
            run = longest_run(asked, split_tokens(a.quote))
            words = sum(0.5 if _CJK.search(t) else 1 for t in run)
            if words >= LEAK_WORDS:
                yield Finding("warning", "leak", f"{q.id}: the question copies {words:g} "
                              f"consecutive words of its quote ({' '.join(run)!r}): BM25 "
                              "finds it by those words alone", q.id)
                break


def longest_run(a: Sequence[str], b: Sequence[str]) -> list[str]:
    """The longest run of consecutive tokens ``a`` and ``b`` share."""
    m = difflib.SequenceMatcher(None, list(a), list(b), autojunk=False).find_longest_match()
    return list(a[m.a:m.a + m.size])
