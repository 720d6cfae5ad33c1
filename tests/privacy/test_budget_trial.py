"""The one "can these budgets pay?" trial: PrivacyBudget.can_pay / check_can_pay and check_budgets_cover."""

from __future__ import annotations

import contextlib
import copy
import math
import os

import numpy as np
import pytest

from dpfair.privacy import PrivacyBudget, PrivacyBudgetExceededError, set_default_budget
from dpfair.privacy.budget import check_budgets_cover
from dpfair.privacy.relations import ADD_REMOVE, CHANGE_ATTRIBUTE, REPLACE


def _spend_all(budget: PrivacyBudget, charges) -> bool:
    """The reference: charge a deep copy one by one with ``spend`` itself."""
    trial = copy.deepcopy(budget)
    try:
        for epsilon, delta, *relation in charges:
            trial.spend(epsilon, delta, neighbouring=relation[0] if relation else REPLACE)
    except PrivacyBudgetExceededError:
        return False
    return True


def test_can_pay_agrees_with_spending_a_copy_on_random_charge_sequences():
    rng = np.random.default_rng(34)
    relations = [REPLACE, ADD_REMOVE]
    answers = []
    for _ in range(300):
        budget = PrivacyBudget(float(rng.choice([0.5, 1.0, 2.0, math.inf])), float(rng.choice([0.0, 1e-6, 1e-3])))
        if budget.delta > 0 and rng.random() < 0.5:
            with contextlib.suppress(PrivacyBudgetExceededError):  # the earlier spending, when it fits
                budget.spend_zcdp(float(rng.uniform(0.0001, 0.005)), label="earlier zCDP")
        elif rng.random() < 0.5:
            budget.spend(float(rng.uniform(0.05, 0.4)), label="earlier")
        charges = [(float(rng.uniform(0.01, 0.6)), float(rng.choice([0.0, 0.0, 1e-7, 1e-4])),
                    str(rng.choice(relations))) for _ in range(int(rng.integers(1, 5)))]
        before = (budget.ledger, budget.spent())
        expected = _spend_all(budget, charges)
        assert budget.can_pay(charges) is expected
        assert (budget.ledger, budget.spent()) == before  # nothing charged, whatever the answer
        answers.append(expected)
    assert 50 < sum(answers) < 250  # both answers were exercised


def test_check_can_pay_raises_the_budgets_own_error_and_charges_nothing():
    budget = PrivacyBudget(1.0)
    budget.spend(0.5, label="earlier")
    budget.check_can_pay([(0.25, 0.0), (0.25, 0.0)], label="two fits")  # exactly the rest: accepted
    with pytest.raises(PrivacyBudgetExceededError, match=r"charge 'two fits' would spend \(epsilon=1\.1"):
        budget.check_can_pay([(0.3, 0.0), (0.3, 0.0)], label="two fits")
    assert [e.label for e in budget.ledger] == ["earlier"]
    assert budget.can_pay([]) is True


def test_the_trial_uses_the_relations_of_spend():
    budget = PrivacyBudget(1.0)
    assert budget.can_pay([(0.5, 0.0, ADD_REMOVE)])  # counts 1.0 under replacement
    assert not budget.can_pay([(0.5, 0.0, ADD_REMOVE), (0.01, 0.0)])
    with pytest.raises(PrivacyBudgetExceededError, match="no sound conversion"):
        budget.check_can_pay([(0.1, 0.0, CHANGE_ATTRIBUTE)], label="post-processor")


def test_a_copy_in_another_process_cannot_pay():
    budget = PrivacyBudget(1.0)
    budget._owner_pid = os.getppid()  # as if pickled from the (alive) parent process
    assert budget.can_pay([(0.1, 0.0)]) is False


@pytest.mark.parametrize("charges, match", [
    ([0.5], r"charges\[0\] must be a pair"),
    ([(0.5,)], r"charges\[0\] must be a pair"),
    (["ab"], r"charges\[0\] must be a pair"),
])
def test_a_malformed_charge_is_a_type_error(charges, match):
    with pytest.raises(TypeError, match=match):
        PrivacyBudget(1.0).can_pay(charges)


def test_an_invalid_epsilon_is_an_error_not_a_no():
    with pytest.raises(ValueError, match="epsilon"):
        PrivacyBudget(1.0).can_pay([(-1.0, 0.0)])


def test_budgets_cover_refuses_a_shared_budget_that_pays_each_charge_but_not_both():
    shared, own = PrivacyBudget(1.0), PrivacyBudget(1.0)
    charges = [(shared, 0.6, 0.0, "policies['a'].budget"), (own, 0.6, 0.0, "policies['b'].budget"),
               (shared, 0.6, 0.0, "policies['c'].budget")]
    with pytest.raises(PrivacyBudgetExceededError,
                       match=r"policies\['a'\]\.budget and policies\['c'\]\.budget \(one shared budget\) cannot pay.*"
                             r"nothing was charged; fix it\."):
        check_budgets_cover(charges, fix="fix it")
    assert shared.ledger == () and own.ledger == ()
    check_budgets_cover(charges[:2])  # each alone fits
    assert shared.ledger == () and own.ledger == ()


def test_budgets_cover_sends_a_missing_budget_to_the_default_ledger():
    check_budgets_cover([(None, 5.0, 0.0, "budget")])  # no ledger: nothing to charge, nothing refused
    default_ledger = PrivacyBudget(1.0)
    previous = set_default_budget(default_ledger)
    try:
        with pytest.raises(PrivacyBudgetExceededError, match=r"budget and estimator\.budget \(one shared budget\)"):
            check_budgets_cover([(None, 0.6, 0.0, "budget"), (None, 0.6, 0.0, "estimator.budget")])
        assert default_ledger.ledger == ()
    finally:
        set_default_budget(previous)


def test_budgets_cover_passes_each_charges_relation():
    budget = PrivacyBudget(1.0, neighbouring=REPLACE)
    with pytest.raises(PrivacyBudgetExceededError, match="no sound conversion"):
        check_budgets_cover([(budget, 0.1, 0.0, "budget", CHANGE_ATTRIBUTE)])
    check_budgets_cover([(budget, 0.5, 0.0, "budget", ADD_REMOVE)])
    with pytest.raises(PrivacyBudgetExceededError):
        check_budgets_cover([(budget, 0.6, 0.0, "budget", ADD_REMOVE)])


def test_budgets_cover_refuses_a_budget_that_is_not_one():
    with pytest.raises(TypeError, match=r"policies\['a'\]\.budget must be a dpfair\.privacy\.PrivacyBudget"):
        check_budgets_cover([(1.0, 0.1, 0.0, "policies['a'].budget")])
