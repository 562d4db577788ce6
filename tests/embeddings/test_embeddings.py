"""Embedding providers: the registry, the ollama client over loopback HTTP, the local model."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from groundkit.embeddings import (
    PROVIDERS,
    EmbeddingIdentity,
    LocalProvider,
    OllamaProvider,
    describe_providers,
    l2_normalize,
    make_provider,
    prefixes_for,
)
from groundkit.errors import MissingDependencyError, ProviderError, UsageError
from groundkit.testing.ollama_standin import OllamaStandin

TEXTS = ["alpha beta", "gamma", "delta epsilon zeta", "eta", "theta iota"]


def free_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Recorder:
    """An embed function for the stand-in that remembers the texts it was sent."""

    def __init__(self, dimension: int = 16) -> None:
        self.dimension = dimension
        self.texts: list[str] = []

    def __call__(self, texts: list[str]) -> np.ndarray:
        self.texts.extend(texts)
        rows = [
            [len(t) + 1.0, *([float(i + 1)] * (self.dimension - 1))] for i, t in enumerate(texts)
        ]
        return np.asarray(rows, dtype=np.float32)


# ------------------------------------------------------------------ registry


def test_an_unknown_provider_is_a_usage_error_listing_the_registry() -> None:
    with pytest.raises(UsageError) as info:
        make_provider("openai:text-embedding-3")

    for name, provider in PROVIDERS.items():
        assert f"{name}:{provider.default_model}" in str(info.value)


def test_an_unknown_option_is_a_usage_error_listing_the_provider_options() -> None:
    with pytest.raises(UsageError, match="host, timeout, batch_size, keep_alive"):
        make_provider("ollama", threads=2)


def test_a_spec_without_a_model_uses_the_provider_default_and_does_no_io() -> None:
    ollama = make_provider("ollama", host=f"http://127.0.0.1:{free_port()}")
    local = make_provider("local")

    assert isinstance(ollama, OllamaProvider) and ollama.model == "nomic-embed-text"
    assert isinstance(local, LocalProvider) and local.model == "all-MiniLM-L6-v2"


def test_provider_help_is_generated_from_the_registry() -> None:
    lines = describe_providers().splitlines()

    assert len(lines) == len(PROVIDERS)
    assert "groundkit[ollama]" in lines[0] and "groundkit[dense]" in lines[1]


def test_nomic_embed_text_gets_its_task_prefixes_and_minilm_none() -> None:
    assert prefixes_for("nomic-embed-text:latest") == ("search_document: ", "search_query: ")
    assert prefixes_for("all-MiniLM-L6-v2") == ("", "")


def test_an_embedding_identity_round_trips_and_validates() -> None:
    identity = EmbeddingIdentity(provider="ollama", model="nomic-embed-text", dimension=768)

    assert EmbeddingIdentity.from_dict(identity.to_dict()) == identity
    assert identity.normalized is True
    with pytest.raises(UsageError):
        EmbeddingIdentity(provider="ollama", model="m", dimension=0)
    with pytest.raises(UsageError):
        EmbeddingIdentity.from_dict({"provider": "ollama"})


def test_l2_normalize_gives_unit_float32_rows_and_rejects_zero_or_nan_rows() -> None:
    out = l2_normalize(np.array([[3.0, 4.0], [0.0, 2.0]]))

    assert out.dtype == np.float32
    assert np.allclose(out, [[0.6, 0.8], [0.0, 1.0]])
    with pytest.raises(ProviderError):
        l2_normalize(np.zeros((1, 3)))
    with pytest.raises(ProviderError):
        l2_normalize(np.array([[np.nan, 1.0]]))


def test_a_missing_client_package_names_the_extra_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "ollama", None)

    with pytest.raises(MissingDependencyError, match=r"groundkit\[ollama\]"):
        make_provider("ollama").embed(["x"], kind="query")


def test_a_missing_sentence_transformers_names_the_dense_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)

    with pytest.raises(MissingDependencyError, match=r"groundkit\[dense\]"):
        LocalProvider().embed(["x"], kind="query")


def test_an_unknown_local_model_lists_the_packaged_ones() -> None:
    with pytest.raises(UsageError, match="all-MiniLM-L6-v2"):
        LocalProvider("bge-small").embed(["x"], kind="query")


HEAVY = ("torch", "sentence_transformers", "lancedb", "pyarrow", "ollama", "httpx", "mcp")


def test_importing_the_dense_modules_imports_no_optional_dependency() -> None:
    script = (
        "import importlib.util, json, sys\n"
        "import groundkit.embeddings, groundkit.retrieval.vectors, groundkit.retrieval.fusion\n"
        "import groundkit.testing.ollama_standin\n"
        "if importlib.util.find_spec('groundkit.retrieval.bm25'):\n"
        "    import groundkit.retrieval.bm25\n"
        f"print(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))\n"
    )
    repo = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
        cwd=repo,
    )

    assert json.loads(done.stdout) == []


# ------------------------------------------------------ ollama over loopback


@pytest.fixture
def standin() -> Iterator[tuple[OllamaStandin, Recorder]]:
    recorder = Recorder()
    with OllamaStandin(recorder, models=["nomic-embed-text", "all-minilm"]) as server:
        yield server, recorder


def test_the_ollama_client_embeds_in_batches_through_the_standin(
    standin: tuple[OllamaStandin, Recorder],
) -> None:
    server, _ = standin
    with OllamaProvider("all-minilm", host=server.url, batch_size=2) as provider:
        vectors = provider.embed(TEXTS, kind="document")
        identity = provider.identity

    assert vectors.shape == (5, 16) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0)
    embeds = [r for r in server.requests if r.path == "/api/embed"]
    assert [r.inputs for r in embeds] == [2, 2, 1]
    assert identity == EmbeddingIdentity(provider="ollama", model="all-minilm", dimension=16)


def test_the_ollama_provider_sends_the_model_task_prefixes(
    standin: tuple[OllamaStandin, Recorder],
) -> None:
    server, recorder = standin
    with OllamaProvider("nomic-embed-text:latest", host=server.url) as provider:
        provider.embed(["a passage"], kind="document")
        provider.embed(["a question"], kind="query")
        identity = provider.identity

    assert recorder.texts == ["search_document: a passage", "search_query: a question"]
    assert identity.model == "nomic-embed-text"
    assert identity.query_prefix == "search_query: "


def test_asking_for_the_identity_first_probes_the_dimension_once(
    standin: tuple[OllamaStandin, Recorder],
) -> None:
    server, _ = standin
    with OllamaProvider("all-minilm", host=server.url) as provider:
        assert provider.identity.dimension == 16
        assert provider.identity.dimension == 16

    assert len(server.requests) == 1


def test_a_model_the_server_lacks_is_a_provider_error_naming_ollama_pull(
    standin: tuple[OllamaStandin, Recorder],
) -> None:
    server, _ = standin
    with (
        OllamaProvider("mxbai-embed-large", host=server.url) as provider,
        pytest.raises(ProviderError, match="run `ollama pull mxbai-embed-large`"),
    ):
        provider.embed(["x"], kind="document")


def test_an_unreachable_server_is_a_provider_error_naming_ollama_serve() -> None:
    host = f"http://127.0.0.1:{free_port()}"
    with (
        OllamaProvider(host=host) as provider,
        pytest.raises(ProviderError, match=r"start it with `ollama serve`") as info,
    ):
        provider.embed(["x"], kind="query")

    assert host in str(info.value) and "OLLAMA_HOST" in str(info.value)


def test_the_ollama_host_environment_variable_is_not_read(
    standin: tuple[OllamaStandin, Recorder], monkeypatch: pytest.MonkeyPatch
) -> None:
    server, _ = standin
    monkeypatch.setenv("OLLAMA_HOST", server.url)

    with (
        OllamaProvider("all-minilm", host=f"http://127.0.0.1:{free_port()}") as provider,
        pytest.raises(ProviderError, match="ollama serve"),
    ):
        provider.embed(["x"], kind="query")
    assert server.requests == []


def test_a_server_slower_than_the_timeout_is_a_provider_error() -> None:
    release = threading.Event()
    with OllamaStandin(models=["all-minilm"], hold=release) as server:
        with (
            OllamaProvider("all-minilm", host=server.url, timeout=0.2) as provider,
            pytest.raises(ProviderError, match=r"did not answer within 0\.2s"),
        ):
            provider.embed(["x"], kind="query")
        release.set()


def test_the_standin_speaks_the_rest_of_the_ollama_api(
    standin: tuple[OllamaStandin, Recorder],
) -> None:
    import ollama

    server, _ = standin
    with ollama.Client(host=server.url, trust_env=False) as client:
        tags = [m.model for m in client.list().models]
        legacy = client.embeddings(model="all-minilm", prompt="hello").embedding
        single = client.embed(model="all-minilm", input="one text")
        empty = client.embed(model="all-minilm", input=[])
        with pytest.raises(ollama.ResponseError) as missing:
            client.embed(model="nope", input="x")
    with urllib.request.urlopen(f"{server.url}/api/version", timeout=5) as response:
        version = json.load(response)

    assert tags == ["all-minilm:latest", "nomic-embed-text:latest"]
    assert len(legacy) == 16 and legacy[0] == 6.0  # the legacy endpoint is not normalised
    assert len(single.embeddings) == 1 and single.prompt_eval_count == 2
    assert isinstance(single.total_duration, int) and single.model == "all-minilm"
    assert list(empty.embeddings) == []
    assert missing.value.status_code == 404
    assert missing.value.error == 'model "nope" not found, try pulling it first'
    assert "version" in version


def test_the_standin_rejects_malformed_requests_like_ollama(
    standin: tuple[OllamaStandin, Recorder],
) -> None:
    server, _ = standin

    def post(path: str, body: object) -> tuple[int, dict[str, object]]:
        request = urllib.request.Request(
            server.url + path, data=json.dumps(body).encode(), method="POST"
        )
        try:
            with urllib.request.urlopen(request, timeout=5) as response:
                return response.status, json.load(response)
        except urllib.error.HTTPError as exc:
            with exc:
                return exc.code, json.load(exc)

    assert post("/api/embed", {"model": "all-minilm", "input": [1, 2]}) == (
        400,
        {"error": "invalid input type"},
    )
    assert post("/api/embed", {"input": "x"}) == (400, {"error": "model is required"})
    assert post("/api/embed", {"model": "all-minilm", "input": ["x"], "dimensions": 4})[0] == 200
