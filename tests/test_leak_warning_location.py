"""Every private class's ``epsilon = inf`` PrivacyLeakWarning names the user's line, not dpfair's code.

The release template of :mod:`dpfair.base` raises it several calls deep; a wrong ``stacklevel`` would
point every warning at ``base.py``, where a user cannot tell which of their fits was non-private.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from sklearn.linear_model import LinearRegression, LogisticRegression

from dpfair.classification import DPEqualizedOddsPostProcessor, DPExponentiatedGradient
from dpfair.linear_model import DPLinearRegression, DPLogisticRegression
from dpfair.metrics import PrivateMetricFrame
from dpfair.model_selection import PrivateMSEScorer, PrivateRandomSearch
from dpfair.privacy import PrivacyLeakWarning
from dpfair.regression import FairRegressionPostProcessor
from dpfair.selection import ExponentialSelector

INF = math.inf
RNG = np.random.default_rng(0)
X = RNG.uniform(0, 1, size=(120, 2))
G = np.tile(["a", "b"], 60)
Y_BIN = (X[:, 0] > 0.5).astype(int)
Y_REAL = X[:, 0]

RELEASES = {
    "DPEqualizedOddsPostProcessor": lambda: DPEqualizedOddsPostProcessor(
        LogisticRegression().fit(X, Y_BIN), epsilon=INF, random_state=0).fit(X, Y_BIN, sensitive_features=G),
    "DPExponentiatedGradient": lambda: DPExponentiatedGradient(
        epsilon=INF, delta=1e-5, gamma=0.1, x_norm_bound=2.0, n_iter=2, random_state=0).fit(X, Y_BIN, sensitive_features=G),
    "FairRegressionPostProcessor": lambda: FairRegressionPostProcessor(
        LinearRegression().fit(X, Y_REAL), epsilon=INF, bounds=(0, 1), random_state=0).fit(X, Y_REAL, sensitive_features=G),
    "DPLinearRegression": lambda: DPLinearRegression(
        epsilon=INF, data_norm=2.0, target_bound=1.0, random_state=0).fit(X, Y_REAL),
    "DPLogisticRegression": lambda: DPLogisticRegression(epsilon=INF, data_norm=2.0, random_state=0).fit(X, Y_BIN),
    "PrivateMetricFrame": lambda: PrivateMetricFrame(
        metrics="selection_rate", y_true=Y_BIN, y_pred=Y_BIN, sensitive_features=G, epsilon=INF, random_state=0),
    "ExponentialSelector.select": lambda: ExponentialSelector(
        epsilon=INF, n_select=2, score_bounds=(0, 1), random_state=0).select(Y_REAL[:10]),
    "ExponentialSelector.fit": lambda: ExponentialSelector(
        epsilon=INF, n_select=2, score_bounds=(0, 1), random_state=0).fit(Y_REAL[:10]),
    "PrivateRandomSearch": lambda: PrivateRandomSearch(
        FairRegressionPostProcessor(LinearRegression(), bounds=(0, 1), groups=["a", "b"], prefit=False),
        {"n_bins": [4, 8]}, scoring=PrivateMSEScorer((0, 1)), epsilon=INF, random_state=0,
    ).fit(X, Y_REAL, sensitive_features=G),
}


@pytest.mark.parametrize("name", list(RELEASES))
def test_the_leak_warning_points_at_the_callers_line(name):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        RELEASES[name]()
    leaks = [w for w in caught if issubclass(w.category, PrivacyLeakWarning)]
    assert leaks, f"{name} at epsilon=inf raised no PrivacyLeakWarning"
    assert {w.filename for w in leaks} == {__file__}, [(w.filename, w.lineno, str(w.message)[:60]) for w in leaks]
