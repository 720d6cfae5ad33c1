"""The fast barycenter solver equals the reference HiGHS LP on thousands of random instances."""

import numpy as np
import pytest

from dpfair.fairness import statistical_parity_ks_histograms
from dpfair.regression import solve_barycenter_alpha0, solve_barycenter_lp, solve_barycenter_lp_reference


def random_instance(rng):
    n_groups = int(rng.integers(1, 5))
    k = int(rng.integers(1, 14))
    grid = np.sort(rng.uniform(0, 3, size=k)) if rng.random() < 0.3 else (np.arange(k) + 0.5) / k
    pmfs = rng.random((n_groups, k)) ** 3 * (rng.random((n_groups, k)) < 0.7)
    pmfs[:, rng.integers(k)] += 1e-3
    pmfs /= pmfs.sum(axis=1, keepdims=True)
    weights = rng.random(n_groups) * (rng.random(n_groups) < 0.9)
    if weights.sum() == 0:  # all-zero weights are refused (no group to weight); keep the rng stream unchanged
        weights[0] = 1.0
    return pmfs, weights, grid


def test_fast_solver_matches_the_reference_lp_on_random_instances():
    rng = np.random.default_rng(2024)
    checked = 0
    for _ in range(2000):
        pmfs, weights, grid = random_instance(rng)
        alpha = 0.0 if rng.random() < 0.4 else float(rng.uniform(0, 0.6))
        ref = solve_barycenter_lp_reference(pmfs, weights, grid, alpha)
        fast = solve_barycenter_lp(pmfs, weights, grid, alpha)
        assert fast.objective == pytest.approx(ref.objective, abs=1e-9)
        # the fast solution is feasible: couplings of p_a, targets within alpha of each other in KS
        np.testing.assert_allclose(fast.couplings.sum(axis=2), pmfs, atol=1e-9)
        assert (fast.couplings >= 0).all()
        if pmfs.shape[0] > 1:
            assert statistical_parity_ks_histograms(fast.targets / fast.targets.sum(1, keepdims=True)) <= alpha + 1e-8
        checked += 1
    assert checked == 2000


def test_alpha_zero_closed_form_on_larger_instances():
    rng = np.random.default_rng(7)
    for _ in range(20):
        k = int(rng.integers(20, 60))
        pmfs = rng.dirichlet(np.full(k, 0.3), size=3)
        weights = rng.dirichlet(np.ones(3))
        grid = (np.arange(k) + 0.5) / k
        ref = solve_barycenter_lp_reference(pmfs, weights, grid, 0.0)
        fast = solve_barycenter_alpha0(pmfs, weights, grid)
        assert fast.objective == pytest.approx(ref.objective, abs=1e-9)
        np.testing.assert_allclose(fast.targets, np.broadcast_to(fast.barycenter, fast.targets.shape), atol=1e-12)


def test_column_generation_on_a_law_school_sized_instance():
    rng = np.random.default_rng(3)
    k = 120
    grid = 1 + (np.arange(k) + 0.5) * 3 / k
    centers = [60, 45, 50, 75]
    pmfs = np.array([np.exp(-0.5 * ((np.arange(k) - c) / 12) ** 2) for c in centers]) + rng.random((4, k)) * 1e-3
    pmfs /= pmfs.sum(axis=1, keepdims=True)
    weights = np.array([0.04, 0.06, 0.05, 0.85])
    for alpha in (0.0, 0.03, 0.1):
        ref = solve_barycenter_lp_reference(pmfs, weights, grid, alpha)
        assert solve_barycenter_lp(pmfs, weights, grid, alpha).objective == pytest.approx(ref.objective, abs=1e-9)
