"""The recorded train / calibration / test split of a golden version (version 2 on).

Abstention learns on ``train``, is calibrated on ``calibration`` and reported on
``test``, so no question is used twice. The split is computed once, from a seed,
and kept in ``MANIFEST.json``; stratified so that every part gets its share of
each (domain, kind, near miss) group, and within a group of each trait set.

Within a stratum the questions are ordered by their traits (a seeded shuffle
breaks ties) and dealt out in the repeating pattern :data:`PATTERN`, so each run
of five gets one ``train``, two ``calibration`` and two ``test`` questions:
20/40/40 overall, and as close to it in each stratum as its size allows.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Iterable, Mapping

from .model import PARTS, Question

SEED = 20261201
PATTERN: tuple[str, ...] = ("calibration", "test", "train", "calibration", "test")
SHARES: dict[str, float] = {part: PATTERN.count(part) / len(PATTERN) for part in PARTS}


def stratum(q: Question) -> tuple[str | bool, ...]:
    """(domain, kind, near miss), and ``conflict`` for those questions, so version 4's
    conflict questions are dealt out on their own, leaving the others' parts as they were."""
    base: tuple[str | bool, ...] = (q.domain, q.kind, q.near_miss is not None)
    return (*base, "conflict") if "conflict" in q.traits else base


def assign(questions: Iterable[Question], seed: int = SEED) -> dict[str, str]:
    """``question id -> part`` for every question, deterministic for a seed."""
    groups: dict[tuple[str | bool, ...], list[Question]] = defaultdict(list)
    for q in questions:
        groups[stratum(q)].append(q)
    parts: dict[str, str] = {}
    offset = 0
    for key in sorted(groups, key=lambda k: (len(k), k)):  # conflict strata last
        rng = random.Random(f"{seed}:{key}")
        members = sorted(groups[key], key=lambda q: q.id)
        rng.shuffle(members)
        members.sort(key=lambda q: tuple(sorted(q.traits)))
        for i, q in enumerate(members):
            parts[q.id] = PATTERN[(offset + i) % len(PATTERN)]
        offset += len(members)  # carry the phase so small strata do not all start alike
    return dict(sorted(parts.items()))


def problems(questions: Iterable[Question], recorded: Mapping[str, str] | None,
             seed: int | None) -> list[str]:
    """What is wrong with a manifest's split: missing, unknown parts, or not the seeded one."""
    questions = list(questions)
    if not isinstance(recorded, Mapping) or not isinstance(seed, int):
        return ["MANIFEST.json: no split (python -m evals.golden manifest PATH writes it)"]
    found = [f"{qid}: split part {part!r} is not one of {', '.join(PARTS)}"
             for qid, part in sorted(recorded.items()) if part not in PARTS]
    if dict(sorted(recorded.items())) != assign(questions, seed):
        found.append(f"MANIFEST.json: the split is not the one seed {seed} gives for these "
                     "questions (regenerate the manifest of a draft version)")
    return found


def counts(parts: Mapping[str, str]) -> dict[str, int]:
    return {part: sum(1 for p in parts.values() if p == part) for part in PARTS}
