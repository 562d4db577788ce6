import math

import numpy as np

from groundkit.retrieval import scoring


def test_lucene_idf_is_log_one_plus_the_rsj_odds():
    assert scoring.idf_lucene(3.0, 10) == math.log(1 + (10 - 3 + 0.5) / (3 + 0.5))
    assert scoring.idf_lucene(10.0, 10) > 0  # never negative, even for a term in every doc


def test_robertson_idf_goes_negative_for_terms_in_most_documents():
    assert scoring.idf_robertson(2.0, 10) == math.log((10 - 2 + 0.5) / (2 + 0.5))
    assert scoring.idf_robertson(8.0, 10) < 0


def test_atire_bm25l_and_bm25plus_idfs():
    assert scoring.idf_atire(2.0, 10) == math.log(10 / 2)
    assert scoring.idf_bm25l(2.0, 10) == math.log((10 + 1) / (2 + 0.5))
    assert scoring.idf_bm25plus(2.0, 10) == math.log((10 + 1) / 2)


def test_lucene_tf_component_has_no_k1_plus_one_factor():
    k1, b, tf, dl, avgdl = 0.9, 0.4, 3.0, 12.0, 10.0
    assert math.isclose(scoring.tfc_lucene(tf, dl, avgdl, k1, b),
                        tf / (tf + k1 * (1 - b + b * dl / avgdl)))
    assert math.isclose(scoring.tfc_robertson(tf, dl, avgdl, k1, b),
                        tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl)))


def test_bm25l_and_bm25plus_give_nothing_where_the_term_is_absent():
    k1, b, d = 1.2, 0.75, 0.5
    tf = np.array([0.0, 2.0])
    c = 2.0 / (1 - b + b * 8 / 10)
    assert np.allclose(scoring.tfc_bm25l(tf, 8.0, 10.0, k1, b, d),
                       [0.0, (k1 + 1) * (c + d) / (k1 + c + d)])
    assert np.allclose(scoring.tfc_bm25plus(tf, 8.0, 10.0, k1, b, d),
                       [0.0, 2.0 * (k1 + 1) / (2.0 + k1 * (1 - b + b * 8 / 10)) + d])


def test_lucene_float32_score_equals_idf_times_tfc():
    idf, tf, dl = np.array([1.7]), np.array([2.0]), np.array([30.0])
    got = scoring.score_lucene_float32(idf, tf, dl, 25.0, 0.9, 0.4)
    assert got.dtype == np.float32
    assert math.isclose(got[0], 1.7 * 2.0 / (2.0 + 0.9 * (1 - 0.4 + 0.4 * 30.0 / 25.0)),
                        rel_tol=1e-6)


def test_lucene_byte_norm_is_exact_below_24_and_three_significant_bits_above():
    lengths = np.arange(0, 24)
    assert (scoring.length_lucene_byte(lengths) == lengths).all()
    # 100 - 24 = 76 = 0b1001100 keeps its top 4 bits 0b1001 -> 72, so 24 + 72.
    assert scoring.length_lucene_byte([100])[0] == 24 + 72
    assert scoring.length_lucene_byte([1000])[0] == 24 + 0b1111 * 2**6


def test_lucene_byte_norm_never_rounds_up_and_is_monotone():
    lengths = np.arange(0, 100_000)
    decoded = scoring.length_lucene_byte(lengths)
    assert (decoded <= lengths).all()
    assert (np.diff(decoded) >= 0).all()
    assert len(np.unique(decoded)) <= 256
