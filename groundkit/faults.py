"""Fault injection at the write points of indexing and publishing, for tests.

``GROUNDKIT_FAULT=POINT:ACTION`` makes the named point fail the next time it is
reached: ``ENOSPC`` (a full disk) or ``EIO`` (a failing one) raise that
``OSError``, ``kill`` sends the process SIGKILL (the moment right after the step
before it). Without the variable a point is one dictionary lookup. The points, in
the order an indexing run reaches them:

    index.ingest      SQLite: documents and chunks written, before their commit
    derived.rowids    the chunk-order file written, before its rename
    derived.bm25      the first BM25 array written, the rest not
    derived.vectors   the vectors embedded, before their files are written
    publish           in the publishing transaction, before its commit
    publish.done      right after the commit (the new generation is current)
    gc                garbage collection: a generation's rows deleted, its folder not

``tests/collection/test_faults.py`` runs every point with every action and checks
that the previous generation opens, verifies and passes ``grk check``, and that the
next run recovers.
"""

from __future__ import annotations

import errno
import os
import signal

VARIABLE = "GROUNDKIT_FAULT"
POINTS = ("index.ingest", "derived.rowids", "derived.bm25", "derived.vectors", "publish",
          "publish.done", "gc")
ACTIONS = {"ENOSPC": errno.ENOSPC, "EIO": errno.EIO, "kill": None}


def point(name: str) -> None:
    """Fail here when ``$GROUNDKIT_FAULT`` names this point (see the module docstring)."""
    spec = os.environ.get(VARIABLE)
    if not spec:
        return
    where, _, action = spec.partition(":")
    if where != name:
        return
    if action == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    code = ACTIONS.get(action)
    if code is None:
        raise ValueError(f"{VARIABLE}={spec!r}: the action must be one of {', '.join(ACTIONS)}")
    raise OSError(code, f"{os.strerror(code)} (injected at {name})")
