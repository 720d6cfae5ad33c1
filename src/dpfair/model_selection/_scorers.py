"""Private validation scores with declared bounds, for :class:`~dpfair.model_selection.PrivateRandomSearch`.

Every scorer is called as ``scorer(estimator, X, y, sensitive_features, *, epsilon, noise)`` on the
validation rows and returns a noisy score (higher is better) that is ``epsilon``-DP for those rows
under "replace one row" (their number is public).  Each says what it protects (``protects``) and
its sensitivity (``sensitivity(n_rows)``).

The scorers are mechanisms of :mod:`dpfair.base` whose charge the search pays: they declare their
bounds (and groups) in ``_privacy_parameters``, and :meth:`~_PrivateScorer.check` is the template's
dry run (steps 1 and 2: the declared parameters by their roles, then the rows, then the groups), run by
the search before its one charge.  A scorer never charges a budget itself.
"""

from __future__ import annotations

import inspect
import math
import numbers
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from dpfair._estimator import as_sensitive_features, group_index, resolve_groups
from dpfair._validation import as_finite_array, check_bounds, check_int
from dpfair.base import PrivacyParameters, PrivateMechanismMixin, ValidatedData
from dpfair.privacy.mechanisms import laplace_mechanism
from dpfair.privacy.noise import NoiseSource
from dpfair.regression import l_inf_isotonic_cdf

__all__ = ["PrivateKSScorer", "PrivateMSEKSScorer", "PrivateMSEScorer"]


@dataclass(frozen=True, eq=False, kw_only=True)
class ScoredRows(ValidatedData):
    """The validation rows a scorer checked (step 1 of the template; a scorer's release is run by the search).

    Parameters
    ----------
    y : ndarray or None, default None
        The labels, validated as the scorer reads them (``None``: the scorer does not read them).
    """

    y: np.ndarray | None = None


class _PrivateScorer(PrivateMechanismMixin):
    """Base class: ``scorer(estimator, X, y, sensitive_features, *, epsilon, noise) -> float`` (higher is better).

    A subclass declares ``_privacy_parameters``, validates the rows in ``_validate_data`` and releases its
    noisy loss in ``_noisy_loss``; the score is minus that loss.
    """

    protects = ""

    def check(self, X: Any, y: Any, sensitive_features: Any) -> None:
        """Refuse rows this scorer cannot score (run by the search before it charges anything).

        The template's dry run (steps 1 and 2 of :mod:`dpfair.base`): the declared bounds (and groups) by
        their roles, then the rows, then each row's group; nothing is charged and no noise is drawn.

        Parameters
        ----------
        X, y, sensitive_features : array-like
            The rows.
        """
        self._dry_run(X, y, sensitive_features=sensitive_features)

    def _validate_data(self, params: PrivacyParameters, X: Any, y: Any, *,
                       sensitive_features: Any = None) -> ScoredRows:
        return ScoredRows()

    def _noisy_loss(self, estimator: Any, X: Any, y: Any, sensitive_features: Any, *, epsilon: float,
                    noise: NoiseSource) -> float:  # pragma: no cover - abstract
        raise NotImplementedError

    def __call__(self, estimator: Any, X: Any, y: Any, sensitive_features: Any, *, epsilon: float,
                 noise: NoiseSource) -> float:
        """Minus the released (noisy) loss of ``estimator`` on the validation rows: higher is better.

        Parameters
        ----------
        estimator, X, y, sensitive_features, epsilon, noise
            The fitted model (it predicts with ``predict(X, sensitive_features=...)``), the validation
            rows, this score's privacy parameter (``inf``: exact) and the search's noise source (drawn
            from only after the search's charge).

        Returns
        -------
        float
            Minus the loss: higher is better.
        """
        return -self._noisy_loss(estimator, X, y, sensitive_features, epsilon=epsilon, noise=noise)


def takes_sensitive_features(method: Any, sensitive_features: Any) -> bool:
    """Whether to pass ``sensitive_features=`` to ``method`` (a ``fit`` or ``predict``).

    Yes when its signature names ``sensitive_features``; with only ``**kwargs`` (a ``Pipeline``), when groups are
    given; never otherwise (``DPLogisticRegression.fit(X, y)``): the search and its scorers still read the groups.
    """
    try:
        parameters = inspect.signature(method).parameters
    except (TypeError, ValueError):  # no signature: pass groups only when there are some
        return sensitive_features is not None
    if "sensitive_features" in parameters:
        return True
    return sensitive_features is not None and any(p.kind is p.VAR_KEYWORD for p in parameters.values())


def _predictions(estimator: Any, X: Any, sensitive_features: Any, *, labels: bool = False) -> np.ndarray:
    """The fitted model's predictions of ``X`` (``sensitive_features`` passed when its ``predict`` takes them).

    ``labels``: class labels of any type (a classifier's); else finite real numbers.
    """
    predict = estimator.predict
    raw = predict(X, sensitive_features=sensitive_features) if takes_sensitive_features(predict, sensitive_features) \
        else predict(X)
    if labels:
        return np.asarray(raw).reshape(-1)
    pred = as_finite_array(raw, "the estimator's predictions", mode="dtype", allow_bool=True, allow_empty=True)
    return pred.reshape(-1)


class _SingleReleaseScorer(_PrivateScorer):
    """A scorer that releases one noisy statistic of the ``n`` validation rows, of L1 sensitivity ``c / n``."""

    def _row_sensitivity(self) -> float:  # pragma: no cover - abstract
        """The constant ``c``: how much replacing one row moves ``n`` times the statistic."""
        raise NotImplementedError

    def sensitivity(self, n_rows: int) -> float:
        """L1 sensitivity of the released statistic to replacing one of ``n_rows`` rows.

        Parameters
        ----------
        n_rows : int
            Number of validation rows (public).

        Returns
        -------
        float
            ``(t - s)^2 / n_rows`` for the clipped MSE, ``2 / n_rows`` for the KS joint histogram.
        """
        return self._row_sensitivity() / check_int(n_rows, "n_rows", minimum=1)

    def _check_sensitivity(self, n_rows: int) -> None:
        """The release's sensitivity on ``n_rows`` rows, before any charge: bounds so narrow that ``(t - s)^2 / n``
        underflows would make the Laplace scale 0, refused only after a search's charge otherwise."""
        sensitivity = self.sensitivity(max(1, n_rows))
        if not (math.isfinite(sensitivity) and sensitivity > 0.0):
            raise ValueError(
                f"bounds={getattr(self, 'bounds', None)!r} are too narrow for {type(self).__name__} on {n_rows} rows: "
                "the release's sensitivity underflows to 0 in float64; declare wider bounds (rescale the target)."
            )


class PrivateMSEScorer(_SingleReleaseScorer):
    """Private clipped mean squared error on the validation rows (Laplace mechanism).

    Predictions and labels are clipped to the declared ``bounds = (s, t)``, so each row's squared
    error lies in ``[0, (t - s)^2]`` and, replacing one validation row, the mean moves by at most
    ``(t - s)^2 / n`` (``n`` public): the release ``mean + Laplace((t - s)^2 / (n epsilon))`` is
    ``epsilon``-DP for the validation rows' features, labels and groups.  The score is minus it.

    Parameters
    ----------
    bounds : (float, float)
        Declared range ``[s, t]`` of the labels and predictions (never read off the data).
    """

    protects = "the features, label and group of every validation row (clipped squared error, Laplace)"
    _privacy_parameters: ClassVar[dict[str, str]] = {"bounds": "bounds"}

    def __init__(self, bounds: tuple[float, float]) -> None:
        self.bounds = check_bounds(bounds, "PrivateMSEScorer bounds", max_width=1e150)

    def _row_sensitivity(self) -> float:
        lo, hi = self.bounds
        return (hi - lo) ** 2  # each row's clipped squared error lies in [0, (t - s)^2]

    def noisy_mse(self, estimator: Any, X: Any, y: Any, sensitive_features: Any, *, epsilon: float,
                  noise: NoiseSource) -> float:
        """The released (noisy) clipped MSE.

        Parameters
        ----------
        estimator : fitted estimator
            Predicts with ``predict(X, sensitive_features=...)``.
        X, y, sensitive_features : array-like
            The validation rows.
        epsilon : float
            Privacy parameter of this release (``inf``: exact).
        noise : NoiseSource
            Noise source.

        Returns
        -------
        float
            The clipped MSE plus Laplace noise (exact when ``epsilon`` is infinite).
        """
        lo, hi = self.bounds
        pred = np.clip(_predictions(estimator, X, sensitive_features), lo, hi)
        labels = np.clip(as_finite_array(y, "y", mode="dtype", allow_bool=True, allow_empty=True).reshape(-1), lo, hi)
        mse = float(np.mean((pred - labels) ** 2))
        if math.isinf(epsilon):
            return mse
        return float(laplace_mechanism(mse, sensitivity=self.sensitivity(labels.size), epsilon=epsilon,
                                       noise=noise))

    _noisy_loss = noisy_mse

    def _validate_data(self, params: PrivacyParameters, X: Any, y: Any, *,
                       sensitive_features: Any = None) -> ScoredRows:
        # labels must be finite real numbers: they are clipped to bounds, never guessed
        labels = as_finite_array(y, "y", mode="dtype", allow_bool=True, allow_empty=True)
        self._check_sensitivity(labels.size)
        return ScoredRows(y=labels)


class PrivateKSScorer(_SingleReleaseScorer):
    """Private statistical-parity violation (max pairwise KS distance) on the validation rows.

    Releases the joint histogram of (group, predicted bin) over the declared ``groups`` and
    ``n_bins`` equal bins of ``bounds`` with Laplace noise (L1 sensitivity ``2 / n``: replacing a row
    moves ``1/n`` of mass between two cells), repairs each group's noisy CDF as Algorithm 1 does
    (L-infinity isotonic regression, clipping) and returns the largest pairwise KS distance between
    the groups with positive noisy weight, a post-processing.  ``epsilon``-DP for the validation
    rows' features and groups (labels are not used).  The score is minus it.

    Parameters
    ----------
    bounds : (float, float)
        Declared range of the predictions (predictions outside go to the end bins).
    groups : list
        The declared groups (never read off the data).
    n_bins : int, default 50
        Histogram bins.
    """

    protects = "the features and group of every validation row (noisy joint histogram of group and predicted bin)"
    _privacy_parameters: ClassVar[dict[str, str]] = {"bounds": "bounds", "groups": "groups"}

    def __init__(self, bounds: tuple[float, float], groups: Any, n_bins: int = 50) -> None:
        self.bounds = check_bounds(bounds, "PrivateKSScorer bounds")
        self.groups = np.asarray(resolve_groups(groups, np.empty(0, dtype=object), 1.0)[0])
        self.n_bins = check_int(n_bins, "n_bins", minimum=1)

    def _row_sensitivity(self) -> float:
        return 2.0  # replacing a row moves 1/n of mass out of one cell and into another

    def noisy_ks(self, estimator: Any, X: Any, sensitive_features: Any, *, epsilon: float, noise: NoiseSource) -> float:
        """The released KS violation.

        Parameters
        ----------
        estimator : fitted estimator
            Predicts with ``predict(X, sensitive_features=...)``.
        X, sensitive_features : array-like
            The validation rows.
        epsilon : float
            Privacy parameter of this release (``inf``: exact).
        noise : NoiseSource
            Noise source.

        Returns
        -------
        float
            In ``[0, 1]``.
        """
        pred = _predictions(estimator, X, sensitive_features)
        n = pred.size
        index = group_index(self.groups, as_sensitive_features(sensitive_features, n))
        lo, hi = self.bounds
        bins = np.clip(np.floor((pred - lo) / (hi - lo) * self.n_bins), 0, self.n_bins - 1).astype(np.int64)
        joint = np.zeros((self.groups.size, self.n_bins))
        np.add.at(joint, (index, bins), 1.0 / n)
        if not math.isinf(epsilon):
            joint = laplace_mechanism(joint, sensitivity=self.sensitivity(n), epsilon=epsilon, noise=noise)
        weights = joint.sum(axis=1)
        present = weights > 0
        if present.sum() < 2:
            return 0.0
        cdf = l_inf_isotonic_cdf(np.cumsum(joint[present], axis=1) / weights[present, None])
        return float(np.max(cdf.max(axis=0) - cdf.min(axis=0)))

    def _noisy_loss(self, estimator: Any, X: Any, y: Any, sensitive_features: Any, *, epsilon: float,
                    noise: NoiseSource) -> float:
        return self.noisy_ks(estimator, X, sensitive_features, epsilon=epsilon, noise=noise)  # y is not used

    def _validate_data(self, params: PrivacyParameters, X: Any, y: Any, *,
                       sensitive_features: Any = None) -> ScoredRows:
        # the template maps every row to this scorer's declared groups (ValueError for another label)
        if sensitive_features is None:
            raise ValueError(f"{type(self).__name__} needs sensitive_features: it compares the declared groups "
                             f"{self.groups.tolist()}.")
        n_rows = len(sensitive_features) if hasattr(sensitive_features, "__len__") else 1
        return ScoredRows(sensitive_features=sensitive_features, n_rows=n_rows)


class PrivateMSEKSScorer(_PrivateScorer):
    """MSE with a fairness penalty: ``-(MSE + ks_weight * KS)``, or MSE subject to ``KS <= ks_target``.

    Half of the score's epsilon goes to :class:`PrivateMSEScorer`, half to :class:`PrivateKSScorer`
    (sequential composition on the validation rows): ``epsilon``-DP for their features, labels and
    groups.  With ``ks_target`` the penalty is ``ks_weight * max(0, KS - ks_target)``, a soft form
    of "MSE subject to KS at most the target" (a large ``ks_weight`` makes it hard).

    Parameters
    ----------
    bounds : (float, float)
        Declared range of labels and predictions.
    groups : list
        The declared groups.
    ks_weight : float, default 1.0
        Weight ``lambda`` of the KS term, in squared output units (``>= 0``).
    ks_target : float or None, default None
        KS level below which there is no penalty (``None``: penalise all of it).
    n_bins : int, default 50
        Histogram bins of the KS part.
    """

    protects = "the features, label and group of every validation row (half MSE, half KS histogram)"

    def __init__(self, bounds: tuple[float, float], groups: Any, *, ks_weight: float = 1.0,
                 ks_target: float | None = None, n_bins: int = 50) -> None:
        self.mse = PrivateMSEScorer(bounds)
        self.ks = PrivateKSScorer(bounds, groups, n_bins)
        if isinstance(ks_weight, bool) or not isinstance(ks_weight, numbers.Real) or not (
            math.isfinite(ks_weight) and ks_weight >= 0
        ):
            raise ValueError(f"ks_weight must be a finite number >= 0, got {ks_weight!r}.")
        if ks_target is not None and (isinstance(ks_target, bool) or not isinstance(ks_target, numbers.Real)
                                      or not 0 <= ks_target <= 1):
            raise ValueError(f"ks_target must be None or a number in [0, 1], got {ks_target!r}.")
        self.ks_weight = float(ks_weight)
        self.ks_target = None if ks_target is None else float(ks_target)

    def _validate_data(self, params: PrivacyParameters, X: Any, y: Any, *,
                       sensitive_features: Any = None) -> ScoredRows:
        # both parts' checks: each declares its own bounds (and groups)
        self.mse.check(X, y, sensitive_features)
        self.ks.check(X, y, sensitive_features)
        return ScoredRows()

    def _noisy_loss(self, estimator: Any, X: Any, y: Any, sensitive_features: Any, *, epsilon: float,
                    noise: NoiseSource) -> float:
        """The penalised noisy MSE; ``epsilon`` (the whole score's) is split in two halves."""
        half = epsilon / 2.0
        mse = self.mse.noisy_mse(estimator, X, y, sensitive_features, epsilon=half, noise=noise)
        ks = self.ks.noisy_ks(estimator, X, sensitive_features, epsilon=half, noise=noise)
        excess = ks if self.ks_target is None else max(0.0, ks - self.ks_target)
        return mse + self.ks_weight * excess
