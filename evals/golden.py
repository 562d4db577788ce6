"""The golden corpus: loading, linting and checksummed manifests.

A golden version lives in ``golden/vN/``::

    docs/<path>        the documents (doc_id = POSIX path relative to docs/)
    questions.jsonl    one question per line (schema in golden/README.md)
    MANIFEST.json      sha256 of every file plus counts, written by ``write_manifest``

Document text is the file's bytes decoded exactly as groundkit decodes them
(:func:`groundkit.sources.decode_bytes`: UTF-8, a leading BOM stripped, no
newline translation, no normalisation); answer offsets are code points of that
text. A released version is never edited: any change makes ``golden/vN+1/``.
Command line: ``python -m evals.golden {lint,manifest} golden/v1`` (see :func:`main`).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeAlias

from groundkit.errors import IntegrityError
from groundkit.sources import DecodeError, decode_bytes

KINDS: tuple[str, ...] = ("answerable", "ambiguous", "no_answer")
TRAITS: tuple[str, ...] = (
    "paraphrase", "exact_identifier", "straddle", "multi_document", "long_document", "non_english",
)
MIN_TRAIT_QUESTIONS = 15
MIN_NO_ANSWER = 30
LONG_DOCUMENT_CHARS = 20_000
DOCS_DIR = "docs"
QUESTIONS_FILE = "questions.jsonl"
MANIFEST_FILE = "MANIFEST.json"
QUESTION_ID = re.compile(r"q[0-9]{4,}")
_QUESTION_KEYS = frozenset({"id", "kind", "question", "traits", "answers", "notes"})
_ANSWER_KEYS = frozenset({"doc_id", "quote", "occurrence"})
_Parsed: TypeAlias = "tuple[Question | None, list[str]]"
_BLANK_LINE = re.compile(r"\n\n|\r\n\r\n")
_ANSWER_COUNTS = {"answerable": (1, 1), "ambiguous": (2, 10**6), "no_answer": (0, 0)}


@dataclass(frozen=True, slots=True, kw_only=True)
class Answer:
    """An acceptable answer: ``quote`` is ``documents[doc_id][start:end]``."""

    doc_id: str
    quote: str
    occurrence: int | None
    start: int
    end: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Question:
    """One golden question with its resolved answers (none for ``no_answer``)."""

    id: str
    kind: str
    question: str
    traits: tuple[str, ...]
    answers: tuple[Answer, ...]
    notes: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class Golden:
    """A loaded, lint-clean golden version."""

    version: int
    root: Path
    documents: dict[str, str]
    questions: tuple[Question, ...]


@dataclass(slots=True)
class _Scan:
    """What one pass over a golden folder found, problems included."""

    root: Path
    documents: dict[str, str] = field(default_factory=dict)
    checksums: dict[str, str] = field(default_factory=dict)
    questions: list[Question] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    incomplete: set[str] = field(default_factory=set)  # ids whose record had problems


def load_golden(path: str | Path, *, coverage: bool = True) -> Golden:
    """Load a golden version, or raise :class:`IntegrityError` naming every problem.

    ``coverage=False`` skips the corpus-level minimums (trait and no-answer
    counts, every document cited); integrity checks always run.
    """
    scan = _scan(Path(path), coverage=coverage)
    if scan.problems:
        head = f"golden corpus {scan.root} failed {len(scan.problems)} check(s)"
        raise IntegrityError(head + ":\n" + "\n".join(scan.problems))
    return Golden(version=_version(scan.root), root=scan.root,
                  documents=dict(scan.documents), questions=tuple(scan.questions))


def lint_golden(path: str | Path, *, coverage: bool = True) -> list[str]:
    """Every problem with a golden version, one line each; empty when clean."""
    return _scan(Path(path), coverage=coverage).problems


def write_manifest(path: str | Path, *, force: bool = False) -> dict[str, Any]:
    """Write ``MANIFEST.json`` from the files as they are; return it.

    Refuses to change the checksums of an existing manifest unless ``force``:
    a released version is never edited in place (make ``golden/vN+1``).
    """
    root = Path(path)
    scan = _Scan(root)
    _read_documents(scan)
    _read_questions(scan)
    if not (root / QUESTIONS_FILE).is_file():
        raise IntegrityError(f"{root}: no {QUESTIONS_FILE}; cannot write a manifest")
    manifest = {"golden_version": _version(root), "files": dict(sorted(scan.checksums.items())),
                "counts": _counts(scan.documents, scan.questions)}
    target = root / MANIFEST_FILE
    if target.is_file() and not force:
        old = _read_json(target)
        if isinstance(old, dict) and old.get("files") not in (None, manifest["files"]):
            raise IntegrityError(f"{target} records other checksums: a released golden version is "
                                 "never edited in place; create the next version (or pass --force "
                                 "while this one is still an unreleased draft)")
    target.write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return manifest


def _version(root: Path) -> int:
    m = re.fullmatch(r"v([0-9]+)", root.resolve().name)
    if m is None:
        raise IntegrityError(f"{root}: a golden version folder must be named vN (e.g. v1)")
    return int(m[1])


def _scan(root: Path, *, coverage: bool) -> _Scan:
    scan = _Scan(root)
    if not root.is_dir():
        scan.problems.append(f"{root}: not a directory")
        return scan
    _read_documents(scan)
    _read_questions(scan)
    _check_manifest(scan)
    for question in scan.questions:
        complete = question.id not in scan.incomplete  # else trait checks would only add noise
        scan.problems.extend(_question_problems(question, scan.documents, complete=complete))
    ids = Counter(q.id for q in scan.questions)
    scan.problems.extend(f"{q}: duplicate question id ({n} times)" for q, n in ids.items() if n > 1)
    if coverage:
        scan.problems.extend(_coverage_problems(scan.documents, scan.questions))
    return scan


def _read_documents(scan: _Scan) -> None:
    docs = scan.root / DOCS_DIR
    if not docs.is_dir():
        scan.problems.append(f"{DOCS_DIR}/: missing")
        return
    for file in sorted(p for p in docs.rglob("*") if p.is_file()):
        doc_id = file.relative_to(docs).as_posix()
        data = file.read_bytes()
        scan.checksums[f"{DOCS_DIR}/{doc_id}"] = hashlib.sha256(data).hexdigest()
        try:
            decoded = decode_bytes(data)
        except DecodeError as exc:
            scan.problems.append(f"{DOCS_DIR}/{doc_id}: cannot be decoded: {exc}")
            continue
        if decoded.encoding != "utf-8":
            scan.problems.append(f"{DOCS_DIR}/{doc_id}: must be UTF-8, found {decoded.encoding}")
        scan.documents[doc_id] = decoded.text


def _read_questions(scan: _Scan) -> None:
    path = scan.root / QUESTIONS_FILE
    if not path.is_file():
        scan.problems.append(f"{QUESTIONS_FILE}: missing")
        return
    data = path.read_bytes()
    scan.checksums[QUESTIONS_FILE] = hashlib.sha256(data).hexdigest()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        scan.problems.append(f"{QUESTIONS_FILE}: not UTF-8 (byte {exc.start})")
        return
    for lineno, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            scan.problems.append(f"{QUESTIONS_FILE} line {lineno}: invalid JSON: {exc.msg}")
            continue
        question, problems = _parse_question(obj, lineno, scan.documents)
        scan.problems.extend(problems)
        if question is not None:
            scan.questions.append(question)
            if problems:
                scan.incomplete.add(question.id)


def _parse_question(obj: Any, lineno: int, documents: dict[str, str]) -> _Parsed:
    where = f"{QUESTIONS_FILE} line {lineno}"
    if not isinstance(obj, dict):
        return None, [f"{where}: a question must be a JSON object"]
    qid = obj.get("id")
    if not isinstance(qid, str) or not QUESTION_ID.fullmatch(qid):
        return None, [f"{where}: id must be a string like 'q0001', got {qid!r}"]
    problems = [f"{qid}: unknown field {key!r}" for key in sorted(set(obj) - _QUESTION_KEYS)]
    kind, text, notes = obj.get("kind"), obj.get("question"), obj.get("notes", "")
    traits, raw_answers = obj.get("traits"), obj.get("answers")
    if not isinstance(kind, str) or not isinstance(text, str) or not isinstance(notes, str):
        return None, [*problems, f"{qid}: kind, question and notes must be strings"]
    if not isinstance(traits, list) or not all(isinstance(t, str) for t in traits):
        return None, [*problems, f"{qid}: traits must be a list of strings"]
    if not isinstance(raw_answers, list):
        return None, [*problems, f"{qid}: answers must be a list"]
    low, high = _ANSWER_COUNTS.get(kind, (0, 10**6))
    if not low <= len(raw_answers) <= high:
        wanted = "no" if high == 0 else f"{low}" if low == high else f"at least {low}"
        problems.append(f"{qid}: kind {kind} needs {wanted} answer(s), has {len(raw_answers)}")
    resolved = [_resolve_answer(qid, i, raw, documents) for i, raw in enumerate(raw_answers, 1)]
    answers = [answer for answer, _ in resolved if answer is not None]
    problems += [problem for answer, problem in resolved if answer is None]
    return Question(id=qid, kind=kind, question=text, traits=tuple(traits),
                    answers=tuple(answers), notes=notes), problems


def _resolve_answer(
    qid: str, index: int, raw: Any, documents: dict[str, str]
) -> tuple[Answer | None, str]:
    where = f"{qid}: answer {index}"
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
        return None, f"{where}: document {doc_id!r} is not in {DOCS_DIR}/"
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
    end = start + len(quote)
    return Answer(doc_id=doc_id, quote=quote, occurrence=occurrence, start=start, end=end), ""


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


def _question_problems(q: Question, docs: dict[str, str], *, complete: bool) -> list[str]:
    """Kind, trait and answer-shape problems of one parsed question."""
    problems = [] if q.kind in KINDS else [
        f"{q.id}: unknown kind {q.kind!r}; valid kinds: {', '.join(KINDS)}"]
    if not q.question.strip():
        problems.append(f"{q.id}: the question text is empty")
    for trait in sorted(set(q.traits) - set(TRAITS)):
        problems.append(f"{q.id}: unknown trait {trait!r}; valid traits: {', '.join(TRAITS)}")
    if len(set(q.traits)) != len(q.traits):
        problems.append(f"{q.id}: a trait is listed twice")
    if len({(a.doc_id, a.start) for a in q.answers}) != len(q.answers):
        problems.append(f"{q.id}: the same answer span is listed twice")
    traits = set(q.traits) if complete else set()
    if "straddle" in traits and not any(_BLANK_LINE.search(a.quote) for a in q.answers):
        problems.append(f"{q.id}: trait straddle but no quote spans a blank line")
    if "multi_document" in traits and (
        q.kind != "ambiguous" or len({a.doc_id for a in q.answers}) < 2
    ):
        problems.append(f"{q.id}: trait multi_document needs an ambiguous question citing 2+ docs")
    if "long_document" in traits and not any(
        len(docs.get(a.doc_id, "")) > LONG_DOCUMENT_CHARS for a in q.answers
    ):
        problems.append(f"{q.id}: trait long_document but no answer is in a document over "
                        f"{LONG_DOCUMENT_CHARS} characters")
    return problems


def _coverage_problems(documents: dict[str, str], questions: Sequence[Question]) -> list[str]:
    cited = {a.doc_id for q in questions for a in q.answers}
    problems = [f"{DOCS_DIR}/{d}: not cited by any question" for d in documents if d not in cited]
    counts = _counts(documents, questions)
    for trait in TRAITS:
        if counts["traits"][trait] < MIN_TRAIT_QUESTIONS:
            problems.append(f"corpus: trait {trait} covers {counts['traits'][trait]} question(s), "
                            f"needs at least {MIN_TRAIT_QUESTIONS}")
    if counts["kinds"]["no_answer"] < MIN_NO_ANSWER:
        problems.append(f"corpus: {counts['kinds']['no_answer']} no_answer question(s), "
                        f"needs at least {MIN_NO_ANSWER}")
    return problems


def _counts(documents: dict[str, str], questions: Iterable[Question]) -> dict[str, Any]:
    questions = list(questions)
    kinds = Counter(q.kind for q in questions)
    traits = Counter(t for q in questions for t in set(q.traits))
    return {"documents": len(documents), "questions": len(questions),
            "kinds": {k: kinds[k] for k in KINDS}, "traits": {t: traits[t] for t in TRAITS}}


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise IntegrityError(f"{path}: unreadable JSON: {exc}") from None


def _check_manifest(scan: _Scan) -> None:
    path = scan.root / MANIFEST_FILE
    if not path.is_file():
        scan.problems.append(f"{MANIFEST_FILE}: missing (python -m evals.golden manifest PATH)")
        return
    try:
        manifest = _read_json(path)
    except IntegrityError as exc:
        scan.problems.append(str(exc))
        return
    files = manifest.get("files") if isinstance(manifest, dict) else None
    if not isinstance(files, dict):
        scan.problems.append(f"{MANIFEST_FILE}: no 'files' object")
        return
    for name in sorted(set(files) | set(scan.checksums)):
        if name not in files:
            scan.problems.append(f"{name}: present but not listed in {MANIFEST_FILE}")
        elif name not in scan.checksums:
            scan.problems.append(f"{name}: listed in {MANIFEST_FILE} but missing")
        elif files[name] != scan.checksums[name]:
            scan.problems.append(f"{name}: checksum mismatch with {MANIFEST_FILE}")
    folder = re.fullmatch(r"v([0-9]+)", scan.root.resolve().name)
    if folder is None or manifest.get("golden_version") != int(folder[1]):
        scan.problems.append(f"{MANIFEST_FILE}: golden_version {manifest.get('golden_version')!r}"
                             f" does not match the folder name {scan.root.resolve().name!r}")
    if manifest.get("counts") != _counts(scan.documents, scan.questions):
        scan.problems.append(f"{MANIFEST_FILE}: counts do not match the documents and questions")


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m evals.golden {lint,manifest} PATH``: lint a golden version or write its
    manifest; returns the exit status (0 clean, 1 problems, 4 unreadable)."""
    parser = argparse.ArgumentParser(prog="python -m evals.golden", description=main.__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    lint = sub.add_parser("lint", help="check a golden version; one line per problem")
    lint.add_argument("path", type=Path)
    lint.add_argument("--no-coverage", action="store_true", help="skip corpus-level minimums")
    manifest = sub.add_parser("manifest", help="write MANIFEST.json for a golden version")
    manifest.add_argument("path", type=Path)
    manifest.add_argument("--force", action="store_true", help="rewrite a draft's checksums")
    args = parser.parse_args(argv)
    try:
        if args.command == "manifest":
            counts = write_manifest(args.path, force=args.force)["counts"]
            print(f"wrote {args.path / MANIFEST_FILE}: {json.dumps(counts)}")
            return 0
        problems = lint_golden(args.path, coverage=not args.no_coverage)
    except IntegrityError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    for problem in problems:
        print(problem)
    print(f"{len(problems)} problem(s) in {args.path}" if problems else f"ok: {args.path} is clean",
          file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
