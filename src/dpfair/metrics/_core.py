"""The statistics behind :class:`~dpfair.metrics.PrivateMetricFrame`, vectorized over replicates.

Everything here works on stacks: a leading axis ``R`` of independent data sets (one for a
frame, hundreds in the coverage test) and, for the bootstrap, an axis ``B`` of replicates.

* The **table** holds, for every declared group, the counts of the four cells
  ``(y_true, y_pred) = (0, 0), (0, 1), (1, 0), (1, 1)`` (TN, FP, FN, TP) when a count-based metric
  is asked for, else the group's number of rows (one cell).  It is released once with
  discrete-Laplace noise (:func:`release_table`).
* A **real-valued** metric (mean squared / absolute error, mean prediction) is the mean of a
  per-row value in a declared range ``[0, width]`` (plus an offset); its per-group sums are
  released with Laplace noise (:func:`release_sums`), its denominators come from the table.
* :func:`evaluate` turns (post-processed) tables and sums into metric values per group and overall.
* :func:`intervals` runs the parametric bootstrap and builds every confidence interval.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from dpfair.privacy.mechanisms import laplace_mechanism
from dpfair.privacy.noise import NoiseSource

# cells of the 4-cell table, flat index 2 * y_true + y_pred
TN, FP, FN, TP = 0, 1, 2, 3
CELL_NAMES = ("TN", "FP", "FN", "TP")

#: count-based metrics: (numerator cells, denominator cells); balanced accuracy is special-cased
COUNT_METRICS: dict[str, tuple[tuple[int, ...], tuple[int, ...]]] = {
    "selection_rate": ((FP, TP), (TN, FP, FN, TP)),
    "true_positive_rate": ((TP,), (FN, TP)),
    "false_positive_rate": ((FP,), (TN, FP)),
    "true_negative_rate": ((TN,), (TN, FP)),
    "false_negative_rate": ((FN,), (FN, TP)),
    "accuracy_score": ((TN, TP), (TN, FP, FN, TP)),
    "precision_score": ((TP,), (FP, TP)),
    "recall_score": ((TP,), (FN, TP)),
    "balanced_accuracy_score": ((), ()),
}
#: real-valued metrics: the mean of a per-row value
REAL_METRICS = ("mean_squared_error", "mean_absolute_error", "mean_prediction")
SUPPORTED = tuple(COUNT_METRICS) + REAL_METRICS

#: bootstrap replicates of a frame
N_BOOT = 2000
#: pseudo-count added to every cell when the bootstrap resamples the noisy table (a Jeffreys-like
#: correction: a cell released as 0 may hold a few rows, and a group rate of exactly 0 or 1 still varies)
PSEUDO_COUNT = 0.5
#: floor of a metric value before its logarithm (ratio intervals)
_LOG_FLOOR = 1e-12


@dataclass(frozen=True)
class MetricSpec:
    """One requested metric: its output name, the supported metric it is, and its value range."""

    key: str
    name: str
    lo: float = 0.0
    hi: float = 1.0

    @property
    def real(self) -> bool:
        return self.name in REAL_METRICS

    @property
    def width(self) -> float:
        """Range of the per-row value whose mean is the metric (the sensitivity of its sum)."""
        return self.hi - self.lo

    @property
    def offset(self) -> float:
        """``metric = offset + mean(per-row value)``; only the mean prediction has an offset."""
        return self.lo if self.name == "mean_prediction" else 0.0


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
    return laplace_mechanism(sums, sensitivity=width, epsilon=epsilon, random_state=noise)


# ----------------------------------------------------------------------------- evaluation
def _fallback(values: np.ndarray, overall: np.ndarray, spec: MetricSpec) -> tuple[np.ndarray, np.ndarray]:
    """Undefined (0/0) group values take the overall value; an undefined overall takes the range midpoint."""
    overall = np.where(np.isnan(overall), 0.5 * (spec.lo + spec.hi), overall)
    values = np.where(np.isnan(values), overall[..., None], values)
    return values, overall


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def _count_metric(table: np.ndarray, name: str) -> np.ndarray:
    """Metric values over the last-but-one axis (groups) of ``table[..., cell]``; NaN where 0/0."""
    if name == "balanced_accuracy_score":
        tpr = _ratio(table[..., TP], table[..., FN] + table[..., TP])
        tnr = _ratio(table[..., TN], table[..., TN] + table[..., FP])
        # scikit-learn's rule: a class absent from y_true is left out of the mean
        return np.where(np.isnan(tpr), tnr, np.where(np.isnan(tnr), tpr, (tpr + tnr) / 2))
    num, den = COUNT_METRICS[name]
    return _ratio(table[..., list(num)].sum(-1), table[..., list(den)].sum(-1))


def evaluate(table: np.ndarray, sums: dict[str, np.ndarray], specs: list[MetricSpec]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Metric values from a post-processed (non-negative) table ``(..., G, C)`` and sums ``(..., G)``.

    Returns ``{key: (by_group (..., G), overall (...))}``, with the fallback for 0/0 applied.
    """
    overall_table = table.sum(axis=-2)
    counts = table.sum(axis=-1)
    out = {}
    for spec in specs:
        if spec.real:
            s = sums[spec.key]
            with np.errstate(invalid="ignore"):
                by_group = spec.offset + np.clip(_ratio(s, counts), 0.0, spec.width)
                overall = spec.offset + np.clip(_ratio(s.sum(-1), counts.sum(-1)), 0.0, spec.width)
        else:
            with np.errstate(invalid="ignore"):
                by_group = _count_metric(table, spec.name)
                overall = _count_metric(overall_table, spec.name)
        out[spec.key] = _fallback(by_group, overall, spec)
    return out


def flags(table: np.ndarray, specs: list[MetricSpec], epsilon_table: float, confidence: float) -> dict[str, np.ndarray]:
    """Which group values rest on a noise-dominated (or empty) denominator, per metric, from the raw release.

    With finite epsilon a denominator is noise-dominated when its released value is below
    ``2 z sd`` (``z`` the two-sided normal quantile of ``confidence``, ``sd`` the standard deviation
    of the noise on it): at that confidence the noise may move it by half its value or more, and
    an empty group (released value around 0) is flagged.  With ``epsilon = inf`` only an empty
    denominator is flagged.
    """
    var = discrete_laplace_variance(table_scale(epsilon_table))
    z = stats.norm.ppf(0.5 + confidence / 2)

    def weak(cells: tuple[int, ...] | None) -> np.ndarray:
        den = table.sum(-1) if cells is None else table[..., list(cells)].sum(-1)
        k = table.shape[-1] if cells is None else len(cells)
        return den <= 2.0 * z * math.sqrt(k * var)

    out = {}
    for spec in specs:
        if spec.real:
            out[spec.key] = weak(None)
        elif spec.name == "balanced_accuracy_score":
            pos, neg = weak((FN, TP)), weak((TN, FP))
            out[spec.key] = (pos & neg) if var == 0 else (pos | neg)
        else:
            out[spec.key] = weak(COUNT_METRICS[spec.name][1])
    return out


# ----------------------------------------------------------------------------- bootstrap
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


def _max_abs_band(
    est: np.ndarray, boot: np.ndarray, valid: np.ndarray, confidence: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Simultaneous interval for ``max_p |delta_p|`` over contrasts ``p``.

    ``est`` (R, P) are the estimated contrasts, ``boot`` (R, B, P) their bootstrap replicates,
    ``valid`` (R, P) the contrasts with a usable estimate.  With ``se_p`` the bootstrap standard
    deviation and ``c`` the ``confidence`` quantile of ``max_p |delta*_p - mean_p| / se_p`` over
    the valid contrasts, every ``delta_p`` lies in ``est_p +- c se_p`` simultaneously (at the
    nominal level), hence ``max_p |delta_p|`` lies in
    ``[max_p(|est_p| - c se_p)^+, max_p(|est_p| + c se_p)]``.  For one contrast this is the image
    of the usual interval for the signed contrast.

    Returns ``(estimate, lower, upper, any_valid)``, each of shape (R,).
    """
    # a robust standard deviation (half the central 68.3 % range): a few replicates at a floor (a
    # logarithm of a rate drawn as 0) must not blow up every contrast's band
    centre, se = _robust_se(boot)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.abs(boot - centre[:, None, :]) / se[:, None, :]
    t = np.where(se[:, None, :] > 0, t, 0.0)
    t = np.where(valid[:, None, :], t, 0.0)
    c = np.quantile(t.max(axis=2), confidence, axis=1) if t.shape[2] else np.zeros(est.shape[0])
    absolute = np.abs(est)
    lower = np.where(valid, absolute - c[:, None] * se, -np.inf).max(axis=1, initial=-np.inf)
    upper = np.where(valid, absolute + c[:, None] * se, -np.inf).max(axis=1, initial=-np.inf)
    estimate = np.where(valid, absolute, -np.inf).max(axis=1, initial=-np.inf)
    any_valid = valid.any(axis=1)
    return estimate, np.maximum(lower, 0.0), upper, any_valid


#: largest number of bootstrapped contrasts (replicates x pairs of groups) held at once; beyond it
#: (about 60 groups) the spread between groups gets its band from a simultaneous band over groups
_MAX_CONTRASTS = 4_000_000


def _robust_se(boot: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Median and robust standard deviation (half the central 68.3 % range) over the replicate axis 1."""
    q_lo, centre, q_hi = np.quantile(boot, [0.158655, 0.5, 0.841345], axis=1)
    return centre, np.where(q_hi > q_lo, (q_hi - q_lo) / 2, boot.std(axis=1))


def _spread_band(
    est: np.ndarray, boot: np.ndarray, usable: np.ndarray, confidence: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Interval ``(lower, upper, any_valid)`` for ``max_g theta_g - min_g theta_g`` over every group.

    Up to :data:`_MAX_CONTRASTS`, a simultaneous band over every pair of usable groups
    (:func:`_max_abs_band`); beyond, a simultaneous band ``[l_g, u_g]`` over the usable groups gives
    ``[max_g l_g - min_g u_g, max_g u_g - min_g l_g]`` (valid, wider).
    """
    R, B, G = boot.shape
    i, j = np.triu_indices(G, k=1)
    if R * B * i.size <= _MAX_CONTRASTS:
        valid = usable[:, i] & usable[:, j]
        _, lower, upper, any_valid = _max_abs_band(est[:, i] - est[:, j], boot[:, :, i] - boot[:, :, j], valid, confidence)
        return lower, upper, any_valid
    centre, se = _robust_se(boot)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(se[:, None, :] > 0, np.abs(boot - centre[:, None, :]) / se[:, None, :], 0.0)
    c = np.quantile(np.where(usable[:, None, :], t, 0.0).max(axis=2), confidence, axis=1)
    low, high = est - c[:, None] * se, est + c[:, None] * se
    lower = np.where(usable, low, -np.inf).max(axis=1) - np.where(usable, high, np.inf).min(axis=1)
    upper = np.where(usable, high, -np.inf).max(axis=1) - np.where(usable, low, np.inf).min(axis=1)
    return np.maximum(lower, 0.0), upper, usable.sum(axis=1) >= 2


def summary_intervals(
    spec: MetricSpec,
    est: np.ndarray,
    est_overall: np.ndarray,
    boot: np.ndarray,
    boot_overall: np.ndarray,
    flagged: np.ndarray,
    confidence: float,
) -> MetricIntervals:
    """All intervals of one metric from its estimates (R, G), (R,) and bootstrap (R, B, G), (R, B)."""
    alpha = 1.0 - confidence
    R, G = est.shape
    lo, hi, width = spec.lo, spec.hi, spec.width
    q = np.quantile(boot, [alpha / 2, 1 - alpha / 2], axis=1)  # (2, R, G)
    by_group = Interval(np.where(flagged, lo, np.minimum(q[0], est)), np.where(flagged, hi, np.maximum(q[1], est)))
    qo = np.quantile(boot_overall, [alpha / 2, 1 - alpha / 2], axis=1)
    overall = Interval(np.minimum(qo[0], est_overall), np.maximum(qo[1], est_overall))
    usable = ~flagged
    any_flagged = flagged.any(axis=1)

    # point estimates of the summaries: over the groups whose denominator is usable (>= 2 of them),
    # else over every group (fairlearn's definitions: max - min, min / max, and the same to overall)
    enough = usable.sum(axis=1) >= 2
    member = np.where(enough[:, None], usable, True)
    gmax = np.where(member, est, -np.inf).max(axis=1)
    gmin = np.where(member, est, np.inf).min(axis=1)
    member_o = np.where(usable.any(axis=1)[:, None], usable, True)
    to_overall = np.where(member_o, np.abs(est - est_overall[:, None]), -np.inf).max(axis=1)

    def finish(estimate, band_lower, band_upper, any_valid, cap):
        lower = np.where(any_valid, band_lower, 0.0)
        upper = np.where(any_valid & ~any_flagged, band_upper, cap)
        return estimate, Interval(np.clip(np.minimum(lower, estimate), 0.0, cap), np.clip(np.maximum(upper, estimate), 0.0, cap))

    differences = {}
    bl, bu, av = _spread_band(est, boot, usable, confidence)
    differences["between_groups"] = finish(gmax - gmin, bl, bu, av, width)
    _, bl, bu, av = _max_abs_band(est - est_overall[:, None], boot - boot_overall[:, :, None], usable, confidence)
    differences["to_overall"] = finish(to_overall, bl, bu, av, width)

    ratios = {}
    with np.errstate(divide="ignore", invalid="ignore"):
        r_between = np.where(gmax > 0, gmin / np.where(gmax > 0, gmax, 1.0), 1.0)
        r = est / est_overall[:, None]
        r = np.where(r > 1, 1 / r, r)
        r = np.where(est_overall[:, None] > 0, r, np.where(est > 0, 0.0, 1.0))
        r_overall = np.where(member_o, r, np.inf).min(axis=1)
    if lo < 0:  # a ratio of values that may be negative has no useful interval
        inf = np.full(R, np.inf)
        ratios = {"between_groups": (r_between, Interval(-inf, inf)), "to_overall": (r_overall, Interval(-inf, inf))}
    else:
        log_est = np.log(np.maximum(est, _LOG_FLOOR * max(hi, 1.0)))
        log_boot = np.log(np.maximum(boot, _LOG_FLOOR * max(hi, 1.0)))
        log_est_o = np.log(np.maximum(est_overall, _LOG_FLOOR * max(hi, 1.0)))
        log_boot_o = np.log(np.maximum(boot_overall, _LOG_FLOOR * max(hi, 1.0)))
        bands = {
            "between_groups": (_spread_band(log_est, log_boot, usable, confidence), r_between),
            "to_overall": (
                _max_abs_band(log_est - log_est_o[:, None], log_boot - log_boot_o[:, :, None], usable, confidence)[1:],
                r_overall,
            ),
        }
        for method, ((bl, bu, av), point) in bands.items():
            lower = np.where(av & ~any_flagged, np.exp(-bu), 0.0)
            upper = np.where(av, np.exp(-bl), 1.0)
            ratios[method] = (point, Interval(np.clip(np.minimum(lower, point), 0, 1), np.clip(np.maximum(upper, point), 0, 1)))
    if G == 1:  # one group is the whole data: no disparity, exactly
        zero, one = np.zeros(R), np.ones(R)
        differences = {m: (zero, Interval(zero, zero)) for m in differences}
        ratios = {m: (one, Interval(one, one)) for m in ratios}
    return MetricIntervals(by_group, overall, differences, ratios)


def bootstrap(
    table: np.ndarray,
    sums: dict[str, np.ndarray],
    specs: list[MetricSpec],
    epsilon_table: float,
    epsilon_sums: float,
    n_boot: int,
    rng: np.random.Generator,
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Parametric bootstrap of every metric from the released (post-processed) table and sums.

    Each replicate redraws the data and the privacy noise: cell counts ``~ Poisson(table + 0.5)``
    (the rows are a sample of a population; the pseudo-count keeps cells released as 0 variable),
    the per-row values of a real metric as the worst-case (largest-variance) law on its range, a
    two-point law at its ends with the released mean (Bhatia-Davis bound: no extra release needed),
    then fresh noise of the release's own law, and the same post-processing as the estimate.

    ``table`` is (R, G, C), every sum (R, G).  Returns ``{key: (by_group (R, B, G), overall (R, B))}``.
    This resampling uses only released values: it is post-processing and costs no privacy.
    """
    R, G, C = table.shape
    lam = np.broadcast_to(table[:, None] + PSEUDO_COUNT, (R, n_boot, G, C))
    true_counts = rng.poisson(lam).astype(np.int64)
    scale = table_scale(epsilon_table)
    noisy = true_counts.astype(float)
    if scale:
        p = -math.expm1(-1.0 / scale)
        noisy += rng.geometric(p, size=noisy.shape) - rng.geometric(p, size=noisy.shape)
    boot_table = np.maximum(noisy, 0.0)
    boot_sums = {}
    if sums:
        n_rows = true_counts.sum(-1)  # (R, B, G)
        counts = table.sum(-1)  # released group sizes (R, G)
        for spec in specs:
            if not spec.real:
                continue
            # smoothed released mean of the scaled per-row value, in [0, 1]
            v = np.clip((sums[spec.key] / spec.width + PSEUDO_COUNT) / (counts + 2 * PSEUDO_COUNT), 0.0, 1.0)
            s = spec.width * rng.binomial(n_rows, np.broadcast_to(v[:, None, :], n_rows.shape))
            if not math.isinf(epsilon_sums):
                s = s + rng.laplace(0.0, spec.width / epsilon_sums, size=s.shape)
            boot_sums[spec.key] = s
    return evaluate(boot_table, boot_sums, specs)


def intervals(
    table: np.ndarray,
    sums: dict[str, np.ndarray],
    specs: list[MetricSpec],
    epsilon_table: float,
    epsilon_sums: float,
    confidence: float,
    rng: np.random.Generator,
    n_boot: int = N_BOOT,
) -> tuple[dict[str, tuple[np.ndarray, np.ndarray]], dict[str, np.ndarray], dict[str, MetricIntervals]]:
    """Estimates, flags and intervals of every metric from released tables (R, G, C) and sums (R, G).

    ``table`` is the raw release (integers, possibly negative): it is post-processed here
    (negative counts become 0).  Returns ``(estimates, flags, intervals)`` keyed by metric.
    """
    clean = np.maximum(np.asarray(table, dtype=float), 0.0)
    est = evaluate(clean, sums, specs)
    flagged = flags(np.asarray(table, dtype=float), specs, epsilon_table, confidence)  # raw: unbiased around 0
    boot = bootstrap(clean, sums, specs, epsilon_table, epsilon_sums, n_boot, rng)
    out = {}
    for spec in specs:
        (g, o), (bg, bo) = est[spec.key], boot[spec.key]
        out[spec.key] = summary_intervals(spec, g, o, bg, bo, flagged[spec.key], confidence)
    return est, flagged, out


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
