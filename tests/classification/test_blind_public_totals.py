"""DPBlindPostProcessor under the attribute relation: the public (cell, label) totals of its table.

Two groups: only group 1's fractions are released (sensitivity 1/m, half the Laplace scale of the full table);
any number of groups: the linear program reads the released table projected onto the public totals.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize
from sklearn.linear_model import LogisticRegression

from dpfair.classification import DPBlindPostProcessor
from dpfair.classification import blind_membership as membership_module
from dpfair.classification import blind_table as table_module
from dpfair.datasets import make_classification
from dpfair.privacy import audit_epsilon
from dpfair.privacy.noise import get_noise_source

pytestmark = pytest.mark.filterwarnings("ignore::dpfair.privacy.SeededNoiseWarning")


def _brute_projection(v: np.ndarray, total: float) -> np.ndarray:
    """argmin ||x - v||^2 over x >= 0, sum x = total, by a general-purpose solver."""
    result = minimize(lambda x: ((x - v) ** 2).sum(), np.full(v.size, total / v.size), jac=lambda x: 2 * (x - v),
                      bounds=[(0, None)] * v.size, constraints=[{"type": "eq", "fun": lambda x: x.sum() - total}],
                      method="SLSQP", options={"ftol": 1e-14, "maxiter": 500})
    return result.x


@pytest.mark.parametrize("n_groups", [1, 2, 3, 5])
def test_projection_onto_the_public_totals_matches_a_general_solver(n_groups):
    rng = np.random.default_rng(n_groups)
    q_tilde = rng.normal(0.02, 0.05, size=(6, n_groups, 2))
    totals = np.abs(rng.normal(0.05, 0.05, size=(6, 2)))
    totals[0, 0] = 0.0  # an empty (cell, label): every group gets 0
    projected = table_module.project_to_totals(q_tilde, totals)
    assert projected.shape == q_tilde.shape and projected.min() >= 0.0
    np.testing.assert_allclose(projected.sum(axis=1), totals, atol=1e-12)
    for c in range(6):
        for y in range(2):
            np.testing.assert_allclose(projected[c, :, y], _brute_projection(q_tilde[c, :, y], totals[c, y]),
                                       atol=1e-6)
    exact = np.abs(rng.normal(size=(4, n_groups, 2)))
    np.testing.assert_allclose(table_module.project_to_totals(exact, exact.sum(axis=1)), exact, atol=1e-15)


def _neighbours(m=400, seed=0):
    rng = np.random.default_rng(seed)
    s, cell, y, a = rng.integers(0, 3, m), rng.integers(0, 2, m), rng.integers(0, 2, m), rng.integers(0, 2, m)
    a_prime = a.copy()
    a_prime[-1] = 1 - a[-1]
    return s, cell, y, a, a_prime


def test_identical_noise_two_group_neighbours_differ_in_one_released_cell_by_one_over_m():
    s, cell, y, a, a_prime = _neighbours()
    m = y.size
    released = []
    for groups in (a, a_prime):
        q_hat = table_module.blind_joint_frequencies(s, cell, groups, y, 3, 2, 2)
        table = table_module.released_two_group_table(q_hat, m, 0.7, get_noise_source(5))
        np.testing.assert_allclose(table.sum(axis=1), q_hat.sum(axis=1), atol=1e-15)  # the public totals
        released.append(table[:, 1, :])
    difference = np.abs(released[0] - released[1])
    changed = np.flatnonzero(difference.ravel() > 1e-12)
    assert changed.size == 1  # group 1's fraction of the moved row's (cell, label), nothing else
    assert difference.ravel()[changed[0]] == pytest.approx(1.0 / m)  # the L1 sensitivity of the release


def _two_group_statistic(half_noise):
    s, cell, y, _, _ = _neighbours()
    m, epsilon = y.size, 1.0
    c, label = s[-1] * 2 + cell[-1], y[-1]

    def mechanism(groups, size, rng):
        q_hat = table_module.blind_joint_frequencies(s, cell, groups, y, 3, 2, 2)
        out = np.empty(size)
        for i in range(size):  # one release per draw, as the post-processor makes it
            table = table_module.released_two_group_table(q_hat, m, 2 * epsilon if half_noise else epsilon, rng)
            out[i] = m * table[c, 1, label]
        return out

    return mechanism


@pytest.mark.statistical
def test_privacy_audit_passes_on_the_two_group_release_and_catches_half_noise():
    _, _, _, a, a_prime = _neighbours()
    honest = audit_epsilon(_two_group_statistic(False), a, a_prime, n_samples=40_000, n_bins=30, random_state=1)
    mutant = audit_epsilon(_two_group_statistic(True), a, a_prime, n_samples=40_000, n_bins=30, random_state=1)
    assert honest.epsilon_lower_bound <= 1.0
    assert mutant.epsilon_lower_bound > 1.0


def test_the_two_group_release_has_the_scale_the_plan_margins_and_guarantee_read():
    q_hat = np.full((2000, 2, 2), 1.0 / 8000)
    table = table_module.released_two_group_table(q_hat, 1000, 0.5, get_noise_source(3))
    error = (table[:, 1, :] - q_hat[:, 1, :]) * 1000 * 0.5  # Lap(1) in units of 1 / (m epsilon)
    assert np.mean(np.abs(error)) == pytest.approx(1.0, rel=0.05)
    # the same scale as the full table's 2 / (m epsilon') at epsilon' = 2 epsilon
    assert table_module.table_noise_epsilon(0.5, 2, True) == 1.0
    assert table_module.table_noise_epsilon(0.5, 3, True) == 0.5
    assert table_module.table_noise_epsilon(0.5, 2, False) == 0.5


@pytest.mark.filterwarnings("ignore::dpfair.classification.FairnessSlackWarning")
def test_the_fit_releases_group_ones_share_and_plans_its_cells_from_the_halved_noise():
    X, y, g = make_classification(1400, disparity=1.5, random_state=0)
    base = LogisticRegression().fit(X, y)
    model = DPBlindPostProcessor(base, epsilon=1.0, groups=[0, 1], random_state=4).fit(X, y, sensitive_features=g)
    released = model.noisy_frequencies_
    # the groups of every (cell, label) sum to the public fraction of rows there: the labels' totals are exact
    np.testing.assert_allclose(released.sum(axis=(0, 1)), np.bincount(y, minlength=2) / y.size, atol=1e-12)
    assert released.sum(axis=1).min() >= -1e-12 and released.shape[0] == model.score_bins_ * model.membership_bins_
    planned = table_module.plan_cells(y.size, table_module.table_noise_epsilon(0.7, 2, True), 2)
    assert (model.score_bins_, model.membership_bins_) == planned
    assert planned != table_module.plan_cells(y.size, 0.7, 2)  # the halved noise affords a finer table here


def test_two_groups_get_three_membership_bins_at_a_finite_epsilon_and_four_at_infinity():
    assert table_module.plan_cells(1329, 1.4, 2) == (16, table_module.TWO_GROUP_MEMBERSHIP_BINS) == (16, 3)
    assert table_module.plan_cells(667, 0.7, 2) == (5, 3)  # MIN_CELLS // 3 score bins
    assert table_module.plan_cells(1329, float("inf"), 2) == (16, 4)
    assert table_module.plan_cells(1329, 1.4, 4)[1] == 4 and table_module.plan_cells(1329, 1.4, 1)[1] == 1


def test_identical_noise_two_group_membership_counts_differ_in_one_cluster_cell_by_one():
    rng = np.random.default_rng(2)
    clusters, y, a = rng.integers(0, 20, 500), rng.integers(0, 2, 500), rng.integers(0, 2, 500)
    a_prime = a.copy()
    a_prime[-1] = 1 - a[-1]
    noisy = []
    for groups in (a, a_prime):
        released = membership_module.released_cluster_counts(clusters, y, groups, 20, 2, 20.0, get_noise_source(7))
        exact = membership_module.cluster_counts(clusters, y, groups, 20, 2)
        np.testing.assert_allclose(released.sum(axis=2), exact.sum(axis=2), atol=1e-9)  # the public totals
        assert released.min() >= 0.0
        noisy.append(released)
    # a noise far below the counts (no clipping): only the moved row's (cluster, label) differs, by one row moved
    difference = noisy[1] - noisy[0]
    changed = np.argwhere(np.abs(difference).sum(axis=2) > 1e-9)
    assert changed.tolist() == [[int(clusters[-1]), int(y[-1])]]
    step = 1.0 if a[-1] == 0 else -1.0
    np.testing.assert_allclose(difference[clusters[-1], y[-1]], [-step, step], atol=1e-9)


def _membership_statistic(half_noise):
    rng = np.random.default_rng(2)
    clusters, y = rng.integers(0, 20, 300), rng.integers(0, 2, 300)

    def mechanism(groups, size, out_rng):
        noise = get_noise_source(out_rng)
        out = np.empty(size)
        for i in range(size):  # the function itself, one release per draw (half noise: called at twice epsilon)
            released = membership_module.released_cluster_counts(clusters, y, groups, 20, 2,
                                                                 2.0 if half_noise else 1.0, noise)
            out[i] = released[clusters[-1], y[-1], 1]  # the count the change moves
        return out

    return mechanism


@pytest.mark.statistical
def test_privacy_audit_passes_on_the_two_group_membership_counts_and_catches_half_noise():
    rng = np.random.default_rng(2)
    a = rng.integers(0, 2, 300)
    a[-1] = 0
    a_prime = a.copy()
    a_prime[-1] = 1
    honest = audit_epsilon(_membership_statistic(False), a, a_prime, n_samples=20_000, n_bins=20, random_state=1)
    mutant = audit_epsilon(_membership_statistic(True), a, a_prime, n_samples=20_000, n_bins=20, random_state=1)
    assert honest.epsilon_lower_bound <= 1.0
    assert mutant.epsilon_lower_bound > 1.0
