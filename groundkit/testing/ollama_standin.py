"""A loopback stand-in for an Ollama server's embedding and chat APIs.

It lets the real ``ollama`` Python client be tested over real HTTP without Ollama
installed. It binds ``127.0.0.1`` on an ephemeral port, serves from a thread, and is
bounded: request bodies, inputs and messages per request, concurrent requests,
per-connection idle time and the request logs all have limits.

Wire format (checked against ollama's ``server/routes.go`` and the ``ollama-python`` client):

- ``POST /api/embed`` ``{"model", "input": str | [str], "truncate", "dimensions",
  "keep_alive", "options"}`` -> ``{"model", "embeddings": [[float]], "total_duration",
  "load_duration", "prompt_eval_count"}``; rows are L2-normalised, as the real server does.
- ``POST /api/embeddings`` (legacy) ``{"model", "prompt"}`` -> ``{"embedding": [float]}``,
  not normalised, as the real server does.
- ``POST /api/chat`` ``{"model", "messages": [{"role", "content"}], "stream", "options",
  "format", "keep_alive", "tools"}`` -> ``{"model", "created_at", "message": {"role":
  "assistant", "content"}, "done": true, "done_reason": "stop", "total_duration",
  "load_duration", "prompt_eval_count", "prompt_eval_duration", "eval_count", "eval_duration"}``
  for ``"stream": false``, else (Ollama's default) NDJSON: a content line, then that ``done``
  line. Replies are scripted (:func:`scripted_chat`), never generated.
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
from datetime import UTC, datetime
from http.server import ThreadingHTTPServer
from typing import Any

import numpy as np

from . import hashed_vectors
from .json_http import HttpError, JsonHandler

EmbedFn = Callable[[list[str]], Any]
"""Texts in, an ``n x d`` array-like of floats out (normalisation not required)."""


ChatStep = str | HttpError
"""A chat reply, or an error to reply with (``HttpError(500, "boom")``)."""
ChatFn = Callable[[list[dict[str, Any]]], ChatStep]
"""A request's messages in, its :data:`ChatStep` out (it may block, to delay the reply)."""


def scripted_chat(chat: ChatFn | Sequence[ChatStep] | ChatStep | None) -> ChatFn:
    """A responder: ``None`` echoes the last message; one step (a ``str`` too) is every
    reply; a sequence is replied in order, then 500s; a callable is called."""
    if chat is None:
        return lambda messages: str(messages[-1].get("content") or "") if messages else ""
    if isinstance(chat, str | HttpError):
        return lambda messages: chat
    if callable(chat):
        return chat
    script, lock = deque(chat), threading.Lock()

    def next_step(messages: list[dict[str, Any]]) -> ChatStep:
        with lock:
            return script.popleft() if script else HttpError(500, "stand-in: script used up")

    return next_step


def hashing_embedder(dimension: int = 768) -> EmbedFn:
    """A model-free embed function (feature hashing), the stand-in's default."""
    return lambda texts: hashed_vectors(texts, dimension)


def provider_embedder(provider: Any) -> EmbedFn:
    """An embed function backed by a groundkit provider (e.g. the ``local`` model); its
    prefixes are not applied twice (the client already prefixed the texts)."""
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
    max_messages: int = 1024
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
    chat: ChatFn
    lock: threading.Lock = field(default_factory=threading.Lock)
    embed_lock: threading.Lock = field(default_factory=threading.Lock)
    records: deque[RecordedRequest] = field(default_factory=lambda: deque(maxlen=10_000))
    chats: deque[dict[str, Any]] = field(default_factory=lambda: deque(maxlen=1_000))
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

    ``embed`` computes vectors (default: :func:`hashing_embedder`); ``chat`` scripts the
    chat replies (:func:`scripted_chat`); ``models`` serve both. ``hold``, when given,
    makes every embedding and chat request wait until the event is set (at most
    ``hold_timeout`` seconds), to test client timeouts without sleeps.
    """

    def __init__(self, embed: EmbedFn | None = None, *,
                 models: Iterable[str] = ("nomic-embed-text",), version: str = "0.0.0-standin",
                 hold: threading.Event | None = None, hold_timeout: float = 30.0,
                 max_body_bytes: int = 8 * 1024 * 1024, max_inputs: int = 4096,
                 max_concurrent: int = 8,
                 chat: ChatFn | Sequence[ChatStep] | ChatStep | None = None) -> None:
        limits = _Limits(max_body_bytes=max_body_bytes, max_inputs=max_inputs,
                         max_concurrent=max_concurrent)
        self._state = _State(models=frozenset(_canonical(m) for m in models),
                             embed=embed or hashing_embedder(), version=version, limits=limits,
                             hold=hold, hold_timeout=hold_timeout, chat=scripted_chat(chat))
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("the stand-in is not running; use it as a context manager")
        return "http://{!s}:{}".format(*self._server.server_address[:2])

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._state.lock:
            return list(self._state.records)

    @property
    def chat_requests(self) -> list[dict[str, Any]]:
        """The bodies of the ``/api/chat`` requests received, oldest first."""
        with self._state.lock:
            return list(self._state.chats)

    def start(self) -> OllamaStandin:
        self._server = server = _Server(self._state)
        self._thread = threading.Thread(target=server.serve_forever,
                                        kwargs={"poll_interval": 0.05}, daemon=True)
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
            "/api/tags": lambda: {"models": [_tag(name) for name in sorted(self.state.models)]},
            "/api/version": lambda: {"version": self.state.version}}
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
        handler = {"/api/embed": self._embed, "/api/embeddings": self._embeddings,
                   "/api/chat": self._chat}.get(self.path)
        if handler is None:
            self.drain()
            self._not_found()
            return
        if not self.state.slots.acquire(blocking=False):
            self.drain()
            self._fail(None, HttpError(
                503, "server busy, please try again. maximum pending requests exceeded"))
            return
        model: str | None = None
        try:
            body = self.read_json()
            model = body.get("model") if isinstance(body.get("model"), str) else None
            status, payload, inputs = handler(body)
            self._record(model, inputs, status)
            if isinstance(payload, list):  # a streamed reply: one JSON object a line
                lines = b"".join(json.dumps(part).encode() + b"\n" for part in payload)
                self.send_bytes(status, lines, "application/x-ndjson")
            else:
                self.send_json(status, payload)
        except HttpError as exc:
            self._fail(model, exc)
        finally:
            self.state.slots.release()

    # -- endpoints

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
        payload = {"model": model, "embeddings": matrix.tolist(),
                   "total_duration": time.perf_counter_ns() - started,
                   "load_duration": loaded - started, "prompt_eval_count": tokens}
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

    def _chat(self, body: dict[str, Any]) -> tuple[int, Any, int]:
        started = time.perf_counter_ns()
        model = self._require_model(body)
        messages = body.get("messages") or []
        if not isinstance(messages, list) or not all(
                isinstance(m, dict) and isinstance(m.get("role"), str) for m in messages):
            raise HttpError(400, "invalid message format")
        if len(messages) > self.state.limits.max_messages:
            raise HttpError(400, f"too many messages: {len(messages)}")
        with self.state.lock:
            self.state.chats.append(body)
        self._wait()
        with self.state.embed_lock:  # scripted code, like embed functions, runs one at a time
            reply = self.state.chat(messages)
        if not isinstance(reply, str):
            raise reply if isinstance(reply, HttpError) else HttpError(
                500, f"chat responder returned {type(reply).__name__}, not a str")
        took = time.perf_counter_ns() - started
        words = sum(len(str(m.get("content") or "").split()) for m in messages)
        head = {"model": model, "created_at": datetime.now(UTC).isoformat().replace("+00:00", "Z")}
        done = {"done": True, "done_reason": "stop", "total_duration": took, "load_duration": 0,
                "prompt_eval_count": words, "prompt_eval_duration": took // 2,
                "eval_count": len(reply.split()), "eval_duration": took - took // 2}
        said = {**head, "message": {"role": "assistant", "content": reply}}
        if body.get("stream") is False:
            return 200, {**said, **done}, len(messages)
        return 200, [{**said, "done": False},
                     {**head, "message": {"role": "assistant", "content": ""}, **done}],\
            len(messages)

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
        if truncate is False and any(len(text.split()) > limit for text in texts):
            raise HttpError(400, "input exceeds maximum context length")
        kept = [" ".join(t.split()[:limit]) if len(t.split()) > limit else t for t in texts]
        return kept, sum(min(len(text.split()), limit) for text in texts)

    def _wait(self) -> None:
        state = self.state
        if state.hold is not None and not state.hold.wait(state.hold_timeout):
            raise HttpError(500, "stand-in hold timed out")

    def _compute(self, texts: list[str]) -> np.ndarray:
        state = self.state
        self._wait()
        with state.embed_lock:
            matrix = np.asarray(state.embed(list(texts)), dtype=np.float32)
        if matrix.ndim != 2 or matrix.shape[0] != len(texts):
            raise HttpError(500, f"embed function returned shape {matrix.shape} for "
                                 f"{len(texts)} texts")
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
    details = {"parent_model": "", "format": "standin", "family": "standin",
               "families": ["standin"], "parameter_size": "", "quantization_level": ""}
    return {"name": name, "model": name, "modified_at": "2024-01-01T00:00:00Z", "size": 0,
            "digest": hashlib.sha256(name.encode()).hexdigest(), "details": details}


__all__: Sequence[str] = ["ChatFn", "ChatStep", "EmbedFn", "OllamaStandin", "RecordedRequest",
                          "hashing_embedder", "provider_embedder", "scripted_chat"]
