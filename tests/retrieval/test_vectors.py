"""The LanceDB vector store: build, exact search, reuse, and failing closed on open."""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("lancedb")

from groundkit.embeddings import EmbeddingIdentity
from groundkit.errors import IndexMismatchError, UsageError
from groundkit.retrieval.vector_files import IDS, MATRIX, META, TABLE
from groundkit.retrieval.vectors import VectorStore
from groundkit.testing import HashingProvider

TEXTS = {
    "c:0001": "the refund window is thirty days from delivery",
    "c:0002": "deployment logs are kept for ninety days",
    "c:0003": "our office cat is called Biscuit",
    "c:0004": "refunds are paid back to the original card",
    "c:0005": "logs older than ninety days are deleted",
}
STAMP = {"generation": 3, "collection": "notes"}


@pytest.fixture
def provider() -> HashingProvider:
    return HashingProvider(dimension=32)


def build(
    directory: Path,
    provider: HashingProvider,
    texts: dict[str, str] = TEXTS,
    stamp: dict[str, object] = STAMP,
    previous: VectorStore | None = None,
) -> VectorStore:
    return VectorStore.build(
        directory,
        stamp,
        provider.identity,
        list(texts),
        list(texts.values()),
        provider,
        previous=previous,
    )


def test_a_built_store_opens_with_the_same_stamp_and_identity(
    tmp_path: Path, provider: HashingProvider
) -> None:
    built = build(tmp_path / "vectors", provider)

    opened = VectorStore.open(tmp_path / "vectors", STAMP, provider.identity)

    assert len(opened) == 5
    assert opened.chunk_ids == tuple(sorted(TEXTS))
    assert np.array_equal(opened.vectors, built.vectors)
    meta = json.loads((tmp_path / "vectors" / META).read_text())
    assert meta["stamp"] == STAMP and meta["rows"] == 5
    assert meta["identity"] == provider.identity.to_dict()


def test_search_ranks_by_cosine_similarity(tmp_path: Path, provider: HashingProvider) -> None:
    store = build(tmp_path / "vectors", provider)
    query = provider.embed(["how long are deployment logs kept"], kind="query")[0]

    hits = store.search(query, top_k=2)

    assert hits[0][0] == "c:0002"
    expected = float(store.vector("c:0002") @ query)  # type: ignore[operator]
    assert hits[0][1] == pytest.approx(expected)
    assert len(hits) == 2 and hits[0][1] >= hits[1][1]


def test_query_embeds_with_the_provider_and_searches(
    tmp_path: Path, provider: HashingProvider
) -> None:
    store = build(tmp_path / "vectors", provider)

    assert store.query(provider, "refund window", top_k=1)[0][0] == "c:0001"


def test_equal_scores_are_ordered_by_chunk_id(tmp_path: Path, provider: HashingProvider) -> None:
    texts = {"c:b": "same words", "c:a": "same words", "c:c": "other text entirely"}
    store = build(tmp_path / "vectors", provider, texts)
    query = provider.embed(["same words"], kind="query")[0]

    assert [cid for cid, _ in store.search(query, top_k=2)] == ["c:a", "c:b"]
    assert [cid for cid, _ in store.search(query, top_k=1)] == ["c:a"]


def test_score_threshold_applies_to_cosine_similarity(
    tmp_path: Path, provider: HashingProvider
) -> None:
    store = build(tmp_path / "vectors", provider)
    query = provider.embed(["deployment logs are kept for ninety days"], kind="query")[0]
    everything = store.search(query, top_k=5)

    kept = store.search(query, top_k=5, score_threshold=everything[1][1])

    assert kept == everything[:2]
    assert store.search(query, top_k=5, score_threshold=1.01) == []


def test_rebuilding_reuses_the_vectors_of_unchanged_chunks(
    tmp_path: Path, provider: HashingProvider
) -> None:
    first = build(tmp_path / "gen-3", provider)
    changed = dict(TEXTS)
    del changed["c:0003"]
    changed["c:0006"] = "a brand new paragraph about refunds"
    counting = HashingProvider(dimension=32)

    second = build(tmp_path / "gen-4", counting, changed, {**STAMP, "generation": 4}, first)

    assert second.stats is not None
    assert (second.stats.rows, second.stats.reused, second.stats.embedded) == (5, 4, 1)
    assert counting.texts_embedded == 1
    assert np.array_equal(second.vector("c:0001"), first.vector("c:0001"))  # type: ignore[arg-type]


def test_vectors_of_another_identity_are_not_reused(
    tmp_path: Path, provider: HashingProvider
) -> None:
    first = build(tmp_path / "gen-3", provider)
    other = HashingProvider("hashing-v2", dimension=32)

    second = build(tmp_path / "gen-4", other, previous=first)

    assert second.stats is not None and second.stats.reused == 0


def test_progress_hears_about_each_embedding_batch(
    tmp_path: Path, provider: HashingProvider
) -> None:
    calls: list[tuple[int, int, str]] = []

    VectorStore.build(
        tmp_path / "vectors",
        STAMP,
        provider.identity,
        list(TEXTS),
        list(TEXTS.values()),
        provider,
        progress=lambda done, total, label: calls.append((done, total, label)),
        batch_size=2,
    )

    assert calls == [(0, 5, "embedding"),  # how many, before the first batch
                     (2, 5, "embedding"), (4, 5, "embedding"), (5, 5, "embedding")]


def test_building_over_an_existing_store_replaces_it_and_leaves_no_temporaries(
    tmp_path: Path, provider: HashingProvider
) -> None:
    build(tmp_path / "vectors", provider)
    build(tmp_path / "vectors", provider, {"c:0009": "only one"}, {**STAMP, "generation": 4})

    assert (
        len(VectorStore.open(tmp_path / "vectors", {**STAMP, "generation": 4}, provider.identity))
        == 1
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["vectors"]


def test_an_empty_store_searches_to_nothing(tmp_path: Path, provider: HashingProvider) -> None:
    build(tmp_path / "vectors", provider, {})
    store = VectorStore.open(tmp_path / "vectors", STAMP, provider.identity)

    assert store.search(np.ones(32, dtype=np.float32), top_k=3) == []


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"model": "other-model"}, "model 'hashing' != 'other-model'"),
        ({"provider": "ollama"}, "provider 'hashing' != 'ollama'"),
        ({"dimension": 64}, "dimension 32 != 64"),
        ({"query_prefix": "search_query: "}, "query_prefix"),
    ],
)
def test_opening_with_another_embedding_identity_fails_closed(
    tmp_path: Path, provider: HashingProvider, change: dict[str, object], message: str
) -> None:
    build(tmp_path / "vectors", provider)
    other = dataclasses.replace(provider.identity, **change)  # type: ignore[arg-type]

    with pytest.raises(IndexMismatchError, match=message):
        VectorStore.open(tmp_path / "vectors", STAMP, other)


def test_opening_a_stale_generation_fails_closed(tmp_path: Path, provider: HashingProvider) -> None:
    build(tmp_path / "vectors", provider)

    with pytest.raises(IndexMismatchError, match=r"generation=3.*generation=4"):
        VectorStore.open(tmp_path / "vectors", {**STAMP, "generation": 4}, provider.identity)
    with pytest.raises(IndexMismatchError, match="collection"):
        VectorStore.open(tmp_path / "vectors", {**STAMP, "collection": "work"}, provider.identity)


def test_opening_reads_the_matrix_and_never_imports_lancedb(
    tmp_path: Path, provider: HashingProvider
) -> None:
    built = build(tmp_path / "vectors", provider)
    script = ("import sys; from groundkit.retrieval.vectors import VectorStore; "
              "from groundkit.embeddings import EmbeddingIdentity; "
              f"i = EmbeddingIdentity.from_dict({provider.identity.to_dict()!r}); "
              f"s = VectorStore.open({str(tmp_path / 'vectors')!r}, {STAMP!r}, i); "
              "print(len(s), 'lancedb' in sys.modules, 'pyarrow' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == [str(len(built)), "False", "False"]


def test_a_missing_or_damaged_matrix_fails_closed(
    tmp_path: Path, provider: HashingProvider
) -> None:
    build(tmp_path / "vectors", provider)
    matrix = tmp_path / "vectors" / MATRIX
    data = bytearray(matrix.read_bytes())
    data[-1] ^= 0x01  # the lowest bit of the last vector's last value: norms still hold
    matrix.write_bytes(bytes(data))
    with pytest.raises(IndexMismatchError, match=r"damaged matrix.*does not hash as recorded"):
        VectorStore.open(tmp_path / "vectors", STAMP, provider.identity)

    matrix.unlink()
    with pytest.raises(IndexMismatchError, match="damaged matrix"):
        VectorStore.open(tmp_path / "vectors", STAMP, provider.identity)


def test_a_lost_table_fails_closed_though_the_matrix_holds(
    tmp_path: Path, provider: HashingProvider
) -> None:
    build(tmp_path / "vectors", provider)
    shutil.rmtree(tmp_path / "vectors" / f"{TABLE}.lance")
    with pytest.raises(IndexMismatchError, match="lost its table"):
        VectorStore.open(tmp_path / "vectors", STAMP, provider.identity)


def test_a_store_without_the_matrix_reads_its_table_and_fails_closed_on_damage(
    tmp_path: Path, provider: HashingProvider
) -> None:
    built = build(tmp_path / "vectors", provider)
    meta_path = tmp_path / "vectors" / META
    meta = json.loads(meta_path.read_text())
    del meta["matrix"]  # as a store written before the matrix existed
    meta_path.write_text(json.dumps(meta))
    (tmp_path / "vectors" / MATRIX).unlink()
    (tmp_path / "vectors" / IDS).unlink()
    older = VectorStore.open(tmp_path / "vectors", STAMP, provider.identity)
    assert older.chunk_ids == built.chunk_ids
    assert np.array_equal(older.vectors, built.vectors)

    table = tmp_path / "vectors" / f"{TABLE}.lance"
    for data in sorted((table / "data").iterdir()):
        data.write_bytes(b"not a lance file")
    with pytest.raises(IndexMismatchError, match="damaged table"):
        VectorStore.open(tmp_path / "vectors", STAMP, provider.identity)

    shutil.rmtree(table)
    with pytest.raises(IndexMismatchError, match="damaged table"):
        VectorStore.open(tmp_path / "vectors", STAMP, provider.identity)


def test_a_missing_or_garbled_meta_file_fails_closed(
    tmp_path: Path, provider: HashingProvider
) -> None:
    with pytest.raises(IndexMismatchError, match="no vector store"):
        VectorStore.open(tmp_path / "nowhere", STAMP, provider.identity)
    build(tmp_path / "vectors", provider)
    (tmp_path / "vectors" / META).write_text("{not json")

    with pytest.raises(IndexMismatchError, match="unreadable"):
        VectorStore.open(tmp_path / "vectors", STAMP, provider.identity)


def test_a_row_count_that_disagrees_with_the_table_fails_closed(
    tmp_path: Path, provider: HashingProvider
) -> None:
    build(tmp_path / "vectors", provider)
    meta_path = tmp_path / "vectors" / META
    meta = json.loads(meta_path.read_text())
    meta["rows"] = 6
    meta_path.write_text(json.dumps(meta))

    with pytest.raises(IndexMismatchError, match="records 6 rows but its table has 5"):
        VectorStore.open(tmp_path / "vectors", STAMP, provider.identity)


def test_a_query_from_another_identity_fails_closed(
    tmp_path: Path, provider: HashingProvider
) -> None:
    store = build(tmp_path / "vectors", provider)
    other = HashingProvider(dimension=48)

    with pytest.raises(IndexMismatchError, match="dimension 32 != 48"):
        store.query(other, "refund", top_k=3)
    with pytest.raises(IndexMismatchError, match="shape"):
        store.search(np.ones(48, dtype=np.float32), top_k=3)


def test_building_with_a_provider_of_another_identity_is_refused(
    tmp_path: Path, provider: HashingProvider
) -> None:
    declared = dataclasses.replace(provider.identity, model="something-else")

    with pytest.raises(IndexMismatchError):
        VectorStore.build(tmp_path / "v", STAMP, declared, ["c:1"], ["text"], provider)
    assert not (tmp_path / "v").exists()


@pytest.mark.parametrize(("ids", "texts"), [(["c:1", "c:1"], ["a", "b"]), (["c:1"], ["a", "b"])])
def test_building_needs_unique_ids_and_one_text_per_id(
    tmp_path: Path, provider: HashingProvider, ids: list[str], texts: list[str]
) -> None:
    with pytest.raises(UsageError):
        VectorStore.build(tmp_path / "v", STAMP, provider.identity, ids, texts, provider)


def test_identity_round_trips_through_a_dict() -> None:
    identity = EmbeddingIdentity(provider="local", model="all-MiniLM-L6-v2", dimension=384)

    assert EmbeddingIdentity.from_dict(identity.to_dict()) == identity
