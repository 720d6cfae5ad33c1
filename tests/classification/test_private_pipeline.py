"""The private pipeline: DPLogisticRegression(C="auto") inside DPEqualizedOddsPostProcessor with
score bins, one budget; the rule of C="auto"."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.linear_model import LogisticRegression
from sklearn.svm import SVC, LinearSVC

from dpfair.classification import DPEqualizedOddsPostProcessor
from dpfair.classification._postprocessing_guarantee import AUTO_SCORE_BINS, resolve_score_bins
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


def test_auto_C_at_epsilon_inf_is_scikit_learns_default_and_auto_is_the_default_C():
    X, y, _ = _data(seed=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exact = DPLogisticRegression(epsilon=math.inf, C="auto").fit(X, y)
    assert exact.C_ == 1.0
    reference = LogisticRegression(fit_intercept=False, C=1.0, tol=1e-12, max_iter=1000).fit(
        np.column_stack([X, np.ones(len(X))]), y)
    np.testing.assert_allclose(np.r_[exact.coef_[0], exact.intercept_], reference.coef_[0], rtol=1e-5, atol=1e-5)
    default = DPLogisticRegression(epsilon=1.0, data_norm=1.0, random_state=0).fit(X, y)  # C="auto", the default
    assert default.C == "auto" and default.C_ == auto_C(1.0, math.sqrt(2.0))
    auto = DPLogisticRegression(epsilon=1.0, data_norm=1.0, C="auto", random_state=0).fit(X, y)
    np.testing.assert_array_equal(default.coef_, auto.coef_)
    paper = DPLogisticRegression(epsilon=1.0, data_norm=1.0, C=1.0, random_state=0).fit(X, y)  # the earlier default
    assert paper.C_ == 1.0 and paper.epsilon_prime_ == pytest.approx(1.0 - 2 * math.log1p(0.5))
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


class _PredictOnly(ClassifierMixin, BaseEstimator):
    """A fitted base classifier without a score (no predict_proba, no decision_function)."""

    def fit(self, X, y=None):
        self.classes_ = np.array([0, 1])
        return self

    def predict(self, X):
        return (np.asarray(X)[:, 0] > 0).astype(int)


class _Untouchable:
    """An estimator whose every call fails: score_bins="auto" may only look at which methods it has."""

    def __init__(self, methods):
        for name in methods:
            setattr(self, name, self._refuse)

    def _refuse(self, *args, **kwargs):
        raise AssertionError("score_bins='auto' called the estimator")


def test_score_bins_auto_is_decided_from_the_estimators_public_methods_only():
    assert AUTO_SCORE_BINS == 8
    assert resolve_score_bins("auto", _Untouchable(["fit", "predict", "predict_proba"])) == 8
    assert resolve_score_bins("auto", _Untouchable(["fit", "predict", "decision_function"])) == 8
    assert resolve_score_bins("auto", _Untouchable(["fit", "predict"])) is None
    assert resolve_score_bins("auto", None) is None
    assert resolve_score_bins("auto", SVC()) == 8  # decision_function; scikit-learn hides predict_proba here
    assert resolve_score_bins("auto", LinearSVC()) == 8
    assert resolve_score_bins(None, LogisticRegression()) is None and resolve_score_bins(3, _PredictOnly()) == 3
    with pytest.raises(ValueError, match="score_bins must be 'auto', None"):
        resolve_score_bins("eight", LogisticRegression())


def test_the_default_post_processor_is_score_bins_8_with_a_score_and_the_papers_table_without():
    X, y, g = _data(n=3000, seed=4)
    base = LogisticRegression().fit(X, y)
    kwargs = {"epsilon": 1.0, "gamma": 0.02, "groups": [0, 1], "random_state": 3}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FairnessSlackWarning)
        default = DPEqualizedOddsPostProcessor(base, **kwargs).fit(X, y, sensitive_features=g)
        eight = DPEqualizedOddsPostProcessor(base, score_bins=8, **kwargs).fit(X, y, sensitive_features=g)
        plain = DPEqualizedOddsPostProcessor(_PredictOnly().fit(X), **kwargs).fit(X, y, sensitive_features=g)
        paper = DPEqualizedOddsPostProcessor(_PredictOnly().fit(X), score_bins=None, **kwargs).fit(
            X, y, sensitive_features=g)
    assert default.score_bins == "auto" and default.score_bins_ == 8 and default.probabilities_.shape == (8, 2)
    np.testing.assert_array_equal(default.noisy_frequencies_, eight.noisy_frequencies_)  # "auto" is 8, bit for bit
    np.testing.assert_array_equal(default.probabilities_, eight.probabilities_)
    assert plain.score_bins_ is None and plain.probabilities_.shape == (2, 2)  # no score: Algorithm 1's table
    np.testing.assert_array_equal(plain.probabilities_, paper.probabilities_)
    assert (plain.slack_fp_[1] > 0) and (default.slack_fp_ == 0).all()  # LP~ (1)'s slack only in the paper's table


def test_the_pipeline_with_every_default_is_the_recommended_one_bit_for_bit():
    X, y, g = _data(n=4000, seed=5)

    def fit(**settings):
        base = DPLogisticRegression(epsilon=1.0, data_norm=1.0, random_state=1, **settings.get("base", {}))
        post = DPEqualizedOddsPostProcessor(base, prefit=False, epsilon=1.0, gamma=0.02, groups=[0, 1], random_state=2,
                                            **settings.get("post", {}))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FairnessSlackWarning)
            return post.fit(X, y, sensitive_features=g)

    default = fit()
    recommended = fit(base={"C": "auto"}, post={"score_bins": 8})
    paper = fit(base={"C": 1.0}, post={"score_bins": None})
    assert default.estimator_.C_ == auto_C(1.0, math.sqrt(2.0)) and default.score_bins_ == 8
    np.testing.assert_array_equal(default.estimator_.coef_, recommended.estimator_.coef_)
    np.testing.assert_array_equal(default.probabilities_, recommended.probabilities_)
    assert paper.estimator_.C_ == 1.0 and paper.score_bins_ is None and paper.probabilities_.shape == (2, 2)
