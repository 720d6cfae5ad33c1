"""One-hot encoding over declared categories: nothing is learned from the rows."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import _check_feature_names_in, check_is_fitted

from dpfair.preprocessing._columns import as_table, is_missing, per_column

__all__ = ["DeclaredOneHotEncoder"]

HANDLE_UNKNOWN = ("error", "other")


def _is_level(value: Any) -> bool:
    """Whether ``value`` is one level (a scalar or a string), not a list of levels."""
    return isinstance(value, str | bytes) or not hasattr(value, "__len__")


def _one_list_for_all(value: Any) -> bool:
    """Whether ``categories`` is one flat list of levels (for every column) rather than one list per column."""
    if isinstance(value, dict | str | bytes) or not hasattr(value, "__len__"):
        return False
    items = list(value)
    return bool(items) and all(_is_level(item) for item in items)


def _levels(value: Any, name: str) -> tuple[np.ndarray, bool]:
    """``(levels, missing_declared)``: a column's declared levels as an object array, and whether one is missing."""
    if isinstance(value, str | bytes) or not hasattr(value, "__len__"):
        raise TypeError(f"{name} must be a list of the column's declared levels, e.g. ['a', 'b'], got {value!r:.80}.")
    levels = np.empty(len(value), dtype=object)
    levels[:] = list(value)
    if levels.size == 0:
        raise ValueError(f"{name} is empty: declare at least one level.")
    missing = is_missing(levels)
    if missing.sum() > 1:
        raise ValueError(f"{name} declares a missing value (None, NaN or pd.NA) more than once: they are one level.")
    present = pd.Index(levels[~missing], dtype=object)
    if not present.is_unique:
        raise ValueError(f"{name} declares a level twice (levels are matched by equality: 1, 1.0 and True are one "
                         "level); declare each level once.")
    return levels, bool(missing.any())


class DeclaredOneHotEncoder(TransformerMixin, BaseEstimator):
    """One-hot encoding over declared (public) categories: safe before a private estimator in a ``Pipeline``.

    scikit-learn's :class:`~sklearn.preprocessing.OneHotEncoder` learns each column's levels from the rows it is
    fitted on, so the *set of output columns* is a function of private data (a level seen once adds a column).
    Here every column's levels are declared, from the data's published schema: ``fit`` reads nothing but the
    table's shape and column names, and ``transform`` is a fixed map of each row on its own (a row's output
    never depends on another row).  It is therefore post-processing-free preprocessing: it spends no privacy
    budget and needs no ``epsilon``.

    A level that is not declared is never given a new column: it raises a ``ValueError`` that names the column
    (never the value), or, with ``handle_unknown="other"``, sets the column's extra ``"<column>_<other_name>"``
    output.  Missing values (``None``, NaN, ``pd.NA``) are one level: declare it (``[..., None]``) to give it a
    column of its own, or they count as undeclared.  Levels are matched by equality, as keys of a Python dict
    (strings match strings only; ``1``, ``1.0`` and ``True`` are one level).

    Every output row has exactly one 1 per input column (``handle_unknown="other"`` included, or the transform
    raises), so its L2 norm is exactly ``sqrt(n_features_in_)``: a public bound to add to a private model's
    ``data_norm`` (see :func:`~dpfair.preprocessing.row_norm_bound`).

    Parameters
    ----------
    categories : list of lists, list, or dict
        Each column's declared levels: a list with one list of levels per column of ``X`` (in order), one flat
        list of levels for every column (e.g. ``["yes", "no"]``), or a mapping ``{column name: levels}`` for a
        pandas ``DataFrame``.
    handle_unknown : {"error", "other"}, default "error"
        What an undeclared level (or an undeclared missing value) does: raise, or set the column's "other" output.
    other_name : str, default "other"
        Suffix of the "other" outputs' names (``handle_unknown="other"`` only).

    Attributes
    ----------
    categories_ : list of ndarray
        The declared levels of each column (object arrays), in output order.
    n_features_in_ : int
        Number of input columns.
    feature_names_in_ : ndarray of str
        The input columns' names, when ``X`` has them.

    Examples
    --------
    >>> import pandas as pd
    >>> from dpfair.preprocessing import DeclaredOneHotEncoder
    >>> X = pd.DataFrame({"workclass": ["Private", None, "State-gov"]})
    >>> encoder = DeclaredOneHotEncoder({"workclass": ["Private", "State-gov", None]}).fit(X)
    >>> encoder.transform(X).tolist()
    [[1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, 1.0, 0.0]]
    >>> encoder.get_feature_names_out().tolist()
    ['workclass_Private', 'workclass_State-gov', 'workclass_nan']
    """

    def __init__(self, categories: Any, *, handle_unknown: str = "error", other_name: str = "other") -> None:
        self.categories = categories
        self.handle_unknown = handle_unknown
        self.other_name = other_name

    def __sklearn_tags__(self):  # scikit-learn's tags: strings, NaN and categorical columns are expected input
        tags = super().__sklearn_tags__()
        tags.input_tags.string = True
        tags.input_tags.categorical = True
        tags.input_tags.allow_nan = True
        tags.requires_fit = True
        return tags

    def _check_options(self) -> tuple[str, str]:
        if not isinstance(self.handle_unknown, str) or self.handle_unknown not in HANDLE_UNKNOWN:
            raise ValueError(f"handle_unknown must be one of {list(HANDLE_UNKNOWN)}, got {self.handle_unknown!r}.")
        if not isinstance(self.other_name, str) or not self.other_name:
            raise TypeError(f"other_name must be a non-empty string, got {self.other_name!r:.80}.")
        return self.handle_unknown, self.other_name

    def fit(self, X: Any, y: Any = None) -> DeclaredOneHotEncoder:
        """Check the declared categories against the table's columns; nothing is read from the rows.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
            The table (only its number of columns and their names are used).
        y : None
            Ignored.

        Returns
        -------
        DeclaredOneHotEncoder
            ``self``.

        Raises
        ------
        ValueError, TypeError
            If the declaration does not fit the columns of ``X`` (the message names the column).
        """
        self._check_options()
        table = as_table(self, X, reset=True)
        names = getattr(self, "feature_names_in_", None)
        declared = per_column(self.categories, "categories", table.shape[1], names, is_single=_one_list_for_all,
                              what="a list of levels")
        labels = names if names is not None else [str(j) for j in range(table.shape[1])]
        self.categories_ = [_levels(levels, f"categories[{label!r}]")[0] for label, levels in zip(labels, declared, strict=True)]
        return self

    def transform(self, X: Any) -> np.ndarray:
        """One-hot encode every row on its own, over the declared levels.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
            The table.

        Returns
        -------
        ndarray of shape (n_samples, n_features_out)
            0/1 floats, one block per input column (its declared levels, then its "other" output).

        Raises
        ------
        ValueError
            On an undeclared level with ``handle_unknown="error"`` (the message names the column, not the value).
        """
        check_is_fitted(self, "categories_")
        handle_unknown, other_name = self._check_options()
        table = as_table(self, X, reset=False)
        names = self._input_names()
        blocks = []
        for j, levels in enumerate(self.categories_):
            column = table[:, j]
            declared_missing = is_missing(levels)
            missing = is_missing(column)
            codes = np.full(column.shape[0], -1, dtype=np.int64)
            if (~missing).any():
                codes[~missing] = pd.Index(levels[~declared_missing], dtype=object).get_indexer(column[~missing])
                codes[~missing] = np.where(codes[~missing] >= 0, np.flatnonzero(~declared_missing)[codes[~missing]], -1)
            if declared_missing.any():
                codes[missing] = int(np.flatnonzero(declared_missing)[0])
            width = levels.size + int(handle_unknown == "other")
            unknown = codes < 0
            if unknown.any():
                if handle_unknown == "error":
                    raise ValueError(
                        f"column {names[j]!r} of X holds a level that is not among its declared categories (or a "
                        "missing value that is not declared): declare every level of the column's schema in "
                        f"categories (a missing value as None), or pass handle_unknown='other' to map undeclared "
                        f"levels to the column '{names[j]}_{other_name}'. No column is ever learned from the rows."
                    )
                codes[unknown] = levels.size
            block = np.zeros((column.shape[0], width))
            block[np.arange(column.shape[0]), codes] = 1.0
            blocks.append(block)
        return np.hstack(blocks) if blocks else np.zeros((table.shape[0], 0))

    def _input_names(self) -> list[str]:
        names = getattr(self, "feature_names_in_", None)
        return [str(name) for name in names] if names is not None else [f"x{j}" for j in range(self.n_features_in_)]

    def get_feature_names_out(self, input_features: Any = None) -> np.ndarray:
        """Return the output columns' names: ``"<column>_<level>"`` (``nan`` for a missing level), then the "other".

        The "other" output of a column is named ``"<column>_<other_name>"`` (``handle_unknown="other"`` only).

        Parameters
        ----------
        input_features : array-like of str or None, default None
            The input columns' names (default: ``feature_names_in_``, else ``x0, x1, ...``).

        Returns
        -------
        ndarray of str
            One name per output column.
        """
        check_is_fitted(self, "categories_")
        handle_unknown, other_name = self._check_options()
        input_features = _check_feature_names_in(self, input_features)
        out = []
        for column, levels in zip(input_features, self.categories_, strict=True):
            out.extend(f"{column}_{'nan' if is_missing(np.array([level], dtype=object))[0] else level}" for level in levels)
            if handle_unknown == "other":
                out.append(f"{column}_{other_name}")
        return np.asarray(out, dtype=object)

    def row_norm_bound(self, n_features: int | None = None) -> float:
        """The L2 norm of every output row, from the declaration alone (no fit needed): ``sqrt(n_columns)``.

        Every output row has one 1 per input column, so this is exact, and public.

        Parameters
        ----------
        n_features : int or None, default None
            The number of input columns, when ``categories`` is one list for every column (a list per column or a
            mapping says it itself).

        Returns
        -------
        float
            ``sqrt(n_columns)``.
        """
        if isinstance(self.categories, str | bytes) or not hasattr(self.categories, "__len__"):
            raise TypeError(f"categories must be a list of lists of levels or a mapping, got {self.categories!r:.80}.")
        if not _one_list_for_all(self.categories):
            return math.sqrt(len(self.categories))
        for count in (n_features, getattr(self, "n_features_in_", None)):
            if count is not None:
                return math.sqrt(int(count))
        raise ValueError("categories is one list for every column: pass n_features (the number of columns it encodes) "
                         "to know the norm bound.")
