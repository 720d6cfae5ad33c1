"""What the two private preprocessing transformers share: one release of a per-column statistic from ``X`` alone.

The steps of :mod:`dpfair.base`'s template that :class:`DPMedianImputer` and :class:`DPQuantileClipper` take alike:
``fit(X, y=None)`` releases from ``X``; the statistics are the table itself; the released array is stored under
``_released_attribute`` (with the feature attributes); at ``epsilon = inf`` the exact ``_released_what`` are taken.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from dpfair._estimator import warn_non_private
from dpfair.base import PrivacyParameters, PrivateEstimator, ValidatedData

__all__ = ["OUTSIDE_DECLARED_BOUNDS", "ColumnRelease"]

#: the message of a training value outside its declared range (``_validate_data`` of both transformers)
OUTSIDE_DECLARED_BOUNDS = ("X has value(s) outside the declared bounds: the privacy guarantee rests on those ranges. "
                           "Clip the columns with public constants (DeclaredRangeScaler), or declare wider bounds.")


class ColumnRelease(PrivateEstimator):
    """The shared template steps: a :class:`dpfair.base.PrivateEstimator` that the two transformers subclass."""

    #: the fitted attribute that holds the released array (e.g. ``"statistics_"``)
    _released_attribute: ClassVar[str]
    #: what is released, plural, for the epsilon = inf warning and accounting (e.g. ``"medians"``)
    _released_what: ClassVar[str]

    def _release_arguments(self, X: Any, y: Any = None, **fit_params: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """``fit(X, y=None)`` releases from ``X`` alone."""
        return (X,), {}

    def _compute_statistics(self, params: PrivacyParameters, data: ValidatedData) -> np.ndarray:
        return data.X

    def _solve(self, params: PrivacyParameters, noisy: np.ndarray, data: ValidatedData) -> dict[str, Any]:
        results: dict[str, Any] = {self._released_attribute: np.asarray(noisy, dtype=float).copy(),
                                   "n_features_in_": data.X.shape[1]}
        if data.names is not None:
            results["feature_names_in_"] = data.names
        return results

    def _warn_non_private(self, params: PrivacyParameters) -> None:
        warn_non_private(params.epsilon, f"{type(self).__name__}'s {self._released_what}", estimator=self)

    def _privacy_spent(self, params: PrivacyParameters, results: dict[str, Any]) -> dict[str, Any]:
        spent = super()._privacy_spent(params, results)
        if math.isinf(params.epsilon):
            spent["protects"] = f"nothing: epsilon=inf takes the exact {self._released_what}"
        return spent
