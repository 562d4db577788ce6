"""TREC run files at full precision, ranked the way trec_eval ranks them.

:func:`evals.trec.write_run` keeps six decimals, which turns BM25 scores that
differ in the seventh digit into ties that trec_eval then orders by doc id.
External runs are written with each score's shortest exact decimal (``repr``)
instead, and every ranking a report scores is put in trec_eval's order first
(score descending, exact ties by doc id descending), so a run file read back
with :func:`evals.trec.read_run` scores exactly as the stage that wrote it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from evals import trec

_SPACE = re.compile(r"\s").search


def trec_order(ranked: Sequence[tuple[str, float]]) -> list[tuple[str, float]]:
    """``(doc_id, score)`` pairs in trec_eval's order: score descending, ties doc id descending."""
    by_id = sorted(ranked, key=lambda item: item[0], reverse=True)
    return sorted(by_id, key=lambda item: -item[1])  # stable: ties keep doc id descending


def write_run(path: str | Path, ranked: Mapping[str, Sequence[tuple[str, float]]],
              tag: str) -> Path:
    """Write ``query_id -> [(doc_id, score)]`` (already in order) with exact scores."""
    checked: set[str] = set()

    def token(value: str, what: str) -> str:
        if value not in checked:
            if not value or _SPACE(value):
                raise trec.TrecFormatError(f"{what} {value!r} is empty or contains whitespace")
            checked.add(value)
        return value

    token(tag, "run tag")
    lines = [f"{token(q, 'query id')} Q0 {token(d, 'doc id')} {rank} {float(score)!r} {tag}\n"
             for q in sorted(ranked) for rank, (d, score) in enumerate(ranked[q], start=1)]
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("".join(lines), encoding="utf-8")
    return target
