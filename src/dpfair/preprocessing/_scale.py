"""Scaling by declared ranges (:class:`DeclaredRangeScaler`) and private quantile clipping (:class:`DPQuantileClipper`)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import _check_feature_names_in, _get_feature_names, check_array, check_is_fitted, validate_data

from dpfair._estimator import CloneLineageMixin, check_feature_values
from dpfair._validation import check_bool, check_bounds, check_open_unit
from dpfair.base import PrivacyParameters, ValidatedData, ValidatedOptions
from dpfair.preprocessing._quantiles import RANGE_QUANTILE, private_feature_ranges
from dpfair.preprocessing._ranges import declared_ranges, is_pair
from dpfair.preprocessing._release import OUTSIDE_DECLARED_BOUNDS, ColumnRelease
from dpfair.privacy.noise import NoiseSource

__all__ = ["DPQuantileClipper", "DeclaredRangeScaler"]

#: Relative tolerance on a declared range (absorbs rounding at exactly the bound).
BOUND_TOL = 1e-9


def _output_range(value: Any) -> tuple[float, float] | None:
    return None if value is None else check_bounds(tuple(value) if hasattr(value, "__len__") and not isinstance(
        value, str | bytes) else value, "output_range", max_width=1e150)


def _map(X: np.ndarray, ranges: np.ndarray, output: tuple[float, float] | None) -> np.ndarray:
    """Clip every column into its range, then map the range linearly onto ``output`` (a per-row map)."""
    clipped = np.clip(X, ranges[0], ranges[1])
    if output is None:
        return clipped
    low, high = output
    return low + (clipped - ranges[0]) / (ranges[1] - ranges[0]) * (high - low)


def _outside(X: np.ndarray, ranges: np.ndarray) -> bool:
    width = (ranges[1] - ranges[0]) * BOUND_TOL
    return bool(X.size) and not ((X >= ranges[0] - width) & (X <= ranges[1] + width)).all()


def _row_norm(ranges_or_output: np.ndarray) -> float:
    """``sqrt(sum_j max(|low_j|, |high_j|)^2)``: the largest L2 norm of a row whose columns lie in the ranges."""
    return float(math.sqrt(float((np.max(np.abs(ranges_or_output), axis=0) ** 2).sum())))


class DeclaredRangeScaler(TransformerMixin, BaseEstimator):
    """Clip every column into its declared range, then map the range linearly onto ``output_range``.

    scikit-learn's scalers (:class:`~sklearn.preprocessing.StandardScaler`, ``MinMaxScaler``) learn means,
    spreads or extremes from the rows they are fitted on: private statistics, released in every transformed row.
    Here each column's range is declared (the data's schema: an age in [17, 90], a score in [0, 100]): ``fit``
    reads only the table's shape and column names, and ``transform`` is a fixed map of each row on its own, so
    the bound on every output row's norm is public (:meth:`row_norm_bound`), as a private model's ``data_norm``
    needs.  For ranges located privately inside a wide declared range, use :class:`DPQuantileClipper`.

    Parameters
    ----------
    bounds : pair, list of pairs or dict
        Each column's declared ``(low, high)``: one pair for every column, one per column, or a mapping by column
        name.
    output_range : pair, default (0.0, 1.0)
        Where ``[low, high]`` is mapped (e.g. ``(-1.0, 1.0)``).
    clip : bool, default True
        Clip values outside the declared range to it (a fixed per-row map); ``False`` raises on them instead.

    Attributes
    ----------
    bounds_ : ndarray of shape (2, n_features)
        The declared ``(low, high)`` of each column.
    n_features_in_ : int
        Number of columns.
    feature_names_in_ : ndarray of str
        The columns' names, when ``X`` has them.

    Examples
    --------
    >>> import numpy as np
    >>> from dpfair.preprocessing import DeclaredRangeScaler
    >>> DeclaredRangeScaler([(17, 90), (0, 99)], output_range=(-1, 1)).fit_transform([[17, 99.0], [100, 49.5]]).tolist()
    [[-1.0, 1.0], [1.0, 0.0]]
    """

    def __init__(self, bounds: Any, *, output_range: Any = (0.0, 1.0), clip: bool = True) -> None:
        self.bounds = bounds
        self.output_range = output_range
        self.clip = clip

    def _numeric(self, X: Any, *, reset: bool) -> np.ndarray:
        check_feature_values(X, owner=type(self).__name__)
        return validate_data(self, X, reset=reset, dtype=np.float64)

    def fit(self, X: Any, y: Any = None) -> DeclaredRangeScaler:
        """Match the declared ranges to the table's columns; nothing is read from the rows.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
            Numeric columns (only their number and names are used).
        y : None
            Ignored.

        Returns
        -------
        DeclaredRangeScaler
            ``self``.
        """
        _output_range(self.output_range)
        check_bool(self.clip, "clip")
        table = self._numeric(X, reset=True)
        self.bounds_ = declared_ranges(self.bounds, "bounds", table.shape[1], getattr(self, "feature_names_in_", None))
        return self

    def transform(self, X: Any) -> np.ndarray:
        """Clip each value into its column's declared range and map it onto ``output_range`` (each row on its own).

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
            Numeric columns.

        Returns
        -------
        ndarray of shape (n_samples, n_features)
            The scaled table.

        Raises
        ------
        ValueError
            With ``clip=False``, on a value outside its declared range (the message names no value).
        """
        check_is_fitted(self, "bounds_")
        table = self._numeric(X, reset=False)
        if not check_bool(self.clip, "clip") and _outside(table, self.bounds_):
            raise ValueError("X has value(s) outside the declared bounds; declare wider bounds, or pass clip=True to "
                             "clip them (a fixed map of each row).")
        return _map(table, self.bounds_, _output_range(self.output_range))

    def inverse_transform(self, X: Any) -> np.ndarray:
        """Map scaled values back into the declared ranges (clipped values stay at the bound).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Scaled values.

        Returns
        -------
        ndarray of shape (n_samples, n_features)
            The transformed table.
        """
        check_is_fitted(self, "bounds_")
        scaled = check_array(X, dtype=np.float64)
        low, high = _output_range(self.output_range)
        return self.bounds_[0] + (scaled - low) / (high - low) * (self.bounds_[1] - self.bounds_[0])

    def get_feature_names_out(self, input_features: Any = None) -> np.ndarray:
        """The input columns' names (scaling keeps the columns).

        Parameters
        ----------
        input_features : array-like of str or None, default None
            The input columns' names.

        Returns
        -------
        ndarray of str
            One name per output column: the input columns' names.
        """
        check_is_fitted(self, "bounds_")
        return _check_feature_names_in(self, input_features)

    def row_norm_bound(self, n_features: int | None = None) -> float:
        """The largest L2 norm of an output row, from the declaration alone (no fit needed).

        ``sqrt(d) * max(|output low|, |output high|)`` for ``d`` columns.

        Parameters
        ----------
        n_features : int or None, default None
            The number of columns, when ``bounds`` is one pair for all (a list or mapping says it itself).

        Returns
        -------
        float
            The bound (public: from the declarations only).
        """
        output = _output_range(self.output_range)
        d = _declared_count(self.bounds, n_features, getattr(self, "n_features_in_", None))
        return math.sqrt(d) * max(abs(output[0]), abs(output[1]))


def _declared_count(bounds: Any, n_features: int | None, fitted: int | None) -> int:
    """How many columns ``bounds`` declares: its length for a list or mapping of pairs, else ``n_features``."""
    if isinstance(bounds, dict) or (hasattr(bounds, "__len__") and not is_pair(bounds) and not isinstance(bounds, str)):
        return len(bounds)
    for count in (n_features, fitted):
        if count is not None:
            return int(count)
    raise ValueError("bounds is one (low, high) pair for every column: pass n_features (the number of columns it "
                     "scales) to know the norm bound.")


@dataclass(frozen=True, eq=False)
class _ClipperOptions(ValidatedOptions):
    quantile: float
    output_range: tuple[float, float] | None


@dataclass(frozen=True, eq=False, kw_only=True)
class _ClipperData(ValidatedData):
    X: np.ndarray
    ranges: np.ndarray | None
    names: Any


class DPQuantileClipper(ColumnRelease, CloneLineageMixin, TransformerMixin, BaseEstimator):
    """Clip every column to its private ``[quantile, 1 - quantile]`` range inside a declared range (charged).

    A declared range is often far wider than where the values lie (an income in [0, 10^6] whose rows mostly sit
    below 10^5): a private model calibrated to the declared range then drowns the column in noise.  This
    transformer spends ``epsilon`` on locating each column's central range privately, with the mechanism of
    :class:`~dpfair.linear_model.DPLinearRegression` ``(feature_bounds=...)`` (:func:`private_feature_ranges`:
    two exponential-mechanism quantiles per column on a public grid of 1025 points, ``epsilon / (2 d)`` each),
    then clips every row into the released range and, with ``output_range``, maps it linearly onto that range
    (post-processing: the released ranges are public from then on, so the output's norm bound is too).

    **What it protects.** ``fit`` is ``(epsilon, 0)``-DP for every training row under "replace one row" (``n``
    is public), given the declared ranges (a value outside them raises ``ValueError``); where a column's two
    released quantiles cross, its declared range is kept.

    Parameters
    ----------
    epsilon : float, default 1.0
        Privacy parameter (> 0; ``inf`` takes the exact quantiles, with a
        :class:`~dpfair.privacy.PrivacyLeakWarning`).
    bounds : pair, list of pairs, dict or None, default None
        Each column's declared ``(low, high)``: one pair for every column, one per column, or a mapping by column
        name.  Required with finite ``epsilon``.
    quantile : float, default 0.05
        The lower quantile located (the upper is ``1 - quantile``), in ``(0, 0.5)``.
    output_range : pair or None, default None
        Map each released range onto it (e.g. ``(0.0, 1.0)``); ``None`` keeps the units of ``X``.
    budget : PrivacyBudget or None, default None
        Charged ``(epsilon, 0)`` once per ``fit``.
    random_state : None, int, numpy Generator or NoiseSource, default None
        ``None``: secure noise.  A seed: reproducible, *not hardened* noise (experiments and tests only).

    Attributes
    ----------
    clip_range_ : ndarray of shape (2, n_features)
        The released ``(low, high)`` of each column (grid points inside the declared range).
    n_features_in_ : int
        Number of columns.
    feature_names_in_ : ndarray of str
        The columns' names, when ``X`` has them.
    privacy_spent_ : dict
        ``{"epsilon", "delta", "protects", "neighbouring", "relation", "noise"}``.

    Examples
    --------
    >>> import numpy as np
    >>> from dpfair.preprocessing import DPQuantileClipper
    >>> rng = np.random.default_rng(0)
    >>> income = rng.exponential(30_000, size=(20_000, 1)).clip(0, 1e6)
    >>> clipper = DPQuantileClipper(epsilon=1.0, bounds=(0, 1e6), output_range=(0, 1), random_state=0).fit(income)
    >>> bool(clipper.clip_range_[1, 0] < 150_000)   # the 95% quantile, about 90,000, far below the declared 10^6
    True
    """

    _privacy_parameters: ClassVar[dict[str, str]] = {"epsilon": "epsilon", "budget": "budget", "random_state": "random_state"}
    _privacy_protects: ClassVar[str] = "every training row's values"
    _privacy_neighbouring: ClassVar[str] = "replace one training row (the number of rows n is public)"
    _privacy_label: ClassVar[str] = "DPQuantileClipper.fit (exponential-mechanism quantiles)"
    _results_hold_feature_attributes: ClassVar[bool] = True
    _released_attribute: ClassVar[str] = "clip_range_"
    _released_what: ClassVar[str] = "quantiles"

    def __init__(self, epsilon: float = 1.0, bounds: Any = None, *, quantile: float = RANGE_QUANTILE,
                 output_range: Any = None, budget: Any = None, random_state: Any = None) -> None:
        self.epsilon = epsilon
        self.bounds = bounds
        self.quantile = quantile
        self.output_range = output_range
        self.budget = budget
        self.random_state = random_state

    def __sklearn_tags__(self):  # scikit-learn's tags: seeded noise differs between fits
        tags = super().__sklearn_tags__()
        tags.non_deterministic = True
        return tags

    def fit(self, X: Any, y: Any = None) -> DPQuantileClipper:
        """Release each column's private central range (one charge of ``(epsilon, 0)``).

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
            Numeric columns, every value inside its declared range.
        y : None
            Ignored.

        Returns
        -------
        DPQuantileClipper
            ``self``.

        Raises
        ------
        ValueError, TypeError
            On an invalid argument, missing ``bounds`` with finite ``epsilon``, strings or NaN, or a value
            outside its declared range (the message names the argument, never a value).
        PrivacyBudgetExceededError
            If ``budget`` refuses the charge; nothing is changed.
        """
        return self._set_fitted(self._release(X))

    # ------------------------------------------------------------------ the steps of dpfair.base's template
    def _validate_params(self) -> _ClipperOptions:
        quantile = check_open_unit(self.quantile, "quantile")
        if not quantile < 0.5:
            raise ValueError(f"quantile must lie in (0, 0.5) (the lower quantile; the upper is 1 - quantile), got "
                             f"{quantile!r}.")
        return _ClipperOptions(quantile=quantile, output_range=_output_range(self.output_range))

    def _validate_data(self, params: PrivacyParameters, X: Any) -> _ClipperData:
        owner = type(self).__name__
        check_feature_values(X, owner=owner)
        names = _get_feature_names(X)
        table = check_array(X, dtype=np.float64)
        ranges = None
        if self.bounds is not None or not math.isinf(params.epsilon):
            ranges = declared_ranges(self.bounds, "bounds", table.shape[1], names)
            if _outside(table, ranges):
                raise ValueError(OUTSIDE_DECLARED_BOUNDS)
        return _ClipperData(n_rows=table.shape[0], X=table, ranges=ranges, names=names)

    def _run(self, params: PrivacyParameters, data: _ClipperData, statistics: np.ndarray,
             noise: NoiseSource) -> np.ndarray:
        q = params.options.quantile
        if math.isinf(params.epsilon):
            exact = np.quantile(statistics, [q, 1.0 - q], axis=0)
            if data.ranges is None:
                return exact
            keep = exact[0] < exact[1]
            return np.where(keep[None, :], exact, data.ranges)
        return private_feature_ranges(statistics, data.ranges, params.epsilon, noise, quantile=q)

    def transform(self, X: Any) -> np.ndarray:
        """Clip each value into its column's released range (then map onto ``output_range``), each row on its own.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
            Numeric columns.

        Returns
        -------
        ndarray of shape (n_samples, n_features)
            The transformed table.
        """
        check_is_fitted(self, "clip_range_")
        check_feature_values(X, owner=type(self).__name__)
        table = validate_data(self, X, reset=False, dtype=np.float64)
        ranges = self.clip_range_
        output = _output_range(self.output_range)
        if output is not None and np.any(ranges[1] <= ranges[0]):  # (a degenerate exact range at epsilon = inf)
            ranges = np.where(ranges[1] > ranges[0], ranges, ranges + np.array([[-0.5], [0.5]]))
        return _map(table, ranges, output)

    def get_feature_names_out(self, input_features: Any = None) -> np.ndarray:
        """The input columns' names (clipping keeps the columns).

        Parameters
        ----------
        input_features : array-like of str or None, default None
            The input columns' names.

        Returns
        -------
        ndarray of str
            One name per output column: the input columns' names.
        """
        check_is_fitted(self, "clip_range_")
        return _check_feature_names_in(self, input_features)

    def row_norm_bound(self, n_features: int | None = None) -> float:
        """The largest L2 norm of an output row, from the declaration alone (no fit needed).

        With ``output_range``: ``sqrt(d) * max(|low|, |high|)`` of it; without: the declared ranges' bound
        (the released ranges lie inside them).

        Parameters
        ----------
        n_features : int or None, default None
            The number of columns, when ``bounds`` is one pair for all.

        Returns
        -------
        float
            The bound (public: from the declarations only).
        """
        output = _output_range(self.output_range)
        d = _declared_count(self.bounds, n_features, getattr(self, "n_features_in_", None))
        if output is not None:
            return math.sqrt(d) * max(abs(output[0]), abs(output[1]))
        pairs = list(self.bounds.values()) if isinstance(self.bounds, dict) else self.bounds
        return _row_norm(declared_ranges(pairs, "bounds", d, None))
