from collections.abc import Sequence
from typing import Any

VERSION: int

def maxscore(docs: Any, scores: Any, imp_scores: Any,
             terms: Sequence[tuple[int, int, float, int, int]
                             | tuple[int, int, float, int, int, int, float]
                             | tuple[int, int, float, int, int, int, float, int]],
             k: int, limit: float, quanta: Any = ..., shift: int = ..., dense: int = ...,
             windowed: int = ..., columns: Any = ..., starts: Any = ...,
             /) -> list[tuple[int, float]] | None: ...

def find_term(hashes: Any, offsets: Any, blob: Any, term: bytes, crc32: int, /) -> int: ...

def rescore(docs: Any, tfs: Any, norm_inverse: Any, candidates: Any, out: Any,
            terms: tuple[tuple[int, int, float, float], ...], /) -> None: ...
