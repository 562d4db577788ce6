"""Dense and hybrid search through the real store, LanceDB and embedding providers."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import TreeMaker

from groundkit import store
from groundkit.collection import Collection, IndexConfig, calibration, index, integrity
from groundkit.errors import IndexMismatchError, IntegrityError, UsageError
from groundkit.retrieval import gate, modes
from groundkit.testing.ollama_standin import OllamaStandin, hashing_embedder

pytest.importorskip("lancedb")

DOCS = {
    "cars.md": "# Fleet\n\nEvery automobile in the fleet is serviced each spring.\n",
    "logs.md": "# Logs\n\nDeployment logs are kept for 30 days.\n",
    "oncall.md": "# On-call\n\nThe on-call engineer restarts the ingest worker.\n",
}


def embedded(root: Path, home: Path, spec: str, **options: object) -> Collection:
    extra = {"embedding": {"spec": spec, "options": options}}
    index("k", IndexConfig(roots=(str(root),), extra=extra), home=home)
    return Collection.open("k", home)


@pytest.fixture(scope="module")
def local(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Collection]:
    pytest.importorskip("sentence_transformers")
    base = tmp_path_factory.mktemp("dense")
    root = base / "docs"
    root.mkdir()
    for name, text in DOCS.items():
        (root / name).write_text(text)
    coll = embedded(root, base / "home", "local:all-MiniLM-L6-v2")
    yield coll
    coll.close()


def test_dense_search_finds_a_paraphrase_bm25_cannot(local: Collection) -> None:
    assert local.search("car maintenance") == []  # no shared word: BM25 abstains
    [top, *_] = local.search("car maintenance", mode="dense")
    assert top.chunk.doc_id == "cars.md" and top.explanation[0].retriever == "dense"


def test_dense_abstains_only_with_a_cosine_threshold(local: Collection) -> None:
    assert len(local.search("zebra", mode="dense", top_k=3)) == 3
    assert local.search("zebra", mode="dense", score_threshold=0.99) == []


def test_hybrid_hits_explain_their_rank_in_each_list_and_fused_contribution(
    local: Collection,
) -> None:
    [top, *_] = local.search("deployment logs", mode="hybrid", rrf_k=60)
    assert top.chunk.doc_id == "logs.md"
    parts = {c.retriever: c for c in top.explanation}
    assert set(parts) == {"bm25", "dense"}
    expected = 1 / (60 + parts["bm25"].rank) + 1 / (60 + parts["dense"].rank)
    assert top.score == pytest.approx(expected)


def test_hybrid_refuses_a_score_threshold(local: Collection) -> None:
    with pytest.raises(UsageError, match="rank-derived"):
        local.search("logs", mode="hybrid", score_threshold=0.5)


def test_asking_for_another_embedding_model_fails_closed(local: Collection) -> None:
    with pytest.raises(IndexMismatchError, match="embedded with local:all-MiniLM-L6-v2"):
        local.search("logs", mode="dense", embed_model="ollama:nomic-embed-text")


def test_a_collection_without_vectors_refuses_dense_search(
    make_tree: TreeMaker, home: Path,
) -> None:
    index("plain", IndexConfig(roots=(str(make_tree(DOCS)),)), home=home)
    with Collection.open("plain", home) as coll, pytest.raises(UsageError, match="--embed"):
        coll.search("logs", mode="dense")


SEEN: list[str] = []
"""Every text the stand-in embedded, in order."""


def _recording(texts: list[str]) -> object:
    SEEN.extend(texts)
    return hashing_embedder(64)(texts)


@pytest.fixture
def ollama() -> Iterator[OllamaStandin]:
    SEEN.clear()
    with OllamaStandin(_recording, models=["nomic-embed-text"]) as server:
        yield server


def test_the_ollama_provider_indexes_and_searches_through_a_loopback_server(
    make_tree: TreeMaker, home: Path, ollama: OllamaStandin,
) -> None:
    coll = embedded(make_tree(DOCS), home, "ollama:nomic-embed-text", host=ollama.url)
    hits = coll.search("deployment logs kept", mode="hybrid")
    assert hits[0].chunk.doc_id == "logs.md"
    assert coll.snapshot.vectors().identity.describe().startswith("ollama:nomic-embed-text (64-d")
    assert coll.check() == []
    coll.close()


def test_reindexing_embeds_only_new_chunks(
    make_tree: TreeMaker, home: Path, ollama: OllamaStandin,
) -> None:
    root = make_tree(DOCS)
    embedded(root, home, "ollama:nomic-embed-text", host=ollama.url).close()
    before = len(SEEN)
    (root / "new.md").write_text("A brand new runbook about backups.\n")
    coll = embedded(root, home, "ollama:nomic-embed-text", host=ollama.url)
    documents = [t for t in SEEN[before:] if t != "search_document: dimension probe"]
    assert documents == ["search_document: A brand new runbook about backups."]
    assert len(coll.snapshot.vectors()) == 4
    coll.close()


def test_vectors_from_another_generation_fail_closed(
    make_tree: TreeMaker, home: Path, ollama: OllamaStandin,
) -> None:
    coll = embedded(make_tree(DOCS), home, "ollama:nomic-embed-text", host=ollama.url)
    meta_path = coll.snapshot.generation_dir / "vectors" / "meta.json"
    meta = json.loads(meta_path.read_text())
    meta["stamp"]["generation"] += 1
    meta_path.write_text(json.dumps(meta))
    with pytest.raises(IntegrityError, match=r"gen-1/vectors/meta\.json"):
        coll.search("logs", mode="dense")  # its checksum no longer holds
    conn = store.connect(coll.snapshot.directory)  # record it: a foreign but intact index
    with store.transaction(conn):
        store.record_derived_files(conn, coll.generation,
                                   integrity.manifest(coll.snapshot.generation_dir))
    conn.close()
    coll.snapshot.__dict__.pop("_verified", None)
    with pytest.raises(IndexMismatchError, match="stale"):
        coll.search("logs", mode="dense")
    assert any("vector store" in p for p in coll.check())
    coll.close()


def test_dense_and_hybrid_gates_calibrate_and_decide_with_each_retrievers_p_value(
        local: Collection, tmp_path: Path) -> None:
    no_answer = ["zebra migration routes", "the price of saffron", "tax on imported violins",
                 "how tall is the lighthouse", "poems about autumn rain", "chess openings",
                 "the boiling point of tin", "who painted the ceiling", "rules of cricket"]
    questions = tmp_path / "q.jsonl"
    questions.write_text("".join(json.dumps({"question": q, "kind": "no_answer"}) + "\n"
                                 for q in no_answer))
    found, sha = calibration.read_questions(questions)
    made = [calibration.compute(local.snapshot, m, found, sha) for m in ("dense", "hybrid")]
    assert [c.n0 for c in made] == [9, 9] and made[1].rule == "both"
    assert made[0].embedding == {"spec": "local:all-MiniLM-L6-v2"}
    hybrid = made[1]
    decision = gate.decide(hybrid, modes.evidence(local.snapshot, "hybrid", "car maintenance"))
    assert set(decision.p_values) == {"bm25", "dense"}
    assert decision.p_value == max(decision.p_values.values())


def test_a_dense_answer_quotes_a_paraphrase_no_word_of_which_is_in_the_question(
        local: Collection) -> None:
    from groundkit.answer import ask

    answer = ask(local, "car maintenance", mode="dense", top_k=3)
    assert answer.kind == "extractive"
    assert answer.sentences[0].text == "Every automobile in the fleet is serviced each spring."
    assert ask(local, "car maintenance").kind == "empty"  # BM25: no shared word, no answer


def test_pairs_rank_as_search_does_and_fusion_through_them_is_unchanged(
    local: Collection,
) -> None:
    from groundkit.retrieval.fusion import FusionRetriever

    snap = local.snapshot
    hybrid = modes.make_retriever(snap, "hybrid", {})
    assert isinstance(hybrid, FusionRetriever)
    for name, retriever in hybrid.retrievers.items():
        for query in ("deployment logs", "car maintenance", "zebra"):
            assert retriever.pairs(query, 3) == [  # type: ignore[attr-defined]
                (s.position, s.score) for s in retriever.search(query, 3)], name

    class SearchOnly:  # the same retriever without pairs: fusion falls back to search
        def __init__(self, inner: object) -> None:
            self.inner, self.name = inner, inner.name  # type: ignore[attr-defined]

        def search(self, query: str, top_k: int, **kw: object) -> object:
            return self.inner.search(query, top_k, **kw)  # type: ignore[attr-defined]

    through_search = FusionRetriever({n: SearchOnly(r) for n, r in hybrid.retrievers.items()},
                                     snap.chunk_ids(), snap.positions(), hybrid.method,
                                     hybrid.params)  # type: ignore[arg-type]
    for query in ("deployment logs", "on-call engineer", "zebra"):
        assert hybrid.search(query, 3) == through_search.search(query, 3)
