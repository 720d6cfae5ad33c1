"""Private feature ranges of :class:`~dpfair.linear_model.DPLinearRegression`: each feature's central quantiles.

With ``feature_bounds`` the estimator spends ``range_share`` of epsilon on locating where each feature's values lie
inside its declared range (two exponential-mechanism quantiles per feature, on a public grid), so a feature whose
values fill a small part of its declared range is not drowned by noise calibrated to the whole range.
"""

from __future__ import annotations

import numpy as np

from dpfair.privacy.noise import NoiseSource

__all__ = ["RANGE_GRID", "RANGE_QUANTILE", "private_feature_ranges", "quantile_utilities"]

#: Quantiles located by :func:`private_feature_ranges`: each feature is clipped to its private
#: ``[RANGE_QUANTILE, 1 - RANGE_QUANTILE]`` quantiles (at most ~5% of a feature's rows clipped at each end).
RANGE_QUANTILE = 0.05

#: Candidate clip points per feature: a public grid of ``RANGE_GRID + 1`` points over the declared range.
RANGE_GRID = 1024


def quantile_utilities(values: np.ndarray, candidates: np.ndarray, quantile: float) -> np.ndarray:
    """Utility of each candidate clip point: minus its distance, in rows, from being a ``quantile``-quantile.

    ``u(c) = -dist(q n, [#{x < c}, #{x <= c}])``: 0 when ``c`` is a ``q``-quantile of ``values``.  Replacing one
    row moves each count by at most 1, hence ``u`` by at most 1 (sensitivity 1).  Atoms are handled (a binary
    feature's lower 5% quantile is 0 when more than 5% of its rows are 0).
    """
    ordered = np.sort(values)
    below = np.searchsorted(ordered, candidates, side="left")
    at_most = np.searchsorted(ordered, candidates, side="right")
    target = quantile * values.size
    return -(np.maximum(0.0, below - target) + np.maximum(0.0, target - at_most))


def private_feature_ranges(
    X: np.ndarray, ranges: np.ndarray, epsilon: float, noise: NoiseSource, *, quantile: float = RANGE_QUANTILE,
) -> np.ndarray:
    """Each feature's private ``[quantile, 1 - quantile]`` range, inside its declared range (pure ``epsilon``-DP).

    For every feature, two draws of the exponential mechanism (McSherry & Talwar 2007; the quantile utility of
    Smith 2011 on a public grid of ``RANGE_GRID + 1`` points over the declared range), each with
    ``epsilon / (2 d)``: ``epsilon``-DP in all under "replace one row" (basic composition).  Where the two draws
    cross (``low >= high``), the declared range is kept (post-processing).

    Parameters
    ----------
    X : ndarray of shape (n, d)
        Rows inside ``ranges``.
    ranges : ndarray of shape (2, d)
        Declared ``(low, high)`` per feature.
    epsilon : float
        Spent on all ``2 d`` draws together (> 0, finite).
    noise : NoiseSource
        Noise source (drawn after the budget was charged).
    quantile : float, default RANGE_QUANTILE
        Lower quantile (the upper is ``1 - quantile``).

    Returns
    -------
    ndarray of shape (2, d)
        The released ``(low, high)`` per feature.
    """
    d = X.shape[1]
    each = epsilon / (2 * d)
    released = ranges.copy()
    steps = np.arange(RANGE_GRID + 1) / RANGE_GRID
    for j in range(d):
        low, high = ranges[0, j], ranges[1, j]
        candidates = low + (high - low) * steps
        ends = []
        for q in (quantile, 1.0 - quantile):
            utility = quantile_utilities(X[:, j], candidates, q)
            ends.append(float(candidates[noise.noisy_argmax_gumbel(utility, 2.0 / each)]))  # P ~ exp(each * u / 2)
        if ends[0] < ends[1]:
            released[:, j] = ends
    return released
