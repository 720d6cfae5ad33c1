"""Fairness metrics against fairlearn, scipy and brute force."""

import numpy as np
import pandas as pd
import pytest
from fairlearn import metrics as flm
from scipy import stats

from dpfair import fairness as fm


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    n = 3000
    groups = rng.choice(["a", "b", "c"], size=n, p=[0.5, 0.3, 0.2])
    y = rng.integers(0, 2, size=n)
    yhat = (rng.uniform(size=n) < 0.3 + 0.2 * (groups == "b") + 0.3 * y).astype(int)
    return y, yhat, groups


def test_equalized_odds_and_parity_match_fairlearn(data):
    y, yhat, g = data
    assert fm.equalized_odds_difference(y, yhat, g) == pytest.approx(flm.equalized_odds_difference(y, yhat, sensitive_features=g))
    assert fm.demographic_parity_difference(yhat, g) == pytest.approx(
        flm.demographic_parity_difference(y, yhat, sensitive_features=g)
    )
    tpr = flm.MetricFrame(metrics=flm.true_positive_rate, y_true=y, y_pred=yhat, sensitive_features=g)
    assert fm.equal_opportunity_difference(y, yhat, g) == pytest.approx(tpr.difference())
    rates = fm.group_rates(pd.Series(y), pd.Series(yhat), pd.Series(g))
    np.testing.assert_allclose(rates["tpr"].to_numpy(), tpr.by_group.to_numpy())


def test_reference_group_gap(data):
    y, yhat, g = data
    rates = fm.group_rates(y, yhat, g)
    expected = max(
        abs(rates.loc[k, c] - rates.loc["a", c]) for k in ["b", "c"] for c in ["tpr", "fpr"]
    )
    assert fm.equalized_odds_difference(y, yhat, g, reference_group="a") == pytest.approx(expected)
    with pytest.raises(ValueError, match="reference_group"):
        fm.equalized_odds_difference(y, yhat, g, reference_group="z")


def test_ks_matches_scipy_and_histograms():
    rng = np.random.default_rng(1)
    a, b, c = rng.normal(size=300), rng.normal(0.3, size=200), rng.normal(-0.2, size=250)
    assert fm.ks_distance(a, b) == pytest.approx(stats.ks_2samp(a, b).statistic)
    values = np.concatenate([a, b, c])
    groups = np.repeat([0, 1, 2], [300, 200, 250])
    expected = max(stats.ks_2samp(x, y).statistic for x, y in [(a, b), (a, c), (b, c)])
    assert fm.statistical_parity_ks(values, groups) == pytest.approx(expected)
    # histograms on a common grid: equals the sample KS of the discretized samples
    bins = np.linspace(-4, 4, 17)
    da, db = np.digitize(a, bins), np.digitize(b, bins)
    pa = np.bincount(da, minlength=18) / a.size
    pb = np.bincount(db, minlength=18) / b.size
    assert fm.ks_distance_histograms(pa, pb) == pytest.approx(stats.ks_2samp(da, db).statistic)
    assert fm.statistical_parity_ks_histograms(np.vstack([pa, pb])) == pytest.approx(fm.ks_distance_histograms(pa, pb))


def test_relative_rank_brute_force():
    rng = np.random.default_rng(2)
    ref_v, ref_g = rng.normal(size=50), rng.integers(0, 3, size=50)
    v, g = rng.normal(size=10), rng.integers(0, 3, size=10)
    got = fm.relative_rank(v, g, ref_v, ref_g)
    for i in range(10):
        pool = ref_v[ref_g == g[i]]
        assert got[i] == pytest.approx((pool <= v[i]).mean())
    with pytest.raises(ValueError, match="no reference"):
        fm.relative_rank([0.0], [7], ref_v, ref_g)


def test_merit_policy_and_fairness_regret():
    merits = np.exp(10 * np.array([[0.1, 0.2, 0.3], [0.3, 0.3, 0.3]]))
    pi = fm.merit_proportional_policy(merits)
    np.testing.assert_allclose(pi.sum(axis=1), 1.0)
    np.testing.assert_allclose(pi[1], 1 / 3)
    uniform = np.full_like(pi, 1 / 3)
    regret = fm.fairness_regret(uniform, pi)
    assert regret[-1] == pytest.approx(np.abs(pi[0] - 1 / 3).sum())
    with pytest.raises(ValueError, match="merits"):
        fm.merit_proportional_policy([1.0, 0.0])


def test_bad_input():
    with pytest.raises(ValueError, match="same length"):
        fm.group_rates([0, 1], [0, 1, 1], ["a", "b"])
    with pytest.raises(ValueError, match="only 0 and 1"):
        fm.group_rates([0, 2], [0, 1], ["a", "b"])
    with pytest.raises(ValueError, match="sensitive_features"):
        fm.group_rates([0, 1], [0, 1], ["a", None])
    with pytest.raises(ValueError, match="predictions"):
        fm.statistical_parity_ks([0.1, np.nan], [0, 1])


def test_regressions_found_by_hypothesis():
    # list labels of mixed types stay distinct (numpy used to turn 1 into "1" and merge them)
    rates = fm.group_rates([1, 0, 1], [1, 0, 0], ["1", 1, "a"])
    assert rates["count"].tolist() == [1, 1, 1]
    # labels that do not compare ("<" not supported) still work
    groups = np.array([("t", 1), "a", 0, ("t", 1)], dtype=object)
    assert fm.statistical_parity_ks([0.0, 1.0, 2.0, 3.0], groups) == 1.0
    assert fm.equalized_odds_difference([1, 1, 0, 0], [1, 0, 0, 1], groups) == 1.0
    # a boolean reference group among boolean labels (pandas used to raise KeyError)
    assert fm.demographic_parity_difference([1, 0], [True, False], reference_group=False) == 1.0
    # undefined gaps raise instead of returning NaN
    with pytest.raises(ValueError, match="undefined"):
        fm.equal_opportunity_difference([0, 1], [0, 1], ["a", "b"])
    # no overflow to a non-distribution or to inf
    np.testing.assert_allclose(fm.merit_proportional_policy([1e308, 1e308]), [0.5, 0.5])
    with pytest.raises(ValueError, match="merits"):
        fm.merit_proportional_policy(2.0)
    with pytest.raises(ValueError, match="policies"):
        fm.fairness_regret([[1e308, 0.0]], [[0.0, 1.0]])
    # unhashable labels and ragged input name the argument
    with pytest.raises(TypeError, match="sensitive_features"):
        fm.group_rates([0, 1], [0, 1], [[1], [2, 3]])
    with pytest.raises(TypeError, match="sample_a"):
        fm.ks_distance([[1.0], [1.0, 2.0]], [1.0])
    with pytest.raises(TypeError, match="predictions"):
        fm.statistical_parity_ks([1 + 1j, 2.0], [0, 1])
