"""DPMedianImputer and DPQuantileClipper: the release template, closed forms at epsilon = inf, and an audit."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from dpfair.linear_model import DPLinearRegression
from dpfair.preprocessing import RANGE_GRID, DPMedianImputer, DPQuantileClipper, quantile_utilities
from dpfair.privacy import PrivacyBudget, PrivacyLeakWarning, audit_epsilon

SECRET = "Jane-Roe-123"


def _quiet(fit):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)  # seeded noise in tests
        return fit()


def _with_missing(seed=0, n=3000):
    rng = np.random.default_rng(seed)
    X = np.column_stack([rng.uniform(20, 60, n), rng.exponential(10.0, n).clip(0, 100)])
    X[rng.random(n) < 0.3, 0] = np.nan
    return X


def test_median_imputer_at_epsilon_inf_is_the_exact_median_of_the_present_values():
    X = _with_missing()
    with pytest.warns(PrivacyLeakWarning, match="medians"):
        imputer = DPMedianImputer(epsilon=np.inf).fit(X)
    np.testing.assert_allclose(imputer.statistics_, np.nanmedian(X, axis=0))
    out = imputer.transform(X)
    np.testing.assert_array_equal(out[np.isnan(X)], np.broadcast_to(imputer.statistics_, X.shape)[np.isnan(X)])
    np.testing.assert_array_equal(out[~np.isnan(X)], X[~np.isnan(X)])
    assert imputer.privacy_spent_["epsilon"] == np.inf and imputer.privacy_spent_["protects"].startswith("nothing")


def test_median_imputer_is_within_a_few_grid_steps_of_the_median_and_charges_once():
    X = _with_missing()
    budget = PrivacyBudget(2.0)
    imputer = _quiet(lambda: DPMedianImputer(epsilon=2.0, bounds=[(0, 100), (0, 100)], budget=budget,
                                             random_state=0).fit(X))
    step = 100 / RANGE_GRID
    assert np.all(np.abs(imputer.statistics_ - np.nanmedian(X, axis=0)) <= 5 * step)
    assert len(budget.ledger) == 1 and budget.spent() == (2.0, 0.0)
    assert np.all(np.isin(np.round(imputer.statistics_ / step, 6), np.arange(RANGE_GRID + 1)))  # grid points


def test_median_imputer_refuses_before_the_charge_and_names_no_value():
    budget = PrivacyBudget(5.0)
    X = _with_missing()
    with pytest.raises(ValueError, match="outside the declared bounds") as caught:
        DPMedianImputer(epsilon=1.0, bounds=(0, 50), budget=budget).fit(X)
    assert "59" not in str(caught.value)
    with pytest.raises(ValueError, match="DeclaredOneHotEncoder") as caught:
        DPMedianImputer(epsilon=1.0, bounds=(0, 1), budget=budget).fit(np.array([[SECRET], [0.5]], dtype=object))
    assert SECRET not in str(caught.value)
    with pytest.raises(ValueError, match="bounds is required"):
        DPMedianImputer(epsilon=1.0, budget=budget).fit(X)
    with pytest.raises(ValueError, match="contains NaN, but missing_values=-1"):
        DPMedianImputer(epsilon=1.0, bounds=(0, 100), missing_values=-1, budget=budget).fit(X)
    assert budget.spent() == (0.0, 0.0)


def test_a_column_with_no_present_value_is_handled_after_the_charge():
    X = np.full((50, 1), np.nan)
    imputer = _quiet(lambda: DPMedianImputer(epsilon=1.0, bounds=(0, 10), random_state=0).fit(X))
    assert 0 <= imputer.statistics_[0] <= 10 and np.isfinite(imputer.transform(X)).all()


def _median_mechanism(scale_factor=1.0):
    """The imputer's one draw (its median, on a grid of 9 points), with the missing values dropped as it does."""
    candidates = np.linspace(0.0, 1.0, 9)

    def mechanism(values, size, rng):
        utility = quantile_utilities(values[~np.isnan(values)], candidates, 0.5)
        gumbel = np.random.default_rng(rng).gumbel(size=(size, candidates.size))
        return np.argmax(utility / (2.0 * scale_factor) + gumbel, axis=1).astype(float)  # epsilon = 1

    return mechanism


@pytest.mark.statistical
def test_median_release_audit_passes_on_both_neighbours_and_catches_half_noise():
    """Replace one row: a value moved across every candidate, and a missing value that becomes present (m moves)."""
    rest = np.array([0.1, 0.2, 0.3, 0.9])
    moved = (np.append(rest, 0.0), np.append(rest, 1.0))
    filled = (np.append(rest, np.nan), np.append(rest, 0.0))
    honest = [audit_epsilon(_median_mechanism(1.0), *pair, n_samples=150_000, discrete=True, random_state=1)
              for pair in (moved, filled)]
    mutant = audit_epsilon(_median_mechanism(0.5), *moved, n_samples=150_000, discrete=True, random_state=1)
    print(f"median audit at epsilon=1: honest {honest[0].epsilon_lower_bound:.3f} (value moved), "
          f"{honest[1].epsilon_lower_bound:.3f} (missing filled); half-noise {mutant.epsilon_lower_bound:.3f}")
    assert max(result.epsilon_lower_bound for result in honest) <= 1.0 < mutant.epsilon_lower_bound


# --------------------------------------------------------------------------------------- the clipper
def test_clipper_draws_the_same_ranges_as_dp_linear_regression():
    """One mechanism (dpfair.preprocessing.private_feature_ranges): the same seed and epsilon give the same ranges."""
    rng = np.random.default_rng(0)
    X = np.column_stack([rng.uniform(0.2, 0.4, 20_000), rng.uniform(0, 1, 20_000)])
    y = X @ [1.0, 0.5]
    model = _quiet(lambda: DPLinearRegression(epsilon=2.0, feature_bounds=(0, 1), target_bound=(0, 2), range_share=0.3,
                                              random_state=5).fit(X, y))
    clipper = _quiet(lambda: DPQuantileClipper(epsilon=0.6, bounds=(0, 1), random_state=5).fit(X))
    np.testing.assert_array_equal(clipper.clip_range_, model.feature_range_)
    assert 0.19 <= clipper.clip_range_[0, 0] <= 0.23 and 0.37 <= clipper.clip_range_[1, 0] <= 0.41


def test_clipper_at_epsilon_inf_clips_to_the_exact_quantiles_and_maps_onto_the_output_range():
    rng = np.random.default_rng(1)
    X = rng.exponential(30_000, size=(5000, 1)).clip(0, 1e6)
    with pytest.warns(PrivacyLeakWarning):
        clipper = DPQuantileClipper(epsilon=np.inf, bounds=(0, 1e6), quantile=0.1, output_range=(-1, 1)).fit(X)
    low, high = np.quantile(X, [0.1, 0.9])
    np.testing.assert_allclose(clipper.clip_range_[:, 0], [low, high])
    np.testing.assert_allclose(clipper.transform(X)[:, 0], -1 + 2 * (np.clip(X[:, 0], low, high) - low) / (high - low))
    assert clipper.row_norm_bound() == 1.0
    assert DPQuantileClipper(bounds=[(0, 3), (-4, 1)]).row_norm_bound() == pytest.approx(5.0)


def test_clipper_refuses_nan_and_values_outside_the_declared_range_before_the_charge():
    budget = PrivacyBudget(5.0)
    with pytest.raises(ValueError, match="DeclaredImputer"):
        DPQuantileClipper(epsilon=1.0, bounds=(0, 1), budget=budget).fit(np.array([[0.5], [np.nan]]))
    with pytest.raises(ValueError, match="outside the declared bounds"):
        DPQuantileClipper(epsilon=1.0, bounds=(0, 1), budget=budget).fit(np.array([[0.5], [2.0]]))
    with pytest.raises(ValueError, match="quantile must lie in"):
        DPQuantileClipper(epsilon=1.0, bounds=(0, 1), quantile=0.5, budget=budget).fit(np.array([[0.5]]))
    assert budget.spent() == (0.0, 0.0)
