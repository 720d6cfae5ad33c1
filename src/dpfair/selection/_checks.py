"""Argument checks of the selection analysis that no other module needs.

The bounds rule and the strict real-array coercion (numeric *strings*, booleans, complex numbers,
dates and objects refused) are the shared ones of :mod:`dpfair._validation`
(:func:`~dpfair._validation.check_bounds`, :func:`~dpfair._validation.as_finite_array` with ``mode="strict"``); no message
prints a value or a count read off the (possibly private) data.
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np
import pandas as pd

from dpfair._validation import check_int

__all__ = ["check_epsilon_array", "check_n_select"]


def check_epsilon_array(epsilon: Any, name: str = "epsilon") -> np.ndarray:
    """Return ``epsilon`` (a number or a 1-d array of numbers) as a non-empty 1-d float array, each ``>= 0``.

    ``0`` means uniform selection and ``inf`` the exact top-m rule.

    Raises
    ------
    TypeError
        If a value is not a real number.
    ValueError
        If the array is empty or not at most 1-dimensional, or holds NaN or a negative value.
    """
    if isinstance(epsilon, numbers.Real) and not isinstance(epsilon, bool | np.bool_):
        eps = np.array([float(epsilon)])
    else:
        if isinstance(epsilon, pd.Series):
            epsilon = epsilon.to_numpy()
        if isinstance(epsilon, str | bytes) or epsilon is None:
            raise TypeError(f"{name} must be a number or a 1-d array of numbers, got {type(epsilon).__name__}.")
        try:
            arr = np.asarray(epsilon)
        except (TypeError, ValueError):
            raise ValueError(f"{name} must be a number or a 1-d array of numbers.") from None
        real = [isinstance(v, numbers.Real) and not isinstance(v, bool | np.bool_) for v in arr.ravel()]
        if arr.dtype.kind == "O" and arr.size and all(real):
            arr = arr.astype(np.float64)
        if arr.dtype.kind not in "iuf":
            raise TypeError(f"{name} must be a number or a 1-d array of numbers, got dtype {arr.dtype}.")
        if arr.ndim > 1:
            raise ValueError(f"{name} must be a number or a 1-d array, got shape {arr.shape}.")
        eps = np.atleast_1d(arr.astype(np.float64))
        if eps.size == 0:
            raise ValueError(f"{name} is empty; pass at least one value.")
    if np.isnan(eps).any() or (eps < 0).any():
        raise ValueError(f"{name} must be >= 0 (0 is uniform selection; inf is the top-m rule), without NaN.")
    return eps


def check_n_select(n_select: Any, n_items: int, *, name: str = "n_select", strict: bool = False) -> int:
    """Return ``n_select`` as an int in ``[1, n_items]`` (``[1, n_items - 1]`` when ``strict``)."""
    m = check_int(n_select, name, minimum=1)
    if strict and m >= n_items:
        raise ValueError(
            f"{name} must be < n_applicants ({n_items}), got {m}: with everyone selected gamma and theta are trivial."
        )
    return m
