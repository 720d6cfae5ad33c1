"""The blind rule's constraint on the pool of the groups too small to be constrained one by one."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpfair.classification import _blind_averaging as averaging
from dpfair.classification._blind_pooling import append_pool, pooled_groups
from dpfair.classification._blind_records import project_to_group_masses
from dpfair.classification.blind_table import (
    BLIND_CONSTRAINTS,
    RATE_NOISE_LIMIT,
    constrained_rates,
    project_to_totals,
    rate_margin_weights,
    rate_noise,
    solve_blind_lp,
)

EO = BLIND_CONSTRAINTS["equalized_odds"]
N_ROWS, EPSILON, SAMPLING = 20_000, 1.0, 0.5


def pool_unmeasured_groups(q_lp, active, margins, n_rows, epsilon, families, sampling, q_released):
    """The two steps fit_blind_rule takes on one table: decide the pool from the release, then append it."""
    pool = pooled_groups(q_lp, q_released, active, n_rows, epsilon, families)
    if pool is None:
        return q_lp, active, margins
    return append_pool(q_lp, active, margins, pool, n_rows, epsilon, families, sampling)


def _table(seed: int = 0, n_cells: int = 12, small: float = 0.0007) -> np.ndarray:
    """Two large groups and three small ones whose positives sit in the high-score cells, where the large ones' don't."""
    rng = np.random.default_rng(seed)
    q = rng.dirichlet(np.ones(n_cells * 2 * 2)).reshape(n_cells, 2, 2) * 0.9
    ramp = np.linspace(0.1, 1.0, n_cells)
    smalls = np.zeros((n_cells, 3, 2))
    for a in range(3):
        smalls[:, a, 1] = small * ramp / ramp.sum() * (1 + 0.1 * a)
        smalls[:, a, 0] = small * ramp[::-1] / ramp.sum()
    return np.concatenate([q, smalls], axis=1)


def _active(q: np.ndarray) -> np.ndarray:
    noise = np.column_stack([rate_noise(constrained_rates(q, labels)[1], q.shape[0], N_ROWS, EPSILON)
                             for labels in EO])
    measured = (noise <= RATE_NOISE_LIMIT).all(axis=1)
    return np.repeat(measured[:, None], len(EO), axis=1)


def test_the_pool_is_appended_with_the_noise_of_its_summed_cells():
    q = _table()
    active = _active(q)
    assert active[:2].all() and not active[2:].any()  # the three small groups are unmeasured one by one
    margins = rate_margin_weights(q, N_ROWS, EPSILON, EO, SAMPLING)
    pooled_q, pooled_active, pooled_margins = pool_unmeasured_groups(q, active, margins, N_ROWS, EPSILON, EO, SAMPLING, q)
    assert pooled_q.shape[1] == 6 and pooled_active.shape == (6, 2) and pooled_active[5].all()
    assert np.allclose(pooled_q[:, 5], q[:, 2:].sum(axis=1))
    assert np.array_equal(pooled_q[:, :5], q) and np.array_equal(pooled_margins[:, :5], margins)
    # three summed Laplace cells: the margins of one cell released at epsilon / sqrt(3) (not at epsilon)
    expected = rate_margin_weights(q[:, 2:].sum(axis=1, keepdims=True), N_ROWS, EPSILON / math.sqrt(3), EO, SAMPLING)
    assert np.allclose(pooled_margins[:, 5:], expected)
    assert not np.allclose(expected, rate_margin_weights(q[:, 2:].sum(axis=1, keepdims=True), N_ROWS, EPSILON, EO,
                                                         SAMPLING))


def test_nothing_changes_with_one_unmeasured_group_or_a_pool_too_noisy():
    q = _table()
    active = _active(q)
    one = active.copy()
    one[2:4] = True  # only group 4 unmeasured
    assert pool_unmeasured_groups(q, one, None, N_ROWS, EPSILON, EO, SAMPLING, q)[0] is q
    tiny = _table(small=1e-6)  # the pool is as unmeasured as its members
    out = pool_unmeasured_groups(tiny, _active(tiny), None, N_ROWS, EPSILON, EO, SAMPLING, tiny)
    assert out[0] is tiny and out[1].shape == (5, 2)


def test_the_pool_is_only_just_measured_at_the_noise_limit():
    q = _table()
    pooled = q[:, 2:].sum(axis=1, keepdims=True)
    worst = max(rate_noise(constrained_rates(pooled, labels)[1], q.shape[0], N_ROWS, EPSILON / math.sqrt(3))[0]
                for labels in EO)
    assert worst <= RATE_NOISE_LIMIT
    below, above = q.copy(), q.copy()
    below[:, 2:] *= worst / RATE_NOISE_LIMIT * 0.99  # the pool's noise just above the limit: not pooled, though
    above[:, 2:] *= worst / RATE_NOISE_LIMIT * 1.01  # at epsilon (a forgotten sqrt(k)) it would be well below
    assert pool_unmeasured_groups(below, _active(below), None, N_ROWS, EPSILON, EO, SAMPLING, below)[0] is below
    assert pool_unmeasured_groups(above, _active(above), None, N_ROWS, EPSILON, EO, SAMPLING, above)[0].shape[1] == 6


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_rule_holds_the_pools_rates_within_gamma_of_the_others(seed):
    q = _table(seed)
    active = _active(q)
    gamma = 0.02
    errors = q.sum(axis=1)
    plain = solve_blind_lp(q, errors, gamma, EO, active)
    pooled_q, pooled_active, _ = pool_unmeasured_groups(q, active, None, N_ROWS, EPSILON, EO, SAMPLING, q)
    pooled = solve_blind_lp(pooled_q, errors, gamma, EO, pooled_active)
    assert plain is not None and pooled is not None
    for labels in EO:
        coef = constrained_rates(pooled_q, labels)[0]
        rates = coef.T @ pooled[0]
        assert np.ptp(rates[[0, 1, 5]]) <= gamma + 1e-7  # the pool is held with the measured groups
        plain_rates = coef.T @ plain[0]
        assert np.ptp(plain_rates[[0, 1]]) <= gamma + 1e-7
    # without the pool the small groups' rates drift (the case the pool is for), and the pool costs error
    plain_gap = max(np.ptp((constrained_rates(pooled_q, labels)[0].T @ plain[0])[[0, 1, 5]]) for labels in EO)
    assert plain_gap > gamma
    assert pooled[1] >= plain[1] - 1e-9


def test_no_pool_at_infinity_or_of_groups_without_released_rows():
    q = _table()
    assert pool_unmeasured_groups(q, _active(q), None, N_ROWS, math.inf, EO, SAMPLING, q)[0] is q
    # two declared groups with no row: the projection onto the public totals spreads noise into their cells, so the
    # projected pool looks measured; its released (unclipped, unbiased) mass is noise around 0: never pooled
    rng = np.random.default_rng(3)
    exact = np.concatenate([_table(n_cells=48)[:, :2], np.zeros((48, 3, 2))], axis=1)  # three empty groups
    b = 2.0 / (N_ROWS * EPSILON)
    pooled, fooled = 0, 0
    for _ in range(40):
        released = exact + rng.laplace(0.0, b, size=exact.shape)
        projected = project_to_totals(released, exact.sum(axis=1))
        active = _active(projected)
        active[2:] = False
        pooled += pool_unmeasured_groups(projected, active, None, N_ROWS, EPSILON, EO, SAMPLING,
                                         released)[0].shape[1] > exact.shape[1]
        # a mutant that read the projected cells as the release (no detection) would constrain the noise
        fooled += pool_unmeasured_groups(projected, active, None, N_ROWS, EPSILON, EO, SAMPLING,
                                         projected)[0].shape[1] > exact.shape[1]
    assert pooled == 0
    assert fooled >= 20


def _spy_program(monkeypatch):
    calls = []
    original = averaging.solve_blind_lp

    def spy(q, errors, gamma, families, active, n_membership_cells=None, margins=None):
        calls.append((q.shape[1], active.shape, np.array(errors)))
        return original(q, errors, gamma, families, active, n_membership_cells, margins)

    monkeypatch.setattr(averaging, "solve_blind_lp", spy)
    return calls


def test_fit_blind_rule_hands_the_pool_to_the_program_and_keeps_the_objective(monkeypatch):
    q = _table()
    error_table = q.sum(axis=1)
    calls = _spy_program(monkeypatch)
    averaging.fit_blind_rule(q, error_table, True, N_ROWS, EPSILON, 0.045, EO, _active(q), 1, SAMPLING)
    assert calls and any(groups == 6 and shape == (6, 2) for groups, shape, _ in calls)  # the release and copies
    assert all(np.allclose(errors, error_table) for _, _, errors in calls)
    # whole rows: the objective is the projected table summed over the declared groups only (not the pool again)
    calls.clear()
    averaging.fit_blind_rule(q, error_table, False, N_ROWS, EPSILON, 0.045, EO, _active(q), 1, SAMPLING)
    assert [groups for groups, _, _ in calls] == [6]
    assert np.allclose(calls[0][2], project_to_group_masses(q).sum(axis=1))
