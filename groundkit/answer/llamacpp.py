"""The ``llamacpp:`` provider of ``grk ask --llm``: a pinned GGUF model run in this process.

``--llm llamacpp:qwen2.5-coder-1.5b-instruct-q4_k_m`` (a pinned name, looked up in
``$GROUNDKIT_LLM_DIR``, else the checkout's ``.cache/llm`` where ``make llm`` puts it) or
``--llm llamacpp:/path/to/model.gguf``. The model gets the same prompts as an Ollama
model (:mod:`.prompts`) and its reply the same quote checks (:mod:`.llm`); its identity is
the file's sha256, the runtime's version and the decoding options
(:class:`~groundkit.embeddings.llamacpp.LlamaCppModel`). Offline: nothing is fetched.
"""

from __future__ import annotations

from ..embeddings.llamacpp import LlamaCppModel
from ..errors import UsageError


def chat_model(model: str, *, host: str | None = None,
               timeout: float | None = None) -> LlamaCppModel:
    """The chat model ``llamacpp:MODEL`` names; an Ollama server's options do not apply."""
    if host is not None or timeout is not None:
        given = "--llm-host" if host is not None else "--llm-timeout"
        raise UsageError(f"{given} applies to ollama: models; a llamacpp: model runs in this "
                         "process")
    return LlamaCppModel(model)
