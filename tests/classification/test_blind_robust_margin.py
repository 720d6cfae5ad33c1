"""DPBlindPostProcessor's robust rate constraints: the margin of the noise and of the sampling in the linear program."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from dpfair.classification import DPBlindPostProcessor
from dpfair.classification import blind_postprocessing as blind_module
from dpfair.classification import blind_table as table_module
from dpfair.datasets import make_classification

pytestmark = pytest.mark.filterwarnings("ignore::dpfair.privacy.SeededNoiseWarning",
                                        "ignore::dpfair.classification.FairnessSlackWarning",
                                        "ignore::dpfair.classification.VacuousConstraintWarning")

EO = table_module.BLIND_CONSTRAINTS["equalized_odds"]


def _table(seed=0, n_cells=12, n_groups=3):
    rng = np.random.default_rng(seed)
    q = rng.uniform(0.0, 1.0, size=(n_cells, n_groups, 2)) * np.linspace(1.0, 0.05, n_groups)[None, :, None]
    q[:, :, 1] *= np.linspace(0.1, 2.0, n_cells)[:, None]  # the positive label is likelier in higher score bins
    return q / q.sum()


def test_margin_weights_scale_with_the_noise_and_the_sampling():
    q = _table()
    m = 5000
    noise_only = table_module.rate_margin_weights(q, m, 1.0, EO, sampling=0.0, factor=1.0)
    assert noise_only.shape == (q.shape[0], q.shape[1], len(EO))
    assert np.allclose(noise_only, 2.0 / (m * 1.0) / math.sqrt(q.shape[0]))  # b / sqrt(C), one label per family
    assert np.allclose(table_module.rate_margin_weights(q, m, 2.0, EO, sampling=0.0, factor=1.0), noise_only / 2)
    sampling_only = table_module.rate_margin_weights(q, m, math.inf, EO, sampling=1.0, factor=1.0)
    assert np.allclose(sampling_only[:, :, 1], np.sqrt(q[:, :, 1] / m) / math.sqrt(q.shape[0]))
    dp = table_module.rate_margin_weights(q, m, 1.0, ((0, 1),), sampling=0.0, factor=1.0)
    assert np.allclose(dp, 2 * noise_only[:, :, :1])  # two Laplace draws per cell for the positive rate
    default = table_module.rate_margin_weights(q, m, 1.0, EO, sampling=0.0)
    assert np.allclose(default, table_module.MARGIN_FACTOR * noise_only)


def test_zero_margins_give_the_plain_program_and_large_ones_the_constant():
    q = _table(1)
    error_table = q.sum(axis=1)
    active = np.ones((q.shape[1], len(EO)), bool)
    plain = table_module.solve_blind_lp(q, error_table, 0.05, EO, active, 3)
    zero = table_module.solve_blind_lp(q, error_table, 0.05, EO, active, 3, np.zeros((*q.shape[:2], 2)))
    assert zero[1] == pytest.approx(plain[1], abs=1e-9)
    huge = table_module.solve_blind_lp(q, error_table, 0.05, EO, active, 3, np.full((*q.shape[:2], 2), 1.0))
    assert np.ptp(huge[0]) < 1e-3  # the only robustly feasible rules are (near) constant
    _constant_p, constant_error = table_module.best_constant_rule(error_table)
    assert huge[1] == pytest.approx(constant_error, abs=1e-4)
    assert plain[1] < constant_error - 1e-3  # (the plain program does better: the margins are what bound it)


def test_robust_rule_satisfies_its_constraints_and_errs_between():
    q = _table(2)
    error_table = q.sum(axis=1)
    active = np.ones((q.shape[1], len(EO)), bool)
    margins = table_module.rate_margin_weights(q, 2000, 1.0, EO, factor=1.0)
    gamma = 0.08
    p, error = table_module.solve_blind_lp(q, error_table, gamma, EO, active, 3, margins)
    plain = table_module.solve_blind_lp(q, error_table, gamma, EO, active, 3)
    constant = table_module.best_constant_rule(error_table)[1]
    assert plain[1] - 1e-9 <= error <= constant + 1e-9
    for f, labels in enumerate(EO):
        coef, mass = table_module.constrained_rates(q, labels)
        rates = p @ coef
        target_low, target_high = rates.max() - gamma / 2, rates.min() + gamma / 2
        assert target_low <= target_high + 1e-7
        # some target t in [target_low, target_high] satisfies every group's robust constraint
        ts = np.linspace(max(target_low, 0.0), min(target_high, 1.0), 20001)
        slack = [max(abs(rates[a] - t) + margins[:, a, f] @ np.abs(p - t) / mass[a] for a in range(q.shape[1]))
                 for t in ts]
        assert min(slack) <= gamma / 2 + 1e-5


def _small_group_data(seed):
    X, y, g = make_classification(3000, disparity=1.5, random_state=seed)
    rng = np.random.default_rng(seed)
    g = np.where(rng.uniform(size=g.size) < 0.04, 2, g)  # a third group of about 120 rows
    return X, y, g


def _exact_violation(est, X, y, g):
    positive = est.predict_proba(X)[:, 1]
    out = 0.0
    for label in (0, 1):
        rates = [positive[(g == a) & (y == label)].mean() for a in np.unique(g)]
        out = max(out, max(rates) - min(rates))
    return out


def test_margins_lower_the_exact_violation_of_noisy_fits(monkeypatch):
    """Same seeds, same releases: with (full) margins the rule's exact training violation is smaller on average."""
    with_margin, without = [], []
    for seed in range(4):
        X, y, g = _small_group_data(seed)
        base = LogisticRegression().fit(X, y)
        for factor, out in ((1.0, with_margin), (0.0, without)):
            monkeypatch.setattr(table_module, "MARGIN_FACTOR", factor)
            monkeypatch.setattr(blind_module, "SAMPLING_MARGIN", blind_module.SAMPLING_MARGIN if factor else 0.0)
            est = DPBlindPostProcessor(base, epsilon=0.5, groups=[0, 1, 2], random_state=seed).fit(
                X, y, sensitive_features=g)
            out.append(_exact_violation(est, X, y, g))
    assert np.mean(with_margin) < np.mean(without) - 0.01


def test_exact_fit_has_no_margin(monkeypatch):
    """epsilon = inf: the exact program on the training table (no margin), whatever the factor."""
    X, y, g = _small_group_data(0)
    base = LogisticRegression().fit(X, y)
    fits = []
    for factor in (table_module.MARGIN_FACTOR, 5.0):
        monkeypatch.setattr(table_module, "MARGIN_FACTOR", factor)
        with pytest.warns(Warning):
            fits.append(DPBlindPostProcessor(base, epsilon=math.inf, groups=[0, 1, 2]).fit(
                X, y, sensitive_features=g).probabilities_)
    assert np.allclose(fits[0], fits[1])
