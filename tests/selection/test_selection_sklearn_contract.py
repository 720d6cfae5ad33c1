"""The estimator contract (CONTRIBUTING.md) for ExponentialSelector."""

import pickle
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.utils.estimator_checks import parametrize_with_checks
from sklearn.utils.validation import check_is_fitted

from dpfair.privacy import PrivacyBudget, PrivacyLeakWarning
from dpfair.selection import ExponentialSelector

_ONE_COLUMN = "X is one column of scores (one per applicant); the check fits on several random columns, which is refused"
#: Checks that cannot apply to a selector, with the reason.  Each contract property they would
#: have covered (fit returns self, pickling, idempotence, not-fitted errors, n_features_in_,
#: params not overwritten) is tested explicitly below on valid scores.
EXPECTED_FAILED_CHECKS = {
    "check_dict_unchanged": _ONE_COLUMN,
    "check_dont_overwrite_parameters": _ONE_COLUMN,
    "check_dtype_object": _ONE_COLUMN,
    "check_estimators_dtypes": _ONE_COLUMN,
    "check_estimators_fit_returns_self": _ONE_COLUMN,
    "check_estimators_nan_inf": _ONE_COLUMN + " (NaN/inf scores are refused: tested in test_selector.py)",
    "check_estimators_overwrite_params": _ONE_COLUMN,
    "check_estimators_pickle": _ONE_COLUMN,
    "check_f_contiguous_array_estimator": _ONE_COLUMN,
    "check_fit2d_1sample": _ONE_COLUMN + " (one applicant with m = 1 is a valid selection)",
    "check_fit2d_predict1d": _ONE_COLUMN + "; there is no predict/transform",
    "check_fit_check_is_fitted": _ONE_COLUMN,
    "check_fit_idempotent": _ONE_COLUMN + "; a private selection is random by design",
    "check_fit_score_takes_y": _ONE_COLUMN,
    "check_n_features_in": _ONE_COLUMN,
    "check_n_features_in_after_fitting": _ONE_COLUMN,
    "check_pipeline_consistency": _ONE_COLUMN + "; a private selection is random by design",
    "check_readonly_memmap_input": _ONE_COLUMN,
    "check_fit2d_1feature": "scores must lie in the declared score_bounds (0, 1); the check's random X does not, and is refused",
    "check_positive_only_tag_during_fit": "scores must lie in the declared score_bounds (0, 1), so negative X is refused",
}


@parametrize_with_checks([ExponentialSelector(1.0, random_state=0)], expected_failed_checks=lambda est: EXPECTED_FAILED_CHECKS)
def test_sklearn_compatible(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        check(estimator)


SCORES = np.array([0.9, 0.1, 0.5, 0.7, 0.3, 0.8])


def test_init_only_stores_and_validation_happens_in_methods():
    bad = ExponentialSelector(-1.0, n_select="two", score_bounds=(1.0, 0.0), utility="median", budget="lots", random_state=1.5)
    assert bad.get_params() == {"epsilon": -1.0, "n_select": "two", "score_bounds": (1.0, 0.0), "utility": "median",
                                "budget": "lots", "random_state": 1.5}
    for call in (lambda: bad.select(SCORES), lambda: bad.fit(SCORES), lambda: bad.selection_probabilities(SCORES)):
        with pytest.raises((ValueError, TypeError), match="epsilon"):
            call()


def test_clone_get_set_params_repr_pickle():
    budget = PrivacyBudget(10.0)
    sel = ExponentialSelector(2.0, 2, (0.0, 1.0), "max", budget=budget, random_state=3)
    params = sel.get_params()
    assert params == {"epsilon": 2.0, "n_select": 2, "score_bounds": (0.0, 1.0), "utility": "max", "budget": budget,
                      "random_state": 3}
    twin = clone(sel)
    assert twin is not sel and twin.get_params()["n_select"] == 2 and twin.budget is budget
    assert twin.set_params(n_select=3, utility="mean") is twin and twin.n_select == 3 and sel.n_select == 2
    assert "ExponentialSelector(" in repr(sel) and "utility='max'" in repr(sel)
    sel.fit(SCORES)
    assert budget.spent()[0] == pytest.approx(2.0)
    clone(sel).fit(SCORES)  # a clone (as in cross_validate) charges the caller's shared budget, not a copy
    assert budget.spent()[0] == pytest.approx(4.0)
    restored = pickle.loads(pickle.dumps(sel))
    np.testing.assert_array_equal(restored.selected_, sel.selected_)
    assert restored.privacy_spent_ == sel.privacy_spent_


def test_not_fitted_then_fitted_state():
    sel = ExponentialSelector(1.0, 2, random_state=0)
    with pytest.raises(NotFittedError):
        check_is_fitted(sel)
    assert sel.fit(SCORES) is sel
    check_is_fitted(sel)
    assert sel.selected_.shape == (2,) and np.all(np.diff(sel.selected_) > 0)
    assert sel.n_features_in_ == 1
    assert sel.privacy_spent_ == {"epsilon": 1.0, "delta": 0.0, "protects": "each applicant's score",
                                  "neighbouring": "replace one applicant's score within score_bounds",
                                  "relation": "replace", "noise": "seeded"}
    # the same seed gives the same selection; fit and select agree; a column works like a vector
    np.testing.assert_array_equal(clone(sel).fit(SCORES[:, None]).selected_, sel.selected_)
    np.testing.assert_array_equal(sel.select(SCORES), sel.selected_)
    frame = pd.DataFrame({"score": SCORES}, index=[10, 3, 7, 1, 0, 99])
    fitted = clone(sel).fit(frame)
    np.testing.assert_array_equal(fitted.selected_, sel.selected_)
    assert list(fitted.feature_names_in_) == ["score"]


def test_refused_fit_keeps_earlier_state_and_budget():
    budget = PrivacyBudget(1.5)
    sel = ExponentialSelector(1.0, 2, budget=budget, random_state=0).fit(SCORES)
    before = sel.selected_.copy()
    from dpfair.privacy import PrivacyBudgetExceededError

    with pytest.raises(PrivacyBudgetExceededError):
        sel.fit(SCORES[::-1])
    np.testing.assert_array_equal(sel.selected_, before)
    assert budget.spent()[0] == pytest.approx(1.0)
    with pytest.raises(ValueError, match="score_bounds"):
        sel.fit(SCORES * 2)
    np.testing.assert_array_equal(sel.selected_, before)
    assert budget.spent()[0] == pytest.approx(1.0)


def test_params_not_modified_by_fit():
    sel = ExponentialSelector(np.float64(1.0), np.int64(2), [0, 1], "mean", random_state=0)
    params = {k: v for k, v in sel.get_params().items()}
    sel.fit(SCORES)
    assert sel.get_params() == params and sel.score_bounds == [0, 1]
