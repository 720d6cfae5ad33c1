"""Checks of :class:`~dpfair.classification.DPExponentiatedGradient`'s inputs, all made before its one charge.

The declared row bounds (``x_norm_bound``, ``x_l1_bound``), the rows against them, and the room the released
statistics need in float64: every refusal names the declared argument, never a private value.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from sklearn.utils.validation import validate_data

from dpfair._estimator import check_feature_values
from dpfair._validation import check_positive_finite

_MAX_FLOAT = float(np.finfo(float).max)
#: How many noise scales a release may reach: the room a statistic must leave below the largest float.
_NOISE_REACH = 1000.0


def _features(estimator: Any, X: Any, *, reset: bool, y: Any = None) -> tuple[np.ndarray, np.ndarray | None]:
    """``X`` (and ``y``) through scikit-learn's validation; messages name the argument.

    Strings and missing values are refused first, by :func:`dpfair._estimator.check_feature_values`: its message
    names the column and the dpfair transformer to use (``DeclaredOneHotEncoder``, ``DeclaredImputer``), where
    scikit-learn's prints the private value it could not convert and advises an imputer that reads private rows.
    """
    check_feature_values(X, owner=type(estimator).__name__)
    try:
        if y is None:
            return validate_data(estimator, X, reset=reset, dtype=np.float64, ensure_all_finite=True), None
        X_out, y_out = validate_data(estimator, X, y, reset=reset, dtype=np.float64, ensure_all_finite=True, y_numeric=False)
        return X_out, y_out
    except (TypeError, ValueError) as exc:
        message = str(exc)
        if "X" not in message and "y" not in message:
            message = f"X: {message}"
        raise type(exc)(f"{message} Pass X as a finite 2-d array of real numbers (and y as one binary label per row).") from None


def _l1_row_bound(x_norm_bound: Any, x_l1_bound: Any, n_features: int) -> tuple[float, np.ndarray | None, float | None]:
    """``(bound on ||x||_1, per-feature bounds or None, L2 bound or None)`` from the declared bounds.

    ``x_norm_bound`` (Euclidean) gives ``||x||_1 <= sqrt(d) x_norm_bound``; a scalar ``x_l1_bound`` bounds
    ``||x||_1`` directly; a vector ``x_l1_bound`` bounds every ``|x_j|``, so ``||x||_1 <= sum_j x_l1_bound[j]``.
    The smallest of the declared bounds is used.
    """
    l2 = None if x_norm_bound is None else check_positive_finite(x_norm_bound, "x_norm_bound")
    per_feature = None
    bounds = [] if l2 is None else [math.sqrt(n_features) * l2]
    if x_l1_bound is not None:
        if np.ndim(x_l1_bound) == 0:
            bounds.append(check_positive_finite(x_l1_bound, "x_l1_bound"))
        else:
            try:
                per_feature = np.asarray(x_l1_bound, dtype=np.float64)
            except (TypeError, ValueError):
                raise TypeError("x_l1_bound must be a positive number or one positive number per feature.") from None
            if per_feature.ndim != 1 or per_feature.size != n_features:
                raise ValueError(
                    f"x_l1_bound must be a number or hold one bound per feature ({n_features}), got shape "
                    f"{per_feature.shape}."
                )
            if not (np.isfinite(per_feature).all() and (per_feature >= 0).all()):
                raise ValueError("x_l1_bound must hold finite bounds >= 0 on every |x_j|.")
            bounds.append(float(per_feature.sum()))
    if not bounds:
        raise ValueError(
            "declare a bound on the rows of X: x_norm_bound (Euclidean norm) or x_l1_bound (L1 norm, or one bound "
            "per feature on |x_j|); the oracle's noise is calibrated to it, never to the data."
        )
    return min(bounds), per_feature, l2


def _check_release_room(
    gram: np.ndarray, moment0: np.ndarray, zt_base: np.ndarray, zt_cells: np.ndarray, *, bound_B: float, n_rows: int,
    worst_scale: float,
) -> None:
    """Refuse, before the charge, exact statistics whose release (or use) would overflow float64 after it.

    ``Z^T Z`` and ``Z^T C_0`` (released A-aware, inverted A-blind) must be finite, and every round's
    ``Z^T C_1 = zt_base + tau . zt_cells`` must leave room for its noise: ``|tau| <= 2 B / q~_min <= 2 B m``
    (denominators are clipped at 1), whatever the released counts and multipliers.  Checked on public
    bounds of these values; the message names the declared arguments, never a value.
    """
    with np.errstate(over="ignore", invalid="ignore"):
        moment_bound = float(np.abs(zt_base).max()) + 2.0 * bound_B * n_rows * float(np.abs(zt_cells).sum(axis=0).max())
        room = _MAX_FLOAT - _NOISE_REACH * worst_scale
        largest = max(float(np.abs(gram).max()), float(np.abs(moment0).max()), moment_bound)
    if not largest <= room:  # also False for inf / nan
        raise ValueError(
            "the rows of X at the declared bound (x_norm_bound / x_l1_bound), with bound_B, give statistics whose "
            "noisy release would overflow float64; rescale X by a public constant and declare a smaller bound, or "
            "use a smaller bound_B."
        )


def _check_rows(X: np.ndarray, l2: float | None, l1: float | None, per_feature: np.ndarray | None) -> None:
    """Refuse rows of ``X`` outside a declared bound (the message names it, never a private value)."""
    if l2 is not None and not (np.linalg.norm(X, axis=1) <= l2).all():
        raise ValueError(
            f"X has rows whose Euclidean norm exceeds x_norm_bound={l2:g}; the noise is calibrated to "
            "this declared bound. Rescale X by a public constant or declare a larger x_norm_bound."
        )
    if l1 is not None and not (np.abs(X).sum(axis=1) <= l1).all():
        raise ValueError(
            f"X has rows whose L1 norm exceeds x_l1_bound={l1:g}; the noise is calibrated to this declared bound. "
            "Rescale X by a public constant or declare a larger x_l1_bound."
        )
    if per_feature is not None and not (np.abs(X) <= per_feature).all():
        raise ValueError(
            "X has a value |x_j| above its declared per-feature bound x_l1_bound[j]; the noise is calibrated "
            "to these declared bounds. Clip X to public ranges or declare larger bounds."
        )
