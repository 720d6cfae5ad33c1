"""The scikit-learn contract (CONTRIBUTING.md, "The estimator contract") for the attribute-blind post-processor."""

from __future__ import annotations

import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

from _registry import contract_instances

# A Ridge fitted inside fit (prefit=False) and a single declared group, as for the aware post-processor: the
# checks call fit(X, y) on any X, and with one group no membership model is needed.
CHECKED = contract_instances("BlindFairRegressionPostProcessor")


@pytest.mark.filterwarnings("ignore::dpfair.privacy.PrivacyLeakWarning")
@pytest.mark.filterwarnings("ignore:some outputs lie outside bounds")
@parametrize_with_checks(CHECKED)
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)
