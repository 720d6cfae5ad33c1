"""Fairness metrics used by every dpfair experiment.

All functions accept numpy arrays or pandas objects and any number of groups.  Group
labels may be of any hashable type; results keyed by group are ordered by sorted label.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pandas as pd

from dpfair._validation import as_finite_array

__all__ = [
    "demographic_parity_difference",
    "equal_opportunity_difference",
    "equalized_odds_difference",
    "fairness_regret",
    "group_rates",
    "ks_distance",
    "ks_distance_histograms",
    "merit_proportional_policy",
    "relative_rank",
    "statistical_parity_ks",
    "statistical_parity_ks_histograms",
]


def _labels(values: Any, name: str) -> np.ndarray:
    arr = values.to_numpy() if hasattr(values, "to_numpy") else np.asarray(values)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-dimensional, got shape {arr.shape}.")
    if arr.size == 0:
        raise ValueError(f"{name} is empty.")
    if pd.isna(arr).any():
        raise ValueError(f"{name} contains missing values; give every row a group.")
    return arr


def _binary(values: Any, name: str) -> np.ndarray:
    arr = as_finite_array(values, name, ndim=1)
    if not np.isin(arr, (0.0, 1.0)).all():
        raise ValueError(f"{name} must contain only 0 and 1.")
    return arr.astype(int)


def group_rates(y_true: Any, y_pred: Any, sensitive_features: Any) -> pd.DataFrame:
    """Per-group true-positive rate, false-positive rate and selection rate.

    Parameters
    ----------
    y_true, y_pred : array-like of {0, 1}
        Labels and decisions.
    sensitive_features : array-like
        Group of each row.

    Returns
    -------
    pandas.DataFrame
        Indexed by group, columns ``tpr``, ``fpr``, ``selection_rate``, ``count``,
        ``positives``, ``negatives``.  A rate with no rows to condition on is NaN.
    """
    y = _binary(y_true, "y_true")
    yhat = _binary(y_pred, "y_pred")
    groups = _labels(sensitive_features, "sensitive_features")
    if not (y.size == yhat.size == groups.size):
        raise ValueError(
            f"y_true, y_pred and sensitive_features must have the same length, got {y.size}, {yhat.size}, {groups.size}."
        )
    frame = pd.DataFrame({"y": y, "yhat": yhat, "g": groups})
    rows = {}
    for g, sub in frame.groupby("g", sort=True):
        pos = sub["y"] == 1
        neg = ~pos
        rows[g] = {
            "tpr": sub.loc[pos, "yhat"].mean() if pos.any() else np.nan,
            "fpr": sub.loc[neg, "yhat"].mean() if neg.any() else np.nan,
            "selection_rate": sub["yhat"].mean(),
            "count": len(sub),
            "positives": int(pos.sum()),
            "negatives": int(neg.sum()),
        }
    return pd.DataFrame.from_dict(rows, orient="index")


def _max_gap(table: pd.DataFrame, columns: list[str], reference_group: Any) -> float:
    values = table[columns]
    if reference_group is None:
        gaps = [
            float(np.nanmax(np.abs(values.loc[a].to_numpy() - values.loc[b].to_numpy())))
            for a, b in itertools.combinations(values.index, 2)
        ]
        return max(gaps) if gaps else 0.0
    if reference_group not in values.index:
        raise ValueError(f"reference_group {reference_group!r} is not among the groups {list(values.index)}.")
    ref = values.loc[reference_group].to_numpy()
    return float(np.nanmax(np.abs(values.to_numpy() - ref[None, :])))


def equalized_odds_difference(
    y_true: Any, y_pred: Any, sensitive_features: Any, *, reference_group: Any = None
) -> float:
    """Largest gap in TPR or FPR.

    With ``reference_group=None`` the maximum is over every pair of groups (fairlearn's
    definition); with a reference group it is over the gaps between each group and that
    group (the classification paper's constraints compare each group with one group).
    """
    return _max_gap(group_rates(y_true, y_pred, sensitive_features), ["tpr", "fpr"], reference_group)


def equal_opportunity_difference(
    y_true: Any, y_pred: Any, sensitive_features: Any, *, reference_group: Any = None
) -> float:
    """Largest gap in true-positive rate (pairwise, or against ``reference_group``)."""
    return _max_gap(group_rates(y_true, y_pred, sensitive_features), ["tpr"], reference_group)


def demographic_parity_difference(
    y_pred: Any, sensitive_features: Any, *, reference_group: Any = None
) -> float:
    """Largest gap in selection rate (pairwise, or against ``reference_group``)."""
    yhat = _binary(y_pred, "y_pred")
    table = group_rates(np.zeros_like(yhat), yhat, sensitive_features)
    return _max_gap(table, ["selection_rate"], reference_group)


def ks_distance(sample_a: Any, sample_b: Any) -> float:
    """Exact two-sample Kolmogorov-Smirnov distance ``sup_t |F_a(t) - F_b(t)|``."""
    a = np.sort(as_finite_array(sample_a, "sample_a", ndim=1))
    b = np.sort(as_finite_array(sample_b, "sample_b", ndim=1))
    grid = np.concatenate([a, b])
    fa = np.searchsorted(a, grid, side="right") / a.size
    fb = np.searchsorted(b, grid, side="right") / b.size
    return float(np.max(np.abs(fa - fb)))


def ks_distance_histograms(pmf_a: Any, pmf_b: Any) -> float:
    """KS distance between two distributions on the same ordered support (max CDF gap)."""
    pa = _pmf(pmf_a, "pmf_a")
    pb = _pmf(pmf_b, "pmf_b")
    if pa.shape != pb.shape:
        raise ValueError(f"pmf_a and pmf_b must have the same length, got {pa.size} and {pb.size}.")
    return float(np.max(np.abs(np.cumsum(pa) - np.cumsum(pb))))


def _pmf(values: Any, name: str) -> np.ndarray:
    p = as_finite_array(values, name, ndim=1)
    if (p < 0).any() or not np.isclose(p.sum(), 1.0, atol=1e-8):
        raise ValueError(f"{name} must be non-negative and sum to 1 (sums to {p.sum():.6g}).")
    return p


def statistical_parity_ks(predictions: Any, sensitive_features: Any) -> float:
    """Statistical-parity violation of a regressor: max pairwise KS distance between groups.

    ``max_{a, b} sup_t |P(f(X) <= t | A=a) - P(f(X) <= t | A=b)|`` on the given sample.
    """
    pred = as_finite_array(predictions, "predictions", ndim=1)
    groups = _labels(sensitive_features, "sensitive_features")
    if pred.size != groups.size:
        raise ValueError(f"predictions and sensitive_features differ in length ({pred.size} vs {groups.size}).")
    labels = np.unique(groups)
    return max((ks_distance(pred[groups == a], pred[groups == b]) for a, b in itertools.combinations(labels, 2)), default=0.0)


def statistical_parity_ks_histograms(pmfs: Any) -> float:
    """Max pairwise KS distance between group PMFs on a common support (rows = groups)."""
    p = as_finite_array(pmfs, "pmfs", ndim=2)
    cdfs = np.cumsum(p, axis=1)
    for i, row in enumerate(p):
        _pmf(row, f"pmfs[{i}]")
    return float(np.max(cdfs.max(axis=0) - cdfs.min(axis=0)))


def relative_rank(values: Any, groups: Any, reference_values: Any, reference_groups: Any) -> np.ndarray:
    """Group-meritocratic relative rank: the empirical CDF of each value within its group.

    ``rank_i = #{j in G_i : reference_values[j] <= values[i]} / #G_i`` where ``G_i`` is the set of
    reference rows with ``reference_groups[j] == groups[i]``.
    A group with no reference values raises.
    """
    v = as_finite_array(values, "values", ndim=1)
    g = _labels(groups, "groups")
    rv = as_finite_array(reference_values, "reference_values", ndim=1)
    rg = _labels(reference_groups, "reference_groups")
    if v.size != g.size or rv.size != rg.size:
        raise ValueError("values/groups and reference_values/reference_groups must have matching lengths.")
    out = np.empty(v.size)
    for label in np.unique(g):
        ref = np.sort(rv[rg == label])
        if ref.size == 0:
            raise ValueError(f"group {label!r} has no reference values; its relative rank is undefined.")
        mask = g == label
        out[mask] = np.searchsorted(ref, v[mask], side="right") / ref.size
    return out


def merit_proportional_policy(merits: Any) -> np.ndarray:
    """Fairness-of-exposure policy: probabilities proportional to merit along the last axis.

    ``pi(a) = f(mu_a) / sum_a' f(mu_a')``; merits must be positive (the minimum-merit
    assumption of the fairness-of-exposure papers).
    """
    f = as_finite_array(merits, "merits")
    if (f <= 0).any():
        raise ValueError("merits must be > 0 (fairness of exposure assumes a positive minimum merit).")
    return f / f.sum(axis=-1, keepdims=True)


def fairness_regret(policies: Any, optimal_policies: Any) -> np.ndarray:
    """Cumulative fairness regret ``sum_t ||pi_t - pi*_t||_1`` along the first axis.

    Parameters
    ----------
    policies, optimal_policies : array-like of shape (T, ..., n_actions)
        The played and the merit-proportional policies per round (extra axes, such as
        agents or seeds, are kept).

    Returns
    -------
    ndarray of shape (T, ...)
        Running sum of the instantaneous L1 regret.
    """
    p = as_finite_array(policies, "policies")
    q = as_finite_array(optimal_policies, "optimal_policies")
    if p.shape != q.shape:
        raise ValueError(f"policies and optimal_policies must have the same shape, got {p.shape} and {q.shape}.")
    return np.cumsum(np.abs(p - q).sum(axis=-1), axis=0)
