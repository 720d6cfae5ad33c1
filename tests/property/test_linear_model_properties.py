"""Property tests (hypothesis) for every public entry point of dpfair.linear_model.

Each fit either returns finite coefficients and predictions or raises ``ValueError``/``TypeError`` whose
message names the offending argument; never another exception, never NaN out.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from dpfair.linear_model import DPLinearRegression, DPLogisticRegression

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
NUMBERS = [1e-300, 1e-6, 0.5, 1.0, 3.0, 1e300, math.inf, 0.0, -1.0, math.nan, "1", True, None]
NAMES = ("X", "y", "epsilon", "delta", "data_norm", "target_bound", "alpha", "fit_intercept", "mechanism", "C",
         "intercept_scaling", "max_iter", "budget", "random_state", "classes", "class", "sample", "feature",
         "Complex", "NaN", "infinity", "dtype", "too large", "feature_bounds", "range_share")


@st.composite
def problems(draw):
    n = draw(st.sampled_from([0, 1, 2, 5, 40, 40, 40]))
    d = draw(st.sampled_from([1, 3]))
    kind = draw(st.sampled_from(["ok"] * 6 + ["nan", "inf", "huge", "str", "complex", "shape"]))
    rng = np.random.default_rng(draw(st.integers(0, 5)))
    X = rng.uniform(-0.5, 0.5, size=(n, d))
    if kind == "nan" and n:
        X[0, 0] = np.nan
    elif kind == "inf" and n:
        X[0, 0] = np.inf
    elif kind == "huge":
        X = X * 1e200
    elif kind == "str":
        X = X.astype(str)
    elif kind == "complex":
        X = X + 1j
    elif kind == "shape":
        X = X.reshape(-1)
    y = draw(st.sampled_from(["binary", "binary", "strings", "one", "three", "short", "continuous", "continuous"]))
    labels = {
        "binary": np.arange(n) % 2, "strings": np.where(np.arange(n) % 2, "a", "b"), "one": np.zeros(n),
        "three": np.arange(n) % 3, "short": np.arange(max(n - 1, 0)) % 2, "continuous": rng.uniform(-1, 1, n),
    }[y]
    return X, labels


def _check(est, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            est.fit(X, y)
        except (ValueError, TypeError) as exc:
            assert any(name in str(exc) for name in NAMES), str(exc)
            event("refused")
            return
        event("fitted")
        assert np.isfinite(est.coef_).all() and np.isfinite(est.intercept_).all()
        predictions = est.predict(X)
        if isinstance(est, DPLinearRegression):
            assert np.isfinite(predictions).all()
        else:
            assert set(predictions.tolist()) <= set(est.classes_.tolist())


LINEAR_VALID = {"epsilon": [1e-300, 0.5, 3.0, math.inf], "delta": [1e-6, 0.1], "data_norm": [1.0, 50.0, 1e300],
                "target_bound": [1.0, 50.0, (-1.0, 1.0), (-2.0, 5.0)], "alpha": [0.0, 1.0, 1e300, "auto"],
                "fit_intercept": [True, False], "mechanism": ["gaussian", "laplace", "auto"]}
#: the per-feature declaration, feature_bounds (data_norm is then left out)
RANGES_VALID = {"epsilon": [1e-300, 0.5, 3.0, math.inf], "delta": [1e-6, 0.1],
                "feature_bounds": [(-0.5, 0.5), (-1.0, 1e6), [(-0.5, 0.5)] * 3, [(-0.5, 0.5)]],
                "target_bound": [1.0, (-1.0, 1.0), (-1.0, 2.0)], "alpha": [0.0, 1.0, "auto"], "fit_intercept": [True, False],
                "mechanism": ["gaussian", "laplace", "auto"], "range_share": [0.0, 0.2, 0.9]}
LOGISTIC_VALID = {"epsilon": [1e-300, 0.5, 3.0, math.inf], "data_norm": [1.0, 50.0], "C": [1e-300, 0.05, 1.0, 1e300],
                  "fit_intercept": [True, False], "intercept_scaling": [1.0, 3.0], "max_iter": [1, 100]}
INVALID = [*NUMBERS, "gaussian", [1.0], -3, (1.0, -1.0), (0.0, math.nan), "auto", [(0.0, 1.0), "x"]]


@st.composite
def params(draw, valid):
    broken = draw(st.sampled_from([None, None, *valid]))
    return {name: draw(st.sampled_from(INVALID if name == broken else values)) for name, values in valid.items()}


@SETTINGS
@given(problems(), params(LINEAR_VALID))
def test_linear_regression_never_crashes_nor_returns_nan(problem, kwargs):
    _check(DPLinearRegression(**kwargs, random_state=0), *problem)


@SETTINGS
@given(problems(), params(LOGISTIC_VALID))
def test_logistic_regression_never_crashes_nor_returns_nan(problem, kwargs):
    _check(DPLogisticRegression(**kwargs, random_state=0), *problem)


@SETTINGS
@given(problems(), params(RANGES_VALID))
def test_linear_regression_with_feature_bounds_never_crashes_nor_returns_nan(problem, kwargs):
    _check(DPLinearRegression(**kwargs, random_state=0), *problem)
