"""Exact top-m exponential mechanism: brute force, chi-square, limits, extreme inputs."""

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from dpfair.privacy import TopMExponentialMechanism, top_m_exponential_mechanism, top_m_inclusion_probabilities

# exact analyses and epsilon=inf runs are deliberate here (tests/privacy/test_refusals.py checks the warning)
pytestmark = pytest.mark.filterwarnings("ignore::dpfair.privacy.PrivacyLeakWarning")


def brute_force(utilities, m, sensitivity, epsilon):
    subsets = list(itertools.combinations(range(len(utilities)), m))
    logw = np.array([epsilon * sum(utilities[j] for j in s) / (2 * sensitivity) for s in subsets])
    p = np.exp(logw - logw.max())
    p /= p.sum()
    incl = np.zeros(len(utilities))
    for s, ps in zip(subsets, p, strict=True):
        incl[list(s)] += ps
    return subsets, p, incl


@pytest.mark.parametrize("n", range(1, 11))
def test_inclusion_probabilities_match_enumeration(n):
    rng = np.random.default_rng(n)
    for m in range(1, n + 1):
        for epsilon in (0.3, 2.0, 25.0):
            u = rng.uniform(0, 1, size=n)
            u[rng.integers(n)] = u[0]  # include a tie
            _, _, incl = brute_force(u, m, 1.0, epsilon)
            got = top_m_inclusion_probabilities(u, m, sensitivity=1.0, epsilon=epsilon)
            np.testing.assert_allclose(got, incl, atol=1e-10, rtol=0)
            assert got.sum() == pytest.approx(m, abs=1e-10)


def test_sampled_subsets_pass_chi_square_against_enumeration():
    rng = np.random.default_rng(7)
    u = rng.uniform(0, 1, size=7)
    m, eps = 3, 4.0
    subsets, p, _ = brute_force(u, m, 1.0, eps)
    draws = top_m_exponential_mechanism(u, m, sensitivity=1.0, epsilon=eps, random_state=11, size=60_000)
    index = {s: i for i, s in enumerate(subsets)}
    counts = np.bincount([index[tuple(r)] for r in draws.tolist()], minlength=len(subsets))
    chi2, pvalue = stats.chisquare(counts, 60_000 * p)
    assert pvalue > 1e-3, (chi2, pvalue)


def test_sequential_sampling_without_replacement_is_rejected_by_the_same_test():
    """The chi-square test above can fail: Plackett-Luce draws (a different law) are caught."""
    rng = np.random.default_rng(7)
    u = rng.uniform(0, 1, size=7)
    m, eps = 3, 4.0
    subsets, p, _ = brute_force(u, m, 1.0, eps)
    gen = np.random.default_rng(11)
    keys = eps * u / 2 + gen.gumbel(size=(60_000, 7))
    draws = np.sort(np.argsort(-keys, axis=1)[:, :m], axis=1)
    index = {s: i for i, s in enumerate(subsets)}
    counts = np.bincount([index[tuple(r)] for r in draws.tolist()], minlength=len(subsets))
    assert stats.chisquare(counts, 60_000 * p).pvalue < 1e-6


def test_epsilon_infinity_is_top_m_with_uniform_ties():
    u = np.array([0.9, 0.5, 0.5, 0.5, 0.1])
    probs = top_m_inclusion_probabilities(u, 2, sensitivity=1.0, epsilon=math.inf)
    np.testing.assert_allclose(probs, [1, 1 / 3, 1 / 3, 1 / 3, 0])
    draws = top_m_exponential_mechanism(u, 2, sensitivity=1.0, epsilon=math.inf, random_state=0, size=30_000)
    assert (draws[:, 0] == 0).all()
    freq = np.bincount(draws[:, 1], minlength=5)[1:4] / 30_000
    np.testing.assert_allclose(freq, 1 / 3, atol=0.015)


def test_epsilon_to_zero_gives_the_uniform_distribution():
    u = np.random.default_rng(3).uniform(size=9)
    probs = top_m_inclusion_probabilities(u, 4, sensitivity=1.0, epsilon=1e-300)
    np.testing.assert_allclose(probs, 4 / 9, atol=1e-12)


def test_large_instance_without_overflow():
    rng = np.random.default_rng(0)
    n, m = 100_000, 100
    u = rng.uniform(0, 1, size=n)
    for eps in (1e-3, 1.0, 1e3):
        mech = TopMExponentialMechanism(u, m, sensitivity=1.0 / m, epsilon=eps)
        probs = mech.inclusion_probabilities()
        assert np.isfinite(probs).all() and probs.sum() == pytest.approx(m, rel=1e-9)
        draw = mech.sample(random_state=1)
        assert draw.shape == (m,) and np.unique(draw).size == m
    # at epsilon = 1e3 with utility u/m and sensitivity 1/m the weights span exp(500):
    # the top items must be nearly certain and the sample must be (almost) the top m
    top = np.argsort(-u)[:m]
    assert probs[top].mean() > 0.5


def test_monotonicity_in_utility():
    u = np.linspace(0, 1, 12)
    probs = top_m_inclusion_probabilities(u, 5, sensitivity=1.0, epsilon=3.0)
    assert np.all(np.diff(probs) > 0)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"utilities": [0.1, np.nan], "n_select": 1}, "utilities"),
        ({"utilities": [0.1, np.inf], "n_select": 1}, "utilities"),
        ({"utilities": [], "n_select": 1}, "utilities"),
        ({"utilities": [0.1, 0.2], "n_select": 3}, "n_select"),
        ({"utilities": [0.1, 0.2], "n_select": 0}, "n_select"),
        ({"utilities": [0.1, 0.2], "n_select": 1, "epsilon": 0.0}, "epsilon"),
        ({"utilities": [0.1, 0.2], "n_select": 1, "epsilon": -1.0}, "epsilon"),
        ({"utilities": [0.1, 0.2], "n_select": 1, "sensitivity": -1.0}, "sensitivity"),
    ],
)
def test_bad_input_is_refused_with_the_argument_named(kwargs, match):
    args = {"sensitivity": 1.0, "epsilon": 1.0, **kwargs}
    with pytest.raises((ValueError, TypeError), match=match):
        top_m_inclusion_probabilities(args.pop("utilities"), args.pop("n_select"), **args)
