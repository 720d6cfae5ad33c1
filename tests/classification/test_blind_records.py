"""Whole rows private: the blind post-processor's table projected onto each group's released mass, and its gamma."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import brentq

from dpfair.classification import DPBlindPostProcessor
from dpfair.classification._blind_averaging import fit_blind_rule
from dpfair.classification._blind_records import (
    RECORDS_LOOSE_GAMMA,
    RECORDS_NOISE_SPLIT,
    RECORDS_QUIET_GAMMA,
    RECORDS_TIGHT_GAMMA,
    project_to_group_masses,
    records_gamma,
)
from dpfair.classification.blind_table import (
    BLIND_CONSTRAINTS,
    BLIND_LABEL_COUNT_TARGET_SD,
    label_count_epsilon,
    rate_margin_weights,
    rate_noise,
    solve_blind_lp,
)
from dpfair.datasets import make_classification
from dpfair.linear_model import DPLogisticRegression

pytestmark = pytest.mark.filterwarnings("ignore::dpfair.privacy.SeededNoiseWarning",
                                        "ignore::dpfair.classification.FairnessSlackWarning",
                                        "ignore::dpfair.classification.VacuousConstraintWarning",
                                        "ignore::dpfair.classification.SmallBudgetWarning",
                                        "ignore::dpfair.linear_model.NoiseDominatesWarning")

EO = BLIND_CONSTRAINTS["equalized_odds"]


def _projection_by_bisection(values: np.ndarray, total: float) -> np.ndarray:
    """The Euclidean projection onto {x >= 0, sum x = total} by its optimality condition x = max(v - s, 0)."""
    if total <= 0:
        return np.zeros_like(values)
    shift = brentq(lambda s: np.maximum(values - s, 0.0).sum() - total, values.min() - total - 1, values.max())
    return np.maximum(values - shift, 0.0)


def test_each_group_and_label_is_projected_onto_its_released_mass():
    rng = np.random.default_rng(0)
    q_tilde = rng.normal(0.002, 0.004, size=(12, 3, 2))
    q_tilde[:, 2, 0] -= 0.01  # a (group, label) whose released mass is negative: all zeros
    projected = project_to_group_masses(q_tilde)
    for a in range(3):
        for y in range(2):
            expected = _projection_by_bisection(q_tilde[:, a, y], q_tilde[:, a, y].sum())
            np.testing.assert_allclose(projected[:, a, y], expected, atol=1e-12)
    assert (projected >= 0).all() and not projected[:, 2, 0].any()


def test_the_projection_removes_the_noise_clipping_adds_to_a_small_group():
    """A group in 2 of 64 cells: clipping adds its 62 empty cells' positive noise; the projection keeps the mass."""
    rng = np.random.default_rng(1)
    exact = np.zeros((64, 2, 2))
    exact[:, 0, :] = 0.9 / 128
    exact[:2, 1, :] = 0.05 / 4
    scale = 2.0 / (10_000 * 0.3)
    clipped, projected = [], []
    for _ in range(50):
        released = exact + rng.laplace(0.0, scale, size=exact.shape)
        clipped.append(np.maximum(released, 0.0)[:, 1, 1].sum())
        projected.append(project_to_group_masses(released)[:, 1, 1].sum())
    assert abs(np.mean(projected) - 0.025) < 0.002  # unbiased: the released sum
    assert np.mean(clipped) > 0.025 + 0.5 * 62 * scale * 0.5  # about 62 b / 2 too much


def _table(small_mass: float, second_mass: float, n_cells: int = 16) -> np.ndarray:
    q = np.zeros((n_cells, 3, 2))
    q[:, 0, :] = 0.4 / n_cells
    q[:, 1, :] = second_mass / n_cells
    q[:, 2, :] = small_mass / n_cells
    return q


def test_the_tolerance_is_tight_exactly_when_the_second_noisiest_group_is_noisier_than_the_split():
    n_rows, epsilon, n_cells = 20_000, 0.4, 16
    # the mass at which a group's rate noise sqrt(2 C) b / mass equals the split
    at_split = np.sqrt(2.0 * n_cells) * (2.0 / (n_rows * epsilon)) / RECORDS_NOISE_SPLIT
    tiny = at_split / 50  # the noisiest group: alone it does not make the tolerance tight
    below = _table(tiny, at_split * 1.05, n_cells)  # each label of the second group holds this mass
    above = _table(tiny, at_split * 0.95, n_cells)
    noise = rate_noise(np.array([below[:, 1, 1].sum()]), n_cells, n_rows, epsilon)[0]
    assert noise < RECORDS_NOISE_SPLIT
    assert records_gamma(below, n_rows, epsilon, EO) == RECORDS_LOOSE_GAMMA
    assert records_gamma(above, n_rows, epsilon, EO) == RECORDS_TIGHT_GAMMA
    assert records_gamma(above, n_rows, float("inf"), EO) == RECORDS_QUIET_GAMMA  # no noise: every rate exact
    assert RECORDS_TIGHT_GAMMA < RECORDS_LOOSE_GAMMA


def test_whole_rows_the_program_reads_the_projected_table_and_returns_the_error_on_the_error_table():
    rng = np.random.default_rng(2)
    exact = rng.dirichlet(np.ones(24 * 2 * 2)).reshape(24, 2, 2)
    n_rows, epsilon = 5_000, 0.5
    released = exact + rng.laplace(0.0, 2.0 / (n_rows * epsilon), size=exact.shape)
    error_table = np.maximum(released, 0.0).sum(axis=1)
    active = np.ones((2, 2), dtype=bool)
    p, error = fit_blind_rule(released, error_table, False, n_rows, epsilon, 0.05, EO, active, 3, 0.5)
    projected = project_to_group_masses(released)
    margins = rate_margin_weights(projected, n_rows, epsilon, EO, 0.5)
    expected = solve_blind_lp(projected, projected.sum(axis=1), 0.05, EO, active, 3, margins)[0]
    np.testing.assert_allclose(p, expected, atol=1e-9)
    assert error == pytest.approx(p @ (error_table[:, 0] - error_table[:, 1]) + error_table[:, 1].sum())


def _records_fit(**kwargs):
    X, y, g = make_classification(1000, disparity=1.5, random_state=0)
    norm = float(np.linalg.norm(X, axis=1).max()) * 1.01
    base = DPLogisticRegression(epsilon=0.5, data_norm=norm, random_state=1)
    return DPBlindPostProcessor(base, epsilon=2.0, groups=[0, 1], data_norm=norm, prefit=False, random_state=2,
                                **kwargs).fit(X, y, sensitive_features=g)


def test_whole_rows_the_default_gamma_is_the_released_tables_and_a_declared_gamma_wins():
    default = _records_fit()
    table_epsilon = 2.0 * 0.7 - label_count_epsilon(1000, 2.0 * 0.7, BLIND_LABEL_COUNT_TARGET_SD)
    assert default.gamma is None
    assert default.gamma_ == records_gamma(default.noisy_frequencies_, 1000, table_epsilon, EO)
    declared = _records_fit(gamma=default.gamma_)
    np.testing.assert_array_equal(declared.probabilities_, default.probabilities_)
    assert _records_fit(gamma=0.01).gamma_ == 0.01
