"""BlindFairRegressionPostProcessor: pooling of the cells at the noise level, and the noise margin of its program."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from tests.regression.test_blind import _pp, _rows  # the same synthetic rows and estimator factory

from dpfair.privacy import PrivacyBudget, PrivacyLeakWarning
from dpfair.regression._blind_lp import max_block_sum_bound, noise_margin, pool_noisy_cells


def test_pool_noisy_cells_pools_within_a_score_bin_only_and_nothing_at_threshold_zero():
    # 3 score bins x 3 membership cells, two groups
    table = np.array([[5, 0.1, 0.2, 0.1, 0.1, 0.1, 3, 2, 0.5],
                      [1, 0.0, 0.0, 0.0, 0.0, 0.1, 1, 1, 0.6]])
    pooled_of, representative = pool_noisy_cells(table, 3, 1.0)
    # bin 0: the two light cells (0.3 together) join the heavy one; bin 1: all light, one cell; bin 2: all kept
    np.testing.assert_array_equal(pooled_of, [0, 0, 0, 1, 1, 1, 2, 3, 4])
    np.testing.assert_array_equal(representative // 3, [0, 1, 2, 2, 2])
    identity, representative = pool_noisy_cells(table, 3, 0.0)
    np.testing.assert_array_equal(identity, np.arange(9))
    np.testing.assert_array_equal(representative, np.arange(9))
    # light cells that are heavy enough together form a pool of their own, ordered at its first cell
    pooled_of, representative = pool_noisy_cells(np.array([[0.6, 5.0, 0.6]]), 1, 1.0)
    np.testing.assert_array_equal(pooled_of, [0, 1, 0])
    np.testing.assert_array_equal(representative, [0, 1])


def test_max_block_sum_bound_covers_simulated_absolute_laplace_sums():
    rng = np.random.default_rng(0)
    sums = np.abs(rng.laplace(0, 0.5, size=(20_000, 30, 5))).sum(axis=2).max(axis=1)
    bound = max_block_sum_bound(5, 30, 0.5, 0.05)
    assert np.mean(sums > bound) <= 0.05 and bound < 2 * np.quantile(sums, 0.95)
    assert max_block_sum_bound(5, 30, 0.0, 0.05) == 0.0


@pytest.mark.filterwarnings("ignore::dpfair.privacy.SeededNoiseWarning")
def test_pooling_solves_light_cells_together_and_every_cell_maps_like_its_pool():
    X, groups = _rows(300, seed=1)
    pp = _pp(n_bins=8, membership_bins=4, epsilon=0.5).fit(X, sensitive_features=groups)
    n_pooled = pp.cell_pmfs_.shape[1]
    assert n_pooled < pp.noisy_table_.shape[1]  # small n, many cells: some are at the noise level
    np.testing.assert_array_equal(np.unique(pp.pooled_cell_), np.arange(n_pooled))
    for j in range(n_pooled):  # one map per pool, and a pool never spans two score bins
        members = np.flatnonzero(pp.pooled_cell_ == j)
        assert np.unique(members // pp.n_membership_cells_).size == 1
        np.testing.assert_allclose(pp.transport_[members], pp.transport_[members[:1]].repeat(members.size, axis=0))
    threshold = 3.0 * pp._noise_scale_ * math.sqrt(2 * 2)  # 3 standard deviations of a cell's total noise
    totals = pp.noisy_table_.sum(axis=0)
    for j in range(n_pooled):  # a cell on its own is above the threshold; a pool holds at most one such cell
        heavy = (totals[pp.pooled_cell_ == j] >= threshold).sum()
        assert heavy == 1 if (pp.pooled_cell_ == j).sum() == 1 else heavy <= 1
    unpooled = _pp(n_bins=8, membership_bins=4, epsilon=0.5, pool_threshold=0).fit(X, sensitive_features=groups)
    np.testing.assert_array_equal(unpooled.pooled_cell_, np.arange(unpooled.noisy_table_.shape[1]))
    np.testing.assert_array_equal(unpooled.noisy_table_, pp.noisy_table_)  # the same release either way


def test_nothing_is_pooled_and_no_margin_is_taken_at_epsilon_inf():
    X, groups = _rows(200, seed=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        pp = _pp(epsilon=math.inf, n_bins=8, membership_bins=4, noise_margin=2.0).fit(X, sensitive_features=groups)
        plain = _pp(epsilon=math.inf, n_bins=8, membership_bins=4, pool_threshold=0).fit(X, sensitive_features=groups)
    np.testing.assert_array_equal(pp.pooled_cell_, np.arange(pp.noisy_table_.shape[1]))
    assert pp.margin_ == 0.0 and pp.guaranteed_violation_ == pp.alpha_
    np.testing.assert_allclose(pp.transport_, plain.transport_)
    assert pp.objective_ == pytest.approx(plain.objective_)


@pytest.mark.filterwarnings("ignore::dpfair.privacy.SeededNoiseWarning")
def test_the_noise_margin_is_its_multiple_of_the_released_noise_and_the_program_is_solved_below_alpha():
    X, groups = _rows(2000, seed=3)
    pp = _pp(n_bins=6, alpha=0.2, noise_margin=0.5).fit(X, sensitive_features=groups)
    weights = np.sort(pp.group_weights_)
    expected = 0.5 * pp._noise_scale_ * math.sqrt(pp.cell_pmfs_.shape[1]) * math.sqrt(
        1 / weights[0] ** 2 + 1 / weights[1] ** 2)
    assert pp.margin_ == pytest.approx(expected) and 0 < pp.margin_ < 0.2
    assert noise_margin(0.5, pp._noise_scale_, pp.cell_pmfs_.shape[1], pp.group_weights_) == pytest.approx(expected)
    # the same release solved at alpha - margin without the margin: the same optimum (maps may tie)
    below = _pp(n_bins=6, alpha=0.2 - pp.margin_).fit(X, sensitive_features=groups)
    assert pp.objective_ == pytest.approx(below.objective_, abs=1e-9)
    assert pp.objective_ > _pp(n_bins=6, alpha=0.2).fit(X, sensitive_features=groups).objective_
    assert pp.alpha_ == 0.2
    # refit_alpha keeps the multiple; a margin above alpha solves the exactly fair program
    pp.refit_alpha(expected / 2)
    assert pp.margin_ == pytest.approx(expected)
    exact_fair = _pp(n_bins=6, alpha=0.0).fit(X, sensitive_features=groups)
    assert pp.objective_ == pytest.approx(exact_fair.objective_, abs=1e-9)
    assert noise_margin(0.5, 0.0, 10, pp.group_weights_) == 0.0
    assert noise_margin(0.5, 0.01, 10, np.array([0.5, 0.0])) == 0.0  # one group left: nothing to compare


@pytest.mark.parametrize(("name", "value", "error"), [
    ("pool_threshold", -1.0, ValueError), ("pool_threshold", math.inf, ValueError), ("pool_threshold", True, TypeError),
    ("noise_margin", -0.1, ValueError), ("noise_margin", "1", TypeError),
])
def test_invalid_pooling_and_margin_parameters_are_refused_before_the_charge(name, value, error):
    X, groups = _rows(100)
    budget = PrivacyBudget(1.0)
    with pytest.raises(error, match=name):
        _pp(budget=budget, **{name: value}).fit(X, sensitive_features=groups)
    assert budget.spent() == (0.0, 0.0)


@pytest.mark.filterwarnings("ignore::dpfair.privacy.SeededNoiseWarning")
def test_the_guarantee_with_pooling_still_bounds_the_exact_ks_on_the_training_rows():
    X, groups = _rows(60_000, seed=6, signal=0.5)
    for seed in range(3):
        pp = _pp(n_bins=4, membership_bins=2, alpha=0.05, epsilon=1.0, random_state=seed).fit(
            X, sensitive_features=groups)
        dist = pp.output_distribution(X)
        cdfs = np.array([np.cumsum(dist[groups == a].mean(axis=0)) for a in range(2)])[:, :-1]
        assert pp.guaranteed_violation_ < 1.0
        assert np.abs(cdfs[0] - cdfs[1]).max() <= pp.guaranteed_violation_
