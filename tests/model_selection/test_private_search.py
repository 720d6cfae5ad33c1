"""Private choice of (k, alpha): accounting, budget contract, scorer audits and an end-to-end audit."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpfair.datasets import make_regression
from dpfair.model_selection import (
    PrivateKSScorer,
    PrivateMSEKSScorer,
    PrivateMSEScorer,
    PrivateRandomSearch,
    random_stopping_epsilon,
    trial_epsilon_for,
)
from dpfair.model_selection._random_stopping import _tnb_gamma, draw_n_trials
from dpfair.privacy import PrivacyBudget, PrivacyBudgetExceededError, PrivacyLeakWarning, audit_epsilon
from dpfair.privacy.noise import get_noise_source
from dpfair.regression import FairRegressionPostProcessor

pytestmark = pytest.mark.filterwarnings("ignore:the private weight")
GRID = {"n_bins": [4, 12], "alpha": [0.0, 0.1]}


def _search(**kwargs):
    args = {"scoring": PrivateMSEScorer((0.0, 1.0)), "epsilon": 1.5, "random_state": 0, "mean_trials": 4.0, **kwargs}
    return PrivateRandomSearch(FairRegressionPostProcessor(bounds=(0.0, 1.0), groups=[0, 1]), GRID, **args)


def _data(n=1500, seed=0):
    _, y, g = make_regression(n, n_groups=2, disparity=2.0, random_state=seed)
    return y, g


def test_accounting_matches_the_theorems():
    assert random_stopping_epsilon(0.2) == pytest.approx(0.6)  # Liu & Talwar: 3 epsilon
    assert trial_epsilon_for(0.6) == pytest.approx(0.2)
    for dist, eta in [("truncated_negative_binomial", 0.0), ("truncated_negative_binomial", 0.5), ("poisson", 1.0)]:
        te = trial_epsilon_for(2.0, n_trials=dist, mean_trials=8.0, delta=1e-6, eta=eta)
        assert 0 < te < 2.0
        assert random_stopping_epsilon(te, n_trials=dist, mean_trials=8.0, delta=1e-6, eta=eta) <= 2.0
        assert random_stopping_epsilon(te * 1.01, n_trials=dist, mean_trials=8.0, delta=1e-6, eta=eta) > 2.0 * 0.999
    # Papernot & Steinke: the logarithmic distribution (eta = 0) is cheaper than the geometric one at large epsilon
    assert trial_epsilon_for(5.0, n_trials="truncated_negative_binomial", delta=1e-6, eta=0.0) > 5.0 / 3
    with pytest.raises(ValueError, match="delta"):
        trial_epsilon_for(1.0, n_trials="poisson")


@pytest.mark.parametrize(("dist", "eta", "mean"), [("geometric", 1.0, 5.0), ("truncated_negative_binomial", 0.5, 5.0),
                                                   ("truncated_negative_binomial", 0.0, 5.0), ("poisson", 1.0, 5.0)])
def test_number_of_trials_has_the_declared_mean(dist, eta, mean):
    noise = get_noise_source(0)
    draws = np.array([draw_n_trials(noise, dist, mean, eta) for _ in range(4000)])
    assert draws.mean() == pytest.approx(mean, rel=0.08)
    assert draws.min() >= (0 if dist == "poisson" else 1)
    assert 0 < _tnb_gamma(mean, eta) < 1


def test_budget_is_charged_once_and_a_refusal_spends_nothing():
    y, g = _data()
    budget = PrivacyBudget(2.0)
    search = _search(budget=budget).fit(y, y, sensitive_features=g)
    assert budget.spent() == (pytest.approx(1.5), 0.0) and len(budget.ledger) == 1
    assert search.privacy_spent_["epsilon"] == 1.5 and search.trial_epsilon_ == pytest.approx(0.5)
    assert "validation" in search.privacy_spent_["protects"]
    before = (search.best_params_, search.best_score_)
    with pytest.raises(PrivacyBudgetExceededError):
        search.fit(y, y, sensitive_features=g)
    assert len(budget.ledger) == 1 and (search.best_params_, search.best_score_) == before
    fresh = _search(budget=budget)
    with pytest.raises(PrivacyBudgetExceededError):
        fresh.fit(y, y, sensitive_features=g)
    assert not hasattr(fresh, "best_params_") and not hasattr(fresh, "privacy_spent_")
    # refit_alpha on the selected model is free
    search.best_estimator_.refit_alpha(0.3)
    assert budget.spent()[0] == pytest.approx(1.5)


def test_trials_run_privately_without_touching_the_budget_of_the_estimator():
    y, g = _data()
    inner = PrivacyBudget(0.1)  # would refuse any trial: the search overrides it with its own accounting
    est = FairRegressionPostProcessor(bounds=(0.0, 1.0), groups=[0, 1], budget=inner)
    search = PrivateRandomSearch(est, GRID, scoring=PrivateMSEScorer((0, 1)), epsilon=1.5, random_state=1).fit(
        y, y, sensitive_features=g)
    assert inner.spent() == (0.0, 0.0)
    assert search.best_estimator_.epsilon == pytest.approx(0.5) and search.best_estimator_.budget is None
    assert search.best_params_ in list(__import__("sklearn.model_selection").model_selection.ParameterGrid(GRID))
    assert search.predict(y[:5], sensitive_features=g[:5]).shape == (5,)
    assert not hasattr(search, "n_trials_")  # K is never released


def test_infinite_epsilon_is_the_exhaustive_non_private_search():
    y, g = _data(3000)
    with pytest.warns(PrivacyLeakWarning, match="epsilon=inf"):
        search = _search(epsilon=math.inf, scoring=PrivateMSEKSScorer((0, 1), [0, 1], ks_weight=0.0)).fit(
            y, y, sensitive_features=g)
    assert search.best_params_["n_bins"] == 12 and search.privacy_spent_["epsilon"] == math.inf


@pytest.mark.parametrize("kwargs", [{"scoring": "neg_mean_squared_error"}, {"validation_fraction": 1.0},
                                    {"n_trials": "uniform"}, {"n_trials": "poisson"}, {"epsilon": 0.0},
                                    {"mean_trials": 1.0}])
def test_bad_arguments_are_refused_before_any_charge(kwargs):
    y, g = _data(200)
    budget = PrivacyBudget(10.0)
    with pytest.raises((ValueError, TypeError)):
        _search(budget=budget, **kwargs).fit(y, y, sensitive_features=g)
    assert budget.ledger == ()


class _Fixed:
    """A fitted 'model' whose predictions are its input (to audit the scorers alone)."""

    def predict(self, X, sensitive_features=None):
        return np.asarray(X, dtype=float)


@pytest.mark.slow
@pytest.mark.statistical
@pytest.mark.parametrize("which", ["mse", "ks", "mse_ks"])
def test_scorers_pass_a_privacy_audit_and_a_half_noise_mutant_is_caught(which, monkeypatch):
    eps, n = 1.0, 10
    x = np.full(n, 0.25)  # every prediction in the first of 2 KS bins
    y = np.full(n, 0.25)
    groups = np.array([0] * 5 + [1] * 5)
    x2, y2, groups2 = x.copy(), y.copy(), groups.copy()
    if which == "mse":
        y2[0] = 1.0  # one label changes: the MSE moves by 0.75**2 / n
        scorer = PrivateMSEScorer((0.0, 1.0))
    elif which == "ks":
        x2[0] = 0.99  # one prediction changes bin: KS moves by 1/5
        scorer = PrivateKSScorer((0.0, 1.0), [0, 1], n_bins=2)
    else:
        y2[0], x2[0] = 1.0, 0.99
        scorer = PrivateMSEKSScorer((0.0, 1.0), [0, 1], n_bins=2)

    def mech(data, size, rng):
        xs, ys, gs = data
        noise = get_noise_source(rng)
        return np.array([scorer(_Fixed(), xs, ys, gs, epsilon=eps, noise=noise) for _ in range(size)])

    honest = audit_epsilon(mech, (x, y, groups), (x2, y2, groups2), n_samples=3000)
    assert honest.epsilon_lower_bound <= eps
    import dpfair.model_selection._scorers as scorers

    real = scorers.laplace_mechanism
    monkeypatch.setattr(scorers, "laplace_mechanism",
                        lambda v, sensitivity, **kw: real(v, sensitivity=sensitivity / 10, **kw))
    broken = audit_epsilon(mech, (x, y, groups), (x2, y2, groups2), n_samples=3000)
    assert broken.epsilon_lower_bound > eps


@pytest.mark.slow
@pytest.mark.statistical
def test_end_to_end_audit_of_the_search_on_a_small_instance():
    """Output = the selected candidate; neighbours differ in one post-processing row (its group)."""
    eps = 1.5
    x = np.array([0.1, 0.2, 0.8, 0.9] * 3)
    groups = np.array([0, 0, 1, 1] * 3)
    groups2 = groups.copy()
    groups2[0] = 1
    grid = {"n_bins": [1, 2]}

    def mech(g, size, rng):
        out = np.empty(size)
        for i in range(size):
            search = PrivateRandomSearch(
                FairRegressionPostProcessor(bounds=(0.0, 1.0), groups=[0, 1]), grid,
                scoring=PrivateMSEScorer((0.0, 1.0)), epsilon=eps, mean_trials=2.0, validation_fraction=0.5,
                random_state=int(rng.integers(2**32)),
            ).fit(x, x, sensitive_features=g)
            out[i] = search.best_params_["n_bins"]
        return out

    result = audit_epsilon(mech, groups, groups2, n_samples=600, discrete=True)
    assert result.epsilon_lower_bound <= eps


def test_estimator_contract_basics():
    from sklearn.base import clone
    from sklearn.exceptions import NotFittedError

    search = _search(budget=PrivacyBudget(5.0))
    twin = clone(search)
    assert twin.get_params()["epsilon"] == 1.5 and twin.budget is search.budget  # a budget is shared, not copied
    assert "PrivateRandomSearch" in repr(search)
    with pytest.raises(NotFittedError):
        search.predict([0.5])
    y, _ = _data(400)
    one = PrivateRandomSearch(FairRegressionPostProcessor(bounds=(0.0, 1.0), groups=["all"]), GRID,
                              scoring=PrivateMSEScorer((0, 1)), epsilon=1.5, random_state=0).fit(y, y)
    assert one.predict(y[:3]).shape == (3,)


@pytest.mark.slow
@pytest.mark.statistical
def test_end_to_end_audit_of_the_released_score_and_a_search_with_too_little_noise_is_caught(monkeypatch):
    """Output = the released best score; neighbours differ in one validation-or-training label.

    With ``n_bins=1`` every prediction is the grid point 0.5, so the exact validation MSE is 0 on one
    input and 0.125 on the other when the changed row falls in the validation half.  The honest search
    shows no more loss than its epsilon; a mutant whose accounting hands every trial 100 times the
    per-trial epsilon (so its fits and scores carry a hundredth of the noise) while still reporting
    ``(epsilon, 0)`` is caught.
    """
    import dpfair.model_selection._search as search_module

    eps = 1.5
    x = np.full(4, 0.5)
    y, y2 = x.copy(), x.copy()
    y2[0] = 1.0

    def mech(labels, size, rng):
        out = np.empty(size)
        for i in range(size):
            search = PrivateRandomSearch(
                FairRegressionPostProcessor(bounds=(0.0, 1.0), groups=["all"]), {"n_bins": [1]},
                scoring=PrivateMSEScorer((0.0, 1.0)), epsilon=eps, mean_trials=2.0, validation_fraction=0.5,
                random_state=int(rng.integers(2**32)),
            ).fit(x, labels)
            assert search.privacy_spent_["epsilon"] == eps
            out[i] = search.best_score_
        return out

    honest = audit_epsilon(mech, y, y2, n_samples=600)
    assert honest.epsilon_lower_bound <= eps
    real = search_module.trial_epsilon_for
    monkeypatch.setattr(search_module, "trial_epsilon_for", lambda epsilon, **kw: 100 * real(epsilon, **kw))
    broken = audit_epsilon(mech, y, y2, n_samples=600)
    assert broken.epsilon_lower_bound > eps
