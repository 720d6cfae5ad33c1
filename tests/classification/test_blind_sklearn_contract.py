"""The scikit-learn contract (CONTRIBUTING.md, "The estimator contract") for DPBlindPostProcessor."""

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

from _registry import contract_instances
from dpfair.classification import DPBlindPostProcessor
from dpfair.datasets import make_classification
from dpfair.privacy import PrivacyBudget

pytestmark = pytest.mark.filterwarnings("ignore::dpfair.privacy.SeededNoiseWarning")

# One declared group: sensitive_features may be omitted (every row in it), so the checks can call fit(X, y).
CHECKED = contract_instances("DPBlindPostProcessor")


@parametrize_with_checks(CHECKED)
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)


def test_pipeline_and_cross_validate_route_sensitive_features_to_fit_only_and_charge_a_shared_budget():
    X, y, g = make_classification(900, disparity=1.5, random_state=0)
    budget = PrivacyBudget(10.0, neighbouring="change_attribute")
    post = DPBlindPostProcessor(LogisticRegression(), prefit=False, epsilon=2.0, groups=[0, 1], budget=budget,
                                random_state=0)
    with sklearn.config_context(enable_metadata_routing=True):
        post.set_fit_request(sensitive_features=True)
        pipe = Pipeline([("scale", StandardScaler()), ("post", post)]).fit(X, y, sensitive_features=g)
        assert set(np.unique(pipe.predict(X))) <= {0, 1}  # blind: predict takes X only
        result = cross_validate(pipe, X, y, cv=3, params={"sensitive_features": g})
    assert np.isfinite(result["test_score"]).all()
    assert budget.spent()[0] == pytest.approx(4 * 2.0)


def test_init_only_stores_clone_repr_pickle_and_not_fitted():
    est = DPBlindPostProcessor(LogisticRegression(), prefit=False, epsilon=1.0, groups=["a", "b"], random_state=3)
    bad = DPBlindPostProcessor(LogisticRegression(), epsilon="x", gamma=7, constraints="nope", prefit="yes")
    assert bad.get_params()["prefit"] == "yes" and bad.get_params()["constraints"] == "nope"
    assert clone(est).get_params()["groups"] == ["a", "b"]
    assert pickle.loads(pickle.dumps(est)).get_params()["random_state"] == 3
    with pytest.raises(NotFittedError):
        est.predict(np.zeros((2, 5)))
