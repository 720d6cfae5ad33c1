""":meth:`PrivateMetricFrame.from_counts <dpfair.metrics.PrivateMetricFrame.from_counts>`: a table of counts computed
elsewhere (SQL, DuckDB, Spark), checked, mapped to the declared groups and tabulated like the rows."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from dpfair.metrics._rows import as_1d, binary, resolve_rows
from dpfair.metrics._stages import FrameOptions, Rows

__all__ = ["tabulate_counts", "validate_counts"]


def validate_counts(
    options: FrameOptions, groups: Any, undeclared: str, epsilon: float, counts: Any, sensitive: Any, control: Any,
    y_true: Any, y_pred: Any, count: Any, sums: Any = None,
) -> Rows:
    """The table of counts, checked and mapped to the declared groups (``options``: the checked parameters).

    ``sums`` maps every real-valued metric's key to the column holding, for each cell, the exact sum over its rows
    of the metric's per-row value (:func:`dpfair.metrics._core.per_row_values`); each must lie in
    ``[0, width x count]`` (the declared ``bounds``), else it is refused by name before anything is charged.
    ``r2_score`` takes three columns (a list): each cell's sums of ``rho``, ``v`` and ``v ** 2``
    (:func:`dpfair.metrics._r2.per_row`), in ``[0, count]``, ``[-count, count]`` and ``[0, count]``.
    """
    if hasattr(counts, "toPandas") and not isinstance(counts, pd.DataFrame):
        counts = counts.toPandas()  # a pyspark DataFrame of counts: one row per cell, small
    if hasattr(counts, "compute") and not isinstance(counts, pd.DataFrame):
        counts = counts.compute()  # a Dask DataFrame of counts (one row per cell): small
    if not isinstance(counts, pd.DataFrame):
        raise TypeError(f"counts must be a pandas DataFrame of counts (one row per cell), got {type(counts).__name__}.")
    reals = [spec for spec in options.specs if spec.real or spec.moments]
    sums = dict(sums or {})
    if not isinstance(sums, dict) or set(sums) != {spec.key for spec in reals}:
        raise ValueError(
            f"sums must map every real-valued metric {[spec.key for spec in reals]} to its column of per-cell sums "
            "(and nothing else)."
        )
    names = [sensitive] if isinstance(sensitive, str) else list(sensitive) if sensitive is not None else []
    controls = [] if control is None else [control] if isinstance(control, str) else list(control)
    if not names or not all(isinstance(n, str) for n in names + controls):
        raise ValueError("sensitive_features must name the column(s) of counts that hold the sensitive features.")
    labelled = bool(options.counts)
    for option, column in ([("y_true", y_true), ("y_pred", y_pred)] if labelled else []) + [("count", count)] + [
        ("sensitive_features", n) for n in names
    ] + [("control_features", n) for n in controls] + [
        (f"sums[{k!r}]", c) for k, cs in sums.items() for c in (cs if isinstance(cs, list | tuple) else [cs])
    ]:
        if not isinstance(column, str) or column not in counts.columns:
            raise ValueError(
                f"{option}: column {column!r} is not in counts; its columns are {list(map(str, counts.columns))}."
            )
    if counts.shape[0] == 0:
        raise ValueError("counts is empty; pass the table of counts (one row per cell).")
    n = counts[count].to_numpy()
    if n.dtype.kind not in "iuf" or not np.isfinite(n.astype(float)).all() or (n < 0).any() or (n != np.floor(n)).any():
        raise ValueError(f"count: column {count!r} must hold non-negative whole numbers of rows.")
    columns = [(name, counts[name].to_numpy()) for name in names]
    control_columns = [(name, counts[name].to_numpy()) for name in controls]
    labels_true = labels_pred = None
    if labelled:
        labels_true = binary(as_1d(counts[y_true], "y_true"), "y_true", options.counts, options.pos_label)
        labels_pred = binary(as_1d(counts[y_pred], "y_pred"), "y_pred", options.counts, options.pos_label)
    cell_sums: dict[str, np.ndarray] = {}
    for spec in reals:
        if spec.moments:
            cell_sums[spec.key] = _moment_sums(counts, spec.key, sums[spec.key], n)
            continue
        column = sums[spec.key]
        values = counts[column].to_numpy()
        if values.dtype.kind not in "iuf" or not np.isfinite(values.astype(float)).all():
            raise ValueError(f"sums[{spec.key!r}]: column {column!r} must hold finite numbers.")
        values = values.astype(float)
        slack = 1e-9 * spec.width * np.maximum(n, 1)
        if (values < -slack).any() or (values > spec.width * n + slack).any():
            raise ValueError(
                f"sums[{spec.key!r}]: column {column!r} holds sums outside [0, width x count] for the declared bounds "
                f"(per-row values of {spec.name} lie in [0, {spec.width:g}]); compute them from values inside bounds."
            )
        cell_sums[spec.key] = np.clip(values, 0.0, spec.width * n)
    grouping = resolve_rows(groups, undeclared, columns, control_columns, epsilon)
    return Rows(grouping=grouping, labels_true=labels_true, labels_pred=labels_pred, cell_counts=n.astype(np.int64),
                cell_sums=cell_sums)


def _moment_sums(counts: pd.DataFrame, key: str, columns: Any, n: np.ndarray) -> np.ndarray:
    """``(cells, 3)``: the checked per-cell sums of ``r2_score``'s ``(rho, v, v ** 2)`` (three columns of counts)."""
    if not isinstance(columns, list | tuple) or len(columns) != 3:
        raise ValueError(f"sums[{key!r}]: r2_score needs a list of three columns: each cell's sums of rho, v and v ** 2 "
                         "(dpfair.metrics._r2.per_row: squared residual and centred y_true, in units of bounds).")
    out = []
    for column, low in zip(columns, (0.0, -1.0, 0.0), strict=True):
        values = counts[column].to_numpy()
        if values.dtype.kind not in "iuf" or not np.isfinite(values.astype(float)).all():
            raise ValueError(f"sums[{key!r}]: column {column!r} must hold finite numbers.")
        values, slack = values.astype(float), 1e-9 * np.maximum(n, 1)
        if (values < low * n - slack).any() or (values > n + slack).any():
            raise ValueError(f"sums[{key!r}]: column {column!r} holds sums outside [{low:g} x count, count]: compute "
                             "them from values inside the declared bounds.")
        out.append(np.clip(values, low * n, n))
    return np.stack(out, axis=-1)


def tabulate_counts(rows: Rows) -> np.ndarray:
    """The exact table of a checked table of counts: ``(n_groups, 4)`` cells, or ``(n_groups, 1)`` group sizes
    without labels (repeated combinations are added)."""
    group, n_groups = rows.grouping.group, rows.grouping.n_groups
    assert rows.cell_counts is not None
    weights = rows.cell_counts.astype(float)
    if rows.labels_true is None:
        counts = np.bincount(group, weights=weights, minlength=n_groups)
        return np.rint(counts).astype(np.int64).reshape(n_groups, 1)
    flat = group * 4 + 2 * rows.labels_true + rows.labels_pred
    counts = np.bincount(flat, weights=weights, minlength=4 * n_groups)
    return np.rint(counts).astype(np.int64).reshape(n_groups, 4)
