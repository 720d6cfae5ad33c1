"""The rows given to :class:`~dpfair.metrics.PrivateMetricFrame`: their labels and bounded values, and every row's
declared group (one sensitive feature, intersections of several, control features)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from dpfair._estimator import resolve_groups
from dpfair._validation import as_finite_array, one_value_per_row
from dpfair.metrics._stages import Grouping

__all__ = ["OTHER", "UNDECLARED", "as_1d", "binary", "bounded", "resolve_rows", "sample_weights", "sensitive_columns"]

#: the values of ``undeclared=``: refuse a row with an undeclared label, or count it in the group :data:`OTHER`
UNDECLARED = ("raise", "other")
#: the label of the group that collects undeclared labels with ``undeclared="other"``
OTHER = "(other)"
#: fairlearn's messages for malformed features, word for word (its ``MetricFrame._process_features``)
_SERIES_NAME = "Series name must be a string. Value '{0}' was of type {1}"
_COLUMN_NAME = "DataFrame column names must be strings. Name '{0}' is of type {1}"
LIST_NONSCALAR = "Feature lists must be of scalar types"
_DICT_FAILURE = ("DataFrame.from_dict() failed on sensitive features. Please ensure each array is strictly 1-D. "
                 "The __cause__ field of this exception may contain further information.")


def as_1d(values: Any, name: str, n_rows: int | None = None) -> np.ndarray:
    if values is None:
        raise ValueError(f"{name} is required: pass one value per row.")
    if isinstance(values, str | bytes):
        raise TypeError(f"{name} must be array-like with one value per row, got a {type(values).__name__}.")
    arr = one_value_per_row(values.to_numpy() if hasattr(values, "to_numpy") else np.asarray(values), name)
    if n_rows is not None and arr.shape[0] != n_rows:
        raise ValueError(
            f"y_true, y_pred and sensitive_features must have one entry per row; {name} and y_true differ in length."
        )
    return arr


def as_rows(values: Any, name: str, n_rows: int | None = None) -> np.ndarray:
    """:func:`as_1d`, or a 2-d array of one row per person (fairlearn's multi-output ``y`` or per-class scores).

    Only for metrics that are called on the rows at ``epsilon = inf``; the released table needs one value per row.
    """
    arr = values.to_numpy() if hasattr(values, "to_numpy") else np.asarray(values) if values is not None else None
    if arr is None or arr.ndim != 2 or arr.shape[1] < 2:
        return as_1d(values, name, n_rows)
    if n_rows is not None and arr.shape[0] != n_rows:
        raise ValueError(
            f"y_true, y_pred and sensitive_features must have one entry per row; {name} and y_true differ in length."
        )
    return arr


def binary(arr: np.ndarray, name: str, count_metrics: list[str], pos_label: Any = None) -> np.ndarray:
    if pos_label is not None:  # fairlearn's pos_label: that label is 1, every other label 0
        if pd.isna(pd.Series(arr, dtype=object)).any():
            raise ValueError(f"{name} contains missing values (None or NaN); every row needs a label.")
        return (pd.Series(arr, dtype=object) == pos_label).to_numpy(dtype=np.int64)
    fix = (
        f"the count-based metrics ({', '.join(count_metrics)}) need 0/1 labels: encode the positive class as 1, "
        "e.g. (y == 'yes').astype(int)"
    )
    if arr.dtype.kind == "b":
        return arr.astype(np.int64)
    if arr.dtype.kind not in "iuf":
        if arr.dtype.kind == "O":
            try:
                arr = arr.astype(float)
            except (TypeError, ValueError):
                raise TypeError(f"{name} must hold the numbers 0 and 1; {fix}.") from None
        else:
            raise TypeError(f"{name} must hold the numbers 0 and 1, got dtype {arr.dtype}; {fix}.")
    ok = (arr == 0) | (arr == 1)
    if not ok.all():
        raise ValueError(f"{name} must hold only 0 and 1 (it holds other values, or NaN); {fix}.")
    return arr.astype(np.int64)


def bounded(arr: np.ndarray, name: str, bounds: tuple[float, float]) -> np.ndarray:
    out = as_finite_array(arr, name, ndim=1, allow_bool=True)
    lo, hi = bounds
    if (out < lo).any() or (out > hi).any():
        raise ValueError(
            f"{name} holds values outside the declared bounds=({lo:g}, {hi:g}); declare bounds that contain every "
            "possible value (public knowledge, never read off the data), or clip the values before assessing."
        )
    return out


def sample_weights(values: Any, n_rows: int, bound: float) -> np.ndarray:
    """``sample_weight`` as floats, every weight in the declared ``[0, sample_weight_bound]`` (else refused by name)."""
    arr = as_finite_array(as_1d(values, "sample_weight", n_rows), "sample_weight", ndim=1, allow_bool=False)
    if (arr < 0).any() or (arr > bound).any():
        raise ValueError(
            f"sample_weight holds weights outside [0, sample_weight_bound={bound:g}]; declare a sample_weight_bound "
            "that bounds every possible weight (public knowledge, never read off the data), or cap the weights first."
        )
    return arr.astype(float)


def sensitive_columns(sensitive_features: Any, n_rows: int, name: str = "sensitive_features") -> list[tuple[str, np.ndarray]]:
    """One ``(name, labels)`` per sensitive (or control) feature, named as fairlearn names them."""
    argument, prefix = name, "sensitive_feature" if name == "sensitive_features" else "control_feature"
    sf = sensitive_features
    if sf is None:
        raise ValueError(
            f"{argument} is required: pass the group of every row (an array, list or pandas Series), or a "
            "DataFrame / dict with one column per feature for intersectional groups."
        )
    if isinstance(sf, dict):
        try:
            sf = pd.DataFrame.from_dict(sf)
        except ValueError as exc:
            raise ValueError(_DICT_FAILURE) from exc
    columns: list[tuple[str, Any]] = []
    if isinstance(sf, pd.Series):
        if sf.name is not None and not isinstance(sf.name, str):
            raise ValueError(_SERIES_NAME.format(sf.name, type(sf.name)))
        columns.append((sf.name if isinstance(sf.name, str) else f"{prefix}_0", sf.to_numpy()))
    elif isinstance(sf, pd.DataFrame):
        if sf.shape[1] == 0:
            raise ValueError(f"{argument} is a DataFrame without columns; pass at least one feature.")
        for position in range(sf.shape[1]):
            name = sf.columns[position]  # indexed as fairlearn does: an integer name is then numpy's (its message)
            if not isinstance(name, str):
                raise ValueError(_COLUMN_NAME.format(name, type(name)))
            columns.append((name, sf.iloc[:, position].to_numpy()))
    elif isinstance(sf, list | tuple):
        if not all(pd.api.types.is_scalar(v) for v in sf):
            raise ValueError(
                f"{argument}: a list must hold one label per row; for several features pass a DataFrame or a "
                "dict with one column per feature (as fairlearn does)."
            )
        columns.append((f"{prefix}_0", np.asarray(sf, dtype=object)))
    elif isinstance(sf, str | bytes) or np.isscalar(sf):
        raise ValueError(f"{argument} must hold one label per row, got the scalar {type(sf).__name__}.")
    else:
        arr = np.asarray(sf)
        if arr.ndim == 2 and arr.shape[1] == 1:
            arr = arr[:, 0]
        if arr.ndim == 1:
            columns.append((f"{prefix}_0", arr))
        elif arr.ndim == 2:
            columns += [(f"{prefix}_{i}", arr[:, i]) for i in range(arr.shape[1])]
        else:
            raise ValueError(f"{argument} must be 1- or 2-dimensional, got shape {arr.shape}.")
    seen: set[str] = set()
    for column_name, _ in columns:
        if column_name in seen:  # fairlearn's message, word for word
            raise ValueError(f"Detected duplicate feature name: '{column_name}'")
        seen.add(column_name)
    for column_name, values in columns:
        if len(values) != n_rows:
            raise ValueError(
                f"y_true, y_pred and {argument} must have one entry per row; feature {column_name!r} and "
                "y_true differ in length."
            )
    return columns


def _factorize(values: np.ndarray, name: str) -> tuple[np.ndarray, np.ndarray]:
    try:
        codes, uniques = pd.factorize(values, use_na_sentinel=True)
    except TypeError:
        raise TypeError(f"sensitive feature {name!r} must hold hashable labels (str, int, ...), not lists or arrays.") from None
    if (codes < 0).any():
        raise ValueError(f"sensitive feature {name!r} contains missing values (None or NaN); every row needs a group label.")
    return codes.astype(np.int64), np.asarray(uniques, dtype=object)


def _sorted_levels(uniques: np.ndarray) -> list[Any]:
    try:
        return sorted(uniques.tolist())
    except TypeError:
        return uniques.tolist()


def _resolve_intersections(
    groups: Any, columns: list[tuple[str, np.ndarray]], epsilon: float, undeclared: str = "raise"
) -> tuple[list[tuple[Any, ...]], pd.MultiIndex, np.ndarray]:
    """Declared intersectional groups (tuples), their index, and every row's group number."""
    names = [name for name, _ in columns]
    factorized = [_factorize(values, name) for name, values in columns]
    combo = np.zeros(len(columns[0][1]), dtype=np.int64)
    for codes, uniques in factorized:
        combo = combo * len(uniques) + codes
    combo_codes, combo_uniques = pd.factorize(combo)
    if groups is None:
        if not math.isinf(epsilon):
            raise ValueError(
                "groups is required with a finite epsilon: declare the possible labels of every sensitive feature, "
                f"e.g. groups={{{', '.join(repr(n) + ': [...]' for n in names)}}} (every combination is a group), or a "
                "list of label tuples. Reading them off the data would reveal, without noise, whether a rare group is "
                "present (allowed only with epsilon=inf)."
            )
        index = pd.MultiIndex.from_product([_sorted_levels(u) for _, u in factorized], names=names)
    elif isinstance(groups, dict):
        if set(groups) != set(names) or len(groups) != len(names):
            raise ValueError(
                f"groups: a dict must have one entry per sensitive feature, keyed by its name {names}, got keys "
                f"{list(groups)}."
            )
        levels = []
        for name in names:
            declared, _ = resolve_groups(groups[name], np.empty(0, dtype=object), epsilon, name=f"groups[{name!r}]")
            levels.append(declared.tolist())
        index = pd.MultiIndex.from_product(levels, names=names)
    else:
        if isinstance(groups, str | bytes) or not hasattr(groups, "__iter__"):
            raise TypeError(f"groups must be a dict of levels per feature or a list of label tuples, got {groups!r:.80}.")
        cells = list(groups)
        if not cells or not all(isinstance(c, tuple) and len(c) == len(names) for c in cells):
            raise ValueError(
                f"groups: with {len(names)} sensitive features, declare a dict {{feature name: [labels]}} (every "
                f"combination is a group) or a non-empty list of {len(names)}-tuples of labels, one per group."
            )
        if len(set(cells)) != len(cells):
            raise ValueError("groups lists a group more than once; list each group once.")
        index = pd.MultiIndex.from_tuples(cells, names=names)
    if undeclared == "other" and groups is not None:
        other = tuple(OTHER for _ in names)
        if other in set(index):
            raise ValueError(f"groups declares {other!r}, the bucket of undeclared labels; rename that group.")
        index = index.append(pd.MultiIndex.from_tuples([other], names=names))
    declared = list(index)
    position = {cell: i for i, cell in enumerate(declared)}
    lookup = np.empty(len(combo_uniques), dtype=np.int64)
    for k, value in enumerate(combo_uniques.tolist()):
        labels = []
        for _, uniques in reversed(factorized):
            value, code = divmod(value, len(uniques))
            labels.append(uniques[code])
        cell = tuple(reversed(labels))
        if cell not in position and undeclared == "other" and groups is not None:
            cell = tuple(OTHER for _ in names)
        if cell not in position:
            raise ValueError(
                f"sensitive_features hold a combination of labels outside the declared groups ({len(declared)} declared "
                f"for {names}); declare every possible group in groups= (public knowledge) or drop those rows."
            )
        lookup[k] = position[cell]
    return declared, index, lookup[combo_codes]


def _resolve_single(
    groups: Any, name: str, values: np.ndarray, epsilon: float, undeclared: str = "raise"
) -> tuple[list[Any], pd.Index, np.ndarray]:
    codes, uniques = _factorize(values, name)
    if undeclared == "other" and groups is not None:
        declared, _ = resolve_groups(groups, np.empty(0, dtype=object), epsilon)
        if OTHER in declared.tolist():
            raise ValueError(f"groups declares {OTHER!r}, the label of the bucket of undeclared labels; rename that group.")
        declared = np.append(declared, np.asarray([OTHER], dtype=object))
        where = pd.Index(declared, dtype=object).get_indexer(pd.Index(uniques, dtype=object))
        where = np.where(where < 0, len(declared) - 1, where).astype(np.int64)
        return declared.tolist(), pd.Index(declared.tolist(), name=name, tupleize_cols=False), where[codes]
    try:
        declared, where = resolve_groups(groups, uniques, epsilon)
    except ValueError as exc:
        if "outside the declared groups" in str(exc):
            raise ValueError(
                f"sensitive feature {name!r} holds label(s) outside the declared groups "
                f"{np.asarray(groups, dtype=object).tolist()}; "
                "declare every group in groups= (the set of groups is public knowledge) or drop those rows."
            ) from None
        raise
    return declared.tolist(), pd.Index(declared.tolist(), name=name, tupleize_cols=False), where[codes]



def resolve_rows(
    groups: Any, undeclared: str, columns: list[tuple[str, np.ndarray]], controls: list[tuple[str, np.ndarray]],
    epsilon: float,
) -> Grouping:
    """Every row's group (control-major when there are control features) and the index."""
    if controls:
        names = [n for n, _ in controls] + [n for n, _ in columns]
        duplicates = [name for position, name in enumerate(names) if name in names[:position]]
        if duplicates:  # fairlearn's message, word for word
            raise ValueError(f"Detected duplicate feature name: '{duplicates[0]}'")
        if groups is not None and not isinstance(groups, dict):
            raise ValueError(
                f"groups: with control_features, declare a dict with the labels of every feature {names} (every "
                "combination is a group)."
            )
        declared, index, group = _resolve_intersections(groups, controls + columns, epsilon, undeclared)
        if undeclared == "other":
            raise ValueError('undeclared="other" is not available with control_features; declare every label in groups.')
        control_index = index.droplevel(list(range(len(controls), len(names)))).unique()
        return Grouping(index=index, group=group, n_groups=len(declared), n_control=len(control_index),
                        control_index=control_index, sensitive_names=[n for n, _ in columns])
    if len(columns) == 1:
        declared, index, group = _resolve_single(groups, columns[0][0], columns[0][1], epsilon, undeclared)
    else:
        declared, index, group = _resolve_intersections(groups, columns, epsilon, undeclared)
    return Grouping(index=index, group=group, n_groups=len(declared), n_control=1, control_index=None,
                    sensitive_names=[n for n, _ in columns])
