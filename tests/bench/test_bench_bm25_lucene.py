"""bench_bm25.py's Lucene engine: built, opened and queried by a JVM at a tiny size, and a
"not measured" row (with the reason) when Lucene cannot run, the rest of the bench going on.

Without Lucene (``make lucene``) the JVM tests skip with the reason, unless
``GROUNDKIT_REQUIRE_LUCENE=1`` (CI), which turns a missing Lucene into a failure.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / "bench"
sys.path.insert(0, str(BENCH))

import bm25_engines  # noqa: E402
from bm25_table import check_goals  # noqa: E402

REASON = bm25_engines.available("lucene")


def _need_lucene() -> None:
    if REASON is None:
        return
    if os.environ.get("GROUNDKIT_REQUIRE_LUCENE") == "1":
        pytest.fail(f"GROUNDKIT_REQUIRE_LUCENE=1 but the Lucene peer cannot run: {REASON}")
    pytest.skip(f"lucene: {REASON}")


def _texts(n: int) -> list[str]:
    words = ["cat", "dog", "zebra", "river", "stone", "lamp", "quote", "tab\there", "line\nbreak"]
    return [" ".join(words[(i * k) % len(words)] for k in range(1, 12)) + f" doc{i}"
            for i in range(n)]


def test_lucene_builds_and_answers_200_passages_like_the_other_engines(tmp_path: Path) -> None:
    _need_lucene()
    texts = _texts(200)
    out = tmp_path / "indexes" / "lucene"
    out.parent.mkdir()
    built = bm25_engines.lucene_build(texts, out, tmp_path / "docs.lucene.txt")
    assert built["build_mb_s"] > 0 and built["build_mb_cpu_s"] > 0
    assert built["corpus_mb"] == sum(len(t.encode()) for t in texts) / 1e6
    assert built["disk_mib"] > 0 and built["peak_rss_mib"] >= built["peak_over_corpus_mib"] > 0
    assert built["lucene"] == "8.8.1" and built["java_version"]
    assert f"-Xmx{bm25_engines.LUCENE_HEAP}" in built["jvm_flags"]
    queries = ["cat dog", "zebra", "the of", "doc7 river"]
    answered = bm25_engines.lucene_query(queries, out)
    assert answered["n_queries"] == 4
    assert answered["queries_with_hits"] == 3  # stopwords only: no hit
    assert 0 < answered["p50_ms"] <= answered["p99_ms"]
    assert answered["warm_queries"] >= bm25_engines.LUCENE_WARM_QUERIES
    assert answered["warm_passes"] >= 2 and "warmed" in answered["warm_up"]


def _run_bench(tmp_path: Path, env: dict[str, str]) -> dict:  # type: ignore[type-arg]
    out = tmp_path / "bm25.json"
    cmd = [sys.executable, str(BENCH / "bench_bm25.py"), "--chunks", "200", "--queries", "20",
           "--engines", "groundkit,lucene", "--repeat", "1", "--cache", str(tmp_path / "cache"),
           "--out", str(out)]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, timeout=600,
                          env={**os.environ, **env}, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(out.read_text())  # type: ignore[no-any-return]


def test_the_bench_measures_lucene_in_the_same_run_and_states_the_goal_ratios(
        tmp_path: Path) -> None:
    _need_lucene()
    report = _run_bench(tmp_path, {})
    lucene, ours = report["engines"]["lucene"], report["engines"]["groundkit"]
    assert lucene["n_queries"] == ours["n_queries"] == 20
    assert lucene["p50_ms"] > 0 and lucene["build_mb_s"] > 0 and lucene["disk_mib"] > 0
    goal = report["goals"]["query p99 <= Lucene p99 (no slower than Lucene)"]
    assert goal["ratio"] == pytest.approx(ours["p99_ms"] / lucene["p99_ms"])
    assert goal["met"] == (ours["p99_ms"] <= lucene["p99_ms"])
    assert ours["ratios_vs_lucene"]["query p50 speed-up"] == pytest.approx(
        lucene["p50_ms"] / ours["p50_ms"])


def test_without_lucene_its_row_says_not_measured_and_the_rest_runs(tmp_path: Path) -> None:
    empty = tmp_path / "no-lucene"
    empty.mkdir()
    report = _run_bench(tmp_path, {"GROUNDKIT_LUCENE_DIR": str(empty)})
    assert "make lucene" in report["engines"]["lucene"]["not_measured"]
    assert report["engines"]["groundkit"]["p50_ms"] > 0
    goal = report["goals"]["query p50 <= Lucene p50 (no slower than Lucene)"]
    assert goal["met"] is None and "make lucene" in goal["not_measured"]


def test_a_goal_against_a_peer_not_measured_is_not_reported_as_missed() -> None:
    rows = {"groundkit": {"p50_ms": 0.02, "p99_ms": 0.1, "build_mb_s": 20.0,
                          "peak_rss_mib": 300.0},
            "lucene": {"p50_ms": 0.04, "p99_ms": 0.08},
            "tantivy": {"not_measured": "tantivy is not installed"}}
    goals = check_goals(rows)
    p50 = goals["query p50 <= Lucene p50 (no slower than Lucene)"]
    assert p50["met"] is True and p50["ratio"] == pytest.approx(0.5)
    p99 = goals["query p99 <= Lucene p99 (no slower than Lucene)"]
    assert p99["met"] is False and p99["ratio"] == pytest.approx(1.25)
    stretch = goals["build MB/s >= tantivy (stretch)"]
    assert stretch["met"] is None and stretch["not_measured"] == "tantivy is not installed"
    assert goals["query p50 <= bm25s+numba p50"]["not_measured"] == "not in this run"
