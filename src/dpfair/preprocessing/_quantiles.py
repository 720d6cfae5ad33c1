"""Private quantiles on a public grid: the exponential mechanism with the rank utility (Smith 2011).

One mechanism serves three releases: :class:`~dpfair.linear_model.DPLinearRegression`'s feature ranges
(``feature_bounds`` with ``range_share``), :class:`~dpfair.preprocessing.DPQuantileClipper`'s clip points and
:class:`~dpfair.preprocessing.DPMedianImputer`'s fill values.  Each quantile of each column is one draw of the
exponential mechanism (McSherry & Talwar 2007) over a public grid of ``RANGE_GRID + 1`` points spanning the
column's declared range; the draws compose by basic composition.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dpfair.privacy.noise import NoiseSource

__all__ = ["RANGE_GRID", "RANGE_QUANTILE", "private_feature_ranges", "private_quantiles", "quantile_utilities"]

#: Quantiles located by :func:`private_feature_ranges`: each feature is clipped to its private
#: ``[RANGE_QUANTILE, 1 - RANGE_QUANTILE]`` quantiles (at most ~5% of a feature's rows clipped at each end).
RANGE_QUANTILE = 0.05

#: Candidate points per feature: a public grid of ``RANGE_GRID + 1`` points over the declared range.
RANGE_GRID = 1024


def quantile_utilities(values: np.ndarray, candidates: np.ndarray, quantile: float) -> np.ndarray:
    """Utility of each candidate point: minus its distance, in rows, from being a ``quantile``-quantile of ``values``.

    ``u(c) = -dist(q m, [#{x < c}, #{x <= c}])`` with ``m = values.size``: 0 when ``c`` is a ``q``-quantile.
    Sensitivity 1 under "replace one row", also when a replaced row is a missing value that the caller dropped
    (``m`` then moves by 1 and ``q m`` by ``q <= 1``, while each count moves by 0 or 1 in the same direction:
    ``dist(t, [b, a]) = max(0, b - t, t - a)`` moves by at most 1).  Atoms are handled (a binary feature's
    lower 5% quantile is 0 when more than 5% of its rows are 0).

    Parameters
    ----------
    values : ndarray of shape (m,)
        The column's values (missing values already dropped).
    candidates : ndarray of shape (k,)
        The public grid.
    quantile : float
        The quantile in ``[0, 1]``.

    Returns
    -------
    ndarray of shape (k,)
        The utilities (``<= 0``).
    """
    ordered = np.sort(values)
    below = np.searchsorted(ordered, candidates, side="left")
    at_most = np.searchsorted(ordered, candidates, side="right")
    target = quantile * values.size
    return -(np.maximum(0.0, below - target) + np.maximum(0.0, target - at_most))


def private_quantiles(
    X: np.ndarray, ranges: np.ndarray, quantiles: Sequence[float], epsilon: float, noise: NoiseSource,
) -> np.ndarray:
    """Each column's private ``quantiles``, on a public grid over its declared range (pure ``epsilon``-DP).

    For every column ``j`` and every ``q`` of ``quantiles`` (in that order), one draw of the exponential
    mechanism with the utility :func:`quantile_utilities` (sensitivity 1) and ``epsilon / (len(quantiles) d)``:
    ``epsilon``-DP in all under "replace one row" (basic composition).  Missing values (NaN) are dropped from
    each column before its utility is computed (the sensitivity stays 1, see :func:`quantile_utilities`); a
    column with no value left draws uniformly from its grid.

    Parameters
    ----------
    X : ndarray of shape (n, d)
        Rows inside ``ranges`` (NaN allowed: a missing value).
    ranges : ndarray of shape (2, d)
        Declared ``(low, high)`` per column (public).
    quantiles : sequence of float
        The quantiles in ``[0, 1]`` to release per column.
    epsilon : float
        Spent on all draws together (> 0, finite).
    noise : NoiseSource
        Noise source (drawn after the budget was charged).

    Returns
    -------
    ndarray of shape (len(quantiles), d)
        The released points, each on the column's public grid.
    """
    d = X.shape[1]
    each = epsilon / (len(quantiles) * d)
    released = np.empty((len(quantiles), d))
    steps = np.arange(RANGE_GRID + 1) / RANGE_GRID
    for j in range(d):
        low, high = ranges[0, j], ranges[1, j]
        candidates = low + (high - low) * steps
        column = X[:, j]
        column = column[~np.isnan(column)]
        for k, q in enumerate(quantiles):
            utility = quantile_utilities(column, candidates, q)
            # the exponential mechanism, P(c) ~ exp(each * u(c) / 2), by the Gumbel-max trick
            released[k, j] = candidates[noise.noisy_argmax_gumbel(utility, 2.0 / each)]
    return released


def private_feature_ranges(
    X: np.ndarray, ranges: np.ndarray, epsilon: float, noise: NoiseSource, *, quantile: float = RANGE_QUANTILE,
) -> np.ndarray:
    """Each feature's private ``[quantile, 1 - quantile]`` range, inside its declared range (pure ``epsilon``-DP).

    Two draws of :func:`private_quantiles` per feature, each with ``epsilon / (2 d)``: ``epsilon``-DP in all under
    "replace one row".  Where the two draws cross (``low >= high``), the declared range is kept (post-processing).

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
    ends = private_quantiles(X, ranges, (quantile, 1.0 - quantile), epsilon, noise)
    released = np.array(ranges, dtype=float, copy=True)
    keep = ends[0] < ends[1]
    released[:, keep] = ends[:, keep]
    return released
