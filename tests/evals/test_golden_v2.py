"""Golden corpus v2: exact counts, the split, provenance for every document, sampled items."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path

import pytest

from evals.golden import Golden, lint_golden, load_golden
from evals.golden.rules import probe_hits, shared_stems

V2 = Path(__file__).resolve().parents[2] / "golden" / "v2"


@pytest.fixture(scope="module")
def golden() -> Golden:
    return load_golden(V2)


def test_golden_v2_lints_clean_with_every_minimum() -> None:
    assert lint_golden(V2) == []


def test_golden_v2_has_exact_counts(golden: Golden) -> None:
    kinds = Counter(q.kind for q in golden.questions)
    domains = Counter(q.domain for q in golden.questions)
    assert golden.version == 2
    assert len(golden.documents) == 144
    assert kinds == {"answerable": 801, "ambiguous": 207, "no_answer": 203}
    assert domains == {"birchline": 421, "debian-reference": 161, "debian-policy": 123,
                       "git": 117, "postgresql": 105, "nginx": 102, "bash": 92, "sqlite": 90}
    assert sum(q.near_miss is not None for q in golden.questions) == 199


def test_every_question_has_a_part_dealt_one_two_two(golden: Golden) -> None:
    parts = Counter(q.split for q in golden.questions)
    no_answer = Counter(q.split for q in golden.questions if q.kind == "no_answer")
    assert parts == {"train": 242, "calibration": 485, "test": 484}
    assert no_answer == {"train": 40, "calibration": 82, "test": 81}


def test_v1s_documents_are_carried_byte_for_byte() -> None:
    v1 = V2.parent / "v1" / "docs"
    for path in sorted(p for p in v1.rglob("*") if p.is_file()):
        carried = V2 / "docs" / "birchline" / path.relative_to(v1)
        assert carried.read_bytes() == path.read_bytes(), path


def test_every_document_has_its_provenance_and_checksum() -> None:
    provenance = json.loads((V2 / "PROVENANCE.json").read_text(encoding="utf-8"))["documents"]
    docs = {p.relative_to(V2 / "docs").as_posix(): p for p in (V2 / "docs").rglob("*")
            if p.is_file()}
    assert set(provenance) == set(docs)
    for doc_id, record in provenance.items():
        assert record["sha256"] == hashlib.sha256(docs[doc_id].read_bytes()).hexdigest()
        assert record["licence"] and record["package"] and record["version"]


def test_every_paraphrase_shares_no_content_stem_and_every_probe_is_absent(golden: Golden) -> None:
    for q in golden.questions:
        if "paraphrase" in q.traits:
            assert not shared_stems(q.question, [a.quote for a in q.answers]), q.id
        domain = {d: t for d, t in golden.documents.items() if d.split("/")[0] == q.domain}
        assert all(probe_hits(p, domain) == [] for p in q.probes), q.id


def test_the_text_is_within_the_size_budget(golden: Golden) -> None:
    assert sum(len(t) for t in golden.documents.values()) < 1_500_000
