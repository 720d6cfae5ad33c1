"""DPBlindPostProcessor under whole-row privacy: the released positive-label count that picks the fallback constant."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from dpfair.classification import DPBlindPostProcessor, DPFairClassifier
from dpfair.classification import blind_postprocessing as blind_module
from dpfair.classification import blind_table as table_module
from dpfair.classification.recommended import RECORDS_BLIND_MEMBERSHIP_SHARE
from dpfair.datasets import make_classification
from dpfair.linear_model import DPLogisticRegression
from dpfair.privacy import PrivacyBudget, audit_epsilon
from dpfair.privacy.noise import get_noise_source

pytestmark = pytest.mark.filterwarnings("ignore::dpfair.privacy.SeededNoiseWarning")


def _small_table(m=667, share=0.455, seed=0):
    """A 16-cell, 2-group table of ``m`` rows with about ``share`` positive labels (a 1,000-row task's split)."""
    rng = np.random.default_rng(seed)
    y = (rng.random(m) < share).astype(np.int64)
    s, cell, g = rng.integers(0, 8, m), rng.integers(0, 2, m), rng.integers(0, 2, m)
    return y, table_module.blind_joint_frequencies(s, cell, g, y, 8, 2, 2)


def _both_rules(y, q_hat, seed, epsilon_table=0.1, epsilon_count=0.125):
    m = y.size
    q_tilde = table_module.noisy_blind_table(q_hat, m, epsilon_table, get_noise_source(seed))
    error_table = np.maximum(q_tilde, 0.0).sum(axis=1)  # what the linear program reads under whole-row privacy
    old = table_module.best_constant_rule(error_table)[0][0]
    count = table_module.released_positive_count(y, epsilon_count, get_noise_source(10_000 + seed))
    new, error = table_module.released_constant_rule(error_table, q_tilde, count, m, epsilon_table, epsilon_count)
    assert error == pytest.approx(error_table[:, 0].sum() if new[0] == 1 else error_table[:, 1].sum())
    return old, new[0]


def test_a_seeded_table_whose_clipped_totals_pick_the_minority_label_gets_the_majority_from_the_count():
    y, q_hat = _small_table()
    assert y.mean() < 0.5  # the majority label is 0: the right constant predicts 0
    old, new = _both_rules(y, q_hat, seed=1)
    assert old == 1.0 and new == 0.0


def test_the_released_rule_picks_the_minority_label_far_less_often_than_the_clipped_totals():
    y, q_hat = _small_table()
    picks = np.array([_both_rules(y, q_hat, seed) for seed in range(200)])
    wrong_old, wrong_new = int((picks[:, 0] == 1).sum()), int((picks[:, 1] == 1).sum())
    assert wrong_old >= 40  # 30 % of fits: the sum of many clipped noisy cells
    assert wrong_new <= 6  # the count's standard deviation is 0.017 of the rows here, the gap 0.077


def test_label_count_epsilon_is_a_function_of_public_m_and_epsilon_within_its_cap():
    assert table_module.label_count_epsilon(30_000, 0.5) == pytest.approx(
        math.sqrt(2) / (table_module.LABEL_COUNT_TARGET_SD * 30_000))
    assert table_module.label_count_epsilon(667, 0.1) == pytest.approx(table_module.LABEL_COUNT_MAX_SHARE * 0.1)
    assert table_module.label_count_epsilon(667, math.inf) == 0.0


def test_identical_noise_neighbours_move_the_count_by_at_most_one():
    rng = np.random.default_rng(3)
    y = rng.integers(0, 2, 300)
    y_prime = y.copy()
    y_prime[-1] = 1 - y[-1]  # the replaced row's label changed (the largest move a replacement can make)
    first = table_module.released_positive_count(y, 0.3, get_noise_source(7))
    second = table_module.released_positive_count(y_prime, 0.3, get_noise_source(7))
    assert abs(first - second) == pytest.approx(1.0)


def _count_statistic(half_noise):
    epsilon = 1.0

    def mechanism(labels, size, rng):
        return np.array([table_module.released_positive_count(labels, 2 * epsilon if half_noise else epsilon, rng)
                         for _ in range(size)])

    return mechanism


@pytest.mark.statistical
def test_privacy_audit_passes_on_the_released_count_and_catches_half_noise():
    y = np.random.default_rng(4).integers(0, 2, 50)
    y_prime = y.copy()
    y[-1], y_prime[-1] = 0, 1
    honest = audit_epsilon(_count_statistic(False), y, y_prime, n_samples=20_000, n_bins=20, random_state=1)
    mutant = audit_epsilon(_count_statistic(True), y, y_prime, n_samples=20_000, n_bins=20, random_state=1)
    assert honest.epsilon_lower_bound <= 1.0
    assert mutant.epsilon_lower_bound > 1.0


def _whole_rows(n=300, seed=0):
    X, y, g = make_classification(n, disparity=1.5, random_state=seed)
    y = np.where(np.random.default_rng(seed).random(n) < 0.25, 0, y)  # a clear majority label 0
    return X, y, g


def test_whole_rows_one_charge_of_the_request_and_the_fallback_constant_is_the_majority():
    X, y, g = _whole_rows()
    assert y.mean() < 0.45
    for seed in range(4):
        budget = PrivacyBudget(1.0)
        base = DPLogisticRegression(epsilon=0.5, data_norm=5.0, budget=budget, random_state=seed)
        est = DPBlindPostProcessor(base, prefit=False, epsilon=0.5, groups=[0, 1], data_norm=5.0, budget=budget,
                                   random_state=seed)
        with pytest.warns(Warning):
            est.fit(X, y, sensitive_features=g)
        assert est.privacy_spent_["epsilon"] == pytest.approx(1.0) and est.privacy_spent_["relation"] == "replace"
        assert budget.spent()[0] == pytest.approx(1.0) and len(budget.ledger) == 2  # base + one charge of 0.5
        if est.fallback_:
            np.testing.assert_array_equal(est.probabilities_, 0.0)


def test_only_whole_row_privacy_releases_the_count_at_its_planned_epsilon(monkeypatch):
    from dpfair.classification import blind_postprocessing as module

    calls = []
    original = module.released_positive_count
    monkeypatch.setattr(module, "released_positive_count",
                        lambda labels, epsilon, noise: calls.append((labels.size, epsilon)) or original(labels, epsilon,
                                                                                                        noise))
    X, y, g = _whole_rows(n=150)
    est = DPBlindPostProcessor(LogisticRegression().fit(X, y), epsilon=0.05, groups=[0, 1], random_state=0)
    with pytest.warns(Warning):
        est.fit(X, y, sensitive_features=g)
    assert calls == []  # labels public: the exact totals pick the constant
    assert est.fallback_ and est.constant_error_ == pytest.approx(min(y.mean(), 1 - y.mean()))
    base = DPLogisticRegression(epsilon=0.5, data_norm=5.0, random_state=0)
    with pytest.warns(Warning):
        DPBlindPostProcessor(base, prefit=False, epsilon=0.5, groups=[0, 1], data_norm=5.0,
                             random_state=0).fit(X, y, sensitive_features=g)
    assert calls == [(150, pytest.approx(table_module.label_count_epsilon(150, 0.5 * 0.7)))]  # the table's share


def test_the_blind_post_processor_aims_its_count_at_its_target_and_the_function_defaults_to_the_former_one():
    # closed forms from public m and epsilon: min(0.7 epsilon, sqrt(2) / (target_sd m))
    assert table_module.label_count_epsilon(667, 0.35, table_module.BLIND_LABEL_COUNT_TARGET_SD) == pytest.approx(0.245)
    assert table_module.label_count_epsilon(667, 0.35) == pytest.approx(math.sqrt(2) / (0.0125 * 667))
    assert table_module.label_count_epsilon(30_000, 0.35, 0.006) == pytest.approx(math.sqrt(2) / (0.006 * 30_000))
    X, y, g = make_classification(667, random_state=5)
    norm = float(np.linalg.norm(X, axis=1).max())
    blind = DPFairClassifier(epsilon=1.0, groups=[0, 1], protects="records", data_norm=norm, random_state=0)
    seen = []
    original = table_module.released_positive_count

    def spy(labels, epsilon, random_state):
        seen.append(epsilon)
        return original(labels, epsilon, random_state)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(blind_module, "released_positive_count", spy)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            blind.fit(X, y, sensitive_features=g)
    table_share = 0.5 * (1 - RECORDS_BLIND_MEMBERSHIP_SHARE)  # DPFairClassifier's share under whole rows
    assert seen == [pytest.approx(min(0.7 * table_share, math.sqrt(2) / (0.006 * 667)))]
