"""Declared ranges per column, as the scalers, the clipper and the median imputer read them."""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from dpfair._validation import check_bounds
from dpfair.preprocessing._columns import per_column

__all__ = ["declared_ranges", "is_pair"]


def is_pair(value: Any) -> bool:
    """Whether ``value`` is one ``(low, high)`` pair of scalars (not a list of pairs)."""
    if isinstance(value, str | bytes) or not hasattr(value, "__len__") or len(value) != 2:
        return False
    return all(isinstance(item, numbers.Number) or np.isscalar(item) for item in value)


def declared_ranges(value: Any, name: str, n_features: int, feature_names: Any) -> np.ndarray:
    """Each column's declared ``(low, high)``, shape ``(2, n_features)``: one pair, one per column, or by name.

    Every pair passes :func:`dpfair._validation.check_bounds` (finite real numbers, ``low < high``).
    """
    if value is None:
        raise ValueError(f"{name} is required: declare each column's public (low, high) range, e.g. from the data's "
                         "schema; reading it off the rows would break differential privacy.")
    pairs = per_column(value, name, n_features, feature_names, is_single=is_pair, what="a (low, high) pair")
    checked = [check_bounds(tuple(pair) if hasattr(pair, "__len__") and not isinstance(pair, str | bytes) else pair,
                            f"{name}[{j}]", max_width=1e150) for j, pair in enumerate(pairs)]
    return np.array(checked, dtype=float).reshape(n_features, 2).T.copy()
