"""ExponentialSelector: exact samplers against brute-force enumeration, limits, privacy, bad input."""

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from dpfair.privacy import audit_epsilon
from dpfair.selection import ExponentialSelector


def brute(scores, m, epsilon, utility, bounds=(0.0, 1.0)):
    lo, hi = bounds
    subsets = list(itertools.combinations(range(len(scores)), m))
    s = np.asarray(scores)
    value = {
        "mean": lambda g: s[list(g)].mean(),
        "max": lambda g: s[list(g)].max(),
        "min": lambda g: s[list(g)].min(),
        "rms": lambda g: math.sqrt((s[list(g)] ** 2).mean()),
    }[utility]
    sens = {"mean": (hi - lo) / m, "max": hi - lo, "min": hi - lo, "rms": math.sqrt(((m - 1) * lo**2 + hi**2) / m) - lo}[utility]
    v = np.array([value(g) for g in subsets])
    if math.isinf(epsilon):
        p = np.isclose(v, v.max()).astype(float)
    else:
        p = np.exp(epsilon * (v - v.max()) / (2 * sens))
    p /= p.sum()
    incl = np.zeros(len(scores))
    for g, pg in zip(subsets, p, strict=True):
        incl[list(g)] += pg
    return subsets, p, incl


@pytest.mark.parametrize("utility", ["mean", "max", "min", "rms"])
def test_inclusion_probabilities_match_enumeration(utility):
    rng = np.random.default_rng(5)
    for n in range(1, 9):
        for m in range(1, n + 1):
            scores = rng.choice([0.0, 0.25, 0.5, 0.8, 1.0], size=n)  # ties on purpose
            for eps in (0.5, 4.0, 40.0, math.inf):
                sel = ExponentialSelector(eps, m, utility=utility)
                _, _, incl = brute(scores, m, eps, utility)
                np.testing.assert_allclose(sel.selection_probabilities(scores), incl, atol=1e-10)


@pytest.mark.parametrize("utility", ["mean", "max", "min", "rms"])
def test_sampled_subsets_match_enumeration(utility):
    scores = np.array([0.9, 0.1, 0.5, 0.5, 0.7, 0.3])
    m, eps, draws = 3, 6.0, 8_000
    subsets, p, _ = brute(scores, m, eps, utility)
    sel = ExponentialSelector(eps, m, utility=utility)
    rng = np.random.default_rng(2)
    index = {g: i for i, g in enumerate(subsets)}
    counts = np.zeros(len(subsets))
    for _ in range(draws):
        counts[index[tuple(sel.select(scores, random_state=rng))]] += 1
    assert stats.chisquare(counts, draws * p).pvalue > 1e-3


def test_infinite_epsilon_is_top_m_with_uniform_ties():
    sel = ExponentialSelector(math.inf, 2)
    np.testing.assert_allclose(sel.selection_probabilities([0.9, 0.5, 0.5, 0.1]), [1, 0.5, 0.5, 0])
    picks = [tuple(sel.select([0.9, 0.5, 0.5, 0.1], random_state=i)) for i in range(400)]
    assert set(picks) == {(0, 1), (0, 2)}


def test_general_bounds_and_audit():
    """Scores in [-2, 3]; the selection is epsilon-DP when one applicant's score changes."""
    sel = ExponentialSelector(2.0, 1, score_bounds=(-2.0, 3.0))
    base = np.array([-2.0, 3.0, 3.0, 3.0])

    def mech(scores, size, rng):
        return np.array([sel.select(scores, random_state=rng)[0] for _ in range(size)])

    honest = audit_epsilon(mech, base, np.array([3.0, -2.0, 3.0, 3.0]), n_samples=12_000, discrete=True)
    assert honest.epsilon_lower_bound <= 2.0
    broken = ExponentialSelector(8.0, 1, score_bounds=(-2.0, 3.0))

    def mech_broken(scores, size, rng):
        return np.array([broken.select(scores, random_state=rng)[0] for _ in range(size)])

    caught = audit_epsilon(mech_broken, base, np.array([3.0, -2.0, 3.0, 3.0]), n_samples=12_000, discrete=True)
    assert caught.epsilon_lower_bound > 2.0


@pytest.mark.parametrize(
    ("kwargs", "scores", "match"),
    [
        ({}, [0.5, 1.2], "score_bounds"),
        ({}, [0.5, np.nan], "scores"),
        ({}, [], "scores"),
        ({"n_select": 3}, [0.1, 0.2], "n_select"),
        ({"epsilon": 0.0}, [0.1], "epsilon"),
        ({"utility": "median"}, [0.1], "utility"),
        ({"utility": "rms", "score_bounds": (-1.0, 1.0)}, [0.1], "rms"),
        ({"score_bounds": (1.0, 0.0)}, [0.1], "score_bounds"),
    ],
)
def test_bad_input(kwargs, scores, match):
    args = {"epsilon": 1.0, **kwargs}
    with pytest.raises((ValueError, TypeError), match=match):
        ExponentialSelector(**args).select(scores, random_state=0)


def test_rms_refuses_huge_enumeration():
    with pytest.raises(ValueError, match="enumerates"):
        ExponentialSelector(1.0, 10, utility="rms").selection_probabilities(np.linspace(0, 1, 60))


def test_large_mean_selection_is_fast_and_exact_in_sum():
    scores = np.random.default_rng(0).uniform(size=100_000)
    sel = ExponentialSelector(5.0, 100)
    assert sel.selection_probabilities(scores).sum() == pytest.approx(100)
    assert sel.select(scores, random_state=1).shape == (100,)
