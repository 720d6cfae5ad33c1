"""The ``metrics=`` argument of :class:`~dpfair.metrics.PrivateMetricFrame`: metric names, functions, partials and
:class:`CountMetric`, fairlearn's ``sample_params``, and the :class:`~dpfair.metrics._core.MetricSpec` of each metric."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from dpfair._validation import check_bounds
from dpfair.metrics import _core
from dpfair.metrics._core import MOMENT_METRICS, REAL_METRICS, SCORE_METRICS, SUPPORTED, MetricSpec

__all__ = ["SUPPORTED_METRICS", "CountMetric", "MetricOptions", "MetricPlan", "metric_specs", "parse_metrics"]

#: The metrics :class:`PrivateMetricFrame` computes, by name (the fairlearn or scikit-learn function of that
#: name is accepted too; ``fbeta_score`` is taken as ``functools.partial(sklearn.metrics.fbeta_score, beta=...)``).
#: All but the last four are count-based; the last four are real-valued (they need ``bounds``; ``r2_score`` reads
#: three released sums per group).
SUPPORTED_METRICS: tuple[str, ...] = tuple(name for name in SUPPORTED if name != "fbeta_score")
#: the metrics of real values in ``bounds``: one released sum per group, or three (``r2_score``)
_BOUNDED = REAL_METRICS + MOMENT_METRICS

_SUPPORTED_TEXT = (", ".join(SUPPORTED_METRICS) + ", fbeta_score (with beta), confusion_matrix, roc_auc_score (scores in "
                   "bounds, score_bins)")


def _fbeta_function() -> Any:
    try:
        from sklearn.metrics import fbeta_score
    except ImportError:  # pragma: no cover - scikit-learn is a dependency
        return None
    return fbeta_score


_FBETA = _fbeta_function()


@dataclass(frozen=True)
class CountMetric:
    """A metric of your own, computed from the four confusion counts of each group.

    Parameters
    ----------
    function : callable
        ``function(tn, fp, fn, tp)`` on numpy arrays of counts (floats, any shape), returning the metric
        value of each (NaN where it is undefined), e.g.
        ``lambda tn, fp, fn, tp: (tp / (tp + fn) + tn / (tn + fp)) / 2``.  It must be a deterministic
        function of the counts: it sees only the released (noisy) counts and so costs no extra privacy.
    name : str
        Its name in the output.
    denominator : tuple of str, default ("TN", "FP", "FN", "TP")
        The cells whose sum being (noise-dominated or) 0 leaves the value undefined: the flags use them.
    zero_division : float, default nan
        The value at ``epsilon=inf`` when the denominator is 0 in a group that has rows.
    value_range : (float, float), default (0.0, 1.0)
        The range of the values (the intervals are clipped to it).
    """

    function: Callable[..., Any]
    name: str
    denominator: tuple[str, ...] = _core.CELL_NAMES
    zero_division: float = math.nan
    value_range: tuple[float, float] = (0.0, 1.0)


class _NotGiven:
    """The ``pos_label`` of a metric that fixes none (``None`` is a value a ``functools.partial`` may fix)."""

    def __repr__(self) -> str:
        return "NOT_GIVEN"


NOT_GIVEN: Any = _NotGiven()


@dataclass(frozen=True, eq=False)
class MetricOptions:
    """What one parsed metric fixes besides its name.

    Parameters
    ----------
    zero_division : float, default 0.0
        scikit-learn's ``zero_division`` fixed by a ``functools.partial`` ('warn' read as 0).
    beta : float, default 1.0
        ``fbeta_score``'s ``beta``, fixed by a ``functools.partial``.
    pos_label : object, default NOT_GIVEN
        The ``pos_label`` fixed by a ``functools.partial``, or :data:`NOT_GIVEN`.
    count_metric : CountMetric or None, default None
        The :class:`CountMetric` given (its metric name is then ``"count_metric"``).
    value_range : (float, float), default (0.0, 1.0)
        A :class:`CountMetric`'s checked ``value_range``.
    function : callable or None, default None
        ``epsilon = inf``: the callable as given, called on the rows when the table cannot compute it.
    """

    zero_division: float = 0.0
    beta: float = 1.0
    pos_label: Any = NOT_GIVEN
    count_metric: CountMetric | None = None
    value_range: tuple[float, float] = (0.0, 1.0)
    function: Callable[..., Any] | None = None

    @property
    def fixes_pos_label(self) -> bool:
        """A ``functools.partial`` fixed ``pos_label``."""
        return self.pos_label is not NOT_GIVEN


#: one parsed metric: ``(output name, supported name, or "count_metric" / "callable", its options)``
ParsedMetric = tuple[str, str, MetricOptions]


@dataclass(frozen=True, eq=False)
class MetricPlan:
    """The checked metrics of one frame (:func:`metric_specs`).

    Parameters
    ----------
    specs : list of MetricSpec
        Every metric's spec, in output order.
    counts : list of str
        The names of the count-based metrics.
    reals : list of str
        The names of the real-valued metrics.
    bounds : (float, float) or None
        The checked ``bounds`` (None when no metric needs them).
    pos_label : object
        The one ``pos_label`` of the count-based metrics (None: 0/1 labels).
    sample_weight : object
        The ``sample_weight`` array as given (checked against its bound with the rows), or None.
    weight_bound : float or None
        The declared ``sample_weight_bound``, or None without weights.
    """

    specs: list[MetricSpec]
    counts: list[str]
    reals: list[str]
    bounds: tuple[float, float] | None
    pos_label: Any
    sample_weight: Any
    weight_bound: float | None


#: keyword arguments of a ``functools.partial`` of a supported function, and the metrics that take them
_PARTIAL_KEYWORDS = {"zero_division", "pos_label", "beta"}
_ZERO_DIVISION_METRICS = ("precision_score", "recall_score", "f1_score", "fbeta_score")


def _zero_division_value(value: Any, where: str) -> float:
    if isinstance(value, str) and value == "warn":
        return 0.0
    if isinstance(value, bool) or not isinstance(value, int | float | np.floating | np.integer):
        raise TypeError(f"{where}: zero_division must be 'warn', 0, 1 or np.nan, as in scikit-learn.")
    if not (math.isnan(float(value)) or float(value) in (0.0, 1.0)):
        raise ValueError(f"{where}: zero_division must be 'warn', 0, 1 or np.nan, as in scikit-learn.")
    return float(value)


def _metric_name(metric: Any, where: str) -> tuple[str, MetricOptions]:
    """``(supported name, options)`` of one metric; options: ``zero_division``, ``pos_label``, ``beta``, ``count_metric``."""
    if isinstance(metric, CountMetric):
        if not callable(metric.function):
            raise TypeError(f"{where}: CountMetric.function must be callable f(tn, fp, fn, tp).")
        unknown = set(metric.denominator) - set(_core.CELL_NAMES)
        if not metric.denominator or unknown:
            raise ValueError(f"{where}: CountMetric.denominator must name cells among {list(_core.CELL_NAMES)}.")
        lo, hi = check_bounds(metric.value_range, f"{where}.value_range")
        probe = np.array([3.0, 0.0])
        try:
            with np.errstate(all="ignore"):
                out = np.asarray(metric.function(probe, probe, probe, probe), dtype=float)
            np.broadcast_to(out, probe.shape)
        except Exception:
            raise TypeError(
                f"{where}: CountMetric.function must take four numpy arrays (tn, fp, fn, tp) and return one value per "
                "element (vectorized numpy arithmetic)."
            ) from None
        return "count_metric", MetricOptions(count_metric=metric, value_range=(lo, hi))
    if isinstance(metric, str) and metric in ("confusion_matrix", *SCORE_METRICS):
        return metric, MetricOptions()
    if isinstance(metric, str):
        if metric == "fbeta_score":
            raise ValueError(f"{where}: 'fbeta_score' needs beta: pass functools.partial(sklearn.metrics.fbeta_score, beta=2).")
        if metric in SUPPORTED:
            return metric, MetricOptions()
        raise ValueError(f"{where}: {metric!r} is not a supported metric; use one of {_SUPPORTED_TEXT}, or a CountMetric.")
    if isinstance(metric, functools.partial):
        name, options = (_metric_name(metric.func, where) if metric.func is not _FBETA
                         else ("fbeta_score", MetricOptions()))
        unknown = set(metric.keywords) - _PARTIAL_KEYWORDS
        if metric.args or unknown:
            raise ValueError(
                f"{where}: a functools.partial may fix only {sorted(_PARTIAL_KEYWORDS)} of a supported function "
                f"(no positional arguments); use one of {_SUPPORTED_TEXT}, or a CountMetric."
            )
        keywords = dict(metric.keywords)
        fixed: dict[str, Any] = {}  # the keywords this partial fixes, by MetricOptions field
        if "zero_division" in keywords:
            if name not in _ZERO_DIVISION_METRICS:
                raise ValueError(f"{where}: {name} takes no zero_division (scikit-learn's metrics {_ZERO_DIVISION_METRICS} do).")
            fixed["zero_division"] = _zero_division_value(keywords["zero_division"], where)
        if "beta" in keywords:
            if name != "fbeta_score":
                raise ValueError(f"{where}: only fbeta_score takes beta.")
            beta = keywords["beta"]
            if isinstance(beta, bool) or not isinstance(beta, int | float) or not (math.isfinite(beta) and beta > 0):
                raise ValueError(f"{where}: beta must be a positive number, e.g. beta=2.")
            fixed["beta"] = float(beta)
        elif name == "fbeta_score":
            raise ValueError(f"{where}: fbeta_score needs beta, e.g. functools.partial(fbeta_score, beta=2).")
        if "pos_label" in keywords:
            fixed["pos_label"] = keywords["pos_label"]
        return name, replace(options, **fixed)
    if callable(metric):
        name = getattr(metric, "__name__", None)
        module = getattr(metric, "__module__", None) or ""
        if name in SUPPORTED and name != "fbeta_score" and module.startswith(("fairlearn.metrics", "sklearn.metrics")):
            return name, MetricOptions()
        if name in ("confusion_matrix", *SCORE_METRICS) and module.startswith("sklearn.metrics"):
            return name, MetricOptions()  # the released table itself (free), or a released histogram of the scores
        if name == "fbeta_score" and module.startswith("sklearn.metrics"):
            raise ValueError(f"{where}: fbeta_score needs beta, e.g. functools.partial(fbeta_score, beta=2).")
        label = name or type(metric).__name__
        raise ValueError(
            f"{where}: the function {label!r} is not supported: only metrics computable from a private "
            f"contingency table or from bounded per-group sums are; use one of {_SUPPORTED_TEXT} "
            "(by name, or the fairlearn / scikit-learn function itself, or a functools.partial of it fixing "
            "zero_division, pos_label or beta), or wrap a function of the counts in dpfair.metrics.CountMetric."
        )
    raise TypeError(
        f"{where} must be a metric name, a supported fairlearn / scikit-learn metric function, a CountMetric, or a dict "
        f"of them, got {type(metric).__name__}; supported: {_SUPPORTED_TEXT}."
    )


def parse_metrics(metrics: Any) -> tuple[list[ParsedMetric], bool]:
    """``[(key, supported name, options)]`` and whether a single metric (not a dict) was given."""
    if isinstance(metrics, dict):
        if not metrics:
            raise ValueError(f"metrics is an empty dict; give at least one of {_SUPPORTED_TEXT}.")
        return _parse_metric_dict(metrics, _metric_name), False
    name, options = _metric_name(metrics, "metrics")
    key = options.count_metric.name if options.count_metric is not None else name
    if isinstance(metrics, functools.partial) and name == "fbeta_score":
        key = "fbeta_score"
    return [(key, name, options)], True


def _parse_metric_dict(
    metrics: dict[Any, Any], parse_one: Callable[[Any, str], tuple[str, MetricOptions]],
) -> list[ParsedMetric]:
    """``[(key, name, options)]`` of a dict of metrics, each value read by ``parse_one(value, "metrics[key]")``."""
    out = []
    for key, value in metrics.items():
        if not isinstance(key, str):
            raise TypeError(f"metrics: dict keys are the output names and must be str, got {type(key).__name__}.")
        out.append((key, *parse_one(value, f"metrics[{key!r}]")))
    return out

def _sample_params(sample_params: Any, keys: list[str], single: bool) -> dict[str, dict[str, Any]]:
    """fairlearn's ``sample_params`` (per metric, or flat for a single metric): ``pos_label`` and ``sample_weight``."""
    if sample_params is None:
        return {}
    if not isinstance(sample_params, dict):
        raise TypeError("sample_params must be a dict, as in fairlearn: {metric name: {parameter: value}}.")
    per_metric = {keys[0]: sample_params} if single and not (set(sample_params) <= set(keys)) else sample_params
    out = {}
    for key, params in per_metric.items():
        if key not in keys:
            raise ValueError(f"sample_params: {key!r} is not one of the metrics {keys}.")
        if not isinstance(params, dict):
            raise TypeError(f"sample_params[{key!r}] must be a dict of parameters, e.g. {{'pos_label': 'yes'}}.")
        for name in params:
            if name not in ("pos_label", "sample_weight"):
                raise ValueError(f"sample_params[{key!r}]: {name!r} is not supported; only pos_label and sample_weight are.")
        out[key] = dict(params)
    return out


def _sample_weight(parsed: list[ParsedMetric], extra: dict[str, dict[str, Any]],
                   sample_weight_bound: Any, from_counts: bool) -> tuple[Any, float | None]:
    """``(the sample_weight array as given, its declared bound)``, or ``(None, None)`` without weights.

    Every count-based metric reads one table, so either none or all of them get ``sample_weight``, and the same
    array object (compared by identity: public, never by value).  Checked before any charge.
    """
    weighted = {key: p["sample_weight"] for key, p in extra.items() if "sample_weight" in p}
    if not weighted:
        if sample_weight_bound is not None:
            raise ValueError("sample_weight_bound is set but no metric has a sample_weight in sample_params; "
                             "give sample_params={metric: {'sample_weight': w}} or leave sample_weight_bound=None.")
        return None, None
    if from_counts:
        raise ValueError("sample_params: sample_weight is not supported by from_counts (a table of counts holds no "
                         "weights); build the frame from the rows with sample_weight_bound.")
    names = {key: name for key, name, _ in parsed}
    for key in weighted:
        if names[key] in _BOUNDED or names[key] in SCORE_METRICS or names[key] == "count":
            raise ValueError(
                f"sample_params[{key!r}]: sample_weight applies to the count-based rates only ({names[key]} is not "
                "one: its release takes no weights); assess it in another frame without sample_weight."
            )
    count_keys = [key for key, name, _ in parsed if name not in _BOUNDED and name not in SCORE_METRICS]
    first = next(iter(weighted.values()))
    if set(weighted) != set(count_keys) or any(w is not first for w in weighted.values()):
        raise ValueError(
            "sample_params: every count-based metric reads one released table, so give every one of them the same "
            f"sample_weight array object (metrics {count_keys}), or assess the unweighted ones in another frame."
        )
    if sample_weight_bound is None:
        raise ValueError(
            "sample_weight_bound is required with sample_weight: declare w_max, the largest weight any row can have, "
            "from public knowledge (never read off the data); each row's weight must lie in [0, w_max]."
        )
    bound = sample_weight_bound
    if isinstance(bound, bool) or not isinstance(bound, int | float | np.integer | np.floating) or not (
        math.isfinite(float(bound)) and float(bound) > 0
    ):
        raise ValueError("sample_weight_bound must be a positive finite number (the declared largest weight of a row).")
    return first, float(bound)


def default_score_bins(epsilon: Any) -> int:
    """The default number of score bins of ``roc_auc_score``, from ``epsilon`` alone: ``round(24 epsilon)`` in [4, 20].

    Each of the 2 B cells of a group's histogram carries discrete-Laplace noise of scale ``2 / epsilon`` (the
    histogram's half of epsilon); fewer, wider bins keep the clipped noisy cells from pulling the AUC towards 1/2.
    Measured in 500-row groups (300 repetitions, 95 % intervals): at epsilon .5, 20 bins cover .920 / .950 with
    an AUC bias of -.031 / -.024, 12 bins .957 / .967 (bias -.015 / -.012; binning bound .043 / .049 instead of
    .026 / .029).  A value that is not a positive number (refused later by the template) gives 20.
    """
    if isinstance(epsilon, bool) or not isinstance(epsilon, int | float | np.integer | np.floating):
        return 20
    if not (epsilon > 0) or math.isinf(epsilon):
        return 20
    return int(min(20, max(4, round(24 * float(epsilon)))))


def metric_specs(
    parsed: list[ParsedMetric], single: bool, sample_params: Any, bounds: Any, from_counts: bool,
    sample_weight_bound: Any = None, score_bins: Any = 20,
) -> MetricPlan:
    """The specs of the parsed metrics, their count-based and real-valued names, the checked bounds, ``pos_label``,
    and ``sample_weight`` (the array as given, checked against its bound with the rows) with its declared bound."""
    keys = [key for key, _, _ in parsed]
    if len(set(keys)) != len(keys):
        raise ValueError("metrics: two metrics have the same output name; use a dict with distinct names.")
    extra = _sample_params(sample_params, keys, single)
    sample_weight, weight_bound = _sample_weight(parsed, extra, sample_weight_bound, from_counts)
    pos_labels = {repr(options.pos_label): options.pos_label for _, _, options in parsed if options.fixes_pos_label}
    pos_labels.update({repr(p["pos_label"]): p["pos_label"] for p in extra.values() if "pos_label" in p})
    if len(pos_labels) > 1:
        raise ValueError("pos_label differs between metrics; every count-based metric reads one table: give one pos_label.")
    pos_label = next(iter(pos_labels.values())) if pos_labels else None
    count_names = [name for _, name, _ in parsed if name not in _BOUNDED and name not in SCORE_METRICS]
    real_names = [name for _, name, _ in parsed if name in _BOUNDED]
    score_names = [name for _, name, _ in parsed if name in SCORE_METRICS]
    if score_names and count_names:
        raise ValueError(
            f"{score_names} read scores in y_pred, {count_names} read 0/1 predictions: assess them in two frames."
        )
    if score_names and from_counts:
        raise ValueError(f"from_counts cannot compute {score_names}: they need the scores of the rows.")
    if real_names and from_counts == "counts":
        raise ValueError(
            f"from_counts needs sums= for the real-valued metric(s) {real_names}: the column of counts holding, for "
            "every cell, the sum of the metric's per-row value (with bounds=), or build the frame from the rows."
        )
    if pos_label is not None and real_names:
        raise ValueError("pos_label applies to count-based metrics only; assess real-valued metrics in another frame.")
    checked_bounds = None
    if real_names or score_names:
        if bounds is None:
            raise ValueError(
                f"bounds is required for the metric(s) {real_names + score_names}: declare (lower, upper) that y_pred "
                "(and y_true for real-valued metrics) always lie in, from public knowledge (never read off the data)."
            )
        checked_bounds = check_bounds(bounds, "bounds")
    specs = []
    for key, name, options in parsed:
        if name in REAL_METRICS:
            specs.append(_core.real_spec(key, name, checked_bounds))
        elif name in MOMENT_METRICS:  # r2 in (-inf, 1]; 0/0 (SS_tot = 0) is undefined at a finite epsilon
            specs.append(MetricSpec(key, name, -math.inf, 1.0, zero_division=math.nan))
        elif name == "count_metric":
            metric = options.count_metric
            assert metric is not None
            cells = tuple(_core.CELL_NAMES.index(c) for c in metric.denominator)
            lo, hi = options.value_range
            specs.append(MetricSpec(key, metric.name, lo, hi, zero_division=metric.zero_division,
                                    function=metric.function, cells=cells))
        elif name == "count":
            specs.append(MetricSpec(key, name, 0.0, math.inf))
        elif name == "confusion_matrix":
            specs.append(MetricSpec(key, name, 0.0, math.inf, matrix=True))
        elif name in SCORE_METRICS:
            specs.append(MetricSpec(key, name, 0.0, 1.0, zero_division=math.nan, score_bins=score_bins))
        else:
            specs.append(MetricSpec(key, name, zero_division=options.zero_division, beta=options.beta))
    if score_names and (isinstance(score_bins, bool) or not isinstance(score_bins, int | np.integer)
                        or not 2 <= score_bins <= 10_000):
        raise ValueError("score_bins must be an int in [2, 10000]: the number of equal-width bins of bounds that the "
                         "scores are counted in (public, never read off the data).")
    return MetricPlan(specs=specs, counts=count_names, reals=real_names, bounds=checked_bounds, pos_label=pos_label,
                      sample_weight=sample_weight, weight_bound=weight_bound)


# ----------------------------------------------------------------------------- epsilon = inf: fairlearn's metrics
#: fairlearn's messages for ``sample_params``, word for word
SAMPLE_PARAMS_NOT_DICT = "Sample parameters must be a dictionary"
SAMPLE_PARAM_KEYS_NOT_IN_FUNC_DICT = "Keys in 'sample_params' do not match those in 'metric'"
#: the ``sample_params`` a released table can take (every other one needs the rows: ``epsilon = inf`` only)
_TABLE_PARAMS = {"pos_label", "sample_weight"}


def parse_exact_metrics(metrics: Any) -> tuple[list[ParsedMetric], bool]:
    """:func:`parse_metrics` at ``epsilon = inf``: a callable the table cannot compute is kept, to be called.

    Such a metric is ``(key, "callable", MetricOptions(function=f))``, its key the function's ``__name__``
    (fairlearn's naming); every parsed callable keeps itself in ``options.function`` (called when its labels are
    not 0/1).
    """

    def one(metric: Any, where: str) -> tuple[str, MetricOptions]:
        try:
            name, options = _metric_name(metric, where)
        except (TypeError, ValueError):
            if isinstance(metric, str | CountMetric) or not callable(metric):
                raise
            return "callable", MetricOptions(function=metric)
        if callable(metric) and not isinstance(metric, CountMetric):
            options = replace(options, function=metric)
        elif name in SCORE_METRICS or name in MOMENT_METRICS:  # by name at epsilon=inf: scikit-learn's own, exact
            import sklearn.metrics

            options = replace(options, function=getattr(sklearn.metrics, name))
        return name, options

    if isinstance(metrics, dict):  # an empty dict is fairlearn's frame without columns
        return _parse_metric_dict(metrics, one), False
    name, options = one(metrics, "metrics")
    if callable(metrics) and not isinstance(metrics, CountMetric):
        key = getattr(metrics, "__name__", None) or "metric"  # fairlearn's name of a bare callable's column
    elif options.count_metric is not None:
        key = options.count_metric.name
    else:
        key = name
    return [(key, name, options)], True


def exact_sample_params(sample_params: Any, keys: list[str], single: bool) -> dict[str, dict[str, Any]]:
    """fairlearn's ``sample_params`` per metric: flat for a single callable, ``{metric: {name: value}}`` for a dict."""
    if sample_params is None:
        return {}
    if not isinstance(sample_params, dict):
        raise ValueError(SAMPLE_PARAMS_NOT_DICT)
    if single:
        nested = set(sample_params) <= set(keys) and all(isinstance(v, dict) for v in sample_params.values())
        return {keys[0]: dict(sample_params[keys[0]])} if nested and sample_params else {keys[0]: dict(sample_params)}
    if not set(sample_params) <= set(keys):
        raise ValueError(SAMPLE_PARAM_KEYS_NOT_IN_FUNC_DICT)
    out = {}
    for key, params in sample_params.items():
        if not isinstance(params, dict):
            raise ValueError(SAMPLE_PARAMS_NOT_DICT)
        out[key] = dict(params)
    return out


def table_eligible(parsed: list[ParsedMetric], per_metric: dict[str, dict[str, Any]], bounds: Any,
                   sample_weight_bound: Any) -> list[str]:
    """The keys of the metrics the released table (and sums) can compute with their ``sample_params``.

    The others are computed at ``epsilon = inf`` only, by calling them on the rows: any other callable, any
    parameter beyond ``pos_label`` and ``sample_weight``, a real-valued metric without ``bounds``, weights that are
    not one array given to every count-based metric with ``sample_weight_bound``, differing ``pos_label``\\ s.
    """
    eligible = []
    for key, name, _ in parsed:
        params = per_metric.get(key, {})
        if name == "callable" or name in SCORE_METRICS or name in MOMENT_METRICS or set(params) - _TABLE_PARAMS:
            continue
        if name in REAL_METRICS and (bounds is None or params):
            continue
        if name == "count" and "sample_weight" in params:
            continue
        eligible.append(key)
    names = {key: name for key, name, _ in parsed}
    count_keys = [k for k in eligible if names[k] not in REAL_METRICS]
    weighted = [k for k in count_keys if "sample_weight" in per_metric.get(k, {})]
    if weighted:
        first = per_metric[weighted[0]]["sample_weight"]
        same = all(per_metric[k]["sample_weight"] is first for k in weighted) and set(weighted) == set(count_keys)
        if not same or sample_weight_bound is None:
            eligible = [k for k in eligible if k not in weighted]
    labels = {repr(per_metric.get(k, {})["pos_label"]) for k in eligible if "pos_label" in per_metric.get(k, {})}
    labels |= {repr(o.pos_label) for k, _, o in parsed if k in eligible and o.fixes_pos_label}
    if len(labels) > 1:
        eligible = [k for k in eligible if "pos_label" not in per_metric.get(k, {})]
    if labels and any(names[k] in REAL_METRICS for k in eligible):
        eligible = [k for k in eligible if names[k] not in REAL_METRICS]
    return eligible
