"""The attribute-blind rule's constraint on the pool of the groups too small to be constrained one by one.

A declared group whose rates the released table cannot measure (its typical rate noise above
:data:`~dpfair.classification.blind_table.RATE_NOISE_LIMIT`) is left out of the linear program's constraints:
constraining it would fit the noise.  With several such groups (the fairness suite's nine groups: 110, 50 and 20
training rows) nothing holds their rates, and the held-out equalized-odds difference, a maximum over every group
with a held-out row, is set by them.  Their *pool* -- each cell's released masses summed over those groups -- is
often measured where no one of them is: :func:`pool_unmeasured_groups` adds it to the program as one more group,
constrained like the others when its own rate noise is below the same limit.  A rule whose rate on the pool is
near the others' cannot give every small group a rate far off in the same direction, which is where the held-out
violation came from (a single score threshold moves all of them together).

**The pooled group's noise.** Its cells sum ``k`` groups' released cells, each with its own Laplace draw of scale
``b = 2 / (m epsilon)``: the sum has standard deviation ``sqrt(k)`` times one cell's, which is what a single cell
released at ``epsilon / sqrt(k)`` would carry.  So its rate noise
(:func:`~dpfair.classification.blind_table.rate_noise`) and its robust margins
(:func:`~dpfair.classification.blind_table.rate_margin_weights`, whose sampling term reads the pooled mass) are
computed at that epsilon.

**Privacy.** It reads the released table, the measured mask (itself a function of the release) and public sizes:
post-processing.  The fit's guarantee (:func:`~dpfair.classification.blind_table.blind_guaranteed_violation`) is
over the measured groups and is unchanged; the pool adds a constraint, never removes one, so every measured
group's constraint holds as before.

Measured on the fairness suite at ``epsilon = 1`` (``DPFairClassifier``, attribute private and blind; 5 splits x
20 seeded draws, paired): the nine groups' median error / held-out violation 0.299 / 0.115 -> 0.305 / 0.091, the
worst draw's violation 0.167 -> 0.117, 20 of 20 draws meeting the thresholds both (the constant's error 0.323; a
secure run had missed the violation at 0.199 against 0.180).  Adult by race (two small groups; pooled in 5 of 6
draws' fits) unchanged to three decimals; Law School and ACS by race (attribute) and the whole-records rows of
Adult, Law School and ACS by race: no fit pooled (at most one group unmeasured, or the pool itself too noisy:
Adult by race under whole-row privacy, its two smallest groups' pooled rate noise about 0.8), unchanged bit for
bit.  Tasks with two declared groups never pool.
"""

from __future__ import annotations

import math

import numpy as np

from dpfair.classification.blind_table import RATE_NOISE_LIMIT, constrained_rates, rate_margin_weights, rate_noise

__all__ = ["MIN_POOLED_GROUPS", "pool_unmeasured_groups"]

#: The fewest unmeasured groups that are pooled (one alone is its own pool: unmeasured by definition).
MIN_POOLED_GROUPS = 2


def pool_unmeasured_groups(
    q_lp: np.ndarray, active: np.ndarray, margins: np.ndarray | None, n_rows: int, epsilon: float,
    families: tuple[tuple[int, ...], ...], sampling: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """The program's table, active mask and margins with the pool of the unmeasured groups appended as a group.

    Unchanged (the same objects) when fewer than :data:`MIN_POOLED_GROUPS` groups are unmeasured or when the pool's
    rate noise, at ``epsilon / sqrt(k)`` for ``k`` pooled groups (module docstring), exceeds
    :data:`~dpfair.classification.blind_table.RATE_NOISE_LIMIT` for some constrained label set.

    Parameters
    ----------
    q_lp : ndarray of shape (n_cells, n_groups, 2)
        The table the program reads (projected, non-negative).
    active : ndarray of bool, shape (n_groups, n_families)
        Which (group, family) rates are constrained; a group with no active family is unmeasured.
    margins : ndarray of shape (n_cells, n_groups, n_families) or None
        The robust constraints' weights (``None``: the plain program, ``epsilon = inf``).
    n_rows : int
        The number of rows ``m`` (public).
    epsilon : float
        The epsilon of the table's noise scale.
    families : tuple of tuple of int
        The constrained label sets.
    sampling : float
        The multiple of the cells' sampling standard deviation in the margins.

    Returns
    -------
    q : ndarray of shape (n_cells, n_groups or n_groups + 1, 2)
    active : ndarray of bool, shape (n_groups or n_groups + 1, n_families)
    margins : ndarray or None
    """
    unmeasured = ~np.asarray(active, dtype=bool).any(axis=1)
    k = int(unmeasured.sum())
    if k < MIN_POOLED_GROUPS:
        return q_lp, active, margins
    pooled = q_lp[:, unmeasured, :].sum(axis=1, keepdims=True)
    pooled_epsilon = epsilon / math.sqrt(k)  # the noise of k summed cells (module docstring)
    for labels in families:
        mass = constrained_rates(pooled, labels)[1]
        if not rate_noise(mass, q_lp.shape[0], n_rows, pooled_epsilon)[0] <= RATE_NOISE_LIMIT:
            return q_lp, active, margins
    q = np.concatenate([q_lp, pooled], axis=1)
    active = np.concatenate([active, np.ones((1, active.shape[1]), dtype=bool)], axis=0)
    if margins is not None:
        margins = np.concatenate(
            [margins, rate_margin_weights(pooled, n_rows, pooled_epsilon, families, sampling)], axis=1)
    return q, active, margins
