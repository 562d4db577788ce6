"""``bench_bm25.py``'s results: the printed table, the ratios against each peer, best-of
over repeated runs, and groundkit's goals (ADR-0003, issue 18; "no slower than Lucene")."""

from __future__ import annotations

from typing import Any

from common import format_ratio, ratio

COLUMNS = [
    ("build_mb_s", "build MB/s", "{:.1f}"), ("build_mb_cpu_s", "build MB per CPU s", "{:.1f}"),
    ("peak_rss_mib", "build peak RSS MiB", "{:.0f}"),
    ("peak_over_corpus_mib", "build peak - corpus MiB", "{:.0f}"),
    ("disk_mib", "disk MiB", "{:.1f}"), ("rss_loaded_mib", "loaded RSS MiB", "{:.0f}"),
    ("loaded_over_base_mib", "loaded - base MiB", "{:.0f}"),
    ("rss_after_queries_mib", "RSS after queries MiB", "{:.0f}"),
    ("load_s", "load s", "{:.2f}"), ("p50_ms", "p50 ms", "{:.4f}"), ("p99_ms", "p99 ms", "{:.4f}"),
    ("mean_ms", "mean ms", "{:.4f}"), ("p50_cpu_ms", "p50 CPU ms", "{:.4f}"),
    ("p99_cpu_ms", "p99 CPU ms", "{:.4f}"), ("n_queries", "queries", "{}"),
]


def print_table(all_rows: dict[str, dict[str, Any]]) -> None:
    """The measured engines side by side, the ratios against each peer, then a line for
    each engine not measured (with the reason) and Lucene's JVM facts."""
    rows = {e: r for e, r in all_rows.items() if "not_measured" not in r}
    engines = list(rows)
    width = max(len(c[1]) for c in COLUMNS) + 2
    cell = max(14, *(len(e) + 2 for e in engines))  # "groundkit-numpy" needs 17
    print("".ljust(width) + "".join(e.rjust(cell) for e in engines))
    for key, label, fmt in COLUMNS:
        cells = [fmt.format(rows[e][key]) if rows[e].get(key) is not None else "-"
                 for e in engines]
        print(label.ljust(width) + "".join(c.rjust(cell) for c in cells))
    for ref_name in ("groundkit-numpy", "bm25s", "bm25s-numba", "tantivy", "lucene"):
        _print_ratios(rows, ref_name)
    for engine, row in all_rows.items():
        if "not_measured" in row:
            print(f"\n{engine}: not measured: {row['not_measured']}")
    lucene = rows.get("lucene", {})
    if lucene.get("jvm"):
        print(f"\nlucene: Lucene {lucene['lucene']} on {lucene['jvm']}, "
              f"{lucene['jvm_flags']} (heap max {lucene['heap_max_mib']:.0f} MiB, {lucene['gc']}); "
              f"one JVM per phase; {lucene.get('warm_up', '')}")


_RATIOS = [("query p50 speed-up", "p50_ms", True), ("query p99 speed-up", "p99_ms", True),
           ("query mean speed-up", "mean_ms", True), ("build speed", "build_mb_s", False),
           ("build peak RSS smaller", "peak_rss_mib", True), ("disk smaller", "disk_mib", True),
           ("loaded RSS smaller", "rss_loaded_mib", True)]
"""The ratios printed against each peer: (label, figure, whether lower is better)."""


def _print_ratios(rows: dict[str, dict[str, Any]], ref_name: str) -> None:
    ref = rows.get(ref_name, {})
    if not ref:
        return
    print(f"\nratios vs {ref_name} (>1 = the engine better):")
    for e in rows:
        if e == ref_name:
            continue
        r = rows[e]
        ratios = {label: ratio(ref.get(key), r.get(key)) if lower else
                  ratio(r.get(key), ref.get(key)) for label, key, lower in _RATIOS}
        r[f"ratios_vs_{ref_name}"] = ratios
        print(f"  {e:12s} " + ", ".join(f"{k} {format_ratio(v)}" for k, v in ratios.items() if v))


_BEST = {"build_s": min, "build_mb_s": max, "build_cpu_s": min, "build_mb_cpu_s": max,
         "build_thread_cpu_s": min,
         "load_s": min, "p50_ms": min, "p99_ms": min, "mean_ms": min, "p50_cpu_ms": min,
         "p99_cpu_ms": min}
"""Speed figures keep the best run; memory figures keep the largest (the conservative one)."""


def best_of(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """One row from repeated runs of a phase: best speed, largest memory, every load average."""
    out = dict(runs[-1])
    for key in out:
        values = [r[key] for r in runs if isinstance(r.get(key), int | float)]
        if key in _BEST and values:
            out[key] = _BEST[key](values)
        elif key.endswith("_mib") and values:
            out[key] = max(values)
    phase = runs[-1].get("phase", "")
    out[f"{phase}_load_avg_1m"] = [r.get("load_avg_1m") for r in runs]
    out.pop("load_avg_1m", None)
    out[f"{phase}_runs"] = len(runs)
    return out


GOALS: list[tuple[str, str, float]] = [
    ("build MB/s >= 20 (one core)", "build_mb_s", 20),
    ("build peak RSS <= 450 MiB (corpus included)", "peak_rss_mib", 450),
    ("query p50 <= 0.05 ms", "p50_ms", 0.05),
]
"""Fixed goals: (label, figure, bound); ``_ms`` and ``_mib`` figures are upper bounds."""

PEER_GOALS: list[tuple[str, str, str]] = [
    ("build MB/s >= tantivy (stretch)", "build_mb_s", "tantivy"),
    ("query p50 <= bm25s+numba p50", "p50_ms", "bm25s-numba"),
    ("query p99 <= bm25s+numba p99", "p99_ms", "bm25s-numba"),
    ("query p50 <= Lucene p50 (no slower than Lucene)", "p50_ms", "lucene"),
    ("query p99 <= Lucene p99 (no slower than Lucene)", "p99_ms", "lucene"),
]
"""Goals against a peer measured in the same run: (label, figure, peer). ``ratio`` is
groundkit's figure divided by the peer's (a latency goal is met at <= 1, a speed goal at
>= 1); a latency goal also gives ``cpu_ratio``, the same in thread CPU time, which other
processes' time slices on a shared machine do not inflate (the goal is on wall time)."""


def _lower_is_better(key: str) -> bool:
    return key.endswith(("_ms", "_mib"))


def _peer_goal(ours: dict[str, Any], key: str, peer: dict[str, Any]) -> dict[str, Any]:
    value, theirs = ours.get(key), peer.get(key)
    if value is None or theirs is None:
        why = peer.get("not_measured") or "not in this run"
        return {"value": value, "peer_value": None, "ratio": None, "met": None,
                "not_measured": why}
    met = value <= theirs if _lower_is_better(key) else value >= theirs
    out = {"value": value, "peer_value": theirs, "ratio": ratio(value, theirs), "met": met}
    cpu = key.replace("_ms", "_cpu_ms")
    if key.endswith("_ms") and ours.get(cpu) is not None and peer.get(cpu) is not None:
        out["cpu_ratio"] = ratio(ours[cpu], peer[cpu])  # the same figure in thread CPU time
    return out


def check_goals(rows: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """groundkit's figures against its goals (ADR-0003), printed and returned. A peer goal
    whose peer was not measured says so (``met`` None) instead of "NOT met"."""
    ours = rows.get("groundkit")
    if not ours or "not_measured" in ours:
        return {}
    print("\ngroundkit goals:")
    out: dict[str, Any] = {}
    for label, key, bound in GOALS:
        value = ours.get(key)
        met = value is not None and (value <= bound if _lower_is_better(key) else value >= bound)
        out[label] = {"value": value, "met": met}
        shown = value if value is None else round(value, 4)
        print(f"  {'met' if met else 'NOT met':8s} {label}: {shown}")
    for label, key, peer in PEER_GOALS:
        goal = out[label] = _peer_goal(ours, key, rows.get(peer, {}))
        if goal["met"] is None:
            print(f"  {'-':8s} {label}: {peer} not measured ({goal['not_measured']})")
            continue
        cpu = f" (CPU time: {goal['cpu_ratio']:.3f})" if goal.get("cpu_ratio") else ""
        print(f"  {'met' if goal['met'] else 'NOT met':8s} {label}: {goal['value']:.4g} vs "
              f"{goal['peer_value']:.4g}, groundkit / {peer} = {goal['ratio']:.3f}{cpu}")
    return out
