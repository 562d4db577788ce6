"""``bench_scale.py``'s results: growth exponents, targets, log-log plots and an HTML page.

The growth exponent of a measure is the slope of the least-squares line through
``(log10 size, log10 value)`` over the sizes measured (None with fewer than two positive
values): 1 is linear growth, 0 flat.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

MEASURES: list[tuple[str, str]] = [
    ("build_s", "index build s"), ("build_mb_s", "build MB/s"),
    ("peak_rss_mib", "build peak RSS MiB"), ("disk_mib", "index on disk MiB"),
    ("rss_after_queries_mib", "RSS after queries MiB"), ("cold_open_s", "cold open s"),
    ("p50_ms", "BM25 p50 ms"), ("p99_ms", "BM25 p99 ms"), ("mean_ms", "BM25 mean ms"),
    ("collection_build_s", "collection index() s"), ("update_s", "single-file update s"),
    ("search_p50_ms", "collection search p50 ms"),
    ("verified_search_p50_ms", "verified search p50 ms"),
    ("fetch_chunk_p50_ms", "fetch_chunk p50 ms"),
    ("concurrent_p50_ms", "8 readers p50 ms"), ("concurrent_p99_ms", "8 readers p99 ms"),
]
"""(key in an engine's row, label): one plot and one exponent per engine each."""
LINEAR_MAX, RSS_OVER_DISK_MAX, P50_MAX_MS, P99_MAX_MS = 1.05, 2.0, 0.25, 1.0
TARGET_SIZE = 1_000_000


def fit_exponent(sizes: Sequence[float], values: Sequence[float | None]) -> float | None:
    """Least-squares slope of log10(value) on log10(size), over the positive values."""
    pts = [(math.log10(s), math.log10(v)) for s, v in zip(sizes, values, strict=True)
           if v is not None and v > 0 and s > 0]
    if len(pts) < 2:
        return None
    mx = sum(x for x, _ in pts) / len(pts)
    my = sum(y for _, y in pts) / len(pts)
    sxx = sum((x - mx) ** 2 for x, _ in pts)
    if sxx == 0:
        return None
    return sum((x - mx) * (y - my) for x, y in pts) / sxx


def series(sizes: dict[str, dict[str, Any]], engine: str, key: str) -> tuple[list[int],
                                                                           list[float | None]]:
    xs, ys = [], []
    for size, rows in sizes.items():
        row = rows.get(engine, {})
        if isinstance(row.get(key), int | float):
            xs.append(int(size))
            ys.append(float(row[key]))
    return xs, ys


def exponents(sizes: dict[str, dict[str, Any]], engines: Sequence[str],
              last: int | None = None) -> dict[str, Any]:
    """``{measure: {engine: exponent}}`` for every measure with at least two sizes; with
    ``last``, over the ``last`` largest sizes only (the local slope, where fixed costs such
    as imports and JVM start weigh least)."""
    out: dict[str, Any] = {}
    if last is not None:
        sizes = dict(sorted(sizes.items(), key=lambda kv: int(kv[0]))[-last:])
    for key, _ in MEASURES:
        per = {e: fit_exponent(*series(sizes, e, key)) for e in engines}
        per = {e: round(v, 3) for e, v in per.items() if v is not None}
        if per:
            out[key] = per
    return out


def _fastest_peer(rows: dict[str, Any], key: str) -> tuple[str, float] | None:
    peers = [(e, r[key]) for e, r in rows.items() if e != "groundkit" and r.get(key)]
    return min(peers, key=lambda p: p[1]) if peers else None


def _peer_targets(sizes: dict[str, dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for size, rows in sizes.items():
        ours = rows.get("groundkit", {})
        for key in ("p50_ms", "p99_ms"):
            label = f"{size}: groundkit {key[:3]} <= fastest peer's"
            peer = _fastest_peer(rows, key)
            if peer is None or not ours.get(key):
                out[label] = {"met": None, "not_measured": "no peer or no groundkit figure"}
                continue
            out[label] = {"met": ours[key] <= peer[1], "value": ours[key], "peer": peer[0],
                          "peer_value": peer[1], "ratio": ours[key] / peer[1]}
    return out


def targets(sizes: dict[str, dict[str, Any]], exps: dict[str, Any]) -> dict[str, Any]:
    """The growth targets for groundkit: met (True/False) or None (not measured)."""
    out: dict[str, Any] = {}
    build = exps.get("build_s", {}).get("groundkit")
    out["build time linear (exponent <= 1.05)"] = {
        "met": None if build is None else build <= LINEAR_MAX, "value": build}
    for size, rows in sizes.items():
        ours = rows.get("groundkit", {})
        for key, what in (("peak_rss_mib", "build peak RSS"),
                          ("peak_over_corpus_mib", "build peak RSS over the corpus"),
                          ("rss_after_queries_mib", "RSS after queries")):
            if ours.get(key) and ours.get("disk_mib"):
                x = ours[key] / ours["disk_mib"]
                out[f"{size}: {what} <= 2x disk"] = {"met": x <= RSS_OVER_DISK_MAX,
                                                     "value": round(x, 3)}
    big = sizes.get(str(TARGET_SIZE), {}).get("groundkit", {})
    for key, bound in (("p50_ms", P50_MAX_MS), ("p99_ms", P99_MAX_MS)):
        value = big.get(key)
        out[f"{TARGET_SIZE}: BM25 {key[:3]} <= {bound} ms"] = {
            "met": None if value is None else value <= bound, "value": value}
    out.update(_peer_targets(sizes))
    return out


def print_targets(goals: dict[str, Any]) -> None:
    print("\ngrowth targets (groundkit):")
    for label, g in goals.items():
        state = {True: "met", False: "NOT met", None: "-"}[g["met"]]
        extra = (f" ({g['value']:.4g} vs {g['peer']} {g['peer_value']:.4g}, ratio "
                 f"{g['ratio']:.3f})" if "ratio" in g else
                 f" ({g['value']})" if g.get("value") is not None else " (not measured)")
        print(f"  {state:8s} {label}{extra}")


def plot(sizes: dict[str, dict[str, Any]], engines: Sequence[str], exps: dict[str, Any],
         out_dir: Path) -> list[Path]:
    """One log-log PNG per measure with at least one series; returns the files."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    files = []
    for key, label in MEASURES:
        lines = [(e, *series(sizes, e, key)) for e in engines]
        lines = [line for line in lines if line[1]]
        if not lines:
            continue
        fig, ax = plt.subplots(figsize=(6, 4))
        for engine, xs, ys in lines:
            k = exps.get(key, {}).get(engine)
            ax.plot(xs, ys, marker="o", label=f"{engine}" + (f" (k={k:.2f})" if k else ""))
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("passages")
        ax.set_ylabel(label)
        ax.set_title(f"{label} (k: fitted exponent)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        path = out_dir / f"{key}.png"
        fig.savefig(path, dpi=90)
        plt.close(fig)
        files.append(path)
    return files


def write_html(report: dict[str, Any], pngs: Sequence[Path], path: Path) -> Path:
    """One page: the command, load, per-size table, exponents, targets and the plots."""
    esc = html.escape
    rows = []
    for size, engines in report["sizes"].items():
        for engine, row in engines.items():
            cells = [esc(str(row.get("not_measured", "")))] if "not_measured" in row else [
                f"{row[k]:.4g}" if isinstance(row.get(k), int | float) else "-"
                for k, _ in MEASURES]
            span = f' colspan="{len(MEASURES)}"' if "not_measured" in row else ""
            rows.append(f"<tr><td>{size}</td><td>{esc(engine)}</td>"
                        + "".join(f"<td{span}>{c}</td>" for c in cells) + "</tr>")
    head = "".join(f"<th>{esc(label)}</th>" for _, label in MEASURES)
    goals = "".join(f"<li>{esc(str(g['met']))}: {esc(label)} ({esc(str(g.get('value')))})</li>"
                    for label, g in report["targets"].items())
    imgs = "".join(f'<img src="{p.name}" alt="{p.stem}">' for p in pngs)
    page = (f"<!doctype html><meta charset=utf-8><title>groundkit growth</title>"
            f"<h1>groundkit BM25 growth</h1><p><code>{esc(report['command'])}</code>; load "
            f"{report['loadavg_before']} → {report['loadavg_after']}; "
            f"{report['cpus']} CPUs</p><table border=1><tr><th>passages</th><th>engine</th>"
            f"{head}</tr>{''.join(rows)}</table><h2>exponents</h2><pre>"
            f"{esc(str(report['exponents']))}</pre><h2>targets</h2><ul>{goals}</ul>{imgs}")
    path.write_text(page, encoding="utf-8")
    return path
