"""``bench_bm25.py``'s results: the printed table, the ratios against each peer, best-of
over repeated runs, and groundkit's goals (ADR-0003, issue 18)."""

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


def print_table(rows: dict[str, dict[str, Any]]) -> None:
    engines = list(rows)
    width = max(len(c[1]) for c in COLUMNS) + 2
    cell = max(14, *(len(e) + 2 for e in engines))  # "groundkit-numpy" needs 17
    print("".ljust(width) + "".join(e.rjust(cell) for e in engines))
    for key, label, fmt in COLUMNS:
        cells = [fmt.format(rows[e][key]) if rows[e].get(key) is not None else "-"
                 for e in engines]
        print(label.ljust(width) + "".join(c.rjust(cell) for c in cells))
    for ref_name in ("groundkit-numpy", "bm25s", "bm25s-numba", "tantivy"):
        _print_ratios(rows, ref_name)


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


GOALS = [
    ("build MB/s >= 20 (one core)", "build_mb_s", lambda v, _: v >= 20),
    ("build MB/s >= tantivy (stretch)", "build_mb_s",
     lambda v, refs: refs["tantivy"].get("build_mb_s") is not None
     and v >= refs["tantivy"]["build_mb_s"]),
    ("build peak RSS <= 450 MiB (corpus included)", "peak_rss_mib", lambda v, _: v <= 450),
    ("query p50 <= 0.05 ms", "p50_ms", lambda v, _: v <= 0.05),
    ("query p50 <= bm25s+numba p50", "p50_ms",
     lambda v, refs: refs["bm25s-numba"].get("p50_ms") is not None
     and v <= refs["bm25s-numba"]["p50_ms"]),
    ("query p99 <= bm25s+numba p99", "p99_ms",
     lambda v, refs: refs["bm25s-numba"].get("p99_ms") is not None
     and v <= refs["bm25s-numba"]["p99_ms"]),
]


def check_goals(rows: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """groundkit's figures against its goals (ADR-0003), printed and returned."""
    ours = rows.get("groundkit")
    if not ours:
        return {}
    refs = {name: rows.get(name, {}) for name in ("bm25s-numba", "tantivy")}
    print("\ngroundkit goals:")
    out = {}
    for label, key, test in GOALS:
        value = ours.get(key)
        met = value is not None and bool(test(value, refs))
        out[label] = {"value": value, "met": met}
        shown = value if value is None else round(value, 4)
        print(f"  {'met' if met else 'NOT met':8s} {label}: {shown}")
    return out
