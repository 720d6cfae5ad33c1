"""The scikit-learn contract (CONTRIBUTING.md, "The estimator contract") for DPEqualizedOddsPostProcessor."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import sklearn
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import cross_validate
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

from dpfair.classification.postprocessing import DPEqualizedOddsPostProcessor
from dpfair.datasets import make_classification
from dpfair.privacy import PrivacyBudget

# Wraps a LogisticRegression fitted inside fit (prefit=False) so the checks can call fit(X, y), and
# declares a single group so that sensitive_features may be omitted (every row is then in that group).
CHECKED = [DPEqualizedOddsPostProcessor(LogisticRegression(), prefit=False, epsilon=50.0, groups=["all"], random_state=0)]

# Any two class labels are accepted since dpfair 0.3 (as in scikit-learn): the label checks that failed
# when only 0/1 was accepted (check_estimators_dtypes, check_classifier_data_not_an_array,
# check_classifiers_classes, check_fit2d_1feature) now pass, so nothing is excluded.
EXPECTED_FAILED: dict[str, str] = {}


def _expected_failed(estimator):
    return EXPECTED_FAILED


@parametrize_with_checks(CHECKED, expected_failed_checks=_expected_failed)
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)


def _data(n=800, seed=0):
    X, y, groups = make_classification(n, disparity=1.5, random_state=seed)
    return X, y, np.where(groups == 0, "a", "b")


def test_pipeline_and_cross_validate_route_sensitive_features_and_charge_a_shared_budget():
    X, y, g = _data()
    budget = PrivacyBudget(10.0, neighbouring="change_attribute")
    post = DPEqualizedOddsPostProcessor(LogisticRegression(), prefit=False, epsilon=2.0, gamma=0.05, groups=["a", "b"],
                                        budget=budget, random_state=0)
    with sklearn.config_context(enable_metadata_routing=True):
        post.set_fit_request(sensitive_features=True).set_predict_request(sensitive_features=True)
        post.set_score_request(sensitive_features=True)
        pipe = Pipeline([("scale", StandardScaler()), ("post", post)]).fit(X, y, sensitive_features=g)
        assert set(np.unique(pipe.predict(X, sensitive_features=g))) <= {0, 1}
        result = cross_validate(pipe, X, y, cv=3, params={"sensitive_features": g})
    assert np.isfinite(result["test_score"]).all()
    assert budget.spent()[0] == pytest.approx(4 * 2.0)  # one charge per fit, clones share the budget


def test_init_only_stores_clone_repr_pickle_and_not_fitted():
    est = DPEqualizedOddsPostProcessor(LogisticRegression(), prefit=False, epsilon=1.0, groups=["a", "b"], random_state=3)
    bad = DPEqualizedOddsPostProcessor(LogisticRegression(), epsilon="x", beta=7, constraints="nope", prefit="yes")
    assert bad.get_params()["prefit"] == "yes" and bad.get_params()["constraints"] == "nope"
    assert clone(est).get_params()["groups"] == ["a", "b"]
    assert "DPEqualizedOddsPostProcessor" in repr(est)
    assert pickle.loads(pickle.dumps(est)).get_params()["random_state"] == 3
    with pytest.raises(NotFittedError):
        est.predict(np.zeros((2, 5)), sensitive_features=["a", "b"])
    with pytest.raises(NotFittedError):
        est.predict_proba(np.zeros((2, 5)), sensitive_features=["a", "b"])
