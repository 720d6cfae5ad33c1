"""Property tests (hypothesis) of PrivateMetricFrame: any valid input gives finite estimates inside their intervals."""

from __future__ import annotations

import math
import warnings

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dpfair.metrics import SUPPORTED_METRICS, PrivateMetricFrame
from dpfair.privacy import PrivacyLeakWarning

COUNT = [m for m in SUPPORTED_METRICS
         if m not in ("mean_squared_error", "mean_absolute_error", "mean_prediction", "count", "r2_score")]
#: every metric in [0, 1] (the count is a number of rows; r2 lies in (-inf, 1]: tests/metrics/test_r2_score.py)
RATES = [m for m in SUPPORTED_METRICS if m not in ("count", "r2_score")]


@st.composite
def inputs(draw):
    n = draw(st.integers(1, 60))
    n_groups = draw(st.integers(1, 4))
    rows = st.lists(st.integers(0, 1), min_size=n, max_size=n)
    y_true, y_pred = np.array(draw(rows)), np.array(draw(rows))
    group = np.array(draw(st.lists(st.integers(0, n_groups - 1), min_size=n, max_size=n)))
    metrics = draw(st.lists(st.sampled_from(RATES), min_size=1, max_size=4, unique=True))
    epsilon = draw(st.sampled_from([0.05, 1.0, 10.0, math.inf]))
    return dict(metrics={m: m for m in metrics}, y_true=y_true, y_pred=y_pred, sensitive_features=group,
                groups=list(range(n_groups)), epsilon=epsilon, bounds=(0.0, 1.0), noise_random_state=draw(st.integers(0, 99)),
                random_state=0, n_boot=200 if math.isfinite(epsilon) else None)  # inf: fairlearn's n_boot


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
        assert np.isfinite(lower).all() and np.isfinite(upper).all(), name
        known = ~np.isnan(value)  # NaN: undefined (0/0) or not measurable at this epsilon, with the whole range
        assert (lower[known] <= value[known] + 1e-12).all() and (value[known] <= upper[known] + 1e-12).all(), name
        assert (value[known] >= -1e-12).all() and (value[known] <= 1 + 1e-12).all(), name  # every metric: [0, 1]
        assert (lower[~known] == 0).all() and (upper[~known] == 1).all(), name
    if math.isfinite(kwargs["epsilon"]):  # a flagged group is NaN at a finite epsilon
        assert np.isnan(np.asarray(mf.by_group, float)[np.asarray(mf.flagged)]).all()
    assert {"epsilon", "delta", "protects", "neighbouring"} <= set(mf.privacy_spent_)
    assert mf.flagged.shape == mf.by_group.shape


@settings(max_examples=30, derandomize=True, database=None, deadline=None)
@given(inputs())
def test_from_counts_gives_the_frame_of_the_rows(kwargs):
    import pandas as pd

    kwargs = {**kwargs, "metrics": {k: v for k, v in kwargs["metrics"].items() if v in COUNT} or {"sr": "selection_rate"}}
    rows = pd.DataFrame({"g": kwargs["sensitive_features"], "t": kwargs["y_true"], "p": kwargs["y_pred"]})
    counts = rows.groupby(["g", "t", "p"]).size().rename("n").reset_index()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        from_rows = PrivateMetricFrame(**{**kwargs, "sensitive_features": pd.Series(kwargs["sensitive_features"], name="g")})
        from_counts = PrivateMetricFrame.from_counts(
            counts, metrics=kwargs["metrics"], sensitive_features="g", y_true="t", y_pred="p", count="n",
            epsilon=kwargs["epsilon"], groups=kwargs["groups"], noise_random_state=kwargs["noise_random_state"],
            random_state=kwargs["random_state"], n_boot=kwargs["n_boot"],
        )
    assert from_counts.noisy_table_.equals(from_rows.noisy_table_)
    assert from_counts.by_group.equals(from_rows.by_group)
    assert from_counts.conf_int["difference"]["upper"].equals(from_rows.conf_int["difference"]["upper"])


@settings(max_examples=15, derandomize=True, database=None, deadline=None)
@given(inputs(), st.integers(1, 5))
def test_partial_count_tables_add_up_to_the_table_of_all_rows(kwargs, n_parts):
    import pandas as pd

    from dpfair.metrics import add_count_tables, count_table

    rows = pd.DataFrame({"g": kwargs["sensitive_features"], "t": kwargs["y_true"], "p": kwargs["y_pred"]})
    options = dict(sensitive_features=["g"], y_true="t", y_pred="p", sums={"se": "mean_squared_error"}, bounds=(0.0, 1.0))
    parts = [count_table(rows.iloc[i], **options) for i in np.array_split(np.arange(len(rows)), n_parts) if len(i)]
    whole = count_table(rows, **options)
    added = add_count_tables(parts, ["g", "t", "p"])
    pd.testing.assert_frame_equal(added.reset_index(drop=True), whole.reset_index(drop=True), check_dtype=False)
    assert added["count"].sum() == len(rows)
