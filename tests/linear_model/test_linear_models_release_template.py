"""dpfair.linear_model on the one release template: same numbers, same ledger, nothing charged on a refusal."""

from __future__ import annotations

import inspect
import math

import numpy as np
import pandas as pd
import pytest

from dpfair._estimator import fit_charges
from dpfair.base import PrivateEstimator
from dpfair.linear_model import DPLinearRegression, DPLogisticRegression
from dpfair.privacy import PrivacyBudget

RNG = np.random.default_rng(1)
X = RNG.uniform(-0.5, 0.5, size=(200, 2))
Y = np.clip(X @ [1.0, -0.5] + 0.1 * RNG.normal(size=200), -1, 1)


@pytest.mark.parametrize("cls", [DPLinearRegression, DPLogisticRegression])
def test_linear_models_are_private_estimators_fitted_on_x_and_y(cls):
    assert issubclass(cls, PrivateEstimator)
    assert list(inspect.signature(cls.fit).parameters) == ["self", "X", "y"]


def test_seeded_fits_and_ledger_labels_are_unchanged():
    # the values the hand-written fit gave before the template (same seeds, same numbers)
    budget = PrivacyBudget(10.0, 1e-3)
    # (alpha=1.0 was the default before the defaults for epsilon 1 made it "auto")
    lin = DPLinearRegression(epsilon=1.0, data_norm=1.0, target_bound=1.0, alpha=1.0, budget=budget, random_state=7).fit(X, Y)
    lap = DPLinearRegression(epsilon=1.0, data_norm=1.0, target_bound=1.0, alpha=1.0, mechanism="laplace", budget=budget,
                             random_state=7).fit(X, Y)
    log = DPLogisticRegression(epsilon=1.0, data_norm=1.0, C=1.0, budget=budget, random_state=7).fit(X, Y > 0)  # C=1.0: likewise
    np.testing.assert_allclose(lin.coef_, [1.7389448383985282, -6.286501742469023], rtol=1e-9)
    assert lin.intercept_ == pytest.approx(-0.05941993127970509, rel=1e-9)
    np.testing.assert_allclose(lap.coef_, [49.24563133550838, -67.07107324604894], rtol=1e-9)
    assert lap.intercept_ == pytest.approx(-3.7389067839855206, rel=1e-9)
    np.testing.assert_allclose(log.coef_, [[24.67329463572166, 1.9967490549097036]], rtol=1e-9)
    np.testing.assert_allclose(log.intercept_, [3.32117971566349], rtol=1e-9)
    assert [entry.label for entry in budget.ledger] == [
        "DPLinearRegression.fit (gaussian sufficient statistics)",
        "DPLinearRegression.fit (laplace sufficient statistics)",
        "DPLogisticRegression.fit (objective perturbation)",
    ]
    assert budget.spent() == (pytest.approx(3.0), pytest.approx(1e-6))


@pytest.mark.parametrize("make", [
    lambda b: DPLinearRegression(epsilon=1.0, data_norm=1.0, target_bound=1.0, budget=b, random_state=0.5),
    lambda b: DPLogisticRegression(epsilon=1.0, data_norm=1.0, budget=b, random_state=-1),
    lambda b: DPLinearRegression(epsilon=1.0, data_norm=1.0, target_bound=1.0, mechanism="laplacian", budget=b),
    lambda b: DPLogisticRegression(epsilon=1e-300, data_norm=1.0, budget=b, random_state=0),
])
def test_refusals_charge_nothing_and_fit_nothing(make):
    budget = PrivacyBudget(10.0, 1e-3)
    est = make(budget)
    with pytest.raises((TypeError, ValueError)):
        est.fit(X, Y > 0 if isinstance(est, DPLogisticRegression) else Y)
    assert budget.spent() == (0.0, 0.0)
    assert not [name for name in vars(est) if name.endswith("_")]


@pytest.mark.parametrize("make", [
    lambda: DPLinearRegression(epsilon=1.0, data_norm=1.0, target_bound=1.0, random_state=0),
    lambda: DPLogisticRegression(epsilon=1.0, data_norm=1.0, random_state=0),
])
def test_a_refit_on_an_array_drops_the_earlier_feature_names(make):
    est = make()
    target = Y > 0 if isinstance(est, DPLogisticRegression) else Y
    est.fit(pd.DataFrame(X, columns=["u", "v"]), target)
    assert est.feature_names_in_.tolist() == ["u", "v"]
    est.fit(X, target)
    assert not hasattr(est, "feature_names_in_") and est.n_features_in_ == 2


def test_fit_charges_come_from_the_privacy_parameters():
    budget = PrivacyBudget(10.0, 1e-3)
    assert fit_charges(DPLinearRegression(epsilon=2.0, budget=budget)) == [(budget, 2.0, 1e-6)]
    assert fit_charges(DPLinearRegression(epsilon=2.0, mechanism="laplace")) == [(None, 2.0, 0.0)]
    assert fit_charges(DPLinearRegression(epsilon=math.inf)) == [(None, math.inf, 0.0)]
    assert fit_charges(DPLogisticRegression(epsilon=2.0, budget=budget)) == [(budget, 2.0, 0.0)]
    with pytest.raises(ValueError, match="delta must be > 0 with mechanism='gaussian'"):
        fit_charges(DPLinearRegression(epsilon=2.0, delta=0.0, mechanism="gaussian"))
    # the default mechanism="auto" spends no delta when none is allowed
    assert fit_charges(DPLinearRegression(epsilon=2.0, delta=0.0)) == [(None, 2.0, 0.0)]
    pure = PrivacyBudget(5.0)
    assert fit_charges(DPLinearRegression(epsilon=2.0, budget=pure)) == [(pure, 2.0, 0.0)]
    with pytest.raises(TypeError, match="budget"):
        fit_charges(DPLogisticRegression(budget=1.0))
