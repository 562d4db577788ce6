"""BEIR format: reading, writing, importing as a collection, exporting back, round trips."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evals.external.beir import read_beir, read_qrels_tsv, write_beir
from evals.external.dataset import Dataset, DatasetError, Doc, join_text, split_text
from evals.external.export import golden_to_beir
from evals.external.materialise import (
    SIDECAR,
    import_collection,
    load_materialised,
    materialise,
    read_back,
    safe_name,
)
from evals.external.prepare import prepare
from evals.external.registry import DatasetSpec
from evals.external.suite import ExternalSuite
from evals.external.synthetic import make_dataset
from evals.stages import STAGES
from groundkit.collection import Collection
from groundkit.errors import IntegrityError

REPO = Path(__file__).resolve().parents[2]


def judged(dataset: Dataset) -> Dataset:
    """The dataset as a BEIR split holds it: only the judged queries."""
    queries = {q: t for q, t in dataset.queries.items() if q in dataset.qrels}
    return Dataset(name=dataset.name, docs=dataset.docs, queries=queries, qrels=dataset.qrels)


def test_a_written_beir_directory_reads_back_identically(tmp_path: Path) -> None:
    dataset = judged(make_dataset())
    write_beir(dataset, tmp_path / "ds")
    again = read_beir(tmp_path / "ds", name=dataset.name)
    assert again.docs == dataset.docs
    assert again.queries == dataset.queries
    assert again.qrels == dataset.qrels
    assert again.fingerprint() == dataset.fingerprint()


def test_a_gzipped_corpus_reads_like_a_plain_one(tmp_path: Path) -> None:
    dataset = judged(make_dataset())
    write_beir(dataset, tmp_path / "gz", gzip_corpus=True)
    assert (tmp_path / "gz" / "corpus.jsonl.gz").is_file()
    assert read_beir(tmp_path / "gz").docs == dataset.docs


def test_qrels_with_crlf_line_ends_and_a_header_parse(tmp_path: Path) -> None:
    path = tmp_path / "test.tsv"
    path.write_bytes(b"query-id\tcorpus-id\tscore\r\n1\t31715818\t1\r\n1\t14717500\t2\r\n")
    assert read_qrels_tsv(path) == {"1": {"31715818": 1, "14717500": 2}}


def test_a_malformed_corpus_line_is_an_error_naming_the_line(tmp_path: Path) -> None:
    root = tmp_path / "bad"
    write_beir(judged(make_dataset()), root)
    lines = (root / "corpus.jsonl").read_text().splitlines()
    lines[2] = '{"title": "no id"}'
    (root / "corpus.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(DatasetError, match=r"corpus.jsonl:3"):
        read_beir(root)


def test_a_missing_split_names_the_splits_that_exist(tmp_path: Path) -> None:
    write_beir(judged(make_dataset()), tmp_path / "ds")
    with pytest.raises(DatasetError, match="splits here: test"):
        read_beir(tmp_path / "ds", split="dev")


def test_flat_join_is_title_newline_text_and_splits_back() -> None:
    doc = Doc(doc_id="1", title="A title", text="Body text.")
    assert join_text(doc, "flat") == "A title\nBody text."
    assert join_text(Doc(doc_id="2", text="only"), "flat") == "\nonly"
    assert split_text("A title\nBody text.", "A title", "flat") == "Body text."
    assert join_text(doc, "text") == "Body text."


def test_safe_names_are_unique_even_across_case_and_unsafe_characters() -> None:
    taken: set[str] = set()
    names = [safe_name(i, taken) for i in ("d1", "Case", "case", "Doc/3", "../x", "é")]
    assert names[0] == "d1" and names[1] == "Case"
    assert len({n.casefold() for n in names}) == len(names)
    assert all("/" not in n and not n.startswith(".") for n in names)


def test_import_writes_one_file_per_document_with_a_sidecar_mapping(tmp_path: Path) -> None:
    dataset = make_dataset()
    m = materialise(dataset, tmp_path / "m", join="flat")
    assert len(m.files) == len(dataset.docs)
    assert set(m.files.values()) == {d.doc_id for d in dataset.docs}
    doc = dataset.docs[3]
    path = m.path_of()[doc.doc_id]
    assert (m.docs_dir / path).read_text(encoding="utf-8") == join_text(doc, "flat")
    assert load_materialised(tmp_path / "m").fingerprint == dataset.fingerprint()
    assert (tmp_path / "m" / SIDECAR).is_file()


def test_an_imported_collection_has_one_chunk_per_document(tmp_path: Path) -> None:
    dataset = make_dataset()
    m = materialise(dataset, tmp_path / "m")
    import_collection(m, "ext", home=tmp_path / "home")
    with Collection.open("ext", tmp_path / "home") as coll:
        chunks = coll.chunks()
    assert len(chunks) == len(dataset.docs)
    assert {m.files[c.doc_id] for c in chunks} == {d.doc_id for d in dataset.docs}


def test_reimporting_unchanged_data_reuses_the_collection(tmp_path: Path) -> None:
    m = materialise(make_dataset(), tmp_path / "m")
    assert import_collection(m, "ext", home=tmp_path / "home") is not None
    assert import_collection(m, "ext", home=tmp_path / "home") is None


def test_an_edited_document_file_is_refused_on_export(tmp_path: Path) -> None:
    dataset = make_dataset()
    m = materialise(dataset, tmp_path / "m")
    victim = next(p for p, d in m.files.items() if m.titles[d])
    (m.docs_dir / victim).write_text("something else entirely", encoding="utf-8")
    with pytest.raises(IntegrityError, match="no longer starts with its title"):
        read_back(tmp_path / "m")


def _bm25_run(dataset: Dataset, cache: Path) -> dict[str, list[tuple[str, float]]]:
    with prepare(dataset, join="flat", cache=cache) as prep:
        spec = DatasetSpec(name=dataset.name, description="", load=lambda _: dataset)
        suite = ExternalSuite(spec, prep, cache)
        run = suite.open(STAGES["bm25"], lambda _: None)
        return {q.query_id: [(h.chunk_id, h.score) for h in run.rank(q, 1000, 0)]
                for q in suite.questions}


def test_export_then_reimport_gives_identical_judgments_and_runs(tmp_path: Path) -> None:
    original = judged(make_dataset())
    write_beir(original, tmp_path / "beir-a")
    first = read_beir(tmp_path / "beir-a", name="rt")
    run_a = _bm25_run(first, tmp_path / "cache")
    folder = next((tmp_path / "cache").iterdir())
    write_beir(read_back(folder), tmp_path / "beir-b")
    second = read_beir(tmp_path / "beir-b", name="rt")
    assert second.qrels == first.qrels
    assert second.docs == first.docs
    assert _bm25_run(second, tmp_path / "cache2") == run_a
    assert any(run_a.values())


def test_golden_v1_exports_chunks_whose_judgments_survive_reimport(tmp_path: Path) -> None:
    exported = golden_to_beir(REPO / "golden" / "v1", tmp_path / "golden-beir")
    corpus = [json.loads(line) for line in
              (tmp_path / "golden-beir" / "corpus.jsonl").read_text().splitlines()]
    first = corpus[0]
    source = (REPO / "golden" / "v1" / "docs" / first["metadata"]["doc_id"]).read_text()
    assert source[first["metadata"]["start"]:first["metadata"]["end"]] == first["text"]
    again = read_beir(tmp_path / "golden-beir")
    assert again.qrels == exported.qrels
    assert len(again.docs) == len(corpus) and again.qrels
    m = materialise(again, tmp_path / "m", join="text")
    import_collection(m, "g", home=tmp_path / "home")
    with Collection.open("g", tmp_path / "home") as coll:
        assert len(coll.chunks()) == len(again.docs)


def test_a_gzip_corpus_that_is_truncated_is_an_integrity_error(tmp_path: Path) -> None:
    root = tmp_path / "ds"
    write_beir(judged(make_dataset()), root, gzip_corpus=True)
    data = (root / "corpus.jsonl.gz").read_bytes()
    (root / "corpus.jsonl.gz").write_bytes(data[: len(data) // 2])
    with pytest.raises(IntegrityError):
        read_beir(root)
