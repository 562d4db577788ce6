"""The seeded train / calibration / test split: :mod:`groundkit.questions.split`
(shared with ``grk questions split``)."""

from groundkit.questions.split import (
    PATTERN,
    SEED,
    SHARES,
    assign,
    counts,
    problems,
    stratum,
)

__all__ = [
    "PATTERN", "SEED", "SHARES", "assign", "counts", "problems", "stratum",
]
