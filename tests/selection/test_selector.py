"""ExponentialSelector: exact samplers against brute-force enumeration, limits, privacy, bad input."""

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from dpfair.privacy import PrivacyBudget, PrivacyBudgetExceededError, PrivacyLeakWarning, SeededNoiseWarning, audit_epsilon
from dpfair.selection import ExponentialSelector

# exact probabilities and epsilon = inf selections warn by design; the tests below that check the warning use pytest.warns
pytestmark = pytest.mark.filterwarnings("ignore::dpfair.privacy.PrivacyLeakWarning")


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


@pytest.mark.slow
@pytest.mark.statistical
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


@pytest.mark.slow
@pytest.mark.statistical
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


BAD_INPUT = [
    ({}, [0.5, 1.2], ValueError, "score_bounds"),
    ({}, [0.5, np.nan], ValueError, "scores"),
    ({}, [0.5, np.inf], ValueError, "scores"),
    ({}, [], ValueError, "scores"),
    ({}, [[0.1, 0.2]], ValueError, "scores"),
    ({}, 0.5, ValueError, "scores"),
    ({}, "0.5", TypeError, "scores"),
    ({}, ["0.5", "0.7"], TypeError, "scores"),  # numeric strings were silently coerced to floats
    ({}, np.array(["0.5", "0.7"], dtype=object), TypeError, "scores"),
    ({}, [0.5 + 0j, 0.7], ValueError, "scores"),  # complex input was cast (imaginary part dropped)
    ({}, [True, False], TypeError, "scores"),
    ({}, np.array([0.5, None], dtype=object), ValueError, "scores"),
    ({}, [[0.1], [0.2, 0.3]], ValueError, "scores"),
    ({"n_select": 3}, [0.1, 0.2], ValueError, "n_select"),
    ({"n_select": 0}, [0.1, 0.2], ValueError, "n_select"),
    ({"n_select": 1.5}, [0.1, 0.2], TypeError, "n_select"),
    ({"epsilon": 0.0}, [0.1], ValueError, "epsilon"),
    ({"epsilon": "1"}, [0.1], TypeError, "epsilon"),
    ({"epsilon": np.nan}, [0.1], ValueError, "epsilon"),
    ({"utility": "median"}, [0.1], ValueError, "utility"),
    ({"utility": None}, [0.1], ValueError, "utility"),
    ({"utility": "rms", "score_bounds": (-1.0, 1.0)}, [0.1], ValueError, "rms"),
    ({"score_bounds": (1.0, 0.0)}, [0.1], ValueError, "score_bounds"),
    ({"score_bounds": (0.0, np.inf)}, [0.1], ValueError, "score_bounds"),
    ({"score_bounds": (0.0,)}, [0.1], TypeError, "score_bounds"),
    ({"score_bounds": ("0", "1")}, [0.1], TypeError, "score_bounds"),
    ({"utility": "rms", "n_select": 10}, np.linspace(0, 1, 60), ValueError, "enumerates"),
]


@pytest.mark.parametrize(("kwargs", "scores", "error", "match"), BAD_INPUT)
def test_bad_input(kwargs, scores, error, match):
    args = {"epsilon": 1.0, **kwargs}
    with pytest.raises(error, match=match):
        ExponentialSelector(**args).select(scores, random_state=0)
    with pytest.raises(error, match=match):
        ExponentialSelector(**args).selection_probabilities(scores)
    with pytest.raises(error, match=match.replace("scores", "X") if match == "scores" else match):
        ExponentialSelector(**args, random_state=0).fit(scores)


@pytest.mark.parametrize(("kwargs", "scores", "error", "match"), BAD_INPUT)
def test_every_refused_call_leaves_the_budget_untouched(kwargs, scores, error, match):
    """Before: select charged the budget first, so e.g. a refused rms enumeration spent 0.6."""
    budget = PrivacyBudget(5.0)
    args = {"epsilon": 0.6, **kwargs}
    with pytest.raises(error):
        ExponentialSelector(**args).select(scores, random_state=0, budget=budget)
    with pytest.raises(error):
        ExponentialSelector(**args, budget=budget, random_state=0).fit(scores)
    assert budget.spent() == (0.0, 0.0) and budget.ledger == ()


def test_bad_budget_and_random_state_refused_before_charging():
    budget = PrivacyBudget(5.0)
    with pytest.raises(TypeError, match="budget"):
        ExponentialSelector(1.0).select([0.2, 0.4], budget="budget")
    with pytest.raises(TypeError, match="random_state"):
        ExponentialSelector(1.0).select([0.2, 0.4], random_state="seed", budget=budget)
    with pytest.raises(TypeError, match="random_state"):
        ExponentialSelector(1.0, budget=budget, random_state=1.5).fit([0.2, 0.4])
    assert budget.spent() == (0.0, 0.0)
    small = PrivacyBudget(0.5)
    with pytest.raises(PrivacyBudgetExceededError):
        ExponentialSelector(1.0).select([0.2, 0.4], random_state=0, budget=small)
    assert small.spent() == (0.0, 0.0)


def test_per_call_budget_and_random_state_override_the_constructor():
    shared, other = PrivacyBudget(5.0), PrivacyBudget(5.0)
    sel = ExponentialSelector(1.0, 2, budget=shared, random_state=0)
    scores = np.linspace(0, 1, 8)
    first = sel.select(scores)
    np.testing.assert_array_equal(sel.select(scores), first)  # constructor seed
    assert shared.spent()[0] == pytest.approx(2.0)
    sel.select(scores, budget=other)
    assert shared.spent()[0] == pytest.approx(2.0) and other.spent()[0] == pytest.approx(1.0)
    draws = {tuple(sel.select(scores, random_state=k, budget=other)) for k in range(3)}
    assert other.spent()[0] == pytest.approx(4.0) and draws


def test_out_of_bounds_message_names_the_bounds_not_the_data():
    """Before: the message printed the private minimum and maximum of the scores."""
    with pytest.raises(ValueError, match=r"score_bounds=\(0, 1\)") as info:
        ExponentialSelector(1.0).select([0.25, 1.2345678, -0.7654321], random_state=0)
    assert "1.23457" not in str(info.value) and "-0.765432" not in str(info.value) and "clipping" in str(info.value)


def test_selection_probabilities_warn_privacy_leak():
    """Before: exact noise-free probabilities of private scores came back silently."""
    with pytest.warns(PrivacyLeakWarning, match="public or synthetic"):
        ExponentialSelector(1.0, 2).selection_probabilities([0.2, 0.5, 0.9])
    for utility in ("max", "min", "rms"):
        with pytest.warns(PrivacyLeakWarning):
            ExponentialSelector(1.0, 2, utility=utility).selection_probabilities([0.2, 0.5, 0.9])


def test_infinite_epsilon_selection_warns_once():
    """Before: epsilon = inf selected silently on data."""
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ExponentialSelector(math.inf, 1).select([0.2, 0.9], random_state=0)
        ExponentialSelector(math.inf, 2, random_state=0).fit([0.2, 0.9, 0.5])
    leaks = [w for w in caught if issubclass(w.category, PrivacyLeakWarning)]
    assert len(leaks) == 2 and all("epsilon=inf" in str(w.message) for w in leaks)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        ExponentialSelector(5.0, 2).select([0.2, 0.9, 0.5])  # finite epsilon, secure noise: no warning
    with pytest.warns(SeededNoiseWarning):  # finite epsilon, seeded noise: says so
        ExponentialSelector(5.0, 2).select([0.2, 0.9, 0.5], random_state=0)


@pytest.mark.parametrize("utility", ["mean", "max", "min", "rms"])
@pytest.mark.parametrize("epsilon", [1e-300, 1e300, 1.7e308])
def test_extreme_epsilon_probabilities_are_valid(utility, epsilon):
    """Before: at 1e300 tied 'min'/'rms' classes lost their counts (probabilities summing to 4 for m = 2)."""
    scores = np.array([0.1, 0.5, 0.5, 0.9, 0.3])
    for m in (1, 2, 3):
        sel = ExponentialSelector(epsilon, m, utility=utility)
        p = sel.selection_probabilities(scores)
        limit = 1e-300 if epsilon < 1 else math.inf
        _, _, expected = brute(scores, m, 0.0 if limit < 1 else math.inf, utility)
        np.testing.assert_allclose(p, expected, atol=1e-12)
        assert p.sum() == pytest.approx(m) and np.all((p >= 0) & (p <= 1 + 1e-12))
        assert sel.select(scores, random_state=0).shape == (m,)


def test_pandas_scores_with_odd_index_give_positions():
    scores = pd.Series([0.1, 0.99, 0.2], index=[100, -5, 7])
    assert ExponentialSelector(math.inf).select(scores, random_state=0).tolist() == [1]


def test_large_mean_selection_is_fast_and_exact_in_sum():
    scores = np.random.default_rng(0).uniform(size=100_000)
    sel = ExponentialSelector(5.0, 100)
    assert sel.selection_probabilities(scores).sum() == pytest.approx(100)
    assert sel.select(scores, random_state=1).shape == (100,)


@pytest.mark.parametrize(
    ("bounds", "error", "match"),
    [
        ((-1e308, 1e308), ValueError, "score_bounds=.* is wider than"),
        ("01", TypeError, "score_bounds must be a pair"),
        ((False, True), TypeError, "score_bounds must be a pair"),
        ((0.0, float("nan")), ValueError, "score_bounds must be finite"),
    ],
)
def test_score_bounds_follow_the_one_bounds_rule(bounds, error, match):
    """One bounds rule (dpfair._validation.check_bounds), naming score_bounds."""
    with pytest.raises(error, match=match):
        ExponentialSelector(n_select=1, epsilon=1.0, score_bounds=bounds).fit(np.array([0.1, 0.2]))
