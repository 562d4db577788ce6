"""BM25 formula components as tiny pure functions: ``{component}_{variant}``.

A BM25 score is a sum over query terms of ``idf(df, N) * tfc(tf, dl, avgdl)``.
The variants differ in both parts; Kamphuis, de Vries, Boytsov and Lin,
"Which BM25 Do You Mean? A Large-Scale Reproducibility Study of Scoring
Variants" (ECIR 2020) name and compare them, and find the effectiveness
differences small. Robertson and Zaragoza, "The Probabilistic Relevance
Framework: BM25 and Beyond" (FnTIR 2009) give the derivation.

Every function works on numpy arrays or Python numbers alike. ``dl`` is a
document length in index terms, ``avgdl`` the mean over documents that have
at least one term (Lucene's ``sumTotalTermFreq / docCount``).

Lucene (8.0 onward, LUCENE-8563) scores
``idf * tf / (tf + k1 * (1 - b + b * dl / avgdl))``: the ``(k1 + 1)`` numerator
factor of the classic formula was dropped because it scales every score of a
query equally and so never changes a ranking. Lucene also stores ``dl`` lossily,
in one byte per document (:func:`length_lucene_byte`), which Anserini's published
runs inherit.
"""

from __future__ import annotations

from typing import TypeVar

import numpy as np
import numpy.typing as npt

Num = TypeVar("Num", float, npt.NDArray[np.floating])


def idf_lucene(df: Num, n_docs: float) -> Num:
    """Lucene's BM25Similarity idf: ``ln(1 + (N - df + 0.5) / (df + 0.5))``; never negative."""
    return np.log1p((n_docs - df + 0.5) / (df + 0.5))  # type: ignore[no-any-return]


def idf_robertson(df: Num, n_docs: float) -> Num:
    """Robertson-Sparck Jones idf: ``ln((N - df + 0.5) / (df + 0.5))``.

    Negative for terms in more than half the documents (rank-bm25's BM25Okapi
    then substitutes ``epsilon * mean idf``; this function does not).
    """
    return np.log((n_docs - df + 0.5) / (df + 0.5))  # type: ignore[no-any-return]


def idf_atire(df: Num, n_docs: float) -> Num:
    """ATIRE (Trotman et al. 2014) idf: ``ln(N / df)``."""
    return np.log(n_docs / df)  # type: ignore[no-any-return]


def idf_bm25l(df: Num, n_docs: float) -> Num:
    """BM25L (Lv and Zhai 2011) idf: ``ln((N + 1) / (df + 0.5))``."""
    return np.log((n_docs + 1) / (df + 0.5))  # type: ignore[no-any-return]


def idf_bm25plus(df: Num, n_docs: float) -> Num:
    """BM25+ (Lv and Zhai 2011) idf: ``ln((N + 1) / df)``."""
    return np.log((n_docs + 1) / df)  # type: ignore[no-any-return]


def length_norm(dl: Num, avgdl: float, b: float) -> Num:
    """The length normaliser ``1 - b + b * dl / avgdl`` shared by every variant."""
    return 1 - b + b * dl / avgdl  # type: ignore[no-any-return]


def tfc_lucene(tf: Num, dl: Num, avgdl: float, k1: float, b: float) -> Num:
    """Lucene >= 8: ``tf / (tf + k1 * (1 - b + b * dl / avgdl))`` (no ``k1 + 1`` factor)."""
    return tf / (tf + k1 * length_norm(dl, avgdl, b))  # type: ignore[no-any-return]


def tfc_robertson(tf: Num, dl: Num, avgdl: float, k1: float, b: float) -> Num:
    """Classic BM25 (Robertson et al. 1994): ``tf (k1 + 1) / (tf + k1 * norm)``."""
    return tf * (k1 + 1) / (tf + k1 * length_norm(dl, avgdl, b))  # type: ignore[no-any-return]


def tfc_bm25l(tf: Num, dl: Num, avgdl: float, k1: float, b: float, delta: float) -> Num:
    """BM25L: ``c = tf / norm``, ``(k1 + 1)(c + delta) / (k1 + c + delta)``; 0 where tf = 0."""
    c = tf / length_norm(dl, avgdl, b)
    score = (k1 + 1) * (c + delta) / (k1 + c + delta)
    return np.where(np.asarray(tf) > 0, score, 0.0)  # type: ignore[return-value]


def tfc_bm25plus(tf: Num, dl: Num, avgdl: float, k1: float, b: float, delta: float) -> Num:
    """BM25+: ``tfc_robertson + delta`` where the term occurs; 0 where tf = 0."""
    score = tfc_robertson(tf, dl, avgdl, k1, b) + delta
    return np.where(np.asarray(tf) > 0, score, 0.0)  # type: ignore[return-value]


def norm_inverse_lucene(
    dl: npt.NDArray[np.floating] | npt.NDArray[np.integer], avgdl: float, k1: float, b: float,
) -> npt.NDArray[np.float32]:
    """Lucene 9's per-document ``normInverse = 1f / (k1 * ((1 - b) + b * dl / avgdl))``, float32."""
    f32 = np.float32
    norm = f32(k1) * (f32(1 - b) + f32(b) * np.asarray(dl, dtype=f32) / f32(avgdl))
    return (f32(1) / norm).astype(np.float32, copy=False)


def score_lucene_float32(
    idf: npt.NDArray[np.floating], tf: npt.NDArray[np.floating],
    dl: npt.NDArray[np.floating], avgdl: float, k1: float, b: float,
) -> npt.NDArray[np.float32]:
    """Lucene 9's per-term score with its float32 arithmetic, operation for operation.

    ``weight = (float) idf``; ``normInverse = 1f / (k1 * ((1 - b) + b * dl / avgdl))``;
    ``score = weight - weight / (1f + tf * normInverse)``, which is algebraically
    ``idf * tfc_lucene``. Reproducing the float32 steps keeps ties and near-ties
    in the same order as Lucene.
    """
    f32 = np.float32
    weight = np.asarray(idf, dtype=f32)
    norm_inverse = norm_inverse_lucene(dl, avgdl, k1, b)
    score = weight - weight / (f32(1) + np.asarray(tf, dtype=f32) * norm_inverse)
    return score.astype(np.float32, copy=False)


_NUM_FREE_VALUES = 24
"""Lucene SmallFloat: byte values below 24 encode lengths 0..23 exactly."""


def _int4_encode(values: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    num_bits = np.frexp(values.astype(np.float64))[1].astype(np.int64)  # bit length
    shift = np.maximum(num_bits - 4, 0)
    encoded = ((values >> shift) & 0x07) | ((shift + 1) << 3)
    return np.where(num_bits < 4, values, encoded)


def _int4_decode(codes: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    bits = codes & 0x07
    shift = (codes >> 3) - 1
    return np.where(shift == -1, bits, (bits | 0x08) << np.maximum(shift, 0))


def length_lucene_byte(dl: npt.ArrayLike) -> npt.NDArray[np.int64]:
    """The document length Lucene's BM25 actually uses: ``byte4ToInt(intToByte4(dl))``.

    Lucene keeps one byte per document (``SmallFloat.intToByte4``): lengths
    0..23 exactly, larger ones with three significant bits (~12% steps, rounded
    down). Returns the decoded lengths.
    """
    values = np.asarray(dl, dtype=np.int64)
    big = values >= _NUM_FREE_VALUES
    out = values.copy()
    shifted = values[big] - _NUM_FREE_VALUES
    out[big] = _NUM_FREE_VALUES + _int4_decode(_int4_encode(shifted))
    return out
