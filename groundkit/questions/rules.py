"""The per-question rules a golden version is linted with, and the facts they compute.

* **paraphrase overlap** — the content-word stems a question shares with its
  quotes: tokens as groundkit splits them, minus :data:`PARAPHRASE_STOPWORDS`,
  Porter-stemmed. From version 2 on, the ``paraphrase`` trait *means* "none",
  so the label cannot drift from the fact.
* **probes** — a ``no_answer`` question lists patterns any answer would contain;
  none may occur in a document of the question's domain, so "the documents do
  not say this" is checked, not asserted.
* **traits** — ``straddle`` needs a quote over a blank line, ``multi_document``
  an ambiguous question citing two documents, ``long_document`` an answer in a
  long document, ``cross_language`` the ``non_english`` trait too, ``conflict``
  (version 4) ``conflicting`` passages, each in a document groundkit reads as
  superseded, while every answer is in a current one.
"""

from __future__ import annotations

import ast
import importlib.util
import re
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from functools import cache
from pathlib import Path

from ..errors import MissingDependencyError
from ..text.analysis import LUCENE_STOPWORDS, Analyzer, split_tokens
from ..text.standing import superseded
from .model import KINDS, LONG_DOCUMENT_CHARS, Question, Rules

_BLANK_LINE = re.compile(r"\n\n|\r\n\r\n")
_STEMMER = Analyzer(possessive=True, stopwords="none", stemmer="porter")
REGEX_PREFIX = "re:"


@cache
def glasgow_stopwords() -> frozenset[str]:
    """The Glasgow IR group's list (318 words) as scikit-learn ships it.

    Read from scikit-learn's ``_stop_words.py`` as a literal, without importing the
    package (seconds on a loaded machine); imported when that file is not there.
    """
    spec = importlib.util.find_spec("sklearn")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        words = _literal_list(Path(folder) / "feature_extraction" / "_stop_words.py")
        if words:
            return words
    try:
        from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS
    except ImportError as exc:
        raise MissingDependencyError("scikit-learn", "evals", "the Glasgow stopword list") from exc
    return frozenset(ENGLISH_STOP_WORDS)


def _literal_list(path: Path) -> frozenset[str] | None:
    """``ENGLISH_STOP_WORDS = frozenset([...])`` of ``path`` as a set, else ``None``."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError):
        return None
    for node in tree.body:
        if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
                and [getattr(t, "id", "") for t in node.targets] == ["ENGLISH_STOP_WORDS"]
                and len(node.value.args) == 1):
            try:
                words = ast.literal_eval(node.value.args[0])
            except ValueError:
                return None
            return frozenset(words) if all(isinstance(w, str) for w in words) else None
    return None


@cache
def paraphrase_stopwords() -> frozenset[str]:
    """Lucene's 33 words plus the Glasgow IR group's 318 (scikit-learn's English list)."""
    return frozenset(LUCENE_STOPWORDS | glasgow_stopwords())


def content_stems(text: str) -> set[str]:
    """The Porter stems of ``text``'s tokens that are not stopwords (numbers included)."""
    stop = paraphrase_stopwords()
    cache_ = _STEMMER.term_cache()
    return {cache_[t] for t in split_tokens(text) if t not in stop and cache_[t]}


def shared_stems(question: str, quotes: Iterable[str]) -> set[str]:
    """Content stems ``question`` shares with any of ``quotes``."""
    asked = content_stems(question)
    return {s for quote in quotes for s in content_stems(quote) & asked}


def probe_pattern(probe: str) -> re.Pattern[str]:
    """A probe as a pattern: ``re:REGEX``, or literal text whose spaces match any whitespace."""
    if probe.startswith(REGEX_PREFIX):
        return re.compile(probe[len(REGEX_PREFIX):], re.IGNORECASE)
    words = probe.split()
    return re.compile(r"\s+".join(map(re.escape, words)), re.IGNORECASE)


def probe_hits(probe: str, documents: Mapping[str, str]) -> list[str]:
    """The documents in which ``probe`` occurs (sorted doc ids)."""
    pattern = probe_pattern(probe)
    return sorted(d for d, text in documents.items() if pattern.search(text))


def domain_of(doc_id: str) -> str:
    return doc_id.split("/", 1)[0]


def question_problems(q: Question, docs: Mapping[str, str], rules: Rules, *,
                      complete: bool) -> list[str]:
    """Kind, trait, domain, paraphrase and probe problems of one parsed question.

    ``complete`` is false when the question's record already had problems (then
    trait checks would only add noise).
    """
    problems = [] if q.kind in KINDS else [
        f"{q.id}: unknown kind {q.kind!r}; valid kinds: {', '.join(KINDS)}"]
    if not q.question.strip():
        problems.append(f"{q.id}: the question text is empty")
    for trait in sorted(set(q.traits) - set(rules.traits)):
        problems.append(f"{q.id}: unknown trait {trait!r}; valid traits: {', '.join(rules.traits)}")
    if len(set(q.traits)) != len(q.traits):
        problems.append(f"{q.id}: a trait is listed twice")
    if len({(a.doc_id, a.start) for a in q.answers}) != len(q.answers):
        problems.append(f"{q.id}: the same answer span is listed twice")
    if complete:
        problems += _trait_problems(q, docs, rules)
        problems += _no_answer_problems(q, docs, rules)
        if rules.domains:
            problems += _domain_problems(q, docs)
    return problems


def set_problems(questions: Sequence[Question], docs: Mapping[str, str], rules: Rules,
                 incomplete: Collection[str], *, checks: bool = True) -> list[str]:
    """Every question's :func:`question_problems` (its trait, probe and domain checks only
    with ``checks``, and never for a question in ``incomplete``), then repeated ids."""
    problems = []
    for q in questions:
        problems += question_problems(q, docs, rules, complete=checks and q.id not in incomplete)
    ids = Counter(q.id for q in questions)
    return problems + [f"{qid}: duplicate question id ({n} times)"
                       for qid, n in ids.items() if n > 1]


def _trait_problems(q: Question, docs: Mapping[str, str], rules: Rules) -> list[str]:
    traits, problems = set(q.traits), []
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
    if "cross_language" in traits and "non_english" not in traits:
        problems.append(f"{q.id}: trait cross_language also needs trait non_english")
    if rules.paraphrase_checked and "paraphrase" in traits:
        if q.kind == "no_answer":
            problems.append(f"{q.id}: trait paraphrase needs a question with answers")
        elif shared := shared_stems(q.question, (a.quote for a in (*q.answers, *q.conflicting))):
            problems.append(f"{q.id}: trait paraphrase but the question shares the stem(s) "
                            f"{', '.join(sorted(shared))} with its quote(s)")
    return problems + _conflict_problems(q, docs)


def _conflict_problems(q: Question, docs: Mapping[str, str]) -> list[str]:
    """``conflict`` and ``conflicting`` go together: the current answers against
    the superseded passages that answer differently."""
    if "conflict" not in q.traits:
        return [f"{q.id}: conflicting passages belong to conflict questions only"
                ] if q.conflicting else []
    if not q.answers or not q.conflicting:
        return [f"{q.id}: trait conflict needs answers (current) and conflicting passages"]
    stale = [a.doc_id for a in q.answers if superseded(a.doc_id, docs.get(a.doc_id))]
    current = [a.doc_id for a in q.conflicting if not superseded(a.doc_id, docs.get(a.doc_id))]
    problems = [f"{q.id}: answer in {d}, a superseded document (it belongs in conflicting)"
                for d in stale]
    problems += [f"{q.id}: conflicting passage in {d}, which does not read as superseded "
                 "(an archive folder, front matter or a leading notice)" for d in current]
    same = {(a.doc_id, a.quote) for a in q.answers} & {(a.doc_id, a.quote) for a in q.conflicting}
    if any(a.quote == c.quote for a in q.answers for c in q.conflicting):
        problems.append(f"{q.id}: a conflicting passage says word for word what an answer "
                        "says; it does not disagree")
    return problems + [f"{q.id}: {d} is both an answer and conflicting" for d, _ in same]


def _no_answer_problems(q: Question, docs: Mapping[str, str], rules: Rules) -> list[str]:
    problems = []
    if q.kind != "no_answer":
        if q.probes or q.near_miss is not None:
            problems.append(f"{q.id}: probes and near_miss belong to no_answer questions only")
        return problems
    if rules.probes and not q.probes:
        problems.append(f"{q.id}: a no_answer question needs probes (patterns any answer "
                        "would contain, absent from the documents)")
    scope = {d: t for d, t in docs.items() if not q.domain or domain_of(d) == q.domain}
    for probe in q.probes:
        try:
            hits = probe_hits(probe, scope)
        except re.error as exc:
            problems.append(f"{q.id}: probe {probe!r} is not a valid regex: {exc}")
            continue
        if hits:
            where = ", ".join(hits[:3]) + (f" and {len(hits) - 3} more" if len(hits) > 3 else "")
            problems.append(f"{q.id}: probe {probe!r} occurs in {where}: the documents may "
                            "answer it, or the probe is too common")
    return problems


def _domain_problems(q: Question, docs: Mapping[str, str]) -> list[str]:
    domains = {domain_of(d) for d in docs}
    if q.domain not in domains:
        return [f"{q.id}: domain {q.domain!r} is not a top folder of docs/; valid: "
                f"{', '.join(sorted(domains))}"]
    problems = []
    if q.answers and all(domain_of(a.doc_id) != q.domain for a in q.answers):
        problems.append(f"{q.id}: no answer lies in the question's domain {q.domain!r}")
    if q.near_miss is not None and domain_of(q.near_miss.doc_id) != q.domain:
        problems.append(f"{q.id}: the near miss {q.near_miss.doc_id} is outside the question's "
                        f"domain {q.domain!r}")
    return problems
