""":class:`FrameAccessors`: what a :class:`~dpfair.metrics.PrivateMetricFrame` shows once released.

fairlearn's interface (``overall``, ``by_group``, the summaries, the ``*_ci`` lists, the levels) and dpfair's
(``flagged``, ``conf_int``), read from the results that the release template set on the frame: the estimates
(``_est``), the intervals (``_cis``), the index of the groups and, at ``epsilon = inf``, fairlearn's exact results
(``_exact``, :mod:`dpfair.metrics._exact`).  Nothing here draws noise or reads the rows.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

import numpy as np
import pandas as pd

from dpfair.metrics import _core, _exact, _intervals
from dpfair.metrics._rows import LIST_NONSCALAR, sensitive_columns

__all__: list[str] = []

_METHODS = ("between_groups", "to_overall")
_ERRORS = ("raise", "coerce")


class FrameAccessors:
    """The accessors of a released frame (a mixin of :class:`~dpfair.metrics.PrivateMetricFrame`)."""

    _exact: Any
    _est: dict[str, Any]
    _cis: dict[str, Any]
    _specs: list[Any]
    _single: bool
    _index: pd.Index
    _control_index: pd.Index | None
    _quantiles: Any
    confidence_level: float

    # ------------------------------------------------------------------ helpers
    @property
    def _user_supplied_callable(self) -> bool:
        """True when ``metrics`` was one metric, not a dict (fairlearn's attribute of the same name)."""
        exact = getattr(self, "_exact", None)
        return bool(exact.single if exact is not None else self._single)

    def _process_features(self, base_name: str, features: Any, sample_array: Any) -> list[tuple[str, np.ndarray]]:
        """fairlearn's internal of that name: ``(name, labels)`` of every feature, with fairlearn's checks and messages.

        An unnamed feature is named ``base_name`` and its position (fairlearn's ``GroupFeature.name_``); reads nothing
        of the frame (fairlearn's tests call it on a bare ``MetricFrame.__new__``).
        """
        if isinstance(features, list) and not all(pd.api.types.is_scalar(v) for v in features):
            raise ValueError(LIST_NONSCALAR)  # fairlearn's words (the frame's own message says what to pass instead)
        columns = sensitive_columns(features, len(sample_array))
        return [(name if name != f"sensitive_feature_{i}" else f"{base_name}{i}", values)
                for i, (name, values) in enumerate(columns)]

    @property
    def _keys(self) -> list[str]:
        return [spec.key for spec in self._specs]

    @property
    def _matrices(self) -> set[str]:
        """The keys of the confusion-matrix metrics (one 2 x 2 matrix per entry, not a number)."""
        return {spec.key for spec in self._specs if spec.matrix}

    def _column(self, values: Any, key: str, dtype: Any = float) -> np.ndarray:
        """One metric's values, flat: numbers as ``dtype``, a confusion matrix's as objects (its matrices)."""
        if key in self._matrices and dtype is not bool:
            flat = np.empty(np.size(values), dtype=object)
            flat[:] = list(np.asarray(values, dtype=object).reshape(-1))
            return flat
        return np.asarray(values).reshape(-1).astype(dtype)

    def _scalar_or_series(self, values: dict[str, np.ndarray]) -> Any:
        """Per control level values ``(K,)`` of each metric, shaped as fairlearn shapes ``overall``."""
        if self._control_index is None:
            if self._single:
                value = values[self._keys[0]][0]
                return value if self._keys[0] in self._matrices else np.float64(value)
            if self._matrices:
                return pd.Series({k: self._column(values[k], k)[0] for k in self._keys}, dtype=object)
            return pd.Series({k: float(values[k][0]) for k in self._keys}, dtype=float)
        if self._single:
            key = self._keys[0]
            column = self._column(values[key], key)
            return pd.Series(column, index=self._control_index.copy(), name=key, dtype=column.dtype)
        return pd.DataFrame({k: self._column(values[k], k) for k in self._keys}, index=self._control_index.copy())

    def _frame_or_series(self, values: dict[str, np.ndarray], dtype: Any = float) -> Any:
        """Per group values ``(K, G)`` of each metric, shaped as fairlearn shapes ``by_group``."""
        if self._single:
            key = self._keys[0]
            column = self._column(values[key], key, dtype)
            return pd.Series(column, index=self._index.copy(), name=key, dtype=column.dtype)
        return pd.DataFrame({k: self._column(values[k], k, dtype) for k in self._keys}, index=self._index.copy())

    @staticmethod
    def _check(method: str | None, errors: str) -> None:
        # fairlearn's messages, word for word
        if errors not in _ERRORS:
            raise ValueError(_exact.INVALID_ERRORS)
        if method is not None and method not in _METHODS:
            raise ValueError(_exact.INVALID_COMPARE_METHOD.format(method))

    def _check_table(self, name: str) -> None:
        """``conf_int`` and ``flagged`` read the table: refused when the labels were not 0/1 (``epsilon=inf`` only)."""
        if not getattr(self, "_table_ok", True):
            raise ValueError(
                f"{name} is not available: y_true / y_pred are not 0/1 labels, so the metrics were computed by calling "
                "them on every group's rows (epsilon=inf); give 0/1 labels (or pos_label) for the table's intervals."
            )

    def _summary(self, name: str, errors: str = "coerce") -> dict[str, np.ndarray]:
        """fairlearn's summary of every metric: a confusion matrix has none (NaN, or refused with ``errors="raise"``)."""
        if errors == "raise" and self._matrices:
            raise ValueError(_exact.NON_SCALAR)
        return {k: np.full(len(self._est[k][1]), np.nan) if k in self._matrices else
                _core.fairlearn_summaries(self._display(k), self._est[k][1])[name] for k in self._keys}

    def _display(self, key: str) -> np.ndarray:
        return self._est[key][0]

    def _intervals_at(self, confidence: float) -> dict[str, _core.MetricIntervals]:
        return _intervals.intervals_at(self._cis, self._specs, self.confidence_level, confidence)

    def _quantile_objects(self, pick: Callable[[_core.MetricIntervals, bool], np.ndarray], point: Callable[[], Any],
                          shape: Callable[[dict[str, np.ndarray]], Any]) -> list[Any]:
        """fairlearn's ``*_ci``: one object per ``ci_quantiles`` entry (see :func:`_intervals.quantile_objects`)."""
        return _intervals.quantile_objects(self._quantiles, self._intervals_at, pick, point, shape)

    # ------------------------------------------------------------------ fairlearn's interface
    @property
    def overall(self) -> Any:
        """The metrics on all rows together (computed from the summed noisy table).

        Returns
        -------
        float or pandas.Series or pandas.DataFrame
            A float for a single metric, else a Series indexed by metric name (with control features:
            indexed by control level).
        """
        if self._exact is not None:
            return self._exact.overall()
        return self._scalar_or_series({k: o for k, (_, o) in self._est.items()})

    @property
    def by_group(self) -> Any:
        """The metrics of every declared group (NaN where a value cannot be measured).

        Returns
        -------
        pandas.Series or pandas.DataFrame
            A Series (single metric) or a DataFrame with one column per metric, indexed by the
            declared groups (a MultiIndex for several sensitive features or control features).
        """
        if self._exact is not None:
            return self._exact.by_group()
        return self._frame_or_series({k: g for k, (g, _) in self._est.items()})

    @property
    def flagged(self) -> Any:
        """Which group values rest on a noise-dominated (or empty) denominator.

        Returns
        -------
        pandas.Series or pandas.DataFrame of bool
            Shaped like :attr:`by_group`.
        """
        self._check_table("flagged")
        return self._frame_or_series(self._flagged, dtype=bool)

    @property
    def sensitive_levels(self) -> list[str]:
        """The names of the sensitive features.

        Returns
        -------
        list of str
            One name per sensitive feature (``sensitive_feature_<i>`` when unnamed).
        """
        return [str(n) for n in self._sensitive_names]

    @property
    def control_levels(self) -> list[str] | None:
        """The names of the control features, or ``None`` without them (fairlearn's property).

        Returns
        -------
        list of str or None
            One name per control feature.
        """
        if self._control_index is None:
            return None
        return [str(n) for n in self._control_index.names]

    @property
    def ci_quantiles(self) -> list[float] | None:
        """The quantiles the ``*_ci`` accessors return (fairlearn's property).

        Returns
        -------
        list of float or None
            ``ci_quantiles`` as given; at a finite ``epsilon`` without it, the two ends of the
            ``confidence_level`` interval (the private intervals are free); at ``epsilon=inf`` without it,
            ``None`` (fairlearn's meaning: no bootstrap was asked for).
        """
        if self._exact is not None:
            return getattr(self, "_ci_quantiles_argument", None)
        return list(self._quantiles)

    @ci_quantiles.setter
    def ci_quantiles(self, value: Any) -> None:
        self._ci_quantiles_argument = value

    def group_min(self, errors: Literal["raise", "coerce"] = "raise") -> Any:
        """The smallest group value of each metric (NaN values skipped, as fairlearn does).

        Parameters
        ----------
        errors : {"raise", "coerce"}, default "raise"
            Accepted for fairlearn's signature; every metric here is a scalar.

        Returns
        -------
        float or pandas.Series
            As :attr:`overall`.
        """
        return self._group_extreme("min", errors)

    def group_max(self, errors: Literal["raise", "coerce"] = "raise") -> Any:
        """The largest group value of each metric (NaN values skipped, as fairlearn does).

        Parameters
        ----------
        errors : {"raise", "coerce"}, default "raise"
            Accepted for fairlearn's signature; every metric here is a scalar.

        Returns
        -------
        float or pandas.Series
            As :attr:`overall`.
        """
        return self._group_extreme("max", errors)

    def difference(
        self, method: Literal["between_groups", "to_overall"] = "between_groups", errors: Literal["raise", "coerce"] = "coerce"
    ) -> Any:
        """The largest absolute difference between groups (or between a group and the overall value).

        Parameters
        ----------
        method : {"between_groups", "to_overall"}, default "between_groups"
            ``group_max() - group_min()``, or the largest ``|group value - overall value|``.
        errors : {"raise", "coerce"}, default "coerce"
            Accepted for fairlearn's signature; every metric here is a scalar.

        Returns
        -------
        float or pandas.Series
            As :attr:`overall`; its interval is ``conf_int["difference"]`` (``"difference_to_overall"``).
        """
        return self._comparison("difference", method, errors)

    def ratio(
        self, method: Literal["between_groups", "to_overall"] = "between_groups", errors: Literal["raise", "coerce"] = "coerce"
    ) -> Any:
        """The smallest ratio between groups (or between a group and the overall value), at most 1.

        Parameters
        ----------
        method : {"between_groups", "to_overall"}, default "between_groups"
            ``group_min() / group_max()``, or the smallest ``min(v / overall, overall / v)``.
        errors : {"raise", "coerce"}, default "coerce"
            Accepted for fairlearn's signature; every metric here is a scalar.

        Returns
        -------
        float or pandas.Series
            As :attr:`overall`; its interval is ``conf_int["ratio"]`` (``"ratio_to_overall"``).
        """
        return self._comparison("ratio", method, errors)

    def _group_extreme(self, which: Literal["min", "max"], errors: str) -> Any:
        """``group_min(errors)`` or ``group_max(errors)`` (``which``): the exact frame's, else the released summary."""
        if self._exact is not None:
            return self._exact.grouping(which, errors)
        self._check(None, errors)
        return self._scalar_or_series(self._summary(f"group_{which}", errors))

    def _comparison(self, kind: Literal["difference", "ratio"], method: str, errors: str) -> Any:
        """``difference(method, errors)`` or ``ratio(method, errors)`` (``kind``): the exact frame's, else the released."""
        if self._exact is not None:
            return self._exact.compare(kind, method, errors)
        self._check(method, errors)
        if errors == "raise" and self._matrices:
            raise ValueError(_exact.NON_SCALAR)
        return self._scalar_or_series({k: getattr(ci, kind)[method][0] for k, ci in self._cis.items()})

    # ------------------------------------------------------------------ fairlearn's interval accessors
    @property
    def overall_ci(self) -> list[Any]:
        """Intervals of :attr:`overall`, as fairlearn's ``overall_ci``: one object per entry of ``ci_quantiles``.

        Returns
        -------
        list
            The quantiles of the draws of the overall values.
        """
        if self._exact is not None:
            return self._exact.intervals("overall_ci")
        return self._quantile_objects(lambda ci, up: ci.overall.upper if up else ci.overall.lower, lambda: self.overall,
                                      self._scalar_or_series)

    @property
    def by_group_ci(self) -> list[Any]:
        """Intervals of :attr:`by_group`, as fairlearn's ``by_group_ci``: one object per entry of ``ci_quantiles``.

        Returns
        -------
        list
            Per group interval ends (a flagged group's: the ends of the metric's range).
        """
        if self._exact is not None:
            return self._exact.intervals("by_group_ci")
        return self._quantile_objects(lambda ci, up: ci.by_group.upper if up else ci.by_group.lower,
                                      lambda: self.by_group, self._frame_or_series)

    def group_min_ci(self) -> list[Any]:
        """Compute fairlearn's ``group_min_ci()``: one object like :meth:`group_min` per entry of ``ci_quantiles``.

        Returns
        -------
        list
            Ends of a simultaneous interval of the smallest group value.
        """
        if self._exact is not None:
            return self._exact.intervals("group_min_ci")
        return self._quantile_objects(lambda ci, up: ci.group_min.upper if up else ci.group_min.lower, self.group_min,
                                      self._scalar_or_series)

    def group_max_ci(self) -> list[Any]:
        """Compute fairlearn's ``group_max_ci()``: one object like :meth:`group_max` per entry of ``ci_quantiles``.

        Returns
        -------
        list
            Ends of a simultaneous interval of the largest group value.
        """
        if self._exact is not None:
            return self._exact.intervals("group_max_ci")
        return self._quantile_objects(lambda ci, up: ci.group_max.upper if up else ci.group_max.lower, self.group_max,
                                      self._scalar_or_series)

    def difference_ci(self, method: Literal["between_groups", "to_overall"] = "between_groups") -> list[Any]:
        """Compute fairlearn's ``difference_ci(method)``: one object like :meth:`difference` per ``ci_quantiles`` entry.

        Parameters
        ----------
        method : {"between_groups", "to_overall"}, default "between_groups"
            As for :meth:`difference`.

        Returns
        -------
        list
            Interval ends.
        """
        return self._comparison_ci("difference", method)

    def ratio_ci(self, method: Literal["between_groups", "to_overall"] = "between_groups") -> list[Any]:
        """Compute fairlearn's ``ratio_ci(method)``: one object like :meth:`ratio` per entry of ``ci_quantiles``.

        Parameters
        ----------
        method : {"between_groups", "to_overall"}, default "between_groups"
            As for :meth:`ratio`.

        Returns
        -------
        list
            Interval ends.
        """
        return self._comparison_ci("ratio", method)

    def _comparison_ci(self, kind: Literal["difference", "ratio"], method: str) -> list[Any]:
        """``difference_ci(method)`` or ``ratio_ci(method)`` (``kind``): the exact frame's, else the released ends."""
        if self._exact is not None:
            return self._exact.intervals(f"{kind}_ci", method)
        self._check(method, "coerce")
        return self._quantile_objects(
            lambda ci, up: getattr(ci, kind)[method][1].upper if up else getattr(ci, kind)[method][1].lower,
            lambda: getattr(self, kind)(method), self._scalar_or_series,
        )

    @property
    def conf_int(self) -> dict[str, dict[str, Any]]:
        """Confidence intervals at ``confidence_level`` for every estimate.

        Returns
        -------
        dict
            Keys ``"overall"``, ``"by_group"``, ``"difference"``, ``"ratio"`` (the ``between_groups``
            methods), ``"difference_to_overall"``, ``"ratio_to_overall"``, ``"group_min"`` and
            ``"group_max"``; each maps ``"lower"`` and ``"upper"`` to objects shaped like the estimate,
            e.g. ``conf_int["difference"]["lower"]["true_positive_rate"]``.
        """
        self._check_table("conf_int")
        return _intervals.conf_int(self._cis, self._scalar_or_series, self._frame_or_series)
