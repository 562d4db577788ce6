"""A small synthetic BEIR dataset for harness tests: 60 documents, the judged of 10 queries."""

from __future__ import annotations

from pathlib import Path

from evals.external.beir import write_beir
from evals.external.dataset import Dataset
from evals.external.synthetic import make_dataset


def synthetic_beir(root: Path) -> Path:
    """Write the dataset as a BEIR folder ``root/syn`` (queries without judgments left out)."""
    dataset = make_dataset(seed=3, n_docs=60, n_queries=10)
    judged = Dataset(name="syn", docs=dataset.docs, qrels=dataset.qrels,
                     queries={q: t for q, t in dataset.queries.items() if q in dataset.qrels})
    return write_beir(judged, root / "syn")
