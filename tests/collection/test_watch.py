"""``grk watch``: real inotify events, real files, real SQLite; the watcher in a thread or a
subprocess (signals, a second watcher, SIGKILL)."""

from __future__ import annotations

import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import TreeMaker

from groundkit.collection import Collection, IndexConfig, index
from groundkit.collection.watch import Watcher, WatchOptions
from groundkit.errors import CollectionBusyError, RootMissingError
from groundkit.model import Status
from groundkit.testing.ollama_standin import OllamaStandin, hashing_embedder

pytest.importorskip("watchdog")

DOCS = {"a.md": "# Alpha\n\nThe alpha runbook restarts the ingest worker.\n",
        "notes/b.md": "# Beta\n\nBeta notes about quarterly budgets.\n"}
FAST = WatchOptions(debounce=0.05, max_delay=0.5, poll=0.05, retry=0.1)
WAIT = 30.0


class Running:
    """A watcher in a thread; its events in a queue."""

    def __init__(self, name: str, home: Path, options: WatchOptions = FAST,
                 progress: Any = None) -> None:
        self.events: queue.Queue[dict[str, Any]] = queue.Queue()
        self.seen: list[dict[str, Any]] = []
        self.stop = threading.Event()
        self.error: BaseException | None = None
        self.watcher = Watcher(name, home, options=options, emit=self.events.put,
                               progress=progress)
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        self.wait_for(lambda e: e["event"] == "watching")

    def _run(self) -> None:
        try:
            self.watcher.run(self.stop)
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            self.error = exc
            self.events.put({"event": "raised"})

    def wait_for(self, test: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            try:
                event = self.events.get(timeout=0.1)
            except queue.Empty:
                continue
            self.seen.append(event)
            if event["event"] == "raised" and self.error is not None:
                raise self.error
            if test(event):
                return event
        raise AssertionError(f"no such event within {WAIT} s; saw {self.seen[-5:]}")

    def until_searchable(self, coll: str, home: Path, query: str,
                         doc_id: str | None) -> list[str]:
        """Wait for generations until ``query``'s top hit is ``doc_id`` (None: no hit)."""
        deadline = time.monotonic() + WAIT
        while True:
            with Collection.open(coll, home) as c:
                hits = c.search(query, top_k=3)
            found = hits[0].chunk.doc_id if hits else None
            if found == doc_id:
                return [h.chunk.doc_id for h in hits]
            assert time.monotonic() < deadline, f"{query!r} -> {found}, wanted {doc_id}"
            self.wait_for(lambda e: e["event"] in ("indexed", "unchanged"))

    def close(self) -> None:
        self.stop.set()
        self.thread.join(WAIT)
        assert not self.thread.is_alive()


@pytest.fixture
def tree(make_tree: TreeMaker) -> Path:
    return make_tree(DOCS)


@pytest.fixture
def watching(tree: Path, home: Path) -> Iterator[Running]:
    index("w", IndexConfig(roots=(str(tree),)), home=home)
    running = Running("w", home)
    yield running
    running.close()


def doc_ids(home: Path) -> list[str]:
    with Collection.open("w", home) as coll:
        return sorted({c.doc_id for c in coll.chunks()})


def test_an_edit_is_searchable_after_the_debounce_and_its_hit_is_not_stale(
        watching: Running, tree: Path, home: Path) -> None:
    (tree / "a.md").write_text("# Alpha\n\nThe alpha runbook now covers zeppelins.\n")
    event = watching.wait_for(lambda e: e["event"] == "indexed")
    assert (event["changed"], event["added"], event["removed"], event["paths"]) == (1, 0, 0, 1)
    assert event["since_change_s"] is not None and event["since_change_s"] < 10
    with Collection.open("w", home) as coll:
        [hit] = coll.search("zeppelins", verify=True)
        assert hit.stale is False and hit.verdict and hit.verdict.status is Status.VERIFIED
        assert coll.check() == []


def test_a_start_with_nothing_changed_publishes_nothing(tree: Path, home: Path) -> None:
    first = index("w", IndexConfig(roots=(str(tree),)), home=home)
    running = Running("w", home)
    try:
        assert running.seen[-1]["generation"] == first.generation
        assert [e["event"] for e in running.seen] == ["unchanged", "watching"]
    finally:
        running.close()


def test_a_change_made_while_nobody_watched_is_picked_up_at_start(
        tree: Path, home: Path) -> None:
    index("w", IndexConfig(roots=(str(tree),)), home=home)
    (tree / "late.md").write_text("Written while the watcher was down: marmalade.\n")
    running = Running("w", home)
    try:
        assert running.seen[0]["event"] == "indexed" and running.seen[0]["added"] == 1
        with Collection.open("w", home) as coll:
            assert coll.search("marmalade")[0].chunk.doc_id == "late.md"
    finally:
        running.close()


def test_write_to_a_temporary_file_then_rename_over_the_original(
        watching: Running, tree: Path, home: Path) -> None:
    tmp = tree / ".a.md.tmp-1234"
    tmp.write_text("# Alpha\n\nSaved atomically: kumquat.\n")
    os.replace(tmp, tree / "a.md")
    watching.until_searchable("w", home, "kumquat", "a.md")
    assert doc_ids(home) == ["a.md", "notes/b.md"]


def test_truncate_then_write(watching: Running, tree: Path, home: Path) -> None:
    with open(tree / "a.md", "r+", encoding="utf-8") as fh:
        fh.truncate(0)
        fh.flush()
        time.sleep(0.2)
        fh.write("Rewritten in place: persimmon.\n")
    watching.until_searchable("w", home, "persimmon", "a.md")
    with Collection.open("w", home) as coll:
        assert coll.search("persimmon", verify=True)[0].verdict.status is Status.VERIFIED


def test_a_file_deleted_and_recreated(watching: Running, tree: Path, home: Path) -> None:
    (tree / "a.md").unlink()
    watching.until_searchable("w", home, "alpha runbook", None)
    (tree / "a.md").write_text("Back again: rhubarb.\n")
    watching.until_searchable("w", home, "rhubarb", "a.md")


def test_a_folder_renamed_moves_its_documents(
        watching: Running, tree: Path, home: Path) -> None:
    (tree / "notes").rename(tree / "archive")
    watching.until_searchable("w", home, "quarterly budgets", "archive/b.md")
    assert doc_ids(home) == ["a.md", "archive/b.md"]


def test_a_burst_of_a_thousand_files_ends_in_a_few_generations_holding_all_of_them(
        watching: Running, tree: Path, home: Path) -> None:
    burst = tree / "checkout"
    burst.mkdir()
    for i in range(1000):
        (burst / f"f{i:04}.md").write_text(f"File {i} of the checkout, token t{i}x.\n")
    deadline = time.monotonic() + 120
    while len(doc_ids(home)) < 1002:
        assert time.monotonic() < deadline, len(doc_ids(home))
        watching.wait_for(lambda e: e["event"] in ("indexed", "unchanged"))
    published = [e for e in watching.seen if e["event"] == "indexed"]
    assert len(published) <= 20
    with Collection.open("w", home) as coll:
        assert coll.search("t999x")[0].chunk.doc_id == "checkout/f0999.md"
        assert coll.check() == []


def test_a_symlink_swapped_in_pointing_outside_the_root_is_refused(
        watching: Running, tree: Path, home: Path, tmp_path: Path) -> None:
    secret = tmp_path / "secret.md"
    secret.write_text("TOP-SECRET plutonium recipe\n")
    (tree / "a.md").unlink()
    (tree / "a.md").symlink_to(secret)
    event = watching.wait_for(lambda e: e["event"] == "indexed" and e["skipped"])
    assert event["skipped"] == [{"path": "a.md",
                                 "reason": "symlink points outside the collection root"}]
    with Collection.open("w", home) as coll:
        assert coll.search("plutonium") == [] and coll.search("alpha runbook") == []


def test_touching_a_file_publishes_nothing_and_clears_its_stale_flag(
        watching: Running, tree: Path, home: Path) -> None:
    before = watching.watcher.generations
    os.utime(tree / "a.md", ns=(time.time_ns(), time.time_ns() + 5_000_000_000))
    event = watching.wait_for(lambda e: e["event"] in ("indexed", "unchanged"))
    assert event["event"] == "unchanged" and watching.watcher.generations == before
    with Collection.open("w", home) as coll:
        assert coll.search("alpha runbook")[0].stale is False


def test_a_removed_root_is_reported_the_index_kept_and_it_is_picked_up_again(
        watching: Running, tree: Path, home: Path, tmp_path: Path) -> None:
    aside = tmp_path / "aside"
    tree.rename(aside)
    event = watching.wait_for(lambda e: e["event"] == "root_missing")
    assert event["root"] == str(tree) and event["action"] == "wait"
    with Collection.open("w", home) as coll:  # still serving the last generation
        assert coll.search("alpha runbook")[0].chunk.doc_id == "a.md"
    (aside / "a.md").write_text("Changed while away: tamarind.\n")
    aside.rename(tree)
    watching.wait_for(lambda e: e["event"] == "root_back")
    watching.until_searchable("w", home, "tamarind", "a.md")
    (tree / "a.md").write_text("Watched again after the return: quince.\n")
    watching.until_searchable("w", home, "quince", "a.md")


def test_a_removed_root_exits_with_its_own_error_when_asked(
        tree: Path, home: Path) -> None:
    index("w", IndexConfig(roots=(str(tree),)), home=home)
    options = WatchOptions(debounce=0.05, max_delay=0.5, poll=0.05, on_missing_root="exit")
    running = Running("w", home, options)
    shutil.rmtree(tree)
    with pytest.raises(RootMissingError, match="is gone") as info:
        running.wait_for(lambda e: False)
    assert info.value.exit_code == 13
    assert [e["event"] for e in running.seen][-3:] == ["root_missing", "stopped", "raised"]


def test_an_embedded_collection_gets_vectors_for_what_changed(
        tree: Path, home: Path) -> None:
    pytest.importorskip("lancedb")
    with OllamaStandin(hashing_embedder(64), models=["nomic-embed-text"]) as server:
        extra = {"embedding": {"spec": "ollama:nomic-embed-text", "options": {"host": server.url}}}
        index("w", IndexConfig(roots=(str(tree),), extra=extra), home=home)
        running = Running("w", home)
        try:
            (tree / "c.md").write_text("A new note about lighthouse keepers.\n")
            running.until_searchable("w", home, "lighthouse keepers", "c.md")
            with Collection.open("w", home) as coll:
                assert coll.search("lighthouse keepers", mode="dense")[0].chunk.doc_id == "c.md"
                assert coll.check() == []
        finally:
            running.close()


# -- the command line, in subprocesses -----------------------------------------------------


def grk(home: Path, *argv: str, **kw: Any) -> subprocess.Popen[str]:
    env = {**os.environ, "GROUNDKIT_HOME": str(home)}
    return subprocess.Popen([sys.executable, "-m", "groundkit", *argv], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)


def read_event(proc: subprocess.Popen[str], kind: str) -> dict[str, Any]:
    assert proc.stdout is not None
    for line in proc.stdout:
        event = json.loads(line)
        if event["event"] == kind:
            return event
    raise AssertionError(f"watcher ended without a {kind!r} event: {proc.stderr.read()}")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_json_event_lines_and_a_clean_stop_on_a_signal(
        tree: Path, home: Path, sig: signal.Signals) -> None:
    index("w", IndexConfig(roots=(str(tree),)), home=home)
    with grk(home, "watch", "--collection", "w", "--json", "--debounce", "0.05") as proc:
        assert read_event(proc, "watching")["roots"] == [str(tree)]
        (tree / "a.md").write_text("Edited under a watcher in a subprocess: cardamom.\n")
        indexed = read_event(proc, "indexed")
        assert indexed["changed"] == 1 and indexed["collection"] == "w"
        proc.send_signal(sig)
        assert read_event(proc, "stopped")["generations_published"] == 1
        assert proc.wait(WAIT) == 0
        assert "stopping after the current run" in proc.stderr.read()


def test_a_second_watcher_is_refused_with_a_clear_message(tree: Path, home: Path) -> None:
    index("w", IndexConfig(roots=(str(tree),)), home=home)
    with grk(home, "watch", "--collection", "w", "--json") as first:
        read_event(first, "watching")
        with grk(home, "watch", "--collection", "w") as second:
            _, err = second.communicate(timeout=WAIT)
        assert second.returncode == CollectionBusyError.exit_code
        assert "already watched" in err and "one watcher per collection" in err
        first.send_signal(signal.SIGTERM)


def test_index_with_watch_indexes_then_keeps_watching(tree: Path, home: Path) -> None:
    with grk(home, "index", str(tree), "--collection", "w", "--watch", "--json",
             "--debounce", "0.05") as proc:
        assert read_event(proc, "indexed")["reason"] == "index"
        read_event(proc, "watching")
        (tree / "new.md").write_text("Created after the first index: nutmeg.\n")
        assert read_event(proc, "indexed")["added"] == 1
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(WAIT) == 0
    with Collection.open("w", home) as coll:
        assert coll.search("nutmeg")[0].chunk.doc_id == "new.md"


def test_sigkill_at_any_moment_leaves_a_generation_that_opens_verifies_and_recovers(
        make_tree: TreeMaker, home: Path) -> None:
    tree = make_tree({f"d{i % 7}/f{i}.md": f"Document {i} about topic{i % 13}.\n" * 20
                      for i in range(300)})
    index("w", IndexConfig(roots=(str(tree),)), home=home)
    for round_, delay in enumerate([0.05, 0.15, 0.3, 0.5, 0.8, 1.2]):
        with grk(home, "watch", "--collection", "w", "--json", "--debounce", "0.01") as proc:
            read_event(proc, "watching")
            for i in range(0, 300, 3):  # a stream of edits while we kill
                edited = f"Round {round_} edit of {i}: r{round_}x.\n"
                (tree / f"d{i % 7}/f{i}.md").write_text(edited)
            time.sleep(delay)
            proc.kill()
        with Collection.open("w", home) as coll:
            assert coll.check() == []
            hits = coll.search("document topic3", verify=True, top_k=20)
            assert hits and all(h.verdict.status in (Status.VERIFIED, Status.DRIFTED)
                                for h in hits)
    report = index("w", IndexConfig(roots=(str(tree),)), home=home)  # the next run recovers
    with Collection.open("w", home) as coll:
        assert coll.check() == [] and coll.generation == report.generation
        assert len(coll.search("r5x", top_k=200)) == 100  # every last edit, none lost


def test_events_lost_to_a_queue_overflow_make_the_next_run_a_full_pass(
        watching: Running, tree: Path, home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import logging

    from groundkit.collection import watch

    monkeypatch.setattr(watch._Handler, "dispatch", lambda self, event: None)  # events lost
    (tree / "notes" / "b.md").write_text("Changed while events were lost: saffron.\n")
    time.sleep(0.5)
    with Collection.open("w", home) as coll:
        assert coll.search("saffron") == []  # nobody told the watcher
    logging.getLogger("watchdog.observers.inotify_c").warning(
        "Inotify queue overflowed; filesystem events were lost")
    event = watching.wait_for(lambda e: e["event"] == "indexed")
    assert event["changed"] == 1 and event["unchanged"] == 1  # a full pass found it
    watching.until_searchable("w", home, "saffron", "notes/b.md")


def test_each_run_reports_progress_file_by_file(tree: Path, home: Path) -> None:
    index("w", IndexConfig(roots=(str(tree),)), home=home)
    updates: list[tuple[str, int, int]] = []

    class Bar:
        def __init__(self, reason: str) -> None:
            self.reason = reason

        def __enter__(self) -> Bar:
            return self

        def __exit__(self, *exc: object) -> None:
            pass

        def update(self, done: int, total: int, label: str = "") -> None:
            updates.append((self.reason, done, total))

    running = Running("w", home, progress=Bar)
    try:
        (tree / "a.md").write_text("Progress please: juniper.\n")
        running.until_searchable("w", home, "juniper", "a.md")
    finally:
        running.close()
    assert ("start", 2, 2) in updates and ("change", 1, 1) in updates
