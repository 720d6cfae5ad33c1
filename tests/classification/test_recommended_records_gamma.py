"""DPFairClassifier, whole records private and blind: the post-processor's tolerance is RECORDS_BLIND_GAMMA."""

from __future__ import annotations

import numpy as np
import pytest

from dpfair.classification import DPBlindPostProcessor, DPFairClassifier
from dpfair.classification.recommended import RECORDS_BLIND_GAMMA
from dpfair.datasets import make_classification

pytestmark = pytest.mark.filterwarnings("ignore::dpfair.privacy.SeededNoiseWarning",
                                        "ignore::dpfair.classification.FairnessSlackWarning",
                                        "ignore::dpfair.classification.VacuousConstraintWarning",
                                        "ignore::dpfair.classification.SmallBudgetWarning",
                                        "ignore::dpfair.linear_model.NoiseDominatesWarning")


def _fit(**kwargs):
    X, y, g = make_classification(1200, disparity=1.5, random_state=0)
    norm = float(np.linalg.norm(X, axis=1).max()) * 1.01
    return DPFairClassifier(epsilon=1.0, groups=[0, 1], data_norm=norm, random_state=3, **kwargs).fit(
        X, y, sensitive_features=g)


def test_records_blind_uses_the_smaller_gamma_and_the_attribute_relation_keeps_the_post_processors_default():
    assert RECORDS_BLIND_GAMMA < DPBlindPostProcessor().gamma
    records = _fit(protects="records")
    assert records.mechanism_ == "DPBlindPostProcessor" and records.estimator_.gamma == RECORDS_BLIND_GAMMA
    attribute = _fit(protects="attribute")
    assert attribute.estimator_.gamma == DPBlindPostProcessor().gamma


def test_a_declared_gamma_wins_under_records():
    assert _fit(protects="records", gamma=0.07).estimator_.gamma == 0.07


def test_the_attribute_aware_mechanism_keeps_its_own_default_under_records():
    aware = _fit(protects="records", attribute_at_prediction=True)
    assert aware.mechanism_ == "DPEqualizedOddsPostProcessor"
    assert aware.estimator_.gamma == type(aware.estimator_)().gamma
