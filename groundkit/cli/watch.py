"""``grk watch``: keep a collection current while its files change.

Events go to stderr as one line each; with ``--json`` they go to stdout as JSON
lines (one object per event) for scripts. SIGINT and SIGTERM stop the watcher
after the run in progress, which publishes whole or not at all; a second signal
interrupts at once (the previous generation stays intact either way).
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ..collection.indexer import IndexReport
from ..collection.watch import ON_MISSING_ROOT, Watcher, WatchOptions
from ..progress import ProgressBar
from .numbers import finite
from .registry import Handler, command

_DEFAULTS = WatchOptions()


@command("watch", "Re-index a collection as its files change (needs the 'watch' extra).")
def _watch(p: argparse.ArgumentParser) -> Handler:
    p.add_argument("--collection", "-c", required=True, metavar="NAME")
    watch_arguments(p)

    def run(args: argparse.Namespace) -> int:
        return watch(args, args.collection)

    return run


def watch_arguments(p: argparse.ArgumentParser) -> None:
    """The watcher's options (``grk watch`` and ``grk index --watch``)."""
    p.add_argument("--debounce", type=finite, default=_DEFAULTS.debounce, metavar="S",
                   help="seconds of quiet after a change before re-indexing "
                   f"(default {_DEFAULTS.debounce})")
    p.add_argument("--max-delay", type=finite, default=_DEFAULTS.max_delay, metavar="S",
                   help="re-index at the latest this long after the first change, even "
                   f"while changes keep coming (default {_DEFAULTS.max_delay})")
    p.add_argument("--on-missing-root", choices=ON_MISSING_ROOT, default="wait",
                   help="when a watched folder is removed: wait for it to come back "
                   "(default), or exit with status 13")


def announce(args: argparse.Namespace, report: IndexReport) -> None:
    """``grk index --watch``: the index run, told as the watcher's first event."""
    (_json_lines if args.json else _human)(
        {"event": "indexed", "reason": "index", "paths": None, "seconds": None,
         "since_change_s": None, **report.to_dict()})


def watch(args: argparse.Namespace, name: str) -> int:
    """Run a watcher for ``name`` until SIGINT or SIGTERM; 0 on a clean stop."""
    options = WatchOptions(debounce=args.debounce, max_delay=args.max_delay,
                           on_missing_root=args.on_missing_root)
    stop = threading.Event()
    watcher = Watcher(name, args.home, options=options,
                      emit=_json_lines if args.json else _human,
                      progress=None if args.json else (
                          lambda reason: ProgressBar(f"grk watch: indexing ({reason})")))
    with _stop_on_signals(stop):
        watcher.run(stop)
    return 0


@contextmanager
def _stop_on_signals(stop: threading.Event) -> Iterator[None]:
    """The first SIGINT/SIGTERM sets ``stop``; a second one interrupts at once."""

    def handle(signum: int, frame: Any) -> None:
        if stop.is_set():
            raise KeyboardInterrupt
        print(f"grk watch: {signal.Signals(signum).name}: stopping after the current run "
              "(again to interrupt)", file=sys.stderr, flush=True)
        stop.set()

    before = {s: signal.signal(s, handle) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, old in before.items():
            signal.signal(s, old)


def _json_lines(event: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(event, ensure_ascii=False, sort_keys=True) + "\n")
    sys.stdout.flush()


def _human(event: dict[str, Any]) -> None:
    kind = event["event"]
    if kind == "watching":
        line = (f"watching {', '.join(event['roots'])} (generation {event['generation']}); "
                "Ctrl-C to stop")
    elif kind in ("indexed", "unchanged"):
        line = _run_line(event)
    elif kind == "root_missing":
        then = "waiting for it to come back" if event["action"] == "wait" else "exiting"
        line = f"folder {event['root']} is gone; {then}"
    elif kind == "root_back":
        line = f"folder {event['root']} is back; re-indexing it"
    elif kind == "stopped":
        line = f"stopped ({event['generations_published']} generations published)"
    else:  # busy, error
        line = f"{kind}: {event['message']}"
    print(f"grk watch: {line}", file=sys.stderr, flush=True)


def _run_line(event: dict[str, Any]) -> str:
    counts = (f"added {event['added']}, changed {event['changed']}, "
              f"removed {event['removed']}, skipped {len(event['skipped'])}")
    if event["event"] == "unchanged":
        return f"{event['paths']} paths changed, nothing to re-index ({event['seconds']:.2f} s)"
    since = event["since_change_s"]
    latency = "" if since is None else f", searchable {since:.2f} s after the change"
    skipped = "".join(f"\n  skipped {s['path']}: {s['reason']}" for s in event["skipped"])
    took = "" if event["seconds"] is None else f" in {event['seconds']:.2f} s"
    return (f"generation {event['generation']} ({event['reason']}): {counts}"
            f"{took}{latency}{skipped}")
