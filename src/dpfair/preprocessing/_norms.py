"""A public bound on the L2 norm of a preprocessing step's output rows: the ``data_norm`` a private model declares."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from sklearn.compose import ColumnTransformer
from sklearn.pipeline import Pipeline

__all__ = ["row_norm_bound"]


def _column_count(columns: Any) -> int | None:
    """How many columns a ColumnTransformer's selection takes, when it says so without the data."""
    if isinstance(columns, str | int):
        return 1
    if isinstance(columns, slice) or callable(columns):
        return None
    values = np.asarray(columns)
    if values.dtype.kind == "b":
        return int(values.sum())
    return int(values.size)


def row_norm_bound(transformer: Any, n_features: int | None = None) -> float:
    """The largest L2 norm of a row that ``transformer`` outputs, from its declarations alone (no data, no fit).

    A private model needs a declared bound on every row's norm (``DPLogisticRegression(data_norm=...)``); with
    the declared transformers of :mod:`dpfair.preprocessing` in front of it, that bound follows from the
    declarations: a :class:`DeclaredOneHotEncoder` adds 1 per input column to the squared norm, a
    :class:`DeclaredRangeScaler` ``max(|output low|, |output high|)^2`` per column, and so on.

    Parameters
    ----------
    transformer : transformer, Pipeline or ColumnTransformer
        A step with a ``row_norm_bound`` method, a ``Pipeline`` whose last step has one (the earlier steps change
        values, not the bound of the last step's output), or a ``ColumnTransformer`` of such steps (their squared
        bounds add; ``"drop"`` adds nothing, ``"passthrough"`` and a kept ``remainder`` are unbounded).
    n_features : int or None, default None
        The number of input columns, for a step declared with one range for all of them.

    Returns
    -------
    float
        The bound (public: it depends on the declarations only).

    Raises
    ------
    TypeError
        If a step declares no bound on its output (the message names it and the fix).
    """
    if isinstance(transformer, ColumnTransformer):
        if transformer.remainder != "drop":
            raise TypeError("the ColumnTransformer keeps its remainder columns, whose values are not bounded by any "
                            "declaration; pass remainder='drop' or give those columns a declared transformer.")
        squares = 0.0
        for name, step, columns in transformer.transformers:
            if isinstance(step, str) and step == "drop":
                continue
            squares += row_norm_bound_named(step, name, _column_count(columns)) ** 2
        return math.sqrt(squares)
    if isinstance(transformer, Pipeline):
        last = transformer.steps[-1][1]
        return row_norm_bound_named(last, transformer.steps[-1][0], n_features)
    return row_norm_bound_named(transformer, type(transformer).__name__, n_features)


def row_norm_bound_named(step: Any, name: str, n_features: int | None) -> float:
    """:func:`row_norm_bound` of one step, whose name the message gives when it declares no bound."""
    if isinstance(step, ColumnTransformer | Pipeline):
        return row_norm_bound(step, n_features)
    method = getattr(step, "row_norm_bound", None)
    if method is None:
        raise TypeError(
            f"step {name!r} ({step!r:.60}) declares no bound on its output rows: end it with a DeclaredRangeScaler, "
            "a DeclaredOneHotEncoder or a DPQuantileClipper(output_range=...), whose bounds are public."
        )
    return float(method(n_features))
