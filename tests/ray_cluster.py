"""A real local Ray cluster of two nodes for the Ray tests (the ``cluster`` fixture in
tests/conftest.py): ``ray start --head`` and a second ``ray start --address`` (its own raylet),
one CPU each, in a temporary folder of their own, torn down by process group. Skipped without
``ray`` unless ``GROUNDKIT_REQUIRE_RAY=1`` (CI), which fails instead.
"""

from __future__ import annotations

import contextlib
import gc
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

REQUIRED = os.environ.get("GROUNDKIT_REQUIRE_RAY") == "1"
RAY = Path(sys.executable).with_name("ray")
AUTH_MODE = "disabled"
"""Ray 2.60's ``ray start --head`` turns token authentication on, and a client without the
token (``ray status``, this process's ``ray.init``; a token file another cluster rewrote
meanwhile) is refused: a cluster of its own on loopback needs none."""


def _ray_available() -> bool:
    try:
        import ray  # noqa: F401
    except ImportError:
        return False
    return RAY.exists()


def _free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def _node(temp: Path, name: str, first: list[str]) -> subprocess.Popen[bytes]:
    """One ``ray start --block`` in its own process group, every port its own."""
    agent, grpc, metrics, env_agent, manager, objects = _free_ports(6)
    args = [str(RAY), "start", *first, "--block", "--num-cpus", "1",
            "--node-ip-address", "127.0.0.1", "--temp-dir", str(temp),
            "--object-store-memory", str(80 * 1024 * 1024), "--disable-usage-stats",
            "--dashboard-agent-listen-port", str(agent), "--dashboard-agent-grpc-port", str(grpc),
            "--metrics-export-port", str(metrics), "--runtime-env-agent-port", str(env_agent),
            "--node-manager-port", str(manager), "--object-manager-port", str(objects),
            "--include-log-monitor", "false"]
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": AUTH_MODE}
    env.pop("RAY_ADDRESS", None)
    with open(temp.parent / f"{name}.log", "wb") as log:
        return subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=env,
                                start_new_session=True)


def _stop(nodes: list[subprocess.Popen[bytes]], temp: Path) -> None:
    """Stop our nodes only: their process groups, then anything left naming our folder."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for node in nodes:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(node.pid, sig)
        time.sleep(1)
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if str(temp).encode() in cmdline:
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(entry.name), signal.SIGKILL)
    for node in nodes:
        node.wait(timeout=30)


@contextlib.contextmanager
def two_nodes() -> Iterator[str]:
    """A two-node local Ray cluster (one CPU each); this process connected to it."""
    if not _ray_available():
        if REQUIRED:
            pytest.fail("GROUNDKIT_REQUIRE_RAY=1 but ray is not installed (pip install "
                        "'groundkit[ray]')")
        pytest.skip("ray is not installed (pip install 'groundkit[ray]')")
    auth = os.environ.get("RAY_AUTH_MODE")
    os.environ["RAY_AUTH_MODE"] = AUTH_MODE  # ray status and ray.init here, as the nodes
    import ray

    base = Path(tempfile.mkdtemp(prefix="grk-ray-", dir="/tmp"))
    temp = base / "t"
    temp.mkdir()
    [port] = _free_ports(1)
    address = f"127.0.0.1:{port}"
    nodes = [_node(temp, "head", ["--head", "--port", str(port), "--include-dashboard",
                                   "false"])]
    try:
        _wait(lambda: subprocess.run([str(RAY), "status", "--address", address],
                                     capture_output=True).returncode == 0, nodes, base)
        nodes.append(_node(temp, "worker", ["--address", address]))
        ray.init(address=address, log_to_driver=False, logging_level="warning")
        _wait(lambda: sum(1 for n in ray.nodes() if n["Alive"]) == 2, nodes, base)
        yield address
    finally:
        if ray.is_initialized():
            ray.shutdown()
        _stop(nodes, temp)
        _settle()
        shutil.rmtree(base, ignore_errors=True)
        if auth is None:
            os.environ.pop("RAY_AUTH_MODE", None)
        else:
            os.environ["RAY_AUTH_MODE"] = auth


def _wait(ready: object, nodes: list[subprocess.Popen[bytes]], base: Path) -> None:
    assert callable(ready)
    deadline = time.monotonic() + 90
    while not ready():
        if time.monotonic() > deadline or any(n.poll() is not None for n in nodes):
            logs = "\n".join(p.read_text(errors="replace")[-2000:] for p in base.glob("*.log"))
            raise RuntimeError(f"the Ray cluster did not come up:\n{logs}")
        time.sleep(0.5)


def _settle(limit_s: float = 10.0, quiet_s: float = 1.0) -> None:
    """Wait until this process's open files stop changing: Ray's client closes some of its
    sockets and pipes in background threads after ``ray.shutdown()``, and a later test that
    checks for leaked descriptors must not see them go."""
    gc.collect()
    deadline, last, since = time.monotonic() + limit_s, None, time.monotonic()
    while time.monotonic() < deadline:
        now = sorted(os.listdir("/proc/self/fd"))
        if now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= quiet_s:
            return
        time.sleep(0.05)
