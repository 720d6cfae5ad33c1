"""Class labels of :class:`~dpfair.classification.DPEqualizedOddsPostProcessor`: any two labels, as in scikit-learn."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

__all__: list[str] = []


def _label_array(values: Any, name: str, fix: str) -> np.ndarray:
    """``values`` as a 1-d array of labels; ``ValueError``/``TypeError`` naming ``name`` otherwise."""
    try:
        arr = np.asarray(values)
    except Exception:
        raise TypeError(f"{name} must be an array of class labels. {fix}") from None
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-dimensional (one label per row), got shape {arr.shape}. {fix}")
    if arr.dtype.kind == "c":
        raise ValueError(f"Complex data not supported: {name} must hold two class labels. {fix}")
    if arr.dtype.kind == "f":
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"{name} must hold two class labels (it holds NaN or inf). {fix}")
        if not np.all(arr == np.round(arr)):
            raise ValueError(f"{name} must hold two class labels (Unknown label type: continuous). {fix}")
    elif arr.dtype.kind == "O":
        if pd.isna(pd.Series(arr, dtype=object)).any():
            raise ValueError(f"{name} must hold two class labels (it holds missing values). {fix}")
    elif arr.dtype.kind not in "biuUS":
        raise ValueError(f"Unknown label type: {name} must hold two class labels, got dtype {arr.dtype}. {fix}")
    return arr


def _classes(values: Any, name: str, fix: str) -> tuple[np.ndarray, np.ndarray]:
    """``(classes, encoded)``: the two labels of ``values`` (sorted; the second is the positive class) and 0/1 codes.

    Labels within {0, 1} give ``classes = [0, 1]`` even when one of them is absent (as before any two
    labels were accepted); any other two labels, as in scikit-learn, are sorted.
    """
    arr = _label_array(values, name, fix)
    if arr.dtype.kind in "biuf" and arr.size and np.all((arr == 0) | (arr == 1)):
        return np.array([0, 1]), arr.astype(np.int64)
    if arr.dtype.kind in "biuf" and arr.size == 0:
        return np.array([0, 1]), arr.astype(np.int64)
    try:
        classes, encoded = np.unique(arr, return_inverse=True)
    except TypeError:
        raise TypeError(f"{name} must hold comparable class labels (all numbers or all strings). {fix}") from None
    if classes.size != 2:
        raise ValueError(
            f"{name} must hold exactly two class labels (Only binary classification is supported; labels other than "
            f"0 and 1 must both occur), got {'one' if classes.size == 1 else 'more than two'}. {fix}"
        )
    return classes, encoded.astype(np.int64)
