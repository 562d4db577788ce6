"""What a golden version is made of: the question format's value types and rules per version,
kept in :mod:`groundkit.questions.model` (``grk questions`` reads the same format)."""

from groundkit.questions.model import (
    KINDS,
    LONG_DOCUMENT_CHARS,
    PARTS,
    RULES_V1,
    RULES_V2,
    RULES_V3,
    RULES_V4,
    RULES_V5,
    TRAITS,
    TRAITS_V1,
    TRAITS_V4,
    TRAITS_V5,
    USER_RULES,
    Answer,
    Golden,
    Minimums,
    Question,
    Rules,
    rules_for,
)

__all__ = [
    "KINDS", "LONG_DOCUMENT_CHARS", "PARTS", "RULES_V1", "RULES_V2", "RULES_V3", "RULES_V4",
    "RULES_V5", "TRAITS", "TRAITS_V1", "TRAITS_V4", "TRAITS_V5", "USER_RULES", "Answer",
    "Golden", "Minimums", "Question", "Rules", "rules_for",
]
