"""Exporting to the BEIR format: datasets, imported folders, and chunked collections.

* Any :class:`~evals.external.dataset.Dataset` (a classic collection, an
  ir_datasets id, a materialised folder re-read by
  :func:`~evals.external.materialise.read_back`) is written as it is.
* A groundkit collection judged at chunk level (golden v1: quote-anchored
  judgments from :func:`evals.judgments.judge`) is written with one BEIR
  document per chunk: ``_id`` the chunk id, ``text`` the chunk text, ``title``
  empty, and ``metadata`` the chunk's file and span, so every exported passage
  still names the exact span it came from. Queries are every golden question;
  ``qrels/test.tsv`` holds the positive chunk judgments.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from evals.golden import load_golden
from evals.golden.judgments import judge
from groundkit.collection import Collection, IndexConfig, index
from groundkit.text.chunking import ChunkerConfig

from .beir import write_beir
from .dataset import Dataset, Doc, positive_qrels


def golden_to_beir(golden_path: str | os.PathLike[str], out: str | os.PathLike[str], *,
                   chunker: ChunkerConfig | None = None) -> Dataset:
    """Index a golden version's documents, judge its chunks, write them as BEIR; returns it."""
    golden = load_golden(Path(golden_path))
    with tempfile.TemporaryDirectory(prefix="groundkit-export-") as home:
        config = IndexConfig(roots=(str(golden.root / "docs"),), include=("*",),
                             chunker=chunker or ChunkerConfig())
        index("golden", config, home=home)
        with Collection.open("golden", home) as coll:
            chunks = coll.chunks()
    qrels = positive_qrels(judge(golden, chunks))
    dataset = Dataset(
        name=f"golden-v{golden.version}",
        docs=tuple(Doc(doc_id=c.chunk_id, text=c.text) for c in chunks),
        queries={q.id: q.question for q in golden.questions}, qrels=qrels,
        source={"format": "golden", "version": golden.version, "root": str(golden.root)})
    metadata = {c.chunk_id: {"doc_id": c.doc_id, "start": c.start, "end": c.end,
                             "offset_unit": "codepoint"} for c in chunks}
    write_beir(dataset, Path(out), metadata=metadata)
    return dataset
