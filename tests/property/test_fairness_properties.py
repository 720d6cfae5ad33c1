"""Property tests (hypothesis) for every public function of :mod:`dpfair.fairness`.

Every call either returns a finite, correctly shaped result or raises ``ValueError`` /
``TypeError`` whose message names the offending argument; never another exception, never a
warning, never NaN (``group_rates`` alone reports an undefined rate, of a group without
positives or negatives, as NaN, and says so).  Inputs: arbitrary shapes and dtypes (object,
string, bool, int, float16), NaN and inf, empty arrays, mismatched lengths, pandas objects with
odd indexes and mixed-type group labels.
"""

from __future__ import annotations

import itertools
import math
import warnings

import hypothesis.extra.numpy as hnp
import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st
from scipy import stats

from dpfair import fairness as fm

SETTINGS = settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)

DIRTY = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(-3, 3),
    st.booleans(),
    st.sampled_from(["1", "a", ""]),
    st.none(),
    st.complex_numbers(max_magnitude=2.0),
    st.just([1, 2]),
)
LABEL = st.one_of(
    st.sampled_from(["a", "b", "1"]),
    st.integers(0, 3),
    st.booleans(),
    st.sampled_from([0.5, 1.0, -0.0, math.inf]),
    st.just(("t", 1)),
)
BAD_LABEL = st.one_of(st.none(), st.just(math.nan), st.just([1]), st.just({"k": 1}))
NUMERIC_DTYPES = [np.float64, np.float16, np.float32, np.int8, np.int64, np.uint8, np.bool_, object, "<U3"]


def _odd_index(n: int, how: str) -> pd.Index:
    if how == "reversed":
        return pd.Index(range(n, 0, -1))
    if how == "duplicated":
        return pd.Index([7] * n)
    if how == "strings":
        return pd.Index([f"r{i}" for i in range(n)])
    return pd.MultiIndex.from_arrays([list(range(n)), ["x"] * n])


@st.composite
def wrap(draw, values: list, *, labels: bool = False, clean: bool = False):
    """``values`` as a list, tuple, numpy array of some dtype, or pandas Series with an odd index.

    ``clean``: only forms that keep the values valid (no dtype cast, no 2-d frame).
    """
    forms = ["list", "tuple", "array", "object", "series"] + ([] if clean else ["frame"]) + (["categorical"] if labels else [])
    form = draw(st.sampled_from(forms))
    if form == "list":
        return list(values)
    if form == "tuple":
        return tuple(values)
    if form == "object":
        arr = np.empty(len(values), dtype=object)
        arr[:] = values
        return arr
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            arr = np.asarray(values)
        except ValueError:  # ragged
            arr = None
        if arr is None or arr.ndim != 1:
            arr = np.empty(len(values), dtype=object)
            arr[:] = values
        if form == "array" and not labels and not clean:
            dtype = draw(st.sampled_from(NUMERIC_DTYPES))
            try:
                arr = arr.astype(dtype)
            except (TypeError, ValueError, OverflowError):
                pass
    if form in ("array",):
        return arr
    index = _odd_index(len(values), draw(st.sampled_from(["reversed", "duplicated", "strings", "multi"])))
    if form == "categorical":
        try:
            return pd.Series(pd.Categorical(arr), index=index)
        except TypeError:  # unhashable values cannot be categories
            return pd.Series(arr, index=index)
    if form == "frame":
        return pd.DataFrame({"c": arr}, index=index) if draw(st.booleans()) else pd.Series(arr, index=index, dtype=object)
    dtype = draw(st.sampled_from([None, object, "string"])) if labels else None
    try:
        return pd.Series(arr, index=index, dtype=dtype)
    except (TypeError, ValueError):
        return pd.Series(arr, index=index)


def binary_values(n: int):
    return st.lists(
        st.one_of(st.sampled_from([0, 1]), st.sampled_from([0, 1]), st.sampled_from([0.0, 1.0, True, False]), DIRTY),
        min_size=n,
        max_size=n,
    )


def expect(call, names):
    """Run ``call``: a result, or a ValueError / TypeError naming one of ``names``; no other exception, no warning."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            return call()
    except (ValueError, TypeError) as exc:
        assert any(name in str(exc) for name in names), f"message does not name the argument: {exc!r}"
        return None


def _key(label):
    """The group a label falls into (Python equality: 1 == 1.0 == True)."""
    return ("num", float(label)) if isinstance(label, int | float | np.number) else ("other", label)


def _plain(values) -> list:
    return list(values.iloc[:, 0] if isinstance(values, pd.DataFrame) else values)


@st.composite
def classification(draw, *, clean: bool):
    n = draw(st.integers(0 if not clean else 1, 12))
    m = n if clean or draw(st.booleans()) else draw(st.integers(0, 12))
    if clean:
        y = draw(st.lists(st.sampled_from([0, 1]), min_size=n, max_size=n))
        yhat = draw(st.lists(st.sampled_from([0, 1]), min_size=n, max_size=n))
        groups = draw(st.lists(LABEL, min_size=n, max_size=n))
    else:
        y = draw(binary_values(n))
        yhat = draw(binary_values(m))
        groups = draw(st.lists(st.one_of(LABEL, LABEL, LABEL, BAD_LABEL), min_size=m, max_size=m))
    return draw(wrap(y, clean=clean)), draw(wrap(yhat, clean=clean)), draw(wrap(groups, labels=True, clean=clean))


# --- group_rates and the gap metrics ---------------------------------------------------------------


@SETTINGS
@given(classification(clean=False))
@example(([0, 1], [0, 1], ["a", 1]))
@example(([1, 0, 1, 0], [1, 0, 0, 0], pd.Series(["a", 1, "a", 1], index=[3, 3, 1, 0])))
def test_group_rates_any_input(data):
    y, yhat, groups = data
    table = expect(lambda: fm.group_rates(y, yhat, groups), ("y_true", "y_pred", "sensitive_features"))
    if table is None:
        return
    n = len(_plain(y))
    assert list(table.columns) == ["tpr", "fpr", "selection_rate", "count", "positives", "negatives"]
    assert int(table["count"].sum()) == n
    assert (table["positives"] + table["negatives"] == table["count"]).all()
    assert np.isfinite(table[["selection_rate", "count"]].to_numpy(float)).all()
    assert table["tpr"].isna().tolist() == (table["positives"] == 0).tolist()
    assert table["fpr"].isna().tolist() == (table["negatives"] == 0).tolist()
    rates = table[["tpr", "fpr", "selection_rate"]].to_numpy(float)
    assert ((rates[~np.isnan(rates)] >= 0) & (rates[~np.isnan(rates)] <= 1)).all()
    assert len(table) == len({_key(g) for g in _plain(groups)})


@SETTINGS
@given(classification(clean=False), st.one_of(st.none(), LABEL, BAD_LABEL))
def test_gap_metrics_any_input(data, reference_group):
    y, yhat, groups = data
    names = ("y_true", "y_pred", "sensitive_features", "reference_group", "gap")
    for value in (
        expect(lambda: fm.equalized_odds_difference(y, yhat, groups, reference_group=reference_group), names),
        expect(lambda: fm.equal_opportunity_difference(y, yhat, groups, reference_group=reference_group), names),
        expect(lambda: fm.demographic_parity_difference(yhat, groups, reference_group=reference_group), names),
    ):
        if value is not None:
            assert isinstance(value, float) and 0.0 <= value <= 1.0


@SETTINGS
@given(classification(clean=True))
def test_gap_metrics_are_brute_force_and_ignore_label_types(data):
    """Clean input: the gaps equal a brute-force computation, whatever the label types."""
    y, yhat, groups = data
    plain_y, plain_yhat = (np.asarray(_plain(v), dtype=float) for v in (y, yhat))
    plain_g = _plain(groups)
    members: dict = {}
    for i, g in enumerate(plain_g):
        members.setdefault(_key(g), []).append(i)
    tpr, fpr, sel = {}, {}, {}
    for k, rows in members.items():
        rows = np.asarray(rows)
        pos, neg = rows[plain_y[rows] == 1], rows[plain_y[rows] == 0]
        tpr[k] = plain_yhat[pos].mean() if pos.size else None
        fpr[k] = plain_yhat[neg].mean() if neg.size else None
        sel[k] = plain_yhat[rows].mean()

    def brute(*tables):
        gaps = [
            abs(t[a] - t[b]) for t in tables for a, b in itertools.combinations(t, 2) if t[a] is not None and t[b] is not None
        ]
        return max(gaps) if gaps else (0.0 if len(members) < 2 else None)

    assert fm.demographic_parity_difference(yhat, groups) == pytest.approx(brute(sel))
    for metric, tables in ((fm.equalized_odds_difference, (tpr, fpr)), (fm.equal_opportunity_difference, (tpr,))):
        expected = brute(*tables)
        if expected is None:
            with pytest.raises(ValueError, match="undefined"):
                metric(y, yhat, groups)
        else:
            assert metric(y, yhat, groups) == pytest.approx(expected)


def test_mixed_type_labels_are_distinct_groups_in_a_stable_order():
    rates = fm.group_rates([1, 0, 1, 0], [1, 0, 0, 1], ["a", 1, "1", 1.0])
    assert list(rates.index) == [1, "1", "a"] and rates["count"].tolist() == [2, 1, 1]
    assert fm.demographic_parity_difference([1, 0, 1], ["a", 1, "a"], reference_group=1) == 1.0
    assert fm.statistical_parity_ks([0.0, 1.0, 2.0], ["a", 1, "a"]) == 0.5
    np.testing.assert_allclose(fm.relative_rank([0.5, 0.5], ["a", 1], [0.0, 1.0, 0.0], ["a", 1, 1]), [1.0, 0.5])


def test_undefined_gap_raises_instead_of_nan():
    # group a has only positives, group b only negatives: no rate is defined for both
    with pytest.raises(ValueError, match="undefined"):
        fm.equalized_odds_difference([1, 0], [1, 0], ["a", "b"])
    with pytest.raises(ValueError, match="undefined"):
        fm.equal_opportunity_difference([0, 1], [0, 1], ["a", "b"], reference_group="a")


# --- KS distances -------------------------------------------------------------------------------


@st.composite
def real_samples(draw, *, clean: bool, min_size: int = 0):
    if clean:
        values = draw(
            st.lists(st.floats(-1e6, 1e6, allow_subnormal=False) | st.integers(-3, 3), min_size=max(min_size, 1), max_size=15)
        )
        return draw(wrap(values, clean=True)) if draw(st.booleans()) else values
    kind = draw(st.sampled_from(["list", "array"]))
    if kind == "list":
        return draw(wrap(draw(st.lists(st.one_of(st.floats(-5, 5), DIRTY), max_size=10))))
    dtype = draw(st.sampled_from(NUMERIC_DTYPES[:-2]))
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=2, min_side=0, max_side=5))
    return draw(hnp.arrays(dtype, shape))


@SETTINGS
@given(real_samples(clean=False), real_samples(clean=False))
def test_ks_distance_any_input(a, b):
    value = expect(lambda: fm.ks_distance(a, b), ("sample_a", "sample_b"))
    if value is not None:
        assert 0.0 <= value <= 1.0


@pytest.mark.filterwarnings("ignore:ks_2samp:RuntimeWarning")  # scipy's p-value, not the statistic
@SETTINGS
@given(real_samples(clean=True), real_samples(clean=True))
def test_ks_distance_matches_scipy(a, b):
    fa, fb = (np.asarray(_plain(v), dtype=float) for v in (a, b))
    assert fm.ks_distance(a, b) == pytest.approx(stats.ks_2samp(fa, fb).statistic, abs=1e-12)
    assert fm.ks_distance(a, b) == fm.ks_distance(b, a)


@st.composite
def pmf_inputs(draw):
    kind = draw(st.sampled_from(["pmf", "pmf", "dirty"]))
    if kind == "dirty":
        return draw(real_samples(clean=False))
    weights = np.asarray(draw(st.lists(st.floats(0, 1e6), min_size=1, max_size=8)))
    assume(weights.sum() > 0)
    pmf = weights / weights.sum()
    return draw(wrap(list(pmf), clean=True)) if draw(st.booleans()) else pmf


@SETTINGS
@given(pmf_inputs(), pmf_inputs())
@example([1e308, 1e308], [1.0])
def test_ks_distance_histograms_any_input(pa, pb):
    value = expect(lambda: fm.ks_distance_histograms(pa, pb), ("pmf_a", "pmf_b"))
    if value is not None:
        assert 0.0 <= value <= 1.0 + 1e-7


@SETTINGS
@given(st.one_of(st.lists(pmf_inputs(), max_size=4), real_samples(clean=False)))
def test_statistical_parity_ks_histograms_any_input(rows):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            pmfs = np.asarray(rows) if isinstance(rows, list) and rows else rows
        except ValueError:  # ragged rows
            pmfs = rows
    value = expect(lambda: fm.statistical_parity_ks_histograms(pmfs), ("pmfs",))
    if value is not None:
        assert 0.0 <= value <= 1.0 + 1e-7


@SETTINGS
@given(st.data())
def test_statistical_parity_ks_any_input(data):
    n = data.draw(st.integers(0, 12))
    m = n if data.draw(st.booleans()) else data.draw(st.integers(0, 12))
    predictions = data.draw(st.one_of(real_samples(clean=False), st.lists(st.floats(-3, 3), min_size=n, max_size=n)))
    groups = data.draw(wrap(data.draw(st.lists(st.one_of(LABEL, LABEL, BAD_LABEL), min_size=m, max_size=m)), labels=True))
    value = expect(lambda: fm.statistical_parity_ks(predictions, groups), ("predictions", "sensitive_features"))
    if value is not None:
        assert 0.0 <= value <= 1.0


# --- relative rank, exposure policy and regret ----------------------------------------------------


@SETTINGS
@given(st.data())
def test_relative_rank_any_input(data):
    n, r = data.draw(st.integers(0, 8)), data.draw(st.integers(0, 10))
    values = data.draw(st.one_of(st.lists(st.floats(-3, 3), min_size=n, max_size=n), real_samples(clean=False)))
    groups = data.draw(wrap(data.draw(st.lists(st.one_of(LABEL, BAD_LABEL), min_size=n, max_size=n)), labels=True))
    reference_values = data.draw(st.one_of(st.lists(st.floats(-3, 3), min_size=r, max_size=r), real_samples(clean=False)))
    reference_groups = data.draw(wrap(data.draw(st.lists(LABEL, min_size=r, max_size=r)), labels=True))
    names = ("values", "groups", "reference_values", "reference_groups")
    ranks = expect(lambda: fm.relative_rank(values, groups, reference_values, reference_groups), names)
    if ranks is not None:
        assert ranks.shape == (len(_plain(values)),) and ((ranks >= 0) & (ranks <= 1)).all()


@SETTINGS
@given(
    st.one_of(real_samples(clean=False), hnp.arrays(np.float64, hnp.array_shapes(max_dims=3), elements=st.floats(1e-300, 1e308)))
)
@example(np.array([1e308, 1e308]))
@example(np.array([[5e-324, 5e-324], [1.0, 1e300]]))
@example(3.0)
def test_merit_proportional_policy_any_input(merits):
    policy = expect(lambda: fm.merit_proportional_policy(merits), ("merits",))
    if policy is not None:
        assert policy.shape == np.shape(merits) and np.isfinite(policy).all() and (policy >= 0).all()
        np.testing.assert_allclose(policy.sum(axis=-1), 1.0)


@st.composite
def policy_arrays(draw, shape):
    if draw(st.integers(0, 3)) == 0:
        return draw(real_samples(clean=False))
    return draw(
        hnp.arrays(np.float64, shape, elements=st.one_of(st.floats(0, 1), st.floats(allow_nan=True, allow_infinity=True)))
    )


@SETTINGS
@given(st.data())
@example(None)
def test_fairness_regret_any_input(data):
    if data is None:  # overflow: entries of 1e308 used to give inf
        assert expect(lambda: fm.fairness_regret([[1e308, -1e308]], [[-1e308, 1e308]]), ("policies",)) is None
        return
    shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4))
    p = data.draw(policy_arrays(shape))
    q = data.draw(policy_arrays(shape if data.draw(st.booleans()) else data.draw(hnp.array_shapes(max_dims=3))))
    regret = expect(lambda: fm.fairness_regret(p, q), ("policies", "optimal_policies"))
    if regret is not None:
        assert regret.shape == np.shape(p)[:-1] and np.isfinite(regret).all()
        assert (np.diff(regret, axis=0) >= 0).all()
