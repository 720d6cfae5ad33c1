"""Whole records private and blind: the post-processor's tolerance is WHOLE_ROW_GAMMA (RECORDS_BLIND_GAMMA)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from dpfair.classification import DPBlindPostProcessor, DPFairClassifier
from dpfair.classification.blind_table import ATTRIBUTE_GAMMA, WHOLE_ROW_GAMMA
from dpfair.classification.recommended import RECORDS_BLIND_GAMMA
from dpfair.datasets import make_classification
from dpfair.linear_model import DPLogisticRegression

pytestmark = pytest.mark.filterwarnings("ignore::dpfair.privacy.SeededNoiseWarning",
                                        "ignore::dpfair.classification.FairnessSlackWarning",
                                        "ignore::dpfair.classification.VacuousConstraintWarning",
                                        "ignore::dpfair.classification.SmallBudgetWarning",
                                        "ignore::dpfair.linear_model.NoiseDominatesWarning")


def _data():
    return make_classification(1200, disparity=1.5, random_state=0)


def _fit(**kwargs):
    X, y, g = _data()
    norm = float(np.linalg.norm(X, axis=1).max()) * 1.01
    return DPFairClassifier(epsilon=1.0, groups=[0, 1], data_norm=norm, random_state=3, **kwargs).fit(
        X, y, sensitive_features=g)


def test_records_blind_uses_the_smaller_gamma_and_the_attribute_relation_keeps_the_post_processors_default():
    assert RECORDS_BLIND_GAMMA == WHOLE_ROW_GAMMA < ATTRIBUTE_GAMMA
    records = _fit(protects="records")
    assert records.mechanism_ == "DPBlindPostProcessor" and records.estimator_.gamma == RECORDS_BLIND_GAMMA
    attribute = _fit(protects="attribute")
    assert attribute.estimator_.gamma is DPBlindPostProcessor().gamma is None  # resolved by the relation


@pytest.mark.parametrize("private_base, expected", [(False, ATTRIBUTE_GAMMA), (True, WHOLE_ROW_GAMMA)])
def test_the_post_processors_default_gamma_is_chosen_by_the_relation(private_base, expected):
    """gamma=None fits exactly what the relation's gamma fits (same seed); the other value fits a different rule."""
    X, y, g = _data()
    norm = float(np.linalg.norm(X, axis=1).max()) * 1.01
    if private_base:
        base, extra = DPLogisticRegression(epsilon=0.5, data_norm=norm, random_state=1), {"prefit": False}
    else:
        base, extra = LogisticRegression().fit(X, y), {}
    rules = {}
    for gamma in (None, ATTRIBUTE_GAMMA, WHOLE_ROW_GAMMA):
        model = DPBlindPostProcessor(base, epsilon=4.0, gamma=gamma, groups=[0, 1], data_norm=norm, random_state=2,
                                     **extra).fit(X, y, sensitive_features=g)
        rules[gamma] = model.probabilities_
    other = WHOLE_ROW_GAMMA if expected == ATTRIBUTE_GAMMA else ATTRIBUTE_GAMMA
    np.testing.assert_array_equal(rules[None], rules[expected])
    assert not np.array_equal(rules[None], rules[other])


def test_a_declared_gamma_wins_under_records():
    assert _fit(protects="records", gamma=0.07).estimator_.gamma == 0.07


def test_the_attribute_aware_mechanism_keeps_its_own_default_under_records():
    aware = _fit(protects="records", attribute_at_prediction=True)
    assert aware.mechanism_ == "DPEqualizedOddsPostProcessor"
    assert aware.estimator_.gamma == type(aware.estimator_)().gamma
