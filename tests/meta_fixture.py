"""Small real reports for the evals meta tests, built by the report builder itself.

Each question has one gold passage; a stage ranks it at a chosen rank (nDCG@10 of a single
relevant passage at rank r is 1 / log2(r + 1)) or not at all. ``shifts`` moves a stage's
rank of the gold passage per domain, so domains (or datasets) can disagree on purpose.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from pathlib import Path

from evals import report as rp

DOC = "x" * 400


def _hits(qid: str, gold_rank: int | None) -> list[rp.HitRecord]:
    ids = [f"{qid}:other{i}" for i in range(1, 12)]
    if gold_rank is not None:
        ids.insert(gold_rank - 1, f"{qid}:gold")
    return [rp.HitRecord(rank=r, chunk_id=c, doc_id=f"{c}.md", start=0, end=10,
                         score=1.0 / r, text=DOC[:10]) for r, c in enumerate(ids[:12], 1)]


def make_report(*, domains: Mapping[str, int], shifts: Mapping[str, Mapping[str, int]],
                seed: int = 0, version: str = "v9", dataset: str | None = None,
                texts: str = "question") -> dict:
    """A report over ``domains`` (name -> question count; "" for none) in which each stage
    of ``shifts`` (stage -> domain -> ranks moved up, negative: down) ranks the gold passage
    relative to the baseline's random rank 1-8."""
    rng = random.Random(seed)
    questions, ranks = [], {}
    for domain, count in domains.items():
        for i in range(count):
            qid = f"{domain or 'q'}-{i:03d}"
            text = f"{texts} {domain} {i}"
            questions.append(rp.Question(
                query_id=qid, text=text, kind="answerable", domain=domain,
                gold=(rp.GoldAnswer(doc_id=f"{qid}.md", quote=DOC[:5], start=0, end=5),)))
            ranks[qid] = (domain, rng.randint(1, 8))
    stages = [rp.StageResult(name="bm25", description="baseline", config={},
                             hits={q: _hits(q, r) for q, (_, r) in ranks.items()})]
    for stage, by_domain in shifts.items():
        hits = {}
        for qid, (domain, rank) in ranks.items():
            moved = rank - by_domain.get(domain, 0) + rng.choice((-1, 0, 0, 1))
            hits[qid] = _hits(qid, min(max(moved, 1), 11))
        stages.append(rp.StageResult(name=stage, description=stage, config={}, hits=hits))
    config = {} if dataset is None else {"dataset": {"name": dataset}}
    provenance = rp.Provenance(
        golden_version=version if dataset is None else f"external:{dataset}/test",
        golden_manifest_sha256="ab" * 32, groundkit_version="0.1.0", git_commit="f" * 40,
        python="3.11", libraries={})
    return rp.build_report(
        questions=questions, qrels={q.query_id: {f"{q.query_id}:gold": 1} for q in questions},
        stages=stages, baseline="bm25", provenance=provenance, config=config,
        settings=rp.Settings(measures=("nDCG@10", "Success@1"), resamples=200,
                             permutations=200),
        run={"created_at": "2030-01-01T00:00:00+00:00", "host": "test"})


def write_reports(folder: Path, reports: Sequence[tuple[str, dict]]) -> list[Path]:
    """Each ``(name, report)`` written as ``folder/name.json``."""
    return [rp.write_json(r, folder / f"{name}.json") for name, r in reports]
