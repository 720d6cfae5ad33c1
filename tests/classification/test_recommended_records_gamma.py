"""Whole records private and blind: the post-processor's own whole-row tolerance, and RECORDS_BLIND_MEMBERSHIP_SHARE."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from dpfair.classification import DPBlindPostProcessor, DPFairClassifier
from dpfair.classification._blind_records import RECORDS_LOOSE_GAMMA, RECORDS_QUIET_GAMMA, RECORDS_TIGHT_GAMMA
from dpfair.classification.blind_postprocessing import DEFAULT_MEMBERSHIP_SHARE
from dpfair.classification.blind_table import ATTRIBUTE_GAMMA
from dpfair.classification.recommended import RECORDS_BLIND_MEMBERSHIP_SHARE
from dpfair.datasets import make_classification
from dpfair.linear_model import DPLogisticRegression

RECORDS_LEVELS = (RECORDS_QUIET_GAMMA, RECORDS_LOOSE_GAMMA, RECORDS_TIGHT_GAMMA)  # records_gamma's tolerances

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


def test_records_blind_leaves_gamma_to_the_released_table_and_gives_the_table_more_of_epsilon():
    assert RECORDS_BLIND_MEMBERSHIP_SHARE < DEFAULT_MEMBERSHIP_SHARE
    records = _fit(protects="records")
    inner = records.estimator_
    assert records.mechanism_ == "DPBlindPostProcessor" and inner.gamma is None
    assert inner.gamma_ in RECORDS_LEVELS
    assert inner.membership_share == RECORDS_BLIND_MEMBERSHIP_SHARE
    attribute = _fit(protects="attribute")
    assert attribute.estimator_.gamma is DPBlindPostProcessor().gamma is None  # resolved by the relation
    assert attribute.estimator_.gamma_ == ATTRIBUTE_GAMMA
    assert attribute.estimator_.membership_share == DEFAULT_MEMBERSHIP_SHARE


@pytest.mark.parametrize("private_base", [False, True])
def test_the_post_processors_default_gamma_is_chosen_by_the_relation(private_base):
    """gamma=None fits exactly what the resolved gamma fits (same seed); another value fits a different rule."""
    X, y, g = _data()
    norm = float(np.linalg.norm(X, axis=1).max()) * 1.01
    if private_base:
        base, extra = DPLogisticRegression(epsilon=0.5, data_norm=norm, random_state=1), {"prefit": False}
    else:
        base, extra = LogisticRegression().fit(X, y), {}

    def fit(gamma):
        return DPBlindPostProcessor(base, epsilon=4.0, gamma=gamma, groups=[0, 1], data_norm=norm, random_state=2,
                                    **extra).fit(X, y, sensitive_features=g)

    default = fit(None)
    assert default.gamma_ in (RECORDS_LEVELS if private_base else (ATTRIBUTE_GAMMA,))
    np.testing.assert_array_equal(fit(default.gamma_).probabilities_, default.probabilities_)
    assert not np.array_equal(fit(0.005).probabilities_, default.probabilities_)


def test_a_declared_gamma_wins_under_records():
    fitted = _fit(protects="records", gamma=0.07).estimator_
    assert fitted.gamma == fitted.gamma_ == 0.07


def test_the_attribute_aware_mechanism_keeps_its_own_default_under_records():
    aware = _fit(protects="records", attribute_at_prediction=True)
    assert aware.mechanism_ == "DPEqualizedOddsPostProcessor"
    assert aware.estimator_.gamma == type(aware.estimator_)().gamma


@pytest.mark.parametrize("attribute_at_prediction", [False, True])
def test_whole_records_on_the_defaults_draw_secure_noise_afresh_and_spend_exactly_the_request(attribute_at_prediction):
    # the way users run it: no random_state (secure noise), the default gamma, count and fallback of each path
    from dpfair.privacy import SeededNoiseWarning

    X, y, g = _data()
    norm = float(np.linalg.norm(X, axis=1).max()) * 1.01
    fits = []
    for _ in range(2):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model = DPFairClassifier(epsilon=1.0, groups=[0, 1], data_norm=norm, protects="records",
                                     attribute_at_prediction=attribute_at_prediction).fit(X, y, sensitive_features=g)
        assert not [w for w in caught if issubclass(w.category, SeededNoiseWarning)]
        assert model.privacy_spent_["epsilon"] == pytest.approx(1.0)
        assert model.privacy_spent_["neighbouring"].startswith("replace one training row")
        if not attribute_at_prediction:
            assert model.estimator_.gamma_ in RECORDS_LEVELS
        kwargs = {"sensitive_features": g} if attribute_at_prediction else {}
        positive = model.predict_proba(X, **kwargs)[:, 1]
        assert np.all((positive >= 0.0) & (positive <= 1.0))
        fits.append(model.estimator_.estimator_.coef_)  # the private base: noisy whatever the rule falls back to
    assert not np.array_equal(fits[0], fits[1])  # a fresh draw each fit
