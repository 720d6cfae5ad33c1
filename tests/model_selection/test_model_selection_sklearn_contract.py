"""The scikit-learn contract (CONTRIBUTING.md, "The estimator contract") for the private search."""

from __future__ import annotations

import pickle
import re

import pytest
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.utils.estimator_checks import parametrize_with_checks

from _registry import contract_instances
from dpfair.model_selection import PrivateMSEScorer, PrivateRandomSearch
from dpfair.privacy import PrivacyBudget
from dpfair.regression import FairRegressionPostProcessor

# The search wraps a post-processor that fits its Ridge inside fit (prefit=False), so the checks can call
# fit(X, y) on any X; a single declared group lets sensitive_features be omitted.  A large epsilon keeps
# the selected model accurate enough for check_regressors_train.  (The instance: tests/_registry.py, CONTRACT.)
CHECKED = contract_instances("PrivateRandomSearch")

# check name -> reason; every other check must pass.
EXPECTED_FAILED: dict[str, dict[str, str]] = {"PrivateRandomSearch": {}}


def _expected_failed(estimator):
    return EXPECTED_FAILED[type(estimator).__name__]


_CHECKS = parametrize_with_checks(CHECKED, expected_failed_checks=_expected_failed)
# The test ids hold the instance's repr, whose scorer has none of its own ("... object at 0x7f..."): without the
# address, so that every pytest-xdist worker collects the same ids (make test runs the suite on 2 workers).
_CHECKS = pytest.mark.parametrize(
    *_CHECKS.args, ids=lambda obj, name=_CHECKS.kwargs["ids"]: re.sub(r"objectat0x[0-9a-fA-F]+", "object", name(obj)))


@pytest.mark.filterwarnings("ignore::dpfair.privacy.PrivacyLeakWarning")
@pytest.mark.filterwarnings("ignore:some outputs lie outside bounds")
@_CHECKS
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)


def test_init_only_stores_and_clone_params_repr_pickle_work():
    budget = PrivacyBudget(5.0)
    search = PrivateRandomSearch(FairRegressionPostProcessor(groups=["a"]), {"alpha": [0.0]},
                                 scoring=PrivateMSEScorer((0, 1)), epsilon="bad", n_trials="nope", budget=budget)
    assert search.get_params()["epsilon"] == "bad" and search.n_trials == "nope"  # validated only in fit
    copy = clone(search)
    assert copy.budget is budget and copy.estimator is not search.estimator  # a budget is shared, not copied
    assert "PrivateRandomSearch" in repr(search)
    search.set_params(epsilon=2.0, estimator__alpha=0.1)
    assert search.epsilon == 2.0 and search.estimator.alpha == 0.1
    assert pickle.loads(pickle.dumps(search)).get_params()["epsilon"] == 2.0
    with pytest.raises(NotFittedError):
        search.predict([0.5])
