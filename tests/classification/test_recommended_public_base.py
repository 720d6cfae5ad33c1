"""PublicBaseClassifier: the blind DPFairClassifier's non-private base score, chosen on public (X, y) only."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from dpfair.classification import DPBlindPostProcessor, DPFairClassifier
from dpfair.classification.recommended import PublicBaseClassifier
from dpfair.datasets import make_classification

pytestmark = pytest.mark.filterwarnings("ignore::dpfair.privacy.SeededNoiseWarning",
                                        "ignore::dpfair.classification.FairnessSlackWarning",
                                        "ignore::dpfair.classification.VacuousConstraintWarning",
                                        "ignore::dpfair.privacy.PrivacyLeakWarning",
                                        "ignore::dpfair.classification.SmallBudgetWarning")


def _xor_task(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A label no linear score can rank (the sign of x0 * x1), groups tied to x0."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, 3))
    y = ((X[:, 0] * X[:, 1] > 0) ^ (rng.random(n) < 0.1)).astype(int)
    g = (X[:, 0] + rng.normal(0, 0.5, n) > 0).astype(int)
    return X, y, g


def test_the_held_out_comparison_picks_trees_for_a_nonlinear_label_and_the_logistic_for_a_linear_one():
    X, y, _ = _xor_task(2000)
    model = PublicBaseClassifier().fit(X, y)
    assert model.chosen_ == "gradient_boosting"
    assert model.holdout_log_loss_["gradient_boosting"] < model.holdout_log_loss_["logistic"] - 0.2
    assert np.mean(model.predict(X) != y) < 0.2  # a logistic regression errs about 0.5 here
    X, y, _ = make_classification(2000, random_state=1)
    linear = PublicBaseClassifier().fit(X, y)
    assert linear.chosen_ == "logistic" and type(linear.estimator_).__name__ == "LogisticRegression"


def test_few_rows_use_the_logistic_regression_without_a_comparison():
    X, y, _ = _xor_task(999)
    model = PublicBaseClassifier().fit(X, y)
    assert model.chosen_ == "logistic" and model.holdout_log_loss_ == {}
    assert PublicBaseClassifier(min_rows=500).fit(X, y).chosen_ == "gradient_boosting"


def test_it_is_deterministic_and_refuses_a_bad_holdout():
    X, y, _ = _xor_task(1200, seed=3)
    first, second = PublicBaseClassifier().fit(X, y), PublicBaseClassifier().fit(X, y)
    np.testing.assert_array_equal(first.predict_proba(X), second.predict_proba(X))
    with pytest.raises(ValueError, match="holdout"):
        PublicBaseClassifier(holdout=1.5).fit(X, y)


def test_the_base_never_reads_the_attribute():
    """Everything that reads A is the post-processor's charged releases: the base score is the same whatever A is."""
    X, y, g = _xor_task(1200, seed=4)
    fits = [DPFairClassifier(epsilon=1.0, groups=[0, 1], random_state=0).fit(X, y, sensitive_features=groups)
            for groups in (g, 1 - g)]
    scores = [fit.estimator_.estimator_.predict_proba(X) for fit in fits]
    np.testing.assert_array_equal(scores[0], scores[1])
    assert fits[0].estimator_.estimator_.chosen_ == "gradient_boosting"


def test_the_blind_fit_on_the_chosen_base_errs_less_than_on_a_logistic_base():
    X, y, g = _xor_task(2000, seed=5)
    test_X, test_y, _ = _xor_task(1000, seed=6)
    fair = DPFairClassifier(epsilon=math.inf, groups=[0, 1]).fit(X, y, sensitive_features=g)
    logistic = DPBlindPostProcessor(LogisticRegression(max_iter=1000), prefit=False, epsilon=math.inf,
                                    groups=[0, 1]).fit(X, y, sensitive_features=g)

    def error(model: object) -> float:
        p1 = model.predict_proba(test_X)[:, 1]
        return float(np.mean(np.where(test_y == 1, 1 - p1, p1)))

    assert error(fair) < error(logistic) - 0.1
