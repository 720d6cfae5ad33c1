"""Fairness metrics used by every dpfair experiment.

All functions accept numpy arrays, lists or pandas objects (rows match by position: pandas
indexes are ignored) and any number of groups.  Group labels may be of any hashable type,
mixed types included (``["a", 1]`` are two groups, and ``1`` and ``"1"`` are different
labels); results keyed by group are ordered by sorted label, labels of types that do not
compare being ordered by type name first.  Invalid input raises :class:`ValueError` or
:class:`TypeError` naming the argument.
"""

from __future__ import annotations

import itertools
import numbers
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


def _to_array(values: Any, name: str, *, dtype: Any = None) -> np.ndarray:
    """``values`` (array-like or pandas object) as an ndarray, positionally (pandas indexes are ignored)."""
    if isinstance(values, (str, bytes)):
        raise TypeError(f"{name} must be array-like, got a single {type(values).__name__}.")
    if hasattr(values, "to_numpy"):
        values = values.to_numpy()
    try:
        return np.asarray(values, dtype=dtype)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be a 1-dimensional array-like (ragged or odd input): {exc}") from None


def _numeric(values: Any, name: str, *, ndim: int | None = None, allow_bool: bool = False) -> np.ndarray:
    """A finite float array of real numbers (:func:`~dpfair._validation.as_finite_array`); missing values are named.

    Strings are refused (never parsed), booleans unless ``allow_bool``; ``None``, ``pd.NA`` and ``pd.NaT`` in an
    object array are a :class:`ValueError` (missing values), ragged input a :class:`TypeError`.
    """
    arr = _to_array(values, name)
    if arr.dtype.kind == "O":
        for item in arr.flat:  # up to the first item that is not a real number: as_finite_array names it
            if item is None or item is pd.NA or item is pd.NaT:
                raise ValueError(f"{name} contains missing values; remove or impute them first.")
            if isinstance(item, np.bool_) and allow_bool:  # a numpy bool is no numbers.Real
                raise TypeError(f"{name} must hold real numbers only, found {type(item).__name__}.")
            if (isinstance(item, bool) and not allow_bool) or not isinstance(item, numbers.Real):
                break
    elif arr.dtype.kind not in "biuf":
        raise TypeError(f"{name} must hold real numbers, got dtype {arr.dtype} (strings, datetimes, complex are refused).")
    return as_finite_array(arr, name, ndim=ndim, allow_bool=allow_bool)


def _labels(values: Any, name: str) -> np.ndarray:
    """Group labels as a 1-d array that keeps each label's type (``["a", 1]`` stays a str and an int)."""
    if isinstance(values, np.ndarray) or hasattr(values, "to_numpy"):
        arr = _to_array(values, name)
    else:  # a list: numpy would turn ["a", 1] into the strings "a" and "1"
        arr = _to_array(values, name, dtype=object)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-dimensional (one group label per row), got shape {arr.shape}.")
    if arr.size == 0:
        raise ValueError(f"{name} is empty; pass one group label per row.")
    if arr.dtype.kind == "V":
        raise TypeError(f"{name} must hold group labels (str, int, ...), got the structured dtype {arr.dtype}.")
    if pd.isna(arr).any():
        raise ValueError(f"{name} contains missing values; give every row a group.")
    return arr


def _sorted_order(uniques: list[Any]) -> list[int]:
    """Positions of ``uniques`` in sorted order; labels of types that do not compare are sorted by type name first."""
    positions = list(range(len(uniques)))
    try:
        return sorted(positions, key=lambda i: uniques[i])
    except TypeError:
        pass
    by_type: dict[str, list[int]] = {}
    for i in positions:
        by_type.setdefault(type(uniques[i]).__name__, []).append(i)
    order: list[int] = []
    for type_name in sorted(by_type):
        members = by_type[type_name]
        try:
            order += sorted(members, key=lambda i: uniques[i])
        except TypeError:
            order += sorted(members, key=lambda i: repr(uniques[i]))
    return order


def _encode(*label_arrays: tuple[np.ndarray, str]) -> tuple[list[Any], list[np.ndarray]]:
    """Sorted distinct labels of all the arrays together, and each array's codes into them."""
    joined = np.concatenate([np.asarray(arr, dtype=object) for arr, _ in label_arrays])
    try:
        codes, uniques = pd.factorize(joined)
    except TypeError as exc:
        names = " and ".join(name for _, name in label_arrays)
        raise TypeError(f"{names} must hold hashable group labels (str, int, float, ...): {exc}.") from None
    uniques = list(uniques)
    order = _sorted_order(uniques)
    rank = np.empty(len(order), dtype=np.intp)
    rank[order] = np.arange(len(order))
    codes = rank[codes]
    splits = np.cumsum([arr.size for arr, _ in label_arrays])[:-1]
    return [uniques[i] for i in order], np.split(codes, splits)


def _binary(values: Any, name: str) -> np.ndarray:
    arr = _numeric(values, name, ndim=1, allow_bool=True)
    if not np.isin(arr, (0.0, 1.0)).all():
        raise ValueError(f"{name} must contain only 0 and 1.")
    return arr.astype(int)


def group_rates(y_true: Any, y_pred: Any, sensitive_features: Any) -> pd.DataFrame:
    """Per-group true-positive rate, false-positive rate and selection rate.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,) with values in {0, 1}
        True labels (bool, int or float; pandas indexes are ignored, rows match by position).
    y_pred : array-like of shape (n_samples,) with values in {0, 1}
        Decisions.
    sensitive_features : array-like of shape (n_samples,)
        Group label of each row; any hashable labels, of mixed types too (``["a", 1]``).

    Returns
    -------
    pandas.DataFrame
        One row per group, indexed by label in sorted order (labels of types that do not
        compare are ordered by type name first), with columns ``tpr``, ``fpr``,
        ``selection_rate``, ``count``, ``positives`` and ``negatives``.  ``tpr`` is NaN for a
        group without positives and ``fpr`` for a group without negatives (the rate is
        undefined); every other entry is finite.

    Raises
    ------
    ValueError
        If an input is empty, not 1-dimensional, holds values other than 0 and 1 (labels) or
        missing values, or if the lengths differ.
    TypeError
        If ``y_true`` or ``y_pred`` is not numeric, or a group label is not hashable.
    """
    y = _binary(y_true, "y_true")
    yhat = _binary(y_pred, "y_pred")
    groups = _labels(sensitive_features, "sensitive_features")
    if not (y.size == yhat.size == groups.size):
        raise ValueError(
            f"y_true, y_pred and sensitive_features must have the same length, got {y.size}, {yhat.size}, {groups.size}."
        )
    labels, (codes,) = _encode((groups, "sensitive_features"))
    n_groups = len(labels)
    count = np.bincount(codes, minlength=n_groups)
    positives = np.bincount(codes, weights=y, minlength=n_groups)
    negatives = count - positives
    selected = np.bincount(codes, weights=yhat, minlength=n_groups)
    true_positives = np.bincount(codes, weights=y * yhat, minlength=n_groups)
    false_positives = selected - true_positives
    with np.errstate(invalid="ignore", divide="ignore"):
        tpr = np.where(positives > 0, true_positives / positives, np.nan)
        fpr = np.where(negatives > 0, false_positives / negatives, np.nan)
    return pd.DataFrame(
        {
            "tpr": tpr,
            "fpr": fpr,
            "selection_rate": selected / count,
            "count": count.astype(np.int64),
            "positives": positives.astype(np.int64),
            "negatives": negatives.astype(np.int64),
        },
        index=pd.Index(labels, tupleize_cols=False),
    )


def _max_gap(table: pd.DataFrame, columns: list[str], reference_group: Any, what: str) -> float:
    """Largest gap in ``columns`` between groups, ignoring undefined (NaN) rates; see the public docstrings."""
    values = table[columns].to_numpy(float)
    labels = list(table.index)
    if reference_group is None:
        if len(labels) < 2:
            return 0.0
        gaps = [
            float(np.max(col[~np.isnan(col)]) - np.min(col[~np.isnan(col)]))
            for col in values.T
            if np.count_nonzero(~np.isnan(col)) >= 2
        ]
    else:
        try:
            position = labels.index(reference_group)
        except TypeError as exc:
            raise TypeError(f"reference_group must be a group label, got {type(reference_group).__name__}: {exc}.") from None
        except ValueError:
            raise ValueError(f"reference_group {reference_group!r} is not among the groups {labels}.") from None
        with np.errstate(invalid="ignore"):
            diffs = np.abs(values - values[position][None, :])
        gaps = [float(np.max(col[~np.isnan(col)])) for col in diffs.T if np.any(~np.isnan(col))]
    if not gaps:
        raise ValueError(
            f"the {what} gap is undefined: no two groups (or no group and reference_group) both have rows to compare; "
            "y_true needs positives (for the true-positive rate) or negatives (for the false-positive rate) in each."
        )
    return max(gaps)


def equalized_odds_difference(y_true: Any, y_pred: Any, sensitive_features: Any, *, reference_group: Any = None) -> float:
    """Largest gap in true-positive or false-positive rate between groups.

    With ``reference_group=None`` the maximum is over every pair of groups (fairlearn's
    definition); with a reference group it is over the gaps between each group and that
    group (the classification paper's constraints compare each group with one group).
    A rate that is undefined for a group (no positives, or no negatives) is left out of
    the comparisons.

    Parameters
    ----------
    y_true, y_pred : array-like of shape (n_samples,) with values in {0, 1}
        Labels and decisions.
    sensitive_features : array-like of shape (n_samples,)
        Group label of each row.
    reference_group : hashable, optional
        Compare every group with this one instead of every pair.

    Returns
    -------
    float
        The gap, in [0, 1]; 0.0 when there is a single group.

    Raises
    ------
    ValueError
        On invalid input (see :func:`group_rates`), an unknown ``reference_group``, or when no
        rate is defined for two groups.
    TypeError
        If an input has the wrong type.
    """
    return _max_gap(group_rates(y_true, y_pred, sensitive_features), ["tpr", "fpr"], reference_group, "equalized odds")


def equal_opportunity_difference(y_true: Any, y_pred: Any, sensitive_features: Any, *, reference_group: Any = None) -> float:
    """Largest gap in true-positive rate (pairwise, or against ``reference_group``).

    Groups without positives have no true-positive rate and are left out.

    Parameters
    ----------
    y_true, y_pred : array-like of shape (n_samples,) with values in {0, 1}
        Labels and decisions.
    sensitive_features : array-like of shape (n_samples,)
        Group label of each row.
    reference_group : hashable, optional
        Compare every group with this one instead of every pair.

    Returns
    -------
    float
        The gap, in [0, 1]; 0.0 when there is a single group.

    Raises
    ------
    ValueError
        On invalid input (see :func:`group_rates`), an unknown ``reference_group``, or when
        fewer than two groups (or not the reference group) have positives.
    TypeError
        If an input has the wrong type.
    """
    return _max_gap(group_rates(y_true, y_pred, sensitive_features), ["tpr"], reference_group, "equal opportunity")


def demographic_parity_difference(y_pred: Any, sensitive_features: Any, *, reference_group: Any = None) -> float:
    """Largest gap in selection rate (pairwise, or against ``reference_group``).

    Parameters
    ----------
    y_pred : array-like of shape (n_samples,) with values in {0, 1}
        Decisions.
    sensitive_features : array-like of shape (n_samples,)
        Group label of each row.
    reference_group : hashable, optional
        Compare every group with this one instead of every pair.

    Returns
    -------
    float
        The gap, in [0, 1]; 0.0 when there is a single group.

    Raises
    ------
    ValueError
        On invalid input (see :func:`group_rates`) or an unknown ``reference_group``.
    TypeError
        If an input has the wrong type.
    """
    yhat = _binary(y_pred, "y_pred")
    table = group_rates(np.zeros_like(yhat), yhat, sensitive_features)
    return _max_gap(table, ["selection_rate"], reference_group, "demographic parity")


def ks_distance(sample_a: Any, sample_b: Any) -> float:
    """Exact two-sample Kolmogorov-Smirnov distance ``sup_t |F_a(t) - F_b(t)|``.

    Parameters
    ----------
    sample_a, sample_b : array-like of shape (n_a,) and (n_b,)
        Finite real samples (the lengths may differ).

    Returns
    -------
    float
        The distance, in [0, 1]; equals ``scipy.stats.ks_2samp(a, b).statistic``.

    Raises
    ------
    ValueError
        If a sample is empty, not 1-dimensional, or holds NaN or infinite values.
    TypeError
        If a sample is not numeric.
    """
    a = np.sort(_numeric(sample_a, "sample_a", ndim=1))
    b = np.sort(_numeric(sample_b, "sample_b", ndim=1))
    return _ks_sorted(a, b)


def _ks_sorted(a: np.ndarray, b: np.ndarray) -> float:
    grid = np.concatenate([a, b])
    fa = np.searchsorted(a, grid, side="right") / a.size
    fb = np.searchsorted(b, grid, side="right") / b.size
    return float(np.max(np.abs(fa - fb)))


def _pmf(values: Any, name: str) -> np.ndarray:
    p = _numeric(values, name, ndim=1)
    with np.errstate(over="ignore"):
        total = p.sum()
    if (p < 0).any() or not np.isclose(total, 1.0, atol=1e-8):
        raise ValueError(f"{name} must be non-negative and sum to 1 (sums to {total:.6g}).")
    return p


def ks_distance_histograms(pmf_a: Any, pmf_b: Any) -> float:
    """KS distance between two distributions on the same ordered support (max CDF gap).

    Parameters
    ----------
    pmf_a, pmf_b : array-like of shape (n_bins,)
        Probability mass functions on a common, ordered support: non-negative, summing to 1.

    Returns
    -------
    float
        ``max_k |sum_{j <= k} pmf_a[j] - sum_{j <= k} pmf_b[j]|``, in [0, 1].

    Raises
    ------
    ValueError
        If a PMF is empty, not 1-dimensional, not finite, negative, does not sum to 1, or
        if the lengths differ.
    TypeError
        If a PMF is not numeric.
    """
    pa = _pmf(pmf_a, "pmf_a")
    pb = _pmf(pmf_b, "pmf_b")
    if pa.shape != pb.shape:
        raise ValueError(f"pmf_a and pmf_b must have the same length, got {pa.size} and {pb.size}.")
    return float(np.max(np.abs(np.cumsum(pa) - np.cumsum(pb))))


def statistical_parity_ks(predictions: Any, sensitive_features: Any) -> float:
    """Statistical-parity violation of a regressor: max pairwise KS distance between groups.

    ``max_{a, b} sup_t |P(f(X) <= t | A=a) - P(f(X) <= t | A=b)|`` on the given sample.

    Parameters
    ----------
    predictions : array-like of shape (n_samples,)
        Finite real predictions.
    sensitive_features : array-like of shape (n_samples,)
        Group label of each row (any hashable labels, of mixed types too).

    Returns
    -------
    float
        The largest KS distance over pairs of groups, in [0, 1]; 0.0 with a single group.

    Raises
    ------
    ValueError
        If an input is empty, not 1-dimensional, holds NaN or infinite predictions or
        missing labels, or if the lengths differ.
    TypeError
        If ``predictions`` is not numeric or a label is not hashable.
    """
    pred = _numeric(predictions, "predictions", ndim=1)
    groups = _labels(sensitive_features, "sensitive_features")
    if pred.size != groups.size:
        raise ValueError(f"predictions and sensitive_features differ in length ({pred.size} vs {groups.size}).")
    labels, (codes,) = _encode((groups, "sensitive_features"))
    samples = [np.sort(pred[codes == k]) for k in range(len(labels))]
    return max((_ks_sorted(a, b) for a, b in itertools.combinations(samples, 2)), default=0.0)


def statistical_parity_ks_histograms(pmfs: Any) -> float:
    """Max pairwise KS distance between group PMFs on a common support.

    Parameters
    ----------
    pmfs : array-like of shape (n_groups, n_bins)
        One probability mass function per row (non-negative, summing to 1).

    Returns
    -------
    float
        ``max_k (max_g CDF_g[k] - min_g CDF_g[k])``, in [0, 1]; 0.0 with a single row.

    Raises
    ------
    ValueError
        If ``pmfs`` is empty, not 2-dimensional or not finite, or a row is not a PMF.
    TypeError
        If ``pmfs`` is not numeric.
    """
    p = _numeric(pmfs, "pmfs", ndim=2)
    for i, row in enumerate(p):
        _pmf(row, f"pmfs[{i}]")
    cdfs = np.cumsum(p, axis=1)
    return float(np.max(cdfs.max(axis=0) - cdfs.min(axis=0)))


def relative_rank(values: Any, groups: Any, reference_values: Any, reference_groups: Any) -> np.ndarray:
    """Group-meritocratic relative rank: the empirical CDF of each value within its group.

    ``rank_i = #{j in G_i : reference_values[j] <= values[i]} / #G_i`` where ``G_i`` is the set of
    reference rows with ``reference_groups[j] == groups[i]``.

    Parameters
    ----------
    values : array-like of shape (n_samples,)
        Finite values to rank.
    groups : array-like of shape (n_samples,)
        Group label of each value.
    reference_values : array-like of shape (n_reference,)
        Finite values that define each group's empirical CDF.
    reference_groups : array-like of shape (n_reference,)
        Group label of each reference value.

    Returns
    -------
    ndarray of shape (n_samples,)
        Relative ranks in [0, 1].

    Raises
    ------
    ValueError
        If an input is empty, not 1-dimensional or not finite (values) or has missing
        labels, if lengths do not match, or if a group of ``groups`` has no reference values.
    TypeError
        If values are not numeric or labels are not hashable.
    """
    v = _numeric(values, "values", ndim=1)
    g = _labels(groups, "groups")
    rv = _numeric(reference_values, "reference_values", ndim=1)
    rg = _labels(reference_groups, "reference_groups")
    if v.size != g.size or rv.size != rg.size:
        raise ValueError(
            "values and groups, and reference_values and reference_groups, must have matching lengths, got "
            f"{v.size} and {g.size}, {rv.size} and {rg.size}."
        )
    _, (codes, ref_codes) = _encode((g, "groups"), (rg, "reference_groups"))
    out = np.empty(v.size)
    for k in np.unique(codes):
        ref = np.sort(rv[ref_codes == k])
        if ref.size == 0:
            # the label itself is not printed: it may be private (CONTRIBUTING, rule 11)
            raise ValueError(
                "a group in groups has no reference values (no row of reference_groups carries its label); "
                "its relative rank is undefined."
            )
        mask = codes == k
        out[mask] = np.searchsorted(ref, v[mask], side="right") / ref.size
    return out


def merit_proportional_policy(merits: Any) -> np.ndarray:
    """Fairness-of-exposure policy: probabilities proportional to merit along the last axis.

    ``pi(a) = f(mu_a) / sum_a' f(mu_a')``; merits must be positive (the minimum-merit
    assumption of the fairness-of-exposure papers).

    Parameters
    ----------
    merits : array-like of shape (..., n_actions)
        Finite, positive merits ``f(mu_a)``; leading axes (rounds, agents) are kept.

    Returns
    -------
    ndarray of the same shape
        Probabilities that sum to 1 along the last axis.

    Raises
    ------
    ValueError
        If ``merits`` is empty, a scalar, not finite, or not > 0.
    TypeError
        If ``merits`` is not numeric.
    """
    f = _numeric(merits, "merits")
    if f.ndim == 0:
        raise ValueError("merits must have at least 1 dimension (the actions on the last axis), got a scalar.")
    if (f <= 0).any():
        raise ValueError("merits must be > 0 (fairness of exposure assumes a positive minimum merit).")
    scaled = f / f.max(axis=-1, keepdims=True)  # in (0, 1]: the sum cannot overflow to inf
    return scaled / scaled.sum(axis=-1, keepdims=True)


def fairness_regret(policies: Any, optimal_policies: Any) -> np.ndarray:
    """Cumulative fairness regret ``sum_t ||pi_t - pi*_t||_1`` along the first axis.

    Parameters
    ----------
    policies : array-like of shape (T, ..., n_actions)
        The played policies per round, probabilities in [0, 1] (extra axes, such as agents
        or seeds, are kept).
    optimal_policies : array-like of the same shape
        The merit-proportional policies per round.

    Returns
    -------
    ndarray of shape (T, ...)
        Running sum of the instantaneous L1 regret.

    Raises
    ------
    ValueError
        If an input is empty, has fewer than 2 dimensions, is not finite or holds values
        outside [0, 1], or if the shapes differ.
    TypeError
        If an input is not numeric.
    """
    p = _numeric(policies, "policies")
    q = _numeric(optimal_policies, "optimal_policies")
    for arr, name in ((p, "policies"), (q, "optimal_policies")):
        if arr.ndim < 2:
            raise ValueError(f"{name} must have shape (T, ..., n_actions), got shape {arr.shape}.")
        if (arr < 0).any() or (arr > 1).any():
            raise ValueError(f"{name} must hold probabilities in [0, 1].")
    if p.shape != q.shape:
        raise ValueError(f"policies and optimal_policies must have the same shape, got {p.shape} and {q.shape}.")
    return np.cumsum(np.abs(p - q).sum(axis=-1), axis=0)
