""":meth:`PrivateMetricFrame.from_counts <dpfair.metrics.PrivateMetricFrame.from_counts>`: a table of counts computed
elsewhere (SQL, DuckDB, Spark), checked, mapped to the declared groups and tabulated like the rows."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from dpfair.metrics._rows import as_1d, binary, resolve_rows

__all__ = ["tabulate_counts", "validate_counts"]


def validate_counts(
    extra: dict[str, Any], groups: Any, undeclared: str, epsilon: float, counts: Any, sensitive: Any, control: Any,
    y_true: Any, y_pred: Any, count: Any,
) -> dict[str, Any]:
    """The table of counts, checked and mapped to the declared groups (``extra``: the checked parameters)."""
    if extra["reals"]:
        raise ValueError(
            f"from_counts computes count-based metrics only; {extra['reals']} need per-row values: build the "
            "frame from the rows instead."
        )
    if hasattr(counts, "toPandas") and not isinstance(counts, pd.DataFrame):
        counts = counts.toPandas()  # a pyspark DataFrame of counts: one row per cell, small
    if not isinstance(counts, pd.DataFrame):
        raise TypeError(f"counts must be a pandas DataFrame of counts (one row per cell), got {type(counts).__name__}.")
    names = [sensitive] if isinstance(sensitive, str) else list(sensitive) if sensitive is not None else []
    controls = [] if control is None else [control] if isinstance(control, str) else list(control)
    if not names or not all(isinstance(n, str) for n in names + controls):
        raise ValueError("sensitive_features must name the column(s) of counts that hold the sensitive features.")
    for option, column in [("y_true", y_true), ("y_pred", y_pred), ("count", count)] + [
        ("sensitive_features", n) for n in names
    ] + [("control_features", n) for n in controls]:
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
    data: dict[str, Any] = {
        "labels_true": binary(as_1d(counts[y_true], "y_true"), "y_true", extra["counts"], extra["pos_label"]),
        "labels_pred": binary(as_1d(counts[y_pred], "y_pred"), "y_pred", extra["counts"], extra["pos_label"]),
        "values_true": None, "values_pred": None,
    }
    data.update(resolve_rows(groups, undeclared, columns, control_columns, epsilon))
    data["weights"] = n.astype(np.int64)
    return data


def tabulate_counts(data: dict[str, Any], n_groups: int) -> np.ndarray:
    """The exact ``(n_groups, 4)`` table of a checked table of counts (repeated combinations are added)."""
    flat = data["group"] * 4 + 2 * data["labels_true"] + data["labels_pred"]
    counts = np.bincount(flat, weights=data["weights"].astype(float), minlength=4 * n_groups)
    return np.rint(counts).astype(np.int64).reshape(n_groups, 4)
