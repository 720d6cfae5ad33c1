"""The exact (``epsilon = inf``) results of :class:`~dpfair.metrics.PrivateMetricFrame`, with fairlearn's semantics.

At ``epsilon = inf`` nothing is private, so nothing stops an exact computation: every metric fairlearn's
``MetricFrame`` accepts (any callable, non-scalar results such as ``confusion_matrix``, per-metric
``sample_params``) is computed here on the rows of each declared group, and the summaries and the bootstrap
intervals (``n_boot``, ``ci_quantiles``) follow fairlearn's rules:

* ``by_group`` is indexed by the frame's groups (declared, or read off the data at ``epsilon = inf``); a group
  without rows is NaN;
* ``group_min`` / ``group_max`` with ``errors="raise"`` refuse a non-scalar column, with ``"coerce"`` they read it
  as NaN; ``difference`` and ``ratio`` coerce by default;
* the intervals are percentiles of ``n_boot`` resamples of the rows (with replacement, the seeds of each
  resample drawn from ``random_state`` as fairlearn draws them), so the same ``random_state`` gives fairlearn's
  numbers.

Metrics the frame can also release privately (a supported name, a :class:`~dpfair.metrics.CountMetric`, a
supported fairlearn / scikit-learn function with its table-compatible ``sample_params``) are evaluated from the
exact per-group table (:func:`dpfair.metrics._core.evaluate`), which gives scikit-learn's numbers, including its
``zero_division`` values; every other callable is called on each group's rows.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from dpfair.metrics import _core
from dpfair.metrics._core import MetricSpec
from dpfair.metrics._stages import Rows

__all__ = [
    "BOOTSTRAP_NOT_INITIALIZED",
    "INVALID_COMPARE_METHOD",
    "INVALID_ERRORS",
    "ExactFrame",
    "ExactMetric",
    "bootstrap_seeds",
]

#: fairlearn's messages, kept word for word so that code written against ``MetricFrame`` sees the same errors
INVALID_ERRORS = "Invalid error value specified. Valid values are ['raise', 'coerce']"
INVALID_COMPARE_METHOD = "Unrecognised comparison method: {0}"
NON_SCALAR = (
    "Metric frame contains non-scalar cells. Please remove non-scalar columns from your metric frame or use "
    "parameter errors='coerce'."
)
BOOTSTRAP_QUANTILE_ERROR = "Error calling numpy.quantiles. Most likely due to a metric returning a non-scalar result"
BOOTSTRAP_NOT_INITIALIZED = (
    "Could not compute confidence intervals: Bootstrapping parameters n_boot and ci_quantiles were not specified "
    "in the MetricFrame constructor."
)


@dataclass
class ExactMetric:
    """One metric of the exact frame: a callable on the rows, or a table spec (``spec``) evaluated from counts.

    ``params`` are the metric's own ``sample_params`` (one value per row, or a scalar passed as it is);
    ``weights`` the ``sample_weight`` of a table-evaluated metric.
    """

    key: str
    function: Callable[..., Any] | None = None
    params: dict[str, Any] = field(default_factory=dict)
    spec: MetricSpec | None = None
    weights: np.ndarray | None = None


def bootstrap_seeds(random_state: Any, n_boot: int) -> np.ndarray:
    """One seed per resample from fairlearn's ``random_state`` (None, an int, a RandomState or a Generator)."""
    high = np.iinfo(np.uint32).max
    if random_state is None:
        return np.random.default_rng().integers(0, high, size=n_boot, dtype=np.uint32)
    if isinstance(random_state, np.random.RandomState):
        return random_state.randint(low=0, high=high, size=n_boot, dtype=np.uint32)
    if isinstance(random_state, np.random.SeedSequence):
        random_state = np.random.default_rng(random_state)
    if isinstance(random_state, np.random.Generator):
        return random_state.integers(0, high, size=n_boot, dtype=np.uint32)
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        return np.random.default_rng(seed=int(random_state)).integers(0, high, size=n_boot, dtype=np.uint32)
    raise ValueError(f"Unsupported random_state: {random_state}")


def _scalar_or_nan(value: Any) -> Any:
    return value if np.isscalar(value) else np.nan


def _coerced(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.apply(lambda column: column.apply(_scalar_or_nan))


def _ratio_below_one(value: Any) -> Any:
    return 1 / value if value > 1 else value


class _Result:
    """``overall`` and ``by_group`` of one evaluation (the data or one resample), always as pandas objects."""

    def __init__(self, overall: pd.Series | pd.DataFrame, by_group: pd.DataFrame, controls: list[str] | None) -> None:
        self.overall = overall
        self.by_group = by_group
        self.controls = controls

    def grouping(self, how: str, errors: str = "raise") -> pd.Series | pd.DataFrame:
        if errors not in ("raise", "coerce"):
            raise ValueError(INVALID_ERRORS)
        frame = self.by_group if errors == "raise" else _coerced(self.by_group)
        try:
            if not self.controls:
                return frame.agg(how, axis=0)
            return frame.groupby(level=self.controls).agg(how)
        except (ValueError, TypeError) as exc:
            if errors == "raise":
                raise ValueError(NON_SCALAR) from exc
            raise

    def difference(self, method: str, errors: str = "coerce") -> pd.Series | pd.DataFrame:
        if errors not in ("raise", "coerce"):
            raise ValueError(INVALID_ERRORS)
        subtrahend = self.grouping("min", errors) if method == "between_groups" else self.overall
        values = _coerced(self.by_group)
        gaps = (values - subtrahend).abs()
        return gaps.max() if not self.controls else gaps.groupby(level=self.controls).max()

    def ratio(self, method: str, errors: str = "coerce") -> pd.Series | pd.DataFrame:
        if errors not in ("raise", "coerce"):
            raise ValueError(INVALID_ERRORS)
        if method == "between_groups":
            return self.grouping("min", errors) / self.grouping("max", errors)
        if self.controls:
            ratios = self.by_group.unstack(level=self.controls) / self.overall.unstack(level=self.controls)
        else:
            ratios = self.by_group / self.overall
        ratios = ratios.apply(lambda column: column.transform(_ratio_below_one))
        return ratios.min() if not self.controls else ratios.min().unstack(0)


def _quantiles(quantiles: list[float], samples: list[Any]) -> list[Any]:
    """fairlearn's percentiles of a list of resampled Series (``np.quantile``) or DataFrames (``np.nanquantile``)."""
    try:
        if isinstance(samples[0], pd.Series):
            values = np.quantile(samples, q=quantiles, axis=0)
            return [pd.Series(values[i], index=samples[0].index, name=samples[0].name) for i in range(len(quantiles))]
        values = np.nanquantile(samples, q=quantiles, axis=0)
    except ValueError as exc:
        raise ValueError(BOOTSTRAP_QUANTILE_ERROR) from exc
    return [pd.DataFrame(values[i], index=samples[0].index, columns=samples[0].columns) for i in range(len(quantiles))]


def _none_to_nan(target: Any) -> Any:
    return target.where(target.notna(), np.nan)


class ExactFrame:
    """fairlearn's ``MetricFrame`` results computed exactly on the frame's groups (``epsilon = inf`` only).

    Parameters
    ----------
    metrics : list of ExactMetric
        The metrics in output order.
    single : bool
        A single metric was given (not a dict): results are shaped as fairlearn shapes a bare callable's.
    rows : Rows
        The frame's resolved rows: their ``grouping`` (every row's group number, control-major, and the index), and
        the labels (``labels_true`` / ``labels_pred``, 0/1) and values (``values_true`` / ``values_pred``) the
        table-evaluated metrics read.
    y_true, y_pred : numpy.ndarray
        The rows as given (what a called metric receives).
    """

    def __init__(self, metrics: list[ExactMetric], single: bool, rows: Rows, y_true: np.ndarray,
                 y_pred: np.ndarray) -> None:
        self.metrics = metrics
        self.single = single
        self.rows = rows
        self.y_true = y_true
        self.y_pred = y_pred
        control_index = rows.grouping.control_index
        self.controls = None if control_index is None else [str(n) for n in control_index.names]
        self.result = self._evaluate(None)
        self.cache: dict[str, Any] = {}

    # ------------------------------------------------------------------ one evaluation
    def _table_values(self, metric: ExactMetric, take: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """By-group ``(G,)`` and overall ``(K,)`` values of a table-evaluated metric on the rows ``take``."""
        rows, spec = self.rows, metric.spec
        assert spec is not None
        group = rows.grouping.group if take is None else rows.grouping.group[take]
        n_groups, k = rows.grouping.n_groups, rows.grouping.n_control
        weights = metric.weights if take is None or metric.weights is None else metric.weights[take]
        sums: dict[str, np.ndarray] = {}
        if spec.real:
            table = np.bincount(group, minlength=n_groups).reshape(n_groups, 1).astype(float)
            y_t, y_p = rows.values_true, rows.values_pred
            if take is not None:
                y_t, y_p = y_t[take], y_p[take]
            sums[spec.key] = np.bincount(group, weights=_core.per_row_values(spec, y_t, y_p),
                                         minlength=n_groups).reshape(k, -1)
        else:
            l_t, l_p = rows.labels_true, rows.labels_pred
            if take is not None:
                l_t, l_p = l_t[take], l_p[take]
            flat = group * 4 + 2 * l_t + l_p
            table = np.bincount(flat, weights=weights, minlength=4 * n_groups).reshape(n_groups, 4).astype(float)
        by_group, overall = _core.evaluate(table.reshape(k, n_groups // k, -1), sums, [spec], exact=True)[spec.key]
        return by_group.reshape(-1), overall.reshape(-1)

    def _called_values(self, metric: ExactMetric, take: np.ndarray | None) -> tuple[list[Any], list[Any]]:
        """By-group and overall values of a called metric: the function on each group's rows (NaN without rows)."""
        rows = self.rows
        n_rows = len(self.y_true)
        take = np.arange(n_rows) if take is None else take
        group = rows.grouping.group[take]
        n_groups, k = rows.grouping.n_groups, rows.grouping.n_control
        per_control = n_groups // k
        order = np.argsort(group, kind="stable")
        ends = np.cumsum(np.bincount(group, minlength=n_groups))
        starts = ends - np.bincount(group, minlength=n_groups)
        function = metric.function
        assert function is not None

        def call(positions: np.ndarray) -> Any:
            chosen = take[positions]
            kwargs = {name: value[chosen] if isinstance(value, np.ndarray) and value.ndim >= 1 and len(value) == n_rows
                      else value for name, value in metric.params.items()}
            return function(self.y_true[chosen], self.y_pred[chosen], **kwargs)

        by_group = [call(order[starts[g]:ends[g]]) if ends[g] > starts[g] else np.nan for g in range(n_groups)]
        control = group // per_control
        overall = []
        for c in range(k):
            positions = np.flatnonzero(control == c) if k > 1 else np.arange(len(take))
            overall.append(call(positions) if positions.size else np.nan)
        return by_group, overall

    def _evaluate(self, take: np.ndarray | None) -> _Result:
        by_group: dict[str, Any] = {}
        overall: dict[str, Any] = {}
        for metric in self.metrics:
            if metric.function is None:
                g, o = self._table_values(metric, take)
                by_group[metric.key], overall[metric.key] = list(g), list(o)
            else:
                by_group[metric.key], overall[metric.key] = self._called_values(metric, take)
        index = self.rows.grouping.index
        frame = pd.DataFrame({key: pd.Series(values, index=index, dtype=object) for key, values in by_group.items()},
                             index=index).infer_objects()
        if self.controls is None:
            totals = pd.Series({key: values[0] for key, values in overall.items()}, dtype=None if overall else float)
        else:
            control_index = self.rows.grouping.control_index
            totals = pd.DataFrame({key: pd.Series(values, index=control_index, dtype=object)
                                   for key, values in overall.items()}, index=control_index).infer_objects()
        return _Result(totals, frame, self.controls)

    # ------------------------------------------------------------------ fairlearn's shapes
    def extract(self, result: Any, no_control_levels: bool) -> Any:
        """A bare callable's result is a Series (with control levels, or for ``by_group``) or a scalar."""
        if self.single:
            if self.controls or no_control_levels:
                return result.iloc[:, 0]
            return result.iloc[0]
        return result

    def overall(self) -> Any:
        return self.extract(self.result.overall, no_control_levels=False)

    def by_group(self) -> Any:
        return self.extract(self.result.by_group, no_control_levels=True)

    def grouping(self, how: str, errors: str) -> Any:
        if errors not in ("raise", "coerce"):
            raise ValueError(INVALID_ERRORS)
        return self.extract(self.result.grouping(how, errors), no_control_levels=False)

    def compare(self, kind: str, method: str, errors: str) -> Any:
        if errors not in ("raise", "coerce"):
            raise ValueError(INVALID_ERRORS)
        if method not in ("between_groups", "to_overall"):
            raise ValueError(INVALID_COMPARE_METHOD.format(method))
        value = getattr(self.result, kind)(method, errors)
        return self.extract(_none_to_nan(value), no_control_levels=False)

    # ------------------------------------------------------------------ fairlearn's bootstrap
    def bootstrap(self, n_boot: int, quantiles: list[float], random_state: Any) -> None:
        """Percentile intervals from ``n_boot`` resamples of the rows, seeded as fairlearn seeds them."""
        n_rows = len(self.y_true)
        samples = []
        for seed in bootstrap_seeds(random_state, n_boot):
            take = np.random.RandomState(int(seed)).choice(n_rows, size=n_rows, replace=True).astype(np.intp)
            samples.append(self._evaluate(take))
        cache = self.cache
        cache["overall_ci"] = [self.extract(x, False) for x in _quantiles(quantiles, [s.overall for s in samples])]
        cache["by_group_ci"] = [self.extract(x, True) for x in _quantiles(quantiles, [s.by_group for s in samples])]
        for name, how in (("group_min_ci", "min"), ("group_max_ci", "max")):
            values = [s.grouping(how, "raise") for s in samples]
            cache[name] = [self.extract(x, False) for x in _quantiles(quantiles, values)]
        for kind in ("difference", "ratio"):
            for method in ("between_groups", "to_overall"):
                values = [_none_to_nan(getattr(s, kind)(method, "raise")) for s in samples]
                cache[f"{kind}_ci", method] = [self.extract(x, False) for x in _quantiles(quantiles, values)]

    def intervals(self, name: str, method: str | None = None) -> list[Any]:
        """The cached ``*_ci`` list (fairlearn's refusal when no bootstrap was asked for)."""
        if not self.cache:
            raise ValueError(BOOTSTRAP_NOT_INITIALIZED)
        if method is not None:
            if method not in ("between_groups", "to_overall"):
                raise ValueError(INVALID_COMPARE_METHOD.format(method))
            return self.cache[name, method]
        return self.cache[name]
