"""The closed-form barycenter solver against brute force: the full LP in scipy's HiGHS.

The LP reference lives here (``_highs_lp``), written from the paper's formulation (Section 3.3,
Algorithm 1 line 10) in the PMF variables of the paper, independently of the library's CDF
formulation of ``solve_barycenter_lp_reference`` (``tests/regression/lp_reference.py``).
"""

import numpy as np
import pytest
from lp_reference import solve_barycenter_column_generation, solve_barycenter_lp_reference
from scipy import optimize, sparse

from dpfair.regression import solve_barycenter_alpha0, solve_barycenter_lp


def _highs_lp(pmfs, weights, grid, alpha):
    """The paper's LP verbatim: variables pi_a(j, l) >= 0, q(l) >= 0, q_a(l) >= 0; returns (objective, targets)."""
    pmfs, weights, grid = (np.asarray(x, dtype=float) for x in (pmfs, weights, grid))
    g, k = pmfs.shape
    n_pi = g * k * k
    n_var = n_pi + k + g * k
    a_idx, j_idx, l_idx = (i.ravel() for i in np.meshgrid(np.arange(g), np.arange(k), np.arange(k), indexing="ij"))
    cost = np.concatenate([weights[a_idx] * (grid[j_idx] - grid[l_idx]) ** 2, np.zeros(k + g * k)])
    q_a = n_pi + k + np.arange(g * k)
    rows, cols, vals = [a_idx * k + j_idx], [np.arange(n_pi)], [np.ones(n_pi)]  # sum_l pi = p_a(j)
    rows += [g * k + a_idx * k + l_idx, g * k + np.arange(g * k)]  # sum_j pi - q_a(l) = 0
    cols += [np.arange(n_pi), q_a]
    vals += [np.ones(n_pi), -np.ones(g * k)]
    rows += [np.full(k, 2 * g * k)]  # sum q = 1
    cols += [n_pi + np.arange(k)]
    vals += [np.ones(k)]
    a_eq = sparse.csr_array((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(2 * g * k + 1, n_var))
    b_eq = np.concatenate([pmfs.ravel(), np.zeros(g * k), [1.0]])
    # |sum_{j<=l} (q_a(j) - q(j))| <= alpha / 2 for every a and l
    lower = np.tril(np.ones((k, k)))
    blocks = []
    for a in range(g):
        block = sparse.lil_array((k, n_var))
        block[:, n_pi : n_pi + k] = -lower
        block[:, n_pi + k + a * k : n_pi + k + (a + 1) * k] = lower
        blocks.append(block.tocsr())
    ks = sparse.vstack(blocks)
    a_ub = sparse.vstack([ks, -ks])
    b_ub = np.full(2 * g * k, min(alpha, 4.0) / 2)
    res = optimize.linprog(cost, A_ub=a_ub, b_ub=b_ub, A_eq=a_eq, b_eq=b_eq, bounds=(0, None), method="highs",
                           options={"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10})
    assert res.status == 0, res.message
    return float(res.fun), res.x[n_pi + k :].reshape(g, k)


def random_instance(rng, max_groups=8, max_k=40):
    n_groups = int(rng.integers(1, max_groups + 1))
    k = int(rng.integers(1, max_k + 1))
    if rng.random() < 0.3:  # uneven grid
        grid = np.cumsum(rng.uniform(0.05, 1.0, size=k))
    else:
        grid = (np.arange(k) + 0.5) / k
    pmfs = rng.random((n_groups, k)) ** 3 * (rng.random((n_groups, k)) < rng.uniform(0.2, 1.0))  # sparse PMFs
    if rng.random() < 0.2:  # exact ties: integer masses
        pmfs = np.floor(pmfs * 4)
    pmfs[np.arange(n_groups), rng.integers(k, size=n_groups)] += 1e-3 if rng.random() < 0.5 else 1.0
    pmfs /= pmfs.sum(axis=1, keepdims=True)
    weights = rng.random(n_groups) * (rng.random(n_groups) < 0.85)  # zero weights
    if rng.random() < 0.2:
        weights = np.ones(n_groups)  # equal weights: ties in the means
    if weights.sum() == 0:
        weights[0] = 1.0
    return pmfs, weights, grid


def _alpha(rng):
    return float(rng.choice([0.0, rng.uniform(0, 0.2), rng.uniform(0, 1.0), rng.uniform(1.0, 2.5), 1.0, 2.0]))


def _check_solution(sol, pmfs, weights, grid, alpha):
    g, k = pmfs.shape
    couplings = sol.couplings
    assert (sol.coupling_mass > 0).all() and (couplings >= 0).all()
    assert np.bincount(sol.coupling_group, minlength=g).max() <= 2 * k - 1  # sparse: at most 2k - 1 cells per group
    np.testing.assert_allclose(couplings.sum(axis=2), pmfs / pmfs.sum(1, keepdims=True), atol=1e-12)
    np.testing.assert_allclose(couplings.sum(axis=1), sol.targets, atol=1e-12)
    assert sol.barycenter.sum() == pytest.approx(1.0, abs=1e-12) and (sol.barycenter >= 0).all()
    # KS(target_a, barycenter) <= alpha / 2
    ks = np.abs(np.cumsum(sol.targets, axis=1) - np.cumsum(sol.barycenter)).max()
    assert ks <= alpha / 2 + 1e-12
    # the objective is the plans' cost
    cost = (grid[:, None] - grid[None, :]) ** 2
    assert sol.objective == pytest.approx(float(np.einsum("a,ajl,jl->", weights, couplings, cost)), abs=1e-12)


@pytest.mark.slow
def test_closed_form_equals_the_highs_lp_on_random_instances():
    """Against HiGHS: >= 300 random instances, 1-8 groups, k up to 200, sparse PMFs, zero weights, uneven grids, alpha 0..2.5."""
    rng = np.random.default_rng(2024)
    worst = 0.0
    n = 0
    for i in range(330):
        big = i % 30 == 0  # a few large instances (k up to 200) against the CDF-form LP (faster than the paper's)
        pmfs, weights, grid = random_instance(rng, max_groups=4 if big else 8, max_k=200 if big else 30)
        alpha = _alpha(rng)
        sol = solve_barycenter_lp(pmfs, weights, grid, alpha)
        _check_solution(sol, pmfs, weights, grid, alpha)
        if big:
            ref_objective = solve_barycenter_lp_reference(pmfs, weights, grid, alpha).objective
        else:
            ref_objective, _ = _highs_lp(pmfs, weights, grid, alpha)
        gap = abs(sol.objective - ref_objective)
        worst = max(worst, gap)
        assert gap <= 1e-9, (i, gap)
        n += 1
    assert n == 330 and worst <= 1e-9


def test_targets_and_couplings_match_highs_where_the_optimum_is_unique():
    """With generic (continuous random) weights and PMFs every positive-weight group's target is unique;
    the monotone coupling to it is then the unique optimal plan."""
    rng = np.random.default_rng(11)
    for _ in range(60):
        g = int(rng.integers(2, 5))
        k = int(rng.integers(2, 25))
        pmfs = rng.dirichlet(np.full(k, 0.7), size=g)
        weights = rng.dirichlet(np.ones(g))
        grid = np.cumsum(rng.uniform(0.1, 1.0, size=k))
        alpha = float(rng.choice([0.0, rng.uniform(0, 0.4)]))
        sol = solve_barycenter_lp(pmfs, weights, grid, alpha)
        ref = solve_barycenter_lp_reference(pmfs, weights, grid, alpha)
        assert sol.objective == pytest.approx(ref.objective, abs=1e-9)
        np.testing.assert_allclose(sol.targets, ref.targets, atol=1e-6)
        np.testing.assert_allclose(sol.couplings, ref.couplings, atol=1e-6)


def test_alpha_zero_is_quantile_averaging():
    rng = np.random.default_rng(7)
    for _ in range(20):
        k = int(rng.integers(20, 60))
        pmfs = rng.dirichlet(np.full(k, 0.3), size=3)
        weights = rng.dirichlet(np.ones(3))
        grid = (np.arange(k) + 0.5) / k
        sol = solve_barycenter_alpha0(pmfs, weights, grid)
        np.testing.assert_allclose(sol.targets, np.broadcast_to(sol.barycenter, sol.targets.shape), atol=1e-12)
        assert sol.objective == pytest.approx(solve_barycenter_lp_reference(pmfs, weights, grid, 0.0).objective, abs=1e-9)
        # level t goes to the grid point nearest sum_a w_a Q_a(t)
        t = rng.uniform(0, 1, size=200)
        cdfs = np.cumsum(pmfs, axis=1)
        mean = sum(weights[a] * grid[np.minimum(np.searchsorted(cdfs[a], t), k - 1)] for a in range(3))
        nearest = np.abs(grid[None, :] - mean[:, None]).argmin(axis=1)
        at_t = np.minimum(np.searchsorted(np.cumsum(sol.barycenter), t), k - 1)
        assert (at_t == nearest).mean() > 0.97  # equal except at levels within rounding of a breakpoint


@pytest.mark.parametrize("alpha", [2.0, 3.0, np.inf])
def test_large_alpha_keeps_every_distribution(alpha):
    rng = np.random.default_rng(1)
    pmfs = rng.dirichlet(np.ones(12), size=4)
    weights = rng.random(4) + 0.1
    sol = solve_barycenter_lp(pmfs, weights, np.arange(12.0), alpha)
    np.testing.assert_allclose(sol.targets, pmfs, atol=1e-12)
    assert sol.objective == 0.0
    # every level is a tie: the centre is the alpha = 0 barycenter
    np.testing.assert_allclose(sol.barycenter, solve_barycenter_alpha0(pmfs, weights, np.arange(12.0)).barycenter, atol=1e-12)


def test_flat_regions_break_ties_towards_the_alpha_zero_barycenter():
    rng = np.random.default_rng(5)
    for _ in range(30):
        pmfs, weights, grid = random_instance(rng, max_groups=4, max_k=20)
        base = solve_barycenter_alpha0(pmfs, weights, grid)
        for alpha in (0.3, 1.0, 5.0):
            sol = solve_barycenter_lp(pmfs, weights, grid, alpha)
            again = solve_barycenter_lp(pmfs, weights, grid, alpha)
            np.testing.assert_array_equal(sol.barycenter, again.barycenter)  # deterministic
            if alpha >= 2.0:
                np.testing.assert_allclose(sol.barycenter, base.barycenter, atol=1e-12)


def test_one_bin_and_one_group():
    sol = solve_barycenter_lp([[1.0]], [2.0], [0.5], 0.3)
    assert sol.objective == 0.0 and sol.barycenter.tolist() == [1.0] and sol.couplings.tolist() == [[[1.0]]]
    rng = np.random.default_rng(0)
    p = rng.dirichlet(np.ones(9), size=1)
    for alpha in (0.0, 0.2):
        sol = solve_barycenter_lp(p, [1.0], np.arange(9.0), alpha)
        assert sol.objective == pytest.approx(0.0, abs=1e-15)
        np.testing.assert_allclose(sol.targets, p, atol=1e-12)


def test_column_generation_reference_agrees_on_a_law_school_sized_instance():
    rng = np.random.default_rng(3)
    k = 120
    grid = 1 + (np.arange(k) + 0.5) * 3 / k
    centers = [60, 45, 50, 75]
    pmfs = np.array([np.exp(-0.5 * ((np.arange(k) - c) / 12) ** 2) for c in centers]) + rng.random((4, k)) * 1e-3
    pmfs /= pmfs.sum(axis=1, keepdims=True)
    weights = np.array([0.04, 0.06, 0.05, 0.85])
    for alpha in (0.0, 0.03, 0.1):
        cg = solve_barycenter_column_generation(pmfs, weights, grid, alpha)
        assert solve_barycenter_lp(pmfs, weights, grid, alpha).objective == pytest.approx(cg.objective, abs=1e-9)


@pytest.mark.slow
def test_many_bins_and_groups_stay_sparse():
    rng = np.random.default_rng(9)
    g, k = 20, 20_000
    pmfs = rng.dirichlet(np.full(k, 0.5), size=g)
    sol = solve_barycenter_lp(pmfs, rng.dirichlet(np.ones(g)), (np.arange(k) + 0.5) / k, 0.05)
    assert sol.coupling_mass.size <= g * (2 * k - 1)
    assert np.abs(np.cumsum(sol.targets, axis=1) - np.cumsum(sol.barycenter)).max() <= 0.025 + 1e-12
    np.testing.assert_allclose(sol.sparse_couplings().sum(axis=1).reshape(g, k), pmfs, atol=1e-12)
