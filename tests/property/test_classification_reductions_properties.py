"""Property tests (hypothesis) for DPExponentiatedGradient (fit, predict, predict_proba).

Each call either returns a finite, correctly shaped result or raises ``ValueError``/``TypeError``
whose message names the offending argument; never another exception, never NaN out.
"""

from __future__ import annotations

import math
import re
import warnings
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from dpfair.classification.reductions import DPExponentiatedGradient

SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])

EPSILONS = st.sampled_from([1e-300, 1e-6, 0.5, 5.0, 1e300, math.inf, 0.0, -1.0, math.nan, "1", True, None])
DELTAS = st.sampled_from([1e-300, 1e-9, 1e-5, 0.5, 0.0, 1.0, -0.1, math.nan, "x", None])
POSITIVES = st.sampled_from([1e-300, 0.01, 1.0, 10.0, 1e300, 0.0, -1.0, math.inf, math.nan, "1", None])  # None: default
DTYPES = st.sampled_from([np.float64, np.float16, np.int64, np.bool_, np.complex128, np.dtype("U3"), object])
ARG_NAMES = (
    "epsilon", "delta", "gamma", "bound_B", "beta", "x_norm_bound", "n_iter", "eta", "groups",
    "use_sensitive_at_test_time", "X", "y", "sensitive_features", "random_state", "class", "x_l1_bound", "nu",
    "constraint_reference", "accountant", "selection",
)


def _named(exc: Exception) -> bool:
    text = str(exc)
    return any(re.search(rf"\b{name}\b", text) for name in ARG_NAMES) or "Input" in text or "feature" in text


@st.composite
def arrays(draw):
    dtype = draw(DTYPES)
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=6))
    if dtype is object:
        return draw(hnp.arrays(object, shape, elements=st.one_of(st.floats(), st.integers(-3, 3), st.none())))
    return draw(hnp.arrays(dtype, shape))


@st.composite
def problems(draw):
    kind = draw(st.sampled_from(["good", "good", "good", "bad_X", "bad_y", "bad_groups", "norm"]))
    n = draw(st.integers(2, 30))
    d = draw(st.integers(1, 4))
    X: Any = draw(hnp.arrays(np.float64, (n, d), elements=st.floats(-1.0, 1.0))) / math.sqrt(d)
    y: Any = draw(hnp.arrays(np.int64, n, elements=st.integers(0, 1)))
    y[0], y[1] = 0, 1
    g: Any = draw(hnp.arrays(np.int64, n, elements=st.integers(0, 1)))
    if kind == "bad_X":
        X = draw(arrays())
    elif kind == "bad_y":
        y = draw(st.one_of(arrays(), st.just(np.arange(n)), st.just(np.full(n, 0.5)), st.none()))
    elif kind == "bad_groups":
        g = draw(st.one_of(arrays(), st.just(np.full(n, 7)), st.none(), st.just([[1, 2]] * n)))
    elif kind == "norm":
        X = X * 1e3
    return X, y, g


def _call(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return fn(*args, **kwargs), None
        except (ValueError, TypeError) as exc:
            assert _named(exc), f"message does not name the argument: {exc}"
            return None, exc


@SETTINGS
@given(
    data=problems(), epsilon=EPSILONS, delta=DELTAS, gamma=st.sampled_from([0.0, 0.1, -0.1, math.inf, "a"]),
    bound_B=POSITIVES, x_norm_bound=POSITIVES, n_iter=st.sampled_from([None, 1, 3, 0, 2.5, -1, True]),
    eta=st.sampled_from([None, 0.5, 0.0, math.nan]), groups=st.sampled_from([None, [0, 1], [0], [1, 0], "01", [0, 0]]),
    aware=st.sampled_from([False, True, "yes"]), beta=st.sampled_from([0.05, 0.0, 1.0, math.nan]),
    x_l1_bound=st.sampled_from([None, None, 2.0, 1e-3, -1.0, math.nan, "1", [1.0, 1.0], np.ones(4)]),
    nu=st.sampled_from([None, None, 0.05, 0.0, -1.0, math.inf, "x"]),
    reference=st.sampled_from(["group0", "overall", "overall", "other", None]),
    accountant=st.sampled_from(["tight", "advanced", "paper", "exact", 1]),
    selection=st.sampled_from(["best", "average", "last"]),
)
def test_fit_predict_raise_value_or_type_error_naming_the_argument(
    data, epsilon, delta, gamma, bound_B, x_norm_bound, n_iter, eta, groups, aware, beta, x_l1_bound, nu, reference,
    accountant, selection,
):
    X, y, g = data
    est = DPExponentiatedGradient(
        epsilon=epsilon, delta=delta, gamma=gamma, bound_B=bound_B, beta=beta, x_norm_bound=x_norm_bound,
        x_l1_bound=x_l1_bound, n_iter=n_iter, eta=eta, nu=nu, constraint_reference=reference, accountant=accountant,
        selection=selection, groups=groups, use_sensitive_at_test_time=aware, random_state=0,
    )
    fitted, exc = _call(est.fit, X, y, sensitive_features=g)
    if exc is not None:
        return
    proba, exc = _call(fitted.predict_proba, X, sensitive_features=g)
    if exc is None:
        assert proba.shape == (len(X), 2) and np.isfinite(proba).all()
        assert ((proba >= 0) & (proba <= 1)).all()
    pred, exc = _call(fitted.predict, X, sensitive_features=g)
    if exc is None:
        assert pred.shape == (len(X),) and set(np.unique(pred)) <= set(fitted.classes_)
    assert np.isfinite(fitted.coef_).all() and np.isfinite(fitted.lambda_).all()


@SETTINGS
@given(X=arrays())
def test_predict_on_bad_X_raises_naming_it(X):
    rng = np.random.default_rng(0)
    Xf = rng.uniform(-0.5, 0.5, size=(40, 3))
    y = (Xf[:, 0] > 0).astype(int)
    est = DPExponentiatedGradient(
        epsilon=math.inf, delta=1e-5, gamma=0.1, bound_B=1.0, x_norm_bound=1.0, n_iter=3, groups=[0, 1]
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(Xf, y, sensitive_features=rng.integers(0, 2, 40))
    out, exc = _call(est.predict_proba, X)
    if exc is None:
        assert np.isfinite(out).all()
