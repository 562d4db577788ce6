"""The harness's abstention measures: AUROC, intervals, risk–coverage, re-splits."""

from __future__ import annotations

import numpy as np
import pytest

from evals.score import abstention
from evals.score.abstention import Item
from groundkit.retrieval import gate

SIGNAL = gate.SCORERS["bm25"].signals["bm25"]


def arrays(values: np.ndarray, answerable: bool) -> abstention._Arrays:
    n = len(values)
    return abstention._Arrays(np.full(n, answerable), np.zeros(n, bool), np.zeros(n, bool),
                              {SIGNAL: values})


def test_vectorised_p_values_agree_with_the_gate() -> None:
    rng = np.random.default_rng(3)
    cal, target = rng.random(40).round(2), rng.random(200).round(2)  # rounded: many ties
    fast = abstention.p_values(gate.SCORERS["bm25"], arrays(cal, False), arrays(target, True))
    assert fast.tolist() == pytest.approx([gate.p_value(sorted(cal), s) for s in target])


def test_auroc_counts_ties_as_half_and_needs_both_groups() -> None:
    assert abstention.auroc([3, 4], [1, 2]) == 1.0
    assert abstention.auroc([1, 2], [3, 4]) == 0.0
    assert abstention.auroc([1, 2], [1, 2]) == 0.5
    assert abstention.auroc([2], [1, 2, 3]) == pytest.approx(0.5)
    assert abstention.auroc([], [1]) is None


def test_clopper_pearson_brackets_the_rate_and_is_exact_at_the_edges() -> None:
    low, high = abstention.clopper_pearson(0, 20)
    assert low == 0.0 and high == pytest.approx(1 - 0.025 ** (1 / 20))
    low, high = abstention.clopper_pearson(5, 50)
    assert low < 0.1 < high and (round(low, 3), round(high, 3)) == (0.033, 0.218)


def items(n: int, seed: int = 1) -> list[Item]:
    """Answerable questions score higher on average than no-answer ones."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        answerable = i % 3 != 0
        split = ("train", "calibration", "test")[i % 5 % 3]
        score = float(rng.normal(1.0 if answerable else 0.0))
        out.append(Item(query_id=f"q{i}", answerable=answerable, near_miss=not answerable and
                        i % 2 == 0, retrieved=answerable and i % 4 != 1, split=split,
                        signals={SIGNAL: score}))
    return out


def test_evaluate_reports_the_shipped_split_and_bands_over_resplits() -> None:
    out = abstention.evaluate(items(900), gate.SCORERS["bm25"], resplits=200)
    shipped = {row["alpha"]: row for row in out["shipped"]["at_alpha"]}
    assert set(shipped) == set(abstention.ALPHAS)
    strict, loose = shipped[0.05], shipped[0.2]
    assert strict["false_answer_rate"] <= loose["false_answer_rate"]
    assert strict["coverage_retrieved"] <= loose["coverage_retrieved"]
    low, high = strict["false_answer_interval"]
    assert low <= strict["false_answer_rate"] <= high
    assert 0.7 < out["shipped"]["auroc"] < 0.9   # a separation of one standard deviation
    bands = {row["alpha"]: row for row in out["resplits"]["at_alpha"]}
    for alpha, row in bands.items():             # the guarantee holds on average
        assert row["false_answer_rate_mean"] <= alpha + 0.02
        lo, hi = row["false_answer_rate_band"]
        assert lo <= row["false_answer_rate_mean"] <= hi
    assert out["resplits"]["count"] == 200


def test_risk_coverage_of_a_perfect_ranking_has_no_excess() -> None:
    good = np.array([True, True, False, False])
    test = abstention._Arrays(good, np.zeros(4, bool), good, {SIGNAL: np.zeros(4)})
    perfect = abstention.risk_coverage(test, np.array([0.01, 0.02, 0.5, 0.9]))
    worst = abstention.risk_coverage(test, np.array([0.9, 0.5, 0.01, 0.02]))
    assert perfect["risk_at_full_coverage"] == worst["risk_at_full_coverage"] == 0.5
    assert perfect["aurc"] < worst["aurc"]
    assert perfect["excess_aurc"] == pytest.approx(perfect["aurc"] - (0.5 + 0.5 * np.log(0.5)))
    assert perfect["curve"][-1] == [1.0, 0.5]


def test_the_report_block_measures_hybrid_against_its_rivals() -> None:
    rng = np.random.default_rng(2)
    rows = [Item(query_id=i.query_id, answerable=i.answerable, near_miss=i.near_miss,
                 retrieved=i.retrieved, split=i.split,
                 signals={**i.signals, "dense.margin": float(rng.normal()),
                          "agreement.top10": float(rng.random())})
            for i in items(300)]
    block = abstention.report_block({"bm25": ("bm25", rows), "hybrid": ("hybrid", rows),
                                     "hybrid-2": ("hybrid", rows)})
    stages = block["stages"]
    assert set(stages["hybrid"]["scorers"]) == {"both", "mean2", "both+agreement",
                                                "bm25 alone", "dense alone"}
    assert set(stages["hybrid-2"]["scorers"]) == {"both"}
    assert stages["bm25"]["signals"][SIGNAL]["test_answerable_vs_no_answer"] is not None


def test_stages_with_confidence_signals_get_a_schema_valid_gate_block() -> None:
    from evals import report as rp

    text = "Deployment logs are kept for 30 days."
    gold = (rp.GoldAnswer(doc_id="logs.md", quote=text, start=0, end=len(text)),)
    parts = ["train", "calibration", "test"]
    questions = [rp.Question(query_id=f"q{i}", text=f"question {i}", split=parts[i % 3],
                             kind="answerable" if i % 2 else "no_answer",
                             gold=gold if i % 2 else (), near_miss=i % 4 == 0)
                 for i in range(30)]
    qrels = {q.query_id: {"c:a": 1} for q in questions if q.gold}
    a = rp.HitRecord(rank=1, chunk_id="c:a", doc_id="logs.md", start=0, end=len(text),
                     score=1.0, text=text, verdict="verified")
    signals = {q.query_id: {SIGNAL: (0.9 if q.gold else 0.2) + int(q.query_id[1:]) / 100}
               for q in questions}
    bm25 = rp.StageResult(name="bm25", description="BM25", config={},
                          hits={q.query_id: [a] for q in questions}, gate_mode="bm25",
                          signals=signals)
    plain = rp.StageResult(name="plain", description="BM25 again", config={}, hits=bm25.hits)
    provenance = rp.Provenance(golden_version="v2", golden_manifest_sha256="ab" * 32,
                               groundkit_version="0.1.0", git_commit=None, python="3.11",
                               libraries={})
    report = rp.build_report(questions=questions, qrels=qrels, stages=[bm25, plain],
                             baseline="bm25", provenance=provenance, config={},
                             settings=rp.Settings(resamples=200, permutations=200))
    rp.validate(report)
    assert list(report["gate"]["stages"]) == ["bm25"]  # the stage without signals has none
    shipped = report["gate"]["stages"]["bm25"]["scorers"]["default"]["shipped"]
    assert shipped["n0"] == 5 and shipped["auroc"] == 1.0  # perfectly separated
    at = {row["alpha"]: row for row in shipped["at_alpha"]}
    assert at[0.2]["false_answer_rate"] == 0.0 and at[0.2]["coverage_retrieved"] == 1.0
    assert at[0.05]["coverage_retrieved"] == 0.0  # 1/(5+1) > 0.05: nothing can be answered
    assert report["questions"][0]["near_miss"] is True
    from evals.score import gates

    pinned = gates.expected_from(report)
    assert pinned["stages"]["bm25"]["gate.auroc"] == {"value": 1.0, "tolerance": 0.005}
    assert "gate.auroc" not in pinned["stages"]["plain"]
    assert gates.check(report, pinned) == []
    pinned["stages"]["bm25"]["gate.coverage_retrieved"]["value"] = 0.5
    assert gates.check(report, pinned) == [
        "bm25: gate.coverage_retrieved = 0.0000, expected 0.5000 ± 0.005"]


def test_the_first_resplit_is_the_shipped_split() -> None:
    rows = items(300)
    one = abstention.evaluate(rows, gate.SCORERS["bm25"], resplits=1)
    shipped = {r["alpha"]: r for r in one["shipped"]["at_alpha"]}
    for band in one["resplits"]["at_alpha"]:
        assert band["false_answer_rate_mean"] == shipped[band["alpha"]]["false_answer_rate"]
        assert band["coverage_retrieved_mean"] == shipped[band["alpha"]]["coverage_retrieved"]


def test_at_alpha_counts_each_group_and_scores_answers_crag_style() -> None:
    answerable = np.array([True, True, True, False, False])
    retrieved = np.array([True, True, False, False, False])
    rows = abstention._Arrays(answerable, np.array([False, False, False, True, False]),
                              retrieved, {SIGNAL: np.zeros(5)})
    out = abstention.at_alpha(rows, np.array([0.05, 0.5, 0.05, 0.05, 0.5]), 0.1)
    assert out["counts"] == {"no_answer": 2, "near_miss": 1, "retrieved": 2, "missed": 1,
                             "answerable": 3}
    assert out["false_answer_rate"] == 0.5 and out["near_miss_false_answer_rate"] == 1.0
    assert out["coverage_retrieved"] == 0.5 and out["wrongful_abstentions_retrieved"] == 1
    assert out["abstentions_not_retrieved"] == 0
    assert out["crag_score"] == pytest.approx((1 - 2) / 5)  # one good answer, two wrong ones


def _take(pool: abstention._Arrays, rows: np.ndarray) -> abstention._Arrays:
    return abstention._Arrays(pool.answerable[rows], pool.near_miss[rows], pool.retrieved[rows],
                              {k: v[rows] for k, v in pool.signals.items()})


def _resplits_one_by_one(pool: abstention._Arrays, n_calibration: int, scorer: gate.Scorer,
                         resplits: int, seed: int) -> dict[str, list[float]]:
    """The re-splits as first written, one draw at a time through :func:`p_values`."""
    rng = np.random.default_rng(seed)
    out: dict[str, list[float]] = {}
    n = len(pool.answerable)
    for draw in range(resplits):
        order = rng.permutation(n) if draw else np.arange(n)
        test = _take(pool, order[n_calibration:])
        p = abstention.p_values(scorer, _take(pool, order[:n_calibration]), test)
        for a in abstention.ALPHAS:
            answered, no_answer = p <= a, ~test.answerable
            good = test.answerable & test.retrieved
            out.setdefault(f"far{a}", []).append(
                float((answered & no_answer).sum() / max(1, no_answer.sum())))
            out.setdefault(f"cov{a}", []).append(
                float((answered & good).sum() / max(1, good.sum())))
    return out


@pytest.mark.parametrize("rule", ["single", "both", "mean2"])
def test_resplits_at_once_equal_the_draws_one_by_one(rule: str) -> None:
    rng = np.random.default_rng(11)
    n = 150
    signals = {"a": rng.random(n).round(1), "b": rng.integers(0, 4, n).astype(float)}
    signals["a"][:5] = [np.inf, np.inf, -np.inf, np.nan, np.nan]  # ties beyond the finite
    pool = abstention._Arrays(rng.random(n) < 0.6, rng.random(n) < 0.2, rng.random(n) < 0.5,
                              signals)
    chosen = {"one": "a"} if rule == "single" else {"one": "a", "two": "b"}
    scorer = gate.Scorer(signals=chosen, rule=rule)
    slow = _resplits_one_by_one(pool, 60, scorer, 40, seed=5)
    fast = abstention._resplits(pool, 60, scorer, 40, seed=5)["at_alpha"]
    for band in fast:
        a = band["alpha"]
        f, c = np.array(slow[f"far{a}"]), np.array(slow[f"cov{a}"])
        assert band["false_answer_rate_mean"] == float(f.mean())  # bit for bit
        assert band["coverage_retrieved_mean"] == float(c.mean())
        assert band["false_answer_rate_band"] == [float(np.quantile(f, q)) for q in (0.05, 0.95)]
        assert band["coverage_retrieved_band"] == [float(np.quantile(c, q)) for q in (0.05, 0.95)]


def test_average_ranks_share_ties_as_equality_says() -> None:
    values = np.array([2.0, np.inf, 1.0, 2.0, np.nan, np.inf, 2.0, -np.inf])
    assert abstention._average_ranks(values).tolist()[:4] == [4.0, 6.5, 2.0, 4.0]
    assert abstention._average_ranks(values)[[5, 6, 7]].tolist() == [6.5, 4.0, 1.0]
    assert abstention._average_ranks(values)[4] == 8.0
    assert abstention._average_ranks(np.array([])).tolist() == []
