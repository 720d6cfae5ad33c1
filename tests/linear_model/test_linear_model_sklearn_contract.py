"""The scikit-learn contract (CONTRIBUTING.md, "The estimator contract") for dpfair.linear_model."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.utils.estimator_checks import parametrize_with_checks

from _registry import contract_instances
from dpfair.linear_model import DPLinearRegression, DPLogisticRegression

# the instances live in the one registry (tests/_registry.py, CONTRACT): a large epsilon and wide declared bounds
CHECKED = contract_instances("DPLinearRegression", "DPLogisticRegression")

EXPECTED_FAILED: dict[str, dict[str, str]] = {
    "DPLinearRegression": {},
    "DPLogisticRegression": {},
}


def _expected_failed(estimator):
    return EXPECTED_FAILED[type(estimator).__name__]


@parametrize_with_checks(CHECKED, expected_failed_checks=_expected_failed)
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)


@pytest.mark.parametrize("est", [DPLinearRegression(epsilon="x", data_norm=-1), DPLogisticRegression(C="no", epsilon=0)])
def test_init_only_stores_and_clone_pickle_not_fitted(est):
    assert clone(est).get_params() == est.get_params()
    assert pickle.loads(pickle.dumps(est)).get_params() == est.get_params()
    with pytest.raises(NotFittedError):
        est.predict(np.zeros((2, 2)))
