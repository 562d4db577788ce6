"""1,000 tool calls over HTTP from 64 concurrent MCP sessions, with a client that never
reads its replies: a real ``grk serve`` subprocess on loopback."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp_helpers import many_docs, write_tree

from groundkit.collection import IndexConfig, index
from groundkit.testing.mcp_load import run_load
from groundkit.testing.serve_http import http_server

pytest.importorskip("mcp")
REPO = Path(__file__).resolve().parents[2]
TOKEN = "load-test-token-0123456789"


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    base = tmp_path_factory.mktemp("load")
    home = base / "home"
    index("k", IndexConfig(roots=(str(write_tree(base / "docs", many_docs())),)), home=home)
    with http_server(home, TOKEN) as (served, _):
        yield served


def test_a_thousand_calls_from_64_sessions_all_succeed_past_a_client_that_never_reads(
        url: str) -> None:
    queries = [f"word{i:02d} logs workers" for i in range(40)]
    result = run_load(url, TOKEN, queries, calls=1000, clients=64, stalled=True)
    assert result.errors == []
    assert len(result.latencies_ms) == 1000
    assert max(result.latencies_ms) < 30_000  # nobody waited for the stalled client


def test_the_driver_counts_failures_instead_of_hiding_them(url: str) -> None:
    result = run_load(url, "wrong-token-0123456789", ["logs"], calls=5, clients=2)
    assert len(result.errors) == 2 and all("initialize failed" in e for e in result.errors)
