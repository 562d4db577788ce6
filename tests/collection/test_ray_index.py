"""``grk index --ray`` on a real two-node Ray cluster: the same generation, byte for byte.

The cluster is real, not a mock: ``ray start --head`` and a second ``ray start --address``
(its own raylet), one CPU each, in a temporary folder of their own, torn down by process
group. Skipped without ``ray`` unless ``GROUNDKIT_REQUIRE_RAY=1`` (CI), which fails instead.
"""

from __future__ import annotations

import contextlib
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

from groundkit import store
from groundkit.collection import Collection, IndexConfig, index
from groundkit.collection.home import collection_dir
from groundkit.errors import MissingDependencyError

REQUIRED = os.environ.get("GROUNDKIT_REQUIRE_RAY") == "1"
RAY = Path(sys.executable).with_name("ray")
QUERIES = ("deployment logs", "the on-call engineer", "section 7 quarterly budget", "zebra")


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
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
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


@pytest.fixture(scope="module")
def cluster() -> Iterator[str]:
    """A two-node local Ray cluster (one CPU each); this process connected to it."""
    if not _ray_available():
        if REQUIRED:
            pytest.fail("GROUNDKIT_REQUIRE_RAY=1 but ray is not installed (pip install "
                        "'groundkit[ray]')")
        pytest.skip("ray is not installed (pip install 'groundkit[ray]')")
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
        shutil.rmtree(base, ignore_errors=True)


def _wait(ready: object, nodes: list[subprocess.Popen[bytes]], base: Path) -> None:
    assert callable(ready)
    deadline = time.monotonic() + 90
    while not ready():
        if time.monotonic() > deadline or any(n.poll() is not None for n in nodes):
            logs = "\n".join(p.read_text(errors="replace")[-2000:] for p in base.glob("*.log"))
            raise RuntimeError(f"the Ray cluster did not come up:\n{logs}")
        time.sleep(0.5)


@pytest.fixture(scope="module")
def docs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Enough files for several partitions: markdown, text, nested, one binary."""
    root = tmp_path_factory.mktemp("ray-docs")
    for i in range(90):
        sub = root / f"team-{i % 4}"
        sub.mkdir(exist_ok=True)
        body = (f"# Note {i}\n\nSection {i % 9} of the quarterly budget covers item {i}.\n\n"
                + "Deployment logs are kept for 30 days. " * (1 + i % 5)
                + ("\n\nThe on-call engineer restarts the ingest worker.\n" if i % 7 == 0 else ""))
        (sub / f"note-{i}.md" if i % 3 else sub / f"note-{i}.txt").write_text(body)
    (root / "data.txt").write_bytes(bytes(range(256)) * 4)  # binary: skipped by both
    return root


def _index(root: Path, home: Path, **kw: object) -> None:
    index("k", IndexConfig(roots=(str(root),), extra=kw.pop("extra", {})), home=home,
          **kw)  # type: ignore[arg-type]


def _generation(home: Path) -> dict[str, object]:
    """What a generation is: its derived files' bytes, its rows, its search results."""
    directory = collection_dir("k", home)
    conn = store.connect(directory, readonly=True)
    try:
        gen = store.current_generation(conn)
        documents = conn.execute(
            "SELECT doc_id, relpath, sha256, size, encoding, bom_len, extractor, standing "
            "FROM documents WHERE generation = ? ORDER BY doc_id", (gen,)).fetchall()
        skipped = sorted(conn.execute("SELECT path, reason FROM skipped WHERE generation = ?",
                                      (gen,)).fetchall())
        chunk_ids = [c.chunk_id for c in store.iter_generation_chunks(conn, gen)]
    finally:
        conn.close()
    gen_dir = directory / f"gen-{gen}"
    # LanceDB names its table's files with random UUIDs, so two single-process runs differ
    # there too: the vectors are compared as the matrix beside it (vectors/vectors.npy).
    files = {str(p.relative_to(gen_dir)): p.read_bytes() for p in sorted(gen_dir.rglob("*"))
             if p.is_file() and "vectors.lance" not in p.parts}
    coll = Collection.open("k", home)
    try:
        results = {q: [(h.chunk.chunk_id, h.score) for h in coll.search(q, top_k=10)]
                   for q in QUERIES}
    finally:
        coll.close()
    return {"generation": gen, "files": files, "documents": documents, "skipped": skipped,
            "chunk_ids": chunk_ids, "results": results}


@pytest.fixture(scope="module")
def single(docs: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    home = tmp_path_factory.mktemp("single-home")
    _index(docs, home)
    return _generation(home)


def _ray(cluster: str, **kw: object) -> object:
    from groundkit.collection.ray_executor import RayExecutor

    return RayExecutor(cluster, partition_files=16, **kw)  # type: ignore[arg-type]


def test_the_ray_generation_is_the_single_process_one_byte_for_byte(
    cluster: str, docs: Path, single: dict[str, object], tmp_path: Path,
) -> None:
    _index(docs, tmp_path, executor=_ray(cluster))
    spread = _generation(tmp_path)
    assert spread["files"] and spread["files"] == single["files"]
    assert spread == single
    assert [path for path, _ in single["skipped"]] == ["data.txt"]  # type: ignore[attr-defined]


def test_a_worker_killed_mid_run_is_retried_and_the_result_is_the_same(
    cluster: str, docs: Path, single: dict[str, object], tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    marker = tmp_path / "died-once"
    monkeypatch.setenv("GROUNDKIT_RAY_DIE", str(marker))
    _index(docs, tmp_path / "home", executor=_ray(cluster))
    assert marker.exists()  # the first attempt did exit its worker process
    assert _generation(tmp_path / "home") == single


def test_a_run_that_fails_publishes_nothing(
    cluster: str, docs: Path, single: dict[str, object], tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from groundkit.collection.ray_executor import ClusterError

    _index(docs, tmp_path)
    (docs / "new.md").write_text("# New\n\nA zebra arrives.\n")
    try:
        monkeypatch.setenv("GROUNDKIT_RAY_DIE", "always")
        with pytest.raises(ClusterError, match="nothing was published"):
            _index(docs, tmp_path, executor=_ray(cluster, max_retries=0))
    finally:
        (docs / "new.md").unlink()
    assert _generation(tmp_path) == single  # generation 1, as it was


def test_vectors_are_the_same_bytes_when_embedded_in_ray_actors(
    cluster: str, docs: Path, tmp_path: Path,
) -> None:
    pytest.importorskip("ollama")
    pytest.importorskip("lancedb")
    from groundkit.testing.ollama_standin import OllamaStandin, hashing_embedder

    with OllamaStandin(hashing_embedder(64)) as server:
        extra = {"embedding": {"spec": "ollama:nomic-embed-text",
                               "options": {"host": server.url}}}
        _index(docs, tmp_path / "one", extra=extra)
        _index(docs, tmp_path / "ray", extra=extra, executor=_ray(cluster))
        one, spread = _generation(tmp_path / "one"), _generation(tmp_path / "ray")
    assert "vectors/vectors.npy" in one["files"]  # type: ignore[operator]
    assert spread == one


def test_without_ray_the_option_names_the_extra(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path,
    docs: Path,
) -> None:
    from groundkit.cli import main
    from groundkit.collection.ray_executor import RayExecutor

    monkeypatch.setitem(sys.modules, "ray", None)  # import ray fails, as when not installed
    with pytest.raises(MissingDependencyError, match=r"pip install 'groundkit\[ray\]'"):
        RayExecutor()
    code = main(["index", str(docs), "-c", "k", "--home", str(tmp_path), "--ray"])
    assert code == MissingDependencyError.exit_code
    assert "groundkit[ray]" in capsys.readouterr().err
    assert not (collection_dir("k", tmp_path) / "gen-1").exists()
