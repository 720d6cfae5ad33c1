"""The statistics behind :class:`~dpfair.metrics.PrivateMetricFrame`, vectorized over replicates.

Everything here works on stacks: a leading axis ``R`` of independent data sets (one for a
frame, hundreds in the coverage test) and, for the interval draws, an axis ``B`` of draws.

* The **table** holds, for every declared group, the counts of the four cells
  ``(y_true, y_pred) = (0, 0), (0, 1), (1, 0), (1, 1)`` (TN, FP, FN, TP) when a count-based metric
  is asked for, else the group's number of rows (one cell).  It is released once with
  discrete-Laplace noise (:func:`release_table`).
* A **real-valued** metric (mean squared / absolute error, mean prediction) is the mean of a
  per-row value in a declared range ``[0, width]`` (plus an offset); its per-group sums are
  released with Laplace noise (:func:`release_sums`), its denominators come from the table.
* :func:`evaluate` turns (post-processed) tables and sums into metric values per group and overall:
  ``NaN`` where a value is 0/0 (at ``epsilon = inf``, scikit-learn's ``zero_division`` value for a
  group that has rows, as fairlearn reports it).
* :func:`intervals` builds every confidence interval: count-based metrics from draws of the
  posterior of the population cell rates given the noisy counts (the exact discrete-Laplace
  likelihood, no clipping: :func:`posterior_cells`); real-valued metrics by a parametric bootstrap.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import special, stats

from dpfair.privacy.mechanisms import laplace_mechanism
from dpfair.privacy.noise import NoiseSource

# cells of the 4-cell table, flat index 2 * y_true + y_pred
TN, FP, FN, TP = 0, 1, 2, 3
CELL_NAMES = ("TN", "FP", "FN", "TP")
_ALL_CELLS = (TN, FP, FN, TP)

#: count-based metrics: (numerator cells, denominator cells); f1 / fbeta / balanced accuracy are special-cased
#: (their denominator cells are those whose sum being 0 makes the value 0/0)
COUNT_METRICS: dict[str, tuple[tuple[int, ...], tuple[int, ...]]] = {
    "selection_rate": ((FP, TP), _ALL_CELLS),
    "true_positive_rate": ((TP,), (FN, TP)),
    "false_positive_rate": ((FP,), (TN, FP)),
    "true_negative_rate": ((TN,), (TN, FP)),
    "false_negative_rate": ((FN,), (FN, TP)),
    "accuracy_score": ((TN, TP), _ALL_CELLS),
    "precision_score": ((TP,), (FP, TP)),
    "recall_score": ((TP,), (FN, TP)),
    "balanced_accuracy_score": ((), ()),
    "f1_score": ((TP,), (FP, FN, TP)),
    "fbeta_score": ((TP,), (FP, FN, TP)),
    "count": (_ALL_CELLS, ()),  # fairlearn's count: the (noisy) number of rows; never undefined, never flagged
}
#: real-valued metrics: the mean of a per-row value
REAL_METRICS = ("mean_squared_error", "mean_absolute_error", "mean_prediction")
#: score metrics: read a released histogram of the scores (y_pred) per group and true label, on declared bins
SCORE_METRICS = ("roc_auc_score",)
#: moment metrics: read released per-group sums of several bounded per-row values (``r2_score``: see ``_r2``)
MOMENT_METRICS = ("r2_score",)
SUPPORTED = tuple(COUNT_METRICS) + REAL_METRICS + MOMENT_METRICS

#: draws of a frame's intervals
N_BOOT = 2000
#: shape of the Gamma prior of every cell rate (Jeffreys for a Poisson rate): a rate's draws are then
#: Beta(x + 1/2, n - x + 1/2) for a one-cell numerator (Jeffreys' interval) when there is no noise
PRIOR_SHAPE = 0.5
#: the prior of a cell's *count* given its release is ``P(c) ~ Gamma(c + a) / c!`` with this ``a``
#: (the Poisson-Gamma marginal): below 1/2 it leans towards small counts, which keeps the interval of a
#: rate near 0 from being pushed up by the noise (coverage .97-.98 at rate .01 in 75 rows, epsilon .5-1,
#: and .94-.95 at rate .3; see tests/metrics/test_edge_coverage.py)
COUNT_PRIOR_SHAPE = 0.25
#: pseudo-count of the real-valued metrics' bootstrap (released sums are smoothed towards the middle)
PSEUDO_COUNT = 0.5
#: floor of a metric value before its logarithm (ratio intervals)
_LOG_FLOOR = 1e-12
#: the posterior of a cell is computed on the counts within this many noise scales of the release
_TAIL_SCALES = 40.0
#: largest grid of candidate counts per cell (beyond it, a coarser grid: only at tiny epsilon)
_MAX_GRID = 4001


@dataclass(frozen=True)
class MetricSpec:
    """One requested metric: its output name, the metric it is, its value range and its 0/0 value.

    ``function`` (a function of the four cell counts ``tn, fp, fn, tp``, arrays, returning NaN where
    undefined) and ``cells`` (the cells whose sum being 0 leaves it undefined) describe a caller's own
    count-based metric (:class:`dpfair.metrics.CountMetric`).
    """

    key: str
    name: str
    lo: float = 0.0
    hi: float = 1.0
    zero_division: float = 0.0
    beta: float = 1.0
    function: Callable[..., Any] | None = None
    cells: tuple[int, ...] | None = None
    #: the metric is the confusion matrix itself (a 2 x 2 count per group, scikit-learn's layout), not a scalar
    matrix: bool = False
    #: number of declared score bins of a score metric (``roc_auc_score``), 0 for every other metric
    score_bins: int = 0

    @property
    def histogram(self) -> bool:
        """The metric reads a released per-group, per-label histogram of the scores on declared bins."""
        return self.score_bins > 0

    @property
    def real(self) -> bool:
        """The metric is a mean of a bounded per-row value (released as per-group sums)."""
        return self.name in REAL_METRICS

    @property
    def moments(self) -> bool:
        """The metric reads released per-group sums of several bounded per-row values (``r2_score``)."""
        return self.name in MOMENT_METRICS

    @property
    def width(self) -> float:
        """Range of the per-row value whose mean is the metric (the sensitivity of its sum)."""
        return self.hi - self.lo

    @property
    def offset(self) -> float:
        """``metric = offset + mean(per-row value)``; only the mean prediction has an offset."""
        return self.lo if self.name == "mean_prediction" else 0.0

    @property
    def denominator_cells(self) -> tuple[int, ...]:
        """The cells whose sum is the denominator (for the flags); all four for a caller's function."""
        if self.function is not None:
            return self.cells or _ALL_CELLS
        return COUNT_METRICS[self.name][1]


def real_spec(key: str, name: str, bounds: tuple[float, float]) -> MetricSpec:
    """The range of a real-valued metric when ``y_true`` and ``y_pred`` lie in ``bounds``."""
    lo, hi = bounds
    if name == "mean_squared_error":
        return MetricSpec(key, name, 0.0, (hi - lo) ** 2)
    if name == "mean_absolute_error":
        return MetricSpec(key, name, 0.0, hi - lo)
    return MetricSpec(key, name, lo, hi)


def per_row_values(spec: MetricSpec, y_true: np.ndarray, y_pred: np.ndarray) -> np.ndarray:
    """The per-row value in ``[0, width]`` whose mean (plus ``offset``) is the metric."""
    if spec.name == "mean_squared_error":
        return (y_true - y_pred) ** 2
    if spec.name == "mean_absolute_error":
        return np.abs(y_true - y_pred)
    return y_pred - spec.lo


# ----------------------------------------------------------------------------- releases
def discrete_laplace_variance(scale: float) -> float:
    """Variance of the discrete Laplace law ``P(k) ~ exp(-|k| / scale)`` (0 for ``scale = 0``)."""
    if scale == 0:
        return 0.0
    t = math.exp(-1.0 / scale)
    return 2.0 * t / (1.0 - t) ** 2


def table_scale(epsilon: float) -> float:
    """Discrete-Laplace scale of the table: ``1 / epsilon`` (L1 sensitivity 1 under add/remove one row)."""
    return 0.0 if math.isinf(epsilon) else 1.0 / epsilon


def release_table(counts: np.ndarray, epsilon: float, noise: NoiseSource) -> np.ndarray:
    """Release integer cell counts with discrete-Laplace noise of scale ``1 / epsilon`` (``epsilon``-DP).

    Adding or removing one row changes exactly one cell by one, so the table's L1 sensitivity is 1
    and every cell gets independent noise ``P(k) ~ exp(-epsilon |k|)`` (the geometric mechanism of
    Ghosh, Roughgarden & Sundararajan 2009).  Any stack of tables is noised cell by cell.
    ``epsilon = inf`` returns the counts unchanged.
    """
    scale = table_scale(epsilon)
    return noise.discrete_laplace(np.asarray(counts, dtype=np.int64), scale)


def release_sums(sums: np.ndarray, width: float, epsilon: float, noise: NoiseSource) -> np.ndarray:
    """Release per-group sums of a per-row value in ``[0, width]`` with Laplace noise ``width / epsilon``.

    One row added or removed changes one group's sum by at most ``width`` (L1 sensitivity).
    """
    if math.isinf(epsilon):
        return np.asarray(sums, dtype=float).copy()
    return laplace_mechanism(sums, sensitivity=width, epsilon=epsilon, noise=noise)


# ----------------------------------------------------------------------------- evaluation
def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def histogram_auc(histogram: np.ndarray) -> np.ndarray:
    """The AUC of every histogram ``(..., 2 B)`` (negatives' bins, then positives'), ties within a bin counted 1/2.

    ``AUC = sum_b P_b (N_{<b} + N_b / 2) / (P N)``: the probability that a positive outranks a negative when
    scores are known up to their bin (the Mann-Whitney statistic of the binned scores).  Its distance to the AUC
    of the exact scores is at most ``sum_b P_b N_b / (2 P N)`` (only pairs within one bin can change order).
    NaN where ``P`` or ``N`` is 0.
    """
    bins = histogram.shape[-1] // 2
    negatives, positives = histogram[..., :bins], histogram[..., bins:]
    below = np.cumsum(negatives, axis=-1) - negatives
    wins = (positives * (below + 0.5 * negatives)).sum(-1)
    return _ratio(wins, positives.sum(-1) * negatives.sum(-1))


def count_values(table: np.ndarray, spec: MetricSpec) -> np.ndarray:
    """Metric values over the last-but-one axis (groups) of ``table[..., cell]``; NaN where 0/0."""
    tn, fp, fn, tp = (table[..., cell] for cell in _ALL_CELLS)
    if spec.function is not None:
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            values = np.asarray(spec.function(tn, fp, fn, tp), dtype=float)
        return np.broadcast_to(values, tn.shape).copy()
    if spec.name == "balanced_accuracy_score":
        tpr, tnr = _ratio(tp, fn + tp), _ratio(tn, tn + fp)
        # scikit-learn's rule: a class absent from y_true is left out of the mean
        return np.where(np.isnan(tpr), tnr, np.where(np.isnan(tnr), tpr, (tpr + tnr) / 2))
    if spec.name == "count":
        return np.asarray(table.sum(-1), dtype=float)
    if spec.name in ("f1_score", "fbeta_score"):
        b2 = spec.beta**2
        return _ratio((1 + b2) * tp, (1 + b2) * tp + b2 * fn + fp)
    num, den = COUNT_METRICS[spec.name]
    return _ratio(table[..., list(num)].sum(-1), table[..., list(den)].sum(-1))


def _zero_division(values: np.ndarray, rows: np.ndarray, spec: MetricSpec) -> np.ndarray:
    """fairlearn's value of a 0/0 metric in a group that has rows: scikit-learn's ``zero_division``.

    A declared group without rows has no row in fairlearn (NaN for an empty combination of features): its
    ``count`` is NaN too at ``epsilon = inf``.
    """
    if spec.name == "count" and spec.function is None:
        return np.where(rows > 0, values, np.nan)
    if spec.real or spec.name == "balanced_accuracy_score":
        return values
    return np.where(np.isnan(values) & (rows > 0), spec.zero_division, values)


def evaluate(
    table: np.ndarray, sums: dict[str, np.ndarray], specs: list[MetricSpec], *, exact: bool = False
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Metric values from a post-processed (non-negative) table ``(..., G, C)`` and sums ``(..., G)``.

    Returns ``{key: (by_group (..., G), overall (...))}``; a 0/0 value is NaN, except with ``exact``
    (``epsilon = inf``) where a group (or the whole data) with rows takes the metric's
    ``zero_division`` value, as scikit-learn, and so fairlearn, report it.
    """
    overall_table = table.sum(axis=-2)
    counts = table.sum(axis=-1)
    out = {}
    for spec in specs:
        if spec.histogram:
            histogram = np.maximum(np.asarray(sums[spec.key], dtype=float), 0.0)
            out[spec.key] = (histogram_auc(histogram), histogram_auc(histogram.sum(axis=-2)))
            continue
        if spec.moments:
            from dpfair.metrics import _r2

            out[spec.key] = _r2.evaluate(sums[spec.key], counts)
            continue
        if spec.real:
            s = sums[spec.key]
            with np.errstate(invalid="ignore"):
                by_group = spec.offset + np.clip(_ratio(s, counts), 0.0, spec.width)
                overall = spec.offset + np.clip(_ratio(s.sum(-1), counts.sum(-1)), 0.0, spec.width)
        else:
            by_group = count_values(table, spec)
            overall = count_values(overall_table, spec)
            if exact:
                by_group = _zero_division(by_group, counts, spec)
                overall = _zero_division(overall, counts.sum(-1), spec)
        out[spec.key] = (by_group, overall)
    return out


def flags(
    table: np.ndarray, specs: list[MetricSpec], epsilon_table: float, confidence: float, continuous: bool = False
) -> dict[str, np.ndarray]:
    """Which group values rest on a noise-dominated (or empty) denominator, per metric, from the raw release.

    With finite epsilon a denominator is noise-dominated when its released value is below
    ``2 z sd`` (``z`` the two-sided normal quantile of ``confidence``, ``sd`` the standard deviation
    of the noise on it): at that confidence the noise may move it by half its value or more, and
    an empty group (released value around 0) is flagged.  With ``epsilon = inf`` only an empty
    denominator is flagged.  ``continuous``: the table is a weighted table in units of
    ``sample_weight_bound``, with (continuous) Laplace noise of scale ``1 / epsilon_table``, variance ``2 / epsilon^2``.
    """
    scale = table_scale(epsilon_table)
    var = 2.0 * scale**2 if continuous else discrete_laplace_variance(scale)
    z = stats.norm.ppf(0.5 + confidence / 2)

    def weak(cells: tuple[int, ...] | None) -> np.ndarray:
        den = table.sum(-1) if cells is None else table[..., list(cells)].sum(-1)
        k = table.shape[-1] if cells is None else len(cells)
        return den <= 2.0 * z * math.sqrt(k * var)

    out = {}
    for spec in specs:
        if spec.real:
            out[spec.key] = weak(None)
        elif spec.name == "count" and spec.function is None:
            out[spec.key] = np.zeros(table.shape[:-1], dtype=bool)
        elif spec.name == "balanced_accuracy_score" and spec.function is None:
            pos, neg = weak((FN, TP)), weak((TN, FP))
            out[spec.key] = (pos & neg) if var == 0 else (pos | neg)
        else:
            out[spec.key] = weak(spec.denominator_cells)
    return out


# ----------------------------------------------------------------------------- posterior draws
def _sample_rows(cdf: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Inverse-CDF sampling, row by row: ``cdf`` (N, M) increasing to 1, ``u`` (N, B) uniforms -> indices (N, B)."""
    n, m = cdf.shape
    offset = np.arange(n, dtype=float)[:, None]
    flat = (cdf + offset).ravel()
    index = np.searchsorted(flat, (np.minimum(u, np.nextafter(1.0, 0.0)) + offset).ravel(), side="right")
    return (index.reshape(u.shape) - np.arange(n)[:, None] * m).clip(0, m - 1)


def posterior_cells(table: np.ndarray, epsilon: float, n_draws: int, rng: np.random.Generator) -> np.ndarray:
    """Draws of every cell's population rate given its released (noisy) count.

    Model: a cell's count is ``c ~ Poisson(lambda)`` (the rows are a sample of a population), released
    as ``y = c + k`` with discrete-Laplace ``k`` of the table's scale, ``P(k) ~ exp(-epsilon |k|)``.
    With a Gamma prior on ``lambda`` (improper rate 0) the posterior is drawn exactly:
    first ``c`` from ``P(c | y) ~ Gamma(c + a) / c! * exp(-epsilon |y - c|)`` (``a`` = :data:`COUNT_PRIOR_SHAPE`)
    on the non-negative
    counts within 40 noise scales of ``y`` (the likelihood of the noisy count itself: a negative
    release is never clipped, so no upward bias), then ``lambda ~ Gamma(c + 1/2, 1)`` (Jeffreys).  With
    ``epsilon = inf``, ``c = y``.  A metric of the drawn rates (a ratio of sums of them) is a draw of
    the population metric; its quantiles are the intervals.  Uses released values only (post-processing).

    ``table`` is (R, G, C) (integers, possibly negative).  Returns (R, B, G, C) floats.
    """
    table = np.asarray(table)
    R, G, C = table.shape
    flat = np.rint(table).astype(np.int64).reshape(-1)
    n = flat.size
    scale = table_scale(epsilon)
    if scale == 0:
        counts = np.broadcast_to(np.maximum(flat, 0)[:, None], (n, n_draws)).astype(float)
    else:
        half = math.ceil(_TAIL_SCALES * scale) + 1
        step = max(1, math.ceil((2 * half + 1) / _MAX_GRID))
        offsets = np.arange(0, 2 * half + 1, step, dtype=np.int64)
        low = np.maximum(flat - half, 0)
        grid = low[:, None] + offsets[None, :]  # (N, M) candidate true counts, all >= 0
        log_w = special.gammaln(grid + COUNT_PRIOR_SHAPE) - special.gammaln(grid + 1.0) - np.abs(flat[:, None] - grid) / scale
        log_w -= log_w.max(axis=1, keepdims=True)
        weights = np.exp(log_w)
        cdf = np.cumsum(weights, axis=1)
        cdf /= cdf[:, -1:]
        index = _sample_rows(cdf, rng.random((n, n_draws)))
        counts = np.take_along_axis(grid, index, axis=1).astype(float)
        if step > 1:
            counts += rng.integers(0, step, size=counts.shape)
    rates = rng.gamma(counts + PRIOR_SHAPE)
    return rates.reshape(R, G, C, n_draws).transpose(0, 3, 1, 2)


def posterior_sums(table: np.ndarray, epsilon: float, n_draws: int, rng: np.random.Generator) -> np.ndarray:
    """Draws of every cell's population rate given its released *weighted* sum (``sample_weight``).

    ``table`` holds the released weighted sums in units of ``sample_weight_bound`` (``w_max``): ``y = S + k``,
    ``S = sum_i w_i / w_max`` over the cell's rows, ``k`` continuous Laplace of scale ``1 / epsilon``.  The
    exact discrete-Laplace likelihood of :func:`posterior_cells` does not apply (``S`` is not an integer and
    the noise is continuous), so this uses the **Laplace-noise likelihood of the released sum**:
    ``P(S | y) ~ Gamma(S + a) / Gamma(S + 1) * exp(-epsilon |y - S|)`` on ``S >= 0`` (the prior of
    :func:`posterior_cells` extended to real ``S``; nothing clipped, so no upward bias near 0), drawn on a
    grid of 1601 points over 40 noise scales with uniform jitter within a step.  Sampling error: with every
    ``w_i / w_max`` in ``[0, 1]``, a Poisson-sampled ``S`` has variance ``sum (w_i / w_max)^2 <= E[S]``, so
    the rate draw ``lambda ~ Gamma(S + 1/2, 1)`` (the Poisson model, variance = mean) is conservative for the
    sampling error (exact when every weight is ``w_max``).  Metrics are ratios of sums of cells, so the unit
    cancels.  Uses released values only (post-processing).  ``table`` is (R, G, C) floats; returns (R, B, G, C).
    """
    table = np.asarray(table, dtype=float)
    R, G, C = table.shape
    flat = table.reshape(-1)
    n = flat.size
    scale = table_scale(epsilon)
    if scale == 0:
        sums = np.broadcast_to(np.maximum(flat, 0.0)[:, None], (n, n_draws)).astype(float)
    else:
        points = 1601
        half = _TAIL_SCALES * scale
        step = 2.0 * half / (points - 1)
        grid = np.maximum(flat - half, 0.0)[:, None] + step * np.arange(points)[None, :]
        log_w = special.gammaln(grid + COUNT_PRIOR_SHAPE) - special.gammaln(grid + 1.0) - np.abs(flat[:, None] - grid) / scale
        log_w -= log_w.max(axis=1, keepdims=True)
        cdf = np.cumsum(np.exp(log_w), axis=1)
        cdf /= cdf[:, -1:]
        index = _sample_rows(cdf, rng.random((n, n_draws)))
        sums = np.take_along_axis(grid, index, axis=1) + step * (rng.random((n, n_draws)) - 0.5)
        sums = np.maximum(sums, 0.0)
    rates = rng.gamma(sums + PRIOR_SHAPE)
    return rates.reshape(R, G, C, n_draws).transpose(0, 3, 1, 2)


def _real_bootstrap(
    table: np.ndarray, sums: dict[str, np.ndarray], specs: list[MetricSpec], epsilon_table: float, epsilon_sums: float,
    n_boot: int, rng: np.random.Generator,
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Parametric bootstrap of the real-valued metrics from the released (post-processed) table and sums.

    Each replicate redraws the group sizes as ``Poisson(count + 0.5)`` plus fresh noise of the table's
    law, the per-row values as the worst-case (largest-variance) law on their range, a two-point law
    at its ends with the released mean (Bhatia-Davis bound: no extra release needed), then fresh noise
    of the sums' law.  ``table`` is (R, G, C), every sum (R, G).  Returns ``{key: (by_group (R, B, G),
    overall (R, B))}`` for the real-valued specs only.
    """
    real = [spec for spec in specs if spec.real]
    if not real:
        return {}
    R, G, _ = table.shape
    counts = table.sum(-1)  # released (post-processed) group sizes (R, G)
    n_rows = rng.poisson(np.broadcast_to(counts[:, None] + PSEUDO_COUNT, (R, n_boot, G))).astype(np.int64)
    scale = table_scale(epsilon_table)
    sizes = n_rows.astype(float)
    if scale:
        p = -math.expm1(-1.0 / scale)
        sizes += rng.geometric(p, size=sizes.shape) - rng.geometric(p, size=sizes.shape)
    sizes = np.maximum(sizes, 0.0)[..., None]
    boot_sums = {}
    for spec in real:
        v = np.clip((sums[spec.key] / spec.width + PSEUDO_COUNT) / (counts + 2 * PSEUDO_COUNT), 0.0, 1.0)
        s = spec.width * rng.binomial(n_rows, np.broadcast_to(v[:, None, :], n_rows.shape))
        if not math.isinf(epsilon_sums):
            s = s + rng.laplace(0.0, spec.width / epsilon_sums, size=s.shape)
        boot_sums[spec.key] = s
    return evaluate(sizes, boot_sums, real)


# ----------------------------------------------------------------------------- intervals
@dataclass
class Interval:
    """Lower and upper ends, shaped like the estimate (leading axis R)."""

    lower: np.ndarray
    upper: np.ndarray


@dataclass
class MetricIntervals:
    """Every interval of one metric, plus the point estimates of the summaries (leading axis R)."""

    by_group: Interval
    overall: Interval
    difference: dict[str, tuple[np.ndarray, Interval]]  # method -> (estimate, interval)
    ratio: dict[str, tuple[np.ndarray, Interval]]
    group_min: Interval | None = None
    group_max: Interval | None = None
    #: ``(est, est_overall, draws, draws_overall, usable, flagged)``: what :func:`summary_intervals` needs
    #: to build the intervals at another confidence level
    draws: tuple[np.ndarray, ...] | None = None
    exact: bool = False


def _simultaneous_band(
    draws: np.ndarray, valid: np.ndarray, confidence: float
) -> tuple[np.ndarray, np.ndarray]:
    """A band ``[lo_p, hi_p]`` holding every valid ``p`` of ``draws`` (R, B, P) at once, at ``confidence``.

    Equal-tailed quantiles of each ``p``'s draws at the level ``c`` for which a fraction
    ``confidence`` of the draws lies inside every valid band at once: the depth of a draw in ``p``
    is ``|2 u - 1|`` (``u`` its rank among ``p``'s draws, in (0, 1)), ``c`` the ``confidence``
    quantile of the largest depth over the valid ``p``.  Quantile-based, so a skewed law (a rate
    near 0, a logarithm) keeps its own shape; for one contrast it is the equal-tailed interval.
    """
    R, B, P = draws.shape
    if P == 0:
        zero = np.zeros((R, 0))
        return zero, zero
    order = np.argsort(draws, axis=1, kind="stable")
    ranks = np.empty_like(order)
    np.put_along_axis(ranks, order, np.arange(B)[None, :, None], axis=1)
    depth = np.abs(2.0 * (ranks + 0.5) / B - 1.0)
    depth = np.where(valid[:, None, :], depth, 0.0)
    c = np.quantile(depth.max(axis=2), confidence, axis=1)  # (R,)
    sorted_draws = np.take_along_axis(draws, order, axis=1)
    low = np.clip(np.floor((1 - c) / 2 * B - 0.5), 0, B - 1).astype(np.int64)
    high = np.clip(np.ceil((1 + c) / 2 * B - 0.5), 0, B - 1).astype(np.int64)
    lo = np.take_along_axis(sorted_draws, np.broadcast_to(low[:, None, None], (R, 1, P)), axis=1)[:, 0]
    hi = np.take_along_axis(sorted_draws, np.broadcast_to(high[:, None, None], (R, 1, P)), axis=1)[:, 0]
    return lo, hi


def _max_abs_band(draws: np.ndarray, valid: np.ndarray, confidence: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Interval ``(lower, upper, any_valid)`` for ``max_p |delta_p|`` over the valid contrasts ``p``.

    Every ``delta_p`` lies in its simultaneous band ``[lo_p, hi_p]`` (:func:`_simultaneous_band`) at
    the nominal level, hence ``max_p |delta_p|`` lies in ``[max_p dist(0, [lo_p, hi_p]), max_p
    max(|lo_p|, |hi_p|)]``.  For one contrast this is the image of the usual interval of the signed contrast.
    """
    lo, hi = _simultaneous_band(draws, valid, confidence)
    near = np.where(lo > 0, lo, np.where(hi < 0, -hi, 0.0))
    far = np.maximum(np.abs(lo), np.abs(hi))
    lower = np.where(valid, near, -np.inf).max(axis=1, initial=-np.inf)
    upper = np.where(valid, far, -np.inf).max(axis=1, initial=-np.inf)
    return np.maximum(lower, 0.0), upper, valid.any(axis=1)


#: largest number of drawn contrasts (draws x pairs of groups) held at once; beyond it (about 60
#: groups) the spread between groups gets its band from a simultaneous band over groups
_MAX_CONTRASTS = 4_000_000


def _spread_band(draws: np.ndarray, usable: np.ndarray, confidence: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Interval ``(lower, upper, enough)`` for ``max_g theta_g - min_g theta_g`` over the usable groups.

    Up to :data:`_MAX_CONTRASTS`, a simultaneous band over every pair of usable groups
    (:func:`_max_abs_band`); beyond, a simultaneous band ``[l_g, u_g]`` over the usable groups gives
    ``[max_g l_g - min_g u_g, max_g u_g - min_g l_g]`` (valid, wider).
    """
    R, B, G = draws.shape
    i, j = np.triu_indices(G, k=1)
    enough = usable.sum(axis=1) >= 2
    if R * B * i.size <= _MAX_CONTRASTS:
        lower, upper, _ = _max_abs_band(draws[:, :, i] - draws[:, :, j], usable[:, i] & usable[:, j], confidence)
        return lower, upper, enough
    low, high = _simultaneous_band(draws, usable, confidence)
    lower = np.where(usable, low, -np.inf).max(axis=1) - np.where(usable, high, np.inf).min(axis=1)
    upper = np.where(usable, high, -np.inf).max(axis=1) - np.where(usable, low, np.inf).min(axis=1)
    return np.maximum(lower, 0.0), upper, enough


def _nan_reduce(function: Callable[..., np.ndarray], values: np.ndarray) -> np.ndarray:
    """``np.nanmax`` / ``np.nanmin`` over the last axis, NaN (no warning) where every value is NaN."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return function(values, axis=-1)


def fairlearn_summaries(by_group: np.ndarray, overall: np.ndarray) -> dict[str, np.ndarray]:
    """fairlearn's summaries of ``by_group`` (..., G) and ``overall`` (...), NaN values skipped as pandas does.

    ``group_min``, ``group_max``, ``difference`` (``max - min``), ``difference_to_overall``
    (``max |v - overall|``), ``ratio`` (``min / max``) and ``ratio_to_overall`` (``min`` of
    ``v / overall``, turned to ``overall / v`` when above 1).
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        gmin, gmax = _nan_reduce(np.nanmin, by_group), _nan_reduce(np.nanmax, by_group)
        r = by_group / overall[..., None]
        r = np.where(r > 1, 1 / r, r)
        return {
            "group_min": gmin,
            "group_max": gmax,
            "difference": gmax - gmin,
            "difference_to_overall": _nan_reduce(np.nanmax, np.abs(by_group - overall[..., None])),
            "ratio": gmin / gmax,
            "ratio_to_overall": _nan_reduce(np.nanmin, r),
        }


def summary_intervals(
    spec: MetricSpec,
    est: np.ndarray,
    est_overall: np.ndarray,
    draws: np.ndarray,
    draws_overall: np.ndarray,
    usable: np.ndarray,
    flagged: np.ndarray,
    confidence: float,
    exact: bool = False,
) -> MetricIntervals:
    """All intervals of one metric from its estimates (R, G), (R,) and draws (R, B, G), (R, B).

    ``est`` is NaN for every group the summaries leave out; ``usable`` marks the others.  A flagged
    group's interval is the metric's whole range.  With finite epsilon (not ``exact``) a disparity
    between groups needs two usable groups (else it is NaN, with the whole range as its interval).
    """
    alpha = 1.0 - confidence
    R, G = est.shape
    lo, hi, width = spec.lo, spec.hi, spec.width
    with np.errstate(invalid="ignore"):
        q = np.nanquantile(np.where(np.isnan(draws), np.inf, draws), [alpha / 2, 1 - alpha / 2], axis=1)  # (2, R, G)
    known = usable & ~flagged & np.isfinite(q).all(axis=0)
    by_group = Interval(np.where(known, np.fmin(q[0], est), lo), np.where(known, np.fmax(q[1], est), hi))
    qo = np.nanquantile(draws_overall, [alpha / 2, 1 - alpha / 2], axis=1)
    known_o = np.isfinite(qo).all(axis=0) & ~np.isnan(est_overall)
    overall = Interval(np.where(known_o, np.fmin(qo[0], est_overall), lo), np.where(known_o, np.fmax(qo[1], est_overall), hi))
    point = fairlearn_summaries(est, est_overall)
    if not exact and G > 1:
        two = usable.sum(axis=1) >= 2
        for name in ("difference", "ratio"):
            point[name] = np.where(two, point[name], np.nan)
    safe = np.where(usable[:, None, :], draws, 0.0)
    safe_o = np.nan_to_num(draws_overall)

    def finish(estimate: np.ndarray, lower: np.ndarray, upper: np.ndarray, ok: np.ndarray, cap: float):
        ok = ok & ~np.isnan(estimate)  # an undefined summary: the whole range
        lower = np.where(ok, lower, 0.0)
        upper = np.where(ok, upper, cap)
        lower = np.clip(np.fmin(lower, estimate), 0.0, cap)
        upper = np.clip(np.fmax(upper, estimate), 0.0, cap)
        return estimate, Interval(lower, upper)

    differences = {}
    bl, bu, enough = _spread_band(safe, usable, confidence)
    differences["between_groups"] = finish(point["difference"], bl, bu, enough, width)
    bl, bu, any_usable = _max_abs_band(safe - safe_o[:, :, None], usable, confidence)
    differences["to_overall"] = finish(point["difference_to_overall"], bl, bu, any_usable & known_o, width)

    ratios = {}
    if lo < 0:  # a ratio of values that may be negative has no useful interval
        inf = np.full(R, np.inf)
        ratios = {"between_groups": (point["ratio"], Interval(-inf, inf)),
                  "to_overall": (point["ratio_to_overall"], Interval(-inf, inf))}
    else:
        floor = _LOG_FLOOR * max(min(hi, 1e12), 1.0)
        log_draws = np.log(np.maximum(safe, floor))
        log_overall = np.log(np.maximum(safe_o, floor))
        bands = {
            "between_groups": (_spread_band(log_draws, usable, confidence), point["ratio"]),
            "to_overall": (_max_abs_band(log_draws - log_overall[:, :, None], usable, confidence), point["ratio_to_overall"]),
        }
        for method, ((bl, bu, ok), estimate) in bands.items():
            ok = (ok & known_o if method == "to_overall" else ok) & ~np.isnan(estimate)
            lower = np.where(ok, np.exp(-bu), 0.0)
            upper = np.where(ok, np.exp(-bl), 1.0)
            interval = Interval(np.clip(np.fmin(lower, estimate), 0, 1), np.clip(np.fmax(upper, estimate), 0, 1))
            ratios[method] = (estimate, interval)
    # group_min / group_max: a simultaneous band over the usable groups
    band_lo, band_hi = _simultaneous_band(safe, usable, confidence)
    any_usable_group = usable.any(axis=1)
    gmin = Interval(
        np.where(any_usable_group, np.fmin(np.where(usable, band_lo, np.inf).min(axis=1), point["group_min"]), lo),
        np.where(any_usable_group, np.fmax(np.where(usable, band_hi, np.inf).min(axis=1), point["group_min"]), hi),
    )
    gmax = Interval(
        np.where(any_usable_group, np.fmin(np.where(usable, band_lo, -np.inf).max(axis=1), point["group_max"]), lo),
        np.where(any_usable_group, np.fmax(np.where(usable, band_hi, -np.inf).max(axis=1), point["group_max"]), hi),
    )
    gmin = Interval(np.clip(gmin.lower, lo, hi), np.clip(gmin.upper, lo, hi))
    gmax = Interval(np.clip(gmax.lower, lo, hi), np.clip(gmax.upper, lo, hi))
    if G == 1:  # one group is the whole data: no disparity, exactly, where the group's value is defined
        # fairlearn's rule: max - min = 0 and min / max = 1, except 0 / 0 (a value of 0) which is NaN, as is
        # every summary of an undefined (NaN) value; an undefined summary's interval is the whole range
        value = est[:, 0]
        defined = ~np.isnan(value)
        zero = np.where(defined, 0.0, np.nan)
        differences = {m: (zero, Interval(np.zeros(R), np.where(defined, 0.0, width))) for m in differences}
        if lo >= 0:
            with np.errstate(invalid="ignore", divide="ignore"):
                one = np.where(defined & (value != 0), 1.0, np.nan)
            known_ratio = ~np.isnan(one)
            ratios = {m: (one, Interval(np.where(known_ratio, 1.0, 0.0), np.ones(R))) for m in ratios}
    return MetricIntervals(by_group, overall, differences, ratios, gmin, gmax)


def intervals(
    table: np.ndarray,
    sums: dict[str, np.ndarray],
    specs: list[MetricSpec],
    epsilon_table: float,
    epsilon_sums: float,
    confidence: float,
    rng: np.random.Generator,
    n_boot: int = N_BOOT,
    unit: float | None = None,
) -> tuple[dict[str, tuple[np.ndarray, np.ndarray]], dict[str, np.ndarray], dict[str, MetricIntervals]]:
    """Estimates, flags and intervals of every metric from released tables (R, G, C) and sums (R, G).

    ``table`` is the raw release (integers, possibly negative): the point estimates use it
    post-processed (negative counts become 0), the intervals its exact likelihood
    (:func:`posterior_cells`).  With finite epsilon a flagged or 0/0 group value is NaN (left out of
    the summaries, its interval the metric's whole range); with ``epsilon = inf`` the values are
    fairlearn's.  Returns ``(estimates, flags, intervals)`` keyed by metric.  ``unit``: the table holds
    ``sample_weight`` sums with Laplace noise ``unit / epsilon_table`` (``unit = sample_weight_bound``): the
    flags and the draws (:func:`posterior_sums`) read it in units of ``unit``, the estimates as released.
    """
    exact = math.isinf(epsilon_table)
    raw = np.asarray(table, dtype=float)
    clean = np.maximum(raw, 0.0)
    est = evaluate(clean, sums, specs, exact=exact)
    in_units = raw if unit is None else raw / unit
    plain = [spec for spec in specs if not spec.histogram and not spec.moments]
    flagged = flags(in_units, plain, epsilon_table, confidence, continuous=unit is not None)  # raw: unbiased around 0
    draws: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for spec in specs:
        if spec.histogram:  # its own release (discrete Laplace at epsilon_sums): flags and posterior draws of its cells
            raw_histogram = np.asarray(sums[spec.key], dtype=float)
            bins = raw_histogram.shape[-1] // 2
            var = discrete_laplace_variance(table_scale(epsilon_sums))
            z = stats.norm.ppf(0.5 + confidence / 2)
            weak = 2.0 * z * math.sqrt(bins * var) if var else 0.0
            flagged[spec.key] = ((raw_histogram[..., :bins].sum(-1) <= weak)
                                 | (raw_histogram[..., bins:].sum(-1) <= weak))
            cells = posterior_cells(raw_histogram, epsilon_sums, n_boot, rng)
            draws[spec.key] = (histogram_auc(cells), histogram_auc(cells.sum(axis=-2)))
        elif spec.moments:  # its own release (Laplace at epsilon_sums) and the table's group sizes
            from dpfair.metrics import _r2

            raw_sums, sizes = np.asarray(sums[spec.key], dtype=float), clean.sum(-1)
            flagged[spec.key] = _r2.flags(raw_sums, raw.sum(-1), epsilon_table, epsilon_sums, confidence)
            draws[spec.key] = _r2.draws(raw_sums, sizes, epsilon_table, epsilon_sums, n_boot, rng)
    specs_plain = plain
    if any(not spec.real for spec in specs_plain):
        if unit is None:
            cells = posterior_cells(raw, epsilon_table, n_boot, rng)
        else:
            cells = posterior_sums(in_units, epsilon_table, n_boot, rng)
        draws.update(evaluate(cells, {}, [spec for spec in specs_plain if not spec.real]))
    draws.update(_real_bootstrap(clean, sums, specs_plain, epsilon_table, epsilon_sums, n_boot, rng))
    out, estimates = {}, {}
    for spec in specs:
        (g, o), (dg, do) = est[spec.key], draws[spec.key]
        if exact:
            usable = ~np.isnan(g)
            # a 0/0 value reported as zero_division is a convention, not a measurement: it does not vary
            dg = np.where(flagged[spec.key][:, None, :], g[:, None, :], dg)
        else:
            g = np.where(flagged[spec.key], np.nan, g)
            usable = ~np.isnan(g)
        estimates[spec.key] = (g, o)
        out[spec.key] = summary_intervals(spec, g, o, dg, do, usable, flagged[spec.key], confidence, exact)
        out[spec.key].draws = (g, o, dg, do, usable, flagged[spec.key])
        out[spec.key].exact = exact
    return estimates, flagged, out


def tabulate(group: np.ndarray, n_groups: int, y_true: np.ndarray | None, y_pred: np.ndarray | None) -> np.ndarray:
    """Exact counts ``(G, 4)`` of (group, y_true, y_pred), or ``(G, 1)`` group sizes without labels."""
    if y_true is None or y_pred is None:
        return np.bincount(group, minlength=n_groups).reshape(n_groups, 1)
    flat = group * 4 + 2 * y_true + y_pred
    return np.bincount(flat, minlength=4 * n_groups).reshape(n_groups, 4)


def group_sums(group: np.ndarray, n_groups: int, values: np.ndarray) -> np.ndarray:
    """Exact per-group sums of ``values``."""
    return np.bincount(group, weights=values, minlength=n_groups)


__all__: list[Any] = []
