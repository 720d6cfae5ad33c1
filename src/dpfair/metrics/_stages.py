"""The typed stages that :class:`~dpfair.metrics.PrivateMetricFrame`'s steps hand each other (frozen dataclasses).

:class:`FrameOptions` is the frame's validated parameters (``params.options``), with the :class:`ExactPlan` of
``epsilon = inf``; :class:`Rows` is step 1's data (the rows, or the table of counts, with the :class:`Grouping` of
every row into the declared groups); :class:`ExactStatistics` is what step 3 computes from them (never released),
and :class:`NoisyRelease` what step 5 releases.  The release helpers (``_counts``, ``_releases``, ``_intervals``, ``_exact``)
read them by attribute, so a misspelt field is an ``AttributeError`` where it is written.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from dpfair.base import ValidatedOptions
from dpfair.metrics._core import MetricSpec
from dpfair.metrics._metric_specs import ParsedMetric

__all__ = ["ExactPlan", "ExactStatistics", "FrameOptions", "Grouping", "NoisyRelease", "Rows"]


@dataclass(frozen=True, eq=False)
class ExactPlan:
    """``epsilon = inf`` from rows: every metric as fairlearn takes it (see :mod:`dpfair.metrics._exact`).

    Parameters
    ----------
    parsed : list of (str, str, MetricOptions)
        Every metric as :func:`~dpfair.metrics._metric_specs.parse_exact_metrics` parsed it: ``(output name,
        metric name, its options)``, the callable ones included.
    per_metric : dict of str to dict
        Every metric's own ``sample_params`` (fairlearn's), by output name.
    single : bool
        A single metric was given (not a dict): results are shaped as fairlearn shapes a bare callable's.
    boot : (int, list of float) or None
        fairlearn's ``(n_boot, ci_quantiles)`` of the ``*_ci`` accessors, or None when not asked for.
    """

    parsed: list[ParsedMetric]
    per_metric: dict[str, dict[str, Any]]
    single: bool
    boot: tuple[int, list[float]] | None


@dataclass(frozen=True, eq=False)
class FrameOptions(ValidatedOptions):
    """The frame's validated parameters: the metric plan and the interval options.

    Parameters
    ----------
    single : bool
        A single metric was given (not a dict) and the table computes it.
    specs : list of MetricSpec
        The metrics the table (and the sums) compute, in output order.
    confidence : float
        The checked ``confidence_level``.
    counts : list of str
        The names of the count-based metrics (they need 0/1 labels).
    reals : list of str
        The names of the real-valued metrics (they need values in ``bounds``).
    bounds : (float, float) or None
        The checked ``bounds``.
    n_boot : int or None
        The number of draws behind the intervals.
    quantiles : list of float
        The quantiles of the ``*_ci`` accessors.
    pos_label : object
        fairlearn's ``pos_label`` shared by the count-based metrics (None: labels 0/1).
    sample_weight : object
        The ``sample_weight`` given to the count-based metrics, as given (None: unweighted).
    weight_bound : float or None
        The declared ``sample_weight_bound`` (None: an unweighted table).
    exact : ExactPlan or None, default None
        The plan of fairlearn's exact results at ``epsilon = inf`` from rows, else None.
    """

    single: bool
    specs: list[MetricSpec]
    confidence: float
    counts: list[str]
    reals: list[str]
    bounds: tuple[float, float] | None
    n_boot: int | None
    quantiles: list[float]
    pos_label: Any
    sample_weight: Any
    weight_bound: float | None
    exact: ExactPlan | None = None


@dataclass(frozen=True, eq=False)
class Grouping:
    """Every row's declared group (:func:`~dpfair.metrics._rows.resolve_rows`).

    Parameters
    ----------
    index : pandas.Index
        The declared groups (a MultiIndex for intersections, control levels first).
    group : numpy.ndarray of int64
        Every row's (or cell's) position in ``index``.
    n_groups : int
        The number of declared groups (every control level's groups included).
    n_control : int
        The number of control levels (1 without control features).
    control_index : pandas.Index or None
        The control levels, or None without control features.
    sensitive_names : list of str
        The names of the sensitive features.
    """

    index: pd.Index
    group: np.ndarray
    n_groups: int
    n_control: int
    control_index: pd.Index | None
    sensitive_names: list[str]


@dataclass(frozen=True, eq=False, kw_only=True)
class Rows:
    """Step 1's data: the rows (or the table of counts) of one frame, checked and mapped to the declared groups.

    Parameters
    ----------
    grouping : Grouping
        Every row's declared group.
    labels_true, labels_pred : numpy.ndarray of int64 or None, default None
        The 0/1 labels of the count-based metrics (``labels_true`` also for ``roc_auc_score``).
    values_true, values_pred : numpy.ndarray or None, default None
        The values, checked to lie in ``bounds``, of the real-valued metrics.
    scores : numpy.ndarray of int64 or None, default None
        ``roc_auc_score``: every row's bin of its score ``y_pred``.
    sample_weight : numpy.ndarray or None, default None
        Every row's weight, checked to lie in ``[0, sample_weight_bound]``.
    table_ok : bool, default True
        The table can compute the count-based metrics (False at ``epsilon = inf`` with labels other than 0/1:
        those metrics are called on the rows).
    raw_true, raw_pred : numpy.ndarray or None, default None
        ``epsilon = inf``: the rows as given (what a called metric receives).
    exact_params : dict of str to dict or None, default None
        ``epsilon = inf``: every metric's ``sample_params``, each a per-row array or a scalar, by output name.
    cell_counts : numpy.ndarray of int64 or None, default None
        :meth:`~dpfair.metrics.PrivateMetricFrame.from_counts`: the number of rows of every cell (None: rows).
    cell_sums : dict of str to numpy.ndarray or None, default None
        ``from_counts``: every real-valued metric's per-cell sums, by output name.
    """

    grouping: Grouping
    labels_true: np.ndarray | None = None
    labels_pred: np.ndarray | None = None
    values_true: np.ndarray | None = None
    values_pred: np.ndarray | None = None
    scores: np.ndarray | None = None
    sample_weight: np.ndarray | None = None
    table_ok: bool = True
    raw_true: np.ndarray | None = None
    raw_pred: np.ndarray | None = None
    exact_params: dict[str, dict[str, Any]] | None = None
    cell_counts: np.ndarray | None = None
    cell_sums: dict[str, np.ndarray] | None = None


@dataclass(frozen=True, eq=False)
class ExactStatistics:
    """Step 3: the exact statistics of one frame (never released) and the plan of their releases.

    Parameters
    ----------
    counts : numpy.ndarray
        The exact table: ``(n_groups, 4)`` cells ``TN, FP, FN, TP`` (weighted sums with ``sample_weight``), or
        ``(n_groups, 1)`` group sizes.
    sums : dict of str to numpy.ndarray
        Every real-valued metric's per-group sums (``(n_groups, 3)`` for ``r2_score``), by output name.
    histograms : dict of str to numpy.ndarray
        ``roc_auc_score``: every group's per-label histogram of the score bins, by output name.
    share : float
        The epsilon of each release.
    releases : list of dict
        The releases, as ``releases_`` states them.
    """

    counts: np.ndarray
    sums: dict[str, np.ndarray]
    histograms: dict[str, np.ndarray]
    share: float
    releases: list[dict[str, Any]]


@dataclass(frozen=True, eq=False)
class NoisyRelease:
    """Step 5: what one frame released (the only input of its post-processing).

    Parameters
    ----------
    table : numpy.ndarray
        The noisy table, shaped as :attr:`ExactStatistics.counts` (integers, possibly negative; floats with
        ``sample_weight``).
    sums : dict of str to numpy.ndarray
        Every real-valued metric's noisy per-group sums and every ``roc_auc_score``'s noisy histograms, by output
        name.
    share : float
        The epsilon of each release.
    releases : list of dict
        The releases, as ``releases_`` states them.
    """

    table: np.ndarray
    sums: dict[str, np.ndarray]
    share: float
    releases: list[dict[str, Any]]
