"""A local GGUF model run in-process by llama.cpp (``llama-cpp-python``): the ``llamacpp:``
provider of the language-model boundary and the relevance judge's reader.

One :class:`LlamaCppModel` per model file, loaded lazily, on the CPU unless told
``n_gpu_layers``. Its replies are reproducible: greedy decoding (temperature 0), a fixed
seed, a fixed thread count, so its :attr:`~LlamaCppModel.identity` (the file's sha256, the
runtime's version and these options) names what produced a reply. A pinned model
(:mod:`.gguf`) whose file differs from its pin fails closed before it is loaded.

Two uses: :meth:`~LlamaCppModel.chat` (the reply to chat messages, rendered with the chat
template the GGUF file carries) and :meth:`~LlamaCppModel.next_token_probabilities` (the
distribution of the reply's first token, read from the logits: a yes/no judge without
sampling). Successive prompts that share a beginning (one question, several passages)
reuse its evaluated tokens.

The runtime is imported lazily and only here. OpenMP threads wait passively
(``OMP_WAIT_POLICY=passive`` unless set): spinning threads made a 16-token reply take
20-38 s instead of 1-2 s on a loaded two-core machine (issue 44).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from typing import Any

from ..errors import MissingDependencyError, ProviderError, UsageError
from .gguf import resolve, verify

RUNTIME = "llama-cpp-python"
RUNTIME_VERSION = "0.3.36"
"""The runtime version the provider is built and measured with (``make llm``)."""
N_CTX = 8192
"""Tokens of context: the answer rules, five passages and the reply (five 1,000-character
passages of dense text made a 4,102-token prompt on golden v4; the model allows 32,768)."""
MAX_TOKENS = 384
"""The longest reply :meth:`LlamaCppModel.chat` generates."""
SEED = 0

Message = dict[str, str]


class RuntimeMissingError(MissingDependencyError):
    """llama-cpp-python is not installed: it is built from source by ``make llm``."""

    def __init__(self, purpose: str) -> None:
        super().__init__("llama_cpp", "llm", purpose)
        self.msg = (f"{purpose} needs {RUNTIME} {RUNTIME_VERSION}, which is not installed: "
                    "run `make llm` in the groundkit checkout (it builds it from source with "
                    "CMAKE_ARGS=-DGGML_NATIVE=OFF and assembles the pinned models)")
        self.args = (self.msg,)  # ImportError prints msg


def default_threads() -> int:
    """One thread per core this process may use."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") \
        else (os.cpu_count() or 1)


class LlamaCppModel:
    """A GGUF model file run by llama.cpp (see the module docstring).

    ``spec`` is a pinned model's name or a path to a ``.gguf`` file (:func:`.gguf.resolve`).
    The file is hashed when the model is made: a pinned one must match its pin.
    """

    def __init__(self, spec: str, *, n_threads: int | None = None, n_ctx: int = N_CTX,
                 max_tokens: int = MAX_TOKENS, n_gpu_layers: int = 0) -> None:
        for name, value in (("n_ctx", n_ctx), ("max_tokens", max_tokens)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise UsageError(f"{name} must be a positive integer, got {value!r}")
        self.path, pin = resolve(spec)
        self.name = pin.name if pin is not None else self.path.stem
        self.sha256 = verify(self.path, pin)
        self.n_threads = n_threads or default_threads()
        self.n_ctx, self.max_tokens, self.n_gpu_layers = n_ctx, max_tokens, n_gpu_layers
        self._llm: Any = None
        self._format: Any = None

    @property
    def options(self) -> dict[str, int]:
        """What besides the file and the runtime decides a reply (greedy decoding)."""
        return {"n_ctx": self.n_ctx, "n_threads": self.n_threads, "seed": SEED,
                "temperature": 0, "max_tokens": self.max_tokens,
                "n_gpu_layers": self.n_gpu_layers}

    @property
    def identity(self) -> dict[str, str]:
        return {"provider": "llamacpp", "model": self.name, "sha256": self.sha256,
                "runtime": f"{RUNTIME} {RUNTIME_VERSION}",
                "options": json.dumps(self.options, sort_keys=True)}

    def chat(self, messages: list[Message]) -> str:
        """The model's greedy reply to ``messages`` (at most ``max_tokens`` tokens)."""
        llm = self._ensure()
        tokens = self._tokens(messages, reserve=self.max_tokens)
        try:
            out = llm.create_completion(tokens, max_tokens=self.max_tokens, temperature=0.0,
                                        top_k=1, seed=SEED, repeat_penalty=1.0)
        except (RuntimeError, ValueError) as exc:
            raise ProviderError(f"the model {self.name!r} failed to reply: {exc}") from exc
        return str(out["choices"][0]["text"]).strip()

    def next_token_probabilities(self, messages: list[Message],
                                 words: Sequence[str]) -> dict[str, float]:
        """P(the reply's first token is the first token of ``word``), for each word, from
        a softmax over the whole vocabulary (no sampling: the logits after the prompt)."""
        llm = self._ensure()
        import numpy as np

        tokens = self._tokens(messages, reserve=1)
        try:
            steps = llm.generate(tokens, temp=0.0, top_k=1, repeat_penalty=1.0)
            next(steps)  # evaluates the prompt (reusing a shared beginning) and samples once
            steps.close()
        except (RuntimeError, ValueError) as exc:
            raise ProviderError(f"the model {self.name!r} failed to evaluate: {exc}") from exc
        import llama_cpp

        logits = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(llm.ctx, -1),
                                       shape=(llm.n_vocab(),)).astype(np.float64)
        top = float(logits.max())
        log_total = top + math.log(float(np.exp(logits - top).sum()))
        out = {}
        for word in words:
            first = llm.tokenize(word.encode("utf-8"), add_bos=False, special=False)[:1]
            if not first:
                raise UsageError(f"{word!r} has no token")
            out[word] = math.exp(float(logits[first[0]]) - log_total)
        return out

    def load(self) -> None:
        """Load the model now (else the first call does)."""
        self._ensure()

    def close(self) -> None:
        """Free the model (it is loaded again if used)."""
        if self._llm is not None:
            self._llm.close()
            self._llm = None

    def _tokens(self, messages: list[Message], *, reserve: int) -> list[int]:
        prompt = self._format(messages=messages).prompt
        tokens: list[int] = self._llm.tokenize(prompt.encode("utf-8"), add_bos=False,
                                               special=True)
        if len(tokens) + reserve > self.n_ctx:
            raise ProviderError(f"the prompt is {len(tokens)} tokens; with {reserve} for the "
                                f"reply it exceeds the model's context of {self.n_ctx}")
        return tokens

    def _ensure(self) -> Any:
        if self._llm is not None:
            return self._llm
        os.environ.setdefault("OMP_WAIT_POLICY", "passive")  # read when OpenMP starts
        try:
            import llama_cpp
            from llama_cpp.llama_chat_format import Jinja2ChatFormatter
        except ImportError as exc:
            raise RuntimeMissingError("The llamacpp provider") from exc
        if llama_cpp.__version__ != RUNTIME_VERSION:
            raise ProviderError(f"{RUNTIME} {llama_cpp.__version__} is installed; the provider "
                                f"is pinned to {RUNTIME_VERSION}: run `make llm`")
        try:
            llm = llama_cpp.Llama(model_path=str(self.path), n_ctx=self.n_ctx,
                                  n_threads=self.n_threads, n_threads_batch=self.n_threads,
                                  n_gpu_layers=self.n_gpu_layers, seed=SEED, verbose=False)
        except (RuntimeError, ValueError) as exc:
            raise ProviderError(f"llama.cpp cannot load {self.path}: {exc}") from exc
        template = llm.metadata.get("tokenizer.chat_template")
        if not template:
            llm.close()
            raise ProviderError(f"{self.path} carries no chat template")
        def text(token: int) -> str:
            return str(llm.detokenize([token], special=True).decode("utf-8", "replace"))

        self._format = Jinja2ChatFormatter(template=template, eos_token=text(llm.token_eos()),
                                           bos_token=text(llm.token_bos()))
        self._llm = llm
        return llm

