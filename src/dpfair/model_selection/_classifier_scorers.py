"""Private validation scores of classifiers: accuracy, and error with an equalized-odds penalty (count based).

Both scorers release noisy *counts* of the ``n`` validation rows (``n`` public, as in every scorer of
:mod:`dpfair.model_selection._scorers`) through :func:`dpfair.privacy.laplace_mechanism`; the score is a
post-processing of the release.  Their sensitivities are derived in :func:`accuracy_sensitivity` and
:func:`equalized_odds_sensitivity`.  Labels may be any hashable values (strings included): the accuracy
scorer compares predictions with labels, the equalized-odds scorer maps both through the declared
``pos_label`` (a public map).

**Why a per-row argument holds for a fitted model.**  The scored model ``h`` was fitted on other rows (the
search's training rows) or is fixed, and a randomized classifier (``DPEqualizedOddsPostProcessor``) draws
its prediction randomness ``u`` independently of the data, one coordinate per row.  Given ``h`` and ``u``,
row ``i``'s prediction ``h(x_i, a_i, u_i)`` depends on row ``i`` only, so replacing row ``i`` changes only
row ``i``'s contribution to the counts.  The release is ``epsilon``-DP for every fixed ``(h, u)``, hence for
their mixture (``u`` is independent of the data; ``h`` is covered by the search's parallel composition).
"""

from __future__ import annotations

import math
import numbers
from typing import Any, ClassVar

import numpy as np

from dpfair._estimator import as_sensitive_features, group_index, resolve_groups
from dpfair._validation import check_int
from dpfair.base import PrivacyParameters
from dpfair.model_selection._scorers import ScoredRows, _predictions, _PrivateScorer
from dpfair.privacy.mechanisms import laplace_mechanism
from dpfair.privacy.noise import NoiseSource

__all__ = ["PrivateAccuracyScorer", "PrivateEqualizedOddsScorer", "accuracy_sensitivity", "equalized_odds_sensitivity"]


def accuracy_sensitivity(n_rows: int) -> float:
    """L1 sensitivity of the error rate of ``n_rows`` validation rows under "replace one row".

    The error rate is ``(1/n) sum_i 1[h(x_i) != y_i]``.  Given the model (module docstring), replacing
    row ``i`` by any row changes only the ``i``-th indicator, from one value in ``{0, 1}`` to another:
    the sum moves by at most 1 and the rate by at most ``1/n`` (``n`` is public under replacement).
    So ``rate + Laplace(1 / (n epsilon))`` is ``epsilon``-DP for the rows' features, labels and groups.

    Parameters
    ----------
    n_rows : int
        Number of validation rows ``n`` (public).

    Returns
    -------
    float
        ``1 / n_rows``.
    """
    return 1.0 / check_int(n_rows, "n_rows", minimum=1)


def equalized_odds_sensitivity(n_rows: int) -> float:
    """L1 sensitivity of the (group, label, prediction) frequency table of ``n_rows`` rows under "replace one row".

    The table ``T[a, y, p] = (1/n) #{i : a_i = a, 1[y_i = pos] = y, 1[h(x_i, a_i) = pos] = p}`` has
    ``|A| x 2 x 2`` cells and every row adds ``1/n`` to exactly one of them.  Replacing row ``i`` by any
    row ``i'`` (its features, label *and group* may all change) removes ``1/n`` from the cell of row ``i``
    and adds ``1/n`` to the cell of row ``i'``: ``||T - T'||_1 <= 2/n`` (``0`` when both fall in the same
    cell).  Changing only a row's sensitive attribute is a special case (Claim B.1 of Jagielski et al.
    2019 gives the same ``2/m`` for their table).  So ``T + Laplace(2 / (n epsilon))`` in every cell is
    ``epsilon``-DP under "replace one row", hence also under "change one row's sensitive attribute".

    Parameters
    ----------
    n_rows : int
        Number of validation rows ``n`` (public).

    Returns
    -------
    float
        ``2 / n_rows``.
    """
    return 2.0 / check_int(n_rows, "n_rows", minimum=1)


def class_labels(y: Any, name: str = "y") -> np.ndarray:
    """``y`` as a 1-d array of class labels (any hashable values): no missing value, no complex numbers."""
    if y is None or isinstance(y, str | bytes):
        raise TypeError(f"{name} must hold one class label per row (an array-like), got {type(y).__name__}.")
    arr = np.asarray(y.to_numpy() if hasattr(y, "to_numpy") else y)
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-dimensional (one class label per row), got shape {arr.shape}.")
    if arr.dtype.kind == "c":
        raise ValueError(f"Complex data not supported: {name} must hold class labels.")
    if arr.dtype.kind == "f" and not np.isfinite(arr).all():
        raise ValueError(f"{name} contains NaN or infinite values; pass a class label for every row.")
    if arr.dtype.kind == "O" and any(v is None or (isinstance(v, float) and math.isnan(v)) for v in arr.tolist()):
        raise ValueError(f"{name} contains missing values (None or NaN); pass a class label for every row.")
    return arr


class PrivateAccuracyScorer(_PrivateScorer):
    """Private accuracy on the validation rows: ``1 - (error rate + Laplace(1 / (n epsilon)))``.

    The error rate of the model's predictions against the labels (any labels, strings included) has
    L1 sensitivity ``1/n`` under "replace one row" (:func:`accuracy_sensitivity`), so the release is
    ``epsilon``-DP for the validation rows' features, labels and groups.  The score (higher is better)
    is the noisy accuracy; it may leave ``[0, 1]`` by the noise.

    Examples
    --------
    >>> from dpfair.model_selection import PrivateAccuracyScorer
    >>> PrivateAccuracyScorer().sensitivity(1000)
    0.001
    """

    protects = "the features, label and group of every validation row (noisy error count, Laplace)"
    _privacy_parameters: ClassVar[dict[str, str]] = {}

    def sensitivity(self, n_rows: int) -> float:
        """L1 sensitivity of the error rate: ``1 / n_rows`` (:func:`accuracy_sensitivity`).

        Parameters
        ----------
        n_rows : int
            The number of validation rows (public).

        Returns
        -------
        float
            ``1 / n_rows``.
        """
        return accuracy_sensitivity(n_rows)

    def noisy_error(self, estimator: Any, X: Any, y: Any, sensitive_features: Any, *, epsilon: float,
                    noise: NoiseSource) -> float:
        """The released (noisy) error rate of ``estimator`` on the rows.

        Parameters
        ----------
        estimator : fitted classifier
            Predicts with ``predict(X)`` (and ``sensitive_features=`` when its ``predict`` takes it).
        X, y, sensitive_features : array-like
            The validation rows.
        epsilon : float
            Privacy parameter of this release (``inf``: exact).
        noise : NoiseSource
            Noise source.

        Returns
        -------
        float
            The error rate plus Laplace noise (exact when ``epsilon`` is infinite).
        """
        labels = class_labels(y)
        pred = _predictions(estimator, X, sensitive_features, labels=True)
        error = float(np.mean(pred != labels)) if labels.size else 0.0
        if math.isinf(epsilon):
            return error
        return float(laplace_mechanism(error, sensitivity=self.sensitivity(labels.size), epsilon=epsilon,
                                       noise=noise))

    _noisy_loss = noisy_error

    def __call__(self, estimator: Any, X: Any, y: Any, sensitive_features: Any, *, epsilon: float,
                 noise: NoiseSource) -> float:
        """The noisy accuracy ``1 - noisy error rate`` (higher is better)."""
        return 1.0 - self.noisy_error(estimator, X, y, sensitive_features, epsilon=epsilon, noise=noise)

    def _validate_data(self, params: PrivacyParameters, X: Any, y: Any, *,
                       sensitive_features: Any = None) -> ScoredRows:
        return ScoredRows(y=class_labels(y))


class PrivateEqualizedOddsScorer(_PrivateScorer):
    """Private error with an equalized-odds penalty, from one noisy (group, label, prediction) table.

    Releases the frequency table ``T[a, y, p]`` of the validation rows over the declared ``groups``,
    the label (``pos_label`` or not) and the prediction (``pos_label`` or not) with
    ``Laplace(2 / (n epsilon))`` in each cell (L1 sensitivity ``2/n`` under "replace one row",
    :func:`equalized_odds_sensitivity`); everything else is post-processing of that one release:

    * the error ``T[:, 0, 1].sum() + T[:, 1, 0].sum()`` (cells clipped at 0);
    * every group's true- and false-positive rate ``T[a, y, 1] / (T[a, y, 0] + T[a, y, 1])`` (groups whose
      noisy mass for that label is not positive are left out) and the equalized-odds violation: the larger
      of the spreads (max minus min over the groups) of the two rates, as fairlearn's
      ``equalized_odds_difference``;
    * the loss ``error + eo_weight * excess``, ``excess`` the violation (``eo_target=None``) or
      ``max(0, violation - eo_target)``.  The score is minus the loss (higher is better).

    **What it protects.** ``epsilon``-DP for every validation row's features, label and group under
    "replace one row" (so also under "change one row's sensitive attribute"): the scorer reads the group
    of every validation row, and that read is inside the noisy table.  A row whose group is not declared
    raises before anything is charged.

    Parameters
    ----------
    groups : list
        The declared groups (never read off the data).
    pos_label : hashable, default 1
        The positive class of the labels and predictions (any other value is negative); public.
    eo_weight : float, default 1.0
        Weight of the violation against the error (``>= 0``; large: fairness first).
    eo_target : float or None, default None
        Violation below which there is no penalty (in ``[0, 1]``; ``None``: penalise all of it).

    Examples
    --------
    >>> from dpfair.model_selection import PrivateEqualizedOddsScorer
    >>> PrivateEqualizedOddsScorer(["F", "M"], pos_label=">50K", eo_target=0.05).sensitivity(1000)
    0.002
    """

    protects = ("the features, label and group of every validation row (one noisy table of group, label and "
                "prediction, Laplace)")
    _privacy_parameters: ClassVar[dict[str, str]] = {"groups": "groups"}

    def __init__(self, groups: Any, pos_label: Any = 1, *, eo_weight: float = 1.0, eo_target: float | None = None) -> None:
        self.groups = np.asarray(resolve_groups(groups, np.empty(0, dtype=object), 1.0)[0])
        try:
            hash(pos_label)
        except TypeError:
            raise TypeError(f"pos_label must be one class label (hashable), got {type(pos_label).__name__}.") from None
        if isinstance(eo_weight, bool) or not isinstance(eo_weight, numbers.Real) or not (
            math.isfinite(eo_weight) and eo_weight >= 0
        ):
            raise ValueError(f"eo_weight must be a finite number >= 0, got {eo_weight!r}.")
        if eo_target is not None and (isinstance(eo_target, bool) or not isinstance(eo_target, numbers.Real)
                                      or not 0 <= eo_target <= 1):
            raise ValueError(f"eo_target must be None or a number in [0, 1], got {eo_target!r}.")
        self.pos_label = pos_label
        self.eo_weight = float(eo_weight)
        self.eo_target = None if eo_target is None else float(eo_target)

    def sensitivity(self, n_rows: int) -> float:
        """L1 sensitivity of the table: ``2 / n_rows`` (:func:`equalized_odds_sensitivity`).

        Parameters
        ----------
        n_rows : int
            The number of validation rows (public).

        Returns
        -------
        float
            ``2 / n_rows``.
        """
        return equalized_odds_sensitivity(n_rows)

    def noisy_table(self, estimator: Any, X: Any, y: Any, sensitive_features: Any, *, epsilon: float,
                    noise: NoiseSource) -> np.ndarray:
        """The released frequency table ``T[group, label is pos_label, prediction is pos_label]``.

        Parameters
        ----------
        estimator : fitted classifier
            Predicts with ``predict(X)`` (and ``sensitive_features=`` when its ``predict`` takes it).
        X, y, sensitive_features : array-like
            The validation rows.
        epsilon : float
            Privacy parameter of this release (``inf``: exact).
        noise : NoiseSource
            Noise source.

        Returns
        -------
        ndarray of shape (n_groups, 2, 2)
            Frequencies (summing to 1 before the noise) plus Laplace noise.
        """
        labels = class_labels(y)
        n = labels.size
        pred = _predictions(estimator, X, sensitive_features, labels=True)
        index = group_index(self.groups, as_sensitive_features(sensitive_features, n))
        table = np.zeros((self.groups.size, 2, 2))
        if n:
            np.add.at(table, (index, (labels == self.pos_label).astype(np.int64), (pred == self.pos_label).astype(np.int64)),
                      1.0 / n)
        if math.isinf(epsilon):
            return table
        return np.asarray(laplace_mechanism(table, sensitivity=self.sensitivity(max(n, 1)), epsilon=epsilon,
                                            noise=noise))

    @staticmethod
    def error_and_violation(table: np.ndarray) -> tuple[float, float]:
        """Post-processing of a (noisy) table: ``(error, equalized-odds violation)``, both in ``[0, 1]``.

        Parameters
        ----------
        table : ndarray of shape (n_groups, 2, 2)
            ``T[group, label is positive, prediction is positive]``.

        Returns
        -------
        error : float
            The error rate read off the table.
        violation : float
            The largest gap in false- or true-positive rates between groups with mass.
        """
        clipped = np.clip(np.asarray(table, dtype=float), 0.0, None)
        error = float(np.clip(clipped[:, 0, 1].sum() + clipped[:, 1, 0].sum(), 0.0, 1.0))
        violation = 0.0
        for label in (0, 1):  # false-positive rates, then true-positive rates
            mass = clipped[:, label, :].sum(axis=1)
            present = mass > 0
            if present.sum() >= 2:
                rates = clipped[present, label, 1] / mass[present]
                violation = max(violation, float(rates.max() - rates.min()))
        return error, violation

    def _noisy_loss(self, estimator: Any, X: Any, y: Any, sensitive_features: Any, *, epsilon: float,
                    noise: NoiseSource) -> float:
        error, violation = self.error_and_violation(
            self.noisy_table(estimator, X, y, sensitive_features, epsilon=epsilon, noise=noise))
        excess = violation if self.eo_target is None else max(0.0, violation - self.eo_target)
        return error + self.eo_weight * excess

    def _validate_data(self, params: PrivacyParameters, X: Any, y: Any, *,
                       sensitive_features: Any = None) -> ScoredRows:
        # the template maps every row to the declared groups (ValueError for another label, before any charge)
        if sensitive_features is None:
            raise ValueError(f"{type(self).__name__} needs sensitive_features: it compares the rates of the declared "
                             f"groups {self.groups.tolist()}.")
        labels = class_labels(y)
        return ScoredRows(y=labels, sensitive_features=sensitive_features, n_rows=labels.size)
