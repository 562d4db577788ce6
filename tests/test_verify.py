"""Every verdict, and every cause of each, through the public API."""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest
from conftest import TreeMaker

from groundkit import store
from groundkit import verify as verifying
from groundkit.collection import Collection, IndexConfig, fetch_chunk, index
from groundkit.model import Chunk, Status
from groundkit.store import StoredChunk
from groundkit.text.chunking import ChunkerConfig
from groundkit.verify import verify

TEXT = "# Retention\n\nDeployment logs are kept for 30 days.\n\nAudit logs are kept for a year.\n"


def indexed(make_tree: TreeMaker, home: Path, files: dict[str, str | bytes]) -> tuple[Path, Chunk]:
    root = make_tree(files)
    index("docs", IndexConfig(roots=(str(root),)), home=home)
    with Collection.open("docs", home) as coll:
        return root, coll.chunks()[0]


def status_of(chunk: Chunk, home: Path) -> tuple[Status, str]:
    verdict = fetch_chunk(chunk.chunk_id, home)
    return verdict.status, verdict.reason


@pytest.fixture(params=["handle", "realpath"])
def resolver(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Containment both ways: an O_PATH handle (Linux) and realpath (elsewhere)."""
    if request.param == "realpath":
        monkeypatch.setattr(verifying, "BY_HANDLE", False)
    elif not verifying.BY_HANDLE:
        pytest.skip("no O_PATH or /proc/self/fd here")
    return str(request.param)


def test_linux_resolves_through_a_handle() -> None:
    if sys.platform == "linux":
        assert verifying.BY_HANDLE


def test_an_unchanged_file_verifies(make_tree: TreeMaker, home: Path) -> None:
    _, chunk = indexed(make_tree, home, {"p.md": TEXT})
    verdict = fetch_chunk(chunk.chunk_id, home)
    assert verdict.status is Status.VERIFIED and verdict.current_text == chunk.text == TEXT.strip()


def test_an_edit_after_the_span_still_verifies(make_tree: TreeMaker, home: Path) -> None:
    root, chunk = indexed(make_tree, home, {"p.md": "Short fact here.\n"})
    (root / "p.md").write_text("Short fact here.\nAppended later.\n")
    assert status_of(chunk, home)[0] is Status.VERIFIED


def test_text_inserted_before_the_span_drifts_with_relocated_offsets(
    make_tree: TreeMaker, home: Path,
) -> None:
    root, chunk = indexed(make_tree, home, {"p.md": TEXT})
    (root / "p.md").write_text("Preface.\n\n" + TEXT)
    verdict = fetch_chunk(chunk.chunk_id, home)
    assert verdict.status is Status.DRIFTED
    assert verdict.relocated == (chunk.start + 10, chunk.end + 10)


def test_an_edited_span_drifts_without_relocation(make_tree: TreeMaker, home: Path) -> None:
    root, chunk = indexed(make_tree, home, {"p.md": TEXT})
    (root / "p.md").write_text(TEXT.replace("30 days", "90 days"))
    verdict = fetch_chunk(chunk.chunk_id, home)
    assert verdict.status is Status.DRIFTED and verdict.relocated is None
    assert "no longer in the file" in verdict.reason


def test_a_span_that_now_occurs_twice_drifts_without_guessing(
    make_tree: TreeMaker, home: Path,
) -> None:
    root, chunk = indexed(make_tree, home, {"p.md": "Fact one.\n"})
    (root / "p.md").write_text("Intro.\nFact one.\nFact one.\n")
    verdict = fetch_chunk(chunk.chunk_id, home)
    assert verdict.status is Status.DRIFTED and "more than once" in verdict.reason


def test_an_edit_that_keeps_size_and_mtime_is_still_detected(
    make_tree: TreeMaker, home: Path,
) -> None:
    root, chunk = indexed(make_tree, home, {"p.md": TEXT})
    path = root / "p.md"
    st = path.stat()
    path.write_text(TEXT.replace("30", "45"))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert path.stat().st_size == st.st_size and path.stat().st_mtime_ns == st.st_mtime_ns
    assert status_of(chunk, home)[0] is Status.DRIFTED


def test_a_crlf_to_lf_rewrite_drifts(make_tree: TreeMaker, home: Path) -> None:
    crlf = TEXT.replace("\n", "\r\n")
    root, chunk = indexed(make_tree, home, {"p.md": crlf.encode()})
    assert "\r\n" in chunk.text
    (root / "p.md").write_bytes(TEXT.encode())
    assert status_of(chunk, home)[0] is Status.DRIFTED


def test_an_lf_to_crlf_rewrite_drifts(make_tree: TreeMaker, home: Path) -> None:
    root, chunk = indexed(make_tree, home, {"p.md": TEXT})
    (root / "p.md").write_bytes(TEXT.replace("\n", "\r\n").encode())
    assert status_of(chunk, home)[0] is Status.DRIFTED


def test_adding_or_removing_a_bom_keeps_code_point_spans_verified(
    make_tree: TreeMaker, home: Path,
) -> None:
    root, chunk = indexed(make_tree, home, {"p.md": TEXT})
    (root / "p.md").write_bytes(b"\xef\xbb\xbf" + TEXT.encode())
    verdict = fetch_chunk(chunk.chunk_id, home)
    assert verdict.status is Status.VERIFIED and "intact" in verdict.reason
    root2, chunk2 = indexed(make_tree, home, {"q.md": b"\xef\xbb\xbf" + TEXT.encode()})
    (root2 / "q.md").write_bytes(TEXT.encode())
    assert status_of(chunk2, home)[0] is Status.VERIFIED


@pytest.mark.usefixtures("resolver")
def test_a_missing_or_renamed_file_is_unresolvable(make_tree: TreeMaker, home: Path) -> None:
    root, chunk = indexed(make_tree, home, {"p.md": TEXT})
    (root / "p.md").rename(root / "moved.md")
    status, reason = status_of(chunk, home)
    assert status is Status.UNRESOLVABLE and "missing" in reason


@pytest.mark.usefixtures("resolver")
def test_a_file_swapped_for_a_symlink_out_of_the_root_is_unresolvable(
    make_tree: TreeMaker, home: Path,
) -> None:
    outside = make_tree({"secret.md": TEXT})
    root, chunk = indexed(make_tree, home, {"p.md": TEXT})
    (root / "p.md").unlink()
    (root / "p.md").symlink_to(outside / "secret.md")
    verdict = fetch_chunk(chunk.chunk_id, home)
    assert verdict.status is Status.UNRESOLVABLE and "outside the collection root" in verdict.reason
    assert verdict.current_text is None  # nothing from outside the root is read


@pytest.mark.usefixtures("resolver")
def test_a_parent_folder_swapped_for_a_symlink_out_of_the_root_is_unresolvable(
    make_tree: TreeMaker, home: Path,
) -> None:
    outside = make_tree({"sub/p.md": TEXT})
    root, chunk = indexed(make_tree, home, {"sub/p.md": TEXT})
    (root / "sub" / "p.md").unlink()
    (root / "sub").rmdir()
    (root / "sub").symlink_to(outside / "sub")
    assert status_of(chunk, home)[0] is Status.UNRESOLVABLE


@pytest.mark.usefixtures("resolver")
def test_a_file_replaced_by_a_folder_or_fifo_is_unresolvable(
    make_tree: TreeMaker, home: Path,
) -> None:
    root, chunk = indexed(make_tree, home, {"p.md": TEXT})
    (root / "p.md").unlink()
    os.mkfifo(root / "p.md")
    assert status_of(chunk, home) == (Status.UNRESOLVABLE, "not a regular file")
    (root / "p.md").unlink()
    (root / "p.md").mkdir()
    assert status_of(chunk, home) == (Status.UNRESOLVABLE, "not a regular file")


@pytest.mark.usefixtures("resolver")
def test_a_symlink_to_a_file_inside_the_root_still_verifies(
    make_tree: TreeMaker, home: Path,
) -> None:
    root, chunk = indexed(make_tree, home, {"p.md": TEXT})
    (root / "p.md").rename(root / "real.md")
    (root / "p.md").symlink_to(root / "real.md")
    assert status_of(chunk, home)[0] is Status.VERIFIED
    (root / "p.md").unlink()
    (root / "p.md").symlink_to(root / "gone.md")  # dangling
    assert status_of(chunk, home) == (Status.UNRESOLVABLE, "file missing (deleted or renamed)")


def test_a_file_that_no_longer_decodes_is_unresolvable(make_tree: TreeMaker, home: Path) -> None:
    root, chunk = indexed(make_tree, home, {"p.md": TEXT})
    (root / "p.md").write_bytes(b"\x00\x01binary")
    status, reason = status_of(chunk, home)
    assert status is Status.UNRESOLVABLE and "no longer decodes" in reason


def test_unknown_chunks_collections_and_malformed_ids_are_unresolvable(
    make_tree: TreeMaker, home: Path,
) -> None:
    indexed(make_tree, home, {"p.md": TEXT})
    for chunk_id, reason in [("docs:" + "0" * 20, "unknown chunk"),
                             ("nope:" + "0" * 20, "unknown collection"),
                             ("../../etc/passwd", "malformed")]:
        verdict = fetch_chunk(chunk_id, home)
        assert verdict.status is Status.UNRESOLVABLE and reason in verdict.reason


def test_a_citation_from_an_older_generation_resolves_to_drifted_until_gc_collects_it(
    make_tree: TreeMaker, home: Path,
) -> None:
    root, chunk = indexed(make_tree, home, {"p.md": TEXT})
    (root / "p.md").write_text("Preface.\n\n" + TEXT)
    index("docs", IndexConfig(roots=(str(root),)), home=home)
    assert status_of(chunk, home)[0] is Status.DRIFTED  # its generation is still kept
    for _ in range(2):  # auto-gc keeps two generations: the chunk's goes
        index("docs", IndexConfig(roots=(str(root),)), home=home)
    status, reason = status_of(chunk, home)
    assert status is Status.UNRESOLVABLE and "collected by grk gc" in reason


def test_with_auto_gc_off_an_old_citation_stays_drifted(
    make_tree: TreeMaker, home: Path,
) -> None:
    root = make_tree({"p.md": TEXT})
    config = IndexConfig(roots=(str(root),), extra={"gc": {"auto": False}})
    index("docs", config, home=home)
    with Collection.open("docs", home) as coll:
        chunk = coll.chunks()[0]
    (root / "p.md").write_text("Preface.\n\n" + TEXT)
    for _ in range(3):
        index("docs", IndexConfig(roots=(str(root),)), home=home)  # the setting is kept
    assert status_of(chunk, home)[0] is Status.DRIFTED


def _verify_as_nobody(stored: StoredChunk) -> dict[str, object]:
    """Run verify() in a forked child that dropped root for an unprivileged user."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: drop privileges, verify, report, exit without cleanup
        try:
            os.setgroups([])
            os.setresgid(65534, 65534, 65534)
            os.setresuid(65534, 65534, 65534)
            verdict = verify(stored, max_bytes=1 << 20)
            os.write(write_fd, json.dumps(verdict.to_dict()).encode())
        finally:
            os._exit(0)
    os.close(write_fd)
    with os.fdopen(read_fd, "rb") as fh:
        data = fh.read()
    os.waitpid(pid, 0)
    return dict(json.loads(data))


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to switch to an unprivileged user")
@pytest.mark.usefixtures("resolver")
def test_permission_denied_is_unresolvable(home: Path) -> None:
    root = Path(tempfile.mkdtemp(prefix="gk-perm-", dir="/tmp"))
    try:
        os.chmod(root, 0o755)
        (root / "p.md").write_text(TEXT)
        index("docs", IndexConfig(roots=(str(root),)), home=home)
        with Collection.open("docs", home) as coll:
            stored = store.lookup_chunk(coll.snapshot.conn, coll.chunks()[0].chunk_id)
        assert stored is not None
        os.chmod(root / "p.md", 0o000)
        verdict = _verify_as_nobody(stored)
        assert verdict["status"] == "unresolvable" and verdict["reason"] == "permission denied"
    finally:
        shutil.rmtree(root)


def test_verifying_many_reads_each_file_once_and_judges_each_as_alone(
    make_tree: TreeMaker, home: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    long = "\n\n".join(f"Paragraph {i} about retention rule {i} and its audit trail." * 8
                       for i in range(12))
    root = make_tree({"a.md": long, "b.md": long.replace("audit", "review"), "c.md": TEXT})
    index("docs", IndexConfig(roots=(str(root),), chunker=ChunkerConfig(target=200, overlap=0)),
          home=home)
    with Collection.open("docs", home) as coll:
        snap = coll.snapshot
        stored = [snap.lookup(c.chunk_id) for c in coll.chunks()]
        items = [s for s in stored if s is not None]
        (root / "b.md").write_text("Paragraph 0 moved.\n\n" + long.replace("audit", "review"))
        (root / "c.md").unlink()
        one_by_one = [snap.verify(s) for s in items]
        import groundkit.verify as verifying

        reads: list[str] = []
        real = verifying.read_inside
        monkeypatch.setattr(verifying, "read_inside", lambda r, rel, m, **kw: reads.append(rel)
                            or real(r, rel, m, **kw))
        together = snap.verify_all(items)
    assert together == one_by_one
    assert {v.status for v in together} == {Status.VERIFIED, Status.DRIFTED, Status.UNRESOLVABLE}
    assert sorted(reads) == ["a.md", "b.md", "c.md"] and len(items) > 3
