"""What a golden version is made of: documents, questions, answers, and the rules per version.

A question's answers are quotes resolved to spans of the decoded document text
(code points, half-open). ``no_answer`` questions have no answers; in version 2
they carry *probes* (patterns the documents must not contain) and may name the
*near miss*, the real passage that looks as if it answered.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

KINDS: tuple[str, ...] = ("answerable", "ambiguous", "no_answer")
TRAITS_V1: tuple[str, ...] = (
    "paraphrase", "exact_identifier", "straddle", "multi_document", "long_document", "non_english",
)
TRAITS: tuple[str, ...] = (*TRAITS_V1, "cross_language")
TRAITS_V4: tuple[str, ...] = (*TRAITS, "conflict")
TRAITS_V5: tuple[str, ...] = (*TRAITS_V4, "scanned", "table_row", "table_header")
LONG_DOCUMENT_CHARS = 20_000
PARTS: tuple[str, ...] = ("train", "calibration", "test")
"""The parts of a version-2 split: learn on one, calibrate on another, report on the third."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Answer:
    """A quoted passage: ``quote`` is ``documents[doc_id][start:end]``."""

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
    domain: str = ""
    probes: tuple[str, ...] = ()
    near_miss: Answer | None = None
    split: str = ""
    """``train``, ``calibration`` or ``test`` (version 2, from the manifest); "" otherwise."""
    conflicting: tuple[Answer, ...] = ()
    """Version 4 ``conflict`` questions: passages of a *superseded* document that answer
    the same question with a different value (judged, never gold: ``answers`` are current)."""
    status: str = ""
    """A person's own questions: ``draft`` until a person accepts it (then ``accepted``)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Golden:
    """A loaded, lint-clean golden version."""

    version: int
    root: Path
    documents: dict[str, str]
    questions: tuple[Question, ...]
    extractors: dict[str, str] = field(default_factory=dict)
    """doc_id -> extractor identity, for documents in an extracted format (v3 on)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Minimums:
    """Corpus-level counts a shipped golden version must reach (a lint rule)."""

    questions: int = 0
    per_trait: int = 0
    traits: dict[str, int] = field(default_factory=dict)
    """Higher floors for particular traits."""
    no_answer: int = 0
    near_miss: int = 0
    every_document_cited: bool = True
    extracted: int = 0
    """Questions about the domains holding documents in an extracted format (v3's slice)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Rules:
    """How a golden version is checked; each version keeps the rules it was released under."""

    traits: tuple[str, ...]
    fields: frozenset[str]
    domains: bool
    """Questions carry ``domain`` (the top folder of the documents they are about)."""
    probes: bool
    """``no_answer`` questions carry probes, checked against their domain's documents."""
    paraphrase_checked: bool
    """``paraphrase`` means: no content-word stem shared with any quote (computed)."""
    split: bool
    """The manifest records a train/calibration/test split."""
    minimums: Minimums


_BASE_FIELDS = frozenset({"id", "kind", "question", "traits", "answers", "notes"})
_V2_FIELDS = _BASE_FIELDS | {"domain", "probes", "near_miss"}
_V4_FIELDS = _V2_FIELDS | {"conflicting"}

RULES_V1 = Rules(traits=TRAITS_V1, fields=_BASE_FIELDS, domains=False, probes=False,
                 paraphrase_checked=False, split=False,
                 minimums=Minimums(per_trait=15, no_answer=30))
RULES_V2 = Rules(traits=TRAITS, fields=_V2_FIELDS, domains=True, probes=True,
                 paraphrase_checked=True, split=True,
                 minimums=Minimums(questions=600, per_trait=15, no_answer=120, near_miss=60,
                                   traits={"paraphrase": 100, "exact_identifier": 60}))
RULES_V3 = Rules(traits=TRAITS, fields=_V2_FIELDS, domains=True, probes=True,
                 paraphrase_checked=True, split=True,
                 minimums=Minimums(questions=850, per_trait=15, no_answer=160, near_miss=90,
                                   traits={"paraphrase": 140, "exact_identifier": 90},
                                   extracted=250))
RULES_V4 = Rules(traits=TRAITS_V4, fields=_V4_FIELDS, domains=True, probes=True,
                 paraphrase_checked=True, split=True,
                 minimums=Minimums(questions=850, per_trait=15, no_answer=160, near_miss=90,
                                   traits={"paraphrase": 140, "exact_identifier": 90,
                                           "conflict": 40},
                                   extracted=250))
"""Version 4 adds the ``conflict`` trait and ``conflicting`` passages (superseded documents)."""
RULES_V5 = Rules(traits=TRAITS_V5, fields=_V4_FIELDS, domains=True, probes=True,
                 paraphrase_checked=True, split=True, minimums=RULES_V4.minimums)
"""Version 5 adds the traits ``scanned`` (answered in a scanned copy's OCR view),
``table_row`` (the answer is one table row) and ``table_header`` (the row answers only with
its column headers), each on at least 15 questions."""
STATUSES: tuple[str, ...] = ("draft", "accepted")
USER_FIELDS = _V4_FIELDS | {"split", "status"}
"""A person's file may also carry its split part and a draft's status."""
USER_RULES = Rules(traits=TRAITS_V4, fields=USER_FIELDS, domains=False, probes=False,
                   paraphrase_checked=False, split=False,
                   minimums=Minimums(no_answer=30, every_document_cited=False))
"""A person's own questions: every v2 field is optional, minimums are only warnings."""


def rules_for(version: int) -> Rules:
    """The rules golden ``vN`` is checked with (the newest rules for versions after 5)."""
    return {1: RULES_V1, 2: RULES_V2, 3: RULES_V3, 4: RULES_V4}.get(max(version, 1), RULES_V5)
