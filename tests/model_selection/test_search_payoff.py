"""A private search says before spending when it cannot beat the untuned estimator at the same total epsilon.

The selected model of PrivateRandomSearch is one trial's: fitted on the training side of the split at the trial's
epsilon.  Its handicap against the untuned estimator fitted on every row at the whole epsilon is a function of public
facts (rows, features, the search's plan); the check compares it with the smallest gain worth tuning for.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from dpfair.linear_model import DPLogisticRegression
from dpfair.model_selection import (
    PrivateAccuracyScorer,
    PrivateRandomSearch,
    SearchPayoffWarning,
    search_payoff,
    trial_epsilon_for,
)
from dpfair.model_selection._payoff import MIN_TUNING_GAIN, NOISE_LAW_CONSTANT
from dpfair.privacy import PrivacyBudget, PrivacyLeakWarning


def test_the_handicap_in_closed_form_on_adults_size():
    # Adult's training rows and features at total epsilon 3: a geometric search gives each trial epsilon 1 on 70 %
    payoff = search_payoff(30_000, 46, epsilon=3.0, trial_epsilon=1.0, validation_fraction=0.3)
    expected = NOISE_LAW_CONSTANT * 46 * (1 / (21_000 * 1.0) - 1 / (30_000 * 3.0))
    assert payoff.n_train == 21_000 and payoff.equivalent_epsilon == pytest.approx(0.7)
    assert payoff.predicted_handicap == pytest.approx(expected) and expected > MIN_TUNING_GAIN
    assert not payoff.can_pay and "epsilon=0.7" in payoff.message()
    # the truncated negative binomial (eta = -0.5, delta 1e-6) doubles each trial's epsilon: the check passes
    trial = trial_epsilon_for(3.0, n_trials="truncated_negative_binomial", mean_trials=10.0, delta=1e-6, eta=-0.5)
    assert trial == pytest.approx(2.0, abs=0.01)
    assert search_payoff(30_000, 46, epsilon=3.0, trial_epsilon=trial, validation_fraction=0.2).can_pay
    # no handicap when every trial had the whole epsilon on every row (a limit, not a search)
    assert search_payoff(1000, 5, epsilon=1.0, trial_epsilon=1.0, validation_fraction=1e-9).predicted_handicap == 0.0
    with pytest.raises(ValueError, match="validation_fraction"):
        search_payoff(100, 2, epsilon=1.0, trial_epsilon=0.3, validation_fraction=1.0)


def _data(n: int, d: int = 3, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, d)) / math.sqrt(d)
    y = (X[:, 0] + 0.3 * rng.normal(size=n) > 0).astype(int)
    return X, y


def _search(**changes):
    settings = {"epsilon": 1.0, "random_state": 0}
    settings.update(changes)
    return PrivateRandomSearch(DPLogisticRegression(data_norm=1.0), {"C": ["auto", 0.05]},
                               scoring=PrivateAccuracyScorer(), **settings)


def test_a_search_with_too_few_rows_for_its_budget_warns_at_the_users_line_and_raise_refuses_before_charging():
    X, y = _data(600)
    payoff = _search().payoff(600, 3)
    assert not payoff.can_pay and payoff.trial_epsilon == pytest.approx(1 / 3)
    with pytest.warns(SearchPayoffWarning, match="not expected to beat the untuned estimator") as record:
        _search().fit(X, y)
    assert record[0].filename == __file__  # the user's line, not dpfair's
    budget = PrivacyBudget(5.0)
    search = _search(payoff_check="raise", budget=budget)
    with pytest.raises(ValueError, match=r"payoff_check='raise'.*Nothing was charged"):
        search.fit(X, y)
    assert len(budget.ledger) == 0 and not hasattr(search, "privacy_spent_")
    with warnings.catch_warnings():
        warnings.simplefilter("error", SearchPayoffWarning)
        _search(payoff_check="ignore").fit(X, y)
        with pytest.warns(PrivacyLeakWarning):
            _search(epsilon=math.inf).fit(X, y)  # no noise, no handicap
    with pytest.raises(ValueError, match="payoff_check must be"):
        _search(payoff_check="never").fit(X, y)


def test_enough_rows_for_the_budget_raise_no_warning():
    X, y = _data(3000, d=2)
    search = _search(epsilon=6.0)
    assert search.payoff(3000, 2).can_pay  # 3.5 * 2 * (1 / (2100 * 2) - 1 / 18000) = 0.0013
    with warnings.catch_warnings():
        warnings.simplefilter("error", SearchPayoffWarning)
        search.fit(X, y)
    assert search.best_params_ is not None
