"""The private pipeline of issue 32, part D: DPLogisticRegression(C="auto") inside DPEqualizedOddsPostProcessor with
score bins, one budget; the rule of C="auto"."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from dpfair.classification import DPEqualizedOddsPostProcessor
from dpfair.classification.postprocessing import FairnessSlackWarning
from dpfair.datasets import make_classification
from dpfair.linear_model import DPLogisticRegression
from dpfair.linear_model._logistic import auto_C


def _data(n=4000, seed=0):
    X, y, g = make_classification(n, disparity=1.5, random_state=seed)
    X = X / np.linalg.norm(X, axis=1).max()  # rows in the unit ball: the declared bound 1 is public here
    return X, y, g


@pytest.mark.parametrize("epsilon", [0.3, 1.0, 4.0])
def test_auto_C_spends_a_tenth_of_epsilon_on_the_curvature_correction(epsilon):
    X, y, _ = _data()
    model = DPLogisticRegression(epsilon=epsilon, data_norm=1.0, C="auto", random_state=0).fit(X, y)
    radius_squared = 1.0 + 1.0  # data_norm^2 + intercept_scaling^2
    assert model.C_ == pytest.approx(4 * math.expm1(epsilon / 20) / radius_squared, rel=1e-12)
    assert model.C_ == auto_C(epsilon, math.sqrt(radius_squared))
    assert model.epsilon_prime_ == pytest.approx(0.9 * epsilon, rel=1e-9)  # Algorithm 2: epsilon - 2 log(1 + C r^2/4)
    assert model.extra_regularization_ == 0.0
    explicit = DPLogisticRegression(epsilon=epsilon, data_norm=1.0, C=model.C_, random_state=0).fit(X, y)
    np.testing.assert_array_equal(model.coef_, explicit.coef_)  # "auto" is that C, nothing else


def test_auto_C_at_epsilon_inf_is_scikit_learns_default_and_the_default_C_is_unchanged():
    X, y, _ = _data(seed=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exact = DPLogisticRegression(epsilon=math.inf, C="auto").fit(X, y)
    assert exact.C_ == 1.0
    reference = LogisticRegression(fit_intercept=False, C=1.0, tol=1e-12, max_iter=1000).fit(
        np.column_stack([X, np.ones(len(X))]), y)
    np.testing.assert_allclose(np.r_[exact.coef_[0], exact.intercept_], reference.coef_[0], rtol=1e-5, atol=1e-5)
    assert DPLogisticRegression(epsilon=1.0, data_norm=1.0, random_state=0).fit(X, y).C_ == 1.0
    with pytest.raises(ValueError, match="C must be a positive finite number or 'auto'"):
        DPLogisticRegression(epsilon=1.0, data_norm=1.0, C="big").fit(X, y)


def test_the_recommended_pipeline_charges_each_part_once_and_reports_its_guarantee():
    from dpfair.privacy import PrivacyBudget

    X, y, g = _data(n=6000, seed=2)
    budget = PrivacyBudget(2.0)
    base = DPLogisticRegression(epsilon=1.0, data_norm=1.0, C="auto", budget=budget)
    post = DPEqualizedOddsPostProcessor(base, prefit=False, epsilon=1.0, gamma=0.02, groups=[0, 1], score_bins=8,
                                        budget=budget)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FairnessSlackWarning)
        post.fit(X, y, sensitive_features=g)
    assert len(budget.ledger) == 2 and budget.spent()[0] == pytest.approx(2.0)
    assert post.privacy_spent_["epsilon"] == pytest.approx(2.0)
    assert 0.0 < post.noise_slack_ <= post.guaranteed_violation_ <= 1.0
    assert post.probabilities_.shape == (8, 2)
    proba = post.predict_proba(X, sensitive_features=g)[:, 1]
    assert np.isfinite(proba).all() and ((proba >= 0) & (proba <= 1)).all()
