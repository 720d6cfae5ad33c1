"""What the private linear models share: checks of declared bounds (never read off the data) and their part of the
release template of :mod:`dpfair.base` (:class:`PrivateLinearModel`)."""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np
from sklearn.utils.validation import _get_feature_names, check_X_y, validate_data

from dpfair._estimator import check_feature_values, privacy_spent, warn_non_private
from dpfair._validation import check_bounds, check_positive_finite
from dpfair.base import PrivacyParameters, PrivateEstimator

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


def declared_target_range(value: Any, name: str) -> tuple[float, float]:
    """``(low, high)`` of a declared target bound: ``b`` (``|y| <= b``, finite, > 0) or a pair ``(low, high)``."""
    if isinstance(value, tuple | list | np.ndarray):
        return check_bounds(tuple(np.asarray(value, dtype=object).tolist()) if isinstance(value, np.ndarray) else value,
                            name, max_width=1e150)
    bound = check_positive_finite(value, name)
    if bound > 1e150:
        raise ValueError(f"{name}={value!r} is too large: its square overflows float64; rescale y and declare a smaller bound.")
    return -bound, bound


def declared_feature_ranges(value: Any, name: str, n_features: int) -> np.ndarray:
    """Each feature's declared ``(low, high)``, shape ``(2, n_features)``: one pair for all, or one pair per feature.

    Every pair passes :func:`dpfair._validation.check_bounds` (finite, ``low < high``).
    """
    if isinstance(value, str | bytes) or not hasattr(value, "__len__"):
        raise TypeError(f"{name} must be a pair (low, high) for every feature, or one pair per feature, got {value!r}.")
    items = list(value)
    if len(items) == 2 and all(not hasattr(item, "__len__") for item in items):
        low, high = check_bounds(tuple(items), name, max_width=1e150)
        return np.array([[low] * n_features, [high] * n_features], dtype=float)
    if len(items) != n_features:
        raise ValueError(f"{name} must hold one (low, high) pair per feature: X has {n_features} feature(s), {name} has "
                         f"{len(items)} pair(s).")
    pairs = [check_bounds(tuple(item) if hasattr(item, "__len__") and not isinstance(item, str | bytes) else item,
                          f"{name}[{j}]", max_width=1e150) for j, item in enumerate(items)]
    return np.array(pairs, dtype=float).T.copy()


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
    check_feature_values(X, owner=owner)  # strings and NaN: the dpfair transformer to use, before scikit-learn's advice
    names = _get_feature_names(X)
    X_arr, y_arr = check_X_y(X, y, dtype=np.float64, y_numeric=y_numeric, estimator=owner)
    return X_arr, y_arr, names


def validated_features(estimator: Any, X: Any) -> np.ndarray:
    """``X`` for a fitted model's predictions, float64; strings and NaN refused with the dpfair transformer to use."""
    check_feature_values(X, owner=type(estimator).__name__)
    return validate_data(estimator, X, reset=False, dtype=np.float64)


def feature_attributes(n_features: int, names: Any) -> dict[str, Any]:
    """``n_features_in_`` and, when ``X`` had column names, ``feature_names_in_`` (fitted attributes, by name)."""
    return {"n_features_in_": n_features} if names is None else {"n_features_in_": n_features, "feature_names_in_": names}


class PrivateLinearModel(PrivateEstimator):
    """The steps of the release template (:class:`dpfair.base.PrivateEstimator`) both linear models share.

    ``fit(X, y)`` (no ``sensitive_features``) runs the template once.  A subclass sets
    ``_privacy_protects`` and ``_exact_protects`` (what ``privacy_spent_`` says at ``epsilon = inf``)
    and fills the template's steps.
    """

    _results_hold_feature_attributes: ClassVar[bool] = True  # stale feature attributes go (dpfair.base)

    _privacy_neighbouring: ClassVar[str] = NEIGHBOURING
    _exact_protects: ClassVar[str] = "nothing: epsilon=inf fits the exact model"

    def _dpfair_fit_charges(self) -> list[tuple[Any, float, float]]:
        """``[(budget, epsilon, delta)]``: what one ``fit`` charges (for search costs), from the privacy parameters only."""
        params = self._validate_privacy_parameters()
        return [(params.budget, *self._privacy_cost(params))]

    def _release_arguments(self, X: Any, y: Any = None, **fit_params: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """``fit(X, y)`` takes no other argument (no ``sensitive_features``: a linear model reads no groups)."""
        return (X, y), fit_params

    def _warn_non_private(self, params: PrivacyParameters) -> None:
        warn_non_private(params.epsilon, f"{type(self).__name__}'s coefficients", estimator=self)

    def _privacy_spent(self, params: PrivacyParameters, results: dict[str, Any]) -> dict[str, Any]:
        epsilon, delta = self._privacy_cost(params)
        protects = self._exact_protects if math.isinf(epsilon) else self._privacy_protects
        return privacy_spent(epsilon, delta, protects=protects, neighbouring=self._privacy_neighbouring)

