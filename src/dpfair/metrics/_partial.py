"""The table of counts of :meth:`PrivateMetricFrame.from_counts <dpfair.metrics.PrivateMetricFrame.from_counts>` from
partitions of the rows: one partial table per partition (on any worker: a Dask or Ray task, a process pool), added
up.  Nothing here is private: the exact table goes to ``from_counts``, which releases it."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd

__all__ = ["add_count_tables", "count_table"]

#: per-row value of each real-valued metric (as :func:`dpfair.metrics._core.per_row_values`), from (y_true, y_pred, lo)
_PER_ROW = {
    "mean_squared_error": lambda t, p, lo: (t - p) ** 2,
    "mean_absolute_error": lambda t, p, lo: np.abs(t - p),
    "mean_prediction": lambda t, p, lo: p - lo,
}


def count_table(
    rows: pd.DataFrame, *, sensitive_features: list[str], y_true: str, y_pred: str, sums: dict[str, str] | None = None,
    bounds: tuple[float, float] | None = None, count: str = "count", labels: bool = True,
) -> pd.DataFrame:
    """The exact table of counts of one partition of the rows: one row per (sensitive..., y_true, y_pred) cell.

    Parameters
    ----------
    rows : pandas.DataFrame
        One partition of the rows.
    sensitive_features : list of str
        The columns of the sensitive (and control) features; their labels are kept as text, trimmed (as
        ``dpfair assess`` reads them).
    y_true, y_pred : str
        The columns of the labels (kept as given: ``from_counts`` checks them) and, for ``sums``, of the values.
    sums : dict of str to str, optional
        ``{output column: real-valued metric name}``: each cell's sum of that metric's per-row value.  A value outside
        ``bounds`` raises (naming the column, never the value).
    bounds : (float, float), optional
        The declared range of ``y_true`` and ``y_pred`` (required with ``sums``).
    count : str, default "count"
        The name of the count column.
    labels : bool, default True
        Keep the labels as cells (the count-based metrics need them); ``False`` (real-valued metrics only) sets both
        label columns to 0, so that a cell is a group.

    Returns
    -------
    pandas.DataFrame
        Columns ``sensitive_features + [y_true, y_pred, count] + list(sums)``, as ``from_counts`` takes them.
    """
    sums = dict(sums or {})
    frame = pd.DataFrame({name: rows[name].astype(str).str.strip() for name in sensitive_features})
    if labels:
        frame[y_true], frame[y_pred] = rows[y_true].to_numpy(), rows[y_pred].to_numpy()
    else:
        frame[y_true] = frame[y_pred] = 0
    frame[count] = 1
    if sums:
        if bounds is None:
            raise ValueError("bounds is required with sums: declare the public range of y_true and y_pred.")
        lo, hi = float(bounds[0]), float(bounds[1])
        t, p = (pd.to_numeric(rows[c], errors="coerce").to_numpy(dtype=float) for c in (y_true, y_pred))
        for name, values in ((y_true, t), (y_pred, p)):
            if not np.isfinite(values).all():
                raise ValueError(f"column {name!r} has missing or non-numeric values on some rows.")
            if (values < lo).any() or (values > hi).any():
                raise ValueError(f"column {name!r} holds values outside the declared bounds ({lo:g}, {hi:g}).")
        for column, metric in sums.items():
            frame[column] = _PER_ROW[metric](t, p, lo)
    keys = [*sensitive_features, y_true, y_pred]
    return frame.groupby(keys, dropna=False, sort=True).sum().reset_index()


def add_count_tables(tables: Iterable[pd.DataFrame], keys: list[str]) -> pd.DataFrame:
    """Add partial tables of :func:`count_table` (the reduce step): the counts and sums of equal cells are added.

    Parameters
    ----------
    tables : iterable of pandas.DataFrame
        Partial tables with the same columns.
    keys : list of str
        The columns that name a cell (``sensitive_features + [y_true, y_pred]``); every other column is added.

    Returns
    -------
    pandas.DataFrame
        One row per cell, sorted by cell.
    """
    tables = [t for t in tables if len(t)]
    if not tables:
        raise ValueError("add_count_tables needs at least one non-empty partial table.")
    return pd.concat(tables, ignore_index=True).groupby(keys, dropna=False, sort=True).sum().reset_index()
