"""Property tests (hypothesis) of PrivateMetricFrame: any valid input gives finite estimates inside their intervals."""

from __future__ import annotations

import math
import warnings

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dpfair.metrics import SUPPORTED_METRICS, PrivateMetricFrame
from dpfair.privacy import PrivacyLeakWarning

COUNT = [m for m in SUPPORTED_METRICS if m not in ("mean_squared_error", "mean_absolute_error", "mean_prediction")]


@st.composite
def inputs(draw):
    n = draw(st.integers(1, 60))
    n_groups = draw(st.integers(1, 4))
    rows = st.lists(st.integers(0, 1), min_size=n, max_size=n)
    y_true, y_pred = np.array(draw(rows)), np.array(draw(rows))
    group = np.array(draw(st.lists(st.integers(0, n_groups - 1), min_size=n, max_size=n)))
    metrics = draw(st.lists(st.sampled_from(SUPPORTED_METRICS), min_size=1, max_size=4, unique=True))
    epsilon = draw(st.sampled_from([0.05, 1.0, 10.0, math.inf]))
    return dict(metrics={m: m for m in metrics}, y_true=y_true, y_pred=y_pred, sensitive_features=group,
                groups=list(range(n_groups)), epsilon=epsilon, bounds=(0.0, 1.0), random_state=draw(st.integers(0, 99)))


@settings(max_examples=60, derandomize=True, database=None, deadline=None)
@given(inputs())
def test_estimates_are_finite_in_range_and_inside_their_intervals(kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        mf = PrivateMetricFrame(**kwargs)
    ci = mf.conf_int
    checks = [("by_group", mf.by_group), ("overall", mf.overall), ("difference", mf.difference()), ("ratio", mf.ratio()),
              ("difference_to_overall", mf.difference(method="to_overall")),
              ("ratio_to_overall", mf.ratio(method="to_overall"))]
    for name, estimate in checks:
        value = np.asarray(estimate, dtype=float)
        lower, upper = np.asarray(ci[name]["lower"], float), np.asarray(ci[name]["upper"], float)
        assert np.isfinite(value).all() and np.isfinite(lower).all() and np.isfinite(upper).all(), name
        assert (lower <= value + 1e-12).all() and (value <= upper + 1e-12).all(), name
        assert (value >= -1e-12).all() and (value <= 1 + 1e-12).all(), name  # every metric here lies in [0, 1]
    assert set(mf.privacy_spent_) == {"epsilon", "delta", "protects", "neighbouring"}
    assert mf.flagged.shape == mf.by_group.shape
