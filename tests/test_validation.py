"""One array coercion, ``dpfair._validation.as_finite_array``, whose ``mode`` covers the former copies; the feature
check that points strings and missing values at the dpfair transformers."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import sparse

from dpfair._validation import as_finite_array


def _objects(*values):
    return np.array(list(values), dtype=object)


INPUTS = [
    [1, 2],
    [1.0, np.nan],
    [],
    [[1, 2], [3, 4]],
    [[1], [2, 3]],
    "1.5",
    None,
    {1},
    [True, False],
    [False, 0.5],
    _objects(1, 2),
    _objects(1, None),
    _objects("1"),
    [1 + 2j],
    np.array(["2020-01-01"], dtype="datetime64[D]"),
    pd.Series([1.0, 2.0]),
    sparse.csr_matrix(np.eye(2)),
]


def _outcome(function, *args, **kwargs):
    try:
        out = function(*args, **kwargs)
    except (TypeError, ValueError) as exc:
        return type(exc), str(exc)
    return out.dtype, out.shape, out.tobytes()


@pytest.mark.parametrize("values", INPUTS, ids=range(len(INPUTS)))
@pytest.mark.parametrize("mode", ["convert", "dtype", "strict"])
def test_every_mode_returns_finite_floats_or_names_the_argument(values, mode):
    outcome = _outcome(as_finite_array, values, "v", mode=mode, ndim=(1, 2), allow_empty=True)
    if isinstance(outcome[0], type):  # refused: a clear message naming the argument
        assert outcome[1].startswith("v ") or " v " in outcome[1] or "v:" in outcome[1], outcome
    else:
        out = as_finite_array(values, "v", mode=mode, ndim=(1, 2), allow_empty=True)
        assert out.dtype.kind == "f" and np.all(np.isfinite(out))



@pytest.mark.parametrize(
    ("values", "mode", "error", "match"),
    [
        ([[1], [2, 3]], "convert", ValueError, "v must be a rectangular numeric array-like"),
        ([[1], [2, 3]], "dtype", TypeError, r"v must be a numeric array \(int or float\)"),
        ([[1], [2, 3]], "strict", ValueError, "v must be a rectangular 1-dimensional array"),
        ([1 + 2j], "convert", TypeError, "v is complex"),
        ([1 + 2j], "dtype", TypeError, "v must hold real numbers"),
        ([1 + 2j], "strict", ValueError, "v: Complex data not supported"),
        (_objects(1.0, None), "convert", TypeError, "found NoneType"),
        (_objects(1.0, None), "dtype", TypeError, "got dtype object"),
        (_objects(1.0, None), "strict", ValueError, "v contains missing values"),
        ([False, 0.5], "strict", TypeError, "got booleans"),
        ([np.nan, np.inf], "convert", ValueError, r"v contains 2 NaN or infinite value\(s\)"),
        ([np.nan, np.inf], "dtype", ValueError, "v contains NaN or infinite values;"),
        ([np.nan, np.inf], "strict", ValueError, "v contains NaN or infinite values;"),
    ],
)
def test_each_mode_keeps_its_errors(values, mode, error, match):
    with pytest.raises(error, match=match):
        as_finite_array(values, "v", mode=mode, ndim=1)


def test_modes_share_the_options():
    assert as_finite_array([[1.0]], "v", ndim=(1, 2)).shape == (1, 1)
    with pytest.raises(ValueError, match="v must be 1-dimensional or 3-dimensional"):
        as_finite_array([[1.0]], "v", ndim=(1, 3))
    assert as_finite_array([False, 0.5], "v").tolist() == [0.0, 0.5]  # convert: numpy's float array, not refused
    np.testing.assert_array_equal(as_finite_array([np.nan], "v", mode="strict", allow_nonfinite=True), [np.nan])
    with pytest.raises(ValueError, match="mode must be one of"):
        as_finite_array([1.0], "v", mode="lenient")


@pytest.mark.parametrize("mode", ["convert", "strict"])
def test_an_int_beyond_float64_is_a_value_error_naming_the_argument(mode):
    with pytest.raises(ValueError, match="v holds a number outside the float64 range"):
        as_finite_array([10**400, 0.5], "v", mode=mode)


# ------------------------------------------------------------------ strings and missing values in a feature matrix
def test_feature_check_names_the_string_column_and_the_encoder_never_the_value():
    import pandas as pd

    from dpfair._estimator import check_feature_values

    secret = "Jane-Roe-123"
    frame = pd.DataFrame({"age": [30.0, 40.0], "workclass": ["Private", secret]})
    with pytest.raises(ValueError, match=r"X has column\(s\) \['workclass'\] holding strings") as caught:
        check_feature_values(frame, owner="DPLogisticRegression")
    message = str(caught.value)
    assert secret not in message and "DeclaredOneHotEncoder(categories=...)" in message and "DPLogisticRegression" in message
    with pytest.raises(ValueError, match=r"holds strings.*DeclaredOneHotEncoder") as caught:
        check_feature_values(np.array([[1.0, secret]], dtype=object), "features", owner="Model")
    assert secret not in str(caught.value) and str(caught.value).startswith("features")


@pytest.mark.parametrize("X", [np.array([[1.0, np.nan]]), np.array([[1.0, None]], dtype=object),
                               [[1.0, float("nan")]]])
def test_feature_check_points_missing_values_at_the_declared_and_private_imputers(X):
    from dpfair._estimator import check_feature_values

    with pytest.raises(ValueError, match=r"missing values.*DeclaredImputer.*DPMedianImputer.*SimpleImputer"):
        check_feature_values(X, owner="DPLinearRegression")


def test_feature_check_leaves_numbers_and_other_refusals_to_the_caller():
    import pandas as pd

    from dpfair._estimator import check_feature_values

    for X in (np.zeros((2, 2)), pd.DataFrame({"a": [1, 2], "b": [True, False]}), [[1.0, np.inf]],
              np.array([[{"a": 1}]], dtype=object), [[1.0], [1.0, 2.0]], None):
        check_feature_values(X, owner="Model")  # nothing to say: scikit-learn's own checks name these


def test_check_within_bounds_clips_rounding_and_refuses_by_name_without_the_value():
    from dpfair._validation import check_within_bounds

    out = check_within_bounds(np.array([0.0, 0.5, 1.0 + 1e-12]), (0.0, 1.0), "y", declared="bounds")
    np.testing.assert_array_equal(out, [0.0, 0.5, 1.0])
    huge = check_within_bounds(np.array([-1e308, 1e308]), (-1e308, 1e308), "y", declared="bounds")
    np.testing.assert_array_equal(huge, [-1e308, 1e308])
    with pytest.raises(ValueError, match=r"y has value\(s\) outside the declared bounds") as info:
        check_within_bounds(np.array([0.5, 7.25]), (0.0, 1.0), "y", declared="bounds")
    assert "7.25" not in str(info.value)
