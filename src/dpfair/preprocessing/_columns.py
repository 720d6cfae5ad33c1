"""What the preprocessing transformers share: reading a table of mixed types, and per-column declarations.

Nothing here reads a statistic of the rows: a table is checked for its shape and column names only, and a
declaration (categories, fill values, ranges) is matched to the columns by position or by name.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pandas as pd
from sklearn.utils.validation import validate_data

__all__ = ["as_table", "is_missing", "per_column", "resolve_feature_names"]


def as_table(estimator: Any, X: Any, *, reset: bool) -> np.ndarray:
    """``X`` as a 2-d object (or numeric) array, missing values kept; sets / checks the feature attributes.

    scikit-learn's ``validate_data`` with ``dtype=None`` and missing values allowed: a DataFrame of strings,
    numbers and NaN becomes an object array column by column; ``n_features_in_`` and ``feature_names_in_`` (the
    public schema) are set when ``reset`` and checked otherwise.
    """
    return validate_data(estimator, X, reset=reset, dtype=None, ensure_all_finite=False)


def is_missing(values: np.ndarray) -> np.ndarray:
    """Boolean mask of the missing entries (``None``, NaN, ``pd.NA``, ``NaT``) of a 1-d array of any dtype."""
    return np.asarray(pd.isna(values), dtype=bool)


def resolve_feature_names(estimator: Any, n_features: int) -> np.ndarray:
    """The columns' names: ``feature_names_in_`` when the fit had them, else ``x0, x1, ...`` (scikit-learn's)."""
    names = getattr(estimator, "feature_names_in_", None)
    if names is not None:
        return np.asarray(names, dtype=object)
    return np.asarray([f"x{j}" for j in range(n_features)], dtype=object)


def per_column(
    value: Any, name: str, n_features: int, feature_names: np.ndarray | None, *, is_single: Callable[[Any], bool],
    what: str,
) -> list[Any]:
    """One declaration per column: ``value`` for all (when ``is_single(value)``), one per column, or a mapping by name.

    Parameters
    ----------
    value : object
        The declaration.
    name : str
        The parameter's name (for messages).
    n_features : int
        The number of columns of the table.
    feature_names : ndarray or None
        The table's column names (``None`` for an array).
    is_single : callable
        Whether ``value`` is one declaration (applied to every column) rather than a list of them.
    what : str
        What one declaration is, for messages (e.g. "a (low, high) pair").

    Returns
    -------
    list
        ``n_features`` declarations, in column order (each still to be checked by the caller).
    """
    if isinstance(value, Mapping):
        if feature_names is None:
            raise ValueError(
                f"{name} is a mapping by column name, but X has no column names; pass a pandas DataFrame (after a "
                "step that outputs arrays, call set_output(transform='pandas') on the Pipeline or ColumnTransformer "
                f"so that the names travel), or declare {name} as a list with {what} per column."
            )
        names = [str(column) for column in feature_names]
        keys = {str(key): key for key in value}
        missing = [column for column in names if column not in keys]
        if missing:
            raise ValueError(f"{name} declares nothing for column(s) {missing}: declare {what} for every column of X.")
        extra = sorted(set(keys) - set(names))
        if extra:
            raise ValueError(f"{name} names column(s) {extra} that X does not have (X has {names}).")
        return [value[keys[column]] for column in names]
    if is_single(value):
        return [value] * n_features
    if isinstance(value, str | bytes) or not hasattr(value, "__len__"):
        raise TypeError(f"{name} must be {what} for all columns, a list with one per column, or a mapping by column "
                        f"name, got {value!r:.80}.")
    items = list(value)
    if len(items) != n_features:
        raise ValueError(f"{name} must hold {what} per column: X has {n_features} column(s), {name} has {len(items)}.")
    return items
