"""Property tests (hypothesis) for dpfair.selection's public entry points.

Every call either returns a finite, correctly shaped result or raises ``ValueError`` /
``TypeError`` whose message names the offending argument; never another exception, never NaN.
"""

import math
import warnings

import hypothesis.extra.numpy as hnp
import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpfair.privacy import PrivacyLeakWarning
from dpfair.selection import ExponentialSelector, SelectionProblem

pytestmark = pytest.mark.filterwarnings("ignore::dpfair.privacy.PrivacyLeakWarning")
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)

EXTREME = [1e-300, 1e-3, 0.5, 2.0, 40.0, 1e300, math.inf]
BAD_NUMBERS = [0.0, -5.0, math.nan, -math.inf, "1.0", None, True, 1 + 0j]

finite = st.floats(0.0, 1.0)
element = st.one_of(
    finite,
    finite,
    st.floats(allow_nan=True, allow_infinity=True, width=64),
    st.integers(-3, 3),
    st.booleans(),
    st.sampled_from(["0.5", "a", ""]),
    st.none(),
    st.complex_numbers(max_magnitude=1.0),
)


@st.composite
def score_inputs(draw):
    """Scores of every kind: clean and dirty lists, arrays of many dtypes and shapes, pandas with odd indexes."""
    kind = draw(st.sampled_from(["clean", "clean", "clean", "list", "array", "series", "frame", "scalar"]))
    if kind == "clean":
        return np.asarray(draw(st.lists(finite, min_size=1, max_size=9)))
    if kind == "list":
        return draw(st.lists(element, max_size=9))
    if kind == "array":
        dtype = draw(st.sampled_from([np.float64, np.float16, np.int64, np.bool_, np.complex128, "<U3", object]))
        shape = draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=6))
        if dtype is object:
            return draw(hnp.arrays(object, shape, elements=element))
        if dtype == "<U3":
            return draw(hnp.arrays(dtype, shape, elements=st.sampled_from(["0.5", "1", "x"])))
        if dtype in (np.float64, np.float16):
            return draw(hnp.arrays(dtype, shape, elements=st.one_of(st.floats(0, 1, width=16), st.floats(width=16))))
        return draw(hnp.arrays(dtype, shape))
    values = draw(st.lists(st.one_of(finite, st.floats(allow_nan=True)), min_size=0, max_size=8))
    index = draw(st.permutations(list(range(100, 100 + len(values)))))
    if kind == "series":
        return pd.Series(values, index=[f"r{i}" for i in index], dtype=float)
    if kind == "frame":
        width = draw(st.integers(1, 2))
        return pd.DataFrame({f"c{j}": values for j in range(width)}, index=index)
    return draw(st.one_of(finite, st.text(max_size=3), st.none()))


def expect(call, names):
    """Run ``call``; a ValueError / TypeError must name one of ``names``.  Returns the result or None."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivacyLeakWarning)
            return call()
    except (ValueError, TypeError) as exc:
        assert any(name in str(exc) for name in names), f"message does not name the argument: {exc}"
        return None


SELECTOR_NAMES = ("scores", "X", "epsilon", "n_select", "score_bounds", "utility")


@SETTINGS
@given(
    scores=score_inputs(),
    epsilon=st.one_of(st.sampled_from(EXTREME), st.floats(1e-6, 1e6), st.sampled_from(BAD_NUMBERS)),
    n_select=st.one_of(st.integers(1, 3), st.integers(1, 3), st.integers(-1, 12), st.sampled_from([1.5, "2", None])),
    utility=st.sampled_from(["mean", "max", "min", "rms"] * 3 + ["median", None]),
    bounds=st.sampled_from([(0.0, 1.0)] * 4 + [(-2.0, 3.0), (0.0, math.inf), (1.0, 0.0), (0.0,), "01"]),
)
def test_selector_never_crashes_or_returns_nan(scores, epsilon, n_select, utility, bounds):
    sel = ExponentialSelector(epsilon, n_select, bounds, utility, random_state=0)
    probs = expect(lambda: sel.selection_probabilities(scores), SELECTOR_NAMES)
    chosen = expect(lambda: sel.select(scores), SELECTOR_NAMES)
    fitted = expect(lambda: sel.fit(scores), SELECTOR_NAMES)
    if probs is not None:
        n = probs.shape[0]
        assert probs.shape == (n,) and np.isfinite(probs).all()
        assert np.all(probs >= -1e-12) and np.all(probs <= 1 + 1e-9)
        assert probs.sum() == pytest.approx(n_select, abs=1e-6)
    if chosen is not None:
        assert chosen.shape == (n_select,) and chosen.dtype.kind == "i"
        assert np.all(np.diff(chosen) > 0) and chosen.min() >= 0
    if fitted is not None:
        assert fitted.selected_.shape == (n_select,) and fitted.n_features_in_ == 1
    # the three entry points agree on what is valid (fit also takes one column)
    assert (probs is None) == (chosen is None)
    if np.ndim(scores) == 1 or isinstance(scores, pd.Series | list):
        assert (chosen is None) == (fitted is None) or not isinstance(scores, np.ndarray)


@st.composite
def problems(draw):
    k = draw(st.integers(1, 4))
    grid = np.sort(draw(st.lists(st.floats(0, 1), min_size=k, max_size=k, unique=True)))
    weights = np.asarray(draw(st.lists(st.floats(0.0, 1.0), min_size=4 * k, max_size=4 * k))).reshape(2, 2, k)
    weights[:, 1, 0] += 0.05  # each group has qualified applicants
    n = draw(st.integers(2, 5))
    max_conf = draw(st.sampled_from([1, 200_000]))  # 1: the Monte Carlo path
    return SelectionProblem(grid, weights / weights.sum(), n, max_configurations=max_conf, n_mc_samples=100)


PROBLEM_NAMES = ("epsilon", "n_select", "notion", "epsilon_max", "gamma_max", "n_grid", "progress")


@SETTINGS
@given(
    problem=problems(),
    epsilon=st.one_of(
        st.sampled_from(EXTREME),
        st.sampled_from(EXTREME),
        st.floats(0.0, 1e4),
        st.sampled_from(BAD_NUMBERS),
        st.lists(st.sampled_from([*EXTREME, 0.0]), min_size=0, max_size=4).map(np.asarray),
        st.just(np.array([[1.0]])),
    ),
    n_select=st.one_of(st.integers(1, 2), st.integers(1, 2), st.integers(0, 6), st.sampled_from([1.5, "1", True])),
    notion=st.sampled_from(["equal_opportunity", "demographic_parity"] * 3 + ["parity"]),
)
def test_selection_problem_never_crashes_or_returns_nan(problem, epsilon, n_select, notion):
    for call in (lambda: problem.fairness_gap(epsilon, n_select, notion), lambda: problem.accuracy(epsilon, n_select)):
        est = expect(call, PROBLEM_NAMES)
        if est is not None:
            value = np.asarray(est.value)
            assert value.shape == np.shape(epsilon) and np.isfinite(value).all()
            assert np.isfinite(np.asarray(est.standard_error)).all()
    est = expect(lambda: problem.selection_probability_given_score(epsilon, n_select), PROBLEM_NAMES)
    if est is not None:
        value = np.asarray(est.value)
        assert value.shape == problem.score_values.shape and np.isfinite(value).all()
        assert np.all(value >= -1e-9) and np.all(value <= 1 + 1e-9)
    cond = expect(lambda: problem.theorem_conditions(n_select), PROBLEM_NAMES)
    if cond is not None:
        assert all(isinstance(entry["holds"], bool) for entry in cond.values())
    assert isinstance(problem.monotone_likelihood_ratio(), bool)


@settings(max_examples=25, deadline=None, derandomize=True)
@given(
    problem=problems(),
    epsilon_max=st.sampled_from([10.0, 10.0, 1e300, 1e-4, math.inf, -1.0, "10"]),
    gamma_max=st.sampled_from([0.0, 0.05, 0.05, 1.0, math.nan, -0.1]),
    n_select=st.one_of(st.integers(1, 2), st.integers(0, 4)),
    progress=st.sampled_from([None, None, False, True, lambda done, total: None, "yes", 1]),
)
def test_searches_never_crash(problem, epsilon_max, gamma_max, n_select, progress):
    roots = expect(lambda: problem.perfectly_fair_epsilons(n_select, epsilon_max, n_grid=6, progress=progress),
                   PROBLEM_NAMES)
    if roots is not None:
        assert all(math.isfinite(r) and 0 < r <= epsilon_max for r in roots)
    best = expect(lambda: problem.best_epsilon(epsilon_max, gamma_max, n_select, n_grid=6, progress=progress),
                  PROBLEM_NAMES)
    if best is not None:
        assert math.isfinite(best) and 0 <= best <= epsilon_max


CONSTRUCTOR_NAMES = ("score_values", "joint_pmf", "n_applicants", "score_bounds", "group", "max_configurations",
                     "n_mc_samples", "random_state", "scores", "labels")


@SETTINGS
@given(
    score_values=st.one_of(st.lists(finite, min_size=3, max_size=3, unique=True), score_inputs()),
    pmf_shape=st.sampled_from([(2, 2, 3)] * 3 + [(2, 2), (3, 2, 3), (2, 2, 0)]),
    pmf_fill=st.sampled_from([1.0] * 3 + [-1.0, math.nan, "x"]),
    n_applicants=st.one_of(st.integers(2, 6), st.integers(-1, 6), st.sampled_from([10**7, 2.0])),
    bounds=st.sampled_from([(0.0, 1.0)] * 3 + [(0.0, math.inf), (math.nan, 1.0), (2.0, 1.0)]),
)
def test_constructor_never_crashes(score_values, pmf_shape, pmf_fill, n_applicants, bounds):
    pmf = np.full(pmf_shape, pmf_fill, dtype=object)
    if pmf_fill == 1.0:
        pmf = (pmf / max(pmf.size, 1)).astype(float)
    problem = expect(lambda: SelectionProblem(score_values, pmf, n_applicants, score_bounds=bounds), CONSTRUCTOR_NAMES)
    if problem is not None:
        assert np.isfinite(float(problem.accuracy(1.0, 1)))


@st.composite
def samples(draw):
    """(scores, groups, labels): valid rows (possibly with odd pandas indexes), or broken in one place."""
    n = draw(st.integers(2, 8))
    scores = draw(st.lists(finite, min_size=n, max_size=n))
    groups = ["a", "b", *draw(st.lists(st.sampled_from(["a", "b"]), min_size=n - 2, max_size=n - 2))]
    labels = [1, 1, *draw(st.lists(st.sampled_from([0, 1]), min_size=n - 2, max_size=n - 2))]
    if draw(st.booleans()):
        index = draw(st.permutations(list(range(-n, 0))))
        scores, groups, labels = (pd.Series(v, index=index) for v in (scores, groups, labels))
    broken = draw(st.sampled_from(["none"] * 3 + ["scores", "groups", "labels", "length"]))
    if broken == "scores":
        scores = draw(score_inputs())
    elif broken == "groups":
        groups = draw(st.one_of(st.lists(st.sampled_from(["a", "b", None, 1, "c"]), max_size=9), st.none()))
    elif broken == "labels":
        labels = draw(st.one_of(st.lists(st.sampled_from([0, 1, 2, True, "1", math.nan]), max_size=9), st.none()))
    elif broken == "length":
        labels = [*list(labels), 1]
    return scores, groups, labels


@SETTINGS
@given(rows=samples())
def test_from_samples_never_crashes(rows):
    scores, groups, labels = rows
    problem = expect(lambda: SelectionProblem.from_samples(scores, groups, labels, 3), CONSTRUCTOR_NAMES)
    if problem is not None:
        assert np.isfinite(float(problem.fairness_gap(2.0, 1)))
