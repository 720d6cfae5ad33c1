"""Property tests (hypothesis) for DPEqualizedOddsPostProcessor.

Each call either returns finite, correctly shaped probabilities and 0/1 predictions or raises
``ValueError``/``TypeError`` whose message names the offending argument; never another exception,
never NaN out.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from sklearn.linear_model import LogisticRegression

from dpfair.classification.postprocessing import DPEqualizedOddsPostProcessor

SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])

BASE = LogisticRegression().fit(np.array([[0.0, 0.0], [1.0, 1.0], [0.0, 1.0], [1.0, 0.0]]), [0, 1, 0, 1])
DTYPES = st.sampled_from([np.float64, np.float16, np.int64, np.bool_, np.complex128, np.dtype("U3"), object])
VALID = {
    "epsilon": [1e-300, 1e-6, 0.5, 5.0, 1e300, math.inf],
    "gamma": [0.0, 0.1, 1e308],
    "beta": [0.05, 0.5, 1e-300],
    "constraints": ["equalized_odds", "true_positive_rate_parity", "false_positive_rate_parity"],
    "prefit": [True],
}
INVALID = {
    "epsilon": [0.0, -1.0, math.nan, "1", True, None],
    "gamma": [-0.1, math.nan, math.inf, "0"],
    "beta": [0.0, 1.0, math.nan, "x"],
    "constraints": ["demographic_parity", None],
    "prefit": ["yes"],
}
NAMES = ("X", "y", "sensitive_features", "epsilon", "gamma", "beta", "constraints", "groups", "prefit", "q~_ay", "LP~")


def _array(draw: Callable, shape: tuple[int, ...]) -> np.ndarray:
    dtype = draw(DTYPES)
    if dtype is object:
        elements = st.one_of(st.floats(), st.integers(-2, 2), st.text(max_size=2), st.none())
        return draw(hnp.arrays(object, shape, elements=elements))
    return draw(hnp.arrays(dtype, shape))


@st.composite
def problems(draw: Callable) -> dict[str, Any]:
    n = draw(st.integers(1, 30))
    good = draw(st.booleans())
    broken = draw(st.sampled_from([None, None, None, None, *VALID]))
    if good:
        X = draw(hnp.arrays(np.float64, (n, 2), elements=st.floats(-3, 3)))
        y = np.asarray(draw(st.lists(st.integers(0, 1), min_size=n, max_size=n)))
    else:
        X = _array(draw, draw(st.sampled_from([(n, 2), (n, 3), (n,), (0, 2), (n, 2, 1)])))
        y = _array(draw, draw(st.sampled_from([(n,), (n + 1,), (n, 1), (n, 2), ()])))
    groups = draw(st.sampled_from([["a", "b"], ["a", "b", "c"], ["a"], None, [], ["a", "a"], "ab"]))
    sensitive = draw(st.one_of(
        st.lists(st.sampled_from(["a", "b"]), min_size=n, max_size=n),
        st.lists(st.sampled_from(["a", "b", "c", 1]), min_size=n, max_size=n),
        st.lists(st.sampled_from(["a", "b"]), min_size=0, max_size=n + 2),
        st.none(),
        st.just([["a"]] * n),
    ))
    return {
        "X": X, "y": y, "sensitive_features": sensitive,
        "params": {
            **{name: draw(st.sampled_from((INVALID if name == broken else VALID)[name])) for name in VALID},
            "groups": groups, "random_state": draw(st.integers(0, 3)),
        },
    }


@SETTINGS
@given(problems())
def test_fit_predict_never_crash_nor_return_nan(problem):
    est = DPEqualizedOddsPostProcessor(BASE, **problem["params"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            est.fit(problem["X"], problem["y"], sensitive_features=problem["sensitive_features"])
        except (ValueError, TypeError) as exc:
            assert any(name in str(exc) for name in NAMES), str(exc)
            event("refused")
            return
        event("fitted")
        proba = est.predict_proba(problem["X"], sensitive_features=problem["sensitive_features"])
        pred = est.predict(problem["X"], sensitive_features=problem["sensitive_features"])
    n = np.asarray(problem["X"]).shape[0]
    assert proba.shape == (n, 2) and np.isfinite(proba).all() and ((proba >= 0) & (proba <= 1)).all()
    assert pred.shape == (n,) and set(np.unique(pred)) <= {0, 1}
    assert np.isfinite(est.noisy_frequencies_).all() and np.isfinite(est.objective_)
