"""Property tests (hypothesis) for every public regression entry point.

Each call either returns a finite, correctly shaped result or raises ``ValueError``/``TypeError``
whose message names the offending argument; never another exception, never NaN out.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from dpfair.regression import (
    MAX_COUPLING_CELLS,
    FairRegressionPostProcessor,
    WassersteinBarycenterPostProcessor,
    l_inf_isotonic_cdf,
    solve_barycenter_alpha0,
    solve_barycenter_lp,
)

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

DTYPES = st.sampled_from([np.float64, np.float16, np.int64, np.bool_, np.complex128, np.dtype("U3"), object])
EPSILONS = st.sampled_from([1e-300, 1e-6, 0.5, 5.0, 1e300, math.inf, 0.0, -1.0, math.nan, "1", True])
GROUP_LABELS = st.sampled_from(["a", "b", 1, "c"])
DECLARED = st.sampled_from([None, ["a", "b"], ["a", "b", 1, "c"], ["a"], [], ["a", "a"], "ab"])


def _arrays(max_side: int = 8, min_dims: int = 1, max_dims: int = 2) -> st.SearchStrategy:
    def make(dtype: Any) -> st.SearchStrategy:
        shapes = hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=0, max_side=max_side)
        if dtype is object:
            elements = st.one_of(st.floats(), st.integers(-5, 5), st.text(max_size=2), st.none())
            return hnp.arrays(object, shapes, elements=elements)
        return hnp.arrays(dtype, shapes)

    return DTYPES.flatmap(make)


def _odd_series(values: np.ndarray, draw: Callable) -> Any:
    """A pandas Series (or one-column DataFrame) with a shuffled, non-default index."""
    index = draw(st.permutations(list(range(100, 100 + len(values)))))
    series = pd.Series(list(values), index=index, dtype=object if values.dtype == object else None)
    return series.to_frame() if draw(st.booleans()) else series


@st.composite
def rows(draw: Callable) -> tuple[Any, Any]:
    """(outputs, sensitive_features): usually well-formed, often broken in one way."""
    kind = draw(st.sampled_from(["good", "good", "good", "array", "mismatch", "pandas", "pandas", "none"]))
    n = draw(st.integers(0, 12) if kind != "good" else st.integers(1, 12))
    outputs: Any = np.asarray(draw(st.lists(st.floats(-0.5, 1.5), min_size=n, max_size=n)), dtype=float)
    groups: Any = np.asarray(draw(st.lists(GROUP_LABELS, min_size=n, max_size=n)), dtype=object)
    if kind == "array":
        outputs = draw(_arrays())
        groups = np.asarray(draw(st.lists(GROUP_LABELS, min_size=len(outputs), max_size=len(outputs))), dtype=object)
    elif kind == "mismatch":
        groups = groups[: max(n - 1, 0)] if draw(st.booleans()) else np.append(groups, "a")
    elif kind == "pandas":
        outputs = _odd_series(outputs, draw)
        groups = _odd_series(groups, draw)
    elif kind == "none":
        groups = None
    return outputs, groups


def _expect(call: Callable[[], Any], names: tuple[str, ...]) -> Any:
    """Run ``call``; a ValueError/TypeError must name one of ``names``; return the result or None."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            result = call()
        except (ValueError, TypeError) as exc:
            event("refused")
            message = str(exc)
            assert any(name in message for name in names), f"{type(exc).__name__} names none of {names}: {message}"
            return None
    event("returned")
    return result


def _finite(*values: Any) -> None:
    for value in values:
        assert np.isfinite(np.asarray(value, dtype=float)).all()


FIT_NAMES = ("X", "sensitive_features", "groups", "epsilon", "n_bins", "alpha", "bounds", "random_state")


@st.composite
def post_processor_params(draw: Callable) -> dict[str, Any]:
    """Good parameters, with (most of the time) one of them broken."""
    params = {
        "epsilon": draw(st.sampled_from([1e-300, 1e-6, 0.5, 5.0, 1e300, math.inf])),
        "n_bins": draw(st.integers(1, 12)),
        "alpha": draw(st.floats(0.0, 1.0)),
        "bounds": draw(st.sampled_from([(0.0, 1.0), (-1.0, 2.0), (0.0, 1e-300), (-1e149, 1e149)])),
        "groups": ["a", "b", 1, "c"],
    }
    broken = draw(st.sampled_from([None, *params]))
    bad = {
        "epsilon": EPSILONS,
        "n_bins": st.sampled_from([0, -1, 2.5, "4", 10**5, True]),
        "alpha": st.sampled_from([-0.1, 1.5, math.nan, math.inf, "0.1"]),
        "bounds": st.sampled_from([None, (1.0, 0.0), (-1e200, 1e200), ("0", "1"), (0.0,), (0.0, math.nan)]),
        "groups": DECLARED,
    }
    if broken is not None:
        params[broken] = draw(bad[broken])
    return params


@SETTINGS
@given(
    data=rows(),
    params=post_processor_params(),
    new_alpha=st.one_of(st.floats(-0.5, 1.5), st.just(math.nan)),
    seeded=st.booleans(),
)
def test_fair_regression_post_processor(data, params, new_alpha, seeded):
    outputs, sensitive = data
    pp = FairRegressionPostProcessor(**params, random_state=0 if seeded else None)
    fitted = _expect(lambda: pp.fit(outputs, sensitive_features=sensitive), FIT_NAMES)
    if fitted is None:
        return
    k, n_groups = pp.grid_.size, pp.groups_.size
    assert pp.pmfs_.shape == (n_groups, k) and pp.sparse_transport_.shape == (n_groups * k, k)
    _finite(pp.grid_, pp.pmfs_, pp.group_weights_, pp.sparse_transport_.data, pp.objective_, pp.barycenter_)
    np.testing.assert_allclose(np.asarray(pp.sparse_transport_.sum(axis=1)).ravel(), 1.0, atol=1e-9)
    if n_groups * k * k > MAX_COUPLING_CELLS:  # the dense view is refused by name, never allocated
        with pytest.raises(ValueError, match="sparse"):
            pp.transport_  # noqa: B018
    else:
        assert pp.transport_.shape == (n_groups, k, k)
    pred = _expect(lambda: pp.predict(outputs, sensitive_features=sensitive, random_state=1), FIT_NAMES)
    assert pred is not None and pred.shape == (len(outputs),)
    _finite(pred)
    refit = _expect(lambda: pp.refit_alpha(new_alpha), ("alpha",))
    if refit is not None:
        _finite(pp.transport_, pp.objective_)


@SETTINGS
@given(
    data=rows(),
    sigma=st.one_of(st.floats(-1.0, 1.0), st.sampled_from([math.nan, math.inf, 1e300, "0.1"])),
    groups=DECLARED,
    seeded=st.booleans(),
    predict_data=rows(),
)
def test_wasserstein_post_processor(data, sigma, groups, seeded, predict_data):
    outputs, sensitive = data
    ref = WassersteinBarycenterPostProcessor(sigma=sigma, groups=groups, random_state=0 if seeded else None)
    names = ("X", "sensitive_features", "groups", "sigma", "random_state")
    if _expect(lambda: ref.fit(outputs, sensitive_features=sensitive), names) is None:
        return
    for X, g in (data, predict_data):
        pred = _expect(lambda X=X, g=g: ref.predict(X, sensitive_features=g), names)
        if pred is not None:
            assert pred.shape == (len(X),)
            _finite(pred)


@st.composite
def lp_inputs(draw: Callable) -> tuple[Any, Any, Any, Any]:
    n_groups = draw(st.integers(0, 4))
    k = draw(st.integers(0, 6))
    if draw(st.booleans()):  # a valid instance
        raw = np.asarray(draw(st.lists(st.floats(0.0, 1.0), min_size=n_groups * k, max_size=n_groups * k)))
        raw = raw.reshape(n_groups, k) + 1e-3
        pmfs: Any = raw / raw.sum(axis=1, keepdims=True) if raw.size else raw
        weights: Any = np.asarray(draw(st.lists(st.floats(0.0, 5.0), min_size=n_groups, max_size=n_groups))) + 1e-3
        grid: Any = np.cumsum(np.asarray(draw(st.lists(st.floats(0.01, 3.0), min_size=k, max_size=k)))) - 1.0
    else:
        pmfs = draw(_arrays(max_side=5, max_dims=3))
        weights = draw(_arrays(max_side=5, max_dims=1))
        grid = draw(_arrays(max_side=6, max_dims=1))
    alpha = draw(st.one_of(st.floats(-0.5, 1.5), st.sampled_from([math.nan, "0.1", True])))
    return pmfs, weights, grid, alpha


LP_NAMES = ("pmfs", "weights", "grid", "alpha", "k")


@SETTINGS
@given(inputs=lp_inputs(), solver=st.sampled_from(["fast", "alpha0"]))
def test_barycenter_solvers(inputs, solver):
    pmfs, weights, grid, alpha = inputs
    if solver == "fast":
        result = _expect(lambda: solve_barycenter_lp(pmfs, weights, grid, alpha), LP_NAMES)
    else:
        result = _expect(lambda: solve_barycenter_alpha0(pmfs, weights, grid), LP_NAMES)
    if result is None:
        return
    n_groups, k = np.shape(pmfs)
    assert result.couplings.shape == (n_groups, k, k) and result.barycenter.shape == (k,)
    _finite(result.couplings, result.barycenter, result.targets, result.objective)
    np.testing.assert_allclose(result.couplings.sum(axis=2), np.asarray(pmfs, dtype=float), atol=1e-8)


@SETTINGS
@given(values=st.one_of(_arrays(min_dims=0, max_dims=3), st.lists(st.one_of(st.floats(), st.text(max_size=2)))))
def test_l_inf_isotonic_cdf(values):
    cdf = _expect(lambda: l_inf_isotonic_cdf(values), ("partial_sums",))
    if cdf is None:
        return
    assert cdf.shape == np.shape(values)
    _finite(cdf)
    assert (np.diff(cdf, axis=-1) >= -1e-12).all() and (cdf[..., -1] == 1.0).all()
    assert ((cdf >= 0) & (cdf <= 1)).all()


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n=st.integers(1, 40),
    n_groups=st.integers(1, 3),
    n_bins=st.integers(1, 6),
    membership_bins=st.integers(1, 3),
    epsilon=st.sampled_from([1e-6, 0.5, 1e6, math.inf]),
    alpha=st.sampled_from([0.0, 0.05, 1.0]),
    spread=st.sampled_from([1.0, 1e6]),
    seed=st.integers(0, 2**16),
)
def test_blind_post_processor_valid_extremes(n, n_groups, n_bins, membership_bins, epsilon, alpha, spread, seed):
    """Valid inputs at their extremes (epsilon near 0 or huge, outputs far outside the bounds, membership rows of
    zeros or of any scale, a declared group absent): a finite, row-stochastic map and a guarantee in [alpha, 1]."""
    from dpfair.regression import BlindFairRegressionPostProcessor

    rng = np.random.default_rng(seed)
    groups = rng.integers(0, n_groups, n)
    outputs = rng.normal(0.5, 0.3, n) * spread
    membership = rng.exponential(1.0, (n, n_groups)) * rng.choice([0.0, 1.0, 1e9], (n, 1))
    X = np.column_stack([outputs, membership]) if n_groups > 1 else outputs
    pp = BlindFairRegressionPostProcessor(epsilon=epsilon, n_bins=n_bins, membership_bins=membership_bins,
                                          alpha=alpha, bounds=(0.0, 1.0), groups=list(range(n_groups)),
                                          random_state=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pp.fit(X, sensitive_features=groups)
    _finite(pp.transport_, pp.cell_pmfs_, pp.group_weights_, pp.objective_, pp.guaranteed_violation_)
    np.testing.assert_allclose(pp.transport_.sum(axis=1), 1.0, atol=1e-9)
    assert ((pp.transport_ >= -1e-12).all() and alpha <= pp.guaranteed_violation_ <= 1.0) or n_groups == 1
    distribution = pp.output_distribution(X)
    np.testing.assert_allclose(distribution.sum(axis=1), 1.0, atol=1e-9)
    assert np.isin(pp.predict(X, random_state=1), pp.grid_).all()
