""":class:`PrivateMetricFrame`: fairlearn's ``MetricFrame`` with a privacy guarantee and confidence intervals.

The frame runs :mod:`dpfair.base`'s one release template; its steps live beside it: the ``metrics=`` argument in
``_metric_specs``, the rows and their declared groups in ``_rows``, :meth:`PrivateMetricFrame.from_counts`'s table of
counts in ``_counts``, the noisy releases in ``_releases``, the estimates and intervals in ``_intervals``, the
statistics in ``_core``, fairlearn's exact results at ``epsilon = inf`` in ``_exact``, and what a released frame
shows (fairlearn's accessors, ``flagged``, ``conf_int``) in ``_accessors``.  The steps hand each other the frozen
dataclasses of ``_stages`` (the options, the rows, the exact statistics, the noisy release), never dicts.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import numpy as np
import pandas as pd

from dpfair._estimator import privacy_spent, warn_non_private
from dpfair._validation import check_open_unit
from dpfair.base import PrivacyParameters, PrivateMechanismMixin, ValidatedData
from dpfair.metrics import _exact, _intervals
from dpfair.metrics._accessors import FrameAccessors
from dpfair.metrics._counts import validate_counts
from dpfair.metrics._metric_specs import (
    SUPPORTED_METRICS,
    CountMetric,
    default_score_bins,
    exact_sample_params,
    metric_specs,
    parse_exact_metrics,
    parse_metrics,
    table_eligible,
)
from dpfair.metrics._releases import draw_noise, exact_statistics, release_plan, split_text
from dpfair.metrics._rows import (
    OTHER,
    UNDECLARED,
    as_1d,
    as_rows,
    binary,
    bounded,
    resolve_rows,
    sample_weights,
    sensitive_columns,
)
from dpfair.metrics._stages import ExactPlan, ExactStatistics, FrameOptions, NoisyRelease, Rows
from dpfair.privacy.noise import NoiseSource
from dpfair.privacy.relations import ADD_REMOVE

__all__ = ["OTHER", "SUPPORTED_METRICS", "CountMetric", "PrivateMetricFrame"]

_NEIGHBOURING = (
    "add or remove one row (the number of rows is not public; replacing a row is a removal plus an addition, "
    "so it is protected at twice epsilon)"
)


def _is_infinite(epsilon: Any) -> bool:
    """``epsilon`` is ``inf`` (the template checks it in full; this only picks fairlearn's exact semantics)."""
    try:
        return math.isinf(float(epsilon)) and float(epsilon) > 0
    except (TypeError, ValueError):
        return False


def _exact_params(per_metric: dict[str, dict[str, Any]], n_rows: int) -> dict[str, dict[str, Any]]:
    """Every metric's ``sample_params``: a per-row array (its length checked, by name) or a scalar passed as is."""
    out: dict[str, dict[str, Any]] = {}
    for key, params in per_metric.items():
        out[key] = {}
        for name, value in params.items():
            if value is None:
                continue
            if pd.api.types.is_scalar(value):
                out[key][name] = value
                continue
            arr = value.to_numpy() if hasattr(value, "to_numpy") else np.asarray(value)
            if arr.ndim >= 1 and arr.shape[0] != n_rows:
                raise ValueError(f"sample_params[{key!r}][{name!r}] must have one entry per row, as y_true does.")
            out[key][name] = arr
    return out


def _exact_frame(options: FrameOptions, plan: ExactPlan, rows: Rows) -> _exact.ExactFrame:
    """fairlearn's results at ``epsilon = inf``: table metrics from the exact table, every other one called."""
    specs = {spec.key: spec for spec in options.specs}
    metrics = []
    for key, _, metric in plan.parsed:
        params = (rows.exact_params or {}).get(key, {})
        spec = specs.get(key)
        if spec is not None and spec.matrix:  # scikit-learn's own confusion matrix of each group (fairlearn's shape)
            from sklearn.metrics import confusion_matrix

            function = confusion_matrix if metric.function is None else metric.function
            metrics.append(_exact.ExactMetric(key, function=function, params=params))
        elif spec is not None and (spec.real or rows.table_ok):
            weights = params.get("sample_weight")
            metrics.append(_exact.ExactMetric(key, spec=spec, weights=None if weights is None else
                                              np.asarray(weights, dtype=float)))
        else:
            metrics.append(_exact.ExactMetric(key, function=metric.function, params=params))
    return _exact.ExactFrame(metrics, plan.single, rows, rows.raw_true, rows.raw_pred)


@dataclass(frozen=True, eq=False, kw_only=True)
class _FrameData(ValidatedData):
    """Step 1's data: the rows (or the table of counts) mapped to the declared groups.

    ``rows`` is what the release helpers read (the labels or values, and their
    :class:`~dpfair.metrics._stages.Grouping` from :func:`~dpfair.metrics._rows.resolve_rows`), built here or by
    :func:`~dpfair.metrics._counts.validate_counts`; the frame resolves its groups itself (and its control
    features), so the template's ``groups`` / ``group_index`` stay unset.
    """

    rows: Rows


class PrivateMetricFrame(PrivateMechanismMixin, FrameAccessors):
    """Per-group fairness metrics with a differential-privacy guarantee and confidence intervals.

    Shaped like fairlearn's ``MetricFrame``: switch by changing the import and adding ``epsilon``
    and ``groups``.  ``.overall``, ``.by_group``, ``.difference()``, ``.ratio()``, ``.group_min()``
    and ``.group_max()`` have fairlearn's signatures and meaning, and so have the interval accessors
    ``overall_ci``, ``by_group_ci``, ``group_min_ci()``, ``group_max_ci()``, ``difference_ci()`` and
    ``ratio_ci()`` (one object per entry of ``ci_quantiles``); ``.conf_int`` holds the
    ``confidence_level`` interval of each and ``privacy_spent_`` what was spent.  At ``epsilon=inf``
    every number equals fairlearn's, including NaN and scikit-learn's ``zero_division`` values (the
    intervals then cover the sampling error only).  At a finite ``epsilon`` a group value that is
    0/0 or rests on a noise-dominated denominator is NaN (with its interval, the metric's whole
    range): it is never replaced by another group's or the overall number.

    **What is released.** Every count-based metric (selection rate, true/false positive and negative
    rates, accuracy, precision, recall, F1, F-beta, balanced accuracy, fairlearn's ``count`` (the noisy
    number of rows, never flagged), any :class:`CountMetric`, the confusion matrix itself, and
    so the demographic-parity and equalized-odds differences and ratios that fairlearn derives from
    them) is computed from *one* noisy release of the contingency table ``(group, y_true, y_pred)``:
    four counts per declared group.  Adding or removing one row changes one count by one, so the
    table has L1 sensitivity 1 and receives **discrete-Laplace** (geometric) noise of scale
    ``1 / epsilon`` per cell, through :mod:`dpfair.privacy` (OpenDP's exact integer sampler unless
    ``noise_random_state`` is given).  Why this mechanism: for counts it is pure ``epsilon``-DP with
    no floating-point vulnerability, it keeps the counts integers, and, since one person moves one
    cell, it adds less noise than the (discrete) Gaussian at any ``delta`` worth using.  Any number
    of count-based metrics costs that one ``epsilon`` (every group is a disjoint part of the data:
    parallel composition).  A real-valued metric (``mean_squared_error``, ``mean_absolute_error``,
    ``mean_prediction``) is a per-group mean of a per-row value bounded through the declared
    ``bounds``; its per-group sums are released with Laplace noise (sensitivity: the width of the
    value's range) and divided by the table's group sizes.  ``epsilon`` is split equally between the
    table and each real-valued metric (sequential composition); ``releases_`` and ``privacy_spent_``
    state the split.  ``r2_score`` releases three bounded sums per group (squared residual, centred
    ``y_true`` and its square, in units of ``bounds``; L1 sensitivity 3, see :mod:`dpfair.metrics._r2`) at
    one real-valued metric's share.

    **Post-processing** (free): negative noisy counts become 0 for the point estimates, so rates stay
    in [0, 1]; a mean is clipped to its range.

    **Confidence intervals** cover the sampling error (the rows are a sample of a population) and
    the privacy noise (whose law is known).  For count-based metrics they are quantiles of draws of
    the population cell rates given the *raw* noisy counts (the exact discrete-Laplace likelihood of
    each count, nothing clipped, with a Gamma prior on each cell's rate; see
    :func:`dpfair.metrics._core.posterior_cells`): they stay calibrated for rates near 0 or 1 in small
    groups.  ``difference()`` and ``ratio()`` (``max |contrast|`` over pairs of groups, or over
    groups against the overall value; ratios on the log scale) get a simultaneous band over every
    contrast of the same draws and over the same groups, so they are consistent with each other and
    stay valid when groups are close.  For a real-valued metric the per-row values are resampled
    from the largest-variance law on their range that has the released mean (conservative, no extra
    release).  The draws use released values only: they cost no privacy.  ``random_state`` (as in
    fairlearn) seeds these draws only.

    **Noise-dominated groups.** A group's metric whose released denominator is below ``2 z`` noise
    standard deviations (``z`` the normal quantile of ``confidence_level``; at ``epsilon=inf``: an
    empty denominator) is flagged in :attr:`flagged`.  At a finite ``epsilon`` its value is NaN, its
    interval the metric's whole range, and the summaries (``group_min``, ``difference``, ...) are
    computed over the other groups, as fairlearn skips NaN; a disparity between groups needs two
    measured groups (else it is NaN).  A declared group absent from the data is handled the same way.

    Parameters
    ----------
    metrics : str, callable, CountMetric or dict of str to those
        One metric, or a dict from output name to metric.  A metric is one of
        :data:`SUPPORTED_METRICS` by name, the fairlearn / scikit-learn function of that name (or a
        ``functools.partial`` of it fixing ``zero_division``, ``pos_label`` or ``beta``), or a
        :class:`CountMetric`, or ``confusion_matrix`` (the released table of each group, ``[[TN, FP], [FN, TP]]``,
        free).  Anything else is refused with the list of supported metrics at a finite ``epsilon``; at
        ``epsilon=inf`` any callable fairlearn accepts is computed exactly, with fairlearn's semantics
        (:mod:`dpfair.metrics._exact`).
    y_true : array-like of shape (n_samples,)
        True labels: 0/1 (or any two labels with ``pos_label``) for count-based metrics, numbers in
        ``bounds`` for real-valued ones.
    y_pred : array-like of shape (n_samples,)
        Predictions, with the same rules as ``y_true``.
    sensitive_features : array-like, pandas Series, DataFrame or dict
        The group of every row, as fairlearn accepts it: one feature (list, array, Series), or
        several (a DataFrame or dict with one column per feature, or a 2-d array), whose
        combinations are the (intersectional) groups.
    epsilon : float
        Privacy parameter of the whole frame (``> 0``).  ``inf`` computes the exact metrics (no
        privacy, with a :class:`~dpfair.privacy.PrivacyLeakWarning`).
    delta : float, default 0.0
        Accepted for the ``(epsilon, delta)`` signature shared by dpfair; every release here is pure
        ``epsilon``-DP, so ``delta`` is not used and ``privacy_spent_["delta"]`` is 0.
    groups : list, dict or None
        The declared groups (public knowledge, never read off the data; required with finite
        ``epsilon``).  One feature: the list of its labels.  Several features: a dict from feature
        name to its labels (every combination is a group), or a list of label tuples.  With
        ``control_features``: a dict with an entry for every sensitive and control feature.
    bounds : (float, float), optional
        Public range of ``y_true`` and ``y_pred`` for the real-valued metrics (required by them; a
        value outside raises).  Unused by count-based metrics.
    confidence_level : float, default 0.95
        Nominal coverage of the intervals of :attr:`conf_int` (and of the ``*_ci`` accessors when
        ``ci_quantiles`` is not given), in (0, 1).
    budget : PrivacyBudget, optional
        Charged ``(epsilon, 0)`` once, after every argument is validated and before any noise.
    random_state : None, int, numpy RandomState or Generator
        As in fairlearn: seeds the resampling of the confidence intervals only.  It **never**
        seeds the privacy noise, so code moved over from fairlearn keeps secure noise.
    noise_random_state : None, int, numpy Generator or NoiseSource
        ``None`` (default): secure noise (OpenDP).  A seed gives reproducible, *not hardened* noise,
        for experiments and tests only: it raises a :class:`~dpfair.privacy.SeededNoiseWarning` and
        ``privacy_spent_["noise"]`` says ``"seeded"``.
    n_boot : int, optional
        Number of draws behind the intervals (default 2000, at least 100), fairlearn's name.  At
        ``epsilon=inf``: fairlearn's meaning, the number of resamples of the rows behind the ``*_ci``
        accessors (any positive int; give it with ``ci_quantiles``, or neither).
    ci_quantiles : list of float, optional
        The quantiles the ``*_ci`` accessors return, fairlearn's name (default: the two ends of the
        ``confidence_level`` interval).  At ``epsilon=inf``: fairlearn's meaning (without it the ``*_ci``
        accessors raise and :attr:`ci_quantiles` is ``None``).
    sample_params : dict, optional
        The per-metric parameters of fairlearn: ``pos_label`` (the label counted as 1; every other label
        is 0; all metrics must share it: one table) and ``sample_weight`` (one weight per row, given
        to every count-based metric as the same array object, with ``sample_weight_bound``): the
        table then holds weighted sums, released with Laplace noise ``sample_weight_bound /
        epsilon`` per cell (:func:`dpfair.metrics._releases.weighted_table_sensitivity` has the
        proof), and its intervals use the Laplace likelihood of the released sums
        (:func:`dpfair.metrics._core.posterior_sums`).  At ``epsilon=inf`` the values equal
        fairlearn's with the same ``sample_params``.
    control_features : array-like, Series, DataFrame or dict, optional
        The control features of fairlearn: ``by_group`` is indexed by (control, sensitive) levels and
        every summary is computed within each control level.  They are released like the sensitive
        features (declare their levels in ``groups``).
    undeclared : {"raise", "other"}, default "raise"
        What a row whose label was not declared does: ``"raise"`` refuses (the refusal tells the caller
        that such a row exists); ``"other"`` counts it in an extra group ``"(other)"``, always reported
        (also when empty), so that nothing about such rows is revealed beyond the noisy release.
    sample_weight_bound : float, optional
        Required with ``sample_weight``: the declared largest weight of a row, ``w_max`` (public
        knowledge, never read off the data).  A weight outside ``[0, w_max]`` is refused before any
        charge.  One row moves at most ``w_max`` of weight into one cell, so the noise scales with it.
    score_bins : int, optional
        For ``roc_auc_score`` at a finite ``epsilon``: the number of equal-width bins of ``bounds`` (the declared
        range of the scores in ``y_pred``) in which every group's scores are counted, per true label.  By default
        it is chosen from ``epsilon`` alone (public): ``round(24 * epsilon)`` between 4 and 20 (20 from
        ``epsilon`` 0.8, 12 at 0.5), so that the noise of the cells does not outweigh what the bins resolve.  That
        histogram is released with discrete-Laplace noise (L1 sensitivity 1, its own share of ``epsilon``) and
        the AUC is computed from it, ties within a bin counted 1/2: the binning moves the AUC by at most
        ``sum_b P_b N_b / (2 P N)`` (pairs of a positive and a negative in the same bin).  ``y_true`` must be 0/1
        (or ``pos_label``).  At ``epsilon=inf`` the AUC is scikit-learn's, on the exact scores.

    Attributes
    ----------
    privacy_spent_ : dict
        ``{"epsilon", "delta", "protects", "neighbouring", "relation", "noise"}`` of the whole frame.
    releases_ : list of dict
        Each noisy release: what, mechanism, its share of ``epsilon`` and its noise scale.
    noisy_table_ : pandas.DataFrame
        The released table as drawn (integers, possibly negative): one row per group, columns
        ``TN, FP, FN, TP`` (count-based metrics) or ``count``.
    group_sizes_ : pandas.Series
        The noisy number of rows of every group (the released table's row sums, negative ones set to 0).

    Raises
    ------
    TypeError, ValueError
        For invalid arguments, naming the argument and the fix; nothing is charged.
    PrivacyBudgetExceededError
        If ``budget`` refuses the charge (nothing is released).

    See Also
    --------
    PrivateMetricFrame.from_counts : The same release from a table of counts computed elsewhere (SQL, Spark).
    dpfair.classification.DPEqualizedOddsPostProcessor : Mitigate the disparities measured here.

    Notes
    -----
    Protected: every row's ``(sensitive features, control features, y_true, y_pred)``, under adding or
    removing one row.  Differences from fairlearn: only the metrics listed (and functions of the
    four counts) are supported; labels must be 0/1 unless ``pos_label`` is given; ``sample_weight``
    needs a declared ``sample_weight_bound`` and applies to all count-based metrics or none; at a
    finite ``epsilon`` a group value that cannot be measured is NaN (fairlearn would
    show scikit-learn's ``zero_division`` value computed from the exact counts).

    Examples
    --------
    >>> import numpy as np
    >>> from dpfair.metrics import PrivateMetricFrame
    >>> rng = np.random.default_rng(0)
    >>> group = rng.choice(["a", "b"], 5000)
    >>> y_true = rng.integers(0, 2, 5000)
    >>> y_pred = (rng.uniform(size=5000) < np.where(group == "a", 0.6, 0.4)).astype(int)
    >>> mf = PrivateMetricFrame(metrics={"sr": "selection_rate", "tpr": "true_positive_rate"},
    ...                         y_true=y_true, y_pred=y_pred, sensitive_features=group,
    ...                         epsilon=1.0, groups=["a", "b"])
    >>> round(float(mf.difference()["sr"]), 1)
    0.2
    >>> lower, upper = mf.conf_int["difference"]["lower"]["sr"], mf.conf_int["difference"]["upper"]["sr"]
    >>> bool(lower < mf.difference()["sr"] < upper)
    True
    """

    _privacy_parameters: ClassVar[dict[str, str]] = {
        "epsilon": "epsilon", "delta": "delta", "budget": "budget", "noise_random_state": "random_state",
    }
    _privacy_neighbouring: ClassVar[str] = _NEIGHBOURING
    _privacy_relation: ClassVar[str] = ADD_REMOVE

    def __init__(
        self,
        *,
        metrics: str | Callable[..., Any] | CountMetric | dict[str, Any],
        y_true: Any,
        y_pred: Any,
        sensitive_features: Any,
        epsilon: float,
        delta: float = 0.0,
        groups: Any = None,
        bounds: tuple[float, float] | None = None,
        confidence_level: float = 0.95,
        budget: Any = None,
        random_state: Any = None,
        noise_random_state: Any = None,
        n_boot: int | None = None,
        ci_quantiles: list[float] | None = None,
        sample_params: dict[str, Any] | None = None,
        control_features: Any = None,
        undeclared: Literal["raise", "other"] = "raise",
        sample_weight_bound: float | None = None,
        score_bins: int | None = None,
    ) -> None:
        self._store(metrics=metrics, epsilon=epsilon, delta=delta, groups=groups, bounds=bounds,
                    confidence_level=confidence_level, budget=budget, random_state=random_state,
                    noise_random_state=noise_random_state, n_boot=n_boot, ci_quantiles=ci_quantiles,
                    sample_params=sample_params, undeclared=undeclared, sample_weight_bound=sample_weight_bound,
                    score_bins=score_bins)
        # one release (dpfair.base): every argument is checked before the single charge; results are set last
        self._set_results(self._release(y_true, y_pred, sensitive_features, control_features=control_features))

    def _store(self, *, metrics: Any, **arguments: Any) -> None:
        for name, value in arguments.items():
            setattr(self, name, value)
        self._metrics = metrics

    def _set_results(self, results: dict[str, Any]) -> None:
        for name, value in results.items():
            setattr(self, name, value)

    @classmethod
    def from_counts(
        cls,
        counts: Any,
        *,
        metrics: str | Callable[..., Any] | CountMetric | dict[str, Any],
        sensitive_features: str | list[str],
        epsilon: float,
        y_true: str = "y_true",
        y_pred: str = "y_pred",
        count: str = "count",
        control_features: str | list[str] | None = None,
        groups: Any = None,
        confidence_level: float = 0.95,
        budget: Any = None,
        random_state: Any = None,
        noise_random_state: Any = None,
        n_boot: int | None = None,
        ci_quantiles: list[float] | None = None,
        sample_params: dict[str, Any] | None = None,
        undeclared: Literal["raise", "other"] = "raise",
        sums: dict[str, str] | None = None,
        bounds: tuple[float, float] | None = None,
    ) -> PrivateMetricFrame:
        """The same private frame from a table of counts computed elsewhere (SQL, DuckDB, Spark).

        ``counts`` has one row per combination of (sensitive features, y_true, y_pred) and its number
        of rows, e.g. the result of ``SELECT race, sex, y_true, y_pred, count(*) AS count FROM t GROUP
        BY ALL`` (a pandas DataFrame; a pyspark DataFrame is collected with ``toPandas()``: it has one
        row per cell).  The counts are exact (computed by the engine), then released exactly as the
        constructor releases them: the guarantee holds when every person is **one row** of the
        underlying table.  A real-valued metric needs ``sums`` (and ``bounds``): for every cell, the sum over its
        rows of the metric's per-row value, computed by the engine from values checked to lie in ``bounds``
        (``dpfair assess`` computes them in DuckDB: nothing but the small table reaches Python).

        Parameters
        ----------
        counts : pandas.DataFrame
            The table of counts (repeated combinations are added).
        metrics : str, callable, CountMetric or dict
            As for the constructor (count-based only).
        sensitive_features : str or list of str
            The column(s) of ``counts`` holding the sensitive features.
        epsilon : float
            As for the constructor.
        y_true, y_pred, count : str
            The columns holding the true label, the prediction and the number of rows.
        control_features : str or list of str, optional
            The column(s) holding control features.
        groups : list, optional
            As for the constructor.
        confidence_level : float, default 0.95
            As for the constructor.
        budget : PrivacyBudget, optional
            As for the constructor.
        random_state : None, int, numpy.random.RandomState or numpy.random.Generator
            As for the constructor (the interval draws only).
        noise_random_state : None, int, numpy.random.Generator or NoiseSource
            As for the constructor (seeded noise: reproducible, not hardened).
        n_boot : int, optional
            As for the constructor.
        ci_quantiles : list of float, optional
            As for the constructor.
        sample_params : dict, optional
            As for the constructor (``pos_label`` only: counts carry no weights).
        undeclared : {"raise", "other"}, default "raise"
            As for the constructor.
        sums : dict of str to str, optional
            For every real-valued metric (by its output name), the column of ``counts`` holding each cell's sum of
            the per-row value: ``(y_true - y_pred)**2`` (``mean_squared_error``), ``|y_true - y_pred|``
            (``mean_absolute_error``) or ``y_pred - bounds[0]`` (``mean_prediction``).  A sum outside
            ``[0, width x count]`` is refused.  A table with only real-valued metrics needs no label columns.
        bounds : (float, float), optional
            As for the constructor (required with ``sums``).

        Returns
        -------
        PrivateMetricFrame
            The frame, as if built from the rows.
        """
        frame = cls.__new__(cls)
        frame._from_counts = "sums" if sums else "counts"
        frame._store(metrics=metrics, epsilon=epsilon, delta=0.0, groups=groups, bounds=bounds,
                     confidence_level=confidence_level, budget=budget, random_state=random_state,
                     noise_random_state=noise_random_state, n_boot=n_boot, ci_quantiles=ci_quantiles,
                     sample_params=sample_params, undeclared=undeclared, sample_weight_bound=None, score_bins=20)
        frame._set_results(frame._release(None, None, None, counts=(counts, sensitive_features, control_features,
                                                                      y_true, y_pred, count, sums)))
        return frame

    # ------------------------------------------------------------------ the steps of dpfair.base's template
    def _charge_label(self, params: PrivacyParameters) -> str:
        """The ledger's label of the one charge: how epsilon is split."""
        options = params.options
        plan = release_plan(options.specs, options.counts, params.epsilon, options.weight_bound)
        return f"PrivateMetricFrame ({split_text(plan[1])})"

    def _validate_params(self) -> FrameOptions:
        confidence = check_open_unit(self.confidence_level, "confidence_level")
        quantiles_argument = getattr(self, "_ci_quantiles_argument", None)
        if self.undeclared not in UNDECLARED:
            raise ValueError(f"undeclared must be one of {list(UNDECLARED)}, got {self.undeclared!r}.")
        from_counts = getattr(self, "_from_counts", False)
        exact = None
        if _is_infinite(self.epsilon) and not from_counts:
            # epsilon = inf: nothing is private, so every metric fairlearn accepts is computed exactly (_exact);
            # those the table can also compute keep its extras (conf_int, flagged, noisy_table_)
            parsed_all, single = parse_exact_metrics(self._metrics)
            keys = [key for key, _, _ in parsed_all]
            if len(set(keys)) != len(keys):
                raise ValueError("metrics: two metrics have the same output name; use a dict with distinct names.")
            per_metric = exact_sample_params(self.sample_params, keys, single)
            eligible = table_eligible(parsed_all, per_metric, self.bounds, self.sample_weight_bound)
            called = [key for key, _, options in parsed_all if key not in eligible and options.function is None]
            if called:  # a metric given by name that the table cannot compute: the table's own refusal
                metric_specs(parsed_all, single, self.sample_params, self.bounds, False, self.sample_weight_bound)
                raise ValueError(f"metrics {called}: give them as functions to compute them on the rows.")
            parsed = [entry for entry in parsed_all if entry[0] in eligible]
            table_params = {key: per_metric[key] for key in eligible if per_metric.get(key)}
            weighted = any("sample_weight" in params for params in table_params.values())
            boot = _intervals.fairlearn_bootstrap(self.random_state, self.n_boot, quantiles_argument)
            n_boot, quantiles = _intervals.interval_options(self.random_state, None, None, confidence)
            exact = ExactPlan(parsed=parsed_all, per_metric=per_metric, single=single, boot=boot)
            plan = metric_specs(parsed, single and bool(parsed), table_params or None, self.bounds, False,
                                self.sample_weight_bound if weighted else None, self.score_bins)
            single = single and bool(parsed)
        else:
            parsed, single = parse_metrics(self._metrics)
            n_boot, quantiles = _intervals.interval_options(self.random_state, self.n_boot, quantiles_argument,
                                                            confidence)
            bins = self.score_bins if self.score_bins is not None else default_score_bins(self.epsilon)
            plan = metric_specs(parsed, single, self.sample_params, self.bounds, from_counts, self.sample_weight_bound,
                                bins)
        return FrameOptions(single=single, specs=plan.specs, confidence=confidence, counts=plan.counts,
                            reals=plan.reals, bounds=plan.bounds, n_boot=n_boot, quantiles=quantiles,
                            pos_label=plan.pos_label, sample_weight=plan.sample_weight,
                            weight_bound=plan.weight_bound, exact=exact)

    def _validate_data(
        self, params: PrivacyParameters, y_true: Any, y_pred: Any, sensitive_features: Any, control_features: Any = None,
        counts: Any = None,
    ) -> _FrameData:
        options = params.options
        if counts is not None:
            return _FrameData(rows=validate_counts(options, self.groups, self.undeclared, params.epsilon, *counts))
        count_names, real_names, bounds = options.counts, options.reals, options.bounds
        # epsilon = inf with every metric called on the rows: fairlearn's 2-d y (multi-output, per-class scores)
        rows_only = options.exact is not None and not (count_names or real_names or options.specs)
        read = as_rows if rows_only else as_1d
        y_t = read(y_true, "y_true")
        n_rows = y_t.shape[0]
        y_p = read(y_pred, "y_pred", n_rows)
        columns = sensitive_columns(sensitive_features, n_rows)
        controls = [] if control_features is None else sensitive_columns(control_features, n_rows, "control_features")
        labels_true = labels_pred = values_true = values_pred = scores = weights = None
        table_ok = True
        if count_names:
            try:
                labels_true = binary(y_t, "y_true", count_names, options.pos_label)
                labels_pred = binary(y_p, "y_pred", count_names, options.pos_label)
            except (TypeError, ValueError):
                if options.exact is None:
                    raise
                # epsilon = inf, labels other than 0/1 (multiclass, ...): every such metric was given as a
                # function (else the parameters were refused), so it is called on the rows as fairlearn calls it
                table_ok = False
                labels_true = labels_pred = np.zeros(n_rows, dtype=np.int64)
        if real_names:
            values_true = bounded(y_t, "y_true", bounds)
            values_pred = bounded(y_p, "y_pred", bounds)
        histograms = [spec for spec in options.specs if spec.histogram]
        if histograms:  # y_true 0/1 labels, y_pred scores in bounds, counted in score_bins equal-width bins of bounds
            names = [spec.name for spec in histograms]
            labels_true = binary(y_t, "y_true", names, options.pos_label)
            in_bounds, (lo, hi), bins = bounded(y_p, "y_pred", bounds), bounds, histograms[0].score_bins
            scores = np.clip(np.floor((in_bounds - lo) / (hi - lo) * bins), 0, bins - 1).astype(np.int64)
        if options.weight_bound is not None:
            weights = sample_weights(options.sample_weight, n_rows, options.weight_bound)
        exact = options.exact
        rows = Rows(
            grouping=resolve_rows(self.groups, self.undeclared, columns, controls, params.epsilon),
            labels_true=labels_true, labels_pred=labels_pred, values_true=values_true, values_pred=values_pred,
            scores=scores, sample_weight=weights, table_ok=table_ok,
            raw_true=None if exact is None else y_t, raw_pred=None if exact is None else y_p,
            exact_params=None if exact is None else _exact_params(exact.per_metric, n_rows),
        )
        return _FrameData(n_rows=n_rows, rows=rows)

    def _compute_statistics(self, params: PrivacyParameters, data: _FrameData) -> ExactStatistics:
        """The exact table and per-group sums (not released), and the plan of the releases (refused if it overflows)."""
        return exact_statistics(params.options, params.epsilon, self.bounds, data.rows)

    def _privacy_cost(self, params: PrivacyParameters) -> tuple[float, float]:
        return params.epsilon, 0.0  # pure epsilon-DP: delta is accepted for fairlearn-like signatures, never spent

    def _warn_non_private(self, params: PrivacyParameters) -> None:
        warn_non_private(params.epsilon, "PrivateMetricFrame's table and metrics")

    def _draw_noise(self, params: PrivacyParameters, statistics: ExactStatistics, noise: NoiseSource) -> NoisyRelease:
        """Release the table and the sums, each at ``share`` of epsilon (nothing else is drawn from ``noise``)."""
        return draw_noise(params.options.specs, statistics, noise, params.options.weight_bound)

    def _solve(self, params: PrivacyParameters, noisy: NoisyRelease, data: _FrameData) -> dict[str, Any]:
        """Post-processing (free): estimates, flags and intervals from the noisy table and sums.

        The draws behind the intervals are seeded by ``random_state`` (fairlearn's meaning), never by the noise.
        """
        options = params.options
        exact = None
        if options.exact is not None:  # fairlearn's results first: a RandomState then seeds them as fairlearn's
            exact = _exact_frame(options, options.exact, data.rows)
            if options.exact.boot is not None:
                exact.bootstrap(*options.exact.boot, self.random_state)
        results = _intervals.solve(options, noisy, data.rows, self.random_state)
        results["_exact"] = exact
        results["_table_ok"] = data.rows.table_ok
        if not results["_table_ok"]:
            sizes = results["group_sizes_"]
            results["noisy_table_"] = pd.DataFrame({"count": sizes.to_numpy()}, index=sizes.index.copy())
        return results

    def _privacy_spent(self, params: PrivacyParameters, results: dict[str, Any]) -> dict[str, Any]:
        if math.isinf(params.epsilon):
            protects = "nothing: epsilon=inf computes the exact metrics"
        else:
            protects = f"every row's sensitive features, y_true and y_pred; {split_text(results['releases_'])}"
        return privacy_spent(params.epsilon, 0.0, protects=protects, neighbouring=self._privacy_neighbouring,
                             relation=self._privacy_relation)

    # fairlearn's interface lives in _accessors; named here so that the API page (``:members:``) documents it
    overall = FrameAccessors.overall
    by_group = FrameAccessors.by_group
    flagged = FrameAccessors.flagged
    sensitive_levels = FrameAccessors.sensitive_levels
    control_levels = FrameAccessors.control_levels
    ci_quantiles = FrameAccessors.ci_quantiles
    group_min = FrameAccessors.group_min
    group_max = FrameAccessors.group_max
    difference = FrameAccessors.difference
    ratio = FrameAccessors.ratio
    overall_ci = FrameAccessors.overall_ci
    by_group_ci = FrameAccessors.by_group_ci
    group_min_ci = FrameAccessors.group_min_ci
    group_max_ci = FrameAccessors.group_max_ci
    difference_ci = FrameAccessors.difference_ci
    ratio_ci = FrameAccessors.ratio_ci
    conf_int = FrameAccessors.conf_int

    def __repr__(self) -> str:
        metrics = ", ".join(f"{s.key}={s.name}" if s.key != s.name else s.name for s in self._specs)
        return (
            f"PrivateMetricFrame(metrics=[{metrics}], groups={len(self._index)}, epsilon={self.privacy_spent_['epsilon']:g}, "
            f"confidence_level={self.confidence_level})"
        )
