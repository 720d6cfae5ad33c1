"""Fewer than SMALL_SAMPLE_ROWS training rows: the robust margins' sampling term is SMALL_SAMPLE_FACTOR times larger."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from dpfair.classification import DPBlindPostProcessor
from dpfair.classification import blind_postprocessing as blind_module
from dpfair.datasets import make_classification

pytestmark = pytest.mark.filterwarnings("ignore::dpfair.privacy.SeededNoiseWarning",
                                        "ignore::dpfair.classification.FairnessSlackWarning",
                                        "ignore::dpfair.classification.VacuousConstraintWarning",
                                        "ignore::dpfair.classification.SmallBudgetWarning")


@pytest.mark.parametrize("n_rows, factor", [(blind_module.SMALL_SAMPLE_ROWS - 1, blind_module.SMALL_SAMPLE_FACTOR),
                                            (blind_module.SMALL_SAMPLE_ROWS, 1.0)])
def test_the_sampling_term_grows_below_the_public_row_count(monkeypatch, n_rows, factor):
    X, y, g = make_classification(n_rows, disparity=1.5, random_state=0)
    seen = []
    original = blind_module.fit_blind_rule

    def spy(*args):
        seen.append(args[-1])
        return original(*args)

    monkeypatch.setattr(blind_module, "fit_blind_rule", spy)
    DPBlindPostProcessor(LogisticRegression().fit(X, y), epsilon=1.0, groups=[0, 1], random_state=0).fit(
        X, y, sensitive_features=g)
    assert seen == [pytest.approx(blind_module.SAMPLING_MARGIN * factor)]
    assert blind_module.SMALL_SAMPLE_FACTOR > 1


def test_the_larger_sampling_term_gives_a_steadier_rule_on_small_data(monkeypatch):
    """Same releases (same seeds): with the larger term the rule varies less over the cells (closer to constant)."""
    spread = {}
    for factor in (1.0, blind_module.SMALL_SAMPLE_FACTOR):
        monkeypatch.setattr(blind_module, "SMALL_SAMPLE_FACTOR", factor)
        values = []
        for seed in range(3):
            X, y, g = make_classification(600, disparity=1.5, random_state=seed)
            est = DPBlindPostProcessor(LogisticRegression().fit(X, y), epsilon=1.0, groups=[0, 1],
                                       random_state=seed).fit(X, y, sensitive_features=g)
            values.append(np.abs(est.probabilities_ - est.probabilities_.mean()).mean())
        spread[factor] = np.mean(values)
    assert spread[blind_module.SMALL_SAMPLE_FACTOR] < spread[1.0] - 0.03  # measured 0.24 against 0.32
