"""Post-processing of :class:`~dpfair.metrics.PrivateMetricFrame`'s release (free): the estimates, flags and confidence
intervals (seeded by fairlearn's ``random_state``, never by the privacy noise), and fairlearn's interval views of them
(``conf_int`` and the ``*_ci`` accessors)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from dpfair._validation import check_open_unit
from dpfair.metrics import _core
from dpfair.metrics._core import MetricSpec
from dpfair.metrics._stages import FrameOptions, NoisyRelease, Rows

__all__ = ["conf_int", "interval_options", "intervals_at", "matrix_intervals", "quantile_objects", "solve"]


def _bootstrap_generator(random_state: Any) -> np.random.Generator:
    """fairlearn's ``random_state`` (it seeds the resampling of the intervals only, never the privacy noise)."""
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(0, 2**32, size=4, dtype=np.uint64))
    return np.random.default_rng(random_state)


def _check_bootstrap_seed(random_state: Any) -> None:
    ok = random_state is None or isinstance(random_state, np.random.RandomState | np.random.Generator | np.random.SeedSequence)
    if isinstance(random_state, int | np.integer) and not isinstance(random_state, bool):
        ok = int(random_state) >= 0
    if not ok:
        # fairlearn's message and class: random_state seeds the resampling of the intervals (fairlearn's meaning);
        # give None, a non-negative int, a numpy RandomState or Generator (the noise is seeded by noise_random_state)
        raise ValueError(f"Unsupported random_state: {random_state}")


#: fairlearn's messages for ``n_boot`` and ``ci_quantiles``, word for word
BOOTSTRAP_NEED_N_AND_CI = "Must specify both n_boot and ci_quantiles"
BOOTSTRAP_N_BOOT_INT_GT_ZERO = "Must have n_boot be a positive integer"
BOOTSTRAP_CI_INVALID = "Must have all ci_quantiles be floats in (0, 1)"


def fairlearn_bootstrap(random_state: Any, n_boot: Any, quantiles: Any) -> tuple[int, list[float]] | None:
    """fairlearn's ``n_boot`` / ``ci_quantiles`` at ``epsilon = inf``: ``(n_boot, quantiles)``, or None when not asked.

    Both or neither must be given (an empty ``ci_quantiles`` is "not given"); ``n_boot`` is any positive int
    (the resamples are exact, so fairlearn's 20 are allowed), every quantile a float in (0, 1).
    """
    asked = quantiles is not None and not isinstance(quantiles, str | bytes) and len(quantiles) > 0
    if n_boot is not None and asked:
        if isinstance(n_boot, bool) or not isinstance(n_boot, int | np.integer) or n_boot < 1:
            raise ValueError(BOOTSTRAP_N_BOOT_INT_GT_ZERO)
        if any(not isinstance(q, float) or not 0 < q < 1 for q in quantiles):
            raise ValueError(BOOTSTRAP_CI_INVALID)
        _check_bootstrap_seed(random_state)
        return int(n_boot), [float(q) for q in quantiles]
    if (n_boot is not None) ^ asked:
        raise ValueError(BOOTSTRAP_NEED_N_AND_CI)
    return None


def interval_options(random_state: Any, n_boot: Any, quantiles: Any, confidence: float) -> tuple[int, list[float]]:
    """``(n_boot, ci_quantiles)`` checked, after fairlearn's ``random_state`` (``confidence``: the checked level)."""
    _check_bootstrap_seed(random_state)
    n_boot = _core.N_BOOT if n_boot is None else n_boot
    if isinstance(n_boot, bool) or not isinstance(n_boot, int | np.integer) or not 100 <= n_boot <= 100_000:
        raise ValueError("n_boot must be an int in [100, 100000] (the number of draws behind the intervals), or None.")
    if quantiles is None:
        quantiles = [(1 - confidence) / 2, (1 + confidence) / 2]
    elif isinstance(quantiles, str | bytes) or not hasattr(quantiles, "__iter__"):
        raise TypeError("ci_quantiles must be a list of floats in (0, 1), e.g. [0.025, 0.5, 0.975].")
    quantiles = [check_open_unit(q, "ci_quantiles") for q in quantiles]
    if not quantiles:
        raise ValueError("ci_quantiles must hold at least one quantile in (0, 1).")
    return int(n_boot), quantiles


def solve(options: FrameOptions, noisy: NoisyRelease, rows: Rows, random_state: Any) -> dict[str, Any]:
    """Post-processing (free): estimates, flags and intervals from the noisy table and sums.

    The draws behind the intervals are seeded by ``random_state`` (fairlearn's meaning), never by the noise.
    """
    specs, share, table, grouping = options.specs, noisy.share, noisy.table, rows.grouping
    k = grouping.n_control
    g = table.shape[0] // k
    rng = _bootstrap_generator(random_state)
    scalars = [spec for spec in specs if not spec.matrix]
    est, flagged, cis = _core.intervals(
        table.reshape(k, g, -1), {key: v.reshape(k, g, *np.shape(v)[1:]) for key, v in noisy.sums.items()}, scalars,
        share, share,
        options.confidence, rng, options.n_boot, options.weight_bound,
    )
    for spec in specs:
        if spec.matrix:
            est[spec.key], flagged[spec.key], cis[spec.key] = matrix_intervals(
                table.reshape(k, g, -1), share, options.confidence, rng, options.n_boot, options.weight_bound)
    order = [spec.key for spec in specs]
    est, flagged, cis = ({key: d[key] for key in order} for d in (est, flagged, cis))
    columns_table = list(_core.CELL_NAMES) if table.shape[1] == 4 else ["count"]
    index = grouping.index
    return {
        "_single": options.single,
        "_specs": specs,
        "_index": index,
        "_control_index": grouping.control_index,
        "_sensitive_names": grouping.sensitive_names,
        "_quantiles": options.quantiles,
        "_est": est,
        "_flagged": flagged,
        "_cis": cis,
        "noisy_table_": pd.DataFrame(table, index=index.copy(), columns=columns_table),
        "group_sizes_": (
            pd.Series(np.maximum(table.sum(axis=1), 0), index=index.copy(), name="count", dtype=np.int64)
            if options.weight_bound is None  # with sample_weight: the noisy total weight of every group
            else pd.Series(np.maximum(table.sum(axis=1), 0.0), index=index.copy(), name="sample_weight", dtype=float)
        ),
        "releases_": noisy.releases,
    }


def intervals_at(
    cis: dict[str, _core.MetricIntervals], specs: list[MetricSpec], confidence_level: float, confidence: float
) -> dict[str, _core.MetricIntervals]:
    """The intervals of every metric at ``confidence`` (those at ``confidence_level`` are already computed)."""
    if math.isclose(confidence, float(confidence_level)):
        return cis
    return {spec.key: (_matrix_summary(*cis[spec.key].draws, confidence) if spec.matrix else
                       _core.summary_intervals(spec, *cis[spec.key].draws, confidence, cis[spec.key].exact))
            for spec in specs}


def _as_matrices(cells: np.ndarray) -> np.ndarray:
    """``(..., 4)`` cells (TN, FP, FN, TP) as an object array ``(...)`` of 2 x 2 matrices, scikit-learn's layout."""
    out = np.empty(cells.shape[:-1], dtype=object)
    for index in np.ndindex(out.shape):
        out[index] = np.asarray(cells[index], dtype=float).reshape(2, 2)
    return out


def _matrix_summary(est_group: np.ndarray, est_overall: np.ndarray, draws: np.ndarray, draws_overall: np.ndarray,
                    confidence: float) -> _core.MetricIntervals:
    """The intervals of a confusion matrix: per cell, equal-tailed quantiles of the cell's draws (the estimate
    inside); no summary (a matrix has no minimum or difference: NaN, as fairlearn's ``errors="coerce"``)."""
    alpha = 1.0 - confidence
    q = np.quantile(draws, [alpha / 2, 1 - alpha / 2], axis=1)  # (2, K, G, 4)
    qo = np.quantile(draws_overall, [alpha / 2, 1 - alpha / 2], axis=1)  # (2, K, 4)
    by_group = _core.Interval(_as_matrices(np.fmin(q[0], est_group)), _as_matrices(np.fmax(q[1], est_group)))
    overall = _core.Interval(_as_matrices(np.fmin(qo[0], est_overall)), _as_matrices(np.fmax(qo[1], est_overall)))
    nan = np.full(est_overall.shape[0], np.nan)
    none = (nan, _core.Interval(nan, nan))
    methods = ("between_groups", "to_overall")
    result = _core.MetricIntervals(by_group, overall, {m: none for m in methods}, {m: none for m in methods},
                                   _core.Interval(nan, nan), _core.Interval(nan, nan))
    result.draws = (est_group, est_overall, draws, draws_overall)
    return result


def matrix_intervals(
    table: np.ndarray, epsilon: float, confidence: float, rng: np.random.Generator, n_boot: int,
    unit: float | None = None,
) -> tuple[tuple[np.ndarray, np.ndarray], np.ndarray, _core.MetricIntervals]:
    """The confusion matrix of every group and overall, from the released table (post-processing, free).

    The estimate is the released table with negative counts set to 0 (scikit-learn's ``[[TN, FP], [FN, TP]]``);
    each cell's interval holds the population count given its release: quantiles of the posterior draws of
    :func:`dpfair.metrics._core.posterior_cells` (the exact discrete-Laplace likelihood of the noisy count, a
    Poisson model of the sampling), or of :func:`~dpfair.metrics._core.posterior_sums` for a table of weighted
    sums (``unit`` = ``sample_weight_bound``).  A count is never undefined: nothing is flagged.  ``table`` is
    ``(K, G, 4)``; returns ``((by_group (K, G) of matrices, overall (K,)), flags (K, G), intervals)``.
    """
    raw = np.asarray(table, dtype=float)
    clean = np.maximum(raw, 0.0)
    if unit is None:
        draws = _core.posterior_cells(raw, epsilon, n_boot, rng)  # (K, B, G, 4)
    else:
        draws = unit * _core.posterior_sums(raw / unit, epsilon, n_boot, rng)
    est_group, est_overall = clean, clean.sum(axis=1)
    intervals = _matrix_summary(est_group, est_overall, draws, draws.sum(axis=2), confidence)
    flags = np.zeros(clean.shape[:2], dtype=bool)
    return (_as_matrices(est_group), _as_matrices(est_overall)), flags, intervals


def quantile_objects(
    quantiles: list[float], at: Callable[[float], dict[str, _core.MetricIntervals]],
    pick: Callable[[_core.MetricIntervals, bool], np.ndarray], point: Callable[[], Any],
    shape: Callable[[dict[str, np.ndarray]], Any],
) -> list[Any]:
    """fairlearn's ``*_ci``: one object per ``ci_quantiles`` entry (the lower end of the ``1 - 2q`` interval below
    the median, the upper end of the ``2q - 1`` interval above it, the estimate at 0.5); ``at(level)``: the intervals."""
    out = []
    for q in quantiles:
        if math.isclose(q, 0.5):
            out.append(point())
            continue
        cis = at(abs(2 * q - 1))
        out.append(shape({k: pick(ci, q > 0.5) for k, ci in cis.items()}))
    return out


def conf_int(
    cis: dict[str, _core.MetricIntervals], scalar_or_series: Callable[[dict[str, np.ndarray]], Any],
    frame_or_series: Callable[[dict[str, np.ndarray]], Any],
) -> dict[str, dict[str, Any]]:
    """``PrivateMetricFrame.conf_int``: the ends of every interval, shaped by the frame's two shapers."""
    out: dict[str, dict[str, Any]] = {}
    for end in ("lower", "upper"):
        out.setdefault("overall", {})[end] = scalar_or_series(
            {k: getattr(ci.overall, end) for k, ci in cis.items()}
        )
        out.setdefault("by_group", {})[end] = frame_or_series(
            {k: getattr(ci.by_group, end) for k, ci in cis.items()}
        )
        for name, method in (("difference", "between_groups"), ("difference_to_overall", "to_overall")):
            out.setdefault(name, {})[end] = scalar_or_series(
                {k: getattr(ci.difference[method][1], end) for k, ci in cis.items()}
            )
        for name, method in (("ratio", "between_groups"), ("ratio_to_overall", "to_overall")):
            out.setdefault(name, {})[end] = scalar_or_series(
                {k: getattr(ci.ratio[method][1], end) for k, ci in cis.items()}
            )
        for name in ("group_min", "group_max"):
            out.setdefault(name, {})[end] = scalar_or_series(
                {k: getattr(getattr(ci, name), end) for k, ci in cis.items()}
            )
    return out
