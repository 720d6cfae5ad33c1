"""The noisy releases of :class:`~dpfair.metrics.PrivateMetricFrame`: how epsilon is split, the exact statistics they
release (refused before the charge if the noise would overflow), and the draws of the noise."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dpfair.metrics import _core, _r2
from dpfair.metrics._core import MetricSpec
from dpfair.metrics._counts import tabulate_counts
from dpfair.metrics._stages import ExactStatistics, FrameOptions, NoisyRelease, Rows
from dpfair.privacy.noise import NoiseSource

__all__ = ["draw_noise", "exact_statistics", "release_plan", "split_text", "weighted_table_sensitivity"]


def weighted_table_sensitivity(sample_weight_bound: float) -> float:
    """L1 sensitivity of the weighted table under "add or remove one row": ``sample_weight_bound``.

    With ``sample_weight`` the released table holds, for every declared group ``g`` and cell
    ``c = (y_true, y_pred)``, the weighted sum ``S[g, c] = sum_i w_i 1{row i in (g, c)}``, every weight
    ``w_i`` in the declared ``[0, w_max]`` (``w_max = sample_weight_bound``, public; a weight outside
    it is refused before any charge, never clipped).

    *Proof.* Let ``D' = D + {r}`` with ``r`` in group ``g_r`` and cell ``c_r`` (its group and cell are
    functions of ``r`` alone: the declared groups and ``pos_label`` are public, and an undeclared label
    goes to the ``"other"`` group or is refused).  Every term of ``S[g, c]`` is a function of one row,
    so ``S'[g, c] - S[g, c] = w_r 1{(g, c) = (g_r, c_r)}``: one cell changes, by ``w_r``, and
    ``||S' - S||_1 = w_r <= w_max``.  Removing a row is the same with the roles swapped.  With
    ``control_features`` the table is indexed by (control, sensitive) levels: ``r`` still enters
    exactly one cell.  The weight does not enter any other release (real-valued metrics are
    unweighted), so the table gets Laplace noise of scale ``w_max / epsilon_table`` per cell
    (pure ``epsilon_table``-DP, Dwork et al. 2006, Thm. 1), and replacing one row (a removal and an
    addition) costs ``2 epsilon_table``.  Without weights every ``w_r = 1``, the integer table, and
    the discrete Laplace mechanism of :func:`dpfair.metrics._core.release_table`.

    Parameters
    ----------
    sample_weight_bound : float
        The declared largest weight of a row, ``w_max > 0``.

    Returns
    -------
    float
        The L1 sensitivity of the weighted table, ``w_max``.
    """
    return float(sample_weight_bound)


def release_plan(
    specs: list[MetricSpec], count_names: list[str], epsilon: float, weight_bound: float | None = None
) -> tuple[float, list[dict[str, Any]]]:
    """``(share, releases)``: epsilon split equally between the table and each real metric's sums (``releases_``).

    With ``weight_bound`` (``sample_weight_bound``) the table holds weighted sums, released with Laplace noise of
    scale ``weight_bound / share`` (:func:`weighted_table_sensitivity`).
    """
    share = epsilon / (1 + sum(spec.real or spec.histogram or spec.moments for spec in specs))
    table_kind = "contingency table (group x y_true x y_pred)" if count_names else "group sizes"
    if weight_bound is None:
        releases = [
            {"release": table_kind, "mechanism": "discrete Laplace (geometric), L1 sensitivity 1", "epsilon": share,
             "scale": _core.table_scale(share)}
        ]
    else:
        sensitivity = weighted_table_sensitivity(weight_bound)
        releases = [
            {"release": f"sample-weighted {table_kind}, weights in [0, {weight_bound:g}]",
             "mechanism": f"Laplace, L1 sensitivity {sensitivity:g} (sample_weight_bound)", "epsilon": share,
             "scale": 0.0 if math.isinf(share) else sensitivity / share}
        ]
    for spec in specs:
        if spec.histogram:
            releases.append({
                "release": f"per-group, per-label histogram of the scores for {spec.key} ({spec.score_bins} bins)",
                "mechanism": "discrete Laplace (geometric), L1 sensitivity 1",
                "epsilon": share,
                "scale": _core.table_scale(share),
            })
        if spec.moments:
            releases.append({
                "release": f"per-group sums for {spec.key} ({spec.name}: squared residual, centred y_true and its "
                           "square, each in units of bounds)",
                "mechanism": f"Laplace, L1 sensitivity {_r2.SENSITIVITY:g}",
                "epsilon": share,
                "scale": _r2.noise_scale(share),
            })
        if spec.real:
            releases.append({
                "release": f"per-group sums for {spec.key} ({spec.name}, per-row value in [0, {spec.width:g}])",
                "mechanism": f"Laplace, L1 sensitivity {spec.width:g}",
                "epsilon": share,
                "scale": 0.0 if math.isinf(share) else spec.width / share,
            })
    return share, releases


def split_text(releases: list[dict[str, Any]]) -> str:
    """How epsilon is split between the releases, in words (the ledger's label and ``privacy_spent_``)."""
    split = "; ".join(f"{r['release']}: epsilon {r['epsilon']:g}" for r in releases)
    return f"epsilon split equally: {split}" if len(releases) > 1 else f"one release, {split}"


def exact_statistics(options: FrameOptions, epsilon: float, bounds: Any, rows: Rows) -> ExactStatistics:
    """The exact table and per-group sums (not released), and the plan of the releases (refused if it overflows).

    ``options`` holds the checked parameters, ``bounds`` the ``bounds`` argument as given (named in the refusal).
    """
    specs, group, n_groups = options.specs, rows.grouping.group, rows.grouping.n_groups
    if rows.cell_counts is not None:  # from_counts
        counts = tabulate_counts(rows)
    elif options.weight_bound is not None:  # sample_weight: weighted sums (float), one cell per row
        flat = group * 4 + 2 * rows.labels_true + rows.labels_pred
        counts = np.bincount(flat, weights=rows.sample_weight, minlength=4 * n_groups).reshape(n_groups, 4)
    else:
        counts = _core.tabulate(group, n_groups, rows.labels_true, rows.labels_pred)
    histograms = {
        spec.key: score_histogram(group, n_groups, rows.labels_true, rows.scores, spec.score_bins)
        for spec in specs if spec.histogram
    }
    if rows.cell_sums is not None:  # from_counts: the per-cell sums the engine computed, added per group
        sums = {spec.key: _core.group_sums(group, n_groups, rows.cell_sums[spec.key]) for spec in specs if spec.real}
        cells = {spec.key: rows.cell_sums[spec.key] for spec in specs if spec.moments}
    else:
        sums = {
            spec.key: _core.group_sums(group, n_groups, _core.per_row_values(spec, rows.values_true, rows.values_pred))
            for spec in specs
            if spec.real
        }
        cells = {spec.key: _r2.per_row(rows.values_true, rows.values_pred, options.bounds)
                 for spec in specs if spec.moments}
    for key, values in cells.items():  # (rows or cells, 3): the sums of every group, column by column
        sums[key] = np.stack([_core.group_sums(group, n_groups, values[:, j]) for j in range(_r2.COMPONENTS)], axis=-1)
    share, releases = release_plan(specs, options.counts, epsilon, options.weight_bound)
    scale = releases[0]["scale"]
    if scale and options.weight_bound is not None:
        if not math.isfinite(1000.0 * scale):
            raise ValueError(f"epsilon={epsilon!r} is too small for sample_weight_bound: the noise would overflow.")
    elif scale and (not math.isfinite(1000.0 * scale) or int(counts.max(initial=0)) + 1000.0 * scale >= 2.0**62):
        raise ValueError(
            f"epsilon={epsilon!r} is too small: the noise (scale {scale:.3g} per count) would overflow; use a "
            "larger epsilon."
        )
    if scale:
        for spec in specs:
            if spec.moments and not math.isfinite(1000.0 * _r2.noise_scale(share)):
                raise ValueError(f"epsilon={epsilon!r} is too small for {spec.key}: the noise would overflow.")
            if spec.real and not math.isfinite(1000.0 * spec.width / share):
                raise ValueError(
                    f"epsilon={epsilon!r} is too small for bounds={bounds!r}: the noise would overflow."
                )
    return ExactStatistics(counts=counts, sums=sums, histograms=histograms, share=share, releases=releases)


def draw_noise(
    specs: list[MetricSpec], statistics: ExactStatistics, noise: NoiseSource, weight_bound: float | None = None
) -> NoisyRelease:
    """Release the table and the sums, each at ``share`` of epsilon (nothing else is drawn from ``noise``).

    With ``weight_bound`` the table of weighted sums gets Laplace noise ``weight_bound / share`` per cell.
    """
    share = statistics.share
    if weight_bound is None:
        noisy = _core.release_table(statistics.counts, share, noise)
    else:
        noisy = _core.release_sums(statistics.counts, weighted_table_sensitivity(weight_bound), share, noise)
    sums = {
        spec.key: _core.release_sums(statistics.sums[spec.key], spec.width, share, noise) for spec in specs if spec.real
    }
    for spec in specs:  # the moments of r2_score: L1 sensitivity 3 (see _r2), Laplace noise 3 / share per sum
        if spec.moments:
            sums[spec.key] = _core.release_sums(statistics.sums[spec.key], _r2.SENSITIVITY, share, noise)
    for spec in specs:  # one row adds one to one bin of its group and label: L1 sensitivity 1
        if spec.histogram:
            sums[spec.key] = _core.release_table(statistics.histograms[spec.key], share, noise)
    return NoisyRelease(table=noisy, sums=sums, share=share, releases=statistics.releases)


def score_histogram(group: np.ndarray, n_groups: int, labels: np.ndarray, scores: np.ndarray, bins: int) -> np.ndarray:
    """Exact ``(n_groups, 2 bins)`` counts: negatives' score bins, then positives'.  ``scores`` are bin numbers."""
    flat = group * 2 * bins + labels * bins + scores
    return np.bincount(flat, minlength=2 * bins * n_groups).reshape(n_groups, 2 * bins)
