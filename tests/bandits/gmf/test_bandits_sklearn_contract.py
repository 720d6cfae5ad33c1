"""The estimator contract (CONTRIBUTING.md) for the group meritocratic bandit policies."""

import math
import pickle

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import NotFittedError

from _registry import contract_instances
from dpfair.bandits import OFUL, FairGreedy, PrivateFairGreedy, RandomPolicy
from dpfair.privacy import PrivacyBudget, PrivacyBudgetExceededError

pytestmark = pytest.mark.filterwarnings("ignore::dpfair.privacy.PrivacyLeakWarning")

POLICIES = [
    OFUL(regularization=2.0, noise_std=0.5, exploration_scale=0.3, random_state=1),
    FairGreedy(regularization=0.5, split_history=False, random_state=2),
    *contract_instances("PrivateFairGreedy"),  # the private one: tests/_registry.py, CONTRACT
    RandomPolicy(random_state=4),
]


@pytest.mark.parametrize("policy", POLICIES, ids=lambda p: type(p).__name__)
def test_get_params_clone_repr_pickle(policy):
    params = policy.get_params()
    twin = clone(policy)
    assert twin is not policy and twin.get_params() == params
    assert type(policy).__name__ + "(" in repr(policy)
    assert twin.set_params(random_state=9) is twin and twin.random_state == 9 and policy.random_state != 9
    with pytest.raises(NotFittedError):
        policy.select(np.zeros((3, 2)))
    policy.reset(3, 2, 4)
    x = np.full((3, 2), 0.3)
    a = policy.select(x)
    policy.update(x, a, 0.5)
    restored = pickle.loads(pickle.dumps(policy))
    assert restored.t_ == policy.t_ == 1
    assert restored.get_params().keys() == params.keys()


def test_init_only_stores_and_validation_happens_in_reset():
    bad = PrivateFairGreedy("big", 2.0, budget_split=-1, context_bound=float("nan"), budget="lots", random_state=1.5)
    assert bad.get_params()["epsilon"] == "big" and bad.get_params()["budget"] == "lots"
    with pytest.raises((TypeError, ValueError), match="epsilon"):
        bad.reset(3, 2, 4)
    with pytest.raises(TypeError, match="random_state"):
        PrivateFairGreedy(1.0, 0.1, random_state=1.5).reset(3, 2, 4)
    with pytest.raises(TypeError, match="budget"):
        PrivateFairGreedy(1.0, 0.1, budget="lots").reset(3, 2, 4)
    with pytest.raises(ValueError, match="context_bound"):
        PrivateFairGreedy(1.0, 0.1, context_bound=math.nan).reset(3, 2, 4)


def test_budget_is_shared_by_clones_and_a_refused_charge_changes_nothing():
    budget = PrivacyBudget(5.0, 0.01)
    pfg = PrivateFairGreedy(2.0, 0.004, budget=budget, random_state=0)
    pfg.reset(3, 2, 10)
    clone(pfg).reset(3, 2, 10)  # the clone charges the caller's budget, not a copy
    assert budget.spent() == pytest.approx((4.0, 0.008))
    with pytest.raises(PrivacyBudgetExceededError):
        clone(pfg).reset(3, 2, 10)
    assert budget.spent() == pytest.approx((4.0, 0.008))
    assert pfg.privacy_spent_["protects"].startswith("every candidate")


def test_secure_noise_by_default():
    pfg = PrivateFairGreedy(1.0, 0.1).reset(3, 2, 4)
    assert pfg._noise.secure
    assert not PrivateFairGreedy(1.0, 0.1, random_state=0).reset(3, 2, 4)._noise.secure
