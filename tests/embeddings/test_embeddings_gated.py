"""The ollama provider against a real Ollama server (EVAL_GATED=1 only).

Needs ``ollama serve`` on 127.0.0.1:11434 with ``nomic-embed-text`` pulled.
Without EVAL_GATED=1 every test here is skipped with the reason.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from groundkit.embeddings import OllamaProvider
from groundkit.errors import ProviderError

HOST = "http://127.0.0.1:11434"
MODEL = "nomic-embed-text"

pytestmark = [
    pytest.mark.gated,
    pytest.mark.skipif(
        os.environ.get("EVAL_GATED") != "1",
        reason="needs a real Ollama at 127.0.0.1:11434 with nomic-embed-text; set EVAL_GATED=1",
    ),
]


def test_a_real_ollama_embeds_normalised_vectors_with_nomic_prefixes() -> None:
    with OllamaProvider(MODEL, host=HOST, batch_size=2) as provider:
        docs = provider.embed(["the refund window is thirty days", "office cat"], kind="document")
        query = provider.embed(["how long can I return things"], kind="query")
        identity = provider.identity

    assert identity.provider == "ollama" and identity.model == MODEL
    assert identity.dimension == docs.shape[1] == query.shape[1] == 768
    assert np.allclose(np.linalg.norm(docs, axis=1), 1.0, atol=1e-5)
    assert float(docs[0] @ query[0]) > float(docs[1] @ query[0])


def test_a_real_ollama_without_the_model_says_to_pull_it() -> None:
    with (
        OllamaProvider("groundkit-no-such-model", host=HOST) as provider,
        pytest.raises(ProviderError, match="ollama pull groundkit-no-such-model"),
    ):
        provider.embed(["x"], kind="query")
