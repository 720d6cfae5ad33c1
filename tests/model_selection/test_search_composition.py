"""Searches over private parts charge what they spend, once; parallel searches are refused.

* A :class:`PrivateRandomSearch` over an estimator that fits a private base model (``prefit=False``) pays for
  that base model inside its one charge (or refuses before charging), and the selected model says so.
* A budget shared by the search and its base model gets one ledger entry: the number of trials is not revealed.
* :func:`search_cost` equals what is charged, for ``PrivateRandomSearch``, ``GridSearchCV`` and ``cross_validate``.
* A search that charges a budget and would fit in worker processes (``n_jobs != 1``) is refused before anything.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from joblib import parallel_config
from sklearn.model_selection import GridSearchCV, KFold, RandomizedSearchCV, cross_validate

from dpfair.classification import DPEqualizedOddsPostProcessor
from dpfair.linear_model import DPLinearRegression, DPLogisticRegression
from dpfair.model_selection import PrivateMSEScorer, PrivateRandomSearch, check_search_budget, fit_search, search_cost
from dpfair.privacy import PrivacyBudget, PrivacyBudgetExceededError, default_budget, set_default_budget
from dpfair.regression import FairRegressionPostProcessor

RNG = np.random.default_rng(29)
N = 2000
X = RNG.uniform(-0.5, 0.5, size=(N, 2))
G = np.tile([0, 1], N // 2)
LABELS = (X[:, 0] + 0.2 * G + 0.2 * RNG.normal(size=N) > 0.1).astype(int)
TARGETS = np.clip(X @ [1.0, -0.5] + 0.1 * RNG.normal(size=N), -1, 1)


def _eo_search(epsilon=6.0, base_budget=None, budget=None, **kwargs):
    """A private part inside: equalized-odds post-processing of a private logistic regression fitted inside every trial."""
    base = DPLogisticRegression(epsilon=0.8, data_norm=1.0, budget=base_budget)
    post = DPEqualizedOddsPostProcessor(base, groups=[0, 1], prefit=False)
    return PrivateRandomSearch(post, {"gamma": [0.0, 0.05]}, scoring=PrivateMSEScorer((0, 1)), epsilon=epsilon,
                               budget=budget, **kwargs)


def _frpp_search(base, epsilon=3.0, budget=None, **kwargs):
    post = FairRegressionPostProcessor(base, bounds=(-1, 1), groups=[0, 1], prefit=False)
    return PrivateRandomSearch(post, {"n_bins": [4, 8]}, scoring=PrivateMSEScorer((-1, 1)), epsilon=epsilon,
                               budget=budget, **kwargs)


def test_a_nested_private_base_is_paid_by_the_one_charge_and_the_chosen_model_says_what_was_charged():
    """Secure noise, default arguments: the charge, the search's privacy_spent_ and the chosen model's agree."""
    budget = PrivacyBudget(10.0)
    search = _eo_search(budget=budget, mean_trials=3.0).fit(X, LABELS, sensitive_features=G)
    assert [e.epsilon for e in budget.ledger] == [6.0]
    assert search.privacy_spent_["epsilon"] == 6.0
    chosen = search.best_estimator_
    # before: the chosen model said 1.8 (its own 1.0 + the base's 0.8) while the search charged 6
    assert chosen.privacy_spent_["epsilon"] == budget.spent()[0] == 6.0
    assert chosen.privacy_spent_["delta"] == search.privacy_spent_["delta"] == 0.0
    assert "selected by PrivateRandomSearch" in chosen.privacy_spent_["protects"]
    # every trial's fit, base included, stays within trial_epsilon_: the base keeps its 0.8, the rest is the post-processor's
    assert chosen.estimator_.privacy_spent_["epsilon"] == pytest.approx(0.8)
    assert chosen.epsilon == pytest.approx(search.trial_epsilon_ - 0.8)
    assert chosen.budget is None and chosen.estimator_.budget is None and chosen.estimator_.random_state is None


def test_a_nested_base_dearer_than_a_trial_is_refused_before_anything_is_charged():
    budget = PrivacyBudget(10.0)
    search = _eo_search(epsilon=1.0, budget=budget)  # a trial gets 1/3 < the base's 0.8
    with pytest.raises(ValueError, match=r"epsilon=0\.8 in every trial.*nothing was charged.*estimator__epsilon"):
        search.fit(X, LABELS, sensitive_features=G)
    assert budget.ledger == () and not hasattr(search, "best_estimator_")


@pytest.mark.parametrize("where", ["nested", "outer"])
def test_a_trial_with_a_delta_is_refused_before_anything_is_charged(where):
    """The random-stopping bounds here hold for pure-DP trials: a Gaussian linear regression's delta is refused."""
    budget = PrivacyBudget(10.0, 1e-3)
    gaussian = DPLinearRegression(epsilon=0.2, data_norm=1.0, target_bound=1.0)
    if where == "nested":
        search = _frpp_search(gaussian, budget=budget)
        data = (X, TARGETS, G)
    else:
        search = PrivateRandomSearch(gaussian, {"alpha": [0.1, 1.0]}, scoring=PrivateMSEScorer((-1, 1)), epsilon=3.0,
                                     budget=budget)
        data = (X, TARGETS, None)
    with pytest.raises(ValueError, match=r"pure epsilon-DP trials only.*nothing was charged.*mechanism='laplace'"):
        search.fit(data[0], data[1], sensitive_features=data[2])
    assert budget.ledger == ()
    laplace = DPLinearRegression(epsilon=0.2, data_norm=1.0, target_bound=1.0, mechanism="laplace")
    _frpp_search(laplace, budget=budget, mean_trials=2.0).fit(X, TARGETS, sensitive_features=G)  # pure: accepted
    assert budget.spent() == (pytest.approx(3.0), 0.0)


def test_a_budget_shared_by_the_search_and_its_base_gets_one_entry_so_the_number_of_trials_is_not_revealed():
    budget = PrivacyBudget(10.0)
    search = _eo_search(budget=budget, base_budget=budget, mean_trials=8.0, random_state=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        search.fit(X, LABELS, sensitive_features=G)
    # before: 1 + K entries (here 6: the search's 1.0, then 0.8 per trial)
    assert len(budget.ledger) == 1 and budget.spent() == (pytest.approx(6.0), 0.0)
    previous = set_default_budget(PrivacyBudget(math.inf, 1e-3))  # the process-wide ledger: one entry too
    try:
        _eo_search(mean_trials=8.0, random_state=3).fit(X, LABELS, sensitive_features=G)
        assert [e.epsilon for e in default_budget().ledger] == [6.0]
    finally:
        set_default_budget(previous)


def test_an_over_budget_search_says_nothing_was_charged():
    budget = PrivacyBudget(5.0)
    budget.spend(4.0, label="earlier")
    with pytest.raises(PrivacyBudgetExceededError, match="nothing was charged"):
        _eo_search(budget=budget).fit(X, LABELS, sensitive_features=G)
    assert [e.label for e in budget.ledger] == ["earlier"]


def test_the_grid_cannot_give_a_nested_budget_or_seed():
    for key, value in (("estimator__budget", PrivacyBudget(1.0)), ("estimator__random_state", 0)):
        search = _eo_search(budget=PrivacyBudget(10.0))
        search.set_params(param_grid={key: [value]})
        with pytest.raises(ValueError, match=f"param_grid sets '{key}'"):
            search.fit(X, LABELS, sensitive_features=G)


def test_search_cost_is_what_each_search_class_charges():
    # PrivateRandomSearch: its one charge (before: "5 folds x 1 candidate", epsilon 5 x its epsilon)
    budget = PrivacyBudget(10.0)
    search = _eo_search(budget=budget, mean_trials=2.0, random_state=0)
    cost = search_cost(search, N)
    assert (cost.n_fits, cost.epsilon, cost.delta) == (1, 6.0, 0.0) and cost.needed(budget) == (6.0, 0.0)
    assert str(cost).startswith("PrivateRandomSearch over 2 candidate(s): 1 charge")
    search.fit(X, LABELS, sensitive_features=G)
    assert budget.spent() == cost.needed(budget)
    with pytest.raises(ValueError, match="estimator__epsilon"):  # what fit would refuse, search_cost refuses
        search_cost(_eo_search(epsilon=1.0), N)
    # GridSearchCV over a post-processor that fits a private base model: folds x candidates + refit, base included
    grid_budget = PrivacyBudget(100.0)
    base = DPLinearRegression(epsilon=0.2, data_norm=1.0, target_bound=1.0, mechanism="laplace", budget=grid_budget,
                              random_state=0)
    post = FairRegressionPostProcessor(base, epsilon=0.3, bounds=(-1, 1), groups=["all"], prefit=False,
                                       budget=grid_budget, random_state=0)
    grid = GridSearchCV(post, {"n_bins": [4, 8]}, cv=KFold(3))
    cost = search_cost(grid, N)
    assert cost.n_fits == 7 and cost.epsilon == pytest.approx(7 * 0.5)
    fit_search(grid, X, TARGETS)
    assert grid_budget.spent()[0] == pytest.approx(cost.needed(grid_budget)[0])
    # cross_validate: one charge (base included) per fold
    cv_budget = PrivacyBudget(100.0)
    post.set_params(budget=cv_budget, estimator__budget=cv_budget)
    cost = search_cost(post, N, cv=4)
    cross_validate(post, X, TARGETS, cv=4)
    assert cv_budget.spent()[0] == pytest.approx(cost.epsilon) == pytest.approx(4 * 0.5)
    # cross-validating a PrivateRandomSearch: one charge per fold
    assert search_cost(_eo_search(), N, cv=3).epsilon == pytest.approx(18.0)


def _parallel_grid(budget, n_jobs=2):
    est = DPLinearRegression(epsilon=1.0, data_norm=1.0, target_bound=1.0, budget=budget, random_state=0)
    return GridSearchCV(est, {"alpha": [0.1, 1.0]}, cv=KFold(3), n_jobs=n_jobs)


def test_a_parallel_search_is_refused_before_anything_is_fitted_or_charged():
    """A parallel search ran 7 private fits and charged 1 (the workers' charges were lost); now refused up front."""
    budget = PrivacyBudget(100.0, 1e-3)
    for grid in (_parallel_grid(budget), _parallel_grid(budget, n_jobs=-1),
                 RandomizedSearchCV(_parallel_grid(budget).estimator, {"alpha": [0.1, 1.0]}, n_iter=2, n_jobs=2)):
        with pytest.raises(ValueError, match=r"n_jobs=(2|-1) would run .* nothing was fitted or charged.*n_jobs=1"):
            fit_search(grid, X, TARGETS)
        assert not hasattr(grid, "best_estimator_")
    with parallel_config(n_jobs=2), pytest.raises(ValueError, match="n_jobs=None would run 2 fits at once"):
        fit_search(_parallel_grid(budget, n_jobs=None), X, TARGETS)  # a joblib context counts too
    with pytest.raises(ValueError, match="cross_validate with n_jobs=2"):
        check_search_budget(_parallel_grid(budget).estimator, N, cv=3, n_jobs=2)
    assert budget.ledger == ()
    check_search_budget(_parallel_grid(budget, n_jobs=1), N)  # sequential: accepted
    est = DPLinearRegression(epsilon=1.0, data_norm=1.0, target_bound=1.0)  # charges no budget: nothing to lose
    check_search_budget(GridSearchCV(est, {"alpha": [0.1, 1.0]}, n_jobs=2), N)
