"""Reading question lines: :mod:`groundkit.questions.parse` (shared with ``grk questions``)."""

from groundkit.questions.parse import (
    QUESTION_ID,
    find_all,
    parse_lines,
    parse_question,
    resolve_span,
)

__all__ = [
    "QUESTION_ID", "find_all", "parse_lines", "parse_question", "resolve_span",
]
