"""BM25 scoring parameters and the registry of formula variants."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from ..errors import UsageError
from . import scoring

METHODS: dict[str, str] = {
    "lucene": "Lucene >= 8 BM25Similarity: idf_lucene * tfc_lucene, float32 as Lucene",
    "robertson": "classic BM25: idf_robertson * tfc_robertson (idf may be negative)",
    "atire": "ATIRE: idf_atire * tfc_robertson",
    "bm25l": "BM25L (Lv & Zhai 2011): idf_bm25l * tfc_bm25l",
    "bm25+": "BM25+ (Lv & Zhai 2011): idf_bm25plus * tfc_bm25plus",
}

IDF: dict[str, Callable[[float, float], float]] = {
    "lucene": scoring.idf_lucene, "robertson": scoring.idf_robertson, "atire": scoring.idf_atire,
    "bm25l": scoring.idf_bm25l, "bm25+": scoring.idf_bm25plus,
}
"""Each method's idf, for explanations."""


@dataclass(frozen=True, slots=True, kw_only=True)
class BM25Params:
    """Scoring parameters. Defaults: Anserini's BEIR ``bm25-flat`` (k1=0.9, b=0.4, Lucene).

    ``lucene_norms`` stores each document length in Lucene's one byte (exact up
    to 23 terms, then three significant bits); turn it off for textbook BM25.
    ``delta`` is used by ``bm25l`` and ``bm25+`` only.
    """

    k1: float = 0.9
    b: float = 0.4
    method: str = "lucene"
    delta: float = 0.5
    lucene_norms: bool = True

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise UsageError(
                f"unknown BM25 method {self.method!r}; valid choices: {', '.join(METHODS)}"
            )
        if not (self.k1 >= 0 and 0 <= self.b <= 1 and self.delta >= 0):
            raise UsageError(
                f"BM25 needs k1 >= 0, 0 <= b <= 1, delta >= 0; got k1={self.k1}, "
                f"b={self.b}, delta={self.delta}"
            )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BM25Params:
        return cls(**data)
