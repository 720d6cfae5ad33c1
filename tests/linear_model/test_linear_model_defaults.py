"""DPLinearRegression's defaults work at epsilon = 1 (auto alpha, feature ranges, a mechanism that fits the default
budget, a warning when the noise dominates the Gram matrix)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from sklearn.linear_model import LinearRegression
from sklearn.metrics import r2_score
from sklearn.model_selection import train_test_split

from dpfair.datasets import DataUnavailableError, load_law_school
from dpfair.linear_model import DPLinearRegression, NoiseDominatesWarning
from dpfair.linear_model._ssp import AUTO_ALPHA_FAILURE_PROBABILITY, auto_alpha
from dpfair.preprocessing import private_feature_ranges, quantile_utilities
from dpfair.privacy import PrivacyBudget, PrivacyLeakWarning, audit_epsilon, set_default_budget
from dpfair.privacy.noise import get_noise_source

pytestmark = pytest.mark.filterwarnings("ignore::dpfair.privacy.PrivacyLeakWarning")  # seeded noise in some tests


def _narrow_feature(n=6000, seed=0):
    """Two features in [0, 1]; the informative one lives in [0.9, 1] (as Law School's dnn_bar_pass_prediction)."""
    rng = np.random.default_rng(seed)
    wide = rng.uniform(0.0, 1.0, n)
    narrow = rng.uniform(0.9, 1.0, n)
    y = np.clip(1.0 + 0.2 * wide + 20.0 * (narrow - 0.95) + 0.3 * rng.normal(size=n), 0.0, 3.0)
    return np.column_stack([wide, narrow]), y


@pytest.mark.parametrize("declared", [{"data_norm": math.sqrt(2), "target_bound": 3.0},
                                      {"feature_bounds": (0.0, 1.0), "target_bound": (0.0, 3.0)}])
def test_defaults_fit_a_default_pure_budget(declared):
    # before: the Gaussian default (delta 1e-6) was refused by PrivacyBudget(epsilon), whose delta is 0
    X, y = _narrow_feature()
    budget = PrivacyBudget(1.0)
    model = DPLinearRegression(epsilon=1.0, budget=budget, **declared).fit(X, y)
    assert model.mechanism_ == "laplace" and model.privacy_spent_["delta"] == 0.0
    assert budget.spent() == (pytest.approx(1.0), 0.0)


def test_defaults_fit_a_pure_default_ledger():
    X, y = _narrow_feature()
    previous = set_default_budget(PrivacyBudget(5.0))
    try:
        model = DPLinearRegression(epsilon=1.0, data_norm=math.sqrt(2), target_bound=(0.0, 3.0)).fit(X, y)
    finally:
        set_default_budget(previous)
    assert model.mechanism_ == "laplace"


def test_gaussian_against_a_pure_budget_names_the_fix_before_charging():
    X, y = _narrow_feature()
    budget = PrivacyBudget(1.0)
    est = DPLinearRegression(epsilon=1.0, data_norm=2.0, target_bound=3.0, mechanism="gaussian", budget=budget)
    with pytest.raises(ValueError, match=r"mechanism='laplace'.*PrivacyBudget\(epsilon, 1e-5\)"):
        est.fit(X, y)
    assert budget.spent() == (0.0, 0.0) and not hasattr(est, "coef_")
    # a budget with a delta keeps the Gaussian mechanism (less noise for several features)
    with_delta = PrivacyBudget(1.0, 1e-5)
    auto = DPLinearRegression(epsilon=1.0, data_norm=2.0, target_bound=3.0, budget=with_delta).fit(X, y)
    assert auto.mechanism_ == "gaussian" and with_delta.spent() == (pytest.approx(1.0), pytest.approx(1e-6))


@pytest.mark.filterwarnings("ignore::dpfair.linear_model.NoiseDominatesWarning")
def test_auto_alpha_is_the_documented_data_independent_rule():
    X, y = _narrow_feature()
    model = DPLinearRegression(epsilon=1.0, data_norm=math.sqrt(2), target_bound=3.0, random_state=0).fit(X, y)
    expected = model.noise_scale_ * (2.0 * math.sqrt(3) + 2.0 * math.sqrt(math.log(1 / AUTO_ALPHA_FAILURE_PROBABILITY)))
    assert model.alpha_ == pytest.approx(expected, rel=1e-12) == auto_alpha(model.noise_scale_, 3)
    other = DPLinearRegression(epsilon=1.0, data_norm=math.sqrt(2), target_bound=3.0, random_state=1).fit(X[::-1] * 0.5, y)
    assert other.alpha_ == model.alpha_  # a function of epsilon, delta, the bounds, n and d only
    laplace = DPLinearRegression(epsilon=1.0, data_norm=math.sqrt(2), target_bound=3.0, mechanism="laplace",
                                 random_state=0).fit(X, y)
    assert laplace.alpha_ == pytest.approx(auto_alpha(math.sqrt(2) * laplace.noise_scale_, 3))


def test_auto_alpha_dominates_the_gram_noise_with_the_stated_probability():
    rng = np.random.default_rng(0)
    p, s = 6, 1.0
    failures = 0
    for _ in range(2000):
        upper = np.triu(rng.normal(scale=s, size=(p, p)))
        noise = upper + np.triu(upper, 1).T
        failures += np.linalg.eigvalsh(noise)[0] < -auto_alpha(s, p)
    assert failures / 2000 <= AUTO_ALPHA_FAILURE_PROBABILITY


def test_defaults_beat_the_old_fixed_alpha_on_a_feature_narrower_than_its_range():
    # before: alpha=1 far below the noise (R^2 << 0) and no way to declare per-feature ranges
    X, y = _narrow_feature(n=9000)
    train, test = np.arange(6000), np.arange(6000, 9000)
    exact = r2_score(y[test], LinearRegression().fit(X[train], y[train]).predict(X[test]))
    scores = [r2_score(y[test], DPLinearRegression(epsilon=1.0, feature_bounds=(0.0, 1.0), target_bound=(0.0, 3.0))
                       .fit(X[train], y[train]).predict(X[test])) for _ in range(3)]  # secure noise
    old = [r2_score(y[test], DPLinearRegression(epsilon=1.0, data_norm=math.sqrt(2), target_bound=3.0, alpha=1.0,
                                                mechanism="gaussian", random_state=seed).fit(X[train], y[train]).predict(X[test]))
           for seed in range(3)]
    assert np.median(old) < 0.0  # about -6
    assert np.median(scores) >= 0.8 * exact  # about 0.77 against 0.78


def test_feature_ranges_are_released_inside_the_declared_ones_and_predict_clips():
    X, y = _narrow_feature()
    model = DPLinearRegression(epsilon=1.0, feature_bounds=[(0.0, 1.0), (0.0, 1.0)], target_bound=(0.0, 3.0),
                               random_state=0).fit(X, y)
    low, high = model.feature_range_
    assert 0.85 <= low[1] < high[1] <= 1.0 and (low >= 0).all() and (high <= 1).all()
    inside = np.clip(X, low, high)
    np.testing.assert_allclose(model.predict(X), inside @ model.coef_ + model.intercept_)
    plain = DPLinearRegression(epsilon=1.0, feature_bounds=(0.0, 1.0), target_bound=(0.0, 3.0), range_share=0.0,
                               random_state=0).fit(X, y)
    np.testing.assert_array_equal(plain.feature_range_, [[0.0, 0.0], [1.0, 1.0]])


def test_feature_bounds_at_epsilon_inf_is_least_squares():
    X, y = _narrow_feature()
    with pytest.warns(PrivacyLeakWarning):
        ours = DPLinearRegression(epsilon=math.inf, feature_bounds=(0.0, 1.0), target_bound=(0.0, 3.0)).fit(X, y)
    ref = LinearRegression().fit(X, y)
    np.testing.assert_allclose(ours.coef_, ref.coef_, rtol=1e-8)
    assert ours.intercept_ == pytest.approx(ref.intercept_, rel=1e-8) and ours.alpha_ == 0.0


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"feature_bounds": (0.0, 0.5)}, "outside the declared feature_bounds"),
    ({"feature_bounds": (0.0, 1.0), "data_norm": 2.0}, "either data_norm"),
    ({"feature_bounds": [(0.0, 1.0)]}, "one \\(low, high\\) pair per feature"),
    ({"feature_bounds": (1.0, 0.0)}, "low < high"),
    ({"feature_bounds": (0.0, 1.0), "range_share": 1.0}, "range_share must lie in"),
    ({"feature_bounds": (0.0, 1.0), "alpha": "big"}, "alpha must be 'auto'"),
    ({"feature_bounds": (0.0, 1.0), "target_bound": (0.0, 1.0)}, "outside the declared target_bound"),
])
def test_bad_declarations_are_refused_before_any_charge(kwargs, match):
    X, y = _narrow_feature(n=500)
    budget = PrivacyBudget(10.0, 1e-3)
    params = {"epsilon": 1.0, "target_bound": (0.0, 3.0), "budget": budget, **kwargs}
    est = DPLinearRegression(**params)
    with pytest.raises(ValueError, match=match):
        est.fit(X, y)
    assert budget.spent() == (0.0, 0.0) and not [name for name in vars(est) if name.endswith("_")]


def test_noise_dominates_warning_follows_the_released_signal():
    X, y = _narrow_feature(n=300)
    with pytest.warns(NoiseDominatesWarning, match="dominates"):
        small = DPLinearRegression(epsilon=0.1, feature_bounds=(0.0, 1.0), target_bound=(0.0, 3.0),
                                   random_state=0).fit(X, y)
    assert small.noise_to_signal_ > 1.0
    X, y = _narrow_feature(n=20_000)
    with warnings.catch_warnings():
        warnings.simplefilter("error", NoiseDominatesWarning)
        large = DPLinearRegression(epsilon=1.0, feature_bounds=(0.0, 1.0), target_bound=(0.0, 3.0),
                                   random_state=0).fit(X, y)  # seeded: secure noise made the ratio flaky near 1
    assert large.noise_to_signal_ < 1.0


def test_law_school_defaults_reach_r2_030_at_epsilon_1():
    try:
        data = load_law_school(download=False)
    except DataUnavailableError:
        pytest.skip("Law School data not available (set DPFAIR_DATA_HOME)")
    X = data.X.fillna({"male": 0.5}).to_numpy(float)
    y = data.y.to_numpy(float)
    bounds = [(10.0, 48.0), (0.0, 1.0), (0.0, 1.0), (0.0, 1.0)]  # public: the LSAT scale, binary, a probability
    scores = []
    for seed in range(3):
        train, test = train_test_split(np.arange(y.size), test_size=1 / 3, random_state=seed)
        model = DPLinearRegression(epsilon=1.0, feature_bounds=bounds, target_bound=data.extra["target_bounds"])
        scores.append(r2_score(y[test], model.fit(X[train], y[train]).predict(X[test])))  # secure noise
    assert np.median(scores) >= 0.30  # scikit-learn: 0.42; the old defaults: about -300


def _range_mechanism(scale_factor=1.0, *, split_atoms=True):
    """The lower clip point's index, drawn as private_feature_ranges does (one release at epsilon = 1)."""
    candidates = np.linspace(0.0, 1.0, 9)

    def mechanism(values, size, rng):
        if split_atoms:
            utility = quantile_utilities(values, candidates, 0.3)
        else:  # a broken utility: distance to the rank of #{x <= c} only (sensitivity 1, but no)
            utility = -np.abs(np.searchsorted(np.sort(values), candidates, side="right") - 0.3 * values.size)
        gumbel = np.random.default_rng(rng).gumbel(size=(size, candidates.size))
        return np.argmax(utility / (2.0 * scale_factor) + gumbel, axis=1).astype(float)

    return mechanism


def test_private_feature_ranges_calls_the_exponential_mechanism_with_its_share():
    X = np.column_stack([np.linspace(0.0, 1.0, 101), np.zeros(101)])
    calls = []

    class Recorder:
        def noisy_argmax_gumbel(self, scores, scale):
            calls.append((np.asarray(scores).copy(), scale))
            return int(np.argmax(scores))

    ranges = private_feature_ranges(X, np.array([[0.0, 0.0], [1.0, 1.0]]), 0.4, Recorder())
    assert [scale for _, scale in calls] == [pytest.approx(2.0 / 0.1)] * 4  # 2 d draws of epsilon / (2 d) each
    assert 0.04 <= ranges[0, 0] <= 0.05 and 0.95 <= ranges[1, 0] <= 0.96  # a 5% / 95% quantile of 0, 0.01, ..., 1
    assert ranges[:, 1].tolist() == [0.0, 1.0]  # an atom at 0: both ends collapse, the declared range is kept
    assert all(np.ptp(utility) <= 101 for utility, _ in calls)


@pytest.mark.slow
def test_range_release_audit_passes_and_catches_half_noise():
    rest = np.array([0.2, 0.5, 0.6])
    a, b = np.append(rest, 0.0), np.append(rest, 1.0)  # replace one row: its value moves across every candidate
    honest = audit_epsilon(_range_mechanism(1.0), a, b, n_samples=400_000, random_state=1)
    mutant = audit_epsilon(_range_mechanism(0.5), a, b, n_samples=400_000, random_state=1)
    print(f"range release audit at epsilon=1: honest {honest.epsilon_lower_bound:.3f}, "
          f"half-noise {mutant.epsilon_lower_bound:.3f}")
    assert honest.epsilon_lower_bound <= 1.0 < mutant.epsilon_lower_bound


def test_secure_noise_source_draws_the_ranges():
    X, y = _narrow_feature(n=2000)
    model = DPLinearRegression(epsilon=1.0, feature_bounds=(0.0, 1.0), target_bound=(0.0, 3.0)).fit(X, y)
    assert model.feature_range_.shape == (2, 2) and np.isfinite(model.coef_).all()
    assert get_noise_source(None).__class__.__name__ == "SecureNoise"
