"""bench_scale.py at tiny sizes: the JSON's shape, the exponent fit on known data, the
targets, the recombined corpus, and the plots and HTML page beside the JSON."""

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

import scale_corpus  # noqa: E402
import scale_report  # noqa: E402


def test_the_exponent_fit_recovers_known_power_laws() -> None:
    sizes = [1e3, 1e4, 1e5, 1e6]
    assert scale_report.fit_exponent(sizes, [2 * s for s in sizes]) == pytest.approx(1.0)
    assert scale_report.fit_exponent(sizes, [5 * s**0.5 for s in sizes]) == pytest.approx(0.5)
    assert scale_report.fit_exponent(sizes, [3.0] * 4) == pytest.approx(0.0)
    assert scale_report.fit_exponent([10, 100], [1.0, None]) is None  # one point
    # least squares, not the end points: (1, 10, 100) -> (1, 20, 100) fits slope 1
    assert scale_report.fit_exponent([1, 10, 100], [1, 20, 100]) == pytest.approx(1.0)


def test_targets_against_the_fastest_peer_and_the_1m_bounds() -> None:
    sizes = {"1000": {"groundkit": {"p50_ms": 0.02, "p99_ms": 0.5, "build_s": 1.0,
                                    "peak_rss_mib": 30, "disk_mib": 20},
                      "tantivy": {"p50_ms": 0.03, "p99_ms": 0.1},
                      "lucene": {"p50_ms": 0.025, "p99_ms": 0.2},
                      "bm25s-numba": {"not_measured": "numba is not installed"}},
             "1000000": {"groundkit": {"p50_ms": 0.3, "p99_ms": 0.9, "build_s": 1200.0}}}
    exps = scale_report.exponents(sizes, ["groundkit", "tantivy"])
    assert exps["build_s"]["groundkit"] == pytest.approx(1.026, abs=1e-3)
    goals = scale_report.targets(sizes, exps)
    assert goals["build time linear (exponent <= 1.05)"]["met"] is True
    p50 = goals["1000: groundkit p50 <= fastest peer's"]
    assert p50["met"] is True and p50["peer"] == "lucene" and p50["ratio"] == pytest.approx(0.8)
    p99 = goals["1000: groundkit p99 <= fastest peer's"]
    assert p99["met"] is False and p99["peer"] == "tantivy"
    assert goals["1000000: groundkit p50 <= fastest peer's"]["met"] is None
    assert goals["1000000: BM25 p50 <= 0.25 ms"]["met"] is False
    assert goals["1000000: BM25 p99 <= 1.0 ms"]["met"] is True
    assert goals["1000: build peak RSS <= 2x disk"] == {"met": True, "value": 1.5}


def test_the_recombined_corpus_is_deterministic_and_its_prefixes_agree() -> None:
    pool = scale_corpus.sentence_pool(["One two. Three four!\nFive six seven? x", "Eight."],
                                      max_chars=100)
    assert pool == ["One two.", "Three four!", "Five six seven?", "Eight."]
    a = [t for _, t in zip(range(50), scale_corpus.stream(pool, 60, seed=3), strict=False)]
    b = [t for _, t in zip(range(20), scale_corpus.stream(pool, 60, seed=3), strict=False)]
    assert a[:20] == b and all(40 <= len(t) <= 60 for t in a)
    assert len(set(a)) > 40  # not the same passage repeated


def test_the_bench_at_500_and_2000_passages_writes_json_plots_and_html(tmp_path: Path) -> None:
    out = tmp_path / "scale.json"
    cmd = [sys.executable, str(BENCH / "bench_scale.py"), "--sizes", "500,2000",
           "--engines", "groundkit", "--repeat", "1", "--queries", "30", "--pool", "3000",
           "--readers", "2", "--edits", "1", "--cache", str(tmp_path / "cache"),
           "--out", str(out)]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, timeout=600,
                          env=dict(os.environ), check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(out.read_text())
    assert set(report["sizes"]) == {"500", "2000"}
    row = report["sizes"]["2000"]["groundkit"]
    for key in ("build_s", "build_mb_s", "peak_rss_mib", "disk_mib", "cold_open_s", "p50_ms",
                "p99_ms", "mean_ms", "update_s", "verified_search_p50_ms",
                "fetch_chunk_p50_ms", "concurrent_p50_ms", "concurrent_p99_ms"):
        assert row[key] > 0, key
    assert row["n_queries"] == 30 and row["concurrent_kind"] == "processes"
    assert isinstance(report["exponents"]["build_s"]["groundkit"], float)
    assert "build time linear (exponent <= 1.05)" in report["targets"]
    assert report["next_size_estimate"]["size"] == 20_000
    assert report["loadavg_before"] and report["loadavg_after"]
    folder = tmp_path / "scale"
    assert (folder / "index.html").read_text().count("<img") >= 10
    assert (folder / "p50_ms.png").read_bytes()[:4] == b"\x89PNG"
    assert (folder / "update_s.png").is_file()
    again = subprocess.run([sys.executable, str(BENCH / "bench_scale.py"), "--replot", str(out),
                            "--out", str(tmp_path / "again.json")], capture_output=True,
                           text=True, cwd=REPO, timeout=300, check=False)
    assert again.returncode == 0, again.stderr[-3000:]
    replotted = json.loads((tmp_path / "again.json").read_text())
    assert replotted["sizes"] == report["sizes"]
    assert replotted["exponents_two_largest"] == replotted["exponents"]  # two sizes only
    assert (tmp_path / "again" / "index.html").is_file()
