"""PrivacyBudget: charges, composition rule, refusal without side effects."""

import math

import pytest

from dpfair.privacy import PrivacyBudget, PrivacyBudgetExceededError, zcdp_to_approx_dp


def test_spend_and_remaining_with_ledger():
    b = PrivacyBudget(1.0, 1e-6)
    b.spend(0.25, label="hist")
    b.spend(0.25, 1e-7, label="lp")
    b.spend(0.1, label="hist")
    assert b.spent() == pytest.approx((0.6, 1e-7))
    assert b.remaining() == pytest.approx((0.4, 9e-7))
    assert [e.label for e in b.ledger] == ["hist", "lp", "hist"]
    assert b.spent_by_label()["hist"]["epsilon"] == pytest.approx(0.35)


def test_overspending_raises_and_leaves_the_ledger_unchanged():
    b = PrivacyBudget(1.0)
    b.spend(0.75, label="first")
    before = (b.ledger, b.spent())
    with pytest.raises(PrivacyBudgetExceededError, match="over the budget"):
        b.spend(0.5, label="too much")
    with pytest.raises(PrivacyBudgetExceededError):
        b.spend(0.1, 1e-9, label="delta not in budget")
    assert (b.ledger, b.spent()) == before
    b.spend(0.25, label="exactly the rest")  # spending exactly what is left is allowed
    assert b.remaining()[0] == pytest.approx(0.0)


def test_zcdp_charges_compose_additively_and_convert_once():
    b = PrivacyBudget(8.0, 1e-5)
    b.spend(1.0, label="pure")
    b.spend_zcdp(0.2, label="a")
    b.spend_zcdp(0.3, label="b")
    eps, delta = b.spent()
    assert eps == pytest.approx(1.0 + zcdp_to_approx_dp(0.5, 1e-5))
    assert delta == pytest.approx(1e-5)
    with pytest.raises(PrivacyBudgetExceededError):
        b.spend_zcdp(2.0, label="too much")
    assert len(b.ledger) == 3


def test_zcdp_needs_delta_and_infinite_budget_accepts_all():
    with pytest.raises(PrivacyBudgetExceededError):
        PrivacyBudget(10.0).spend_zcdp(0.01)
    free = PrivacyBudget(math.inf, 0.5)
    free.spend(math.inf)
    free.spend_zcdp(100.0)
    assert free.spent()[0] == math.inf


@pytest.mark.parametrize(
    ("args", "match"),
    [((0.0,), "epsilon"), ((-1.0,), "epsilon"), ((float("nan"),), "epsilon"), ((1.0, 1.0), "delta"), ((1.0, -1e-9), "delta"),
     ((1.0, float("nan")), "delta"), (("1",), "epsilon")],
)
def test_bad_budget_arguments(args, match):
    with pytest.raises((ValueError, TypeError), match=match):
        PrivacyBudget(*args)
    b = PrivacyBudget(10.0, 0.5)
    with pytest.raises((ValueError, TypeError), match=match):
        b.spend(*args)
    assert b.ledger == ()


def test_sklearn_clone_keeps_the_same_budget_object():
    from sklearn.base import clone

    from dpfair.regression import FairRegressionPostProcessor
    from dpfair.selection import ExponentialSelector

    budget = PrivacyBudget(1.0)
    assert clone(budget) is budget
    for est in (ExponentialSelector(1.0, budget=budget), FairRegressionPostProcessor(epsilon=1.0, budget=budget)):
        assert clone(est).budget is budget
