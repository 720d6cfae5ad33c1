"""dpfair.base: the one release template charges after validation and sets state only at the end."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pytest
from sklearn.base import BaseEstimator, RegressorMixin, clone

from dpfair.base import PrivateEstimator, PrivateMechanismMixin, ValidatedData
from dpfair.privacy import PrivacyBudget, PrivacyBudgetExceededError


@dataclass(frozen=True, eq=False, kw_only=True)
class _Targets(ValidatedData):
    y: np.ndarray


class _NoisyMean(PrivateEstimator, RegressorMixin, BaseEstimator):
    _privacy_parameters: ClassVar[dict[str, str]] = {"epsilon": "epsilon", "bounds": "bounds", "groups": "groups",
                           "budget": "budget", "random_state": "random_state"}

    def __init__(self, *, epsilon=1.0, bounds=(0.0, 1.0), groups=None, budget=None, random_state=None):
        self.epsilon = epsilon
        self.bounds = bounds
        self.groups = groups
        self.budget = budget
        self.random_state = random_state

    def _validate_data(self, params, X, y, *, sensitive_features=None):
        y = np.asarray(y, dtype=float)
        if y.ndim != 1 or not np.all(np.isfinite(y)):
            raise ValueError("y must be a 1-d array of finite numbers.")
        if np.any((y < params.bounds[0]) | (y > params.bounds[1])):
            raise ValueError("y holds values outside bounds; widen bounds= or clip y.")
        return _Targets(y=y, n_rows=y.size, sensitive_features=sensitive_features)

    def _compute_statistics(self, params, data):
        k = len(data.groups)
        return np.bincount(data.group_index, weights=data.y, minlength=k), np.bincount(data.group_index, minlength=k)

    def _draw_noise(self, params, statistics, noise):
        sums, counts = statistics
        width = params.bounds[1] - params.bounds[0]
        return noise.laplace(sums, 2 * width / params.epsilon), noise.laplace(counts, 2 / params.epsilon)

    def _solve(self, params, noisy, data):
        sums, counts = noisy
        return {"groups_": data.groups, "means_": sums / np.maximum(counts, 1.0)}


Y = np.linspace(0, 1, 40)
G = np.tile(["a", "b"], 20)


def test_fit_sets_results_and_privacy_spent():
    budget = PrivacyBudget(2.0)
    est = _NoisyMean(groups=["a", "b"], budget=budget, random_state=0).fit(None, Y, sensitive_features=G)
    assert est.means_.shape == (2,)
    assert est.privacy_spent_["epsilon"] == 1.0
    assert budget.spent()[0] == pytest.approx(1.0)
    clone(est)


@pytest.mark.parametrize(
    ("changes", "y", "g", "error"),
    [
        ({"bounds": "01"}, Y, G, TypeError),
        ({"bounds": (1.0, 0.0)}, Y, G, ValueError),
        ({"epsilon": -1.0}, Y, G, ValueError),
        ({"groups": None}, Y, G, ValueError),
        ({"budget": 3}, Y, G, TypeError),
        ({}, np.r_[Y[:-1], np.nan], G, ValueError),
        ({}, Y, np.concatenate([G[:-1], ["zzz"]]), ValueError),
        ({}, Y, None, ValueError),
        ({"epsilon": 5.0}, Y, G, PrivacyBudgetExceededError),
    ],
)
def test_refusals_charge_nothing_and_fit_nothing(changes, y, g, error):
    budget = PrivacyBudget(2.0)
    est = _NoisyMean(groups=["a", "b"], budget=budget, random_state=0).set_params(**changes)
    if "budget" in changes:
        budget = PrivacyBudget(2.0)
    with pytest.raises(error):
        est.fit(None, y, sensitive_features=g)
    assert budget.spent()[0] == 0.0
    assert not [k for k in vars(est) if k.endswith("_")]


def test_noise_comes_only_after_the_charge():
    seen = []

    class _Spy(_NoisyMean):
        def _draw_noise(self, params, statistics, noise):
            seen.append(budget.spent()[0])
            return super()._draw_noise(params, statistics, noise)

    budget = PrivacyBudget(2.0)
    _Spy(groups=["a", "b"], budget=budget, random_state=0).fit(None, Y, sensitive_features=G)
    assert seen == [1.0]


def test_template_steps_cannot_be_redefined():
    with pytest.raises(TypeError, match="_charge"):
        type("Bad", (PrivateMechanismMixin,), {"_charge": lambda self, params: None})
    for step in ("_release", "_validate_all", "_resolve_declared_groups", "_set_fitted"):
        with pytest.raises(TypeError, match=step):
            type("Bad", (PrivateEstimator,), {step: lambda self, *args, **kwargs: None})
    with pytest.raises(TypeError, match="role"):
        type("Bad", (PrivateMechanismMixin,), {"_privacy_parameters": {"eps": "epsilonn"}})


def test_bad_random_state_is_refused_before_the_charge():
    budget = PrivacyBudget(2.0)
    with pytest.raises(TypeError):
        _NoisyMean(groups=["a", "b"], budget=budget, random_state=0.5).fit(None, Y, sensitive_features=G)
    assert budget.spent()[0] == 0.0


def test_per_release_overrides_take_budget_and_random_state_only():
    own, other = PrivacyBudget(2.0), PrivacyBudget(2.0)
    est = _NoisyMean(groups=["a", "b"], budget=own, random_state=0)
    results = est._release(None, Y, sensitive_features=G, privacy_overrides={"budget": other, "random_state": 1})
    assert other.spent()[0] == pytest.approx(1.0) and own.spent()[0] == 0.0
    again = _NoisyMean(groups=["a", "b"], random_state=1).fit(None, Y, sensitive_features=G)
    np.testing.assert_array_equal(results["means_"], again.means_)
    with pytest.raises(TypeError, match="only budget and random_state"):
        est._release(None, Y, sensitive_features=G, privacy_overrides={"epsilon": 5.0})
    assert own.spent()[0] == 0.0


def test_the_epsilon_inf_warning_points_at_the_callers_line():
    from dpfair.privacy import PrivacyLeakWarning

    with pytest.warns(PrivacyLeakWarning) as caught:
        _NoisyMean(epsilon=float("inf"), groups=["a", "b"]).fit(None, Y, sensitive_features=G)
    assert caught[0].filename == __file__
