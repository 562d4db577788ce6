"""The official MCP conformance suite against a real ``grk serve --transport http`` on loopback.

``@modelcontextprotocol/conformance`` (npm, pinned at :data:`VERSION`; it needs Node 22)
is installed by ``make conformance`` into ``.cache/conformance`` (or where
``GROUNDKIT_CONFORMANCE_DIR`` points). Its server scenarios are the TypeScript SDK's
client talking to the server; each writes a ``checks.json``. A scenario passes when
it has a SUCCESS and no FAILURE or WARNING (the suite's own rule). Every scenario
the suite runs must be in :data:`MUST_PASS` or :data:`NOT_APPLICABLE` (with the
reason); the first must pass and the second must fail, so a newly failing
scenario fails this test, and so does one that starts to pass (the list is then
stale, as the suite's own ``--expected-failures`` treats it). The suite cannot
send a bearer token, so it runs without one; the token path is the attack
corpus's (test_attacks.py). Skipped when the suite or its Node is missing, unless
``GROUNDKIT_REQUIRE_CONFORMANCE=1`` (CI). docs/mcp-clients.md shows the same run by
hand.
"""

from __future__ import annotations

import json
import os
import re
import select
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from server_process import indexed_home, interrupt

REPO = Path(__file__).resolve().parents[2]
VERSION = "0.1.16"
SUITE = Path("node_modules/@modelcontextprotocol/conformance")
DOCS = {"logs.md": "# Logs\n\nDeployment logs are kept for 30 days.\n",
        "oncall.md": "The on-call engineer restarts the ingest worker.\n"}

MUST_PASS = {
    "server-initialize": "initialize answers with a valid result",
    "ping": "ping answers an empty result",
    "tools-list": "tools/list lists the four tools with valid structure",
    "server-sse-multiple-streams": "three concurrent POSTs are each answered (JSON; SSE optional)",
}
_FIXTURE = "calls the suite's fixture tool {}; groundkit serves its own four tools only"
NOT_APPLICABLE = {
    "logging-set-level": "no logging capability (logs go to stderr; deprecated in 2026-07-28)",
    "completion-complete": "no completions capability (no prompts or resource templates)",
    "tools-call-simple-text": _FIXTURE.format("test_simple_text"),
    "tools-call-image": _FIXTURE.format("test_image_content") + " (and returns no images)",
    "tools-call-audio": _FIXTURE.format("test_audio_content") + " (and returns no audio)",
    "tools-call-embedded-resource": _FIXTURE.format("test_embedded_resource")
    + " (no resources)",
    "tools-call-mixed-content": _FIXTURE.format("test_multiple_content_types"),
    "tools-call-with-logging": _FIXTURE.format("test_tool_with_logging") + " (no logging)",
    "tools-call-error": _FIXTURE.format("test_error_handling") + "; groundkit's own isError "
    "results are the attack corpus's",
    "tools-call-with-progress": _FIXTURE.format("test_tool_with_progress")
    + " (no progress notifications)",
    "tools-call-sampling": "no sampling: groundkit never asks the client's model",
    "tools-call-elicitation": "no elicitation: groundkit never asks the user",
    "elicitation-sep1034-defaults": "no elicitation",
    "elicitation-sep1330-enums": "no elicitation",
    "resources-list": "no resources capability (resources/list: -32601)",
    "resources-read-text": "no resources",
    "resources-read-binary": "no resources",
    "resources-templates-read": "no resources",
    "resources-subscribe": "no resources",
    "resources-unsubscribe": "no resources",
    "prompts-list": "no prompts capability (prompts/list: -32601)",
    "prompts-get-simple": "no prompts",
    "prompts-get-with-args": "no prompts",
    "prompts-get-embedded-resource": "no prompts",
    "prompts-get-with-image": "no prompts",
    "dns-rebinding-protection": "the server's own Origin is refused unless named (ADR-0016); "
    "passes with --allow-origin (test below)",
}
REBINDING = "dns-rebinding-protection"
_RESULT_DIR = re.compile(r"server-(?P<scenario>.+)-\d{4}-\d\d-\d\dT[\d-]+Z")


def _suite_dir() -> Path | None:
    where = Path(os.environ.get("GROUNDKIT_CONFORMANCE_DIR") or REPO / ".cache" / "conformance")
    node = where / "node_modules" / ".bin" / "node"
    return where if (where / SUITE / "dist" / "index.js").exists() and node.exists() else None


@pytest.fixture(scope="module")
def suite() -> Path:
    where = _suite_dir()
    if where is None:
        message = ("the MCP conformance suite is not installed (make conformance, which needs "
                   "npm; or set GROUNDKIT_CONFORMANCE_DIR)")
        if os.environ.get("GROUNDKIT_REQUIRE_CONFORMANCE") == "1":
            pytest.fail(message)
        pytest.skip(message)
    found = json.loads((where / SUITE / "package.json").read_text(encoding="utf-8"))["version"]
    assert found == VERSION, f"{where} has conformance {found}; the lists here are for " \
        f"{VERSION}: run make conformance"
    return where


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return indexed_home(tmp_path_factory.mktemp("conformance"), DOCS)


@contextmanager
def _serve(home: Path, *flags: str) -> Iterator[str]:
    """``grk serve --transport http FLAGS`` until the block ends; yields its /mcp URL."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "groundkit", "serve", "--home", str(home), "--transport", "http",
         *flags], cwd=REPO, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, text=True)
    assert proc.stderr
    try:
        deadline, line = time.monotonic() + 60, ""
        while " at http://" not in line:  # the line announcing the URL
            ready = select.select([proc.stderr], [], [], max(0.0, deadline - time.monotonic()))
            assert ready[0], "grk serve did not start"
            line = proc.stderr.readline()
            assert line, "grk serve exited"
        yield line.split(" at ")[1].split()[0]
    finally:
        interrupt(proc, proc.stderr)


def _run(suite: Path, url: str, out: Path, *args: str) -> dict[str, list[dict[str, Any]]]:
    """Run the suite's server scenarios on ``url``: each scenario's checks, by name."""
    node = suite / "node_modules" / ".bin" / "node"
    done = subprocess.run([str(node), str(suite / SUITE / "dist" / "index.js"), "server",
                           "--url", url, "-o", str(out), *args],
                          cwd=out.parent, capture_output=True, text=True, timeout=300,
                          check=False)
    results: dict[str, list[dict[str, Any]]] = {}
    for checks in sorted(out.glob("server-*/checks.json")):
        match = _RESULT_DIR.fullmatch(checks.parent.name)
        assert match, checks.parent.name
        results[match["scenario"]] = json.loads(checks.read_text(encoding="utf-8"))
    assert results, (done.returncode, done.stdout[-2000:], done.stderr[-2000:])
    return results


def _passed(checks: list[dict[str, Any]]) -> bool:
    statuses = {c["status"] for c in checks}
    return "SUCCESS" in statuses and not statuses & {"FAILURE", "WARNING"}


def _failures(checks: list[dict[str, Any]]) -> list[str]:
    return [f"{c['id']}: {c.get('errorMessage')}" for c in checks
            if c["status"] in ("FAILURE", "WARNING")]


def test_the_scenarios_that_apply_pass_and_the_others_are_pinned(
        suite: Path, home: Path, tmp_path: Path) -> None:
    with _serve(home, "--port", "0") as url:
        results = _run(suite, url, tmp_path / "results")
    assert set(results) == set(MUST_PASS) | set(NOT_APPLICABLE), \
        "scenarios not classified here (or gone): " \
        f"{sorted(set(results) ^ (set(MUST_PASS) | set(NOT_APPLICABLE)))}"
    failing = {s: _failures(results[s]) for s in MUST_PASS if not _passed(results[s])}
    assert not failing, f"scenarios that must pass failed: {failing}"
    stale = sorted(s for s in NOT_APPLICABLE if _passed(results[s]))
    assert not stale, f"scenarios listed as not applicable now pass (update the lists): {stale}"
    by_id = {c["id"]: c for c in results[REBINDING]}
    assert by_id["localhost-host-rebinding-rejected"]["details"]["statusCode"] == 403
    assert by_id["localhost-host-valid-accepted"]["details"]["statusCode"] == 403


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def test_the_dns_rebinding_scenario_passes_with_the_servers_origin_allowed(
        suite: Path, home: Path, tmp_path: Path) -> None:
    port = _free_port()  # the origin must be named before the server binds its port
    with _serve(home, "--port", str(port), "--allow-origin", f"http://127.0.0.1:{port}") as url:
        results = _run(suite, url, tmp_path / "results", "--scenario", REBINDING)
    assert list(results) == [REBINDING]
    assert _passed(results[REBINDING]), _failures(results[REBINDING])
    by_id = {c["id"]: c for c in results[REBINDING]}
    assert by_id["localhost-host-rebinding-rejected"]["details"]["statusCode"] == 403
    assert by_id["localhost-host-valid-accepted"]["details"]["statusCode"] == 200
