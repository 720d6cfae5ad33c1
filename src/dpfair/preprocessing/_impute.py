"""Imputation with declared fill values (:class:`DeclaredImputer`) or private medians (:class:`DPMedianImputer`)."""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import _check_feature_names_in, _get_feature_names, check_array, check_is_fitted

from dpfair._estimator import STRING_FEATURES_FIX, CloneLineageMixin
from dpfair.base import PrivacyParameters, ValidatedData, ValidatedOptions
from dpfair.preprocessing._columns import as_table, is_missing, per_column
from dpfair.preprocessing._quantiles import private_quantiles
from dpfair.preprocessing._ranges import declared_ranges
from dpfair.preprocessing._release import OUTSIDE_DECLARED_BOUNDS, ColumnRelease
from dpfair.privacy.noise import NoiseSource

__all__ = ["DPMedianImputer", "DeclaredImputer"]

#: Relative tolerance on a declared range (absorbs rounding at exactly the bound).
BOUND_TOL = 1e-9


def _is_nan_marker(value: Any) -> bool:
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


def _missing_mask(column: np.ndarray, missing_values: Any) -> np.ndarray:
    """Which entries of ``column`` are missing: ``pd.isna`` for a NaN marker, else equality with the marker."""
    if _is_nan_marker(missing_values):
        return is_missing(column)
    return pd.Series(column, dtype=object, copy=False).eq(missing_values).to_numpy(dtype=bool)


def _check_missing_values(value: Any) -> Any:
    if not (_is_nan_marker(value) or isinstance(value, str | numbers.Number)) or isinstance(value, bool | np.bool_):
        raise TypeError(f"missing_values must be a number, a string or NaN / None, got {value!r:.80}.")
    return value


def _numeric_if_possible(table: np.ndarray) -> np.ndarray:
    """An object table whose every entry is a real number becomes float64 (strings are never converted)."""
    if table.dtype.kind != "O":
        return table
    if all(isinstance(item, numbers.Real) and not isinstance(item, str) for item in table.ravel()):
        return table.astype(np.float64)
    return table


class DeclaredImputer(TransformerMixin, BaseEstimator):
    """Fill missing values with declared (public) values: safe before a private estimator in a ``Pipeline``.

    scikit-learn's :class:`~sklearn.impute.SimpleImputer` fills with the mean, median or most frequent value of
    the rows it is fitted on: a statistic of private data, released in every transformed row and spent from no
    budget.  Here the fill values are declared (a published default, the schema's "unknown" level, the middle of
    a public range): ``fit`` reads only the table's shape and column names, and ``transform`` maps each row on its
    own.  For a fill value estimated from the data, use :class:`DPMedianImputer`, which charges a budget.

    Parameters
    ----------
    fill_values : scalar, list or dict
        One value for every column, one per column (in order), or a mapping ``{column name: value}`` for a
        ``DataFrame``.  Numbers for numeric columns, strings for categorical ones (e.g. ``"Unknown"``, to be
        declared among the encoder's categories).
    missing_values : scalar, default NaN
        What a missing entry is: NaN (also ``None``, ``pd.NA``, ``NaT``), or a marker such as ``"?"`` or ``-1``
        (matched by equality).

    Attributes
    ----------
    statistics_ : ndarray of shape (n_features,)
        The declared fill value of each column (named as in scikit-learn; nothing is estimated).
    n_features_in_ : int
        Number of columns.
    feature_names_in_ : ndarray of str
        The columns' names, when ``X`` has them.

    Examples
    --------
    >>> import numpy as np
    >>> import pandas as pd
    >>> from dpfair.preprocessing import DeclaredImputer
    >>> X = pd.DataFrame({"hours": [40.0, np.nan], "workclass": ["?", "Private"]})
    >>> DeclaredImputer({"hours": 40.0, "workclass": "Unknown"}, missing_values=np.nan).fit_transform(
    ...     X.replace("?", np.nan)).tolist()
    [[40.0, 'Unknown'], [40.0, 'Private']]
    """

    def __init__(self, fill_values: Any, *, missing_values: Any = np.nan) -> None:
        self.fill_values = fill_values
        self.missing_values = missing_values

    def __sklearn_tags__(self):  # scikit-learn's tags: strings and NaN are expected input
        tags = super().__sklearn_tags__()
        tags.input_tags.string = True
        tags.input_tags.allow_nan = True
        return tags

    def fit(self, X: Any, y: Any = None) -> DeclaredImputer:
        """Match the declared fill values to the table's columns; nothing is read from the rows.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
            The table (only its number of columns and their names are used).
        y : None
            Ignored.

        Returns
        -------
        DeclaredImputer
            ``self``.
        """
        _check_missing_values(self.missing_values)
        table = as_table(self, X, reset=True)
        fills = per_column(self.fill_values, "fill_values", table.shape[1], getattr(self, "feature_names_in_", None),
                           is_single=lambda value: isinstance(value, str | bytes) or not hasattr(value, "__len__"),
                           what="a fill value")
        for j, fill in enumerate(fills):
            if _is_nan_marker(fill) or not (isinstance(fill, str | numbers.Number)) or isinstance(fill, bool | np.bool_):
                raise TypeError(f"fill_values[{j}] must be a number or a string (not missing), got {fill!r:.80}.")
        statistics = np.empty(len(fills), dtype=object)
        statistics[:] = fills
        self.statistics_ = _numeric_if_possible(statistics)
        return self

    def transform(self, X: Any) -> np.ndarray:
        """Replace every missing entry by its column's declared fill value (each row on its own).

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
            The table.

        Returns
        -------
        ndarray of shape (n_samples, n_features)
            The filled table: float64 when every entry is a number, else objects.
        """
        check_is_fitted(self, "statistics_")
        table = as_table(self, X, reset=False)
        numeric_fill = self.statistics_.dtype.kind == "f"
        out = table.astype(np.float64 if table.dtype.kind in "biuf" and numeric_fill else object, copy=True)
        for j in range(out.shape[1]):
            out[_missing_mask(table[:, j], self.missing_values), j] = self.statistics_[j]
        return _numeric_if_possible(out)

    def get_feature_names_out(self, input_features: Any = None) -> np.ndarray:
        """The input columns' names (imputation keeps the columns).

        Parameters
        ----------
        input_features : array-like of str or None, default None
            The input columns' names.

        Returns
        -------
        ndarray of str
            One name per output column: the input columns' names.
        """
        check_is_fitted(self, "statistics_")
        return _check_feature_names_in(self, input_features)


@dataclass(frozen=True, eq=False)
class _MedianOptions(ValidatedOptions):
    missing_values: Any


@dataclass(frozen=True, eq=False, kw_only=True)
class _MedianData(ValidatedData):
    X: np.ndarray
    ranges: np.ndarray | None
    names: Any


def numeric_table(X: Any, *, owner: str, missing_values: Any, name: str = "X") -> tuple[np.ndarray, Any]:
    """``(table as float64 with NaN where missing, column names)``; strings refused with the encoder's fix.

    Nothing is set on the caller: a private estimator's template sets its feature attributes at the end.
    """
    names = _get_feature_names(X)
    raw = check_array(X, dtype=None, ensure_all_finite=False, input_name=name)
    out = np.empty(raw.shape, dtype=np.float64)
    nan_marker = _is_nan_marker(missing_values)
    for j in range(raw.shape[1]):
        column = raw[:, j]
        missing = _missing_mask(column, missing_values)
        if not nan_marker and is_missing(column).any():
            raise ValueError(f"{name} contains NaN, but missing_values={missing_values!r} is declared: {owner} fills only "
                             "the declared marker; pass missing_values=np.nan, or fill the NaN first.")
        present = column[~missing]
        if column.dtype.kind in "US" or (column.dtype.kind == "O" and any(isinstance(item, str | bytes) for item in present)):
            raise ValueError(f"{name} holds strings: {owner} imputes numeric columns only (a median of categories is "
                             f"not defined); fill categorical columns with dpfair.preprocessing.DeclaredImputer and "
                             f"{STRING_FEATURES_FIX}.")
        if column.dtype.kind == "b" or (column.dtype.kind == "O" and any(isinstance(item, bool | np.bool_) for item in present)):
            raise TypeError(f"{name} holds booleans; pass numbers (astype(float)).")
        try:
            out[:, j] = np.where(missing, np.nan, column.astype(object)).astype(np.float64)
        except (TypeError, ValueError):
            raise TypeError(f"{name} must hold real numbers and missing values only (each float() argument must be a "
                            "string or a real number).") from None
    if np.isinf(out).any():
        raise ValueError(f"{name} contains infinite values; clip them to the declared bounds first.")
    return out, names


class DPMedianImputer(ColumnRelease, CloneLineageMixin, TransformerMixin, BaseEstimator):
    """Fill missing values with each column's private median, charged to the privacy budget.

    For each column, one draw of the exponential mechanism with the rank utility (Smith 2011) over a public
    grid of 1025 points spanning the column's declared range, on the column's non-missing values
    (:func:`private_quantiles`): the released median is a grid point.  The ``d`` draws take ``epsilon / d``
    each.  ``transform`` fills every missing entry with its column's released median, each row on its own
    (post-processing: no further privacy cost).

    **What it protects.** ``fit`` is ``(epsilon, 0)``-DP for every training row under "replace one row" (``n``
    is public), given the declared ranges: a row whose value moves from missing to present changes the number of
    values ``m`` whose median is sought, and the utility's sensitivity is still 1 (see
    :func:`quantile_utilities`).  A present value outside its declared range raises ``ValueError``.

    Parameters
    ----------
    epsilon : float, default 1.0
        Privacy parameter (> 0; ``inf`` takes the exact median of the non-missing values, with a
        :class:`~dpfair.privacy.PrivacyLeakWarning`).
    bounds : pair, list of pairs, dict or None, default None
        Each column's declared ``(low, high)``: one pair for every column, one per column, or a mapping by column
        name.  Required with finite ``epsilon``.
    missing_values : scalar, default NaN
        What a missing entry is: NaN (also ``None``, ``pd.NA``), or a number marker such as ``-1``.
    budget : PrivacyBudget or None, default None
        Charged ``(epsilon, 0)`` once per ``fit``.
    random_state : None, int, numpy Generator or NoiseSource, default None
        ``None``: secure noise.  A seed: reproducible, *not hardened* noise (experiments and tests only).

    Attributes
    ----------
    statistics_ : ndarray of shape (n_features,)
        The released median of each column (a point of its public grid); at ``epsilon = inf`` the exact median
        (the middle of the declared range, or 0 without one, for a column with no value).
    n_features_in_ : int
        Number of columns.
    feature_names_in_ : ndarray of str
        The columns' names, when ``X`` has them.
    privacy_spent_ : dict
        ``{"epsilon", "delta", "protects", "neighbouring", "relation", "noise"}``.

    Examples
    --------
    >>> import numpy as np
    >>> from dpfair.preprocessing import DPMedianImputer
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(20, 60, size=(5000, 1))
    >>> X[::10] = np.nan
    >>> imputer = DPMedianImputer(epsilon=1.0, bounds=(0.0, 100.0), random_state=0).fit(X)
    >>> bool(abs(imputer.statistics_[0] - 40.0) < 1.0)
    True
    """

    _privacy_parameters: ClassVar[dict[str, str]] = {"epsilon": "epsilon", "budget": "budget", "random_state": "random_state"}
    _privacy_protects: ClassVar[str] = "every training row's values (which are missing, and the others)"
    _privacy_neighbouring: ClassVar[str] = "replace one training row (the number of rows n is public)"
    _privacy_label: ClassVar[str] = "DPMedianImputer.fit (exponential-mechanism medians)"
    _results_hold_feature_attributes: ClassVar[bool] = True
    _released_attribute: ClassVar[str] = "statistics_"
    _released_what: ClassVar[str] = "medians"

    def __init__(self, epsilon: float = 1.0, bounds: Any = None, *, missing_values: Any = np.nan, budget: Any = None,
                 random_state: Any = None) -> None:
        self.epsilon = epsilon
        self.bounds = bounds
        self.missing_values = missing_values
        self.budget = budget
        self.random_state = random_state

    def __sklearn_tags__(self):  # scikit-learn's tags: NaN is expected input; seeded noise differs between fits
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        tags.non_deterministic = True
        return tags

    def fit(self, X: Any, y: Any = None) -> DPMedianImputer:
        """Release each column's private median (one charge of ``(epsilon, 0)``).

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
            Numeric columns with missing values, every present value inside its declared range.
        y : None
            Ignored.

        Returns
        -------
        DPMedianImputer
            ``self``.

        Raises
        ------
        ValueError, TypeError
            On an invalid argument, missing ``bounds`` with finite ``epsilon``, strings, or a value outside its
            declared range (the message names the argument, never a value).
        PrivacyBudgetExceededError
            If ``budget`` refuses the charge; nothing is changed.
        """
        return self._set_fitted(self._release(X))

    # ------------------------------------------------------------------ the steps of dpfair.base's template
    def _validate_params(self) -> _MedianOptions:
        return _MedianOptions(missing_values=_check_missing_values(self.missing_values))

    def _validate_data(self, params: PrivacyParameters, X: Any) -> _MedianData:
        table, names = numeric_table(X, owner=type(self).__name__, missing_values=params.options.missing_values)
        ranges = None
        if self.bounds is not None or not math.isinf(params.epsilon):
            ranges = declared_ranges(self.bounds, "bounds", table.shape[1], names)
            width = (ranges[1] - ranges[0]) * BOUND_TOL
            present = ~np.isnan(table)
            if not ((table >= ranges[0] - width) & (table <= ranges[1] + width) | ~present).all():
                raise ValueError(OUTSIDE_DECLARED_BOUNDS)
        return _MedianData(n_rows=table.shape[0], X=table, ranges=ranges, names=names)

    def _run(self, params: PrivacyParameters, data: _MedianData, statistics: np.ndarray,
             noise: NoiseSource) -> np.ndarray:
        if math.isinf(params.epsilon):
            medians = np.empty(statistics.shape[1])
            for j in range(statistics.shape[1]):
                column = statistics[:, j][~np.isnan(statistics[:, j])]
                fallback = 0.0 if data.ranges is None else (data.ranges[0, j] + data.ranges[1, j]) / 2.0
                medians[j] = float(np.median(column)) if column.size else fallback
            return medians
        return private_quantiles(statistics, data.ranges, (0.5,), params.epsilon, noise)[0]

    def transform(self, X: Any) -> np.ndarray:
        """Fill every missing entry with its column's released median (each row on its own).

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
            Numeric columns with missing values.

        Returns
        -------
        ndarray of shape (n_samples, n_features)
            The filled table (float64).
        """
        check_is_fitted(self, "statistics_")
        as_table(self, X, reset=False)  # the fitted columns (their number and names)
        table, _ = numeric_table(X, owner=type(self).__name__, missing_values=self.missing_values)
        missing = np.isnan(table)
        return np.where(missing, self.statistics_[None, :], table)

    def get_feature_names_out(self, input_features: Any = None) -> np.ndarray:
        """The input columns' names (imputation keeps the columns).

        Parameters
        ----------
        input_features : array-like of str or None, default None
            The input columns' names.

        Returns
        -------
        ndarray of str
            One name per output column: the input columns' names.
        """
        check_is_fitted(self, "statistics_")
        return _check_feature_names_in(self, input_features)
