"""DPBlindPostProcessor's rule averaged over the linear program's solutions on redrawn copies of the released table."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from tests.classification.test_blind_robust_margin import _table

from dpfair.classification import DPBlindPostProcessor
from dpfair.classification import _blind_averaging as averaging
from dpfair.classification import blind_table as table_module
from dpfair.classification._blind_records import project_to_group_masses
from dpfair.datasets import make_classification

pytestmark = pytest.mark.filterwarnings("ignore::dpfair.privacy.SeededNoiseWarning",
                                        "ignore::dpfair.classification.FairnessSlackWarning",
                                        "ignore::dpfair.classification.VacuousConstraintWarning")

EO = table_module.BLIND_CONSTRAINTS["equalized_odds"]


def _violation(p, q):
    """The equalized-odds violation of rule ``p`` on table ``q`` (brute force over the group pairs)."""
    worst = 0.0
    for labels in EO:
        coef, _ = table_module.constrained_rates(q, labels)
        rates = p @ coef
        worst = max(worst, max(abs(a - b) for a in rates for b in rates))
    return worst


def test_two_group_copies_keep_the_public_totals_and_redraw_the_release_noise():
    q = _table(1, n_groups=2)
    m, epsilon = 3000, 1.4
    copies = averaging.redrawn_tables(q, m, epsilon, 4000, True, np.random.default_rng(0))
    assert copies.shape == (4000, *q.shape)
    assert np.allclose(copies.sum(axis=2), q.sum(axis=1)[None])  # every (cell, label) keeps its public total
    w = copies[:, :, 1, :] - q[None, :, 1, :]
    assert np.allclose(copies[:, :, 0, :] - q[None, :, 0, :], -w)  # group 0 errs by -W where group 1 errs by +W
    b = 2.0 / (m * epsilon)
    assert np.mean(np.abs(w)) == pytest.approx(b, rel=0.03)  # E|Lap(b)| = b
    assert np.mean(w) == pytest.approx(0.0, abs=0.02 * b)


def test_copies_of_a_full_release_redraw_every_cell():
    q = _table(2)
    m, epsilon = 2000, 0.7
    copies = averaging.redrawn_tables(q, m, epsilon, 3000, False, np.random.default_rng(1))
    d = copies - q[None]
    b = 2.0 / (m * epsilon)
    assert np.var(d) == pytest.approx(2.0 * b * b, rel=0.05)  # Var Lap(b) = 2 b^2
    assert abs(np.corrcoef(d[:, 0, 0, 0], d[:, 0, 1, 0])[0, 1]) < 0.06  # independent cells


def test_average_is_the_mean_of_the_solutions_and_skips_the_unsolved():
    q = _table(3)
    calls = []

    def solve(copy):
        calls.append(copy)
        if len(calls) % 3 == 0:
            return None
        return copy[:, 0, 0], 0.0

    mean = averaging.averaged_blind_rule(q, 1000, 1.0, False, solve, n_draws=9)
    copies = averaging.redrawn_tables(q, 1000, 1.0, 9, False, np.random.default_rng(averaging.REDRAW_SEED))
    kept = [c[:, 0, 0] for i, c in enumerate(copies) if (i + 1) % 3 != 0]
    assert len(calls) == 9 and np.allclose(mean, np.mean(kept, axis=0))
    assert averaging.averaged_blind_rule(q, 1000, 1.0, False, solve, n_draws=0) is None
    assert averaging.averaged_blind_rule(q, 1000, math.inf, False, solve, n_draws=5) is None
    assert averaging.averaged_blind_rule(q, 1000, 1.0, False, lambda copy: None, n_draws=3) is None
    # the release's own rule counts as one more copy: the weights follow the copies solved, not the copies drawn
    first = np.full(q.shape[0], 0.9)
    calls.clear()
    with_first = averaging.averaged_blind_rule(q, 1000, 1.0, False, solve, n_draws=9, first=first)
    assert np.allclose(with_first, np.mean([first, *kept], axis=0))
    only = averaging.averaged_blind_rule(q, 1000, 1.0, False, lambda copy: None, n_draws=3, first=first)
    assert np.array_equal(only, first)


@pytest.mark.parametrize("seed", [0, 4])
def test_mean_rule_errs_the_mean_error_and_violates_at_most_the_mean_violation(seed):
    """The violation is convex in the rule and the error linear: the closed forms the averaging rests on."""
    q_hat = _table(seed)
    m, epsilon = 2000, 1.0
    totals = q_hat.sum(axis=1)
    rules = []

    def solve(copy):
        solved = table_module.solve_blind_lp(table_module.project_to_totals(copy, totals), totals, 0.04, EO,
                                             np.ones((q_hat.shape[1], 2), bool), 3)
        rules.append(solved[0])
        return solved

    mean = averaging.averaged_blind_rule(q_hat, m, epsilon, False, solve, n_draws=12)
    gain = totals[:, 0] - totals[:, 1]
    assert mean @ gain == pytest.approx(np.mean([p @ gain for p in rules]))
    assert _violation(mean, q_hat) <= np.mean([_violation(p, q_hat) for p in rules]) + 1e-12
    assert np.all(np.diff(mean.reshape(-1, 3), axis=0) >= -1e-9)  # the mean keeps the monotone constraints


def test_fit_rule_is_the_single_solution_at_infinity_under_whole_rows_or_without_redraws(monkeypatch):
    q = _table(5)
    totals = q.sum(axis=1)
    active = np.ones((q.shape[1], 2), bool)
    exact = averaging.fit_blind_rule(q, totals, True, 2000, math.inf, 0.04, EO, active, 3, 0.5)
    plain = table_module.solve_blind_lp(table_module.project_to_totals(q, totals), totals, 0.04, EO, active, 3)
    assert np.allclose(exact[0], plain[0]) and exact[1] == pytest.approx(plain[1])
    noisy = q + np.random.default_rng(0).laplace(0.0, 0.002, q.shape)
    clipped = np.maximum(noisy, 0.0)
    on_masses = project_to_group_masses(noisy)  # whole rows: each group's cells on its released mass
    margins = table_module.rate_margin_weights(on_masses, 2000, 1.0, EO, 0.5)
    whole_rows = averaging.fit_blind_rule(noisy, clipped.sum(axis=1), False, 2000, 1.0, 0.04, EO, active, 3, 0.5)
    single = table_module.solve_blind_lp(on_masses, on_masses.sum(axis=1), 0.04, EO, active, 3, margins)
    assert np.allclose(whole_rows[0], single[0])
    monkeypatch.setattr(averaging, "REDRAWS", 0)
    projected = table_module.project_to_totals(noisy, totals)
    margins = table_module.rate_margin_weights(projected, 2000, 1.0, EO, 0.5)
    alone = averaging.fit_blind_rule(noisy, totals, True, 2000, 1.0, 0.04, EO, active, 3, 0.5)
    assert np.allclose(alone[0], table_module.solve_blind_lp(projected, totals, 0.04, EO, active, 3, margins)[0])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_averaged_rule_is_never_worse_than_the_constant_on_the_exact_error(seed):
    q = _table(seed)
    totals = q.sum(axis=1)
    noisy = q + np.random.default_rng(seed).laplace(0.0, 0.004, q.shape)
    p, error = averaging.fit_blind_rule(noisy, totals, True, 2000, 1.0, 0.04, EO, np.ones((3, 2), bool), 3, 0.5)
    assert np.all((p >= 0) & (p <= 1)) and np.all(np.diff(p.reshape(-1, 3), axis=0) >= -1e-9)
    assert error == pytest.approx(p @ (totals[:, 0] - totals[:, 1]) + totals[:, 1].sum())
    assert error <= table_module.best_constant_rule(totals)[1] + 1e-9
    again = averaging.fit_blind_rule(noisy, totals, True, 2000, 1.0, 0.04, EO, np.ones((3, 2), bool), 3, 0.5)
    assert np.array_equal(p, again[0])  # a deterministic function of the release


def _fits(monkeypatch, redraws, seeds, data):
    X, y, g, base = data
    monkeypatch.setattr(averaging, "REDRAWS", redraws)
    return [DPBlindPostProcessor(base, epsilon=1.0, groups=[0, 1, 2], random_state=s).fit(
        X[:1500], y[:1500], sensitive_features=g[:1500]) for s in seeds]


@pytest.fixture(scope="module")
def three_groups():
    X, y, g = make_classification(3000, disparity=1.5, random_state=7)
    g = np.where(np.random.default_rng(7).uniform(size=g.size) < 0.1, 2, g)
    return X, y, g, LogisticRegression().fit(X[:1500], y[:1500])


def test_averaging_reads_the_release_only_and_steadies_the_rule(monkeypatch, three_groups):
    """Same seeds: the same release (the redraws draw nothing from the fit's noise), a steadier rule across draws."""
    seeds = range(6)
    single = _fits(monkeypatch, 0, seeds, three_groups)
    averaged = _fits(monkeypatch, 16, seeds, three_groups)
    for a, b in zip(single, averaged, strict=True):
        assert np.array_equal(a.noisy_frequencies_, b.noisy_frequencies_)
        assert a._predict_seed_ == b._predict_seed_ and a.membership_clusters_ == b.membership_clusters_
        assert a.guaranteed_violation_ <= 1.0 and b.privacy_spent_ == a.privacy_spent_
    X = three_groups[0][1500:]

    def spread(fits):
        positive = np.array([f.predict_proba(X)[:, 1] for f in fits])
        return float(positive.std(axis=0).mean())

    assert spread(averaged) < 0.85 * spread(single)
