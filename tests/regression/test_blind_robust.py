"""The robust band constraints of the blind program (``solve_blind_lp(margins=, steady=)``) against references."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize

from dpfair.regression._blind_lp import robust_margin_weights, solve_blind_lp


def _table(seed, n_groups=2, k=4, n_m=3):
    rng = np.random.default_rng(seed)
    n_cells = k * n_m
    table = rng.dirichlet(np.full(n_cells, 0.8), size=n_groups) + 1e-3  # every cell holds mass
    table /= table.sum(axis=1, keepdims=True)
    weights = rng.dirichlet(np.ones(n_groups))
    grid = np.sort(rng.uniform(0, 1, k))
    return table, weights, np.arange(n_cells) // n_m, grid, rng


def _robust_reference(cell_pmfs, weights, cell_bin, grid, alpha, margins):
    """The robust program written on the joint masses pi(c, l), dense, with the band centres and |.| variables."""
    n_groups, n_cells = cell_pmfs.shape
    k = grid.size
    n_cuts = k - 1
    mass = (weights / weights.sum()) @ cell_pmfs
    n_pi, n_u = n_cells * k, n_cells * n_cuts
    width = n_pi + n_cuts + n_u
    cost = np.zeros(width)
    cost[:n_pi] = ((grid[cell_bin][:, None] - grid[None, :]) ** 2).ravel()
    a_eq = np.zeros((n_cells, width))
    for c in range(n_cells):
        a_eq[c, c * k:(c + 1) * k] = 1.0

    def cdf_row(c, cut):  # T(c, cut) = sum_{j <= cut} pi(c, j) / mass(c)
        row = np.zeros(width)
        row[c * k:c * k + cut + 1] = 1.0 / mass[c]
        return row

    rows, rhs = [], []
    for cut in range(n_cuts):
        centre = np.zeros(width)
        centre[n_pi + cut] = 1.0
        charges = np.zeros((n_groups, width))
        for c in range(n_cells):
            u = np.zeros(width)
            u[n_pi + n_cuts + c * n_cuts + cut] = 1.0
            rows += [cdf_row(c, cut) - centre - u, centre - cdf_row(c, cut) - u]
            rhs += [0.0, 0.0]
            charges += margins[:, c][:, None] * u[None, :]
        for a in range(n_groups):
            group_cdf = sum(cell_pmfs[a, c] * cdf_row(c, cut) for c in range(n_cells))
            rows += [group_cdf - centre + charges[a], centre - group_cdf + charges[a]]
            rhs += [alpha / 2, alpha / 2]
    bounds = [(0, None)] * n_pi + [(0, 1)] * n_cuts + [(0, None)] * n_u
    result = optimize.linprog(cost, A_ub=np.array(rows), b_ub=np.array(rhs), A_eq=a_eq, b_eq=mass, bounds=bounds,
                              method="highs")
    assert result.status == 0
    return result.fun


@pytest.mark.parametrize("seed", range(4))
def test_without_charges_the_program_is_the_plain_one(seed):
    table, weights, cell_bin, grid, _ = _table(seed, n_groups=2 + seed % 2)
    for alpha in (0.0, 0.05, 0.2):
        plain_map, plain = solve_blind_lp(table, weights, cell_bin, grid, alpha)
        for margins in (None, np.zeros(table.shape)):
            robust_map, robust = solve_blind_lp(table, weights, cell_bin, grid, alpha, margins)
            np.testing.assert_array_equal(robust_map, plain_map)
            assert robust == plain
        # the robust formulation itself (band centres, |.| variables) with vanishing charges: the same optimum
        _, tiny = solve_blind_lp(table, weights, cell_bin, grid, alpha, np.full(table.shape, 1e-12))
        assert tiny == pytest.approx(plain, abs=1e-8)


@pytest.mark.parametrize("seed", range(6))
def test_the_robust_program_equals_a_dense_reference_on_small_random_tables(seed):
    table, weights, cell_bin, grid, rng = _table(seed, n_groups=2 + seed % 2, k=3, n_m=2)
    margins = rng.uniform(0.0, 0.05, size=table.shape)
    alpha = [0.0, 0.1, 0.3][seed % 3]
    transport, objective = solve_blind_lp(table, weights, cell_bin, grid, alpha, margins)
    assert objective == pytest.approx(_robust_reference(table, weights, cell_bin, grid, alpha, margins), abs=1e-7)
    np.testing.assert_allclose(transport.sum(axis=1), 1.0)
    plain = solve_blind_lp(table, weights, cell_bin, grid, alpha)[1]
    assert objective >= plain - 1e-9  # the charges only tighten


def _charged_gap(transport, table, margins, alpha):
    """Least over band centres t of the largest robust constraint's left side, per cut (brute force over t)."""
    cell_cdf = np.cumsum(transport, axis=1)[:, :-1]  # (n_cells, n_cuts)
    group_cdf = table @ cell_cdf
    worst = []
    for cut in range(cell_cdf.shape[1]):
        centres = np.unique(np.concatenate([np.linspace(0, 1, 20001), cell_cdf[:, cut], group_cdf[:, cut]]))
        spread = np.abs(cell_cdf[:, cut][None, :] - centres[:, None])  # (t, c)
        lhs = np.abs(group_cdf[:, cut][None, :] - centres[:, None]) + spread @ margins.T  # (t, a)
        worst.append(lhs.max(axis=1).min())
    return np.array(worst)


def test_the_charge_binds_where_a_cell_is_noisy():
    """A heavy charge on one cell pins that cell's CDF to the band centre; the plain map moves it and fails."""
    table = np.array([[0.6, 0.1, 0.2, 0.1], [0.1, 0.3, 0.2, 0.4]])
    weights = np.array([0.5, 0.5])
    cell_bin = np.array([0, 1, 0, 1])
    grid = np.array([0.0, 1.0])
    alpha = 0.2
    margins = np.zeros_like(table)
    margins[:, 0] = 5.0  # cell 0 noisy in both groups' entries
    plain_map, plain = solve_blind_lp(table, weights, cell_bin, grid, alpha)
    robust_map, robust = solve_blind_lp(table, weights, cell_bin, grid, alpha, margins)
    # both maps are fair on the table
    for transport in (plain_map, robust_map):
        cdf = np.cumsum(table @ transport, axis=1)[:, :-1]
        assert np.abs(cdf[0] - cdf[1]).max() <= alpha + 1e-7
    # the robust map satisfies its constraints, the plain one violates them: the charge binds
    assert (_charged_gap(robust_map, table, margins, alpha) <= alpha / 2 + 1e-6).all()  # t = T(cell 0)
    assert (_charged_gap(plain_map, table, margins, alpha) > alpha / 2 + 0.01).any()
    assert robust > plain + 1e-6
    # the noisy cell's CDF is the band centre: both groups' CDFs lie within alpha / 2 of it
    t = robust_map[0, 0]
    group_cdf = table @ robust_map[:, 0]
    assert np.abs(group_cdf - t).max() <= alpha / 2 + 1e-6


def test_steady_keeps_the_cost_within_its_tolerance_and_lowers_the_sensitivity():
    table, weights, cell_bin, grid, rng = _table(3, n_groups=3, k=5, n_m=3)
    sensitivity = rng.uniform(0.0, 0.02, size=table.shape)
    for alpha in (0.05, 0.2):
        first, optimum = solve_blind_lp(table, weights, cell_bin, grid, alpha, np.zeros(table.shape))
        steady, cost = solve_blind_lp(table, weights, cell_bin, grid, alpha, np.zeros(table.shape),
                                      steady=(sensitivity, 0.05))
        assert optimum - 1e-9 <= cost <= 1.05 * optimum + 1e-7
        cdf = np.cumsum(table @ steady, axis=1)[:, :-1]
        assert (cdf.max(axis=0) - cdf.min(axis=0)).max() <= alpha + 1e-7  # still fair

        def summed(transport):  # sum_l min_t sum_c s_c |T(c, l) - t| (the second program's objective, t optimal)
            cell_cdf = np.cumsum(transport, axis=1)[:, :-1]
            s = sensitivity.sum(axis=0)
            centres = np.linspace(0, 1, 2001)
            return sum((np.abs(cell_cdf[:, cut][None, :] - centres[:, None]) @ s).min() for cut in range(cell_cdf.shape[1]))

        assert summed(steady) <= summed(first) + 1e-3


def test_robust_margin_weights_are_the_stated_multiple_of_the_noise():
    weights = np.array([0.2, 0.5, 0.0])
    sizes = np.array([1, 4, 1, 2])
    m = robust_margin_weights(0.7, 0.01, sizes, weights)
    expected = 0.7 * 0.01 * np.sqrt(2.0 * sizes)[None, :] / math.sqrt(4) / np.array([0.2, 0.5, np.inf])[:, None]
    np.testing.assert_allclose(m, expected)
    assert (m[2] == 0).all()  # a group of weight 0 is not constrained
    assert robust_margin_weights(0.0, 0.01, sizes, weights) is None
    assert robust_margin_weights(0.7, 0.0, sizes, weights) is None
    assert robust_margin_weights(0.7, 0.01, sizes, np.array([0.3, 0.0])) is None
