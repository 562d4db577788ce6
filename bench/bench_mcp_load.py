"""The MCP server under load: concurrent sessions over HTTP, a stalled client, memory.

``grk serve --transport http`` runs as a subprocess over golden v1 (37 documents) on a
loopback port with a bearer token; the load driver (``groundkit/testing/mcp_load.py``:
raw JSON-RPC, one MCP session and one connection per client) calls the ``search`` tool
(BM25, top 10) with the golden questions in turn.

* **Concurrency**: ``--calls`` calls (default 1,000) from ``--clients`` sessions (64),
  while one more client pipelines large requests and never reads a reply. Reported:
  errors (goal: none), p50/p99 per call, calls per second; the peer, measured in the
  same run, is one client alone making the same calls one at a time.
* **Memory**: ``--memory-calls`` calls (10,000) from 8 sessions; the server's resident
  memory (``VmRSS``) after every 1,000. Goal: flat — under 10% growth from the first
  sample to the last.

Run: ``python bench/bench_mcp_load.py``. Writes ``.bench/mcp_load.json``.
"""

from __future__ import annotations

import argparse
import json
import secrets
import sys
import tempfile
from pathlib import Path

from common import ROOT, latency_summary, load_average, machine, ratio, write_result

from groundkit.collection import IndexConfig, index
from groundkit.testing.mcp_load import run_load
from groundkit.testing.serve_http import http_server

GOLDEN = ROOT / "golden" / "v1"


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--calls", type=int, default=1000)
    p.add_argument("--clients", type=int, default=64)
    p.add_argument("--memory-calls", type=int, default=10_000)
    args = p.parse_args(argv)
    queries = [json.loads(line)["question"]
               for line in (GOLDEN / "questions.jsonl").read_text().splitlines() if line]
    before = machine()
    token = secrets.token_hex(16)
    with tempfile.TemporaryDirectory(prefix="bench-mcp-load-") as tmp:
        home = Path(tmp)
        index("golden", IndexConfig(roots=(str(GOLDEN / "docs"),), include=("*",)), home=home)
        with http_server(home, token) as (url, pid):
            run_load(url, token, queries, calls=100, clients=4)  # warm up
            alone = run_load(url, token, queries, calls=args.calls, clients=1)
            loaded = run_load(url, token, queries, calls=args.calls, clients=args.clients,
                              stalled=True)
            memory = run_load(url, token, queries, calls=args.memory_calls, clients=8,
                              sample=lambda: rss_mib(pid))
    first, last = memory.samples[0][1], memory.samples[-1][1]
    growth = (last - first) / first if first else None
    out = {
        "machine": before, "loadavg_after": load_average(), "corpus": "golden/v1",
        "concurrency": {
            "calls": args.calls, "clients": args.clients, "stalled_client": True,
            "errors": len(loaded.errors), "first_errors": loaded.errors[:5],
            "latency": latency_summary(loaded.latencies_ms),
            "calls_per_s": round(args.calls / loaded.wall_s, 1)},
        "peer_one_client": {"errors": len(alone.errors),
                            "latency": latency_summary(alone.latencies_ms),
                            "calls_per_s": round(args.calls / alone.wall_s, 1)},
        "throughput_ratio_vs_one_client": ratio(args.calls / loaded.wall_s,
                                                args.calls / alone.wall_s),
        "memory": {"calls": args.memory_calls, "errors": len(memory.errors),
                   "rss_mib_every_1000": [round(v, 1) for _, v in memory.samples],
                   "growth_first_to_last": None if growth is None else round(growth, 4)},
        "goals": {"errors": 0, "memory_growth_below": 0.10},
    }
    c, a = out["concurrency"], out["peer_one_client"]
    print(f"{args.calls} calls from {args.clients} sessions (+1 stalled): {c['errors']} errors, "
          f"p50 {c['latency']['p50_ms']:.1f} ms, p99 {c['latency']['p99_ms']:.1f} ms, "
          f"{c['calls_per_s']} calls/s; one client alone: p50 {a['latency']['p50_ms']:.1f} ms, "
          f"{a['calls_per_s']} calls/s (throughput ratio {out['throughput_ratio_vs_one_client']})")
    print(f"memory over {args.memory_calls} calls: RSS {out['memory']['rss_mib_every_1000']} MiB "
          f"(growth {out['memory']['growth_first_to_last']})")
    write_result("mcp_load", out)
    return 1 if c["errors"] or memory.errors else 0


if __name__ == "__main__":
    sys.exit(main())
