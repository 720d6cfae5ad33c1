"""``r2_score`` at a finite epsilon, from released bounded sums (the moments of every group).

With ``y_true`` and ``y_pred`` in the declared ``bounds = (lo, hi)`` (width ``w = hi - lo``, middle ``m``), every row
gives three numbers, each in a range of length at most 1 in absolute value:

* ``rho = ((y_true - y_pred) / w) ** 2`` in ``[0, 1]`` (the squared residual, in units of ``w ** 2``),
* ``v = (y_true - m) / (w / 2)`` in ``[-1, 1]`` and ``v ** 2`` in ``[0, 1]`` (``y_true`` centred, in units of ``w / 2``).

Per group the release is the vector of sums ``(A, B, C) = (sum rho, sum v, sum v ** 2)``; with the group's size ``n``
(from the released table) the group's residual and total sums of squares are ``SS_res = w ** 2 A`` and
``SS_tot = (w / 2) ** 2 (C - B ** 2 / n)``, so ``r2 = 1 - SS_res / SS_tot = 1 - 4 A / (C - B ** 2 / n)``: the same
formula as scikit-learn's ``r2_score`` (one pass instead of two).

**Sensitivity** (add or remove one row, the library's neighbouring relation).  The row enters exactly one group
(its group is a function of the row), and changes that group's ``(A, B, C)`` by ``(rho, v, v ** 2)``; its L1 norm is
``rho + |v| + v ** 2 <= 1 + 1 + 1 = 3`` (reached by ``y_true = hi``, ``y_pred = lo``).  The other groups' sums do not
change.  So the vector of all groups' sums has L1 sensitivity 3, and independent Laplace noise of scale
``3 / epsilon`` on each of its entries is ``epsilon``-DP (the Laplace mechanism: Dwork, McSherry, Nissim & Smith
2006, Theorem 1; Dwork & Roth 2014, Theorem 3.6).  The group sizes come from the frame's own table (its own share
of epsilon); everything after the release is post-processing.  Centring ``y_true`` on ``m`` halves its unit
(``|v| <= 1`` instead of a value in ``[0, 1]`` for the width ``w``), which makes ``SS_tot`` four times larger in
the released units for the same sensitivity.

**Interval.**  Draws of the group's ``r2`` are the released sums plus fresh noise of the release's law (the noise,
exactly), plus a normal sampling term whose standard deviation is bounded from the released means alone
(Bhatia-Davis: a value in ``[a, b]`` with mean ``mu`` has variance at most ``(mu - a) (b - mu)``; the two terms
of the delta method added in absolute value, the worst correlation): conservative for the sampling error, exact
for the noise.  The equal-tailed quantiles of the draws are the interval.  A group whose released ``SS_tot`` is
within ``2 z`` noise standard deviations of 0 (or whose size is) is flagged: its value is then mostly noise.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy import stats

#: the released vector per group: (sum rho, sum v, sum v ** 2)
COMPONENTS = 3
#: its L1 sensitivity under adding or removing one row (see the module's docstring)
SENSITIVITY = 3.0


def per_row(y_true: np.ndarray, y_pred: np.ndarray, bounds: tuple[float, float]) -> np.ndarray:
    """``(..., 3)`` per-row ``(rho, v, v ** 2)`` of values in ``bounds`` (each of absolute value at most 1)."""
    lo, hi = float(bounds[0]), float(bounds[1])
    width, middle = hi - lo, (lo + hi) / 2.0
    y_true, y_pred = np.asarray(y_true, dtype=float), np.asarray(y_pred, dtype=float)
    rho = ((y_true - y_pred) / width) ** 2
    v = (y_true - middle) / (width / 2.0)
    return np.stack([rho, v, v * v], axis=-1)


def noise_scale(epsilon: float) -> float:
    """Laplace scale of every released sum: ``3 / epsilon`` (0 at ``epsilon = inf``)."""
    return 0.0 if math.isinf(epsilon) else SENSITIVITY / epsilon


def r2_values(sums: np.ndarray, n: np.ndarray) -> np.ndarray:
    """``1 - 4 A / (C - B ** 2 / n)`` over the last axis ``(A, B, C)`` of ``sums``; NaN where ``n < 2`` or ``SS_tot <= 0``."""
    sums, n = np.asarray(sums, dtype=float), np.asarray(n, dtype=float)
    a, b, c = np.maximum(sums[..., 0], 0.0), sums[..., 1], sums[..., 2]
    with np.errstate(divide="ignore", invalid="ignore"):
        total = c - b * b / np.where(n > 0, n, 1.0)
        value = 1.0 - 4.0 * a / total
    return np.where((n >= 2) & (total > 0), value, np.nan)


def evaluate(sums: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """By-group ``(..., G)`` and overall ``(...)`` ``r2`` from sums ``(..., G, 3)`` and group sizes ``(..., G)``."""
    return r2_values(sums, counts), r2_values(np.asarray(sums).sum(axis=-2), np.asarray(counts).sum(axis=-1))


def _sampling_sd(sums: np.ndarray, n: np.ndarray) -> np.ndarray:
    """A bound on the sampling standard deviation of ``r2`` from the released means (NaN where undefined)."""
    sums, n = np.asarray(sums, dtype=float), np.maximum(np.asarray(n, dtype=float), 2.0)
    m_rho = np.clip(sums[..., 0] / n, 0.0, 1.0)
    m_v = np.clip(sums[..., 1] / n, -1.0, 1.0)
    var_v = np.clip(sums[..., 2] / n - m_v**2, 0.0, 1.0 - m_v**2)
    sd_rho = np.sqrt(m_rho * (1.0 - m_rho))  # rho in [0, 1]
    top = (1.0 + np.abs(m_v)) ** 2  # (v - mean v) ** 2 in [0, top], mean var_v
    sd_dev = np.sqrt(var_v * np.maximum(top - var_v, 0.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        sd = 4.0 * (sd_rho / var_v + m_rho * sd_dev / var_v**2) / np.sqrt(n)
    return np.where(var_v > 0, sd, np.nan)


def flags(sums: np.ndarray, counts: np.ndarray, epsilon_table: float, epsilon_sums: float,
          confidence: float) -> np.ndarray:
    """Groups whose released ``SS_tot`` (or size) is within ``2 z`` noise standard deviations of 0 ``(..., G)``."""
    z = stats.norm.ppf(0.5 + confidence / 2)
    sums, counts = np.asarray(sums, dtype=float), np.asarray(counts, dtype=float)
    s = noise_scale(epsilon_sums)
    mean_v = np.clip(sums[..., 1] / np.maximum(counts, 1.0), -1.0, 1.0)
    sd_total = math.sqrt(2.0) * s * np.sqrt(1.0 + 4.0 * mean_v**2)
    with np.errstate(divide="ignore", invalid="ignore"):
        total = sums[..., 2] - sums[..., 1] ** 2 / np.maximum(counts, 1.0)
    t = 0.0 if math.isinf(epsilon_table) else 1.0 / epsilon_table
    sd_n = 0.0 if t == 0 else math.sqrt(2.0 * math.exp(-1.0 / t)) / (1.0 - math.exp(-1.0 / t))
    return (total <= 2.0 * z * sd_total) | (counts <= max(2.0 * z * sd_n, 1.0))


def draws(sums: np.ndarray, counts: np.ndarray, epsilon_table: float, epsilon_sums: float, n_draws: int,
          rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Draws ``(R, B, G)`` and ``(R, B)`` of every group's and the overall ``r2`` from the raw releases.

    ``sums`` is ``(R, G, 3)`` (released, raw), ``counts`` ``(R, G)`` (released group sizes).  An undefined draw
    (``SS_tot <= 0``) is ``-inf``: the interval then reaches as low as the draws do; every draw is at most 1.
    """
    sums, counts = np.asarray(sums, dtype=float), np.asarray(counts, dtype=float)
    R, G, _ = sums.shape
    s = noise_scale(epsilon_sums)
    drawn = np.broadcast_to(sums[:, None], (R, n_draws, G, COMPONENTS)).copy()
    if s:
        drawn += rng.laplace(0.0, s, size=drawn.shape)
    sizes = np.broadcast_to(counts[:, None], (R, n_draws, G)).copy()
    if not math.isinf(epsilon_table):
        p = -math.expm1(-epsilon_table)
        sizes += rng.geometric(p, size=sizes.shape) - rng.geometric(p, size=sizes.shape)
    sizes = np.maximum(sizes, 2.0)
    sd_group = _sampling_sd(sums, counts)
    sd_all = _sampling_sd(sums.sum(axis=1), counts.sum(axis=1))
    by_group = r2_values(drawn, sizes) + np.nan_to_num(sd_group)[:, None] * rng.standard_normal((R, n_draws, G))
    overall = r2_values(drawn.sum(axis=2), sizes.sum(axis=2)) + np.nan_to_num(sd_all)[:, None] * rng.standard_normal(
        (R, n_draws))
    # r2 <= 1 always (SS_res >= 0): the sampling term is cut there
    return (np.where(np.isnan(by_group), -np.inf, np.minimum(by_group, 1.0)),
            np.where(np.isnan(overall), -np.inf, np.minimum(overall, 1.0)))


__all__: list[Any] = []
