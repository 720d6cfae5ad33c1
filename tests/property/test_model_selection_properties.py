"""Property tests (hypothesis) for every public entry point of dpfair.model_selection.

Each call either returns a finite, correctly shaped result or raises ``ValueError``/``TypeError``
whose message names the offending argument; never another exception, never NaN out.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from dpfair.model_selection import (
    PrivateKSScorer,
    PrivateMSEKSScorer,
    PrivateMSEScorer,
    PrivateRandomSearch,
    random_stopping_epsilon,
    trial_epsilon_for,
)
from dpfair.regression import FairRegressionPostProcessor

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
NUMBERS = st.sampled_from([1e-300, 1e-6, 0.3, 1.0, 5.0, 1e300, math.inf, 0.0, -1.0, math.nan, "1", True, None])
DISTRIBUTIONS = st.sampled_from(["geometric", "truncated_negative_binomial", "poisson", "uniform", 3])
ACCOUNTING_NAMES = ("trial_epsilon", "epsilon", "n_trials", "mean_trials", "delta", "eta")


def _expect(call: Callable[[], Any], names: tuple[str, ...]) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            result = call()
        except (ValueError, TypeError) as exc:
            event("refused")
            assert any(name in str(exc) for name in names), f"{type(exc).__name__} names none of {names}: {exc}"
            return None
    event("returned")
    return result


@SETTINGS
@given(epsilon=NUMBERS, n_trials=DISTRIBUTIONS, mean_trials=NUMBERS, delta=NUMBERS, eta=NUMBERS)
def test_accounting_never_crashes_nor_returns_nan(epsilon, n_trials, mean_trials, delta, eta):
    kwargs = {"n_trials": n_trials, "mean_trials": mean_trials, "delta": delta, "eta": eta}
    total = _expect(lambda: random_stopping_epsilon(epsilon, **kwargs), ACCOUNTING_NAMES)
    if total is not None:
        assert math.isfinite(total) and total >= 0
    trial = _expect(lambda: trial_epsilon_for(epsilon, **kwargs), ACCOUNTING_NAMES)
    if trial is not None:
        assert math.isfinite(trial) and 0 < trial <= epsilon
        back = random_stopping_epsilon(trial, **kwargs)
        assert back <= epsilon * (1 + 1e-6)  # the inverse never overspends


@st.composite
def searches(draw: Callable) -> dict[str, Any]:
    kind = draw(st.sampled_from(["good", "good", "bad-epsilon", "bad-fraction", "bad-trials", "bad-rows", "bad-grid"]))
    n = draw(st.integers(0, 60) if kind == "bad-rows" else st.integers(30, 60))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    y = rng.random(n)
    groups = rng.integers(0, 2, n)
    params: dict[str, Any] = {"epsilon": 2.0, "validation_fraction": 0.3, "n_trials": "geometric",
                              "mean_trials": 2.0, "random_state": 0}
    grid: Any = {"n_bins": [4, 8], "alpha": [0.0, 0.1]}
    if kind == "bad-epsilon":
        params["epsilon"] = draw(NUMBERS)
    elif kind == "bad-fraction":
        params["validation_fraction"] = draw(st.sampled_from([0.0, 1.0, -0.2, 2.0, math.nan, "x"]))
    elif kind == "bad-trials":
        params["n_trials"] = draw(DISTRIBUTIONS)
        params["mean_trials"] = draw(NUMBERS)
    elif kind == "bad-grid":
        grid = draw(st.sampled_from([{}, [], {"n_bins": []}, {"no_such_parameter": [1]}, "n_bins", None]))
    if draw(st.booleans()):
        y = np.where(rng.random(n) < 0.1, draw(st.sampled_from([np.nan, np.inf, 5.0])), y)
    scorer = draw(st.sampled_from(["mse", "ks", "mse+ks"]))
    return {"y": y, "groups": groups, "grid": grid, "params": params, "scorer": scorer}


SEARCH_NAMES = ("X", "y", "sensitive_features", "epsilon", "validation_fraction", "n_trials", "mean_trials",
                "param_grid", "n_samples", "bounds", "groups", "n_bins", "delta", "eta")


@SETTINGS
@given(problem=searches())
def test_search_never_crashes_nor_returns_nan(problem):
    scoring = {"mse": PrivateMSEScorer((0.0, 1.0)), "ks": PrivateKSScorer((0.0, 1.0), [0, 1], n_bins=4),
               "mse+ks": PrivateMSEKSScorer((0.0, 1.0), [0, 1], n_bins=4)}[problem["scorer"]]
    search = PrivateRandomSearch(FairRegressionPostProcessor(bounds=(0.0, 1.0), groups=[0, 1]), problem["grid"],
                                 scoring=scoring, **problem["params"])
    y, groups = problem["y"], problem["groups"]
    fitted = _expect(lambda: search.fit(y, y, sensitive_features=groups), SEARCH_NAMES)
    if fitted is not None:
        assert np.isfinite(fitted.best_score_)
        predictions = fitted.predict(y[:5], sensitive_features=groups[:5])
        assert predictions.shape == (min(5, y.size),) and np.isfinite(predictions).all()


COST_NAMES = ("n_samples", "cv", "epsilon", "delta", "budget", "param", "Invalid parameter", "fold", "splits",
              "n_splits", "Cannot have number of splits")


@SETTINGS
@given(
    n_samples=st.sampled_from([1, 2, 10, 1000, 0, -3, 2.5, "10", None, True]),
    cv=st.sampled_from([None, 2, 3, 1, 0, "x", 2.5]),
    epsilons=st.sampled_from([[0.5], [0.5, 2.0], [math.inf], [0.0], [-1.0], ["x"], [math.nan], []]),
    budget_epsilon=st.sampled_from([0.1, 10.0, math.inf]),
    as_search=st.booleans(),
)
def test_search_cost_and_check_never_crash(n_samples, cv, epsilons, budget_epsilon, as_search):
    from sklearn.model_selection import GridSearchCV

    from dpfair.model_selection import check_search_budget, search_cost
    from dpfair.privacy import PrivacyBudget, PrivacyBudgetExceededError

    budget = PrivacyBudget(budget_epsilon)
    est = FairRegressionPostProcessor(bounds=(0.0, 1.0), groups=[0, 1], budget=budget)
    target = GridSearchCV(est, {"epsilon": epsilons}, cv=cv if cv is not None else 5) if as_search else est
    kwargs = {} if as_search else {"cv": cv}
    cost = _expect(lambda: search_cost(target, n_samples, **kwargs), COST_NAMES)
    if cost is not None:
        assert cost.n_fits == cost.n_splits * cost.n_candidates + int(cost.refit)
        assert cost.epsilon >= 0 and not math.isnan(cost.epsilon) and 0 <= cost.delta <= 1
        try:
            check_search_budget(target, n_samples, **kwargs)
        except PrivacyBudgetExceededError as exc:
            assert "nothing was fitted or charged" in str(exc)
        assert budget.spent() == (0.0, 0.0)


LABELS = st.sampled_from([["yes", "no"], [0, 1], [True, False], [">50K", "<=50K", None], [0.5, math.nan]])


@SETTINGS
@given(n=st.integers(0, 30), labels=LABELS, n_groups=st.integers(1, 3), epsilon=NUMBERS, seed=st.integers(0, 2**16),
       declared=st.sampled_from([None, [0, 1, 2], [0], "all", [[0]]]), weight=NUMBERS, target=NUMBERS)
def test_classifier_scorers_never_crash_nor_return_nan(n, labels, n_groups, epsilon, seed, declared, weight, target):
    """PrivateAccuracyScorer and PrivateEqualizedOddsScorer: a finite score in range, or a named refusal."""
    from dpfair.model_selection import PrivateAccuracyScorer, PrivateEqualizedOddsScorer
    from dpfair.privacy.noise import get_noise_source

    class Fixed:
        def predict(self, X):
            return np.asarray(X)

    rng = np.random.default_rng(seed)
    y = np.array(labels, dtype=object)[rng.integers(0, len(labels), n)]
    pred = np.array(labels, dtype=object)[rng.integers(0, len(labels), n)]
    groups = rng.integers(0, n_groups, n)
    names = ("y", "groups", "sensitive_features", "eo_weight", "eo_target", "epsilon", "n_rows", "pos_label")
    scorers = [PrivateAccuracyScorer()]
    made = _expect(lambda: PrivateEqualizedOddsScorer(declared, labels[0], eo_weight=weight, eo_target=target), names)
    if made is not None:
        scorers.append(made)
    for scorer in scorers:
        def score(scorer=scorer):
            scorer.check(pred, y, groups)
            if not (isinstance(epsilon, float) and epsilon > 0) or isinstance(epsilon, bool):
                raise ValueError("epsilon must be a positive number")  # the search validates epsilon itself
            return scorer(Fixed(), pred, y, groups, epsilon=epsilon, noise=get_noise_source(0))

        value = _expect(score, names)
        if value is not None:
            assert math.isfinite(value)
            if isinstance(scorer, PrivateEqualizedOddsScorer):
                assert -(1 + scorer.eo_weight) <= value <= 0


@SETTINGS
@given(table=st.lists(st.floats(-1.0, 1.0), min_size=4, max_size=16).filter(lambda v: len(v) % 4 == 0))
def test_equalized_odds_post_processing_is_in_range_for_any_noisy_table(table):
    from dpfair.model_selection import PrivateEqualizedOddsScorer

    error, violation = PrivateEqualizedOddsScorer.error_and_violation(np.reshape(table, (-1, 2, 2)))
    assert 0 <= error <= 1 and 0 <= violation <= 1
