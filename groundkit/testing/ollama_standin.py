"""A loopback stand-in for an Ollama server's embedding API.

It lets the real ``ollama`` Python client be tested over real HTTP without
Ollama installed. It binds ``127.0.0.1`` on an ephemeral port, serves from a
thread, and is bounded: request bodies, inputs per request, concurrent
requests, per-connection idle time and the request log all have limits.

Wire format (checked against ollama's ``server/routes.go`` and the
``ollama-python`` client):

- ``POST /api/embed`` ``{"model", "input": str | [str], "truncate", "dimensions",
  "keep_alive", "options"}`` -> ``{"model", "embeddings": [[float]],
  "total_duration", "load_duration", "prompt_eval_count"}``; rows are
  L2-normalised, as the real server does.
- ``POST /api/embeddings`` (legacy) ``{"model", "prompt"}`` -> ``{"embedding": [float]}``,
  not normalised, as the real server does.
- ``GET /api/tags`` -> ``{"models": [...]}``; ``GET /api/version`` -> ``{"version"}``;
  ``GET /`` -> ``Ollama is running``.
- An unknown model: 404 ``{"error": "model \\"x\\" not found, try pulling it first"}``.

Token counts are whitespace words, a stand-in for the model's tokenizer.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from http.server import ThreadingHTTPServer
from typing import Any

import numpy as np

from . import hashed_vectors
from .json_http import HttpError, JsonHandler

EmbedFn = Callable[[list[str]], Any]
"""Texts in, an ``n x d`` array-like of floats out (normalisation not required)."""


def hashing_embedder(dimension: int = 768) -> EmbedFn:
    """A model-free embed function (feature hashing), the stand-in's default."""
    return lambda texts: hashed_vectors(texts, dimension)


def provider_embedder(provider: Any) -> EmbedFn:
    """An embed function backed by a groundkit provider (e.g. the ``local`` model).

    The provider's own prefixes are not applied twice: the client already
    prefixed the texts, and ``all-MiniLM-L6-v2`` has none.
    """
    return lambda texts: provider.embed(texts, kind="document")


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    """One request the stand-in answered."""

    method: str
    path: str
    model: str | None
    inputs: int
    status: int


@dataclass
class _Limits:
    max_body_bytes: int = 8 * 1024 * 1024
    max_inputs: int = 4096
    max_concurrent: int = 8
    idle_timeout: float = 10.0
    context_length: int = 8192


@dataclass
class _State:
    models: frozenset[str]
    embed: EmbedFn
    version: str
    limits: _Limits
    hold: threading.Event | None
    hold_timeout: float
    lock: threading.Lock = field(default_factory=threading.Lock)
    embed_lock: threading.Lock = field(default_factory=threading.Lock)
    records: deque[RecordedRequest] = field(default_factory=lambda: deque(maxlen=10_000))
    connection_errors: int = 0
    slots: threading.BoundedSemaphore = field(init=False)

    def __post_init__(self) -> None:
        self.slots = threading.BoundedSemaphore(self.limits.max_concurrent)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, state: _State) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.standin_state = state

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Silent (a client that hung up mid-reply is expected in timeout tests)."""
        with self.standin_state.lock:
            self.standin_state.connection_errors += 1


def _canonical(model: str) -> str:
    return model if ":" in model else f"{model}:latest"


class OllamaStandin:
    """``with OllamaStandin(models=["nomic-embed-text"]) as server: Client(host=server.url)``.

    ``embed`` computes vectors (default: :func:`hashing_embedder`). ``hold``,
    when given, makes every embedding request wait until the event is set
    (at most ``hold_timeout`` seconds), to test client timeouts without sleeps.
    """

    def __init__(
        self,
        embed: EmbedFn | None = None,
        *,
        models: Iterable[str] = ("nomic-embed-text",),
        version: str = "0.0.0-standin",
        hold: threading.Event | None = None,
        hold_timeout: float = 30.0,
        max_body_bytes: int = 8 * 1024 * 1024,
        max_inputs: int = 4096,
        max_concurrent: int = 8,
    ) -> None:
        self._state = _State(
            models=frozenset(_canonical(m) for m in models),
            embed=embed or hashing_embedder(),
            version=version,
            limits=_Limits(
                max_body_bytes=max_body_bytes,
                max_inputs=max_inputs,
                max_concurrent=max_concurrent,
            ),
            hold=hold,
            hold_timeout=hold_timeout,
        )
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("the stand-in is not running; use it as a context manager")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._state.lock:
            return list(self._state.records)

    def start(self) -> OllamaStandin:
        server = _Server(self._state)
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def close(self) -> None:
        if self._server is not None:
            if self._state.hold is not None:
                self._state.hold.set()
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> OllamaStandin:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()


class _Handler(JsonHandler):
    server_version = "ollama-standin"

    @property
    def state(self) -> _State:
        server = self.server
        if not isinstance(server, _Server):  # pragma: no cover - only _Server uses _Handler
            raise TypeError("the stand-in handler needs the stand-in server")
        return server.standin_state

    @property
    def body_limit(self) -> int:
        return self.state.limits.max_body_bytes

    def do_GET(self) -> None:
        routes: dict[str, Callable[[], Any]] = {
            "/api/tags": self._tags,
            "/api/version": lambda: {"version": self.state.version},
        }
        if self.path == "/":
            self._record(None, 0, 200)
            self.send_bytes(200, b"Ollama is running", "text/plain; charset=utf-8")
        elif self.path in routes:
            self._record(None, 0, 200)
            self.send_json(200, routes[self.path]())
        else:
            self._not_found()

    def do_HEAD(self) -> None:
        self.send_bytes(200 if self.path == "/" else 404, b"", "text/plain; charset=utf-8")

    def do_POST(self) -> None:
        handlers = {"/api/embed": self._embed, "/api/embeddings": self._embeddings}
        handler = handlers.get(self.path)
        if handler is None:
            self.drain()
            self._not_found()
            return
        if not self.state.slots.acquire(blocking=False):
            self.drain()
            self._fail(
                None,
                HttpError(503, "server busy, please try again. maximum pending requests exceeded"),
            )
            return
        model: str | None = None
        try:
            body = self.read_json()
            model = body.get("model") if isinstance(body.get("model"), str) else None
            status, payload, inputs = handler(body)
            self._record(model, inputs, status)
            self.send_json(status, payload)
        except HttpError as exc:
            self._fail(model, exc)
        finally:
            self.state.slots.release()

    # -- endpoints

    def _tags(self) -> dict[str, Any]:
        return {"models": [_tag(name) for name in sorted(self.state.models)]}

    def _embed(self, body: dict[str, Any]) -> tuple[int, dict[str, Any], int]:
        started = time.perf_counter_ns()
        model = self._require_model(body)
        texts = _inputs(body.get("input"))
        if len(texts) > self.state.limits.max_inputs:
            raise HttpError(400, f"too many inputs: {len(texts)} > {self.state.limits.max_inputs}")
        texts, tokens = self._truncate(texts, body.get("truncate"))
        loaded = time.perf_counter_ns()
        if not texts:
            return 200, {"model": model, "embeddings": []}, 0
        matrix = _normalize(self._compute(texts))
        dims = body.get("dimensions")
        if isinstance(dims, int) and 0 < dims < matrix.shape[1]:
            matrix = _normalize(matrix[:, :dims])
        payload = {
            "model": model,
            "embeddings": matrix.tolist(),
            "total_duration": time.perf_counter_ns() - started,
            "load_duration": loaded - started,
            "prompt_eval_count": tokens,
        }
        return 200, payload, len(texts)

    def _embeddings(self, body: dict[str, Any]) -> tuple[int, dict[str, Any], int]:
        self._require_model(body)
        prompt = body.get("prompt") or ""
        if not isinstance(prompt, str):
            raise HttpError(400, "invalid prompt type")
        if not prompt:
            return 200, {"embedding": []}, 0
        vector = np.asarray(self._compute([prompt]), dtype=np.float64)[0]
        return 200, {"embedding": vector.tolist()}, 1

    # -- helpers

    def _require_model(self, body: dict[str, Any]) -> str:
        model = body.get("model")
        if not isinstance(model, str) or not model:
            raise HttpError(400, "model is required")
        if _canonical(model) not in self.state.models:
            raise HttpError(404, f"model {json.dumps(model)} not found, try pulling it first")
        return model

    def _truncate(self, texts: list[str], truncate: Any) -> tuple[list[str], int]:
        limit = self.state.limits.context_length
        out, total = [], 0
        for text in texts:
            words = text.split()
            if len(words) > limit:
                if truncate is False:
                    raise HttpError(400, "input exceeds maximum context length")
                text, words = " ".join(words[:limit]), words[:limit]
            out.append(text)
            total += len(words)
        return out, total

    def _compute(self, texts: list[str]) -> np.ndarray:
        state = self.state
        if state.hold is not None and not state.hold.wait(state.hold_timeout):
            raise HttpError(500, "stand-in hold timed out")
        with state.embed_lock:
            matrix = np.asarray(state.embed(list(texts)), dtype=np.float32)
        if matrix.ndim != 2 or matrix.shape[0] != len(texts):
            raise HttpError(
                500, f"embed function returned shape {matrix.shape} for {len(texts)} texts"
            )
        return matrix

    def _not_found(self) -> None:
        self._record(None, 0, 404)
        self.send_bytes(404, b"404 page not found", "text/plain")

    def _fail(self, model: str | None, exc: HttpError) -> None:
        self._record(model, 0, exc.status)
        self.send_json(exc.status, {"error": exc.message})

    def _record(self, model: str | None, inputs: int, status: int) -> None:
        """Log before replying, so a client that has its answer also sees it logged."""
        record = RecordedRequest(self.command, self.path, model, inputs, status)
        with self.state.lock:
            self.state.records.append(record)


def _inputs(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value] if value else []
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    raise HttpError(400, "invalid input type")


def _normalize(matrix: np.ndarray) -> np.ndarray:
    if not np.isfinite(matrix).all():
        raise HttpError(500, "embedding contains NaN or Inf values")
    norms = np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)
    normalised: np.ndarray = (matrix / norms).astype(np.float32)
    return normalised


def _tag(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "model": name,
        "modified_at": "2024-01-01T00:00:00Z",
        "size": 0,
        "digest": hashlib.sha256(name.encode()).hexdigest(),
        "details": {
            "parent_model": "",
            "format": "standin",
            "family": "standin",
            "families": ["standin"],
            "parameter_size": "",
            "quantization_level": "",
        },
    }


__all__: Sequence[str] = [
    "EmbedFn",
    "OllamaStandin",
    "RecordedRequest",
    "hashing_embedder",
    "provider_embedder",
]
