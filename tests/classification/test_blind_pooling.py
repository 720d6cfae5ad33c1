"""The blind rule's constraint on the pool of the groups too small to be constrained one by one."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpfair.classification import _blind_averaging as averaging
from dpfair.classification._blind_pooling import pool_unmeasured_groups
from dpfair.classification.blind_table import (
    BLIND_CONSTRAINTS,
    RATE_NOISE_LIMIT,
    constrained_rates,
    rate_margin_weights,
    rate_noise,
    solve_blind_lp,
)

EO = BLIND_CONSTRAINTS["equalized_odds"]
N_ROWS, EPSILON, SAMPLING = 20_000, 1.0, 0.5


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
    pooled_q, pooled_active, pooled_margins = pool_unmeasured_groups(q, active, margins, N_ROWS, EPSILON, EO, SAMPLING)
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
    assert pool_unmeasured_groups(q, one, None, N_ROWS, EPSILON, EO, SAMPLING)[0] is q
    tiny = _table(small=1e-6)  # the pool is as unmeasured as its members
    out = pool_unmeasured_groups(tiny, _active(tiny), None, N_ROWS, EPSILON, EO, SAMPLING)
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
    assert pool_unmeasured_groups(below, _active(below), None, N_ROWS, EPSILON, EO, SAMPLING)[0] is below
    assert pool_unmeasured_groups(above, _active(above), None, N_ROWS, EPSILON, EO, SAMPLING)[0].shape[1] == 6


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_rule_holds_the_pools_rates_within_gamma_of_the_others(seed):
    q = _table(seed)
    active = _active(q)
    gamma = 0.02
    errors = q.sum(axis=1)
    plain = solve_blind_lp(q, errors, gamma, EO, active)
    pooled_q, pooled_active, _ = pool_unmeasured_groups(q, active, None, N_ROWS, EPSILON, EO, SAMPLING)
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


def test_fit_blind_rule_pools_through_the_same_function(monkeypatch):
    q = _table()
    seen = []
    original = averaging.pool_unmeasured_groups

    def spy(*args):
        out = original(*args)
        seen.append(out[0].shape[1])
        return out

    monkeypatch.setattr(averaging, "pool_unmeasured_groups", spy)
    error_table = q.sum(axis=1)
    averaging.fit_blind_rule(q, error_table, True, N_ROWS, EPSILON, 0.045, EO, _active(q), 1, SAMPLING)
    assert seen and set(seen) <= {5, 6} and 6 in seen  # the released table and its redrawn copies
