"""DPExponentiatedGradient on data it was not tuned on: never worse than the constant, empty groups, defaults.

* an empty declared group no longer turns the fit into the constant classifier (epsilon = inf: the same classifier as
  without it; finite epsilon: well below the constant) and raises EmptyGroupWarning naming it;
* the fallback to the best constant is exactly the documented rule (training error + 2 sqrt(p / m) against the
  constant's error), read on the game's own output (fallback=None, the same seed), and draws no noise;
* delta and gamma have defaults from public facts; the charge stays fixed by the parameters alone;
* at epsilon = inf with 4 groups the exact game reaches its duality-gap target, and warns when it cannot;
* the statistics oracle's weighted count coordinate keeps the stated L2 sensitivity (identical-noise neighbours);
* DPEqualizedOddsPostProcessor's FairnessSlackWarning fires only when the noise's slack matters.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression

from dpfair.classification import (
    ConstantFallbackWarning,
    DPEqualizedOddsPostProcessor,
    DPExponentiatedGradient,
    EmptyGroupWarning,
    FairnessSlackWarning,
    SmallBudgetWarning,
)
from dpfair.classification.reductions import _oracle as reductions_oracle
from dpfair.classification.reductions._fallback import constant_fallback
from dpfair.datasets import make_classification
from dpfair.privacy import PrivacyLeakWarning
from dpfair.privacy.noise import NoiseSource, SeededNoise

pytestmark = [
    pytest.mark.filterwarnings("ignore::dpfair.privacy.SeededNoiseWarning"),
    pytest.mark.filterwarnings("ignore::dpfair.privacy.PrivacyLeakWarning"),
]


def _data(n=3000, seed=0, n_groups=2):
    rng = np.random.default_rng(seed)
    g = rng.integers(0, n_groups, size=n)
    X = rng.normal(size=(n, 4))
    w = np.array([1.5, -1.0, 0.8, 0.0])
    y = (rng.uniform(size=n) < 1.0 / (1.0 + np.exp(-(X @ w + 0.8 * (g - 0.5) - 0.6)))).astype(int)
    return X / np.linalg.norm(X, axis=1).max(), y, g


def _error(clf, X, y):
    return float(np.mean(np.where(y == 1, 1.0 - clf.predict_proba(X)[:, 1], clf.predict_proba(X)[:, 1])))


# ------------------------------------------------------------------ an empty declared group
def test_an_empty_declared_group_is_dropped_at_epsilon_inf_and_named():
    """Before: its constraints compared group 0 with a rate 0/1 and forced the constant classifier."""
    X, y, g = _data(2000)
    kw = dict(epsilon=math.inf, delta=1e-6, gamma=0.05, x_norm_bound=1.0)
    with pytest.warns(EmptyGroupWarning, match=r"'absent'.*dropped"):
        with_empty = DPExponentiatedGradient(groups=[0, 1, "absent"], **kw).fit(X, y, sensitive_features=g)
    plain = DPExponentiatedGradient(groups=[0, 1], **kw).fit(X, y, sensitive_features=g)
    constant = min(y.mean(), 1 - y.mean())
    assert _error(plain, X, y) < constant - 0.1  # the task is learnable
    assert _error(with_empty, X, y) == pytest.approx(_error(plain, X, y), abs=0.01)
    assert np.all(with_empty.lambda_[1] == 0.0)  # the empty group's multipliers stay 0


def test_an_empty_declared_group_at_a_finite_epsilon_is_named_not_the_generic_warning():
    X, y, g = _data(4000)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        clf = DPExponentiatedGradient(epsilon=2.0, delta=1e-6, gamma=0.05, x_norm_bound=1.0, groups=[0, 1, 2],
                                      random_state=0).fit(X, y, sensitive_features=g)
    empty = [w for w in caught if issubclass(w.category, EmptyGroupWarning)]
    assert len(empty) == 1 and "group(s) 2 " in str(empty[0].message)
    assert not [w for w in caught if issubclass(w.category, SmallBudgetWarning)]
    assert clf.fallback_ is None and _error(clf, X, y) < min(y.mean(), 1 - y.mean()) - 0.1


# ------------------------------------------------------------------ never worse than the constant
def test_the_fallback_is_the_documented_rule_on_the_games_own_output():
    """For each seed: the default's choice is exactly err(Q) + 2 sqrt(p / m) >= err(c), Q the fallback=None fit."""
    X, y, g = _data(1000, seed=2, n_groups=4)
    kw = dict(epsilon=2.5, delta=1e-6, gamma=0.05, x_norm_bound=1.0, groups=[0, 1, 2, 3], n_iter=30)
    m, label = y.size, int(y.mean() > 0.5)
    outcomes = set()
    for seed in range(6):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            raw = DPExponentiatedGradient(fallback=None, random_state=seed, **kw).fit(X, y, sensitive_features=g)
            default = DPExponentiatedGradient(random_state=seed, **kw).fit(X, y, sensitive_features=g)
        p = raw.predict_proba(X)[:, 1]
        err = float(np.mean(np.where(y == 1, 1 - p, p)))
        falls_back = err + 2.0 * math.sqrt(np.mean(np.abs(p - label)) / m) >= min(y.mean(), 1 - y.mean())
        assert (default.fallback_ == "constant") == falls_back
        assert (constant_fallback(err, p, y) is not None) == falls_back
        fallback_warnings = [w for w in caught if issubclass(w.category, ConstantFallbackWarning)]
        assert len(fallback_warnings) == int(falls_back)
        if falls_back:
            assert np.all(default.predict(X) == label)
            assert _error(default, X, y) == pytest.approx(min(y.mean(), 1 - y.mean()))
            assert "always predicting" in str(fallback_warnings[0].message)
        else:  # the fallback draws no noise: the same seed, the same output
            np.testing.assert_array_equal(default.coef_, raw.coef_)
        assert default.privacy_spent_ == raw.privacy_spent_
        outcomes.add(falls_back)
    assert outcomes == {True, False}  # both branches are exercised


def test_a_fit_whose_noise_dominates_returns_the_constant_and_says_what_budget_helps():
    X, y, g = _data(400, seed=3, n_groups=2)
    with pytest.warns(ConstantFallbackWarning, match=r"epsilon of about [0-9.]+ .*times as many training rows"):
        clf = DPExponentiatedGradient(epsilon=0.5, x_norm_bound=1.0, groups=[0, 1], random_state=0).fit(
            X, y, sensitive_features=g)
    assert clf.fallback_ == "constant" and clf.best_iter_ == 0 and clf.coef_.shape == (1, X.shape[1] + 1)
    assert issubclass(ConstantFallbackWarning, SmallBudgetWarning)


class _ReplayNoise(NoiseSource):
    """Seeded noise that records every Gaussian release, or replays the recorded ones (identical released values)."""

    def __init__(self, seed, replay=None):
        self.inner, self.replay, self.recorded = SeededNoise(seed), None if replay is None else list(replay), []

    def gaussian(self, values, scale):
        if self.replay is None:
            out = self.inner.gaussian(values, scale)
            self.recorded.append((scale, out.copy()))
            return out
        recorded_scale, out = self.replay.pop(0)
        assert recorded_scale == scale and out.shape == np.shape(values)  # scales are public too
        return out.copy()

    def laplace(self, values, scale):
        return self.inner.laplace(values, scale)

    def discrete_laplace(self, values, scale):
        return self.inner.discrete_laplace(values, scale)

    def uniform(self, shape):
        return self.inner.uniform(shape)

    def noisy_argmax_gumbel(self, scores, scale):
        return self.inner.noisy_argmax_gumbel(scores, scale)


@pytest.mark.parametrize(("epsilon", "falls_back"), [(0.3, True), (5.0, False)])
def test_the_fallback_and_the_dropped_groups_are_post_processing_of_the_releases(epsilon, falls_back):
    """Under identical released values, any change of the groups (one row, all rows) gives the identical choice."""
    X, y, g = _data(500, seed=6, n_groups=3)
    kw = dict(epsilon=epsilon, delta=1e-6, gamma=0.05, x_norm_bound=1.0, groups=[0, 1, 2, 3], n_iter=20)

    def fit(groups, source):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            clf = DPExponentiatedGradient(random_state=source, **kw).fit(X, y, sensitive_features=groups)
        return clf, sorted(str(w.message) for w in caught if issubclass(w.category, EmptyGroupWarning))

    source = _ReplayNoise(0)
    clf, empty = fit(g, source)
    assert (clf.fallback_ == "constant") == falls_back and len(empty) == 1 and "3 have no training row" in empty[0]
    for neighbour in (np.where(np.arange(g.size) == 7, (g + 1) % 3, g), (g + 1) % 3, np.zeros_like(g)):
        replay = _ReplayNoise(0, replay=source.recorded)
        other, other_empty = fit(neighbour, replay)
        assert not replay.replay  # every release was replayed
        assert other.fallback_ == clf.fallback_ and other_empty == empty
        np.testing.assert_array_equal(other.coef_, clf.coef_)


# ------------------------------------------------------------------ defaults for delta and gamma
def test_delta_and_gamma_have_defaults_from_public_facts():
    X, y, g = _data(800)
    clf = DPExponentiatedGradient(epsilon=1.0, x_norm_bound=1.0, groups=[0, 1], random_state=0)
    assert clf.planned_charge().delta == 1e-6  # the parameters alone fix the charge
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SmallBudgetWarning)
        clf.fit(X, y, sensitive_features=g)
    assert clf.delta_ == 1e-6 and clf.privacy_spent_["delta"] == 1e-6
    assert clf.gamma_ == pytest.approx(max(0.05, math.sqrt(2 / 800)))  # sqrt(|A| / m) = .05: the sampling resolution
    small = DPExponentiatedGradient(epsilon=math.inf, groups=[0, 1, 2, 3]).fit(X[:400], y[:400],
                                                                              sensitive_features=g[:400] * 2)
    assert small.gamma_ == pytest.approx(0.1)  # sqrt(4 / 400)


# ------------------------------------------------------------------ epsilon = inf with 4 groups
def test_epsilon_inf_with_four_groups_reaches_the_gap_target_or_warns():
    X, y, g = _data(2000, seed=3, n_groups=4)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        clf = DPExponentiatedGradient(epsilon=math.inf, gamma=0.02).fit(X, y, sensitive_features=g)
    assert clf.gap_ <= clf.nu_ and clf.eta_ == pytest.approx(2.0 / 4)
    assert not [w for w in caught if issubclass(w.category, ConvergenceWarning) and "duality gap" in str(w.message)]
    with pytest.warns(ConvergenceWarning, match=r"duality gap .* above the target nu"):
        short = DPExponentiatedGradient(epsilon=math.inf, gamma=0.02, n_iter=5, eta=0.01).fit(
            X, y, sensitive_features=g)
    assert short.gap_ > short.nu_
    with pytest.warns(PrivacyLeakWarning):
        DPExponentiatedGradient(epsilon=math.inf, gamma=0.02, n_iter=5, eta=0.01).fit(X, y, sensitive_features=g)


# ------------------------------------------------------------------ the weighted count coordinate
class _RecordingNoise(NoiseSource):
    """Seeded noise that records every Gaussian release's exact input."""

    def __init__(self, seed):
        self.inner, self.released = SeededNoise(seed), []

    def laplace(self, values, scale):
        return self.inner.laplace(values, scale)

    def gaussian(self, values, scale):
        self.released.append((np.array(values, dtype=float), scale))
        return self.inner.gaussian(values, scale)

    def discrete_laplace(self, values, scale):
        return self.inner.discrete_laplace(values, scale)

    def uniform(self, shape):
        return self.inner.uniform(shape)

    def noisy_argmax_gumbel(self, scores, scale):
        return self.inner.noisy_argmax_gumbel(scores, scale)


def test_the_weighted_cell_sums_move_by_exactly_their_sensitivity_between_neighbours():
    X, y, g = _data(400, seed=4)
    X = 6.0 * X  # every row within the declared bound 6: the count's weight is 3
    row = int(np.argmax(np.linalg.norm(X, axis=1)))
    neighbour = g.copy()
    neighbour[row] = 1 - neighbour[row]
    kw = dict(epsilon=2.0, delta=1e-5, gamma=0.05, x_norm_bound=6.0, groups=[0, 1], n_iter=2, fallback=None)
    sources = [_RecordingNoise(5), _RecordingNoise(5)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for source, groups in zip(sources, (g, neighbour), strict=True):
            DPExponentiatedGradient(random_state=source, **kw).fit(X, y, sensitive_features=groups)
    (cells_a, scale_a), (cells_b, scale_b) = sources[0].released[0], sources[1].released[0]
    assert scale_a == scale_b and reductions_oracle.count_weight(6.0) == 3.0
    shift = cells_a - cells_b
    assert np.linalg.norm(shift) == pytest.approx(reductions_oracle.cell_sum_sensitivity(6.0))  # attained
    assert np.abs(shift[..., -1]).max() == pytest.approx(3.0)  # the count moves by the weight
    assert reductions_oracle.cell_sum_sensitivity(1.0) == pytest.approx(2.0)  # R <= 2: the plain sums, as before


# ------------------------------------------------------------------ FairnessSlackWarning only when it matters
def test_fairness_slack_warning_only_when_the_noise_exceeds_the_sampling_resolution():
    """gamma = 0 (the default): the old rule (slack > gamma) warned on every fit at a finite epsilon."""
    big_X, big_y, big_g = make_classification(30000, random_state=0)
    small_X, small_y, small_g = make_classification(400, random_state=0)
    for (X, y, g), warns in (((big_X, big_y, big_g), False), ((small_X, small_y, small_g), True)):
        base = LogisticRegression().fit(X, y)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            post = DPEqualizedOddsPostProcessor(base, epsilon=1.0, groups=[0, 1], random_state=0).fit(
                X, y, sensitive_features=g)
        fired = [w for w in caught if issubclass(w.category, FairnessSlackWarning)]
        assert bool(fired) == warns, (post.noise_slack_, post.guaranteed_violation_)
        assert post.noise_slack_ > 0  # the old rule (guaranteed_violation_ - gamma > gamma = 0) fired on both


def test_a_aware_the_constant_is_one_more_candidate_of_the_charged_exponential_mechanism():
    """A-aware the prefixes' errors read A: the constant competes inside the same exponential mechanism, and the
    warning prints no training error (private there)."""
    X, y, g = make_classification(600, n_features=3, random_state=1)
    X = X / np.linalg.norm(X, axis=1).max()
    kw = dict(delta=1e-5, gamma=0.05, x_norm_bound=1.0, groups=[0, 1], use_sensitive_at_test_time=True, random_state=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        clf = DPExponentiatedGradient(epsilon=4.0, **kw).fit(X, y, sensitive_features=g)
    assert clf.fallback_ == "constant" and clf.epsilon_selection_ > 0  # the paper's oracle at 600 rows: no signal
    assert np.unique(clf.predict(X, sensitive_features=g)).tolist() == [int(y.mean() > 0.5)]
    message = str(next(w.message for w in caught if issubclass(w.category, ConstantFallbackWarning)))
    assert "exponential mechanism" in message and "training error" not in message
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rich = DPExponentiatedGradient(epsilon=1e6, n_iter=30, **kw).fit(X, y, sensitive_features=g)
    assert rich.fallback_ is None and rich.best_iter_ >= 1
