"""What a collection suite's stage indexes with: the suite's settings with the stage's changes."""

from __future__ import annotations

import dataclasses
from typing import Any

from groundkit.retrieval.bm25 import BM25Params
from groundkit.text.analysis import Analyzer
from groundkit.text.chunking import ChunkerConfig


@dataclasses.dataclass(frozen=True, slots=True)
class IndexSettings:
    """What a stage's collection is built with."""

    chunker: ChunkerConfig
    analyzer: Analyzer
    bm25: BM25Params
    embedding: str | None

    def key(self) -> tuple[Any, ...]:
        return (self.chunker.target, self.chunker.overlap, self.chunker.boundaries,
                self.analyzer.identity,
                tuple(sorted(self.bm25.to_dict().items())), self.embedding)
