"""FairRegressionPostProcessor runs the one release template of dpfair.base."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.linear_model import LinearRegression

import dpfair.regression.postprocessing as pp_module
from dpfair.base import PrivateEstimator
from dpfair.linear_model import DPLinearRegression
from dpfair.privacy import PrivacyBudget, PrivacyBudgetExceededError, PrivacyLeakWarning
from dpfair.regression import FairRegressionPostProcessor, WassersteinBarycenterPostProcessor

RNG = np.random.default_rng(0)
X = RNG.uniform(0, 1, size=(200, 2))
Y = np.clip(0.8 * X[:, 0] + RNG.normal(0, 0.1, 200), 0, 1)
G = np.tile(["a", "b"], 100)


def _pp(**kwargs):
    args = {"epsilon": 1.0, "n_bins": 8, "bounds": (0.0, 1.0), "groups": ["a", "b"], "random_state": 0, **kwargs}
    return FairRegressionPostProcessor(**args)


def test_the_private_post_processor_is_a_private_estimator_and_the_baseline_is_not():
    assert FairRegressionPostProcessor.__mro__[1] is PrivateEstimator
    assert not issubclass(WassersteinBarycenterPostProcessor, PrivateEstimator)  # no epsilon, no budget, no charge


def test_the_noise_is_drawn_once_after_the_single_charge(monkeypatch):
    budget, seen = PrivacyBudget(2.0), []
    real = pp_module.laplace_mechanism

    def spy(*args, **kwargs):
        seen.append(budget.spent())
        return real(*args, **kwargs)

    monkeypatch.setattr(pp_module, "laplace_mechanism", spy)
    pp = _pp(budget=budget).fit(Y, sensitive_features=G)
    assert seen == [(1.0, 0.0)]
    assert [entry.label for entry in budget.ledger] == ["FairRegressionPostProcessor.fit (Laplace histogram)"]
    assert pp.privacy_spent_["epsilon"] == 1.0


def test_a_bad_random_state_is_refused_before_the_charge():
    budget = PrivacyBudget(2.0)
    est = _pp(budget=budget, random_state=0.5)
    with pytest.raises(TypeError, match="random_state"):
        est.fit(Y, sensitive_features=G)
    assert budget.spent() == (0.0, 0.0) and not budget.ledger
    assert not [name for name in vars(est) if name.endswith("_")]


@pytest.mark.filterwarnings("ignore:some outputs lie outside bounds")
def test_a_private_base_fitted_inside_is_charged_first_and_composed():
    budget = PrivacyBudget(3.0, 1e-3)
    base = DPLinearRegression(epsilon=0.5, data_norm=2.0, target_bound=1.0, budget=budget, random_state=1)
    pp = _pp(estimator=base, prefit=False, budget=budget).fit(X, Y, sensitive_features=G)
    labels = [entry.label for entry in budget.ledger]
    assert labels[0].startswith("DPLinearRegression.fit") and labels[-1].endswith("(Laplace histogram)")
    assert pp.privacy_spent_["epsilon"] == pytest.approx(1.5)
    assert "every row (x, y, group)" in pp.privacy_spent_["protects"]


def test_a_budget_that_cannot_pay_both_fits_is_refused_before_the_base_is_fitted():
    budget = PrivacyBudget(1.2, 1e-3)
    base = DPLinearRegression(epsilon=0.5, data_norm=2.0, target_bound=1.0, budget=budget, random_state=1)
    est = _pp(estimator=base, prefit=False, budget=budget)
    with pytest.raises(PrivacyBudgetExceededError):
        est.fit(X, Y, sensitive_features=G)
    assert not budget.ledger and not [name for name in vars(est) if name.endswith("_")]


def test_warnings_point_at_the_caller_of_fit():
    wide = np.r_[Y[:-1], 1.5]  # one output outside bounds: clipped with a warning
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _pp(estimator=LinearRegression(), prefit=False).fit(X, wide, sensitive_features=G)
        _pp(groups=["a", "b", "c"], epsilon=0.05).fit(wide, sensitive_features=G)  # noisy weight 0 for "c" (likely)
    messages = [(w.category, str(w.message)) for w in caught]
    assert any(kind is PrivacyLeakWarning and text.startswith("prefit=False") for kind, text in messages)
    assert any(kind is UserWarning and text.startswith("some outputs lie outside bounds") for kind, text in messages)
    assert {w.filename for w in caught} == {__file__}


@pytest.mark.parametrize("case", ["sensitive_features missing", "undeclared group", "epsilon too small"])
def test_row_checks_come_before_a_private_base_model_is_charged(case):
    """The groups and the noise scale are checked before the wrapped private regressor's fit charges."""
    rng = np.random.default_rng(0)
    X = rng.uniform(-0.5, 0.5, size=(300, 2))
    y = np.clip(X.sum(axis=1), -1, 1)
    g = rng.integers(0, 2, 300)
    budget = PrivacyBudget(10.0, 1e-3)
    base = DPLinearRegression(epsilon=1.0, delta=1e-6, data_norm=1.0, target_bound=1.0, budget=budget, random_state=0)
    post = FairRegressionPostProcessor(base, prefit=False, epsilon=1e-300 if case == "epsilon too small" else 1.0,
                                       bounds=(-2, 2), groups=[0, 1], budget=budget, random_state=0)
    sensitive = {"sensitive_features missing": None, "undeclared group": np.where(g == 0, 7, g)}.get(case, g)
    with pytest.raises(ValueError):
        post.fit(X, y, sensitive_features=sensitive)
    assert budget.spent() == (0, 0) and not budget.ledger
