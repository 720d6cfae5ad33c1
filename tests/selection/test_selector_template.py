"""ExponentialSelector is one release of dpfair.base's template (validate, charge once, draw)."""

from __future__ import annotations

import numpy as np
import pytest

from dpfair.base import PrivateEstimator
from dpfair.privacy import PrivacyBudget
from dpfair.selection import ExponentialSelector

SCORES = np.array([0.129, 0.499, 0.601, 0.029, 0.148, 0.928, 0.07, 0.13, 0.948, 0.622])
#: selections of the selector before it used the template (same seeds): the draws are unchanged
BEFORE = {"mean": [2, 6, 7], "rms": [3, 7, 9], "min": [1, 3, 4], "max": [2, 3, 6]}


def test_the_selector_uses_the_template():
    assert isinstance(ExponentialSelector(1.0), PrivateEstimator)
    assert "_release" not in vars(ExponentialSelector)
    with pytest.raises(TypeError, match="redefines _release"):
        type("Broken", (ExponentialSelector,), {"_release": lambda self, *a, **k: None})


@pytest.mark.parametrize("utility", list(BEFORE))
def test_same_seed_same_selection_as_before(utility):
    assert ExponentialSelector(1.0, 3, utility=utility, random_state=5).select(SCORES).tolist() == BEFORE[utility]
    by_call = ExponentialSelector(1.0, 3, utility=utility).select(SCORES, random_state=np.random.default_rng(5))
    assert by_call.tolist() == BEFORE[utility]
    fitted = ExponentialSelector(1.0, 3, utility=utility, random_state=5).fit(SCORES[:, None])
    assert fitted.selected_.tolist() == BEFORE[utility]


def test_select_and_fit_charge_once_with_the_same_label():
    budget = PrivacyBudget(5.0)
    selector = ExponentialSelector(1.0, 2, utility="max", budget=budget, random_state=0)
    selector.select(SCORES)
    selector.fit(SCORES)
    other = PrivacyBudget(5.0)
    selector.select(SCORES, budget=other)  # the per-call budget replaces the constructor's
    assert [(e.epsilon, e.label) for e in budget.ledger] == [(1.0, "ExponentialSelector(max, m=2)")] * 2
    assert len(other.ledger) == 1
    assert selector.privacy_spent_["epsilon"] == 1.0


def test_a_refused_random_state_override_charges_nothing_and_fits_nothing():
    budget = PrivacyBudget(5.0)
    selector = ExponentialSelector(1.0, budget=budget)
    with pytest.raises((TypeError, ValueError), match="random_state"):
        selector.select(SCORES, random_state=-1)
    assert budget.spent() == (0.0, 0.0) and not hasattr(selector, "selected_")


def test_score_bounds_too_wide_for_float64_named():
    with pytest.raises(ValueError, match="score_bounds"):
        ExponentialSelector(1.0, score_bounds=(-1e308, 1e308)).select(SCORES)
