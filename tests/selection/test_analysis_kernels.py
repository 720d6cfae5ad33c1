"""The compiled Monte Carlo kernels for m > 1 against brute force and the frozen reference code."""

import itertools
import math
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from dpfair.datasets import DataUnavailableError
from dpfair.selection import SelectionProblem
from dpfair.selection._kernels import NEWTON_MAX_AMPLIFICATION, esp_fallback, esp_newton, histogram_rows
from dpfair.selection.synthetic_case import case_study_problem

pytestmark = pytest.mark.filterwarnings("ignore::dpfair.privacy.PrivacyLeakWarning")


def _reference():
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from analysis_reference import SelectionProblem as Reference  # the first implementation, frozen

    return Reference


def _pair(problem, **kwargs):
    new = SelectionProblem(problem.score_values, problem.joint_pmf, problem.n_applicants, **kwargs)
    return new, _reference()(problem.score_values, problem.joint_pmf, problem.n_applicants, **kwargs)


def _fico(n):
    try:
        return SelectionProblem.from_fico(n_applicants=n, download=False)
    except DataUnavailableError:
        pytest.skip("FICO data not available (set DPFAIR_DATA_HOME)")


def _esp_brute(items, k):
    """e_k of a list of weights: the sum over every k-subset of the product (math.fsum: correctly rounded)."""
    return math.fsum(math.prod(subset) for subset in itertools.combinations(items, k))


def _esp_kernel(counts, weights, m, amplification=NEWTON_MAX_AMPLIFICATION, rest_by_product=False):
    counts = np.ascontiguousarray(counts, dtype=np.int32)
    powers = weights[None, :] ** np.arange(1, m + 1)[:, None]
    e_prev, e_m = np.empty(counts.shape[0]), np.empty(counts.shape[0])
    route = np.empty(counts.shape[0], dtype=np.int8)
    esp_newton(powers @ counts.T.astype(float), m, amplification, e_prev, e_m, route)
    rest = np.empty((m, 0))
    if rest_by_product:  # the rest's power sums from a matrix product, as SelectionProblem does for many samples
        strictly_above = counts[:, ::-1].cumsum(axis=1)[:, ::-1] - counts
        rest = powers @ np.where(strictly_above >= m, counts, 0).T.astype(float)
    esp_fallback(np.flatnonzero(route < 0), rest, counts, weights, m, amplification, e_prev, e_m, route)
    return e_prev, e_m, route


def test_histograms_are_the_draws_of_generator_choice():
    rng = np.random.default_rng(0)
    for p in (rng.random(7), np.array([0.0, 0.2, 0.0, 0.0, 0.5, 0.3, 0.0]), np.array([1e-12, 0.5, 0.5 - 1e-12]),
              np.full(300, 1 / 300)):
        p = p / p.sum()
        uniforms_rng, choice_rng = np.random.default_rng(5), np.random.default_rng(5)
        expected = np.zeros((40, p.size), dtype=np.int64)
        draws = choice_rng.choice(p.size, size=(40, 123), p=p)
        np.add.at(expected, (np.repeat(np.arange(40), 123), draws.ravel()), 1)
        cdf = np.cumsum(p)
        cdf /= cdf[-1]
        counts = np.zeros((40, p.size), dtype=np.int32)
        histogram_rows(cdf, uniforms_rng.random((40, 123)), counts)
        np.testing.assert_array_equal(counts, expected)
    # bucket edges: uniforms exactly on a bucket boundary and on a cdf value
    cdf = np.array([0.25, 0.5, 0.5, 1.0])
    counts = np.zeros((1, 4), dtype=np.int32)
    histogram_rows(cdf, np.array([[0.0, 0.25, 0.5, 0.75, 1 - 2**-53, 0.49999999]]), counts)
    np.testing.assert_array_equal(counts[0], np.bincount(np.searchsorted(cdf, [0.0, 0.25, 0.5, 0.75, 1 - 2**-53,
                                                                              0.49999999], side="right"), minlength=4))


@pytest.mark.parametrize("m", [2, 3, 5, 9])
def test_every_route_of_the_esp_kernel_matches_brute_force(m):
    """e_{m-1}, e_m of small multisets (at most 10 items) against the sum over all subsets, for each route."""
    rng = np.random.default_rng(m)
    n_scores = 6
    counts = np.array([rng.multinomial(rng.integers(m, 11), np.full(n_scores, 1 / n_scores)) for _ in range(40)])
    seen = set()
    for epsilon in (0.0, 3.0, 40.0, 300.0 / m):
        weights = np.exp(epsilon * (np.linspace(0.0, 1.0, n_scores) - 1.0) / 2.0)
        expected = np.array([[_esp_brute(np.repeat(weights, row).tolist(), k) for k in (m - 1, m)] for row in counts])
        for amplification, by_product in ((NEWTON_MAX_AMPLIFICATION, False), (NEWTON_MAX_AMPLIFICATION, True), (0.0, False)):
            e_prev, e_m, route = _esp_kernel(counts, weights, m, amplification, by_product)  # 0: the product (route 2)
            seen |= set(route.tolist())
            assert amplification > 0 or set(route.tolist()) == {2}
            np.testing.assert_allclose(np.column_stack([e_prev, e_m]), expected, rtol=1e-13)
    assert {1, 2} <= seen and (m > 5 or 0 in seen)  # 10 items, m = 9: Newton amplifies by over 64


def _newton_only(counts, weights, m):
    """The mutant: Newton's identities for every sample, without the kernel's accuracy test."""
    power_sums = counts @ (weights[:, None] ** np.arange(1, m + 1)[None, :])
    e = [np.ones(counts.shape[0])]
    for k in range(1, m + 1):
        e.append(sum((-1) ** (i - 1) * e[k - i] * power_sums[:, i - 1] for i in range(1, k + 1)) / k)
    return e[m - 1], e[m]


def test_newton_alone_fails_where_the_kernel_switches_route():
    # one dominant score: Newton's identities cancel catastrophically; the kernel's split (route 1) does not
    weights = np.exp(40.0 * (np.array([0.0, 0.05, 0.1, 1.0]) - 1.0) / 2.0)
    counts = np.array([[2, 3, 2, 1], [0, 0, 6, 2], [1, 1, 1, 1]])
    m = 3
    expected = np.array([[_esp_brute(np.repeat(weights, row).tolist(), k) for k in (m - 1, m)] for row in counts])
    for by_product in (False, True):
        e_prev, e_m, route = _esp_kernel(counts, weights, m, rest_by_product=by_product)
        assert route[0] == 1 and route[1] == 1
        np.testing.assert_allclose(np.column_stack([e_prev, e_m]), expected, rtol=1e-13)
    _, newton_m = _newton_only(counts.astype(float), weights, m)
    assert np.max(np.abs(newton_m / expected[:, 1] - 1.0)) > 1e-6


@pytest.mark.parametrize(("m", "epsilon"), [(2, 5.0), (3, 30.0), (4, 90.0), (6, 150.0)])
def test_monte_carlo_rows_are_the_exact_conditional_probabilities(m, epsilon):
    """Each sample's pi(rho | others) against every m-subset of the n <= 10 applicants (eq. 6: P(G) ~ exp(eps sum R / 2))."""
    base = case_study_problem(9)
    problem = SelectionProblem(base.score_values, base.joint_pmf, 9, max_configurations=1, n_mc_samples=100)
    rows = problem._pi_monte_carlo(epsilon, m)
    counts = problem._mc_counts()
    grid = problem.score_values
    for sample in range(0, 100, 7):
        others = np.repeat(grid, counts[sample])
        subsets = list(itertools.combinations(range(9), m))
        for j in np.flatnonzero(problem.f_r > 0):
            scores = np.concatenate([[grid[j]], others])
            totals = np.array([scores[list(g)].sum() for g in subsets])
            weight = np.exp(epsilon * (totals - totals.max()) / 2.0)
            expected = math.fsum(w for g, w in zip(subsets, weight, strict=True) if 0 in g) / math.fsum(weight)
            assert rows[sample, j] == pytest.approx(expected, rel=1e-12, abs=1e-300)


@pytest.mark.parametrize(("n", "m"), [(12, 2), (60, 5), (60, 10), (300, 10)])
def test_monte_carlo_matches_the_reference_to_1e_12(n, m):
    new, old = _pair(case_study_problem(n), max_configurations=1, n_mc_samples=400, random_state=2)
    epsilons = [0.0, 0.05, 1.0, 7.0, 30.0, 60.0, 1_000.0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the reference's log(0) at epsilon = 0
        for quantity in ("fairness_gap", "accuracy"):
            a, b = getattr(new, quantity)(epsilons, m), getattr(old, quantity)(epsilons, m)
            np.testing.assert_allclose(a.value, b.value, rtol=1e-12, atol=1e-15)
            np.testing.assert_allclose(a.standard_error, b.standard_error, rtol=1e-9, atol=1e-15)
        np.testing.assert_allclose(new.selection_probability_given_score(7.0, m).value,
                                   old.selection_probability_given_score(7.0, m).value, rtol=1e-12, atol=1e-15)


def test_fico_matches_the_reference_at_m_10_with_newton_and_the_split():
    fico = _fico(200)
    new, old = _pair(fico, n_mc_samples=300, random_state=4)
    epsilons = [0.01, 3.0, 40.0, 100.0]
    routes = []
    for eps in epsilons:
        a, b = new.fairness_gap(eps, 10), old.fairness_gap(eps, 10)
        routes.append(new._last_esp_routes.copy())
        assert a.method == b.method == "monte-carlo"
        assert float(a) == pytest.approx(float(b), rel=1e-12, abs=1e-15)
        assert a.standard_error == pytest.approx(b.standard_error, rel=1e-9, abs=1e-15)
    assert routes[0][0] == 300 and routes[-1][1] > 0  # Newton at small epsilon, the split at 100


@pytest.mark.filterwarnings("ignore:Assumption 1:UserWarning")
def test_searches_match_the_reference_on_fico():
    fico = _fico(60)
    new, old = _pair(fico, n_mc_samples=300)
    for m in (2, 5):
        assert new.best_epsilon(50.0, 0.02, m, n_grid=12) == pytest.approx(old.best_epsilon(50.0, 0.02, m, n_grid=12),
                                                                          rel=1e-12)
        np.testing.assert_allclose(new.perfectly_fair_epsilons(m, 50.0, n_grid=12),
                                   old.perfectly_fair_epsilons(m, 50.0, n_grid=12), rtol=1e-12)
