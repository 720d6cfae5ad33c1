"""The scikit-learn contract (CONTRIBUTING.md, "The estimator contract") for DPExponentiatedGradient."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest
import sklearn
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import cross_validate
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import MaxAbsScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

from dpfair.classification.reductions import DPExponentiatedGradient
from dpfair.datasets import make_classification
from dpfair.privacy import PrivacyBudget

# these small fits afford few rounds by design: the estimator's SmallBudgetWarning is expected here
pytestmark = pytest.mark.filterwarnings("ignore::dpfair.classification.SmallBudgetWarning")

# One declared group, so fit(X, y) works without sensitive_features (every row is in that group, as
# for the regression estimators); a large x_norm_bound because the checks' X is not scaled.
CHECKED = [
    DPExponentiatedGradient(
        epsilon=50.0, delta=1e-5, gamma=0.05, bound_B=1.0, x_norm_bound=1e6, groups=["all"], random_state=0
    ),
]

# check name -> reason; every other check must pass.
# With one declared group there is no constraint and one round (T = 1): a deterministic linear classifier, so
# every check applies, the randomized predict included (a single hypothesis has nothing to draw).  With several
# groups predict samples a hypothesis per row: check_methods_sample_order_invariance and
# check_methods_subset_invariance would then not apply (a row's draw depends on its position in the batch).
EXPECTED_FAILED: dict[str, str] = {}


@pytest.mark.filterwarnings("ignore::dpfair.privacy.PrivacyLeakWarning")
@parametrize_with_checks(CHECKED, expected_failed_checks=lambda est: EXPECTED_FAILED)
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)


def _data(n=900, seed=0):
    X, y, g = make_classification(n, n_features=4, random_state=seed)
    return X / np.linalg.norm(X, axis=1).max(), y, np.where(g == 0, "a", "b")


def _estimator(**kwargs):
    params = dict(epsilon=5.0, delta=1e-5, gamma=0.05, bound_B=1.0, x_norm_bound=1.0, groups=["a", "b"], random_state=0)
    params.update(kwargs)
    return DPExponentiatedGradient(**params)


def test_routing_in_pipeline_and_cross_validate_charges_a_shared_budget():
    X, y, g = _data()
    budget = PrivacyBudget(100.0, 0.5, neighbouring="change_attribute")
    with sklearn.config_context(enable_metadata_routing=True):
        clf = _estimator(budget=budget, x_norm_bound=2.0).set_fit_request(sensitive_features=True)
        pipe = Pipeline([("scale", MaxAbsScaler()), ("clf", clf)])
        result = cross_validate(pipe, X, y, cv=3, params={"sensitive_features": g}, error_score="raise")
        assert len(result["test_score"]) == 3 and np.isfinite(result["test_score"]).all()
    assert budget.spent()[0] == pytest.approx(3 * 5.0)


def test_init_only_stores_and_clone_params_repr_pickle_work():
    est = _estimator()
    bad = DPExponentiatedGradient(epsilon="x", delta=-1, gamma=None, bound_B=0, x_norm_bound=None, groups="ab")
    assert bad.get_params()["epsilon"] == "x"  # stored, validated only in fit
    copy = clone(est)
    assert copy.get_params()["groups"] == ["a", "b"]
    assert "DPExponentiatedGradient" in repr(est)
    est.set_params(random_state=4)
    assert pickle.loads(pickle.dumps(est)).get_params()["random_state"] == 4


def test_not_fitted_raises():
    for method in ("predict", "predict_proba"):
        with pytest.raises(NotFittedError):
            getattr(_estimator(), method)(np.zeros((2, 4)))


def test_clone_keeps_the_budget_shared_and_privacy_spent_shape():
    budget = PrivacyBudget(10.0, 1e-3, neighbouring="change_attribute")
    est = _estimator(budget=budget)
    assert clone(est).budget is budget
    X, y, g = _data()
    spent = est.fit(X, y, sensitive_features=g).privacy_spent_
    # the one shape of dpfair._estimator.privacy_spent (with keys such as the relation and the noise)
    assert set(spent) >= {"epsilon", "delta", "protects", "neighbouring"}
    assert spent["epsilon"] == 5.0 and not math.isinf(spent["delta"])
