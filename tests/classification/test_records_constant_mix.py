"""Whole records private, blind, tight tolerance: the released constant mixed into the rule (``_records_mix``)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from dpfair.classification import DPFairClassifier
from dpfair.classification._blind_records import RECORDS_LOOSE_GAMMA, RECORDS_TIGHT_GAMMA
from dpfair.classification._records_mix import RECORDS_TIGHT_CONSTANT_MIX, records_constant_mix, released_majority

pytestmark = pytest.mark.filterwarnings("ignore::dpfair.privacy.SeededNoiseWarning",
                                        "ignore::dpfair.classification.FairnessSlackWarning",
                                        "ignore::dpfair.classification.VacuousConstraintWarning",
                                        "ignore::dpfair.classification.SmallBudgetWarning",
                                        "ignore::dpfair.linear_model.NoiseDominatesWarning")


def _three_groups(n: int = 6000):
    """Two small groups (5 % and 3 %): noisy in the released table, so the tolerance is the tight one."""
    rng = np.random.default_rng(0)
    g = rng.choice(3, size=n, p=[0.92, 0.05, 0.03])
    X = rng.normal(size=(n, 4)) * 0.4 + 0.3 * g[:, None]
    y = (X @ np.array([1.5, -1.0, 0.5, 0.8]) + 0.4 * g + rng.logistic(size=n) * 0.7 > 0.3).astype(int)
    return X, y, g, float(np.linalg.norm(X, axis=1).max()) * 1.01


def _fit(**kwargs):
    X, y, g, norm = _three_groups()
    model = DPFairClassifier(epsilon=1.0, groups=[0, 1, 2], protects="records", data_norm=norm, random_state=1,
                             **kwargs).fit(X, y, sensitive_features=g)
    return model, X, y, g


def _release(gamma=None, gamma_=RECORDS_TIGHT_GAMMA, fallback=False, epsilon=1.0, totals=(0.6, 0.4)):
    q = np.zeros((4, 2, 2))
    q[:, :, 0], q[:, :, 1] = totals[0] / 8, totals[1] / 8
    return SimpleNamespace(gamma=gamma, gamma_=gamma_, fallback_=fallback, epsilon=epsilon, noisy_frequencies_=q)


def test_the_mix_reads_the_released_level_and_table_only():
    # a namespace of released attributes suffices (reading anything else would raise AttributeError)
    assert records_constant_mix(_release()) == (RECORDS_TIGHT_CONSTANT_MIX, 0)
    assert records_constant_mix(_release(totals=(0.3, 0.7))) == (RECORDS_TIGHT_CONSTANT_MIX, 1)
    assert records_constant_mix(_release(gamma_=RECORDS_LOOSE_GAMMA))[0] == 0.0
    assert records_constant_mix(_release(gamma=RECORDS_TIGHT_GAMMA))[0] == 0.0  # a declared gamma: no mix
    assert records_constant_mix(_release(fallback=True))[0] == 0.0  # already the constant
    assert records_constant_mix(_release(epsilon=float("inf")))[0] == 0.0
    assert 0.0 < RECORDS_TIGHT_CONSTANT_MIX < 0.5


def test_released_majority_is_the_label_of_larger_unclipped_mass():
    q = np.zeros((3, 2, 2))
    q[0, 0, 1] = -0.2  # noise below zero counts (the unclipped sum is the unbiased one)
    q[1, 1, 1], q[2, 0, 0] = 0.5, 0.35
    assert released_majority(q) == 0  # 0.35 against 0.3
    q[2, 0, 0] = 0.25
    assert released_majority(q) == 1


def test_tight_fit_mixes_the_constant_and_shrinks_every_rate_difference_by_the_same_factor():
    model, X, y, g = _fit()
    inner = model.estimator_
    assert inner.gamma_ == RECORDS_TIGHT_GAMMA and not inner.fallback_
    mix, constant = model.constant_mix_, model._mix_constant_
    assert mix == RECORDS_TIGHT_CONSTANT_MIX and constant == released_majority(inner.noisy_frequencies_)
    rule, mixed = inner.predict_proba(X), model.predict_proba(X)
    expected = (1 - mix) * rule
    expected[:, constant] += mix
    np.testing.assert_allclose(mixed, expected, atol=1e-12)
    np.testing.assert_allclose(mixed.sum(axis=1), 1.0)
    for label in (0, 1):  # the training rates of every group, before and after: differences times 1 - mix exactly
        before = np.array([rule[(g == a) & (y == label), 1].mean() for a in range(3)])
        after = np.array([mixed[(g == a) & (y == label), 1].mean() for a in range(3)])
        np.testing.assert_allclose(np.subtract.outer(after, after), (1 - mix) * np.subtract.outer(before, before),
                                   atol=1e-12)
    draws = model.predict(X)  # a draw from the mixed rule: its frequency matches the mixed probability
    assert abs(np.mean(draws == model.classes_[1]) - mixed[:, 1].mean()) < 4 * np.sqrt(0.25 / y.size)
    np.testing.assert_array_equal(draws, model.predict(X))  # seeded fit: the fit's prediction noise


def test_no_mix_with_a_declared_gamma_or_under_the_attribute_relation():
    declared, X, _, _ = _fit(gamma=RECORDS_TIGHT_GAMMA)
    assert declared.constant_mix_ == 0.0
    np.testing.assert_array_equal(declared.predict_proba(X), declared.estimator_.predict_proba(X))
    np.testing.assert_array_equal(declared.predict(X), declared.estimator_.predict(X))
    X, y, g, _ = _three_groups()
    attribute = DPFairClassifier(epsilon=1.0, groups=[0, 1, 2], random_state=4).fit(X, y, sensitive_features=g)
    assert attribute.constant_mix_ == 0.0
