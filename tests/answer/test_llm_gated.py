"""The LLM boundary against a real Ollama server (EVAL_GATED=1 only).

Needs ``ollama serve`` on 127.0.0.1:11434 with the chat model named by
``GROUNDKIT_LLM_MODEL`` (default ``llama3.2``) pulled. Without EVAL_GATED=1 every test
here is skipped with the reason; with it, a server that is not there (or lacks the
model) skips too, saying which.
"""

from __future__ import annotations

import os
from contextlib import closing
from pathlib import Path

import pytest
from conftest import TreeMaker

from groundkit.answer.llm import ChatModel, judge, rewrite, synthesize
from groundkit.answer.model import Passage
from groundkit.collection import Collection, IndexConfig, index

HOST = "http://127.0.0.1:11434"
MODEL = os.environ.get("GROUNDKIT_LLM_MODEL", "llama3.2")

pytestmark = [
    pytest.mark.gated,
    pytest.mark.skipif(
        os.environ.get("EVAL_GATED") != "1",
        reason=f"needs a real Ollama at 127.0.0.1:11434 with {MODEL} "
               "(GROUNDKIT_LLM_MODEL); set EVAL_GATED=1",
    ),
]


@pytest.fixture
def model() -> str:
    import httpx
    import ollama

    try:
        with ollama.Client(host=HOST, timeout=5, trust_env=False) as client:
            names = {m.model for m in client.list().models}
    except (ConnectionError, OSError, httpx.HTTPError) as exc:
        pytest.skip(f"no Ollama server at {HOST} ({exc}); start it with `ollama serve`")
    if MODEL not in names and f"{MODEL}:latest" not in names:
        pytest.skip(f"the Ollama server at {HOST} has no {MODEL!r}: run `ollama pull {MODEL}`")
    return MODEL


def test_a_real_model_answers_and_every_citation_is_an_exact_span(
        model: str, make_tree: TreeMaker, home: Path) -> None:
    root = make_tree({
        "retention.md": "# Retention\n\nAudit logs are kept for 30 days.\n"
                        "After that they are deleted by the nightly job.\n",
        "backup.md": "# Backups\n\nBackups run every night at 02:00.\n",
    })
    index("k", IndexConfig(roots=(str(root),)), home=home)
    with Collection.open("k", home) as coll:
        hits = coll.search("how long are audit logs kept", verify=True, top_k=2)
    passages = [Passage(number=i, collection="k", hit=h, verdict=h.verdict.status)  # type: ignore[union-attr]
                for i, h in enumerate(hits, start=1)]
    with closing(ChatModel(model, host=HOST)) as llm:
        result = synthesize("How long are audit logs kept?", passages, llm)
        query = rewrite("How long are audit logs kept?", llm)
        verdict = judge("How long are audit logs kept?", result.sentences, passages, llm)

    assert result.kind in {"llm", "withheld", "not_in_passages"}, result
    for sentence in result.sentences:
        assert sentence.supported == bool(sentence.citations)
        for c in sentence.citations:
            assert (root / c.path).read_text(encoding="utf-8")[c.start:c.end] == c.text
    assert query and "\n" not in query
    assert verdict["advisory"] is True
    assert verdict["verdict"] in {"faithful", "unfaithful", "unclear"}
