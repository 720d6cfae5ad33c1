"""The noisy releases of :class:`~dpfair.metrics.PrivateMetricFrame`: how epsilon is split, the exact statistics they
release (refused before the charge if the noise would overflow), and the draws of the noise."""

from __future__ import annotations

import math
from typing import Any

from dpfair.metrics import _core
from dpfair.metrics._core import MetricSpec
from dpfair.metrics._counts import tabulate_counts
from dpfair.privacy.noise import NoiseSource

__all__ = ["draw_noise", "exact_statistics", "release_plan", "split_text"]


def release_plan(specs: list[MetricSpec], count_names: list[str], epsilon: float) -> tuple[float, list[dict[str, Any]]]:
    """``(share, releases)``: epsilon split equally between the table and each real metric's sums (``releases_``)."""
    share = epsilon / (1 + sum(spec.real for spec in specs))
    table_kind = "contingency table (group x y_true x y_pred)" if count_names else "group sizes"
    releases = [
        {"release": table_kind, "mechanism": "discrete Laplace (geometric), L1 sensitivity 1", "epsilon": share,
         "scale": _core.table_scale(share)}
    ]
    for spec in specs:
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


def exact_statistics(extra: dict[str, Any], epsilon: float, bounds: Any, data: dict[str, Any]) -> dict[str, Any]:
    """The exact table and per-group sums (not released), and the plan of the releases (refused if it overflows).

    ``extra`` holds the checked parameters, ``bounds`` the ``bounds`` argument as given (named in the refusal).
    """
    specs, group, n_groups = extra["specs"], data["group"], data["n_groups"]
    if "weights" in data:  # from_counts
        counts = tabulate_counts(data, n_groups)
    else:
        counts = _core.tabulate(group, n_groups, data["labels_true"], data["labels_pred"])
    sums = {
        spec.key: _core.group_sums(group, n_groups, _core.per_row_values(spec, data["values_true"], data["values_pred"]))
        for spec in specs
        if spec.real
    }
    share, releases = release_plan(specs, extra["counts"], epsilon)
    scale = releases[0]["scale"]
    if scale and (not math.isfinite(1000.0 * scale) or int(counts.max(initial=0)) + 1000.0 * scale >= 2.0**62):
        raise ValueError(
            f"epsilon={epsilon!r} is too small: the noise (scale {scale:.3g} per count) would overflow; use a "
            "larger epsilon."
        )
    if scale:
        for spec in specs:
            if spec.real and not math.isfinite(1000.0 * spec.width / share):
                raise ValueError(
                    f"epsilon={epsilon!r} is too small for bounds={bounds!r}: the noise would overflow."
                )
    return {"counts": counts, "sums": sums, "share": share, "releases": releases}


def draw_noise(specs: list[MetricSpec], statistics: dict[str, Any], noise: NoiseSource) -> dict[str, Any]:
    """Release the table and the sums, each at ``share`` of epsilon (nothing else is drawn from ``noise``)."""
    share = statistics["share"]
    noisy = _core.release_table(statistics["counts"], share, noise)
    sums = {
        spec.key: _core.release_sums(statistics["sums"][spec.key], spec.width, share, noise) for spec in specs if spec.real
    }
    return {**statistics, "table": noisy, "sums": sums}
