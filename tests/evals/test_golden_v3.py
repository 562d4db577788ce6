"""Golden corpus v3: v2 carried over, the formats slice, its counts, the extractor pins."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path

import pytest

from evals.golden import Golden, lint_golden, load_golden
from evals.golden.rules import probe_hits, shared_stems

GOLDEN = Path(__file__).resolve().parents[2] / "golden"
V3 = GOLDEN / "v3"
SLICE = ("r-manuals", "gnuplot", "debian-handbook")


@pytest.fixture(scope="module")
def golden() -> Golden:
    return load_golden(V3)


def test_golden_v3_lints_clean_with_every_minimum() -> None:
    assert lint_golden(V3) == []


def test_golden_v3_has_exact_counts(golden: Golden) -> None:
    kinds = Counter(q.kind for q in golden.questions)
    domains = Counter(q.domain for q in golden.questions)
    assert golden.version == 3
    assert len(golden.documents) == 172
    assert kinds == {"answerable": 950, "ambiguous": 258, "no_answer": 265}
    assert {d: domains[d] for d in SLICE} == {"r-manuals": 66, "gnuplot": 66,
                                               "debian-handbook": 130}
    assert sum(domains[d] for d in SLICE) >= 250
    assert sum(q.near_miss is not None for q in golden.questions) == 261
    assert Counter(q.split for q in golden.questions) == {"train": 295, "calibration": 589,
                                                          "test": 589}


def test_v2_is_carried_byte_for_byte_questions_included(golden: Golden) -> None:
    v2 = GOLDEN / "v2"
    for path in sorted(p for p in (v2 / "docs").rglob("*") if p.is_file()):
        assert (V3 / "docs" / path.relative_to(v2 / "docs")).read_bytes() == path.read_bytes()
    v2_lines = (v2 / "questions.jsonl").read_text(encoding="utf-8").splitlines()
    v3_lines = (V3 / "questions.jsonl").read_text(encoding="utf-8").splitlines()
    assert v3_lines[:len(v2_lines)] == v2_lines
    assert all(json.loads(line)["id"] >= "q4000" for line in v3_lines[len(v2_lines):])


def test_the_formats_slice_is_read_through_its_extractors(golden: Golden) -> None:
    formats = Counter(identity.split("/")[0] for identity in golden.extractors.values())
    assert formats == {"html": 20, "pdf": 3, "docx": 2, "odt": 2, "epub": 1}
    assert all(doc_id.split("/")[0] in SLICE for doc_id in golden.extractors)
    manifest = json.loads((V3 / "MANIFEST.json").read_text(encoding="utf-8"))
    assert manifest["extractors"] == golden.extractors
    # every format has questions answered in it
    answered = {golden.extractors[a.doc_id].split("/")[0] for q in golden.questions
                for a in q.answers if a.doc_id in golden.extractors}
    assert answered == set(formats)
    pdf = golden.documents["gnuplot/gnuplot.pdf"]
    assert "%PDF" not in pdf[:100] and len(pdf) > 500_000  # a text view, not the bytes


def test_every_new_document_has_its_provenance(golden: Golden) -> None:
    provenance = json.loads((V3 / "PROVENANCE.json").read_text(encoding="utf-8"))
    documents = provenance["documents"]
    assert set(documents) == set(golden.documents)
    for doc_id in golden.extractors:
        record = documents[doc_id]
        data = (V3 / "docs" / doc_id).read_bytes()
        assert record["sha256"] == hashlib.sha256(data).hexdigest()
        assert record["package"] and record["version"] and record["licence"]
        made = doc_id.endswith((".docx", ".odt", ".epub"))
        assert ("converter" in record) == made, doc_id
        if not made:  # copied byte for byte from the package
            assert record["source_sha256"] == record["sha256"]
    assert len(provenance["twins"]) == 49


def test_every_paraphrase_shares_no_content_stem_and_every_probe_is_absent(
        golden: Golden) -> None:
    for q in golden.questions:
        if q.id < "q4000":
            continue  # v2's are checked by test_golden_v2
        if "paraphrase" in q.traits:
            assert not shared_stems(q.question, [a.quote for a in q.answers]), q.id
        domain = {d: t for d, t in golden.documents.items() if d.split("/")[0] == q.domain}
        assert all(probe_hits(p, domain) == [] for p in q.probes), q.id
