"""The blind regression post-processor's input checks and its reading of the two wrapped models.

Moved out of :mod:`dpfair.regression.blind` (the 800-line cap per file): the checks of ``beta``, the noise
multiples and ``bin_values``; the membership model's probabilities per declared group; the outputs and
membership probabilities given as ``X`` without the models; the feature attributes of the fitted object.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from sklearn.utils.validation import check_is_fitted

from dpfair._estimator import refuse_raw_values
from dpfair._validation import as_finite_array
from dpfair._wrapped_fit import wrapped_feature_attributes
from dpfair.regression._wrapped import _predict_outputs


def _check_beta(beta: Any) -> float:
    if isinstance(beta, bool) or not isinstance(beta, (int, float, np.integer, np.floating)):
        raise TypeError(f"beta must be a real number in (0, 1), got {type(beta).__name__}.")
    value = float(beta)
    if not 0.0 < value < 1.0:
        raise ValueError(f"beta must be in (0, 1) (the failure probability of the fairness guarantee), got {value!r}.")
    return value


def _check_noise_multiple(value: Any, name: str) -> float:
    """A finite real ``>= 0``: a multiple of a noise standard deviation (``pool_threshold``, ``noise_margin``)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a real number >= 0, got {type(value).__name__}.")
    if not 0.0 <= float(value) < math.inf:
        raise ValueError(f"{name} must be finite and >= 0 (a multiple of a noise standard deviation), got {value!r}.")
    return float(value)


def _check_bin_values(values: Any, n_bins: int, bounds: tuple[float, float] | None) -> np.ndarray | None:
    """``None``, or ``n_bins`` strictly increasing finite points within the declared ``bounds``."""
    if values is None:
        return None
    if bounds is None:
        raise ValueError("bin_values needs declared bounds=(lo, hi): the points must lie within the declared bins.")
    points = as_finite_array(values, "bin_values", mode="dtype")
    if points.ndim != 1 or points.size != n_bins:
        raise ValueError(f"bin_values must hold one point per score bin (n_bins={n_bins}), got shape {points.shape}.")
    if np.any(np.diff(points) <= 0) or points[0] < bounds[0] or points[-1] > bounds[1]:
        raise ValueError(f"bin_values must be strictly increasing and within bounds={bounds} (the output grid).")
    return points.astype(float)


def _membership_probabilities(membership_estimator: Any, X: Any, groups: np.ndarray) -> np.ndarray:
    """``P(A = a | x)`` of every row, one column per declared group (a declared group the model lacks: 0)."""
    if not hasattr(membership_estimator, "predict_proba"):
        raise TypeError(
            "membership_estimator must be a fitted classifier with predict_proba (a model of P(A | x), trained "
            f"privately or on other rows), got {type(membership_estimator).__name__}."
        )
    try:
        check_is_fitted(membership_estimator)
    except (TypeError, AttributeError):  # not a scikit-learn estimator: its classes_ and predict_proba are read next
        pass
    classes = getattr(membership_estimator, "classes_", None)
    if classes is None:
        raise TypeError("membership_estimator must have classes_ (the groups its predict_proba columns stand for).")
    classes = list(np.asarray(classes, dtype=object))
    declared = list(groups)
    undeclared = [c for c in classes if c not in declared]
    if undeclared:
        raise ValueError(
            "membership_estimator.classes_ holds a class outside the declared groups; declare every class the "
            "membership model predicts in groups=."
        )
    try:
        raw = membership_estimator.predict_proba(X)
    except (TypeError, ValueError) as exc:  # strings or NaN: dpfair's message (the column and the fix, never a value)
        refuse_raw_values(exc, X, owner="BlindFairRegressionPostProcessor's membership_estimator")
        raise
    proba = as_finite_array(raw, "membership_estimator.predict_proba(X)", mode="dtype", allow_bool=True,
                            allow_empty=True)
    if proba.ndim != 2 or proba.shape[1] != len(classes):
        raise ValueError("membership_estimator.predict_proba(X) must return one column per class of classes_.")
    out = np.zeros((proba.shape[0], len(declared)))
    for column, label in enumerate(classes):
        out[:, declared.index(label)] = proba[:, column]
    return out


def _outputs_and_membership_in(X: Any, n_groups: int) -> tuple[np.ndarray, np.ndarray]:
    """Without the two models: ``X`` holds each row's output, then ``P(A = a | x)`` per declared group (several groups).

    Returns the outputs and the membership probabilities (one column of ones with a single group).
    """
    arr = as_finite_array(X, "X", mode="dtype", allow_bool=True, allow_empty=True)
    if n_groups <= 1:
        outputs = _predict_outputs(None, arr)
        return outputs, np.ones((outputs.size, 1))
    if arr.ndim != 2 or arr.shape[1] != 1 + n_groups:
        raise ValueError(
            f"X must have 1 + n_groups = {1 + n_groups} columns without estimator: the regressor's output, "
            "then P(A = a | x) for each declared group in order."
        )
    return arr[:, 0], arr[:, 1:]


def _feature_attributes(X: Any, estimator: Any) -> dict[str, Any]:
    """``n_features_in_`` / ``feature_names_in_``: the regressor's, else those of ``X`` itself (both models read it)."""
    out = wrapped_feature_attributes(estimator) if estimator is not None else {}
    if "feature_names_in_" not in out and hasattr(X, "columns"):
        out["feature_names_in_"] = np.asarray(X.columns, dtype=object)
    if "n_features_in_" not in out:
        shape = getattr(X, "shape", None)
        out["n_features_in_"] = int(shape[1]) if shape is not None and len(shape) == 2 else 1
    return out
