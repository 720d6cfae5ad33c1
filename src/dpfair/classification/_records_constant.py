"""The whole-record constant: what :class:`~dpfair.classification.DPFairClassifier` runs when ``m epsilon`` buys no table.

**Why.** With whole records private and a small public ``m epsilon`` (training rows times epsilon), the
post-processors' noisy tables never beat the best constant classifier: both fall back to it, and what is left to
get right is *which* constant.  They pick it from a positive-label count released with a small part of epsilon (the
rest went to the base model, the membership model and the table, none of which the constant uses), so on labels near
balance the count's noise picks the minority label now and then.  On the fairness suite's 1,000-row task (667
training rows, 44.8-47.4 % positive on its five splits) at ``epsilon = 0.5`` (``DPFairClassifier``, whole records,
100 seeded draws of 5 splits) the constant had the minority label in 6 of 500 blind fits and 1 of 500
attribute-aware ones, and the 5-split median error was above the constant's + 0.005 in 7 and 1 of the 100 draws
(one secure suite run of three showed it); with the whole epsilon on the count, in none.

**Measured where the tables stop helping** (``DPFairClassifier``, whole records, 5 splits x 8 seeded draws, share
of fits that fell back to the constant, blind / attribute at prediction): at ``m epsilon`` 334 and 400 (the
1,000-row task and the held-out FICO task, 667 training rows, ``epsilon`` 0.5 and 0.6) 80 / 80 of 80 on each task,
at 500 (``epsilon = 0.75``) 79 / 80 and 80 / 80; at 667 (``epsilon = 1``) FICO's blind table beat the constant in 22
of 40 fits (median error 0.200 against the constant's 0.309), so the line is drawn at
:data:`RECORDS_TABLE_MIN_ROWS_EPSILON` = 500, below which no fit of 320 beat the constant.  Below it the whole
epsilon goes to one count: its noise has a standard deviation of ``sqrt(2) / epsilon`` rows (2.8 at ``epsilon =
0.5``, against about 9.5 for the blind post-processor's count there).

**Privacy.** The number of positive labels plus ``Lap(1 / epsilon)``: replacing one row moves the count by at most
1, so the release is ``epsilon``-DP under replace-one-row (``m`` public).  The constant (the positive class when the
released count exceeds ``m / 2``) is post-processing.  At ``epsilon = inf`` the exact majority label, with a
:class:`~dpfair.privacy.PrivacyLeakWarning`.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import _check_feature_names, _get_feature_names, check_array, check_is_fitted

from dpfair._estimator import check_feature_values, warn_non_private
from dpfair._validation import check_positive_finite, check_row_norms
from dpfair._warnings import find_stack_level
from dpfair.base import PrivacyParameters, PrivateEstimator, ValidatedData, ValidatedOptions
from dpfair.classification._budget_warnings import SmallBudgetWarning
from dpfair.classification.blind_table import released_positive_count
from dpfair.classification.postprocessing import _two_labels
from dpfair.privacy.relations import REPLACE

__all__ = ["RECORDS_TABLE_MIN_ROWS_EPSILON", "DPMajorityClassifier"]

#: With whole records private, the public ``m epsilon`` (training rows times the whole fit's epsilon) below which
#: :class:`~dpfair.classification.DPFairClassifier` releases one label count instead of a base model and a table
#: (the measurements are in this module's docstring).
RECORDS_TABLE_MIN_ROWS_EPSILON = 500.0


def _plain(label: Any) -> Any:
    """A class label as Python prints it (``0``, not ``np.int64(0)``)."""
    return label.item() if isinstance(label, np.generic) else label


@dataclass(frozen=True, eq=False)
class _MajorityOptions(ValidatedOptions):
    data_norm: float | None


@dataclass(frozen=True, eq=False, kw_only=True)
class _MajorityData(ValidatedData):
    n_features: int
    feature_names: Any
    classes: np.ndarray
    labels: np.ndarray


class DPMajorityClassifier(PrivateEstimator, ClassifierMixin, BaseEstimator):
    """The majority label of a released positive count: the best constant classifier, ``epsilon``-DP on whole records.

    Every prediction is the same label, so every group has the same rates (equalized odds and demographic parity hold
    exactly, without reading a group).  :class:`~dpfair.classification.DPFairClassifier` runs it with
    ``protects="records"`` when the public ``m epsilon`` is below :data:`RECORDS_TABLE_MIN_ROWS_EPSILON`; it raises
    a :class:`~dpfair.classification.reductions.SmallBudgetWarning` that names the epsilon from which a table is tried.

    Parameters
    ----------
    epsilon : float, default 1.0
        The count's privacy parameter (> 0; ``inf``: the exact majority, with a leak warning).
    groups : list or None, default None
        The declared groups (the rows' groups are checked against them, never read otherwise).
    data_norm : float or None, default None
        A declared bound on every row's L2 norm, checked as the other whole-record mechanisms check it (the
        features are not read).
    budget : PrivacyBudget or None, default None
        Charged once per ``fit``.
    random_state : None, int, numpy Generator, default None
        ``None``: secure noise.  A seed: reproducible, *not hardened* noise.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        The two labels.
    groups_ : ndarray
        The declared groups.
    positive_count_ : float
        The released number of positive rows (may be negative or above ``m``).
    constant_ : int
        The predicted label's code (1: ``classes_[1]``).
    fallback_ : bool
        Always ``True``: the fit is the best constant classifier by design (the post-processors' attribute).
    n_features_in_ : int
        Number of features.
    privacy_spent_ : dict
        What the fit spent.
    """

    _privacy_parameters: ClassVar[dict[str, str]] = {
        "epsilon": "epsilon", "groups": "groups", "budget": "budget", "random_state": "random_state"
    }
    _privacy_relation = REPLACE
    _privacy_protects = "every training row (X, y, A): the released number of positive labels"
    _privacy_neighbouring = "replace one training row (X, y, A) (the number of rows m is public)"
    _results_hold_feature_attributes: ClassVar[bool] = True

    def __init__(self, *, epsilon: float = 1.0, groups: Any = None, data_norm: float | None = None,
                 budget: Any = None, random_state: Any = None) -> None:
        self.epsilon = epsilon
        self.groups = groups
        self.data_norm = data_norm
        self.budget = budget
        self.random_state = random_state

    def fit(self, X: Any, y: Any, *, sensitive_features: Any = None) -> DPMajorityClassifier:
        """Release the positive count and keep its majority label, with one charge of ``epsilon``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Numeric features (their row norms are checked against ``data_norm``; nothing else is read).
        y : array-like of shape (n_samples,)
            Two class labels.
        sensitive_features : array-like of shape (n_samples,) or None, default None
            Each row's group, one of ``groups``.

        Returns
        -------
        DPMajorityClassifier
            ``self``.
        """
        return self._set_fitted(self._release(X, y, sensitive_features=sensitive_features))

    def _validate_params(self) -> _MajorityOptions:
        data_norm = None if self.data_norm is None else check_positive_finite(self.data_norm, "data_norm")
        return _MajorityOptions(data_norm=data_norm)

    def _validate_data(self, params: PrivacyParameters, X: Any, y: Any, *, sensitive_features: Any = None) -> _MajorityData:
        if y is None:
            raise ValueError(f"{type(self).__name__} requires y to be passed, but the target y is None: pass two labels.")
        check_feature_values(X, owner=type(self).__name__)
        features = check_array(X, dtype=np.float64, input_name="X")
        check_row_norms(features, params.options.data_norm)  # (the linear models' check and words)
        _, classes, labels, m = _two_labels(X, y)
        return _MajorityData(n_rows=m, sensitive_features=sensitive_features, n_features=features.shape[1],
                             feature_names=_get_feature_names(X), classes=classes, labels=labels)

    def _warn_non_private(self, params: PrivacyParameters) -> None:
        warn_non_private(params.epsilon, "the majority label (exact count)", estimator=self)

    def _compute_statistics(self, params: PrivacyParameters, data: _MajorityData) -> np.ndarray:
        return data.labels

    def _draw_noise(self, params: PrivacyParameters, statistics: np.ndarray, noise: Any) -> float:
        if math.isinf(params.epsilon):
            return float(statistics.sum())
        return released_positive_count(statistics, params.epsilon, noise)

    def _solve(self, params: PrivacyParameters, noisy: float, data: _MajorityData) -> dict[str, Any]:
        constant = int(noisy > data.n_rows / 2.0)  # post-processing of the release
        if data.n_rows * params.epsilon < RECORDS_TABLE_MIN_ROWS_EPSILON:  # (DPFairClassifier's case; inf: never)
            warnings.warn(
                f"{type(self).__name__}: whole records are private and m * epsilon = {data.n_rows * params.epsilon:.0f} "
                f"(m = {data.n_rows} training rows) is below {RECORDS_TABLE_MIN_ROWS_EPSILON:g}, where no private table "
                "measured beat the best constant classifier; so the whole epsilon released the number of positive "
                f"labels and the fit predicts the majority label it shows ({_plain(data.classes[constant])!r}) for every "
                "row (equal rates in every group). A table "
                f"is tried from epsilon = {RECORDS_TABLE_MIN_ROWS_EPSILON / max(data.n_rows, 1):.3g} on (or with more "
                "rows).", SmallBudgetWarning, stacklevel=find_stack_level())
        return {"classes_": data.classes, "groups_": np.asarray(data.groups), "positive_count_": float(noisy),
                "constant_": constant, "fallback_": True, "n_features_in_": data.n_features,
                **({} if data.feature_names is None else {"feature_names_in_": data.feature_names})}

    def predict_proba(self, X: Any, *, sensitive_features: Any = None) -> np.ndarray:
        """The constant's probabilities: 1 for its label on every row.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Features (only their number of rows is used).
        sensitive_features : array-like or None, default None
            Ignored (a constant needs no group).

        Returns
        -------
        ndarray of shape (n_samples, 2)
            The probabilities of the negative and the positive class.
        """
        check_is_fitted(self, "constant_")
        check_feature_values(X, owner=type(self).__name__)
        _check_feature_names(self, X, reset=False)
        rows = check_array(X, dtype=np.float64, input_name="X")
        if rows.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {rows.shape[1]} features, but {type(self).__name__} is expecting "
                             f"{self.n_features_in_} features as input.")
        out = np.zeros((rows.shape[0], 2))
        out[:, self.constant_] = 1.0
        return out

    def predict(self, X: Any, *, sensitive_features: Any = None) -> np.ndarray:
        """The constant's label for every row.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Features (only their number of rows is used).
        sensitive_features : array-like or None, default None
            Ignored.

        Returns
        -------
        ndarray of shape (n_samples,)
            ``classes_[constant_]`` for every row.
        """
        return self.classes_[self.predict_proba(X).argmax(axis=1)]
