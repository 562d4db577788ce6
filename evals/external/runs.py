"""TREC run files at full precision, ranked the way trec_eval ranks them.

:func:`evals.trec.write_run` keeps six decimals, which turns BM25 scores that
differ in the seventh digit into ties that trec_eval then orders by doc id.
External runs are written with each score's shortest exact decimal (``repr``)
instead, and every ranking a report scores is put in trec_eval's order first
(score descending, exact ties by doc id descending), so a run file read back
with :func:`evals.trec.read_run` scores exactly as the stage that wrote it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from evals import trec


def trec_order(ranked: Sequence[tuple[str, float]]) -> list[tuple[str, float]]:
    """``(doc_id, score)`` pairs in trec_eval's order (each doc id once)."""
    return trec.ranking({"_": dict(ranked)})["_"]


def write_run(path: str | Path, ranked: Mapping[str, Sequence[tuple[str, float]]],
              tag: str) -> Path:
    """Write ``query_id -> [(doc_id, score)]`` (already in order) with exact scores."""
    trec._check_token(tag, "run tag")
    lines = []
    for query_id in sorted(ranked):
        trec._check_token(query_id, "query id")
        for rank, (doc_id, score) in enumerate(ranked[query_id], start=1):
            trec._check_token(doc_id, "doc id")
            lines.append(f"{query_id} Q0 {doc_id} {rank} {float(score)!r} {tag}\n")
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("".join(lines), encoding="utf-8")
    return target
