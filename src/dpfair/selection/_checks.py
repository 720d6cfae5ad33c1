"""Strict argument checks for the selection module.

Stricter than :func:`dpfair._validation.as_finite_array`: numeric *strings* ("0.5"), booleans,
complex numbers, dates and arbitrary objects are refused instead of being coerced to floats, and
no message prints a value or a count read off the (possibly private) data.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np
import pandas as pd
from scipy import sparse

from dpfair._validation import check_int

__all__ = ["as_real_array", "check_bounds", "check_epsilon_array", "check_n_select"]


def _is_missing(value: Any) -> bool:
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


def as_real_array(values: Any, name: str, *, ndim: int | tuple[int, ...] = 1, allow_empty: bool = False) -> np.ndarray:
    """Return ``values`` as a finite float64 array, refusing anything that is not real numbers.

    Accepts lists, tuples, numpy arrays and pandas Series / DataFrames (their index is ignored).

    Raises
    ------
    TypeError
        If the values are strings (even numeric ones), booleans, dates, other objects or sparse.
    ValueError
        If the values are complex, the array is ragged, has the wrong number of dimensions, is empty (unless
        ``allow_empty``), or holds NaN, infinite or missing values.
    """
    allowed = (ndim,) if isinstance(ndim, int) else tuple(ndim)
    shape_hint = " or ".join(f"{d}-dimensional" for d in allowed)
    if sparse.issparse(values):
        raise TypeError(f"{name}: sparse input is not supported; pass a dense array (e.g. {name}.toarray()).")
    if isinstance(values, pd.DataFrame | pd.Series):
        values = values.to_numpy()
    if values is None or isinstance(values, str | bytes | dict | set | frozenset):
        raise TypeError(f"{name} must be an array-like of real numbers ({shape_hint}), got {type(values).__name__}.")
    try:
        arr = np.asarray(values)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a rectangular {shape_hint} array of real numbers (got a ragged sequence).") from None
    kind = arr.dtype.kind
    if isinstance(values, list | tuple) and kind in "iufc":
        # numpy turns [False, True, 0.5] into floats: look at the Python objects themselves
        if any(isinstance(v, bool | np.bool_) for v in np.asarray(values, dtype=object).ravel()):
            raise TypeError(f"{name} must hold real numbers, got booleans; convert them explicitly if that is meant.")
    if kind == "O":
        flat = arr.ravel()
        if any(_is_missing(v) for v in flat):
            raise ValueError(f"{name} contains missing values (None, NaN or pd.NA); remove or impute them first.")
        if not all(isinstance(v, numbers.Real) and not isinstance(v, bool | np.bool_) for v in flat):
            raise TypeError(
                f"{name} must hold real numbers only (int or float); it holds other objects "
                "(strings, booleans, containers ...). Convert them explicitly first."
            )
        kind = "f"
    if kind in "US":
        raise TypeError(f"{name} must hold real numbers, got strings (dtype {arr.dtype}); numeric strings are not converted, "
                        f"pass numbers (e.g. {name}.astype(float) after checking them).")
    if kind == "b":
        raise TypeError(f"{name} must hold real numbers, got booleans; convert them explicitly (astype(float)) if that is meant.")
    if kind == "c":
        raise ValueError(f"{name}: Complex data not supported; pass real numbers.")
    if kind not in "iuf":
        raise TypeError(f"{name} must hold real numbers, got dtype {arr.dtype}.")
    if arr.ndim not in allowed:
        raise ValueError(f"{name} must be {shape_hint}, got shape {arr.shape}.")
    with np.errstate(over="ignore"):
        out = np.asarray(arr, dtype=np.float64)
    if out.size == 0 and not allow_empty:
        raise ValueError(f"{name} is empty; pass at least one value.")
    if not np.isfinite(out).all():
        raise ValueError(f"{name} contains NaN or infinite values; remove or impute them first.")
    return out


def _real_scalar(value: Any, name: str) -> float:
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}.")
    return float(value)


def check_bounds(bounds: Any, name: str = "score_bounds") -> tuple[float, float]:
    """Return a declared ``(lo, hi)`` pair of finite floats with ``lo < hi``.

    Raises
    ------
    TypeError
        If ``bounds`` is not a pair of real numbers.
    ValueError
        If a bound is NaN or infinite, or ``lo >= hi``.
    """
    if isinstance(bounds, str | bytes) or not hasattr(bounds, "__len__") or len(bounds) != 2:
        raise TypeError(f"{name} must be a pair of numbers (lo, hi), e.g. {name}=(0.0, 1.0), got {bounds!r}.")
    lo, hi = (_real_scalar(b, name) for b in bounds)
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise ValueError(
            f"{name} must be finite, got {bounds!r}: the privacy guarantee and the sensitivity are computed from "
            "the declared range, so declare the real (finite) range of the scores."
        )
    if not lo < hi:
        raise ValueError(f"{name} must satisfy lo < hi, got {bounds!r}.")
    return lo, hi


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
