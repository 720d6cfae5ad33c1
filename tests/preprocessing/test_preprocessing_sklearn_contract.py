"""The scikit-learn contract (CONTRIBUTING.md, "The estimator contract") for dpfair.preprocessing."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.utils.estimator_checks import parametrize_with_checks

from _registry import contract_instances
from dpfair.preprocessing import (
    DeclaredImputer,
    DeclaredOneHotEncoder,
    DeclaredRangeScaler,
    DPMedianImputer,
    DPQuantileClipper,
)

# The declared transformers take one declaration for every column (the checks draw their own tables of several
# widths); the encoder maps every level of the checks' random numbers to its "other" outputs.  The private ones
# come from the registry (tests/_registry.py, CONTRACT): a large epsilon and wide declared ranges.
CHECKED = [
    DeclaredOneHotEncoder([0.0, 1.0], handle_unknown="other"),
    DeclaredImputer(0.0),
    DeclaredRangeScaler((-1e4, 1e4), output_range=(-1.0, 1.0)),
    *contract_instances("DPMedianImputer", "DPQuantileClipper"),
]

#: Checks that cannot apply, each with the reason.
EXPECTED_FAILED: dict[str, dict[str, str]] = {
    "DeclaredOneHotEncoder": {},
    "DeclaredImputer": {},
    "DeclaredRangeScaler": {},
    "DPMedianImputer": {},
    "DPQuantileClipper": {},
}


def _expected_failed(estimator):
    return EXPECTED_FAILED[type(estimator).__name__]


@parametrize_with_checks(CHECKED, expected_failed_checks=_expected_failed)
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)


@pytest.mark.parametrize("est", [
    DeclaredOneHotEncoder("not a list", handle_unknown="x"), DeclaredImputer([1, 2]), DeclaredRangeScaler((1, 0)),
    DPMedianImputer(epsilon="x", bounds=-1), DPQuantileClipper(quantile=2.0, epsilon=0),
])
def test_init_only_stores_and_clone_pickle_not_fitted(est):
    assert repr(clone(est).get_params()) == repr(est.get_params())  # (repr: NaN, the default marker, is not == NaN)
    assert repr(pickle.loads(pickle.dumps(est)).get_params()) == repr(est.get_params())
    with pytest.raises(NotFittedError):
        est.transform(np.zeros((2, 2)))
