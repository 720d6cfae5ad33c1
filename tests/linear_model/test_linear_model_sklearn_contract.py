"""The scikit-learn contract (CONTRIBUTING.md, "The estimator contract") for dpfair.linear_model."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.utils.estimator_checks import parametrize_with_checks

from dpfair.linear_model import DPLinearRegression, DPLogisticRegression

# A large epsilon and wide declared bounds: the checks fit on their own random data (rows of norm up
# to a few thousand), and test the private code path (noise drawn, PSD repair), not the noise's size (Laplace: its
# scale falls like 1/epsilon; the Gaussian's only like 1/sqrt(epsilon)).
CHECKED = [
    DPLinearRegression(epsilon=1e12, data_norm=1e4, target_bound=1e4, alpha=1e-3, mechanism="laplace", random_state=0),
    DPLogisticRegression(epsilon=1e6, data_norm=1e4, C=1.0, random_state=0),
]

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
