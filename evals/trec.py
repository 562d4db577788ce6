"""TREC run and qrels files: the lingua franca for comparing engines.

A run line is ``query_id Q0 doc_id rank score tag``; a qrels line is
``query_id 0 doc_id relevance``. Reading is strict: a malformed line is an
error naming the file and line, never skipped.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from groundkit.errors import GroundkitError

Run = dict[str, dict[str, float]]
Qrels = dict[str, dict[str, int]]


class TrecFormatError(GroundkitError, ValueError):
    """A TREC run or qrels file that does not parse."""


def _check_token(value: str, what: str) -> str:
    if not value or any(ch.isspace() for ch in value):
        raise TrecFormatError(f"{what} {value!r} is empty or contains whitespace")
    return value


def write_run(path: str | Path, ranked: Mapping[str, Sequence[tuple[str, float]]],
              tag: str) -> Path:
    """Write ``query_id -> [(doc_id, score), ...]`` (best first) as a TREC run file."""
    _check_token(tag, "run tag")
    lines = []
    for query_id in sorted(ranked):
        for rank, (doc_id, score) in enumerate(ranked[query_id], start=1):
            _check_token(query_id, "query id")
            _check_token(doc_id, "doc id")
            lines.append(f"{query_id} Q0 {doc_id} {rank} {score:.6f} {tag}\n")
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
    """Order each query's results as trec_eval does: score descending, then doc id descending."""
    return {
        q: sorted(docs.items(), key=lambda item: (-item[1], _reverse(item[0])))
        for q, docs in run.items()
    }


def _reverse(doc_id: str) -> tuple[int, ...]:
    return (*(-ord(ch) for ch in doc_id), 1)


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
