"""A golden version on disk: loading, linting and its checksummed manifest.

A golden version lives in ``golden/vN/``::

    docs/<path>        the documents (doc_id = POSIX path relative to docs/)
    questions.jsonl    one question per line (schema in golden/README.md)
    MANIFEST.json      sha256 of every file, counts and (v2 on) the split; generated
    twins/<path>       (v3 on) the original HTML of documents converted from it

Document text is the file's bytes decoded exactly as groundkit decodes them
(:func:`groundkit.sources.decode_bytes`: UTF-8, a leading BOM stripped, no
newline translation, no normalisation), or for a file in an extracted format
(PDF, HTML, DOCX, ODT, EPUB: :func:`groundkit.extract.for_file`) its text view as
groundkit indexes it (:func:`groundkit.extract.read`: a scanned PDF's is OCR's); answer
offsets are code points of that text. The manifest records each extracted document's
extractor identity: another extractor could make another view, so a different
installed one is a problem, never a silent shift.
A released version is never edited: any change makes ``golden/vN+1/``.
Each version is checked with the rules it was released under
(:func:`evals.golden.model.rules_for`).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from groundkit import extract
from groundkit.errors import DecodeError, IntegrityError, MissingDependencyError
from groundkit.sources import decode_bytes

from . import split
from .model import KINDS, Golden, Minimums, Question, Rules, rules_for
from .parse import parse_lines
from .rules import domain_of, set_problems

DOCS_DIR = "docs"
QUESTIONS_FILE = "questions.jsonl"
MANIFEST_FILE = "MANIFEST.json"
TWINS_DIR = "twins"


@dataclass(slots=True)
class _Scan:
    """What one pass over a golden folder found, problems included."""

    root: Path
    rules: Rules
    documents: dict[str, str] = field(default_factory=dict)
    checksums: dict[str, str] = field(default_factory=dict)
    extractors: dict[str, str] = field(default_factory=dict)  # doc_id -> extractor identity
    questions: list[Question] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    incomplete: set[str] = field(default_factory=set)  # ids whose record had problems
    manifest: dict[str, Any] = field(default_factory=dict)


def load_golden(path: str | Path, *, coverage: bool = True, rules: bool = True) -> Golden:
    """Load a golden version, or raise :class:`IntegrityError` naming every problem.

    ``coverage=False`` skips the corpus-level minimums (counts per kind and
    trait, every document cited); ``rules=False`` skips the authoring rules of each
    question (traits, probes absent from the documents, domains), which the lint
    (``python -m evals lint``, part of ``make test``) checks and the manifest's
    checksums then pin. Integrity checks (quotes, ids, checksums) always run.
    """
    scan = _scan(Path(path), coverage=coverage, rules=rules)
    if scan.problems:
        head = f"golden corpus {scan.root} failed {len(scan.problems)} check(s)"
        raise IntegrityError(head + ":\n" + "\n".join(scan.problems))
    parts = scan.manifest.get("split", {}).get("questions", {})
    questions = tuple(replace(q, split=parts.get(q.id, "")) for q in scan.questions)
    return Golden(version=version_of(scan.root), root=scan.root, documents=dict(scan.documents),
                  questions=questions, extractors=dict(scan.extractors))


def lint_golden(path: str | Path, *, coverage: bool = True) -> list[str]:
    """Every problem with a golden version, one line each; empty when clean."""
    return _scan(Path(path), coverage=coverage).problems


def write_manifest(path: str | Path, *, force: bool = False) -> dict[str, Any]:
    """Write ``MANIFEST.json`` from the files as they are; return it.

    Refuses to change the checksums of an existing manifest unless ``force``:
    a released version is never edited in place (make ``golden/vN+1``).
    """
    root = Path(path)
    scan = _Scan(root, rules_for(version_of(root)))
    _read_documents(scan)
    _read_questions(scan)
    if not (root / QUESTIONS_FILE).is_file():
        raise IntegrityError(f"{root}: no {QUESTIONS_FILE}; cannot write a manifest")
    manifest: dict[str, Any] = {
        "golden_version": version_of(root), "files": dict(sorted(scan.checksums.items())),
        "counts": counts(scan.documents, scan.questions, scan.rules)}
    if scan.extractors:
        manifest["extractors"] = dict(sorted(scan.extractors.items()))
    if scan.rules.split:
        manifest["split"] = {"seed": split.SEED, "pattern": list(split.PATTERN),
                             "questions": split.assign(scan.questions)}
    target = root / MANIFEST_FILE
    if target.is_file() and not force:
        old = _read_json(target)
        if isinstance(old, dict) and old.get("files") not in (None, manifest["files"]):
            raise IntegrityError(f"{target} records other checksums: a released golden version is "
                                 "never edited in place; create the next version (or pass --force "
                                 "while this one is still an unreleased draft)")
    target.write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return manifest


def version_of(root: Path) -> int:
    m = re.fullmatch(r"v([0-9]+)", root.resolve().name)
    if m is None:
        raise IntegrityError(f"{root}: a golden version folder must be named vN (e.g. v1)")
    return int(m[1])


def counts(documents: Mapping[str, str], questions: Iterable[Question],
           rules: Rules) -> dict[str, Any]:
    """The counts a manifest records (and the lint compares with the files)."""
    questions = list(questions)
    kinds = Counter(q.kind for q in questions)
    traits = Counter(t for q in questions for t in set(q.traits))
    out: dict[str, Any] = {
        "documents": len(documents), "questions": len(questions),
        "kinds": {k: kinds[k] for k in KINDS}, "traits": {t: traits[t] for t in rules.traits}}
    if rules.domains:
        by_domain = Counter(domain_of(d) for d in documents)
        asked = Counter(q.domain for q in questions)
        out["domains"] = {d: {"documents": by_domain[d], "questions": asked[d]}
                          for d in sorted(by_domain)}
        out["near_miss"] = sum(1 for q in questions if q.near_miss is not None)
    return out


def minimum_problems(documents: Mapping[str, str], questions: Sequence[Question],
                     rules: Rules, extractors: Mapping[str, str] | None = None) -> list[str]:
    """Where a question set falls short of ``rules.minimums`` (one line each);
    ``extractors`` (doc_id -> identity) names the documents in an extracted format."""
    m: Minimums = rules.minimums
    problems = []
    if m.extracted:
        domains = {domain_of(d) for d in extractors or {}}
        asked = sum(1 for q in questions if q.domain in domains)
        if asked < m.extracted:
            problems.append(f"corpus: {asked} question(s) about the domains with extracted "
                            f"formats ({', '.join(sorted(domains)) or 'none'}), needs at "
                            f"least {m.extracted}")
    if m.every_document_cited:
        cited = {a.doc_id for q in questions for a in (*q.answers, *q.conflicting)}
        problems += [f"{DOCS_DIR}/{d}: not cited by any question"
                     for d in documents if d not in cited]
    c = counts(documents, questions, rules)
    if c["questions"] < m.questions:
        problems.append(f"corpus: {c['questions']} question(s), needs at least {m.questions}")
    for trait in rules.traits:
        floor = m.traits.get(trait, m.per_trait)
        if c["traits"][trait] < floor:
            problems.append(f"corpus: trait {trait} covers {c['traits'][trait]} question(s), "
                            f"needs at least {floor}")
    if c["kinds"]["no_answer"] < m.no_answer:
        problems.append(f"corpus: {c['kinds']['no_answer']} no_answer question(s), "
                        f"needs at least {m.no_answer}")
    near = sum(1 for q in questions if q.near_miss is not None)
    if near < m.near_miss:
        problems.append(f"corpus: {near} near-miss no_answer question(s), needs at least "
                        f"{m.near_miss}")
    return problems


def _scan(root: Path, *, coverage: bool, rules: bool = True) -> _Scan:
    if not root.is_dir():
        return _Scan(root, rules_for(1), problems=[f"{root}: not a directory"])
    scan = _Scan(root, rules_for(version_of(root)))
    _read_documents(scan)
    _read_questions(scan)
    _check_manifest(scan)
    scan.problems.extend(set_problems(scan.questions, scan.documents, scan.rules,
                                      scan.incomplete, checks=rules))
    if coverage:
        scan.problems.extend(minimum_problems(scan.documents, scan.questions, scan.rules,
                                              scan.extractors))
    return scan


@dataclass(frozen=True, slots=True)
class Documents:
    """Every file under a ``docs/`` folder, read as the harness indexes it."""

    texts: dict[str, str]
    """doc_id -> the decoded text, or an extracted format's text view."""
    checksums: dict[str, str]
    """doc_id -> sha256 of the file's bytes."""
    extractors: dict[str, str]
    """doc_id -> the identity of the extractor that made its view (extracted formats)."""
    problems: list[str]


def read_documents(docs: Path) -> Documents:
    """Read every file under ``docs``: decoded text, or the text view of an extracted format."""
    texts: dict[str, str] = {}
    checksums: dict[str, str] = {}
    extractors: dict[str, str] = {}
    problems = []
    for file in sorted(p for p in docs.rglob("*") if p.is_file()):
        doc_id = file.relative_to(docs).as_posix()
        data = file.read_bytes()
        checksums[doc_id] = hashlib.sha256(data).hexdigest()
        try:
            fmt = extract.for_file(doc_id, data)
            if fmt is not None:  # a scanned PDF (golden v5) is read by OCR, as grk index does
                view, extractors[doc_id] = extract.read(fmt, data)
                texts[doc_id] = view.text
                continue
            decoded = decode_bytes(data)
        except MissingDependencyError as exc:
            problems.append(f"{DOCS_DIR}/{doc_id}: {exc}")
            continue
        except DecodeError as exc:
            problems.append(f"{DOCS_DIR}/{doc_id}: cannot be decoded: {exc}")
            continue
        if decoded.encoding != "utf-8":
            problems.append(f"{DOCS_DIR}/{doc_id}: must be UTF-8, found {decoded.encoding}")
        texts[doc_id] = decoded.text
    return Documents(texts, checksums, extractors, problems)


def _read_documents(scan: _Scan) -> None:
    docs = scan.root / DOCS_DIR
    if not docs.is_dir():
        scan.problems.append(f"{DOCS_DIR}/: missing")
        return
    read = read_documents(docs)
    scan.documents, scan.extractors = read.texts, read.extractors
    scan.checksums.update({f"{DOCS_DIR}/{d}": sha for d, sha in read.checksums.items()})
    scan.problems.extend(read.problems)
    twins = scan.root / TWINS_DIR
    if twins.is_dir():  # checksummed like the documents; read by evals.golden.twins
        scan.checksums.update({
            f"{TWINS_DIR}/{p.relative_to(twins).as_posix()}": hashlib.sha256(
                p.read_bytes()).hexdigest() for p in sorted(twins.rglob("*")) if p.is_file()})


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
    scan.questions, problems, scan.incomplete = parse_lines(text, QUESTIONS_FILE, scan.documents,
                                                            scan.rules)
    scan.problems.extend(problems)


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
    scan.manifest = manifest
    for name in sorted(set(files) | set(scan.checksums)):
        if name not in files:
            scan.problems.append(f"{name}: present but not listed in {MANIFEST_FILE}")
        elif name not in scan.checksums:
            scan.problems.append(f"{name}: listed in {MANIFEST_FILE} but missing")
        elif files[name] != scan.checksums[name]:
            scan.problems.append(f"{name}: checksum mismatch with {MANIFEST_FILE}")
    if manifest.get("golden_version") != version_of(scan.root):
        scan.problems.append(f"{MANIFEST_FILE}: golden_version {manifest.get('golden_version')!r}"
                             f" does not match the folder name {scan.root.resolve().name!r}")
    recorded = manifest.get("extractors") or {}
    for doc_id in sorted(set(recorded) | set(scan.extractors)):
        if recorded.get(doc_id) != scan.extractors.get(doc_id):
            scan.problems.append(
                f"{DOCS_DIR}/{doc_id}: {MANIFEST_FILE} pins extractor "
                f"{recorded.get(doc_id) or '(none: plain text)'}, installed is "
                f"{scan.extractors.get(doc_id) or '(none: plain text)'}; another extractor can "
                "make another text view, so quote offsets would shift: install the pinned "
                "libraries (requirements.lock)")
    if manifest.get("counts") != counts(scan.documents, scan.questions, scan.rules):
        scan.problems.append(f"{MANIFEST_FILE}: counts do not match the documents and questions")
    if scan.rules.split:
        recorded = manifest.get("split") or {}
        scan.problems.extend(split.problems(scan.questions, recorded.get("questions"),
                                            recorded.get("seed")))
