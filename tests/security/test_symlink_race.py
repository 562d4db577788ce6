"""What was discovered is what is read (issue 45 item 3): a file or folder swapped for a
symlink to outside content between discovery and the read is refused, never indexed.

The race test swaps a file and a symlink to an outside file in a loop while a tree of
other files is discovered and read as the indexer does; ``GROUNDKIT_RACE_RUNS`` sets
how many rounds (3 by default, to keep ``make test`` quick; issue 45 asks for 1,000,
run by hand).
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from groundkit.collection import Collection, IndexConfig, index
from groundkit.collection.ingest import read_jobs
from groundkit.sources import Candidate, Skipped, discover

SECRET = b"SECRET outside the root\n"


def discovered(root: Path) -> list[tuple[str, Candidate]]:
    return [("", c) for c in discover(root) if isinstance(c, Candidate)]


def read_all(found: list[tuple[str, Candidate]]) -> tuple[dict[str, bytes], list[Skipped]]:
    skipped: list[Skipped] = []
    jobs = {job.relpath: job.data for job in read_jobs(found, 1 << 20, {}, skipped)}
    return jobs, skipped


def tree(tmp_path: Path) -> tuple[Path, Path]:
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (outside / "victim.txt").write_bytes(SECRET)
    (root / "victim.txt").write_text("inside text\n")
    return root, outside


def test_a_file_swapped_for_a_symlink_after_discovery_is_refused(tmp_path: Path) -> None:
    root, outside = tree(tmp_path)
    found = discovered(root)
    (root / "victim.txt").unlink()
    (root / "victim.txt").symlink_to(outside / "victim.txt")
    assert read_all(found) == ({}, [Skipped(
        "victim.txt", "unreadable: changed since discovery (now a symlink)")])


def test_a_folder_swapped_for_a_symlink_after_discovery_is_refused(tmp_path: Path) -> None:
    root, outside = tree(tmp_path)
    (root / "sub").mkdir()
    (root / "sub" / "victim.txt").write_text("inside text\n")
    found = [(label, c) for label, c in discovered(root) if c.relpath.startswith("sub/")]
    (root / "sub").rename(tmp_path / "away")
    (root / "sub").symlink_to(outside)
    assert read_all(found) == ({}, [Skipped(
        "sub/victim.txt", "unreadable: changed since discovery (another file at this path now)")])


def test_a_symlink_inside_the_root_repointed_outside_after_discovery_is_refused(
        tmp_path: Path) -> None:
    root, outside = tree(tmp_path)
    (root / "link.txt").symlink_to(root / "victim.txt")
    found = [(label, c) for label, c in discovered(root) if c.relpath == "link.txt"]
    assert read_all(found)[0] == {"link.txt": b"inside text\n"}  # followed while inside
    (root / "link.txt").unlink()
    (root / "link.txt").symlink_to(outside / "victim.txt")
    assert read_all(found) == ({}, [Skipped(
        "link.txt", "unreadable: changed since discovery (another file at this path now)")])


def swapping(root: Path, outside: Path, stage: Path, stop: threading.Event) -> None:
    """Replace ``root/victim.txt`` by a regular file, then by a symlink to the outside
    file, atomically (``rename``), until ``stop``."""
    stage.mkdir(exist_ok=True)
    while not stop.is_set():
        (stage / "file").write_text("inside text\n")
        os.rename(stage / "file", root / "victim.txt")
        os.symlink(outside / "victim.txt", stage / "link")
        os.rename(stage / "link", root / "victim.txt")


def test_the_swap_race_never_reads_outside_content(tmp_path: Path) -> None:
    root, outside = tree(tmp_path)
    for i in range(1000):
        (root / f"other{i:04d}.txt").write_text(f"other file {i}\n")
    stop = threading.Event()
    swapper = threading.Thread(target=swapping, args=(root, outside, tmp_path / "stage", stop))
    swapper.start()
    reasons: set[str] = set()
    try:
        for _ in range(int(os.environ.get("GROUNDKIT_RACE_RUNS", "3"))):
            jobs, skipped = read_all(discovered(root))
            assert SECRET not in jobs.values()
            assert len(jobs) + len(skipped) >= 1000
            reasons |= {s.reason for s in skipped}
        home = tmp_path / "home"
        index("c", IndexConfig(roots=(str(root),)), home=home)
        with Collection.open("c", home) as coll:
            assert not [c for c in coll.chunks() if "SECRET" in c.text]
    finally:
        stop.set()
        swapper.join()
    assert reasons <= {"symlink points outside the collection root",
                       "unreadable: changed since discovery (now a symlink)",
                       "unreadable: changed since discovery (another file at this path now)",
                       # discovery itself raced: a symlink seen inside, then stat()ed outside
                       "unreadable: changed since discovery (now resolves outside the root)",
                       "unreadable: No such file or directory"}
