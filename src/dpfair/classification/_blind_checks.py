"""Parameter checks and bin edges of :class:`~dpfair.classification.DPBlindPostProcessor` (moved out of its module)."""

from __future__ import annotations

from typing import Any

import numpy as np

from dpfair._validation import check_open_unit
from dpfair.classification.blind_table import BLIND_CONSTRAINTS

__all__ = ["check_bins", "check_constraints", "check_share", "inner_edges"]


def check_constraints(constraints: Any) -> str:
    """``constraints`` if it names a family of :data:`~dpfair.classification.blind_table.BLIND_CONSTRAINTS`.

    Parameters
    ----------
    constraints : Any
        The argument.

    Returns
    -------
    str
        The name.
    """
    if not isinstance(constraints, str) or constraints not in BLIND_CONSTRAINTS:
        raise ValueError(f"constraints must be one of {list(BLIND_CONSTRAINTS)}, got {constraints!r}.")
    return constraints


def check_bins(value: Any, name: str, low: int, high: int) -> int | str:
    """``"auto"`` or an integer from ``low`` to ``high`` (the argument ``name``).

    Parameters
    ----------
    value : Any
        The argument.
    name : str
        Its name, for the error.
    low, high : int
        The allowed range.

    Returns
    -------
    int or str
        The value.
    """
    if isinstance(value, str) and value == "auto":
        return "auto"
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not low <= value <= high:
        raise ValueError(f"{name} must be 'auto' or an integer from {low} to {high}, got {value!r}.")
    return int(value)


def check_share(value: Any) -> float:
    """``membership_share`` as a float in (0, 1).

    Parameters
    ----------
    value : Any
        The argument.

    Returns
    -------
    float
        The share.
    """
    share = check_open_unit(value, "membership_share")
    return float(share)


def inner_edges(values: np.ndarray, n_bins: int, public: bool) -> np.ndarray:
    """``n_bins - 1`` increasing edges: quantiles of public ``values``, else the fixed grid ``k / n_bins``.

    Parameters
    ----------
    values : ndarray of shape (m,)
        The values binned (their quantiles are used only when ``public``).
    n_bins : int
        The number of bins.
    public : bool
        Whether ``values`` are public (the attribute relation).

    Returns
    -------
    ndarray of shape (n_bins - 1,)
    """
    if n_bins <= 1:
        return np.zeros(0)
    if public and values.size:
        edges = np.quantile(values, np.arange(1, n_bins) / n_bins)
        return np.maximum.accumulate(edges)
    return np.arange(1, n_bins) / n_bins
