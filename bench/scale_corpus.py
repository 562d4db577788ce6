"""``bench_scale.py``'s corpora: any number of ~1,000-character passages, deterministically.

This machine's /usr/share/doc, /usr/share/man and the stdlib sources give about 100,000
real passages (``bench_bm25.make_corpus``, ~100 MB); 1M passages need ~1 GB. So every
size is drawn the same way from one pool: the real passages are split into sentences
(at ``. `` / ``! `` / ``? `` and at line breaks), and each new passage is a run of
sentences drawn with replacement (``random.Random(seed)``, the same seed at every size)
until it reaches ~1,000 characters, cut at a space as the real ones are. Word
frequencies therefore follow the real corpus's (Zipfian) distribution at every size and
no two passages are the same text; the vocabulary is the pool's (it does not keep
growing with size as a real collection's would: the term dictionary stops growing near
100k passages while the postings lists keep growing). The passages of size ``n`` are the
first ``n`` of one stream, so a smaller corpus is a prefix of a larger one. Cached as
``<cache>/scale-corpus/corpus-<n>-<chars>-<seed>.jsonl``, one JSON string a line, written to a
``.part`` file and renamed.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterator
from pathlib import Path

from bench_bm25 import load_texts, make_corpus

POOL_PASSAGES = 100_000
"""Real passages the sentence pool is cut from (``bench_bm25``'s default corpus)."""
_SPLIT = re.compile(r"(?<=[.!?])\s+|\n+")


def sentence_pool(passages: list[str], max_chars: int) -> list[str]:
    """Every sentence (or line) of ``passages`` with at least 3 characters, clipped to
    ``max_chars``, in order."""
    out: list[str] = []
    for passage in passages:
        for piece in _SPLIT.split(passage):
            piece = piece.strip()
            if len(piece) >= 3:
                out.append(piece[:max_chars])
    return out


def stream(pool: list[str], chars: int, seed: int) -> Iterator[str]:
    """Passages of about ``chars`` characters, each a run of random sentences of ``pool``."""
    rng = random.Random(seed)
    n = len(pool)
    while True:
        parts: list[str] = []
        size = 0
        while size < chars:
            sentence = pool[int(rng.random() * n)]
            parts.append(sentence)
            size += len(sentence) + 1
        text = " ".join(parts)
        if len(text) > chars:
            cut = text.rfind(" ", chars * 4 // 5, chars)
            text = text[: cut if cut > 0 else chars]
        yield text


def corpus_file(cache: Path, n: int, chars: int, seed: int) -> Path:
    return cache / "scale-corpus" / f"corpus-{n}-{chars}-{seed}.jsonl"


def scale_corpus(n: int, chars: int, seed: int, cache: Path,
                 pool_passages: int = POOL_PASSAGES) -> Path:
    """The cached corpus file of ``n`` passages (written on first use)."""
    path = corpus_file(cache, n, chars, seed)
    if path.exists():
        return path
    real = make_corpus(pool_passages, chars, cache)
    pool = sentence_pool(real, chars)
    del real
    path.parent.mkdir(parents=True, exist_ok=True)
    part = path.with_suffix(".part")
    with open(part, "w", encoding="utf-8") as f:
        for _, text in zip(range(n), stream(pool, chars, seed), strict=False):
            f.write(json.dumps(text) + "\n")
    part.replace(path)
    return path


def corpus_mb(path: Path) -> float:
    """The corpus's text in MB (10^6 bytes of UTF-8), as ``bench_bm25``'s workers count it."""
    return sum(len(t.encode("utf-8")) for t in load_texts(path)) / 1e6
