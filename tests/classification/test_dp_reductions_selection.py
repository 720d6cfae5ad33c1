"""DPExponentiatedGradient's best-prefix selection reads the data only through released or charged values.

White-box, identical-release neighbours: a noise source records every Laplace release of a fit on ``D`` and replays
exactly those released values in a fit on ``D'`` (one row's group changed).  Whatever then differs between the two
fits was read off ``A`` without the recorded noise; it must be the output of a charged mechanism whose law moves by
at most its own epsilon (``epsilon_selection_``), never a deterministic choice.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy.special import log_softmax

from dpfair.classification import DPExponentiatedGradient
from dpfair.datasets import make_classification
from dpfair.privacy import PrivacyBudget
from dpfair.privacy.noise import NoiseSource, SeededNoise


class ReplayNoise(NoiseSource):
    """Seeded noise that records every Laplace release, or replays recorded releases (identical released values)."""

    def __init__(self, seed: int, replay: list | None = None) -> None:
        self.inner = SeededNoise(seed)
        self.replay = None if replay is None else list(replay)
        self.recorded: list = []
        self.selections: list = []  # (scores, scale) of every exponential-mechanism draw

    def laplace(self, values, scale):
        if self.replay is None:
            out = self.inner.laplace(values, scale)
            self.recorded.append((scale, out.copy()))
            return out
        recorded_scale, out = self.replay.pop(0)
        # the noise scales are read off released values only, so they are identical too
        assert recorded_scale == scale and out.shape == np.shape(values)
        return out.copy()

    def gaussian(self, values, scale):  # the statistics oracle's releases, recorded and replayed alike
        if self.replay is None:
            out = self.inner.gaussian(values, scale)
            self.recorded.append((scale, out.copy()))
            return out
        recorded_scale, out = self.replay.pop(0)
        assert recorded_scale == scale and out.shape == np.shape(values)
        return out.copy()

    def discrete_laplace(self, values, scale):
        return self.inner.discrete_laplace(values, scale)

    def uniform(self, shape):
        return self.inner.uniform(shape)

    def noisy_argmax_gumbel(self, scores, scale):
        self.selections.append((np.array(scores, dtype=float), float(scale)))
        return self.inner.noisy_argmax_gumbel(scores, scale)


# a setting where the old selection's argmin moved with single rows' A (rows 33, 39, 52, 58: best_iter_ 17 -> 18)
X, Y, G = make_classification(200, n_features=2, random_state=3)
X = X / np.linalg.norm(X, axis=1).max()
ROWS = (33, 39, 52, 58, 0, 1)
KW = dict(epsilon=1e6, delta=1e-5, gamma=0.02, x_norm_bound=1.0, n_iter=30, groups=[0, 1])


def _fit(groups, source, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # seeded noise, convergence
        return DPExponentiatedGradient(random_state=source, **{**KW, **kw}).fit(X, Y, sensitive_features=groups)


def _selection_law(clf, source):
    """The log-probabilities of the chosen prefix given the released values: the mechanism's, or a point mass."""
    if source.selections:
        scores, scale = source.selections[-1]
        return log_softmax(scores / scale)  # P(t) ~ exp(score_t / scale) (Gumbel-max)
    law = np.full(clf.n_iter_, -np.inf)
    law[clf.best_iter_ - 1] = 0.0
    return law


def _max_log_ratio(log_p, log_q):
    both_impossible = np.isneginf(log_p) & np.isneginf(log_q)
    with np.errstate(invalid="ignore"):
        return float(np.max(np.abs(log_p - log_q), initial=0.0, where=~both_impossible))


def test_a_aware_best_prefix_selection_moves_by_at_most_its_charged_epsilon_under_identical_releases():
    """Before the private choice: ``err_sum += game.error(h)`` read A (in the design matrix) exactly, and the argmin moved
    with one row's A while every released value was identical (claimed cost of the choice: 0)."""
    source = ReplayNoise(0)
    clf = _fit(G, source, use_sensitive_at_test_time=True)
    claimed = getattr(clf, "epsilon_selection_", 0.0)  # the choice's own epsilon (0: "post-processing")
    law = _selection_law(clf, source)
    for row in ROWS:
        neighbour = G.copy()
        neighbour[row] = 1 - neighbour[row]
        replay = ReplayNoise(0, replay=source.recorded)
        other = _fit(neighbour, replay, use_sensitive_at_test_time=True)
        assert not replay.replay  # every release was replayed
        np.testing.assert_array_equal(other.coef_[: min(other.best_iter_, clf.best_iter_)],
                                      clf.coef_[: min(other.best_iter_, clf.best_iter_)])
        assert _max_log_ratio(law, _selection_law(other, replay)) <= claimed + 1e-9, row
        if replay.selections:  # the exponential mechanism's scores move by at most their declared sensitivity 1/m
            assert np.abs(replay.selections[-1][0] - source.selections[-1][0]).max() <= 1.0 / X.shape[0] + 1e-12
    assert 0.0 < claimed < KW["epsilon"]


@pytest.mark.parametrize("oracle", ["paper", "statistics"])
def test_a_blind_best_prefix_selection_is_post_processing_of_the_releases(oracle):
    """A-blind: h(x) and its training error are functions of public X, y and released values only (verified); with
    the statistics oracle every best response, the denominators and the noise-to-signal ratios too."""
    source = ReplayNoise(0)
    clf = _fit(G, source, oracle=oracle)
    assert clf.epsilon_selection_ == 0.0 and not source.selections
    for neighbour in [np.where(np.arange(G.size) == row, 1 - G, G) for row in ROWS] + [1 - G, np.zeros_like(G)]:
        replay = ReplayNoise(0, replay=source.recorded)
        other = _fit(neighbour, replay, oracle=oracle)
        assert not replay.replay  # every release was replayed
        assert other.best_iter_ == clf.best_iter_ and not replay.selections
        assert other.noise_to_signal_ == clf.noise_to_signal_
        np.testing.assert_array_equal(other.coef_, clf.coef_)
        np.testing.assert_array_equal(other.lambda_, clf.lambda_)


def test_a_aware_fit_with_secure_noise_charges_the_selection_inside_epsilon_once():
    X_, y_, g_ = make_classification(600, n_features=3, random_state=1)
    X_ = X_ / np.linalg.norm(X_, axis=1).max()
    budget = PrivacyBudget(10.0, 1e-3, neighbouring="change_attribute")
    clf = DPExponentiatedGradient(epsilon=4.0, delta=1e-5, gamma=0.05, x_norm_bound=1.0, groups=[0, 1],
                                  use_sensitive_at_test_time=True, budget=budget)  # secure noise, selection="best"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf.fit(X_, y_, sensitive_features=g_)
    assert len(budget.ledger) == 1 and budget.spent()[0] == pytest.approx(4.0)
    # best_iter_ 0: the exponential mechanism chose the constant classifier (fallback="constant"), one more candidate
    assert clf.privacy_spent_["epsilon"] == 4.0 and 0 <= clf.best_iter_ <= clf.n_iter_
    assert (clf.best_iter_ == 0) == (clf.fallback_ == "constant")
    assert clf.epsilon_selection_ == pytest.approx(4.0 * 0.1 / 3)  # a third of the one-off share
    assert "exponential mechanism" in clf.privacy_spent_["protects"]
    average = DPExponentiatedGradient(epsilon=4.0, delta=1e-5, gamma=0.05, x_norm_bound=1.0, groups=[0, 1],
                                      use_sensitive_at_test_time=True, selection="average")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        average.fit(X_, y_, sensitive_features=g_)
    assert average.epsilon_selection_ == 0.0 and average.best_iter_ == average.n_iter_
    with pytest.warns(Warning):  # epsilon = inf: the exact argmin, no mechanism
        exact = DPExponentiatedGradient(epsilon=math.inf, delta=1e-5, gamma=0.05, n_iter=20,
                                        use_sensitive_at_test_time=True).fit(X_, y_, sensitive_features=g_)
    assert exact.epsilon_selection_ == 0.0


@pytest.mark.parametrize("aware", [True, False])
def test_statistics_that_would_overflow_their_release_are_refused_before_the_charge(aware):
    """No raise after the charge.  Rows at a huge declared bound make Z^T Z (A-aware) or the
    oracle's per-round moment overflow; the releases used to refuse them after the budget was charged."""
    rng = np.random.default_rng(0)
    m, scale = 400, 1e154 if aware else 1e155
    X_ = rng.choice([-1.0, 1.0], size=(m, 2)) * scale
    y_ = np.arange(m) % 2
    g_ = (np.arange(m) // 2) % 2
    budget = PrivacyBudget(math.inf, 0.5, neighbouring="change_attribute")
    kw = dict(epsilon=1e100 if aware else 1e300, delta=1e-5, gamma=0.05, x_l1_bound=[scale, scale], n_iter=2,
              groups=[0, 1], use_sensitive_at_test_time=aware, budget=budget)
    if not aware:
        kw.update(bound_B=1e150)
    with pytest.raises(ValueError, match="overflow") as info:
        DPExponentiatedGradient(**kw).fit(X_, y_, sensitive_features=g_)
    assert not budget.ledger  # refused before the charge
    assert "x_l1_bound" in str(info.value)
