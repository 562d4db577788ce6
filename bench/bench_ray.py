"""Embedding throughput on Ray (1, 2, N actors) against one process, in the same run.

    HF_HUB_OFFLINE=1 python bench/bench_ray.py [--passages 2000] [--spec local:all-MiniLM-L6-v2]
        [--workers 1,2] [--address HOST:PORT]

Measures what ``grk index --embed SPEC --ray`` spends embedding: the same passages, the
same batches (the indexer's 256), embedded (a) in this process by the provider as the
indexer builds it, (b) in this process with one thread (what one Ray actor gets: Ray sets
``OMP_NUM_THREADS`` to an actor's one CPU), and (c) by 1, 2 ... Ray actors through
:class:`~groundkit.collection.ray_executor.RayEmbedder`. Model loading is excluded
everywhere (each actor embeds a warm-up batch first). Reported: passages/s, the per-worker
overhead (Ray time x workers / one-thread single-process time: 1.0 means a worker
costs nothing beyond its share, 1.2 means 20% more), and whether the Ray vectors are
byte-identical to the single-process ones. Without ``--address`` a local Ray with as
many CPUs as the largest worker count is started. Writes ``.bench/ray.json``.
"""

from __future__ import annotations

import argparse
import random
import time
from typing import Any

import common
import numpy as np

from groundkit.collection.derived import document_provider
from groundkit.collection.ray_executor import RayEmbedder, RayExecutor, import_ray
from groundkit.retrieval.vectors import EMBED_BATCH

WORDS = ("budget", "deployment", "logs", "engineer", "restart", "ingest", "worker",
         "quarterly", "review", "policy", "contract", "renewal", "invoice", "schedule",
         "meeting", "notes", "release", "incident", "backup", "storage", "network", "latency",
         "customer", "support", "onboarding", "training", "security", "audit")


def passages(n: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(40, 110))) + "."
            for _ in range(n)]


def batches(texts: list[str]) -> list[list[str]]:
    return [texts[i:i + EMBED_BATCH] for i in range(0, len(texts), EMBED_BATCH)]


def single(embedding: dict[str, Any], texts: list[str]) -> tuple[float, np.ndarray]:
    provider = document_provider(embedding)
    try:
        provider.embed(texts[:8], kind="document")  # load the model: not timed
        start = time.perf_counter()
        out = np.vstack([provider.embed(b, kind="document") for b in batches(texts)])
        return time.perf_counter() - start, out
    finally:
        provider.close()


def on_ray(executor: RayExecutor, embedding: dict[str, Any],
           texts: list[str]) -> tuple[float, np.ndarray]:
    embedder = executor.embedder(embedding, document_provider)
    assert isinstance(embedder, RayEmbedder)
    try:
        list(embedder.embed_batches([texts[:8]] * executor.workers, kind="document"))  # warm-up
        start = time.perf_counter()
        out = np.vstack(list(embedder.embed_batches(batches(texts), kind="document")))
        return time.perf_counter() - start, out
    finally:
        embedder.close()


def row(name: str, seconds: float, n: int, **extra: Any) -> dict[str, Any]:
    print(f"{name:<28} {seconds:8.2f} s  {n / seconds:8.1f} passages/s  "
          + "  ".join(f"{k}={v}" for k, v in extra.items()))
    return {"name": name, "seconds": round(seconds, 3), "passages_per_s": round(n / seconds, 1),
            **extra}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--passages", type=int, default=2000)
    ap.add_argument("--spec", default="local:all-MiniLM-L6-v2")
    ap.add_argument("--workers", default="1,2", help="Ray actor counts, comma-separated")
    ap.add_argument("--address", help="an existing cluster (default: start a local Ray)")
    args = ap.parse_args()
    counts = [int(w) for w in args.workers.split(",")]
    texts = passages(args.passages)
    embedding: dict[str, Any] = {"spec": args.spec, "options": {}}
    local = args.spec.startswith("local")
    result: dict[str, Any] = {"machine": common.machine(), "spec": args.spec,
                              "passages": len(texts), "batch": EMBED_BATCH, "rows": []}
    t_default, reference = single(embedding, texts)
    result["rows"].append(row("single process", t_default, len(texts)))
    t_one = t_default
    if local:
        t_one, _ = single({**embedding, "options": {"threads": 1}}, texts)
        result["rows"].append(row("single process, 1 thread", t_one, len(texts)))
    ray = import_ray()
    if args.address is None:
        ray.init(num_cpus=max(counts), include_dashboard=False, log_to_driver=False,
                 logging_level="warning")
    executor = RayExecutor(args.address)
    try:
        for w in counts:
            executor.workers = w
            seconds, vectors = on_ray(executor, embedding, texts)
            result["rows"].append(row(
                f"ray, {w} worker{'s' if w > 1 else ''}", seconds, len(texts),
                overhead_per_worker=round(seconds * w / t_one, 3),
                speedup_vs_single=round(t_default / seconds, 3),
                identical_vectors=bool(vectors.tobytes() == reference.tobytes()),
                max_abs_diff=float(np.abs(vectors - reference).max())))
    finally:
        executor.close()
        ray.shutdown()
    result["machine"]["loadavg_after"] = common.load_average()
    print("wrote", common.write_result("ray", result))


if __name__ == "__main__":
    main()
