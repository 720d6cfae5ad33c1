"""Argument checks shared by every public entry point.

Each check raises :class:`ValueError` or :class:`TypeError` with a message that names
the offending argument and says how to fix it.  Nothing here ever clips or repairs a
value silently: a privacy guarantee that rests on a repaired input is not the
guarantee the caller asked for.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

__all__ = [
    "as_finite_array",
    "check_delta",
    "check_epsilon",
    "check_int",
    "check_nonnegative_finite",
    "check_positive_finite",
    "check_rho",
    "check_sensitivity",
]


def _as_float(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        # numpy scalars are numbers.Real; anything else (str, None, arrays) is a type error.
        raise TypeError(f"{name} must be a real number, got {type(value).__name__} ({value!r}).")
    out = float(value)
    if math.isnan(out):
        raise ValueError(f"{name} is NaN; pass a real number.")
    return out


def check_epsilon(epsilon: Any, name: str = "epsilon", *, allow_inf: bool = True) -> float:
    """Return ``epsilon`` as a float after checking ``epsilon > 0``.

    ``float('inf')`` means *no privacy* (the exact non-private algorithm) and is
    accepted unless ``allow_inf`` is False.
    """
    eps = _as_float(epsilon, name)
    if eps <= 0:
        raise ValueError(
            f"{name} must be > 0 (got {eps!r}); use float('inf') for the non-private algorithm."
        )
    if math.isinf(eps) and not allow_inf:
        raise ValueError(f"{name} must be finite here (got inf).")
    return eps


def check_delta(delta: Any, name: str = "delta") -> float:
    """Return ``delta`` as a float after checking ``0 <= delta < 1``."""
    d = _as_float(delta, name)
    if not (0.0 <= d < 1.0):
        raise ValueError(f"{name} must satisfy 0 <= {name} < 1 (got {d!r}).")
    return d


def check_rho(rho: Any, name: str = "rho", *, allow_inf: bool = True) -> float:
    """Return a zCDP parameter ``rho > 0`` (``inf`` means no privacy)."""
    return check_epsilon(rho, name, allow_inf=allow_inf)


def check_positive_finite(value: Any, name: str) -> float:
    """Return ``value`` as a float after checking it is finite and > 0."""
    v = _as_float(value, name)
    if not math.isfinite(v) or v <= 0:
        raise ValueError(f"{name} must be a finite number > 0 (got {v!r}).")
    return v


def check_nonnegative_finite(value: Any, name: str) -> float:
    """Return ``value`` as a float after checking it is finite and >= 0."""
    v = _as_float(value, name)
    if not math.isfinite(v) or v < 0:
        raise ValueError(f"{name} must be a finite number >= 0 (got {v!r}).")
    return v


def check_sensitivity(value: Any, name: str = "sensitivity") -> float:
    """Return a declared sensitivity: finite and > 0.

    Sensitivities are declared by the caller from known bounds on the data, never
    read off the data.
    """
    v = _as_float(value, name)
    if v < 0:
        raise ValueError(f"{name} must be >= 0 (got {v!r}); declare the bound on one record's influence.")
    if not math.isfinite(v) or v == 0:
        raise ValueError(f"{name} must be finite and > 0 (got {v!r}).")
    return v


def check_int(value: Any, name: str, *, minimum: int | None = None) -> int:
    """Return ``value`` as an int, checking its type and an optional lower bound."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__} ({value!r}).")
    out = int(value)
    if minimum is not None and out < minimum:
        raise ValueError(f"{name} must be >= {minimum} (got {out}).")
    return out


def as_finite_array(
    values: Any,
    name: str,
    *,
    ndim: int | None = None,
    allow_empty: bool = False,
    dtype: Any = float,
) -> np.ndarray:
    """Convert ``values`` (array-like or pandas object) to a finite float array.

    Raises
    ------
    TypeError
        If the values are not numeric.
    ValueError
        If the array is empty (unless ``allow_empty``), has the wrong number of
        dimensions, or holds NaN or infinite values.
    """
    if hasattr(values, "to_numpy"):
        values = values.to_numpy()
    try:
        arr = np.asarray(values, dtype=dtype)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be numeric array-like: {exc}") from None
    if ndim is not None and arr.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-dimensional, got shape {arr.shape}.")
    if arr.size == 0 and not allow_empty:
        raise ValueError(f"{name} is empty; pass at least one value.")
    if not np.all(np.isfinite(arr)):
        bad = int(np.size(arr) - np.count_nonzero(np.isfinite(arr)))
        raise ValueError(f"{name} contains {bad} NaN or infinite value(s); remove or impute them first.")
    return arr
