"""Searches that never waste a budget, PrivacyLeakWarning once per configuration, the process-wide ledger, defaults."""

from __future__ import annotations

import inspect
import math
import warnings

import numpy as np
import pytest
import sklearn
from sklearn.model_selection import GridSearchCV, KFold

from dpfair.classification import DPEqualizedOddsPostProcessor
from dpfair.datasets import make_regression
from dpfair.linear_model import DPLinearRegression
from dpfair.model_selection import PrivateMSEScorer, PrivateRandomSearch, check_search_budget, fit_search, search_cost
from dpfair.privacy import (
    PrivacyBudget,
    PrivacyBudgetExceededError,
    PrivacyLeakWarning,
    default_budget,
    set_default_budget,
)
from dpfair.regression import FairRegressionPostProcessor, WassersteinBarycenterPostProcessor


def _data(n=600, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-0.5, 0.5, size=(n, 2))
    return X, np.clip(X @ [1.0, -0.5] + 0.1 * rng.normal(size=n), -1, 1)


def _grid(budget, epsilon=0.5):
    est = DPLinearRegression(epsilon=epsilon, data_norm=1.0, target_bound=1.0, budget=budget, random_state=0)
    return GridSearchCV(est, {"alpha": [0.1, 1.0, 10.0, 100.0]}, cv=KFold(3))


def test_search_cost_counts_folds_times_candidates_plus_refit_before_any_fit():
    budget = PrivacyBudget(100.0, 1e-3)
    cost = search_cost(_grid(budget), n_samples=600)
    assert (cost.n_fits, cost.n_splits, cost.n_candidates, cost.refit) == (13, 3, 4, True)
    assert cost.epsilon == pytest.approx(6.5) and cost.delta == pytest.approx(13e-6)
    assert cost.needed(budget) == (pytest.approx(6.5), pytest.approx(13e-6))
    assert str(cost).startswith("3 folds x 4 candidate(s) + 1 refit = 13 private fits")
    assert budget.spent() == (0.0, 0.0)
    grid = GridSearchCV(DPLinearRegression(data_norm=1.0, target_bound=1.0), {"epsilon": [0.5, 2.0]}, cv=2, refit=False)
    assert search_cost(grid, 100).epsilon == pytest.approx(2 * 2.5)  # epsilon in the grid: each candidate its own
    assert search_cost(DPLinearRegression(epsilon=0.3), 100).epsilon == pytest.approx(1.5)  # cross_validate: 5 folds


def test_a_grid_too_large_for_its_budget_is_refused_before_its_first_fit():
    budget = PrivacyBudget(5.0, 1e-3)
    X, y = _data()
    with pytest.raises(PrivacyBudgetExceededError, match=r"13 private fits .* charge \(epsilon=6\.5.*left of"):
        fit_search(_grid(budget), X, y)
    assert budget.spent() == (0.0, 0.0) and budget.ledger == ()
    with pytest.raises(PrivacyBudgetExceededError, match="nothing was fitted or charged"):
        check_search_budget(_grid(budget), 600)
    search = fit_search(_grid(PrivacyBudget(7.0, 1e-3)), X, y)
    assert search.best_estimator_.privacy_spent_["epsilon"] == 0.5


class _UnderReporting(DPLinearRegression):
    """A private estimator that charges more than it says: dpfair's check cannot see it coming."""

    def _dpfair_fit_charges(self):
        return [(self.budget, 1e-9, 0.0)]


def test_a_budget_running_out_inside_a_search_gets_one_clear_error():
    budget = PrivacyBudget(2.0, 1e-3)
    est = _UnderReporting(epsilon=0.5, data_norm=1.0, target_bound=1.0, budget=budget, random_state=0)
    X, y = _data()
    with pytest.raises(PrivacyBudgetExceededError, match=r"ran out inside GridSearchCV.fit .* has spent \(epsilon=2"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # scikit-learn's FitFailedWarning for the refused fits
            fit_search(GridSearchCV(est, {"alpha": [1.0, 10.0]}, cv=3), X, y)


def test_privacy_leak_warning_once_per_configuration_in_a_search():
    X, y = _data()
    for est, features in ((DPLinearRegression(epsilon=math.inf), X),
                          (FairRegressionPostProcessor(epsilon=math.inf, n_bins=8, groups=["all"]), y.reshape(-1, 1))):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("default")
            GridSearchCV(est, {"alpha": [0.0, 1.0]}, cv=3).fit(features, y)
        leaks = [w for w in caught if issubclass(w.category, PrivacyLeakWarning)]
        assert len(leaks) == 2, [str(w.message) for w in leaks]  # 2 configurations, 7 fits
    with pytest.warns(PrivacyLeakWarning):  # an estimator fitted directly always warns
        DPLinearRegression(epsilon=math.inf).fit(X, y)


def test_default_budget_records_every_charge_of_estimators_given_no_budget():
    X, y = _data()
    previous = set_default_budget(PrivacyBudget(math.inf, 1e-3))
    try:
        DPLinearRegression(epsilon=0.5, data_norm=1.0, target_bound=1.0, random_state=0).fit(X, y)
        FairRegressionPostProcessor(epsilon=0.25, bounds=(-1, 1), groups=["all"], random_state=0).fit(y)
        own = PrivacyBudget(1.0)
        FairRegressionPostProcessor(epsilon=0.25, bounds=(-1, 1), groups=["all"], budget=own, random_state=0).fit(y)
        PrivateRandomSearch(  # one charge for the whole search, none for its trials
            FairRegressionPostProcessor(bounds=(-1, 1), groups=["all"]), {"n_bins": [4, 8]},
            scoring=PrivateMSEScorer((-1, 1)), epsilon=0.3, random_state=0,
        ).fit(y.reshape(-1, 1), y)
        ledger = default_budget()
        assert [e.epsilon for e in ledger.ledger] == [0.5, 0.25, 0.3] and own.spent()[0] == 0.25
        set_default_budget(PrivacyBudget(0.1, 1e-3))  # a finite ledger also caps the program
        with pytest.raises(PrivacyBudgetExceededError):
            DPLinearRegression(epsilon=0.5, data_norm=1.0, target_bound=1.0).fit(X, y)
    finally:
        set_default_budget(previous)
    assert default_budget() is previous


def test_post_processors_share_one_prefit_default():
    defaults = {cls.__name__: inspect.signature(cls).parameters["prefit"].default
                for cls in (DPEqualizedOddsPostProcessor, FairRegressionPostProcessor, WassersteinBarycenterPostProcessor)}
    assert set(defaults.values()) == {True}, defaults


def test_predict_after_search_pattern_for_sensitive_features():
    _, yr, g = make_regression(900, n_groups=2, random_state=0)
    budget = PrivacyBudget(10.0)
    post = FairRegressionPostProcessor(epsilon=0.5, bounds=(-0.5, 1.5), groups=[0, 1], budget=budget, random_state=0)
    with sklearn.config_context(enable_metadata_routing=True):
        post.set_fit_request(sensitive_features=True).set_score_request(sensitive_features=True)
        search = GridSearchCV(post, {"n_bins": [8, 16]}, cv=3)
        fit_search(search, yr.reshape(-1, 1), yr, sensitive_features=g)
        with pytest.raises(TypeError):  # scikit-learn's search.predict takes X only
            search.predict(yr.reshape(-1, 1), sensitive_features=g)
        pred = search.best_estimator_.predict(yr.reshape(-1, 1), sensitive_features=g)  # the documented pattern
    assert pred.shape == yr.shape and budget.spent()[0] == pytest.approx(7 * 0.5)
