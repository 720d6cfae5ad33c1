"""Prediction of :class:`~dpfair.classification.DPExponentiatedGradient`: the randomized uniform mixture of its best responses.

Post-processing of the fitted weights ``coef_`` (``h_t(z) = 1{z . w_t > 0}``); ``predict`` draws one hypothesis per row.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.utils.validation import check_is_fitted

from dpfair._estimator import as_sensitive_features, group_index
from dpfair.classification.postprocessing import _randomized_labels
from dpfair.classification.reductions._inputs import _features


class _MixturePredictor:
    """``predict_proba`` / ``predict`` of a fitted mixture of linear thresholds (A-blind or A-aware)."""

    coef_: np.ndarray
    classes_: np.ndarray
    groups_: np.ndarray
    _aware: bool
    mixture_weights_: np.ndarray | None
    _predict_seed_: Any

    def _design(self, X: Any, sensitive_features: Any) -> np.ndarray:
        check_is_fitted(self, "coef_")
        X_arr, _ = _features(self, X, reset=False)
        m = X_arr.shape[0]
        if not self._aware:
            return np.hstack([X_arr, np.ones((m, 1))])
        if sensitive_features is None:
            if self.groups_.size != 1:
                raise ValueError(
                    "sensitive_features is required with use_sensitive_at_test_time=True: pass the group of every row, "
                    "e.g. predict(X, sensitive_features=g) (with metadata routing, "
                    "set_predict_request(sensitive_features=True))."
                )
            index = np.zeros(m, dtype=np.int64)
        else:
            index = group_index(self.groups_, as_sensitive_features(sensitive_features, m))
        return np.hstack([X_arr, np.eye(self.groups_.size)[index]])

    def predict_proba(self, X: Any, *, sensitive_features: Any = None) -> np.ndarray:
        """Probability of each class under the uniform mixture of the output's best responses.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Features.
        sensitive_features : array-like of shape (n_samples,) or None, default None
            Group of every row; needed only with ``use_sensitive_at_test_time=True``.

        Returns
        -------
        ndarray of shape (n_samples, 2)
            Columns follow ``classes_``: ``P(h(x) = classes_[0])`` and ``P(h(x) = classes_[1])``.

        Raises
        ------
        NotFittedError
            Before ``fit``.
        ValueError
            For invalid input (the message names the argument).
        """
        Z = self._design(X, sensitive_features)
        votes = Z @ self.coef_.T > 0
        weights = getattr(self, "mixture_weights_", None)  # None: the uniform mixture of coef_'s rows
        p1 = votes.mean(axis=1) if weights is None else votes @ weights
        return np.column_stack([1.0 - p1, p1])

    def predict(self, X: Any, *, sensitive_features: Any = None, random_state: Any = None) -> np.ndarray:
        """Randomized prediction: each row gets the label of a hypothesis drawn from the mixture.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Features.
        sensitive_features : array-like of shape (n_samples,) or None, default None
            Group of every row; needed only with ``use_sensitive_at_test_time=True``.
        random_state : None, int, numpy Generator or NoiseSource, default None
            Randomness of the draws.  ``None``: the stream seeded at ``fit`` for a seeded estimator
            (reproducible), secure randomness otherwise.

        Returns
        -------
        ndarray of shape (n_samples,)
            Labels from ``classes_``.

        Raises
        ------
        NotFittedError
            Before ``fit``.
        ValueError
            For invalid input (the message names the argument).
        """
        proba = self.predict_proba(X, sensitive_features=sensitive_features)[:, 1]
        return _randomized_labels(self.classes_, proba, random_state, self._predict_seed_)
