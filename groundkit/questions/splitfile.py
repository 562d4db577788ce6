"""``grk questions split``: deal a question file's train / calibration / test parts.

The parts are :func:`.split.assign`'s, the golden versions' own rule: stratified by
(domain, kind, near miss), ordered by traits after a seeded shuffle, dealt 1:2:2
(train, calibration, test). Each line gets its part as ``split``; every other field
and the order of the lines are kept. ``grk calibrate`` then calibrates on the
``calibration`` part only, and ``grk eval`` calibrates its gate on that part and
reports abstention on ``test``: no question is used for both.

A file already split is not dealt again by accident: a re-deal would move questions
a calibration has seen into the test part. ``keep`` deals only the lines without a
part (questions added since); ``force`` deals them all anew.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import UsageError
from .files import read_rows, write_rows
from .model import KINDS, PARTS, Answer, Question
from .split import assign, counts

_NEAR = Answer(doc_id="", quote="", occurrence=None, start=0, end=0)


def _question(row: dict[str, Any]) -> Question:
    kind = row.get("kind")
    if kind not in KINDS:
        raise UsageError(f"{row['id']}: kind must be one of {', '.join(KINDS)}, got {kind!r}")
    traits = row.get("traits") or []
    return Question(id=row["id"], kind=str(kind), question=str(row.get("question", "")),
                    traits=tuple(str(t) for t in traits), answers=(),
                    domain=str(row.get("domain", "")),
                    near_miss=_NEAR if row.get("near_miss") else None)


def split_file(path: str | Path, seed: int, *, keep: bool = False,
               force: bool = False) -> dict[str, Any]:
    """Deal ``path``'s parts with ``seed`` and write them into it; returns the counts."""
    rows = read_rows(path)
    ids = [r["id"] for r in rows]
    if len(set(ids)) != len(ids):
        raise UsageError(f"{path}: question ids repeat; give every question its own id")
    dealt = [r for r in rows if r.get("split") in PARTS]
    if dealt and not (keep or force):
        raise UsageError(f"{path}: {len(dealt)} of {len(rows)} questions already have a part; "
                         "--keep deals only the others, --force deals them all anew (a "
                         "calibration made with the old parts then saw test questions)")
    todo = rows if force else [r for r in rows if r.get("split") not in PARTS]
    parts = assign([_question(r) for r in todo], seed)
    for r in todo:
        r["split"] = parts[r["id"]]
    write_rows(path, rows)
    return {"path": str(path), "seed": seed, "dealt": len(todo), "kept": len(rows) - len(todo),
            "parts": counts({r["id"]: r["split"] for r in rows}),
            "no_answer": counts({r["id"]: r["split"] for r in rows
                                 if r.get("kind") == "no_answer"})}
