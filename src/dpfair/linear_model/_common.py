"""Input checks shared by the private linear models (declared bounds, never read off the data)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from sklearn.utils.validation import _get_feature_names, check_X_y

from dpfair._validation import check_positive_finite

#: Relative tolerance on a declared bound (absorbs rounding in a row scaled to exactly the bound).
BOUND_TOL = 1e-9

#: The neighbouring relation of both linear models.
NEIGHBOURING = "replace one training row (x, y) (the number of rows n is public)"


def check_declared_bound(value: Any, name: str, epsilon: float, what: str) -> float | None:
    """A declared bound: required (finite, > 0) with finite ``epsilon``; optional (may be ``None``) at ``inf``."""
    if value is None:
        if math.isinf(epsilon):
            return None
        raise ValueError(
            f"{name} is required with a finite epsilon: declare {what} (a public constant, e.g. from the data's "
            "schema). Reading it off the data would break differential privacy (allowed only with epsilon=inf)."
        )
    return check_positive_finite(value, name)


def squared_bound(**bounds: float) -> float:
    """``sum of bound**2`` of the named declared bounds; ``ValueError`` naming them if it overflows float64."""
    total = 0.0
    for value in bounds.values():
        total += float(np.float64(value) ** 2) if value < 1e150 else math.inf
    if not math.isfinite(total) or total > 1e300:
        raise ValueError(
            f"{' and '.join(bounds)} are too large: their squares overflow float64 (the noise would be infinite); "
            "rescale the data and declare smaller bounds."
        )
    return total


def validated_xy(X: Any, y: Any, *, owner: str, y_numeric: bool) -> tuple[np.ndarray, np.ndarray, Any]:
    """``(X, y, feature_names)`` as float64 arrays, finite, one target per row; nothing is set on the estimator."""
    if y is None:
        raise ValueError(f"{owner} requires y to be passed, but the target y is None: pass one target per row.")
    names = _get_feature_names(X)
    X_arr, y_arr = check_X_y(X, y, dtype=np.float64, y_numeric=y_numeric, estimator=owner)
    return X_arr, y_arr, names


def check_row_norms(X: np.ndarray, data_norm: float | None) -> None:
    """Refuse rows whose L2 norm exceeds the declared ``data_norm`` (the message names no private value)."""
    if data_norm is None or X.size == 0:
        return
    norms = np.sqrt(np.einsum("ij,ij->i", X, X))
    if not (norms <= data_norm * (1.0 + BOUND_TOL)).all():
        raise ValueError(
            f"X has row(s) whose L2 norm exceeds the declared data_norm={data_norm:g}: the privacy guarantee "
            "rests on that bound. Scale every feature by public constants (e.g. divide by its declared range), "
            "normalise rows (sklearn.preprocessing.Normalizer, a per-row map that reads nothing off other rows), "
            "or declare a larger data_norm."
        )


def set_feature_attributes(estimator: Any, n_features: int, names: Any) -> None:
    """Set ``n_features_in_`` and ``feature_names_in_`` (removing a stale one) at the end of ``fit``."""
    estimator.n_features_in_ = n_features
    if names is not None:
        estimator.feature_names_in_ = names
    elif hasattr(estimator, "feature_names_in_"):
        del estimator.feature_names_in_
