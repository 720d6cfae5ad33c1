"""DPBlindPostProcessor's second linear program: the least noise-sensitive rule within a tolerance of the optimum."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from tests.classification.test_blind_robust_margin import _exact_violation as _violation
from tests.classification.test_blind_robust_margin import _table

from dpfair.classification import DPBlindPostProcessor
from dpfair.classification import _blind_averaging as averaging
from dpfair.classification import blind_table as table_module
from dpfair.datasets import make_classification

pytestmark = pytest.mark.filterwarnings("ignore::dpfair.privacy.SeededNoiseWarning",
                                        "ignore::dpfair.classification.FairnessSlackWarning",
                                        "ignore::dpfair.classification.VacuousConstraintWarning")

EO = table_module.BLIND_CONSTRAINTS["equalized_odds"]


def _sensitivity(p, q, margins):
    """The second step's objective for ``p`` at its best targets (brute force over a grid of ``t``)."""
    total = 0.0
    grid = np.linspace(0.0, 1.0, 2001)
    for f, labels in enumerate(EO):
        _, mass = table_module.constrained_rates(q, labels)
        weights = (margins[:, :, f] / mass).sum(axis=1)
        total += min(float(weights @ np.abs(p - t)) for t in grid)
    return total


def _robust_slack(p, q, margins, gamma):
    """The largest robust constraint's left side at its best target, per family (brute force over ``t``)."""
    out = []
    for f, labels in enumerate(EO):
        coef, mass = table_module.constrained_rates(q, labels)
        rates = p @ coef
        ts = np.linspace(0.0, 1.0, 20001)
        out.append(min(max(abs(rates[a] - t) + margins[:, a, f] @ np.abs(p - t) / mass[a]
                           for a in range(q.shape[1])) for t in ts))
    return max(out)


@pytest.mark.parametrize("seed", [0, 2, 3])
def test_second_step_keeps_the_constraints_and_the_error_and_lowers_the_sensitivity(monkeypatch, seed):
    q = _table(seed)
    error_table = q.sum(axis=1)
    active = np.ones((q.shape[1], len(EO)), bool)
    margins = table_module.rate_margin_weights(q, 2000, 1.0, EO, factor=1.0)
    gamma = 0.08
    monkeypatch.setattr(table_module, "SENSITIVITY_TOLERANCE", 0.0)
    first, first_error = table_module.solve_blind_lp(q, error_table, gamma, EO, active, 3, margins)
    monkeypatch.setattr(table_module, "SENSITIVITY_TOLERANCE", 0.01)
    p, error = table_module.solve_blind_lp(q, error_table, gamma, EO, active, 3, margins)
    constant = table_module.best_constant_rule(error_table)[1]
    assert first_error - 1e-9 <= error <= min(first_error + 0.01, constant) + 1e-9
    assert _robust_slack(p, q, margins, gamma) <= gamma / 2 + 1e-5
    assert np.all(np.diff(p.reshape(-1, 3), axis=0) >= -1e-9)  # still monotone in the score in every cell
    assert _sensitivity(p, q, margins) < 0.9 * _sensitivity(first, q, margins)


def test_second_step_never_errs_above_the_best_constant(monkeypatch):
    """A tolerance larger than the gain over the constant: the ceiling is the constant's error."""
    q = _table(1)
    error_table = q.sum(axis=1)
    active = np.ones((q.shape[1], len(EO)), bool)
    margins = table_module.rate_margin_weights(q, 2000, 1.0, EO, factor=1.0)
    monkeypatch.setattr(table_module, "SENSITIVITY_TOLERANCE", 0.5)
    p, error = table_module.solve_blind_lp(q, error_table, 0.08, EO, active, 3, margins)
    constant = table_module.best_constant_rule(error_table)[1]
    assert error <= constant + 1e-9
    assert float(p @ (error_table[:, 0] - error_table[:, 1]) + error_table[:, 1].sum()) == pytest.approx(error)


def test_no_margins_no_second_step(monkeypatch):
    """epsilon = inf (no margins): the exact program, whatever the tolerance."""
    q = _table(4)
    error_table = q.sum(axis=1)
    active = np.ones((q.shape[1], len(EO)), bool)
    fits = []
    for tolerance in (0.0, 0.05):
        monkeypatch.setattr(table_module, "SENSITIVITY_TOLERANCE", tolerance)
        fits.append(table_module.solve_blind_lp(q, error_table, 0.05, EO, active, 3)[0])
    assert np.allclose(fits[0], fits[1])


def test_second_step_lowers_the_held_out_violation_of_noisy_fits(monkeypatch):
    """Same seeds, same releases: with the second step the rule's held-out violation is smaller on average."""
    monkeypatch.setattr(averaging, "REDRAWS", 0)  # the step's own effect, on the single solution (not averaged)
    with_step, without = [], []
    for seed in range(6):
        X, y, g = make_classification(4000, disparity=1.5, random_state=seed)
        rng = np.random.default_rng(seed)
        g = np.where(rng.uniform(size=g.size) < 0.06, 2, g)  # a third group of about 240 rows
        train, test = np.arange(2000), np.arange(2000, 4000)
        base = LogisticRegression().fit(X[train], y[train])
        for tolerance, out in ((0.01, with_step), (0.0, without)):
            monkeypatch.setattr(table_module, "SENSITIVITY_TOLERANCE", tolerance)
            est = DPBlindPostProcessor(base, epsilon=1.0, groups=[0, 1, 2], random_state=seed).fit(
                X[train], y[train], sensitive_features=g[train])
            out.append(_violation(est, X[test], y[test], g[test]))
    assert np.mean(with_step) < np.mean(without) - 0.01


def test_one_active_group_no_second_step(monkeypatch):
    """A family with one active group has nothing to be fair to: the second step leaves the optimum alone."""
    q = _table(5)
    error_table = q.sum(axis=1)
    active = np.zeros((q.shape[1], len(EO)), bool)
    active[0] = True
    margins = table_module.rate_margin_weights(q, 2000, 1.0, EO, factor=1.0)
    fits = []
    for tolerance in (0.0, 0.05):
        monkeypatch.setattr(table_module, "SENSITIVITY_TOLERANCE", tolerance)
        fits.append(table_module.solve_blind_lp(q, error_table, 0.05, EO, active, 3, margins))
    assert np.allclose(fits[0][0], fits[1][0]) and fits[0][1] == pytest.approx(fits[1][1])
