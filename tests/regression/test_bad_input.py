"""Each bad input ends in a ValueError/TypeError naming the argument (each of these once failed otherwise)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from lp_reference import solve_barycenter_lp_reference
from sklearn.exceptions import NotFittedError

from dpfair.regression import (
    MAX_COUPLING_CELLS,
    FairRegressionPostProcessor,
    WassersteinBarycenterPostProcessor,
    l_inf_isotonic_cdf,
    solve_barycenter_alpha0,
    solve_barycenter_lp,
)

pytestmark = pytest.mark.filterwarnings("ignore:the private weight")

Y = np.array([0.1, 0.3, 0.6, 0.9])
G = np.array(["a", "b", "a", "b"])


def _pp(**kwargs):
    args = {"epsilon": 1.0, "n_bins": 4, "bounds": (0.0, 1.0), "groups": ["a", "b"], "random_state": 0, **kwargs}
    return FairRegressionPostProcessor(**args)


def test_alpha_above_one_is_refused():  # a KS distance is at most 1
    with pytest.raises(ValueError, match=r"alpha must be in \[0, 1\]"):
        _pp(alpha=1.5).fit(Y, sensitive_features=G)
    pp = _pp().fit(Y, sensitive_features=G)
    with pytest.raises(ValueError, match="alpha"):
        pp.refit_alpha(2.0)
    assert pp.alpha == 0.0 and pp.alpha_ == 0.0  # the refused refit changed nothing


@pytest.mark.parametrize("outputs", [["0.1", "0.3", "0.6", "0.9"], np.array([0.1, 0.3, 0.6, 0.9], dtype=object)])
def test_string_or_object_outputs_are_not_coerced(outputs):
    with pytest.raises(TypeError, match="X must hold real numbers"):
        _pp().fit(outputs, sensitive_features=G)
    with pytest.raises(TypeError, match="X must hold real numbers"):
        WassersteinBarycenterPostProcessor(groups=["a", "b"]).fit(outputs, sensitive_features=G)


def test_complex_outputs_are_refused_not_truncated():
    with pytest.raises(TypeError, match="X must hold real numbers"):
        _pp().fit(Y + 1j, sensitive_features=G)
    pp = _pp().fit(Y, sensitive_features=G)
    with pytest.raises(TypeError, match="X must hold real numbers"):
        pp.predict(Y + 0.5j, sensitive_features=G)


def test_isotonic_cdf_refuses_nan():
    with pytest.raises(ValueError, match="partial_sums contains NaN"):
        l_inf_isotonic_cdf([np.nan, 0.5, 1.0])
    with pytest.raises(TypeError, match="partial_sums"):
        l_inf_isotonic_cdf(["0.1", "1"])


@pytest.mark.parametrize("solver", [solve_barycenter_lp, solve_barycenter_lp_reference])
@pytest.mark.parametrize(
    ("pmfs", "weights", "grid", "alpha", "match"),
    [
        ([[1.0, 1.0, 1.0]], [1.0], [0.0, 0.5, 1.0], 0.1, "sum to 1"),  # sums to 3
        ([[0.5, 0.5], [0.5, 0.5]], [1.0, -1.0], [0.0, 1.0], 0.1, "weights must be >= 0"),
        ([[0.5, 0.5]], [0.0], [0.0, 1.0], 0.1, "not all 0"),
        ([[0.5, 0.5]], [1.0], [1.0, 0.0], 0.1, "grid must be strictly increasing"),
        ([[0.5, 0.5]], [1.0], [0.0, np.inf], 0.1, "grid contains NaN"),
        ([[1.5, -0.5]], [1.0], [0.0, 1.0], 0.1, "pmfs must be >= 0"),
        ([[0.5, 0.5]], [1.0], [0.0, 1.0], -0.1, "alpha must be >= 0"),  # was RuntimeError "Infeasible"
        ([[0.5, 0.5]], [1.0], [0.0, 1.0], float("nan"), "alpha must be >= 0"),  # alpha > 1 is accepted (never binds past 2)
        ([[0.5, 0.5]], [1.0, 1.0], [0.0, 1.0], 0.1, "weights must have shape"),
    ],
)
def test_lp_inputs_are_validated(solver, pmfs, weights, grid, alpha, match):
    with pytest.raises(ValueError, match=match):
        solver(pmfs, weights, grid, alpha)


def test_alpha0_inputs_are_validated():
    with pytest.raises(ValueError, match="sum to 1"):
        solve_barycenter_alpha0([[1.0, 1.0]], [1.0], [0.0, 1.0])


def test_huge_n_bins_fits_sparse_and_only_the_dense_views_are_refused():
    pp = _pp(n_bins=10**5).fit(Y, sensitive_features=G)  # sparse maps: no dense k x k array is built
    assert pp.sparse_transport_.shape == (2 * 10**5, 10**5)
    with pytest.raises(ValueError, match="memory limit") as info:
        _ = pp.transport_
    assert "n_bins" in str(info.value)
    k = math.isqrt(MAX_COUPLING_CELLS) + 1
    solution = solve_barycenter_lp(np.full((1, k), 1.0 / k), [1.0], np.arange(k, dtype=float), 0.0)
    assert solution.coupling_mass.size == k and solution.objective == 0.0
    with pytest.raises(ValueError, match="memory limit"):
        _ = solution.couplings
    with pytest.raises(ValueError, match="memory limit"):
        solve_barycenter_lp_reference(np.full((1, k), 1.0 / k), [1.0], np.arange(k, dtype=float), 0.0)


def test_unfitted_wasserstein_predict_raises_not_fitted():
    with pytest.raises(NotFittedError):
        WassersteinBarycenterPostProcessor().predict(Y, sensitive_features=G)


def test_mixed_type_groups_with_declared_groups():
    groups = np.array(["a", 1, "a", 1], dtype=object)
    pp = _pp(groups=["a", 1]).fit(Y, sensitive_features=groups)
    assert pp.groups_.tolist() == ["a", 1]


@pytest.mark.parametrize(
    ("kwargs", "match", "exc"),
    [
        ({"bounds": ("0", "1")}, "bounds", TypeError),
        ({"bounds": (0.0, 1e200)}, "bounds", ValueError),
        ({"prefit": "no"}, "prefit", TypeError),
        ({"epsilon": 1e-300}, "epsilon", ValueError),
        ({"n_bins": 2.5}, "n_bins", TypeError),
        ({"random_state": 1.5}, "random_state", TypeError),
    ],
)
def test_more_bad_parameters(kwargs, match, exc):
    with pytest.raises(exc, match=match):
        _pp(**kwargs).fit(Y, sensitive_features=G)


def test_mismatched_lengths_name_the_argument():
    from sklearn.linear_model import Ridge

    with pytest.raises(ValueError, match="sensitive_features"):
        _pp().fit(Y, sensitive_features=G[:3])
    with pytest.raises(ValueError, match="y must have one value per row"):
        _pp(estimator=Ridge(), prefit=False).fit(np.ones((4, 2)), Y[:3], sensitive_features=G)


@pytest.mark.parametrize("labels", [["a", ["b"], "a", "b"], ["a", "b", {"x": 1}, "b"]])
def test_unhashable_labels_name_the_argument(labels):
    with pytest.raises(TypeError, match="sensitive_features must hold hashable labels"):
        _pp().fit(Y, sensitive_features=np.array(labels, dtype=object))


# ---------------------------------------------------------------------------- sizes refused before the charge
@pytest.mark.parametrize("n_bins", [10**10, 2**70])
def test_n_bins_that_cannot_fit_in_memory_is_refused_by_name_before_anything_is_charged(n_bins):
    from dpfair.privacy import PrivacyBudget

    budget = PrivacyBudget(5.0)
    pp = _pp(n_bins=n_bins, budget=budget)
    with pytest.raises(ValueError, match="n_bins") as info:  # was MemoryError / "Maximum allowed size exceeded"
        pp.fit(Y, sensitive_features=G)
    assert "lower n_bins" in str(info.value)
    assert budget.spent() == (0.0, 0.0) and not hasattr(pp, "pmfs_")


@pytest.mark.parametrize("estimator", [_pp(), WassersteinBarycenterPostProcessor(groups=["a", "b"], random_state=0)])
def test_score_names_y_with_nan_or_the_wrong_length(estimator):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fitted = estimator.fit(Y, sensitive_features=G)
    with pytest.raises(ValueError, match=r"^y contains") as info:  # was scikit-learn's "Input contains NaN."
        fitted.score(Y, np.array([0.1, np.nan, 0.5, 0.5]), sensitive_features=G)
    assert "NaN" in str(info.value)
    with pytest.raises(ValueError, match="y must have one value per row"):
        fitted.score(Y, Y[:3], sensitive_features=G)
    with pytest.raises(TypeError, match="y"):
        fitted.score(Y, ["a", "b", "c", "d"], sensitive_features=G)
    assert np.isfinite(fitted.score(Y, Y, sensitive_features=G))


def test_make_regression_that_cannot_fit_in_memory_is_refused_by_name():
    from dpfair.datasets import make_regression

    for n_samples in (10**20, 2**70):
        with pytest.raises(ValueError, match="n_samples") as info:  # was MemoryError
            make_regression(n_samples)
        assert "lower n_samples" in str(info.value)
    X, y, groups = make_regression(7, random_state=0)
    assert X.shape == (7, 5) and y.shape == groups.shape == (7,)


def test_outputs_outside_bounds_are_clipped_with_a_warning_as_post_processing_of_the_regressor():
    """CONTRIBUTING rule 9: ``bounds`` declares the range of the wrapped regressor's outputs; an output beyond it is
    a prediction, clamped to the end bin (a fixed per-row map before the mechanism: the sensitivity is unchanged),
    with a warning, not refused."""
    outputs = np.array([-3.0, 0.3, 0.6, 7.0])
    with pytest.warns(UserWarning, match="some outputs lie outside bounds"):
        clipped = _pp(n_bins=4).fit(outputs, sensitive_features=G)
    inside = _pp(n_bins=4).fit(np.clip(outputs, 0.0, 1.0), sensitive_features=G)
    np.testing.assert_array_equal(clipped.pmfs_, inside.pmfs_)  # same seed, same histogram: exactly the clamp
