"""No fork after a threaded runtime is loaded (issue 45): the harness's workers
(:mod:`evals.forked`) run in this process once lancedb is loaded, so lancedb's warning
that a fork "may deadlock" cannot be printed by a reproducibility run."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from evals import forked

pytestmark = pytest.mark.skipif(not forked.available(), reason="needs os.fork")

SCRIPT = """
import os
from evals import forked
before = forked.Forked(os.getpid, "before").result()
import lancedb
assert not forked.fork_safe()
after = forked.Forked(os.getpid, "after").result()
late = forked.beside(os.getpid, "beside")()
try:
    forked.Forked(lambda: 1 / 0, "fails").result()
except ZeroDivisionError:
    failed = "raised here"
print(before != os.getpid(), after == os.getpid(), late == os.getpid(), failed)
"""


def test_work_is_not_forked_once_lancedb_is_loaded() -> None:
    if importlib.util.find_spec("lancedb") is None:  # not imported here: this process forks
        pytest.skip("lancedb is not installed")
    done = subprocess.run([sys.executable, "-W", "error", "-c", SCRIPT], capture_output=True,
                          text=True, timeout=120, cwd=Path(__file__).parents[2])
    assert (done.returncode, done.stdout, done.stderr) == (0, "True True True raised here\n", "")
