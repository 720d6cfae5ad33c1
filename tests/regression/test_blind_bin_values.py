"""BlindFairRegressionPostProcessor with declared output points (``bin_values``): the program's grid and its cost."""

from __future__ import annotations

import math

import numpy as np
import pytest
from test_blind import _reference_lp, _rows

from dpfair.privacy import PrivacyBudget
from dpfair.regression import BlindFairRegressionPostProcessor
from dpfair.regression._blind_lp import membership_cell_index, membership_lattice

pytestmark = pytest.mark.filterwarnings("ignore::dpfair.privacy.PrivacyLeakWarning")

# far from the midpoints of 6 bins on [0, 2] (1/6, 1/2, ...), each still inside its bin
VALUES = np.array([0.02, 0.62, 0.70, 1.30, 1.34, 1.98])


def _pp(**kwargs):
    args = {"epsilon": 1.0, "n_bins": 6, "alpha": 0.1, "bounds": (0.0, 2.0), "groups": [0, 1, 2], "random_state": 0,
            "membership_bins": 2, **kwargs}
    return BlindFairRegressionPostProcessor(**args)


def _scaled_rows(seed=3):
    X, groups = _rows(240, n_groups=3, seed=seed)
    X[:, 0] *= 2.0  # outputs on [0, 2], so that the unit grid and the output units differ
    return X, groups


def _exact_table(X, groups, k=6, membership_bins=2, width=2.0):
    """The exact (group, cell) table by brute force: score bin of width ``width / k``, the lattice's nearest point."""
    lattice = membership_lattice(3, membership_bins)
    score = np.minimum(X[:, 0] / width * k, k - 1).astype(int)
    cells = score * lattice.shape[0] + membership_cell_index(X[:, 1:], membership_bins)
    table = np.zeros((3, k * lattice.shape[0]))
    np.add.at(table, (groups, cells), 1.0)
    return table, np.arange(table.shape[1]) // lattice.shape[0]


@pytest.mark.parametrize("alpha", [0.0, 0.1])
def test_epsilon_inf_solves_the_reference_lp_on_the_declared_points(alpha):
    """objective_ is the direct LP's optimum with the declared points as the grid (output units, not midpoints)."""
    X, groups = _scaled_rows()
    pp = _pp(epsilon=math.inf, alpha=alpha, bin_values=VALUES).fit(X, sensitive_features=groups)
    table, cell_bin = _exact_table(X, groups)
    weights = table.sum(axis=1)
    reference = _reference_lp(table / weights[:, None], weights, cell_bin, VALUES, alpha)
    assert pp.objective_ == pytest.approx(reference, abs=1e-9)
    midpoints = (np.arange(6) + 0.5) / 6 * 2.0  # the test discriminates: the midpoints' optimum is another number
    assert abs(_reference_lp(table / weights[:, None], weights, cell_bin, midpoints, alpha) - reference) > 1e-3
    np.testing.assert_array_equal(pp.grid_, VALUES)
    assert set(np.unique(pp.predict(X, random_state=0))) <= set(VALUES)
    # the objective is the map's expected squared move between the declared points, on the exact table
    mass = table.sum(axis=0) / table.sum()
    moves = (VALUES[cell_bin][:, None] - VALUES[None, :]) ** 2
    assert pp.objective_ == pytest.approx(float(mass @ (pp.transport_ * moves).sum(axis=1)), abs=1e-9)
    # and the map is fair on the rows at the declared points (KS over the same grid)
    dist = pp.output_distribution(X)
    cdfs = np.array([np.cumsum(dist[groups == a].mean(axis=0)) for a in range(3)])[:, :-1]
    assert (cdfs.max(axis=0) - cdfs.min(axis=0)).max() <= alpha + 1e-7


def test_refit_alpha_keeps_the_declared_points():
    X, groups = _scaled_rows(seed=4)
    pp = _pp(epsilon=math.inf, alpha=0.2, bin_values=VALUES).fit(X, sensitive_features=groups)
    pp.refit_alpha(0.0)
    table, cell_bin = _exact_table(X, groups)
    weights = table.sum(axis=1)
    reference = _reference_lp(table / weights[:, None], weights, cell_bin, VALUES, 0.0)
    assert pp.objective_ == pytest.approx(reference, abs=1e-9)


def test_the_midpoints_declared_are_the_default():
    X, groups = _scaled_rows(seed=5)
    default = _pp().fit(X, sensitive_features=groups)
    declared = _pp(bin_values=(np.arange(6) + 0.5) / 6 * 2.0).fit(X, sensitive_features=groups)
    np.testing.assert_allclose(declared.grid_, default.grid_)
    np.testing.assert_allclose(declared.transport_, default.transport_, atol=1e-7)
    assert declared.privacy_spent_ == default.privacy_spent_


def test_the_points_change_nothing_in_the_release():
    """Declared points are public: the same seeded release and the same single charge, whatever the points."""
    X, groups = _scaled_rows(seed=6)
    budgets = [PrivacyBudget(1.0), PrivacyBudget(1.0)]
    default = _pp(budget=budgets[0]).fit(X, sensitive_features=groups)
    declared = _pp(bin_values=VALUES, budget=budgets[1]).fit(X, sensitive_features=groups)
    np.testing.assert_array_equal(declared.noisy_table_, default.noisy_table_)
    assert budgets[0].spent() == budgets[1].spent() == (1.0, 0.0)
    assert declared.privacy_spent_["epsilon"] == 1.0


@pytest.mark.parametrize(("values", "bounds", "match"), [
    (VALUES[:5], (0.0, 2.0), "one point per score bin"),
    (VALUES[::-1], (0.0, 2.0), "strictly increasing"),
    (np.r_[VALUES[:5], 2.5], (0.0, 2.0), "within bounds"),
    (np.r_[np.nan, VALUES[1:]], (0.0, 2.0), "bin_values"),
    (VALUES, None, "needs declared bounds"),
])
def test_bad_points_are_refused_before_the_charge(values, bounds, match):
    X, groups = _scaled_rows()
    budget = PrivacyBudget(5.0)
    with pytest.raises(ValueError, match=match):
        _pp(bin_values=values, bounds=bounds, budget=budget).fit(X, sensitive_features=groups)
    assert budget.spent() == (0.0, 0.0)
