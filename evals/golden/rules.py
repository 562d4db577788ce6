"""The per-question lint rules: :mod:`groundkit.questions.rules` (shared with
``grk questions``)."""

from groundkit.questions.rules import (
    REGEX_PREFIX,
    content_stems,
    domain_of,
    glasgow_stopwords,
    paraphrase_stopwords,
    probe_hits,
    probe_pattern,
    question_problems,
    set_problems,
    shared_stems,
)

__all__ = [
    "REGEX_PREFIX", "content_stems", "domain_of", "glasgow_stopwords", "paraphrase_stopwords",
    "probe_hits", "probe_pattern", "question_problems", "set_problems", "shared_stems",
]
