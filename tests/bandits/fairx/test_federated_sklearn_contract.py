"""The parts of the estimator contract that apply to the federated bandit learners (configuration objects
run by ``simulate_federated``; no ``fit``): get_params / set_params / clone / repr / pickling, ``__init__``
storing its arguments unchanged, validation at use time."""

from __future__ import annotations

import math
import pickle

import pytest
from sklearn.base import clone

from _registry import contract_instances
from dpfair.bandits import FairXLinUCB, FederatedSyntheticEnvironment, FedFairXLinUCB, PrivFairXLinUCB, simulate_federated
from dpfair.privacy import PrivacyBudget

OBJECTS = [
    FairXLinUCB(merit_scale=5.0, radius=0.5),
    FedFairXLinUCB("p-fcb", n_steps=3),
    *contract_instances("PrivFairXLinUCB"),  # the private one: tests/_registry.py, CONTRACT
    FederatedSyntheticEnvironment(dim=3, n_actions=4, noise_std=0.2, random_state=1),
]


@pytest.mark.parametrize("obj", OBJECTS, ids=lambda o: type(o).__name__)
def test_params_clone_repr_pickle(obj):
    params = obj.get_params()
    twin = clone(obj)
    assert twin is not obj and twin.get_params() == params
    assert repr(twin) == repr(obj) and type(obj).__name__ in repr(obj)
    assert pickle.loads(pickle.dumps(obj)).get_params() == params
    key = next(iter(params))
    twin.set_params(**{key: params[key]})
    assert twin.get_params() == params


def test_init_stores_arguments_unchanged_and_validates_at_use():
    bad = PrivFairXLinUCB(epsilon=-3, delta=2, context_bound="x", protocol="nope", merit=42)
    assert bad.epsilon == -3 and bad.delta == 2 and bad.context_bound == "x" and bad.merit == 42
    with pytest.raises((ValueError, TypeError)):
        simulate_federated(FederatedSyntheticEnvironment(), {"bad": bad}, 5, 1, [0])


def test_budget_survives_clone_and_is_not_charged_by_construction():
    budget = PrivacyBudget(1.0, 0.5)
    learner = PrivFairXLinUCB(1.0, 0.1, math.sqrt(5), budget=budget, random_state=0)
    clone(learner)
    assert budget.spent() == (0.0, 0.0)
