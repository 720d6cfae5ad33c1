"""Privacy at the seams: seeded noise says so, every guarantee names its neighbouring relation and one budget
converts or refuses, and a budget's charges never get lost in another process (a parallel search once charged 1
for 7 private fits)."""

from __future__ import annotations

import math
import multiprocessing
import pickle
import warnings

import numpy as np
import pytest

from dpfair.linear_model import DPLinearRegression
from dpfair.privacy import (
    BinaryTreeMechanism,
    PrivacyBudget,
    PrivacyBudgetExceededError,
    PrivacyLeakWarning,
    SeededNoiseWarning,
    exponential_mechanism,
    gaussian_mechanism,
    laplace_mechanism,
    set_default_budget,
    top_m_exponential_mechanism,
)
from dpfair.privacy.relations import ADD_REMOVE, CHANGE_ATTRIBUTE, REPLACE, convert_guarantee

RNG = np.random.default_rng(0)
X = RNG.uniform(-1, 1, (120, 3))
Y = X.sum(axis=1) / 3


def _linear(**kwargs):
    return DPLinearRegression(epsilon=1.0, delta=1e-6, data_norm=2.0, target_bound=1.0, **kwargs)


# ------------------------------------------------------------------ item 6: seeded noise at finite epsilon says so
def test_a_seeded_estimator_warns_at_the_users_line_and_marks_privacy_spent():
    with pytest.warns(SeededNoiseWarning, match="seeded noise") as record:
        model = _linear(random_state=0).fit(X, Y)
    assert record[0].filename == __file__  # the user's line, not dpfair's
    assert issubclass(SeededNoiseWarning, PrivacyLeakWarning)
    assert model.privacy_spent_["noise"] == "seeded"


def test_secure_noise_is_silent_and_marked_secure():
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)  # (SeededNoiseWarning is one)
        model = _linear().fit(X, Y)
    assert model.privacy_spent_["noise"] == "secure"


@pytest.mark.parametrize("release", [
    lambda: laplace_mechanism([1.0], sensitivity=1.0, epsilon=1.0, random_state=1),
    lambda: gaussian_mechanism([1.0], sensitivity=1.0, rho=1.0, random_state=1),
    lambda: exponential_mechanism([1.0, 2.0], sensitivity=1.0, epsilon=1.0, random_state=1),
    lambda: top_m_exponential_mechanism([1.0, 2.0, 3.0], 2, sensitivity=1.0, epsilon=1.0, random_state=1),
    lambda: BinaryTreeMechanism(4, (1,), sensitivity=1.0, rho=1.0, random_state=1),
], ids=["laplace", "gaussian", "exponential", "top_m", "tree"])
def test_every_seeded_mechanism_warns_at_the_users_line(release):
    with pytest.warns(SeededNoiseWarning) as record:
        release()
    assert record[0].filename == __file__


# ------------------------------------------------------------------ item 8: neighbouring relations
def test_every_guarantee_names_its_relation():
    assert _linear().fit(X, Y).privacy_spent_["relation"] == REPLACE


def test_group_privacy_conversions_and_refusals():
    assert convert_guarantee(1.0, 0.0, 0.0, ADD_REMOVE, REPLACE) == (2.0, 0.0, 0.0)
    eps, delta, _ = convert_guarantee(1.0, 1e-6, 0.0, ADD_REMOVE, REPLACE)
    assert eps == 2.0 and delta == pytest.approx(1e-6 * (1 + math.e))
    assert convert_guarantee(0.0, 0.0, 0.5, ADD_REMOVE, CHANGE_ATTRIBUTE) == (0.0, 0.0, 2.0)
    assert convert_guarantee(1.0, 1e-6, 0.0, REPLACE, CHANGE_ATTRIBUTE) == (1.0, 1e-6, 0.0)
    for source, target in [(CHANGE_ATTRIBUTE, REPLACE), (REPLACE, ADD_REMOVE), (CHANGE_ATTRIBUTE, ADD_REMOVE)]:
        with pytest.raises(ValueError, match="no sound conversion"):
            convert_guarantee(1.0, 0.0, 0.0, source, target)


def test_one_budget_converts_add_remove_and_refuses_change_attribute_naming_both():
    budget = PrivacyBudget(3.0)  # replace one row
    budget.spend(1.0, label="frame", neighbouring=ADD_REMOVE)
    assert budget.spent() == (2.0, 0.0)  # twice epsilon under replacement, not 1
    with pytest.raises(PrivacyBudgetExceededError, match=r"change one row's sensitive attribute.*replace one row"):
        budget.spend(0.5, label="eo", neighbouring=CHANGE_ATTRIBUTE)
    assert len(budget.ledger) == 1
    with pytest.raises(PrivacyBudgetExceededError):
        budget.spend(0.6, label="frame", neighbouring=ADD_REMOVE)  # 2 + 1.2 > 3
    attribute_budget = PrivacyBudget(2.0, neighbouring=CHANGE_ATTRIBUTE)
    attribute_budget.spend(0.5, label="model")  # replace -> change attribute: unchanged
    attribute_budget.spend(0.5, label="eo", neighbouring=CHANGE_ATTRIBUTE)
    assert attribute_budget.spent() == (1.0, 0.0)
    assert [e.relation for e in attribute_budget.ledger] == [REPLACE, CHANGE_ATTRIBUTE]


def test_zcdp_charges_convert_by_group_privacy():
    budget = PrivacyBudget(10.0, 1e-6)
    budget.spend_zcdp(0.1, label="tree", neighbouring=ADD_REMOVE)
    assert budget.ledger[0].rho == pytest.approx(0.4)


# ------------------------------------------------------------------ processes: charges never get lost
def _spend_in_child(payload: bytes, queue) -> None:  # pragma: no cover - runs in a child process
    budget = pickle.loads(payload)
    try:
        budget.spend(0.1, label="worker")
        queue.put("charged")
    except PrivacyBudgetExceededError as exc:
        queue.put(str(exc))


def _ledger_charge_in_child(queue) -> None:  # pragma: no cover - runs in a child process
    set_default_budget(None)  # a forked child inherits the parent's ledger object: drop it, as a spawned one has none
    import os

    os.environ.setdefault("DPFAIR_DEFAULT_LEDGER_PID", str(os.getppid()))
    try:
        laplace_mechanism([1.0], sensitivity=1.0, epsilon=0.1)
        queue.put("charged")
    except PrivacyBudgetExceededError as exc:
        queue.put(str(exc))


def _run_child(target, *args) -> str:
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    process = context.Process(target=target, args=(*args, queue))
    process.start()
    process.join(60)
    return queue.get(timeout=5)


@pytest.mark.slow
@pytest.mark.processes
def test_a_budget_copied_into_another_process_refuses_to_charge():
    budget = PrivacyBudget(1.0)
    answer = _run_child(_spend_in_child, pickle.dumps(budget))
    assert "created in another process" in answer and "n_jobs=1" in answer
    budget.spend(0.1, label="parent")  # the owner still charges
    assert len(budget.ledger) == 1


@pytest.mark.slow
@pytest.mark.processes
def test_a_worker_of_a_program_with_a_ledger_refuses_budget_free_charges():
    previous = set_default_budget(PrivacyBudget(math.inf, 1e-3))
    try:
        answer = _run_child(_ledger_charge_in_child)
    finally:
        set_default_budget(previous)
    assert "process-wide ledger" in answer and "n_jobs=1" in answer


def test_a_budget_unpickled_after_its_process_ended_is_the_ledger_again():
    budget = PrivacyBudget(1.0)
    restored = pickle.loads(pickle.dumps(budget))
    restored._owner_pid = 2**22 + 12345  # a process that no longer exists
    restored.spend(0.1, label="later session")
    assert restored.spent() == (0.1, 0.0)
