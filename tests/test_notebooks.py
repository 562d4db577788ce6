"""The notebooks run, so they cannot rot: each is executed on a real (small) report."""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = sorted((Path(__file__).resolve().parent.parent / "notebooks").glob("*.ipynb"))


@pytest.fixture(scope="module")
def small_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from golden_fixture import tiny_golden

    from evals import report
    from evals.golden.suite import evaluate_golden

    out = tmp_path_factory.mktemp("report")
    golden = tiny_golden(out / "golden" / "v1")
    evaluate_golden(golden, out, stage_names=["bm25", "bm25-nostem", "bm25-chunk500"],
                    settings=report.Settings(resamples=200, permutations=200))
    return out / "latest.json"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_the_notebook_executes_on_a_real_report(
    path: Path, small_report: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GROUNDKIT_REPORT", str(small_report))
    monkeypatch.setenv("GROUNDKIT_PLOT", str(tmp_path / "plot.png"))
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    outputs = "".join(o.get("text", "") for c in nb.cells for o in c.get("outputs", []))
    assert "recomputed deltas match the report" in outputs
    assert (tmp_path / "plot.png").stat().st_size > 1000
    assert os.environ["GROUNDKIT_REPORT"] == str(small_report)
