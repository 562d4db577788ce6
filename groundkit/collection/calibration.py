"""Calibrating a collection's abstention gate, storing it, and loading it fail-closed.

``grk calibrate`` runs a person's questions (the golden format: one JSON object a
line with ``question`` and ``kind``; ``no_answer`` questions are the ones the
documents cannot answer; a file split by ``grk questions split`` gives only its
``calibration`` part, and a ``draft`` is refused) through each mode, keeps the
confidence scores of the no-answer ones as the mode's
:class:`~groundkit.retrieval.gate.Calibration`, and
stores it in the collection (``meta["calibration:<mode>"]``), stamped with the
generation, analyzer and embedding it was computed on and the questions' sha256.
Loading a calibration whose stamp no longer matches the collection is a
:class:`~groundkit.errors.CalibrationError` naming the fix, never a silent pass.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .. import store
from ..errors import CalibrationError, UsageError
from ..retrieval import gate, modes
from .derived import analyzer_of
from .indexer import exclusive
from .snapshot import Snapshot

META_PREFIX = "calibration:"
KINDS = ("answerable", "ambiguous", "no_answer")
SLACK = 0.05
OVERSHOOT = 0.1
"""Warn when a calibration delivers more than alpha + SLACK with a chance above this."""
CALIBRATION_PART = "calibration"
"""A split file (``grk questions split``) calibrates on this part only, never on the test part."""


@dataclass(frozen=True, slots=True)
class CalibrationQuestion:
    text: str
    answerable: bool
    part: str = ""
    """The file's split part (``train``, ``calibration``, ``test``), "" when it has none."""


def read_questions(path: str | Path) -> tuple[list[CalibrationQuestion], str]:
    """The questions of a golden-format file, and the file's sha256 (``UsageError`` if bad)."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise UsageError(f"cannot read the questions file {path}: {exc.strerror}") from None
    out = []
    for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise UsageError(f"{path}:{number}: invalid JSON: {exc.msg}") from None
        if not (isinstance(obj, dict) and isinstance(obj.get("question"), str)
                and obj.get("kind") in KINDS):
            raise UsageError(f"{path}:{number}: a question needs a 'question' string and a "
                             f"'kind' of {', '.join(KINDS)}")
        if obj.get("status") == "draft":
            raise UsageError(f"{path}:{number}: a draft question, not yet accepted by a person "
                             "(grk questions review accepts or drops drafts)")
        out.append(CalibrationQuestion(obj["question"], obj["kind"] != "no_answer",
                                       str(obj.get("split", ""))))
    if any(q.part for q in out):  # split by grk questions split: calibrate on its part only
        out = [q for q in out if q.part == CALIBRATION_PART]
    return out, hashlib.sha256(data).hexdigest()


def calibrate(snap: Snapshot, questions: str | Path, *, modes: Sequence[str] | None = None,
              alpha: float = gate.ALPHA) -> list[gate.Calibration]:
    """Calibrate ``modes`` (default: bm25, plus dense and hybrid when the collection has
    vectors) with a golden-format questions file, and store the calibrations.

    Fails closed before storing anything: no no-answer questions, or fewer than
    ``alpha`` can support (:meth:`~groundkit.retrieval.gate.Calibration.check_alpha`).
    """
    found, sha256 = read_questions(questions)
    chosen = list(modes or ["bm25", *(("dense", "hybrid") if snap.embedding_spec() else ())])
    calibrations = [compute(snap, mode, found, sha256, alpha) for mode in chosen]
    for c in calibrations:
        c.check_alpha(c.alpha)
    save(snap.directory, calibrations)
    return calibrations


def stamp(snap: Snapshot) -> dict[str, Any]:
    """What a calibration must match: the generation, analyzer and embedding it scored."""
    return {"generation": snap.generation, "analyzer": analyzer_of(snap.config).identity,
            "embedding": snap.config.get("embedding", {}).get("spec")}


def compute(snap: Snapshot, mode: str, questions: Sequence[CalibrationQuestion], sha256: str,
            alpha: float = gate.ALPHA) -> gate.Calibration:
    """Score every question in ``mode``; the no-answer scores become the calibration."""
    scorer = gate.SCORERS[mode]
    scores = [gate.score(scorer, modes.evidence(snap, mode, q.text)) for q in questions]
    no_answer = [s for s, q in zip(scores, questions, strict=True) if not q.answerable]
    if not no_answer:
        raise CalibrationError("calibrating needs no_answer questions (questions the documents "
                               "cannot answer); the file has none")
    stamped = stamp(snap)
    calibration = gate.Calibration(
        mode=mode, signals=dict(scorer.signals), rule=scorer.rule,
        scores={k: tuple(sorted(s[k] for s in no_answer)) for k in scorer.signals},
        alpha=alpha, questions_sha256=sha256, generation=stamped["generation"],
        analyzer=stamped["analyzer"],
        embedding={"spec": stamped["embedding"]} if stamped["embedding"] else None,
        created_at=datetime.now(UTC).isoformat(timespec="seconds"))
    return _with_stats(calibration, scores, questions)


def _with_stats(calibration: gate.Calibration, scores: Sequence[Mapping[str, float]],
                questions: Sequence[CalibrationQuestion]) -> gate.Calibration:
    """The calibration with what it measures on its own questions (in-sample)."""
    def answered(s: Mapping[str, float]) -> bool:
        p = {k: gate.p_value(calibration.scores[k], v) for k, v in s.items()}
        return gate.combine(p, calibration.rule) <= calibration.alpha

    answerable = [answered(s) for s, q in zip(scores, questions, strict=True) if q.answerable]
    no_answer = [answered(s) for s, q in zip(scores, questions, strict=True) if not q.answerable]
    stats = {"questions": len(questions), "no_answer": len(no_answer),
             "answerable": len(answerable),
             "false_answer_rate_in_sample": sum(no_answer) / len(no_answer),
             "coverage_in_sample": sum(answerable) / len(answerable) if answerable else None}
    return gate.Calibration(**{**_fields(calibration), "stats": stats})


def _fields(calibration: gate.Calibration) -> dict[str, Any]:
    return {name: getattr(calibration, name) for name in gate.Calibration.__dataclass_fields__}


def warnings(calibration: gate.Calibration) -> list[str]:
    """What the question set is too small to promise."""
    out = []
    if calibration.alpha < 1 / (calibration.n0 + 1):
        out.append(f"{calibration.n0} no-answer question(s) cannot support alpha "
                   f"{calibration.alpha}: the smallest is {1 / (calibration.n0 + 1):.3f}")
    n0, alpha = calibration.n0, calibration.alpha
    chance = gate.overshoot(n0, alpha, SLACK)
    if chance > OVERSHOOT:
        enough = needed_no_answer(alpha, start=n0)
        out.append(f"with {n0} no-answer questions, the false-answer rate this calibration "
                   f"delivers exceeds {alpha + SLACK:.2g} with probability {chance:.0%} (its mean "
                   f"is at most {alpha:g}); about {enough} would bring that under "
                   f"{OVERSHOOT:.0%}")
    return out


def needed_no_answer(alpha: float = gate.ALPHA, *, start: int = 1) -> int:
    """The fewest no-answer questions (from ``start``) whose calibration at ``alpha`` delivers
    more than ``alpha + SLACK`` with a chance of at most OVERSHOOT (:func:`gate.overshoot`)."""
    return next(n for n in range(max(1, start), 100_000)
                if gate.overshoot(n, alpha, SLACK) <= OVERSHOOT and n + 1 >= 1 / alpha)


def save(directory: Path, calibrations: Iterable[gate.Calibration]) -> None:
    """Store calibrations in the collection, holding its writer lock."""
    with exclusive(directory):
        conn = store.connect(directory)
        try:
            with store.transaction(conn):
                for calibration in calibrations:
                    store.set_meta(conn, META_PREFIX + calibration.mode, calibration.to_dict())
        finally:
            conn.close()


def load(snap: Snapshot, mode: str) -> gate.Calibration:
    """The stored calibration of ``mode``, if it still matches the collection.

    Read on every call, so one stored while the collection is open is seen; parsed
    and checked again only when its stored text changed.
    """
    key = META_PREFIX + mode
    text = store.get_meta_text(snap.conn, key)
    known = snap.memo.get(key)
    if text is not None and known is not None and known[0] == text:
        return known[1]  # type: ignore[no-any-return]
    calibration = _checked(snap, mode, text)
    snap.memo[key] = (text, calibration)
    return calibration


def _checked(snap: Snapshot, mode: str, text: str | None) -> gate.Calibration:
    fix = (f"calibrate it with: grk calibrate --collection {snap.name} --questions FILE "
           f"(FILE holds questions, some of them no_answer)")
    if text is None:
        raise CalibrationError(f"collection {snap.name!r} has no calibration for mode {mode!r}; "
                               + fix)
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        data = None
    calibration = gate.Calibration.from_dict(data if isinstance(data, dict) else {})
    now = stamp(snap)
    then = {"generation": calibration.generation, "analyzer": calibration.analyzer,
            "embedding": (calibration.embedding or {}).get("spec")}
    stale = [f"{key} {then[key]!r} -> {now[key]!r}" for key in now if then[key] != now[key]]
    if stale:
        raise CalibrationError(f"the {mode} calibration of {snap.name!r} is stale "
                               f"({'; '.join(stale)}): re-index changed what it scored; "
                               "recalibrate with grk calibrate")
    return calibration
