"""``grk index --ray`` on a real two-node Ray cluster: the same generation, byte for byte.

The cluster is real, not a mock: ``ray start --head`` and a second ``ray start --address``
(its own raylet), one CPU each, in a temporary folder of their own, torn down by process
group (the ``cluster`` fixture: tests/ray_cluster.py). Skipped without ``ray`` unless
``GROUNDKIT_REQUIRE_RAY=1`` (CI), which fails instead.
"""

from __future__ import annotations

import random
import shutil
import sys
from functools import partial
from pathlib import Path

import numpy as np
import pytest

from groundkit import store
from groundkit.collection import Collection, IndexConfig, index
from groundkit.collection.home import collection_dir
from groundkit.errors import MissingDependencyError
from groundkit.retrieval.bm25 import BM25Index
from groundkit.retrieval.bm25_build import Bag
from groundkit.retrieval.bm25_tokens import BagMaker, term_bags
from groundkit.text.analysis import Analyzer

QUERIES = ("deployment logs", "the on-call engineer", "section 7 quarterly budget", "zebra")


@pytest.fixture(scope="module")
def docs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Enough files for several partitions: markdown, text, nested, one binary."""
    root = tmp_path_factory.mktemp("ray-docs")
    for i in range(90):
        sub = root / f"team-{i % 4}"
        sub.mkdir(exist_ok=True)
        body = (f"# Note {i}\n\nSection {i % 9} of the quarterly budget covers item {i}.\n\n"
                + "Deployment logs are kept for 30 days. " * (1 + i % 5)
                + ("\n\nThe on-call engineer restarts the ingest worker.\n" if i % 7 == 0 else ""))
        (sub / f"note-{i}.md" if i % 3 else sub / f"note-{i}.txt").write_text(body)
    (root / "data.txt").write_bytes(bytes(range(256)) * 4)  # binary: skipped by both
    return root


def _index(root: Path, home: Path, **kw: object) -> None:
    index("k", IndexConfig(roots=(str(root),), extra=kw.pop("extra", {})), home=home,
          **kw)  # type: ignore[arg-type]


def _generation(home: Path) -> dict[str, object]:
    """What a generation is: its derived files' bytes, its rows, its search results."""
    directory = collection_dir("k", home)
    conn = store.connect(directory, readonly=True)
    try:
        gen = store.current_generation(conn)
        documents = conn.execute(
            "SELECT doc_id, relpath, sha256, size, encoding, bom_len, extractor, standing "
            "FROM documents WHERE generation = ? ORDER BY doc_id", (gen,)).fetchall()
        skipped = sorted(conn.execute("SELECT path, reason FROM skipped WHERE generation = ?",
                                      (gen,)).fetchall())
        chunk_ids = [c.chunk_id for c in store.iter_generation_chunks(conn, gen)]
    finally:
        conn.close()
    gen_dir = directory / f"gen-{gen}"
    # LanceDB names its table's files with random UUIDs, so two single-process runs differ
    # there too: the vectors are compared as the matrix beside it (vectors/vectors.npy).
    files = {str(p.relative_to(gen_dir)): p.read_bytes() for p in sorted(gen_dir.rglob("*"))
             if p.is_file() and "vectors.lance" not in p.parts}
    coll = Collection.open("k", home)
    try:
        results = {q: [(h.chunk.chunk_id, h.score) for h in coll.search(q, top_k=10)]
                   for q in QUERIES}
    finally:
        coll.close()
    return {"generation": gen, "files": files, "documents": documents, "skipped": skipped,
            "chunk_ids": chunk_ids, "results": results}


@pytest.fixture(scope="module")
def single(docs: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    home = tmp_path_factory.mktemp("single-home")
    _index(docs, home)
    return _generation(home)


def _ray(cluster: str, **kw: object) -> object:
    from groundkit.collection.ray_executor import RayExecutor

    return RayExecutor(cluster, partition_files=16, **kw)  # type: ignore[arg-type]


WORDS = ("the", "running", "runners", "ran", "café", "naïve", "東京都", "data's", "it's",
         "3.14", "1,000", "a:b", "foo_bar", "x.y", "zebra", "ZEBRA", "quarterly", "budget",
         "Straße", "ǅemal")


@pytest.mark.parametrize("analyzer", [Analyzer(), Analyzer.preset("simple"),
                                      Analyzer(lowercase=False, stemmer="english")])
def test_term_bags_build_the_index_the_texts_build(analyzer: Analyzer) -> None:
    rng = random.Random(7)
    texts = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 40))) for _ in range(600)]
    maker = BagMaker(analyzer)  # as a Ray worker keeps one across its tasks
    parts = [(start, (maker.make if start % 2 else partial(term_bags, analyzer=analyzer))(
        texts[start:start + 37])) for start in range(0, len(texts), 37)]
    for start, bags in parts:  # each text's bag: the terms analyze gives it, as a multiset
        for i, text in enumerate(texts[start:start + 37]):
            lo = int(bags.ends[i - 1]) if i else 0
            got = sorted(bags.terms[t] for t in bags.ids[lo:int(bags.ends[i])].tolist())
            assert got == sorted(analyzer.analyze(text))
    # bags, texts and term lists mixed in one build (carried files come as texts)
    items: list[object] = [Bag(bags, i) if (start + i) % 3 else text
                           for start, bags in parts
                           for i, text in enumerate(texts[start:start + 37])]
    items[5] = analyzer.analyze(texts[5])
    alone = BM25Index.build(texts, analyzer)
    mixed = BM25Index.build(items, analyzer)  # type: ignore[arg-type]
    assert alone._arrays.keys() == mixed._arrays.keys()
    for name, array in alone._arrays.items():
        assert array.dtype == mixed._arrays[name].dtype and np.array_equal(
            array, mixed._arrays[name]), name
    assert (alone._blob, alone._stats) == (mixed._blob, mixed._stats)


def test_the_ray_generation_is_the_single_process_one_byte_for_byte(
    cluster: str, docs: Path, single: dict[str, object], tmp_path: Path,
) -> None:
    executor = _ray(cluster)
    _index(docs, tmp_path, executor=executor)
    spread = _generation(tmp_path)
    assert spread["files"] and spread["files"] == single["files"]
    assert spread == single
    assert [path for path, _ in single["skipped"]] == ["data.txt"]  # type: ignore[attr-defined]
    # every chunk's BM25 terms were analysed in the tasks, none again here
    analysed = executor.analysed()  # type: ignore[attr-defined]
    assert analysed is not None and analysed.bags == len(spread["chunk_ids"]) > 0  # type: ignore[arg-type]


def test_a_second_ray_generation_mixes_task_bags_and_carried_files_as_one_process(
    cluster: str, docs: Path, tmp_path: Path,
) -> None:
    """Half the files changed: a full BM25 build over the tasks' bags (changed files) and
    the carried files' texts, analysed here; the same bytes as one process builds."""
    generations = []
    for name, ray in (("one", False), ("ray", True)):
        root = tmp_path / name / "docs"
        shutil.copytree(docs, root)
        executor = _ray(cluster) if ray else None
        _index(root, tmp_path / name, executor=executor)
        for i in range(0, 90, 2):
            sub = root / f"team-{i % 4}"
            path = sub / f"note-{i}.md" if i % 3 else sub / f"note-{i}.txt"
            path.write_text(path.read_text() + f"\nRevised: zebra crossings near item {i}.\n")
        _index(root, tmp_path / name, executor=executor)
        generations.append(_generation(tmp_path / name))
        if executor is not None:
            analysed = executor.analysed()
            chunks = len(generations[-1]["chunk_ids"])  # type: ignore[arg-type]
            assert analysed is not None and 0 < analysed.bags < chunks  # both kinds
    assert generations[0]["generation"] == 2
    one, spread = generations
    assert one["files"] == spread["files"] and one == spread


def test_a_worker_killed_mid_run_is_retried_and_the_result_is_the_same(
    cluster: str, docs: Path, single: dict[str, object], tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    marker = tmp_path / "died-once"
    monkeypatch.setenv("GROUNDKIT_RAY_DIE", str(marker))
    _index(docs, tmp_path / "home", executor=_ray(cluster))
    assert marker.exists()  # the first attempt did exit its worker process
    assert _generation(tmp_path / "home") == single


def test_a_run_that_fails_publishes_nothing(
    cluster: str, docs: Path, single: dict[str, object], tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from groundkit.collection.ray_executor import ClusterError

    _index(docs, tmp_path)
    (docs / "new.md").write_text("# New\n\nA zebra arrives.\n")
    try:
        monkeypatch.setenv("GROUNDKIT_RAY_DIE", "always")
        with pytest.raises(ClusterError, match="nothing was published"):
            _index(docs, tmp_path, executor=_ray(cluster, max_retries=0))
    finally:
        (docs / "new.md").unlink()
    assert _generation(tmp_path) == single  # generation 1, as it was


def test_vectors_are_the_same_bytes_when_embedded_in_ray_actors(
    cluster: str, docs: Path, tmp_path: Path,
) -> None:
    pytest.importorskip("ollama")
    pytest.importorskip("lancedb")
    from groundkit.testing.ollama_standin import OllamaStandin, hashing_embedder

    with OllamaStandin(hashing_embedder(64)) as server:
        extra = {"embedding": {"spec": "ollama:nomic-embed-text",
                               "options": {"host": server.url}}}
        _index(docs, tmp_path / "one", extra=extra)
        _index(docs, tmp_path / "ray", extra=extra, executor=_ray(cluster))
        one, spread = _generation(tmp_path / "one"), _generation(tmp_path / "ray")
    assert "vectors/vectors.npy" in one["files"]  # type: ignore[operator]
    assert spread == one


def test_without_ray_the_option_names_the_extra(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path,
    docs: Path,
) -> None:
    from groundkit.cli import main
    from groundkit.collection.ray_executor import RayExecutor

    monkeypatch.setitem(sys.modules, "ray", None)  # import ray fails, as when not installed
    with pytest.raises(MissingDependencyError, match=r"pip install 'groundkit\[ray\]'"):
        RayExecutor()
    code = main(["index", str(docs), "-c", "k", "--home", str(tmp_path), "--ray"])
    assert code == MissingDependencyError.exit_code
    assert "groundkit[ray]" in capsys.readouterr().err
    assert not (collection_dir("k", tmp_path) / "gen-1").exists()
