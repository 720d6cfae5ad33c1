"""What the regression post-processors share about their wrapped regressor: its declaration and its outputs.

Fitting it and the shared-budget check are :mod:`dpfair._wrapped_fit`'s, one function for every post-processor;
:func:`fit_regressor_outputs` applies it with this subpackage's declaration and returns the outputs to post-process.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dpfair._estimator import refuse_raw_values
from dpfair._validation import as_finite_array, one_value_per_row
from dpfair._wrapped_fit import WrappedEstimator, fit_wrapped_estimator

_NEIGHBOURING = "replace one row of the post-processing data (the number of rows n is public)"


def _as_outputs(values: Any, name: str) -> np.ndarray:
    """Regressor outputs as a finite 1-d float array (a single column is accepted)."""
    arr = as_finite_array(values, name, mode="dtype", allow_bool=True, allow_empty=True)
    return one_value_per_row(arr, name, what="one regressor output per row")


def _predict_outputs(estimator: Any, X: Any, owner: str = "the post-processor") -> np.ndarray:
    """The wrapped regressor's outputs on ``X`` (``X`` itself when there is no regressor).

    A regressor that refuses ``X`` for strings or missing values gets dpfair's message (the column and the
    transformer to use, never a value: :func:`~dpfair._estimator.refuse_raw_values`) instead of its own.
    """
    if estimator is None:
        return _as_outputs(X, "X")
    try:
        pred = estimator.predict(X)
    except (TypeError, ValueError) as exc:
        refuse_raw_values(exc, X, owner=f"{owner}'s estimator")
        raise
    try:
        return _as_outputs(pred, "the estimator's predictions")
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{exc} Wrap a single-output regressor that predicts finite numbers.") from None


#: How both regression post-processors use their wrapped regressor (dpfair._wrapped_fit).
WRAPPED_REGRESSOR = WrappedEstimator(
    kind="regressor",
    optional=True,  # None: X holds the regressor's outputs
    not_fitted=(
        "estimator is not fitted but prefit=True: fit it first (on other data than the post-processing rows), or "
        "pass prefit=False to let {owner} fit a clone of it on (X, y)."
    ),
    clone_leak=(
        "prefit=False: {owner} trains a clone of estimator non-privately on the same rows it post-processes; "
        "the fitted object as a whole carries no differential-privacy guarantee for those rows (privacy_spent_["
        "'epsilon'] is inf, unless protects='attribute' declares their features and labels public: then it "
        "protects their sensitive attribute only). Fit the regressor on other data and pass prefit=True, or wrap "
        "a private regressor (dpfair.linear_model.DPLinearRegression) for an end-to-end guarantee."
    ),
)


def fit_regressor_outputs(post_processor: Any, X: Any, y: Any, *, prefit: bool) -> tuple[Any, np.ndarray]:
    """The regressor ``post_processor`` post-processes (as is, or a clone fitted on ``(X, y)``) and its outputs on ``X``."""
    estimator = fit_wrapped_estimator(
        WRAPPED_REGRESSOR, post_processor.estimator, X, y, prefit=prefit, owner=type(post_processor).__name__,
        caller=post_processor,
    )
    return estimator, _predict_outputs(estimator, X, type(post_processor).__name__)
