"""TREC run and qrels files, and trec_eval's order: the lingua franca for comparing engines.

A run line is ``query_id Q0 doc_id rank score tag``; a qrels line is
``query_id 0 doc_id relevance``. Reading is strict: a malformed line is an
error naming the file and line, never skipped. Scores are written at full
precision (each float's shortest exact decimal), so a run read back ranks
exactly as the stage that wrote it; :func:`trec_order` is the one definition of
how trec_eval orders a run (score descending, exact ties by doc id descending).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from groundkit.errors import GroundkitError

Run = dict[str, dict[str, float]]
Qrels = dict[str, dict[str, int]]


class TrecFormatError(GroundkitError, ValueError):
    """A TREC run or qrels file that does not parse."""


_SPACE = re.compile(r"\s").search


def _check_token(value: str, what: str) -> str:
    if not value or _SPACE(value):
        raise TrecFormatError(f"{what} {value!r} is empty or contains whitespace")
    return value


def trec_order(ranked: Sequence[tuple[str, float]]) -> list[tuple[str, float]]:
    """``(doc_id, score)`` pairs in trec_eval's order: score descending, ties doc id descending."""
    by_id = sorted(ranked, key=lambda item: item[0], reverse=True)
    return sorted(by_id, key=lambda item: -item[1])  # stable: ties keep doc id descending


def write_run(path: str | Path, ranked: Mapping[str, Sequence[tuple[str, float]]],
              tag: str) -> Path:
    """Write ``query_id -> [(doc_id, score), ...]`` (best first) with exact scores."""
    checked: set[str] = set()

    def token(value: str, what: str) -> str:
        if value not in checked:
            checked.add(_check_token(value, what))
        return value

    token(tag, "run tag")
    lines = []
    for q in sorted(ranked):
        head = f"{token(q, 'query id')} Q0 "
        for d, _ in ranked[q]:
            token(d, "doc id")  # in order: the first bad id is the one named
        lines += [f"{head}{d} {rank} {float(score)!r} {tag}\n"
                  for rank, (d, score) in enumerate(ranked[q], start=1)]
    return _write_lines(path, lines)


def read_run(path: str | Path) -> Run:
    """A run as ``query_id -> {doc_id: score}`` (ir_measures' dict form)."""
    run: Run = {}
    for number, fields in _lines(path):
        if len(fields) != 6:
            raise TrecFormatError(f"{path}:{number}: a run line has 6 fields, got {len(fields)}")
        query_id, _, doc_id, _, score, _ = fields
        try:
            value = float(score)
        except ValueError:
            raise TrecFormatError(f"{path}:{number}: score {score!r} is not a number") from None
        if not math.isfinite(value):
            raise TrecFormatError(f"{path}:{number}: score {score!r} is not finite")
        if doc_id in run.setdefault(query_id, {}):
            raise TrecFormatError(f"{path}:{number}: {doc_id} appears twice for {query_id}")
        run[query_id][doc_id] = value
    return run


def ranking(run: Mapping[str, Mapping[str, float]]) -> dict[str, list[tuple[str, float]]]:
    """Each query's results in trec_eval's order (:func:`trec_order`)."""
    return {q: trec_order(list(docs.items())) for q, docs in run.items()}


def write_qrels(path: str | Path, qrels: Mapping[str, Mapping[str, int]]) -> Path:
    lines = [f"{_check_token(q, 'query id')} 0 {_check_token(d, 'doc id')} {rel}\n"
             for q in sorted(qrels) for d, rel in sorted(qrels[q].items())]
    return _write_lines(path, lines)


def read_qrels(path: str | Path) -> Qrels:
    qrels: Qrels = {}
    for number, fields in _lines(path):
        if len(fields) != 4:
            raise TrecFormatError(f"{path}:{number}: a qrels line has 4 fields, got {len(fields)}")
        query_id, _, doc_id, rel = fields
        try:
            qrels.setdefault(query_id, {})[doc_id] = int(rel)
        except ValueError:
            raise TrecFormatError(f"{path}:{number}: relevance {rel!r} is not an integer") from None
    return qrels


def _write_lines(path: str | Path, lines: list[str]) -> Path:
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("".join(lines), encoding="utf-8")
    return target


def _lines(path: str | Path) -> Iterable[tuple[int, list[str]]]:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise TrecFormatError(f"cannot read {path}: {exc.strerror or exc}") from None
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            yield number, line.split()
