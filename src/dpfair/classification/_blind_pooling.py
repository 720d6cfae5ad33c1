"""The attribute-blind rule's constraint on the pool of the groups too small to be constrained one by one.

A declared group whose rates the released table cannot measure (its typical rate noise above
:data:`~dpfair.classification.blind_table.RATE_NOISE_LIMIT`) is left out of the linear program's constraints:
constraining it would fit the noise.  With several such groups (the fairness suite's nine groups: 110, 50 and 20
training rows) nothing holds their rates, and the held-out equalized-odds difference, a maximum over every group
with a held-out row, is set by them.  Their *pool* -- each cell's released masses summed over those groups -- is
often measured where no one of them is: :func:`pooled_groups` decides it from the release and :func:`append_pool`
adds it to the program as one more group, constrained like the others when its own rate noise is below the same
limit.  A rule whose rate on the pool is
near the others' cannot give every small group a rate far off in the same direction, which is where the held-out
violation came from (a single score threshold moves all of them together).

**The pooled group's noise.** Its cells sum ``k`` groups' released cells, each with its own Laplace draw of scale
``b = 2 / (m epsilon)``: the sum has standard deviation ``sqrt(k)`` times one cell's, which is what a single cell
released at ``epsilon / sqrt(k)`` would carry.  So its rate noise
(:func:`~dpfair.classification.blind_table.rate_noise`) and its robust margins
(:func:`~dpfair.classification.blind_table.rate_margin_weights`, whose sampling term reads the pooled mass) are
computed at that epsilon.  (The margins bound a mean absolute error: for a sum of ``k`` Laplace draws it is at most
``2 / sqrt(pi)``, about 1.13, times the matched single draw's, well inside the margins' factor.)  As for a single
group, the pool must also be *detected*: its released, unclipped mass at least its noise's standard deviation, so
that a pool of declared groups with no rows, whose clipped or projected cells hold only noise, is never
constrained.  At ``epsilon = inf`` nothing is pooled (the exact program constrains the groups it measures).

**Privacy.** It reads the released table, the measured mask (itself a function of the release) and public sizes:
post-processing.  The fit's guarantee (:func:`~dpfair.classification.blind_table.blind_guaranteed_violation`) is
over every pair of declared groups and holds for every rule at once; it says nothing about the pool (not a group of
the table it reads), and the pool adds a constraint, never removes one.

Measured on the fairness suite at ``epsilon = 1`` (``DPFairClassifier``, attribute private and blind; 5 splits x
20 seeded draws, paired): the nine groups' median error / held-out violation 0.300 / 0.115 both, the worst draw's
violation 0.167 -> 0.145, 20 of 20 draws meeting the thresholds both; the pool is formed in a minority of fits (its
released mass must clear its noise).  No other task of the suite pools (at most one group unmeasured, or the pool
itself unmeasured: Adult by race under whole-row privacy, its two smallest groups' pooled rate noise about 0.8);
tasks with two declared groups never pool.  Tried, not kept: the pool without the detection test and decided on
every redrawn copy (nine groups 0.299 / 0.115 -> 0.305 / 0.091, worst 0.167 -> 0.117), because on a table with two
or more declared groups without rows the projection onto the public totals spreads noise into their cells, the
pool looked measured in about 90 % of draws and the rule was constrained on noise alone (error 0.27 -> 0.39 in a
simulation, the constant's 0.49).
"""

from __future__ import annotations

import math

import numpy as np

from dpfair.classification.blind_table import RATE_NOISE_LIMIT, constrained_rates, rate_margin_weights, rate_noise

__all__ = ["MIN_POOLED_GROUPS", "append_pool", "pooled_groups"]

#: The fewest unmeasured groups that are pooled (one alone is its own pool: unmeasured by definition).
MIN_POOLED_GROUPS = 2


def pooled_groups(q_lp: np.ndarray, q_released: np.ndarray, active: np.ndarray, n_rows: int, epsilon: float,
                  families: tuple[tuple[int, ...], ...]) -> np.ndarray | None:
    """Which groups are pooled, decided once from the release: the unmeasured ones, when their pool is measured.

    ``None`` at ``epsilon = inf``, when fewer than :data:`MIN_POOLED_GROUPS` groups are unmeasured, or when for some
    constrained label set the pool's rate noise at ``epsilon / sqrt(k)`` for ``k`` pooled groups exceeds
    :data:`~dpfair.classification.blind_table.RATE_NOISE_LIMIT` or its released (unclipped) mass is below its
    noise's standard deviation (module docstring).

    Parameters
    ----------
    q_lp : ndarray of shape (n_cells, n_groups, 2)
        The released table as the program reads it (projected, non-negative).
    q_released : ndarray of shape (n_cells, n_groups, 2)
        The table as released, before any clipping or projection: its sums are unbiased.
    active : ndarray of bool, shape (n_groups, n_families)
        Which (group, family) rates are constrained; a group with no active family is unmeasured.
    n_rows : int
        The number of rows ``m`` (public).
    epsilon : float
        The epsilon of the table's noise scale.
    families : tuple of tuple of int
        The constrained label sets.

    Returns
    -------
    ndarray of bool, shape (n_groups,), or None
    """
    unmeasured = ~np.asarray(active, dtype=bool).any(axis=1)
    k = int(unmeasured.sum())
    if k < MIN_POOLED_GROUPS or math.isinf(epsilon):
        return None
    pooled = q_lp[:, unmeasured, :].sum(axis=1, keepdims=True)
    pooled_epsilon = epsilon / math.sqrt(k)  # the noise of k summed cells (module docstring)
    n_cells = q_lp.shape[0]
    for labels in families:
        mass = constrained_rates(pooled, labels)[1]
        if not rate_noise(mass, n_cells, n_rows, pooled_epsilon)[0] <= RATE_NOISE_LIMIT:
            return None
        # detected, as a single group must be (DPBlindPostProcessor._solve): the unclipped released mass, unbiased
        released = max(float(np.asarray(q_released)[:, unmeasured][..., list(labels)].sum()), 0.0)
        if not rate_noise(np.array([released]), n_cells, n_rows, pooled_epsilon)[0] <= 1.0:
            return None
    return unmeasured


def append_pool(q_lp: np.ndarray, active: np.ndarray, margins: np.ndarray | None, pool: np.ndarray, n_rows: int,
                epsilon: float, families: tuple[tuple[int, ...], ...],
                sampling: float) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """The program's table, active mask and margins with the pool of the groups ``pool`` appended as a group.

    Parameters
    ----------
    q_lp : ndarray of shape (n_cells, n_groups, 2)
        The table the program reads (the release's or a redrawn copy's, projected).
    active : ndarray of bool, shape (n_groups, n_families)
        The declared groups' constrained rates.
    margins : ndarray of shape (n_cells, n_groups, n_families) or None
        The robust constraints' weights.
    pool : ndarray of bool, shape (n_groups,)
        The pooled groups (:func:`pooled_groups`).
    n_rows : int
        The number of rows ``m``.
    epsilon : float
        The epsilon of the table's noise scale (the pool's margins are at ``epsilon / sqrt(k)``).
    families : tuple of tuple of int
        The constrained label sets.
    sampling : float
        The multiple of the cells' sampling standard deviation in the margins.

    Returns
    -------
    q : ndarray of shape (n_cells, n_groups + 1, 2)
    active : ndarray of bool, shape (n_groups + 1, n_families)
    margins : ndarray or None
    """
    pooled = q_lp[:, pool, :].sum(axis=1, keepdims=True)
    q = np.concatenate([q_lp, pooled], axis=1)
    active = np.concatenate([active, np.ones((1, active.shape[1]), dtype=bool)], axis=0)
    if margins is not None:
        pooled_epsilon = epsilon / math.sqrt(int(np.sum(pool)))
        margins = np.concatenate(
            [margins, rate_margin_weights(pooled, n_rows, pooled_epsilon, families, sampling)], axis=1)
    return q, active, margins
