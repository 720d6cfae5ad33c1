"""DPFairClassifier: the choice from public facts, one charge, the chosen mechanism's guarantees, the contract."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression
from sklearn.utils.estimator_checks import parametrize_with_checks

from _registry import contract_instances
from dpfair.classification import (
    DPBlindPostProcessor,
    DPEqualizedOddsPostProcessor,
    DPFairClassifier,
    SmallBudgetWarning,
)
from dpfair.classification._postprocessing_mix import SMALL_SAMPLE_CONSTANT_MIX
from dpfair.classification.recommended import (
    BASE_MODEL_SHARE,
    RECORDS_AWARE_BASE_SHARE,
    RECORDS_AWARE_SCORE_BINS,
    PublicBaseClassifier,
    choose_mechanism,
)
from dpfair.datasets import make_classification
from dpfair.privacy import PrivacyBudget, PrivacyLeakWarning

pytestmark = pytest.mark.filterwarnings("ignore::dpfair.privacy.SeededNoiseWarning",
                                        "ignore::dpfair.classification.FairnessSlackWarning")


@parametrize_with_checks(contract_instances("DPFairClassifier"))
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)


@pytest.mark.parametrize("protects, at_prediction, mechanism, relation", [
    ("attribute", False, "DPBlindPostProcessor", "change_attribute"),
    ("attribute", True, "DPEqualizedOddsPostProcessor", "change_attribute"),
    ("records", False, "DPBlindPostProcessor", "replace"),
    ("records", True, "DPEqualizedOddsPostProcessor", "replace"),
])
def test_the_choice_is_recorded_and_the_whole_fit_is_one_charge(protects, at_prediction, mechanism, relation):
    X, y, g = make_classification(1500, disparity=1.5, random_state=0)
    budget = PrivacyBudget(3.0, neighbouring=relation)
    est = DPFairClassifier(epsilon=1.0, groups=[0, 1], protects=protects, attribute_at_prediction=at_prediction,
                           data_norm=5.0, budget=budget, random_state=0).fit(X, y, sensitive_features=g)
    assert est.mechanism_ == mechanism == type(est.estimator_).__name__
    assert len(budget.ledger) == 1 and budget.spent()[0] == pytest.approx(1.0)
    assert mechanism in budget.ledger[0].label and protects in budget.ledger[0].label
    assert est.privacy_spent_["epsilon"] == pytest.approx(1.0) and est.privacy_spent_["relation"] == relation
    assert est.estimator_.privacy_spent_ == est.privacy_spent_
    base = est.estimator_.estimator_
    expected = {"records": "DPLogisticRegression"}.get(protects, "LogisticRegression" if at_prediction
                                                       else "PublicBaseClassifier")
    assert type(base).__name__ == expected
    proba = est.predict_proba(X, sensitive_features=g)
    assert proba.shape == (X.shape[0], 2)
    if not at_prediction:  # blind: the group is not needed (and not read) at prediction
        np.testing.assert_array_equal(est.predict_proba(X), proba)
    assert choose_mechanism(protects, at_prediction, X.shape[0], 2, 1.0) == mechanism


def test_records_need_a_declared_data_norm_and_nothing_is_charged_without_it():
    X, y, g = make_classification(300, random_state=1)
    budget = PrivacyBudget(3.0)
    with pytest.raises(ValueError, match="data_norm is required"):
        DPFairClassifier(epsilon=1.0, groups=[0, 1], protects="records", budget=budget).fit(X, y, sensitive_features=g)
    assert budget.spent()[0] == 0


def test_epsilon_inf_is_the_chosen_mechanism_without_noise():
    X, y, g = make_classification(1500, disparity=1.5, random_state=2)
    with pytest.warns(PrivacyLeakWarning):
        est = DPFairClassifier(epsilon=math.inf, groups=[0, 1], random_state=0).fit(X, y, sensitive_features=g)
    with pytest.warns(PrivacyLeakWarning):
        direct = DPBlindPostProcessor(PublicBaseClassifier(), prefit=False, epsilon=math.inf, groups=[0, 1],
                                      random_state=0).fit(X, y, sensitive_features=g)
    np.testing.assert_allclose(est.predict_proba(X), direct.predict_proba(X))
    with pytest.warns(PrivacyLeakWarning):
        aware = DPFairClassifier(epsilon=math.inf, groups=[0, 1], attribute_at_prediction=True).fit(
            X, y, sensitive_features=g)
    with pytest.warns(PrivacyLeakWarning):
        direct = DPEqualizedOddsPostProcessor(LogisticRegression(max_iter=1000), prefit=False, epsilon=math.inf,
                                              groups=[0, 1], constant_mix=SMALL_SAMPLE_CONSTANT_MIX,
                                              public_totals=True).fit(
            X, y, sensitive_features=g)  # (1,500 rows: below SMALL_SAMPLE_ROWS, the constant mixed in)
    np.testing.assert_allclose(aware.predict_proba(X, sensitive_features=g), direct.predict_proba(X, sensitive_features=g))
    assert aware.estimator_.score_bins_ == 8  # the post-processor's own bins when only the attribute is private


def test_whole_records_attribute_aware_has_its_own_bins_and_budget_split():
    """Attribute-aware under whole-row privacy: 5 bins, 0.4 of epsilon for the private base, 0.6 for the table; the
    blind whole-row path keeps BASE_MODEL_SHARE (0.5)."""
    X, y, g = make_classification(1500, disparity=1.5, random_state=2)
    norm = float(np.linalg.norm(X, axis=1).max())
    budget = PrivacyBudget(2.0, neighbouring="replace")
    est = DPFairClassifier(epsilon=2.0, groups=[0, 1], protects="records", attribute_at_prediction=True,
                           data_norm=norm, budget=budget, random_state=0).fit(X, y, sensitive_features=g)
    assert RECORDS_AWARE_SCORE_BINS == 5 and RECORDS_AWARE_BASE_SHARE == pytest.approx(0.4)
    assert est.estimator_.score_bins_ == est.estimator_.noisy_frequencies_.shape[0] == 5
    assert est.estimator_.estimator_.epsilon == pytest.approx(0.8)  # 0.4 of 2.0 for the base
    assert est.estimator_.epsilon == pytest.approx(1.2)  # the rest for the table (and the label count)
    assert est.privacy_spent_["epsilon"] == pytest.approx(2.0) and budget.spent()[0] == pytest.approx(2.0)
    blind = DPFairClassifier(epsilon=2.0, groups=[0, 1], protects="records", data_norm=norm,
                             random_state=0).fit(X, y, sensitive_features=g)
    assert blind.estimator_.estimator_.epsilon == pytest.approx(2.0 * BASE_MODEL_SHARE) == pytest.approx(1.0)


def test_on_its_defaults_it_never_errs_more_than_the_constant_when_the_budget_buys_nothing():
    X, y, g = make_classification(120, disparity=1.5, random_state=3)
    with pytest.warns(SmallBudgetWarning):
        est = DPFairClassifier(epsilon=0.1, groups=[0, 1], random_state=0).fit(X, y, sensitive_features=g)
    p1 = est.predict_proba(X)[:, 1]
    assert np.mean(np.where(y == 1, 1 - p1, p1)) <= min(y.mean(), 1 - y.mean()) + 0.005


def test_seeded_fits_are_reproducible_and_secure_is_the_default():
    X, y, g = make_classification(800, random_state=4)
    fits = [DPFairClassifier(epsilon=1.0, groups=[0, 1], random_state=7).fit(X, y, sensitive_features=g)
            for _ in range(2)]
    np.testing.assert_array_equal(fits[0].predict_proba(X), fits[1].predict_proba(X))
    assert fits[0].privacy_spent_["noise"] == "seeded"
    assert DPFairClassifier().get_params()["random_state"] is None


def test_score_takes_the_groups_when_the_attribute_is_used_at_prediction_and_routes_them_in_a_search():
    import sklearn
    from sklearn.model_selection import cross_val_score

    X, y, g = make_classification(1500, random_state=5)
    aware = DPFairClassifier(epsilon=1.0, groups=[0, 1], attribute_at_prediction=True, random_state=0)
    fitted = aware.fit(X, y, sensitive_features=g)
    expected = np.mean(np.where(y == fitted.classes_[1], fitted.predict_proba(X, sensitive_features=g)[:, 1],
                                fitted.predict_proba(X, sensitive_features=g)[:, 0]))
    assert fitted.score(X, y, sensitive_features=g) == pytest.approx(expected, abs=0.04)  # a randomized draw
    with pytest.raises(ValueError, match="sensitive_features is required"):
        fitted.score(X, y)
    blind = DPFairClassifier(epsilon=1.0, groups=[0, 1], random_state=0).fit(X, y, sensitive_features=g)
    assert 0.5 < blind.score(X, y) <= 1.0  # blind: no groups at prediction
    with sklearn.config_context(enable_metadata_routing=True):
        routed = clone(aware).set_fit_request(sensitive_features=True).set_score_request(sensitive_features=True)
        scores = cross_val_score(routed, X, y, cv=3, params={"sensitive_features": g})
    assert scores.shape == (3,) and np.all((scores > 0.5) & (scores <= 1.0))
