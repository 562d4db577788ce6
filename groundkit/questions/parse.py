"""Reading question lines: JSON objects in, :class:`Question` values (and problems) out.

Quotes are resolved against the decoded documents: a quote must occur in its
document, and ``occurrence`` (1-based) names which one when it occurs more than
once; a unique quote must not have it. Every problem is one line naming the
question (or the line) and what to fix.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, TypeAlias

from .model import PARTS, STATUSES, Answer, Question, Rules

Parsed: TypeAlias = "tuple[Question | None, list[str]]"
_ANSWER_KEYS = frozenset({"doc_id", "quote", "occurrence"})
_ANSWER_COUNTS = {"answerable": (1, 1), "ambiguous": (2, 10**6), "no_answer": (0, 0)}
QUESTION_ID = r"q[0-9]{4,}"
DRAFT = "draft"
DRAFT_PROBLEM = "a draft, not yet accepted by a person"


def parse_lines(text: str, where: str, documents: Mapping[str, str],
                rules: Rules) -> tuple[list[Question], list[str], set[str]]:
    """Questions, problems, and the ids of questions whose record had a problem."""
    questions, problems, incomplete = [], [], set()
    for lineno, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append(f"{where} line {lineno}: invalid JSON: {exc.msg}")
            continue
        if not isinstance(obj, dict):
            problems.append(f"{where} line {lineno}: a question must be a JSON object")
            continue
        qid = obj.get("id")
        if not isinstance(qid, str) or not re.fullmatch(QUESTION_ID, qid):
            problems.append(f"{where} line {lineno}: id must be a string like 'q0001', "
                            f"got {qid!r}")
            continue
        question, found = parse_question(obj, documents, rules)
        problems.extend(found)
        if question is not None:
            questions.append(question)
            if found:
                incomplete.add(question.id)
    return questions, problems, incomplete


def parse_question(obj: dict[str, Any], documents: Mapping[str, str], rules: Rules) -> Parsed:
    qid = str(obj["id"])
    problems = [f"{qid}: unknown field {key!r}" for key in sorted(set(obj) - rules.fields)]
    kind, text, notes = obj.get("kind"), obj.get("question"), obj.get("notes", "")
    traits, raw_answers = obj.get("traits"), obj.get("answers")
    domain, probes = obj.get("domain", ""), obj.get("probes", [])
    if not (isinstance(kind, str) and isinstance(text, str) and isinstance(notes, str)
            and isinstance(domain, str)):
        return None, [*problems, f"{qid}: kind, question, notes and domain must be strings"]
    if not isinstance(traits, list) or not all(isinstance(t, str) for t in traits):
        return None, [*problems, f"{qid}: traits must be a list of strings"]
    if not isinstance(raw_answers, list):
        return None, [*problems, f"{qid}: answers must be a list"]
    if not isinstance(probes, list) or not all(isinstance(p, str) and p.strip() for p in probes):
        return None, [*problems, f"{qid}: probes must be a list of non-blank strings"]
    if rules.domains and not domain:
        problems.append(f"{qid}: domain is required (the top folder of its documents)")
    low, high = _ANSWER_COUNTS.get(kind, (0, 10**6))
    if not low <= len(raw_answers) <= high:
        wanted = "no" if high == 0 else f"{low}" if low == high else f"at least {low}"
        problems.append(f"{qid}: kind {kind} needs {wanted} answer(s), has {len(raw_answers)}")
    resolved = [resolve_span(f"{qid}: answer {i}", raw, documents)
                for i, raw in enumerate(raw_answers, 1)]
    near_miss = None
    if obj.get("near_miss") is not None:
        near_miss, problem = resolve_span(f"{qid}: near_miss", obj["near_miss"], documents)
        if problem:
            problems.append(problem)
    problems += [problem for answer, problem in resolved if answer is None]
    raw_conflicting = obj.get("conflicting", [])
    if not isinstance(raw_conflicting, list):
        return None, [*problems, f"{qid}: conflicting must be a list"]
    conflicting = [resolve_span(f"{qid}: conflicting {i}", raw, documents)
                   for i, raw in enumerate(raw_conflicting, 1)]
    problems += [problem for answer, problem in conflicting if answer is None]
    part, status = obj.get("split", ""), obj.get("status", "")
    problems += _user_problems(qid, part, status)
    question = Question(
        id=qid, kind=kind, question=text, traits=tuple(traits), notes=notes,
        answers=tuple(a for a, _ in resolved if a is not None), domain=domain,
        probes=tuple(probes), near_miss=near_miss,
        conflicting=tuple(a for a, _ in conflicting if a is not None),
        split=part if isinstance(part, str) else "", status=status if isinstance(status, str)
        else "")
    return question, problems


def _user_problems(qid: str, part: Any, status: Any) -> list[str]:
    """A person's ``split`` part and ``status``: a draft is not a question yet."""
    problems = []
    if part != "" and part not in PARTS:
        problems.append(f"{qid}: split {part!r} is not one of {', '.join(PARTS)}")
    if status != "" and status not in STATUSES:
        problems.append(f"{qid}: status {status!r} is not one of {', '.join(STATUSES)}")
    if status == DRAFT:
        problems.append(f"{qid}: {DRAFT_PROBLEM} (accept it with grk questions review, or "
                        "set status accepted once you have checked it)")
    return problems


def resolve_span(where: str, raw: Any, documents: Mapping[str, str]) -> tuple[Answer | None, str]:
    """An answer (or near miss) ``{doc_id, quote[, occurrence]}`` resolved to its span."""
    if not isinstance(raw, dict):
        return None, f"{where}: must be a JSON object"
    unknown = sorted(set(raw) - _ANSWER_KEYS)
    doc_id, quote, occurrence = raw.get("doc_id"), raw.get("quote"), raw.get("occurrence")
    if unknown:
        return None, f"{where}: unknown field(s) {', '.join(map(repr, unknown))}"
    if not isinstance(doc_id, str) or not isinstance(quote, str) or not quote.strip():
        return None, f"{where}: doc_id and a non-blank quote are required strings"
    if occurrence is not None and (type(occurrence) is not int or occurrence < 1):
        return None, f"{where}: occurrence must be a positive integer, got {occurrence!r}"
    if doc_id not in documents:
        return None, f"{where}: document {doc_id!r} is not in docs/"
    starts = find_all(documents[doc_id], quote)
    if not starts:
        return None, f"{where}: quote not found in {doc_id}: {_hint(documents[doc_id], quote)}"
    if occurrence is None and len(starts) > 1:
        return None, f"{where}: quote occurs {len(starts)} times in {doc_id}; set occurrence"
    if occurrence is not None and len(starts) == 1:
        return None, f"{where}: occurrence given but the quote is unique in {doc_id}; drop it"
    if occurrence is not None and occurrence > len(starts):
        return None, f"{where}: occurrence {occurrence} but the quote occurs {len(starts)} times"
    start = starts[(occurrence or 1) - 1]
    return Answer(doc_id=doc_id, quote=quote, occurrence=occurrence, start=start,
                  end=start + len(quote)), ""


def find_all(text: str, quote: str) -> list[int]:
    """Start offsets of every occurrence of ``quote`` in ``text``, overlaps included."""
    starts, at = [], text.find(quote)
    while at != -1:
        starts.append(at)
        at = text.find(quote, at + 1)
    return starts


def _hint(text: str, quote: str) -> str:
    """The start of a quote that was not found, plus the CRLF fix when that is the cause."""
    short = json.dumps(quote[:59] + "…" if len(quote) > 60 else quote, ensure_ascii=False)
    if "\r\n" in text and "\r\n" not in quote and quote.replace("\n", "\r\n") in text:
        return short + " (the document has CRLF line endings: write \\r\\n in the quote)"
    return short
