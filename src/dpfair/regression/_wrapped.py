"""Helpers the regression post-processors share: the wrapped regressor's fit and outputs, and the shared budget check.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import _num_samples, check_is_fitted, column_or_1d

from dpfair._estimator import (
    private_base,
    warn_leak_once,
)
from dpfair._validation import check_budgets_cover, real_array
from dpfair.privacy import default_budget

_NEIGHBOURING = "replace one row of the post-processing data (the number of rows n is public)"


def _as_outputs(values: Any, name: str) -> np.ndarray:
    """Regressor outputs as a finite 1-d float array (a single column is accepted)."""
    arr = real_array(values, name)
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim != 1:
        raise ValueError(f"{name} must hold one regressor output per row (1-d), got shape {arr.shape}.")
    if arr.size == 0:
        raise ValueError(f"{name} is empty; pass at least one row.")
    return arr


def _predict_outputs(estimator: Any, X: Any) -> np.ndarray:
    """The wrapped regressor's outputs on ``X`` (``X`` itself when there is no regressor)."""
    if estimator is None:
        return _as_outputs(X, "X")
    pred = estimator.predict(X)
    try:
        return _as_outputs(pred, "the estimator's predictions")
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{exc} Wrap a single-output regressor that predicts finite numbers.") from None


def _fit_wrapped(estimator: Any, prefit: bool, X: Any, y: Any, owner: str, caller: Any = None) -> Any:
    """Return the regressor to post-process: as is (``prefit``) or ``clone(estimator).fit(X, y)``.

    A clone fitted here that is not private (no ``privacy_spent_``) raises a PrivacyLeakWarning (once
    per configuration of ``caller``'s clones); a private one (e.g. ``DPLinearRegression``) does not.
    """
    if estimator is None:
        return None
    if not hasattr(estimator, "predict"):
        raise TypeError(f"estimator must be a regressor with a predict method (or None), got {type(estimator).__name__}.")
    if prefit:
        try:
            check_is_fitted(estimator)
        except NotFittedError:
            raise NotFittedError(
                f"estimator is not fitted but prefit=True: fit it first (on other data than the post-processing "
                f"rows), or pass prefit=False to let {owner} fit a clone of it on (X, y)."
            ) from None
        except TypeError:
            pass  # not a scikit-learn estimator: trust prefit=True, its predict is called below
        return estimator
    if y is None:
        raise ValueError(
            f"{owner} requires y to be passed, but the target y is None: prefit=False fits a clone of estimator "
            "on (X, y); pass y, or pass a fitted estimator with prefit=True."
        )
    y = column_or_1d(y, warn=True)  # its values are the wrapped estimator's to validate
    n_rows = _num_samples(X)
    if y.shape[0] != n_rows:
        raise ValueError(f"y must have one value per row of X ({n_rows} rows), got {y.shape[0]}.")
    fitted = clone(estimator).fit(X, y)
    if not private_base(fitted):
        warn_leak_once(
            caller,
            f"prefit=False: {owner} trains a clone of estimator non-privately on the same rows it post-processes; "
            "the fitted object as a whole carries no differential-privacy guarantee (privacy_spent_['epsilon'] is "
            "inf). Fit the regressor on other data and pass prefit=True, or wrap a private regressor "
            "(dpfair.linear_model.DPLinearRegression) for an end-to-end guarantee.",
            stacklevel=4,
        )
    return fitted


def _check_shared_budgets(caller: Any, prefit: bool) -> None:
    """With ``prefit=False``, refuse before any fit a budget that cannot pay for the base's and the caller's charges."""
    if prefit or caller.estimator is None:
        return
    charges = [(b if b is not None else default_budget(), e, d) for b, e, d in caller._dpfair_fit_charges()]
    check_budgets_cover(
        [(b, e, d, "estimator.budget" if i < len(charges) - 1 else "budget") for i, (b, e, d) in enumerate(charges)],
        fix="give the post-processor and its regressor a budget that pays for both fits",
    )
