"""The subcommand registry and the output conventions every ``grk`` command shares.

A command registers a ``configure(parser) -> handler`` pair with
:func:`command`; :func:`emit` prints data as JSON with ``--json``, else runs the
human renderer. Data goes to stdout, progress and errors to stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any

EXIT_DRIFTED = 10
EXIT_UNRESOLVABLE = 11
EXIT_NO_ANSWER = 12
"""``grk ask`` has no answer to show: the gate abstained, nothing verified answers, or an
LLM reply was withheld."""
EXIT_INTERRUPTED = 130

EXIT_CODES: dict[int, str] = {
    0: "success (fetch: verified)",
    1: "an unexpected groundkit error",
    2: "bad usage: invalid option, argument, name or query",
    3: "not found: unknown collection or chunk",
    4: "integrity: a store, index or checksum check failed, or an index does not match",
    5: "a missing optional dependency (the message gives the install command)",
    6: "an external provider (embedding server or model) is missing or failed",
    7: "the collection is being indexed by another process, or already has a watcher",
    8: "eval: a metric left its expected band",
    9: "search --abstain, calibrate: no calibration, a stale one, or too few no-answer "
       "questions",
    10: "fetch: the citation drifted",
    11: "fetch: the citation is unresolvable",
    12: "ask: no answer to show",
    13: "watch --on-missing-root exit: a watched folder was removed",
    14: "index, gc: writing failed (full or failing disk); the previous generation is intact",
    130: "interrupted",
}
"""Every exit status ``grk`` returns (``grk --help`` lists them; docs/cli.md explains them)."""

MODULES: dict[str, str] = {
    "index": "commands", "fetch": "commands", "status": "commands",
    "collections": "commands", "check": "commands", "search": "commands",
    "calibrate": "commands", "eval": "commands", "ask": "ask", "gc": "maintenance",
    "drop": "maintenance", "questions": "questions", "rerankers": "rerank", "serve": "serve",
    "watch": "watch", "open": "open",
}
"""The module of :mod:`groundkit.cli` that registers each command: ``grk COMMAND`` imports
only that one. A test checks it against :data:`COMMANDS` once every module is loaded."""

Handler = Callable[[argparse.Namespace], int]
Configure = Callable[[argparse.ArgumentParser], Handler]
COMMANDS: dict[str, tuple[str, Configure]] = {}
"""name -> (one line of help, configure)."""


def command(name: str, help: str) -> Callable[[Configure], Configure]:
    """Register a subcommand: ``configure(parser)`` adds options and returns the handler."""

    def wrap(configure: Configure) -> Configure:
        if name in COMMANDS:
            raise ValueError(f"command {name!r} registered twice")
        COMMANDS[name] = (help, configure)
        return configure

    return wrap


def emit(args: argparse.Namespace, data: Any, human: Callable[[], None]) -> None:
    """Print ``data`` as JSON with ``--json``, else run the human renderer."""
    if args.json:
        json.dump(data, sys.stdout, ensure_ascii=False, indent=2, sort_keys=True)
        sys.stdout.write("\n")
    else:
        human()
