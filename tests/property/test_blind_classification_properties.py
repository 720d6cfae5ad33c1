"""Property tests (hypothesis) for DPBlindPostProcessor and DPFairClassifier (blind at prediction).

Valid inputs at their extremes (``epsilon`` from 1e-6 to inf, 2-4 groups, a handful of rows, a group without rows,
a constant feature column) never crash nor return NaN: the probabilities are finite and in [0, 1], the rule is
monotone in the score within each membership cell, and under the attribute relation its (exact) training error is
never above the best constant's.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.linear_model import LogisticRegression

from dpfair.classification import DPBlindPostProcessor, DPFairClassifier

SETTINGS = settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)


@st.composite
def tasks(draw):
    n = draw(st.integers(8, 120))
    n_groups = draw(st.integers(2, 4))
    seed = draw(st.integers(0, 2**16))
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3)) * draw(st.sampled_from([1e-3, 1.0, 1e3]))
    if draw(st.booleans()):
        X[:, 2] = 1.0  # a constant column
    y = (X[:, 0] + rng.normal(size=n) > 0).astype(int)
    y[:2] = [0, 1]  # two labels
    g = rng.integers(0, n_groups - draw(st.integers(0, 1)), size=n)  # sometimes the last group has no rows
    epsilon = draw(st.sampled_from([1e-6, 0.05, 1.0, 50.0, math.inf]))
    return X, y, g, list(range(n_groups)), epsilon


@SETTINGS
@given(tasks())
def test_blind_post_processor_is_finite_monotone_and_never_above_the_constant(task):
    X, y, g, groups, epsilon = task
    base = LogisticRegression().fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = DPBlindPostProcessor(base, epsilon=epsilon, groups=groups, random_state=0).fit(
            X, y, sensitive_features=g)
        proba = est.predict_proba(X)
    assert proba.shape == (X.shape[0], 2) and np.isfinite(proba).all()
    assert ((proba >= 0) & (proba <= 1)).all()
    assert (np.diff(est.probabilities_, axis=0) >= -1e-9).all()
    p1 = proba[:, 1]
    error = float(np.mean(np.where(y == 1, 1 - p1, p1)))
    assert error <= est.constant_error_ + 1e-9
    assert 0.0 <= est.guaranteed_violation_ <= 1.0


@SETTINGS
@given(tasks())
def test_recommended_blind_classifier_never_crashes_on_valid_extremes(task):
    X, y, g, groups, epsilon = task
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = DPFairClassifier(epsilon=epsilon, groups=groups, random_state=1).fit(X, y, sensitive_features=g)
        proba = est.predict_proba(X)
        labels = est.predict(X)
    assert np.isfinite(proba).all() and set(np.unique(labels)) <= set(est.classes_)
    assert est.mechanism_ == "DPBlindPostProcessor"
