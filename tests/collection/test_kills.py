"""``grk index`` killed with SIGKILL at random moments: the collection always opens, checks
and verifies, and the next run recovers. A short campaign here (``GROUNDKIT_KILLS``, default
8); ``bench/bench_kills.py`` runs 200."""

from __future__ import annotations

import os
from pathlib import Path

from groundkit.testing.kills import campaign


def test_random_kills_during_reindexing_never_leave_a_broken_collection(tmp_path: Path) -> None:
    kills = int(os.environ.get("GROUNDKIT_KILLS", "8"))
    result = campaign(tmp_path / "tree", tmp_path / "home", kills=kills, files=200)
    assert result.problems == []
    assert result.kills == kills
    assert result.generations == sorted(result.generations)  # never back to an older one
