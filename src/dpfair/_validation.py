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
import pandas as pd
from scipy import sparse

__all__ = [
    "as_finite_array",
    "check_allocation",
    "check_bool",
    "check_bounds",
    "check_delta",
    "check_epsilon",
    "check_int",
    "check_nonnegative_finite",
    "check_open_unit",
    "check_positive_finite",
    "check_positive_normal",
    "check_rho",
    "check_row_norms",
    "check_sensitivity",
    "check_squares_fit",
    "check_within_bounds",
    "one_value_per_row",
]


_TINY = float(np.finfo(float).tiny)  # smallest positive normal float64
_HUGE = float(np.finfo(float).max)  # largest finite float64


def _as_float(value: Any, name: str) -> float:
    """``value`` as a Python float: real numbers only (no bool, complex, str or array), never NaN."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Real):
        # numpy scalars are numbers.Real; anything else (str, None, complex, arrays) is a type error.
        raise TypeError(f"{name} must be a real number, got {type(value).__name__} ({value!r:.80}).")
    try:
        out = float(value)
    except (OverflowError, TypeError, ValueError):  # e.g. an int with more than 308 digits
        raise ValueError(f"{name} is out of the float64 range; pass a real number below 1.8e308.") from None
    if math.isnan(out):
        raise ValueError(f"{name} is NaN; pass a real number.")
    return out


def check_epsilon(epsilon: Any, name: str = "epsilon", *, allow_inf: bool = True) -> float:
    """Return ``epsilon`` as a float after checking ``epsilon > 0``.

    Parameters
    ----------
    epsilon : float
        The privacy parameter; ``float('inf')`` means *no privacy* (the exact
        non-private algorithm) and is accepted unless ``allow_inf`` is False.
    name : str, default "epsilon"
        Argument name used in error messages.
    allow_inf : bool, default True
        Whether ``inf`` is accepted.

    Returns
    -------
    float

    Raises
    ------
    TypeError
        If ``epsilon`` is not a real number (bool, str, complex, array, None).
    ValueError
        If it is NaN, ``<= 0``, or infinite while ``allow_inf`` is False.
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
    """Return ``delta`` as a float after checking ``0 <= delta < 1``.

    Parameters
    ----------
    delta : float
        The approximate-DP failure probability.
    name : str, default "delta"
        Argument name used in error messages.

    Returns
    -------
    float

    Raises
    ------
    TypeError
        If ``delta`` is not a real number.
    ValueError
        If it is NaN or outside ``[0, 1)``.
    """
    d = _as_float(delta, name)
    if not (0.0 <= d < 1.0):
        raise ValueError(f"{name} must satisfy 0 <= {name} < 1 (got {d!r}).")
    return d


def check_rho(rho: Any, name: str = "rho", *, allow_inf: bool = True) -> float:
    """Return a zCDP parameter ``rho > 0`` (``inf`` means no privacy).

    Parameters
    ----------
    rho : float
        The zero-concentrated DP parameter.
    name : str, default "rho"
        Argument name used in error messages.
    allow_inf : bool, default True
        Whether ``inf`` is accepted.

    Returns
    -------
    float

    Raises
    ------
    TypeError
        If ``rho`` is not a real number.
    ValueError
        If it is NaN, ``<= 0``, or infinite while ``allow_inf`` is False.
    """
    return check_epsilon(rho, name, allow_inf=allow_inf)


def check_bool(value: Any, name: str) -> bool:
    """Return ``value`` if it is a bool (``TypeError`` naming ``name`` otherwise).

    Parameters
    ----------
    value : bool
        The flag to check (``numpy.bool_`` is accepted).
    name : str
        Argument name used in error messages.

    Returns
    -------
    bool
    """
    if not isinstance(value, bool | np.bool_):
        raise TypeError(f"{name} must be True or False, got {type(value).__name__} ({value!r:.60}).")
    return bool(value)


def check_open_unit(value: Any, name: str) -> float:
    """Return ``value`` as a float after checking it lies in the open interval ``(0, 1)``.

    Parameters
    ----------
    value : float
        The number to check (a probability, a fraction).
    name : str
        Argument name used in error messages.

    Returns
    -------
    float

    Raises
    ------
    TypeError
        If ``value`` is not a real number.
    ValueError
        If it is NaN or outside ``(0, 1)``.
    """
    v = _as_float(value, name)
    if not 0.0 < v < 1.0:
        raise ValueError(f"{name} must lie in the open interval (0, 1), got {v!r}.")
    return v


def check_positive_finite(value: Any, name: str) -> float:
    """Return ``value`` as a float after checking it is finite and > 0.

    Parameters
    ----------
    value : float
        The number to check.
    name : str
        Argument name used in error messages.

    Returns
    -------
    float

    Raises
    ------
    TypeError
        If ``value`` is not a real number.
    ValueError
        If it is NaN, infinite or ``<= 0``.
    """
    v = _as_float(value, name)
    if not math.isfinite(v) or v <= 0:
        raise ValueError(f"{name} must be a finite number > 0 (got {v!r}).")
    return v


def check_positive_normal(value: Any, name: str) -> float:
    """Return ``value`` as a float after checking it is finite, > 0 and a normal float64 (``1 / value`` finite).

    For a ridge parameter ``lambda`` (``V_0^{-1} = I / lambda``) and other divisors: a subnormal value
    (below about ``2.2e-308``) makes its reciprocal overflow.

    Parameters
    ----------
    value : float
        The number to check.
    name : str
        Argument name used in error messages.

    Returns
    -------
    float

    Raises
    ------
    TypeError
        If ``value`` is not a real number.
    ValueError
        If it is NaN, infinite, ``<= 0`` or subnormal.
    """
    v = check_positive_finite(value, name)
    if v < _TINY:
        raise ValueError(f"{name}={v!r} is subnormal (below {_TINY:.3g}): 1/{name} overflows float64; use a larger {name}.")
    return v


def check_nonnegative_finite(value: Any, name: str) -> float:
    """Return ``value`` as a float after checking it is finite and >= 0.

    Parameters
    ----------
    value : float
        The number to check.
    name : str
        Argument name used in error messages.

    Returns
    -------
    float

    Raises
    ------
    TypeError
        If ``value`` is not a real number.
    ValueError
        If it is NaN, infinite or negative.
    """
    v = _as_float(value, name)
    if not math.isfinite(v) or v < 0:
        raise ValueError(f"{name} must be a finite number >= 0 (got {v!r}).")
    return v


def check_sensitivity(value: Any, name: str = "sensitivity") -> float:
    """Return a declared sensitivity: finite, > 0 and a normal float64.

    Sensitivities are declared by the caller from known bounds on the data, never
    read off the data.  Subnormal values (below about ``2.2e-308``) are refused: every
    noise scale and log-weight divides by the sensitivity, and a subnormal divisor
    overflows or loses all precision.  Rescale the statistic instead.

    Parameters
    ----------
    value : float
        The declared sensitivity.
    name : str, default "sensitivity"
        Argument name used in error messages.

    Returns
    -------
    float

    Raises
    ------
    TypeError
        If ``value`` is not a real number.
    ValueError
        If it is NaN, negative, zero, subnormal or infinite.
    """
    v = _as_float(value, name)
    if v < 0:
        raise ValueError(f"{name} must be >= 0 (got {v!r}); declare the bound on one record's influence.")
    if not math.isfinite(v) or v == 0:
        raise ValueError(f"{name} must be finite and > 0 (got {v!r}).")
    if v < _TINY:
        raise ValueError(
            f"{name}={v!r} is subnormal (below {_TINY:.3g}); rescale the statistic so the sensitivity is a normal float."
        )
    return v


def check_int(value: Any, name: str, *, minimum: int | None = None) -> int:
    """Return ``value`` as an int, checking its type and an optional lower bound.

    Parameters
    ----------
    value : int
        A Python or numpy integer (``bool`` and integral floats such as ``2.0`` are refused).
    name : str
        Argument name used in error messages.
    minimum : int, optional
        Smallest accepted value.

    Returns
    -------
    int

    Raises
    ------
    TypeError
        If ``value`` is not an integer.
    ValueError
        If it is below ``minimum``.
    """
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__} ({value!r:.80}).")
    out = int(value)
    if minimum is not None and out < minimum:
        raise ValueError(f"{name} must be >= {minimum} (got {out}).")
    return out


def _object_to_float(raw: np.ndarray, name: str, allow_bool: bool) -> np.ndarray:
    """Convert an object array element by element, refusing anything but real numbers."""
    flat = raw.ravel()
    for item in flat:
        if isinstance(item, bool | np.bool_):
            if allow_bool:
                continue
            raise TypeError(f"{name} holds a bool; pass numbers (convert a mask with .astype(float) if 0/1 is meant).")
        if not isinstance(item, numbers.Real):
            raise TypeError(f"{name} must hold real numbers only, found {type(item).__name__}.")
    try:
        return np.array([float(item) for item in flat], dtype=float).reshape(raw.shape)
    except OverflowError:
        raise ValueError(f"{name} holds a number outside the float64 range.") from None


_MODES = ("convert", "dtype", "strict")


def as_finite_array(
    values: Any,
    name: str,
    *,
    ndim: int | tuple[int, ...] | None = None,
    allow_empty: bool = False,
    dtype: Any = float,
    allow_bool: bool = False,
    allow_nonfinite: bool = False,
    mode: str = "convert",
) -> np.ndarray:
    """Convert ``values`` (array-like or pandas object) to a finite numeric array: the one array coercion.

    Only real numbers are accepted.  Strings (also numeric strings such as ``"1.5"``),
    complex numbers (their imaginary part would be dropped), datetimes, ``None`` and
    other objects are refused, never coerced.  Booleans raise :class:`TypeError` too
    unless ``allow_bool`` is True: a mask passed where numbers are meant is almost
    always a mistake (the scikit-learn parameter-validation convention); convert it
    explicitly with ``.astype(float)``.

    Parameters
    ----------
    values : array-like, scalar or pandas object
        The values; a scalar gives a 0-d array.
    name : str
        Argument name used in error messages.
    ndim : int or tuple of int, optional
        Required number of dimensions (one of them, for a tuple).
    allow_empty : bool, default False
        Whether an array with no elements is accepted.
    dtype : numpy dtype, default float
        Output dtype.  For an integer dtype, values must be integral (``1.7`` is
        refused, never truncated) and inside the dtype's range.
    allow_bool : bool, default False
        Accept booleans as 0/1.
    allow_nonfinite : bool, default False
        Return NaN and infinite values (float ``dtype`` only) for the caller to refuse with its own
        message (one that, for private data, does not count them).
    mode : {"convert", "dtype", "strict"}, default "convert"
        How values that are not a numpy numeric array are judged:

        - ``"convert"``: an object array is converted element by element when every element is a
          real number; the message for NaN or infinite values counts them.
        - ``"dtype"``: only numeric dtypes (bool, int, float) are accepted; an object array is
          refused whatever it holds and a ragged sequence is a :class:`TypeError`.  Messages never
          count or print the values.
        - ``"strict"`` (scikit-learn's conventions): booleans are refused even inside a list of
          floats, missing values (``None``, NaN, ``pd.NA``) in an object array are named as missing
          (:class:`ValueError`), complex values are a :class:`ValueError`, and sparse matrices,
          ``None``, dicts and sets are refused by type.  Messages never count or print the values.

    Returns
    -------
    ndarray
        The values as an array of ``dtype``.

    Raises
    ------
    TypeError
        If the values are not real numbers.
    ValueError
        If the array is ragged, empty (unless ``allow_empty``), has the wrong number of
        dimensions, holds NaN or infinite values, or (integer ``dtype``) non-integral
        or out-of-range values.
    """
    if mode not in _MODES:
        raise ValueError(f"mode must be one of {_MODES}, got {mode!r}.")
    allowed = None if ndim is None else ((ndim,) if isinstance(ndim, int) else tuple(ndim))
    shape_hint = " or ".join(f"{d}-dimensional" for d in allowed) if allowed else "numeric"
    values, raw = _as_raw_array(values, name, mode, shape_hint)
    raw = _check_kind(raw, values, name, mode, allow_bool)
    if allowed is not None and raw.ndim not in allowed:
        raise ValueError(f"{name} must be {shape_hint}, got shape {raw.shape}.")
    if raw.size == 0 and not allow_empty:
        raise ValueError(f"{name} is empty; pass at least one value.")
    target = np.dtype(dtype)
    if target.kind in "iu":
        return _to_integer(raw, name, target)
    try:
        with np.errstate(over="ignore"):
            arr = raw.astype(target, copy=False)
    except OverflowError:  # a Python int beyond float64 (strict mode keeps objects until here)
        raise ValueError(f"{name} holds a number outside the float64 range.") from None
    if not allow_nonfinite:
        _refuse_nonfinite(arr, name, count=mode == "convert")
    return arr


def _as_raw_array(values: Any, name: str, mode: str, shape_hint: str) -> tuple[Any, np.ndarray]:
    """:func:`as_finite_array`'s first step, ``(values, np.asarray(values))``: the container's refusals by ``mode``."""
    strict = mode == "strict"
    if strict and sparse.issparse(values):
        raise TypeError(f"{name}: sparse input is not supported; pass a dense array (e.g. {name}.toarray()).")
    if hasattr(values, "to_numpy") and not isinstance(values, np.ndarray):
        values = values.to_numpy()
    if strict and (values is None or isinstance(values, str | bytes | dict | set | frozenset)):
        raise TypeError(f"{name} must be an array-like of real numbers ({shape_hint}), got {type(values).__name__}.")
    if mode == "convert" and isinstance(values, str | bytes):
        raise TypeError(f"{name} must be numeric array-like, got a {type(values).__name__}.")
    try:
        return values, np.asarray(values)
    except (TypeError, ValueError) as exc:  # ragged nested sequences
        if mode == "dtype":
            raise TypeError(f"{name} must be a numeric array (int or float), got {type(values).__name__}.") from None
        if strict:
            raise ValueError(f"{name} must be a rectangular {shape_hint} array of real numbers "
                             "(got a ragged sequence).") from None
        raise ValueError(f"{name} must be a rectangular numeric array-like: {exc}") from None


def _refuse_nonfinite(arr: np.ndarray, name: str, *, count: bool = True) -> None:
    """``ValueError`` naming ``name`` if ``arr`` holds NaN or inf; ``count=False`` for messages that must not count them."""
    if np.isfinite(arr).all():
        return
    if count:
        bad = int(np.size(arr) - np.count_nonzero(np.isfinite(arr)))
        raise ValueError(f"{name} contains {bad} NaN or infinite value(s); remove or impute them first.")
    raise ValueError(f"{name} contains NaN or infinite values; remove or impute them first.")


def _check_kind(raw: np.ndarray, values: Any, name: str, mode: str, allow_bool: bool) -> np.ndarray:
    """Refuse what is not real numbers under ``mode``'s rules (see :func:`as_finite_array`); the array to cast.

    ``"convert"`` turns an object array into floats here; ``"strict"`` returns it checked, as objects.
    """
    kind = raw.dtype.kind
    if kind == "b" and not allow_bool:
        if mode == "strict":
            raise TypeError(
                f"{name} must hold real numbers, got booleans; convert them explicitly (astype(float)) if that is meant."
            )
        raise TypeError(f"{name} is boolean; pass numbers (convert a mask with .astype(float) if 0/1 is meant).")
    if mode == "dtype":
        if kind not in "biuf":
            raise TypeError(
                f"{name} must hold real numbers (int or float), got dtype {raw.dtype}; "
                "convert strings or objects to floats yourself, complex numbers are not accepted."
            )
        return raw
    if mode == "convert":
        if kind == "c":
            raise TypeError(f"{name} is complex; pass real numbers (take .real explicitly if that is meant).")
        if kind == "O":
            return _object_to_float(raw, name, allow_bool)
        if kind not in "biuf":
            raise TypeError(
                f"{name} must hold real numbers, got dtype {raw.dtype} (strings, datetimes and records are refused)."
            )
        return raw
    if isinstance(values, list | tuple) and kind in "iufc" and not allow_bool:
        # numpy turns [False, True, 0.5] into floats: look at the Python objects themselves
        if any(isinstance(v, bool | np.bool_) for v in np.asarray(values, dtype=object).ravel()):
            raise TypeError(f"{name} must hold real numbers, got booleans; convert them explicitly if that is meant.")
    if kind == "O":
        flat = raw.ravel()
        if any(_is_missing(v) for v in flat):
            raise ValueError(f"{name} contains missing values (None, NaN or pd.NA); remove or impute them first.")
        if not all(isinstance(v, numbers.Real) and not isinstance(v, bool | np.bool_) for v in flat):
            raise TypeError(
                f"{name} must hold real numbers only (int or float); it holds other objects "
                "(strings, booleans, containers ...). Convert them explicitly first."
            )
        return raw
    if kind in "US":
        raise TypeError(
            f"{name} must hold real numbers, got strings (dtype {raw.dtype}); numeric strings are not converted, "
            f"pass numbers (e.g. {name}.astype(float) after checking them)."
        )
    if kind == "c":
        raise ValueError(f"{name}: Complex data not supported; pass real numbers.")
    if kind not in "biuf":
        raise TypeError(f"{name} must hold real numbers, got dtype {raw.dtype}.")
    return raw


def _to_integer(raw: np.ndarray, name: str, target: np.dtype) -> np.ndarray:
    """Exact conversion to an integer dtype: integral values inside its range only."""
    info = np.iinfo(target)
    if raw.dtype.kind in "biu":
        if raw.size and (int(raw.min()) < info.min or int(raw.max()) > info.max):
            raise ValueError(f"{name} holds integers outside the range of {target}.")
        return raw.astype(target, copy=False)
    arr = raw.astype(float, copy=False)
    _refuse_nonfinite(arr, name)
    if not (arr == np.trunc(arr)).all():
        raise ValueError(f"{name} must hold integers; it holds non-integral values (round them explicitly if that is meant).")
    # 2**63 is exactly representable; every float below it in magnitude converts exactly
    if arr.size and (arr.min() < -(2.0**63) or arr.max() >= 2.0**63 or arr.min() < info.min or arr.max() > info.max):
        raise ValueError(f"{name} holds integers outside the range of {target}.")
    return arr.astype(target)


def check_squares_fit(values: np.ndarray, name: str, *, n_terms: int = 1, norm_axis: int | None = None) -> None:
    """Refuse values whose squares, summed over ``n_terms`` rounds, overflow float64.

    Gram matrices, ridge targets and ``z z^T`` leaves add ``x x^T`` (or ``y x``, ``y^2``) once per round:
    with ``||x||^2 <= max_float / (2 n_terms)`` every such running sum over ``n_terms`` rounds stays
    finite (``|y x_i| <= max(y^2, ||x||^2)``), so a NaN can never come out of them.

    Parameters
    ----------
    values : numpy.ndarray
        Finite values (check NaN first: this refuses NaN with the overflow message).
    name : str
        Argument name used in error messages.
    n_terms : int, default 1
        Number of rounds whose squares are summed.
    norm_axis : int, optional
        Axis holding the coordinates of one vector (its squared norm is checked); ``None`` checks
        each value's square.

    Raises
    ------
    ValueError
        If a (squared norm) times ``2 n_terms`` exceeds the largest float64.
    """
    limit = _HUGE / (2.0 * max(int(n_terms), 1))
    with np.errstate(over="ignore", invalid="ignore"):
        squares = np.multiply(values, values, dtype=float)
        if norm_axis is not None:
            squares = squares.sum(axis=norm_axis)
    if not (squares <= limit).all():
        what = "squared norms" if norm_axis is not None else "squares"
        raise ValueError(
            f"{name} holds values too large for float64 arithmetic: their {what} summed over {int(n_terms)} "
            f"round(s) would overflow; rescale {name} (magnitudes below {math.sqrt(limit):.3g})."
        )


def _physical_memory() -> int:
    """Bytes of physical memory of this machine (numpy's addressing limit where it cannot be read)."""
    import os

    try:
        total = int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, OSError, ValueError):  # not POSIX
        total = 0
    return total if total > 0 else int(np.iinfo(np.intp).max)


def _format_bytes(n_bytes: int) -> str:
    value = float(n_bytes)
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"):
        if value < 1024 or unit == "EiB":
            return f"{value:.3g} {unit}" if unit != "bytes" else f"{int(value)} bytes"
        value /= 1024
    return f"{value:.3g} EiB"  # pragma: no cover - loop always returns


def check_allocation(n_bytes: int, *, subject: str, what: str, fix: str) -> None:
    """Refuse, before allocating, arrays that cannot fit in this machine's memory.

    numpy raises ``MemoryError`` or "Maximum allowed dimension exceeded" only when the allocation is
    tried, naming no argument (and after a privacy budget may have been charged).  Callers compute the
    bytes their arrays need from the sizes they were given (Python integers: no overflow) and call
    this first.

    Parameters
    ----------
    n_bytes : int
        Bytes the arrays need together.
    subject : str
        The arguments that set the size, as the caller wrote them (e.g. ``"horizon=10**12 with 1 seed"``).
    what : str
        What the arrays hold.
    fix : str
        How to make it fit (e.g. ``"lower horizon"``).

    Raises
    ------
    ValueError
        If ``n_bytes`` exceeds the machine's physical memory (or numpy's addressing limit).
    """
    limit = min(_physical_memory(), int(np.iinfo(np.intp).max))
    if int(n_bytes) > limit:
        raise ValueError(
            f"{subject} needs {_format_bytes(int(n_bytes))} for {what}, more than this machine's "
            f"{_format_bytes(limit)} of memory; {fix}."
        )


def one_value_per_row(arr: np.ndarray, name: str, *, what: str = "one value per row") -> np.ndarray:
    """``arr`` as a 1-d array of one value per row: a single column is accepted, nothing empty.

    Parameters
    ----------
    arr : numpy.ndarray
        An array already coerced (e.g. by :func:`as_finite_array`).
    name : str
        The argument's name in the messages.
    what : str, default "one value per row"
        What each row holds, as the message names it (e.g. "one regressor output per row").

    Returns
    -------
    numpy.ndarray
        ``arr`` or its one column.

    Raises
    ------
    ValueError
        If ``arr`` is not 1-d (nor one column) or is empty.
    """
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim != 1:
        raise ValueError(f"{name} must hold {what} (1-d), got shape {arr.shape}.")
    if arr.size == 0:
        raise ValueError(f"{name} is empty; pass at least one row.")
    return arr


#: Relative tolerance on a declared range in :func:`check_within_bounds` (absorbs rounding at exactly a bound).
BOUND_TOL = 1e-9


def check_within_bounds(values: np.ndarray, bounds: tuple[float, float], name: str, *, declared: str) -> np.ndarray:
    """Refuse values outside a declared range; return them clipped into it.

    A value within a relative ``BOUND_TOL`` of the range (rounding at exactly a bound) is clipped, never refused.
    The message names ``name`` and ``declared``, never a value (they are private).

    Parameters
    ----------
    values : ndarray
        Finite values (training targets, features).
    bounds : tuple of float
        The declared ``(low, high)``, already checked (:func:`check_bounds`).
    name : str
        The argument the values came from (``"y"``).
    declared : str
        The parameter that declared the range (``"bounds"``).

    Returns
    -------
    ndarray
        ``values`` clipped into ``bounds``.

    Raises
    ------
    ValueError
        If a value lies outside ``bounds`` by more than the tolerance.
    """
    low, high = bounds
    slack = (high / 2.0 - low / 2.0) * (2.0 * BOUND_TOL)  # halves: finite even where high - low is not
    if not ((values >= low - slack) & (values <= high + slack)).all():
        raise ValueError(
            f"{name} has value(s) outside the declared {declared}: the privacy guarantee rests on them. Clip or "
            f"rescale {name} with public constants, or declare a wider {declared}."
        )
    return np.clip(values, low, high)


def check_bounds(bounds: Any, name: str = "bounds", *, max_width: float | None = None) -> tuple[float, float]:
    """The one rule for declared bounds: a pair ``(low, high)`` of finite real numbers with ``low < high``.

    Bounds are what a privacy guarantee is calibrated to, so nothing is guessed: a string (``"01"``),
    booleans, a pair of the wrong length, NaN or infinity, or ``low >= high`` is refused by name.

    Parameters
    ----------
    bounds : tuple of 2 real numbers
        The declared range.
    name : str, default "bounds"
        Argument name used in messages.
    max_width : float, optional
        Refuse ``high - low`` above it (a range whose squares or sums would overflow float64).

    Returns
    -------
    tuple of float
        ``(low, high)``.

    Raises
    ------
    TypeError
        If ``bounds`` is not a pair of real numbers.
    ValueError
        If a bound is not finite, ``low >= high``, or the width exceeds ``max_width``.
    """
    if isinstance(bounds, str | bytes) or not hasattr(bounds, "__len__") or len(bounds) != 2:
        raise TypeError(f"{name} must be a pair (low, high) of real numbers, e.g. (0.0, 1.0), got {bounds!r}.")
    values = []
    for value in bounds:
        if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Real):
            raise TypeError(f"{name} must be a pair (low, high) of real numbers, e.g. (0.0, 1.0), got {bounds!r}.")
        values.append(float(value))
    low, high = values
    if not (math.isfinite(low) and math.isfinite(high)):
        raise ValueError(
            f"{name} must be finite, got {bounds!r}: the privacy guarantee and the sensitivity are computed from the "
            "declared range, so declare the real (finite) range of the values."
        )
    if not low < high:
        raise ValueError(f"{name} must have low < high, got {bounds!r}.")
    if max_width is not None and not high - low <= max_width:
        raise ValueError(f"{name}={bounds!r} is wider than {max_width:g}; declare a narrower range (or rescale the data).")
    return low, high


def _is_missing(value: Any) -> bool:
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


def check_row_norms(X: np.ndarray, data_norm: float | None) -> None:
    """Refuse rows whose L2 norm exceeds the declared ``data_norm`` (the message names no private value)."""
    if data_norm is None or X.size == 0:
        return
    norms = np.sqrt(np.einsum("ij,ij->i", X, X))
    if not (norms <= data_norm * (1.0 + BOUND_TOL)).all():
        raise ValueError(
            f"X has row(s) whose L2 norm exceeds the declared data_norm={data_norm:g}: the privacy guarantee "
            "rests on that bound. Scale every feature by public constants (dpfair.preprocessing.DeclaredRangeScaler "
            "maps each column's declared range onto [0, 1], and dpfair.preprocessing.row_norm_bound gives the "
            "data_norm of the result), normalise rows (sklearn.preprocessing.Normalizer, a per-row map that reads "
            "nothing off other rows), or declare a larger data_norm."
        )
