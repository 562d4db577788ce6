"""The approximate dense index (ADR-0015): recall against exact search, failing closed."""

from __future__ import annotations

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
from groundkit.retrieval import ann, vector_files
from groundkit.retrieval.vectors import VectorStore

IDENTITY = EmbeddingIdentity(provider="test", model="clusters", dimension=64)
STAMP = {"collection": "c", "generation": 4}
ROWS = 3000


def clustered(rows: int, seed: int) -> np.ndarray:
    """Unit vectors around 40 seeded centres: neighbourhoods an index has to find."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((40, IDENTITY.dimension)).astype(np.float32)
    noise = rng.standard_normal((rows, IDENTITY.dimension)).astype(np.float32)
    out = centres[rng.integers(0, len(centres), rows)] + 0.7 * noise
    out /= np.linalg.norm(out, axis=1, keepdims=True)
    return out


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("ann") / "vectors"
    params = ann.choose("on", ROWS)
    assert params == ann.DEFAULT
    ids = [f"c:{i:05d}" for i in range(ROWS)]
    vector_files.write_atomically(directory, dict(STAMP), IDENTITY, ids, clustered(ROWS, 3),
                                  params)
    return directory


@pytest.fixture
def copy(built: Path, tmp_path: Path) -> Path:
    target = tmp_path / "vectors"
    shutil.copytree(built, target)
    return target


def queries(count: int = 60) -> np.ndarray:
    rng = np.random.default_rng(11)
    base = clustered(ROWS, 3)[rng.integers(0, ROWS, count)]
    return base + 0.3 * rng.standard_normal(base.shape).astype(np.float32)


def test_approximate_top_10_recalls_at_least_95_percent_of_exact(built: Path) -> None:
    store = VectorStore.open(built, STAMP, IDENTITY)
    recalls = []
    for query in queries():
        exact = store.search(query, 10, exact=True)
        approximate = store.search(query, 10)
        recalls.append(len({c for c, _ in exact} & {c for c, _ in approximate}) / 10)
        scores = dict(exact)
        for chunk_id, score in approximate:  # the candidates are scored exactly
            if chunk_id in scores:
                assert score == scores[chunk_id]
        assert [s for _, s in approximate] == sorted((s for _, s in approximate), reverse=True)
    assert store.approximate() is not None
    assert float(np.mean(recalls)) >= 0.95


def test_exact_search_is_unchanged_by_the_index(built: Path, tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    ids = [f"c:{i:05d}" for i in range(ROWS)]
    vector_files.write_atomically(plain, dict(STAMP), IDENTITY, ids, clustered(ROWS, 3))
    with_index = VectorStore.open(built, STAMP, IDENTITY)
    without = VectorStore.open(plain, STAMP, IDENTITY)
    assert without.ann_entry is None and without.approximate() is None
    for query in queries(20):
        assert with_index.search(query, 10, exact=True) == without.search(query, 10)
        assert without.search(query, 10, exact=False) == without.search(query, 10)


def test_the_index_files_are_recorded_in_the_store_meta(built: Path) -> None:
    entry = json.loads((built / vector_files.META).read_text())["ann"]
    assert entry["stamp"] == STAMP and entry["rows"] == ROWS
    assert entry["identity"] == IDENTITY.to_dict() and entry["params"] == ann.DEFAULT.to_dict()
    on_disk = {p.relative_to(built / "vectors.lance").as_posix()
               for p in (built / "vectors.lance" / "_indices").rglob("*") if p.is_file()}
    assert on_disk and on_disk <= set(entry["files"])


def test_a_corrupted_index_file_is_refused_and_exact_search_still_answers(copy: Path) -> None:
    [index_file] = (copy / "vectors.lance" / "_indices").rglob("index.idx")
    data = bytearray(index_file.read_bytes())
    data[len(data) // 2] ^= 0xFF
    index_file.write_bytes(bytes(data))
    store = VectorStore.open(copy, STAMP, IDENTITY)
    query = queries(1)[0]
    with pytest.raises(IndexMismatchError, match="do not hash as recorded"):
        store.search(query, 10)
    assert len(store.search(query, 10, exact=True)) == 10


def test_a_missing_or_extra_index_file_is_refused(copy: Path) -> None:
    [aux] = (copy / "vectors.lance" / "_indices").rglob("auxiliary.idx")
    (aux.parent / "stray.idx").write_bytes(b"x")
    with pytest.raises(IndexMismatchError, match="missing, extra"):
        VectorStore.open(copy, STAMP, IDENTITY).approximate()
    (aux.parent / "stray.idx").unlink()
    aux.unlink()
    with pytest.raises(IndexMismatchError, match="missing, extra"):
        VectorStore.open(copy, STAMP, IDENTITY).approximate()


@pytest.mark.parametrize(("field", "value", "says"), [
    ("stamp", {"collection": "c", "generation": 3}, "built for stamp"),
    ("identity", {**IDENTITY.to_dict(), "model": "other"}, "built for identity"),
    ("identity", {**IDENTITY.to_dict(), "dimension": 32}, "built for identity"),
    ("rows", ROWS - 1, "built for rows"),
    ("params", {"kind": "ivf_pq", "partitions": 1}, "LanceDB reports"),
    ("params", {"kind": "nonsense"}, "damaged metadata"),
])
def test_an_index_built_for_something_else_is_refused(
    copy: Path, field: str, value: object, says: str,
) -> None:
    meta = json.loads((copy / vector_files.META).read_text())
    meta["ann"][field] = value
    (copy / vector_files.META).write_text(json.dumps(meta))
    with pytest.raises(IndexMismatchError, match=says):
        VectorStore.open(copy, STAMP, IDENTITY).search(queries(1)[0], 10)


def test_choose_builds_above_the_threshold_or_when_asked() -> None:
    assert ann.choose("auto", ann.THRESHOLD) is None
    assert ann.choose("auto", ann.THRESHOLD + 1) == ann.DEFAULT
    assert ann.choose("off", 10 * ann.THRESHOLD) is None
    assert ann.choose("on", ann.MIN_ROWS) == ann.DEFAULT
    assert ann.choose("on", ann.MIN_ROWS - 1) is None  # too few to train: exact
    with pytest.raises(UsageError, match="--ann must be one of"):
        ann.choose("always", 10)
    with pytest.raises(UsageError, match="positive integer"):
        ann.AnnParams(ef=0)


def test_opening_a_store_with_an_index_imports_lancedb_only_to_search_approximately(
    built: Path,
) -> None:
    code = (
        "import sys, numpy as np\n"
        "from groundkit.embeddings import EmbeddingIdentity\n"
        "from groundkit.retrieval.vectors import VectorStore\n"
        f"s = VectorStore.open({str(built)!r}, {STAMP!r}, "
        f"EmbeddingIdentity(provider='test', model='clusters', dimension=64))\n"
        "s.search(np.ones(64), 10, exact=True)\n"
        "print('lancedb' in sys.modules)\n"
        "s.search(np.ones(64), 10)\n"
        "print('lancedb' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["False", "True"]
