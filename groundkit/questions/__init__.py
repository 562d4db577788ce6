"""Question sets: the quote-anchored format, its lint, drafts, splits and interchange.

One question per JSON line (``docs/your-own-questions.md``): ``id``, ``kind``
(answerable, ambiguous, no_answer), ``question``, ``traits``, ``answers`` (each a
``doc_id`` and an exact ``quote``). :mod:`.model` holds the value types and the
rules per golden version, :mod:`.parse` reads lines, :mod:`.rules` checks one
question, :mod:`.split` deals the seeded train/calibration/test split. The
golden harness (``evals.golden``) and ``grk questions`` share them.

Kept free of imports here, so the harness loading :mod:`.model` loads nothing else.
"""
