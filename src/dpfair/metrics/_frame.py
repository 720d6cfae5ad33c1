""":class:`PrivateMetricFrame`: fairlearn's ``MetricFrame`` with a privacy guarantee and confidence intervals."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, ClassVar, Literal

import numpy as np
import pandas as pd

from dpfair._estimator import predict_seed, privacy_spent, resolve_groups, warn_non_private
from dpfair._validation import as_finite_array, check_bounds, check_open_unit, one_value_per_row
from dpfair.base import PrivacyParameters, PrivateMechanismMixin
from dpfair.metrics import _core
from dpfair.metrics._core import COUNT_METRICS, REAL_METRICS, SUPPORTED, MetricSpec
from dpfair.privacy.noise import NoiseSource

__all__ = ["SUPPORTED_METRICS", "PrivateMetricFrame"]

#: The metrics :class:`PrivateMetricFrame` computes, by name (the fairlearn or scikit-learn function of that
#: name is accepted too).  The first nine are count-based, the last three real-valued (they need ``bounds``).
SUPPORTED_METRICS: tuple[str, ...] = SUPPORTED

_METHODS = ("between_groups", "to_overall")
_ERRORS = ("raise", "coerce")
_NEIGHBOURING = (
    "add or remove one row (the number of rows is not public; replacing a row is a removal plus an addition, "
    "so it is protected at twice epsilon)"
)
_SUPPORTED_TEXT = ", ".join(SUPPORTED)


# ----------------------------------------------------------------------------- argument parsing
def _metric_name(metric: Any, where: str) -> str:
    if isinstance(metric, str):
        if metric in SUPPORTED:
            return metric
        raise ValueError(f"{where}: {metric!r} is not a supported metric; use one of {_SUPPORTED_TEXT}.")
    if callable(metric):
        name = getattr(metric, "__name__", None)
        module = getattr(metric, "__module__", None) or ""
        if name in SUPPORTED and module.startswith(("fairlearn.metrics", "sklearn.metrics")):
            return name
        label = name or type(metric).__name__
        raise ValueError(
            f"{where}: the function {label!r} is not supported: only metrics computable from a private "
            f"contingency table or from bounded per-group sums are; use one of {_SUPPORTED_TEXT} "
            "(by name, or the fairlearn / scikit-learn function itself, without partial arguments)."
        )
    raise TypeError(
        f"{where} must be a metric name, a supported fairlearn / scikit-learn metric function, or a dict of them, "
        f"got {type(metric).__name__}; supported: {_SUPPORTED_TEXT}."
    )


def _parse_metrics(metrics: Any) -> tuple[list[tuple[str, str]], bool]:
    """``[(key, supported name)]`` and whether a single metric (not a dict) was given."""
    if isinstance(metrics, dict):
        if not metrics:
            raise ValueError(f"metrics is an empty dict; give at least one of {_SUPPORTED_TEXT}.")
        out = []
        for key, value in metrics.items():
            if not isinstance(key, str):
                raise TypeError(f"metrics: dict keys are the output names and must be str, got {type(key).__name__}.")
            out.append((key, _metric_name(value, f"metrics[{key!r}]")))
        return out, False
    name = _metric_name(metrics, "metrics")
    return [(name, name)], True


def _as_1d(values: Any, name: str, n_rows: int | None = None) -> np.ndarray:
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


def _binary(arr: np.ndarray, name: str, count_metrics: list[str]) -> np.ndarray:
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


def _bounded(arr: np.ndarray, name: str, bounds: tuple[float, float]) -> np.ndarray:
    out = as_finite_array(arr, name, ndim=1, allow_bool=True)
    lo, hi = bounds
    if (out < lo).any() or (out > hi).any():
        raise ValueError(
            f"{name} holds values outside the declared bounds=({lo:g}, {hi:g}); declare bounds that contain every "
            "possible value (public knowledge, never read off the data), or clip the values before assessing."
        )
    return out


def _sensitive_columns(sensitive_features: Any, n_rows: int) -> list[tuple[str, np.ndarray]]:
    """One ``(name, labels)`` per sensitive feature, named as fairlearn names them."""
    sf = sensitive_features
    if sf is None:
        raise ValueError(
            "sensitive_features is required: pass the group of every row (an array, list or pandas Series), or a "
            "DataFrame / dict with one column per feature for intersectional groups."
        )
    if isinstance(sf, dict):
        try:
            sf = pd.DataFrame(sf)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"sensitive_features: a dict must map feature names to equally long columns ({exc}).") from None
    columns: list[tuple[str, Any]] = []
    if isinstance(sf, pd.Series):
        columns.append((sf.name if isinstance(sf.name, str) else "sensitive_feature_0", sf.to_numpy()))
    elif isinstance(sf, pd.DataFrame):
        if sf.shape[1] == 0:
            raise ValueError("sensitive_features is a DataFrame without columns; pass at least one feature.")
        for name in sf.columns:
            if not isinstance(name, str):
                raise ValueError(f"sensitive_features: DataFrame column names must be str, got {type(name).__name__}.")
            columns.append((name, sf[name].to_numpy()))
    elif isinstance(sf, list | tuple):
        if not all(pd.api.types.is_scalar(v) for v in sf):
            raise ValueError(
                "sensitive_features: a list must hold one label per row; for several features pass a DataFrame or a "
                "dict with one column per feature (as fairlearn does)."
            )
        columns.append(("sensitive_feature_0", np.asarray(sf, dtype=object)))
    elif isinstance(sf, str | bytes) or np.isscalar(sf):
        raise ValueError(f"sensitive_features must hold one label per row, got the scalar {type(sf).__name__}.")
    else:
        arr = np.asarray(sf)
        if arr.ndim == 2 and arr.shape[1] == 1:
            arr = arr[:, 0]
        if arr.ndim == 1:
            columns.append(("sensitive_feature_0", arr))
        elif arr.ndim == 2:
            columns += [(f"sensitive_feature_{i}", arr[:, i]) for i in range(arr.shape[1])]
        else:
            raise ValueError(f"sensitive_features must be 1- or 2-dimensional, got shape {arr.shape}.")
    if len({name for name, _ in columns}) != len(columns):
        raise ValueError("sensitive_features: two features have the same name; give each column its own name.")
    for name, values in columns:
        if len(values) != n_rows:
            raise ValueError(
                f"y_true, y_pred and sensitive_features must have one entry per row; sensitive feature {name!r} and "
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
    groups: Any, columns: list[tuple[str, np.ndarray]], epsilon: float
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
    declared = list(index)
    position = {cell: i for i, cell in enumerate(declared)}
    lookup = np.empty(len(combo_uniques), dtype=np.int64)
    for k, value in enumerate(combo_uniques.tolist()):
        labels = []
        for _, uniques in reversed(factorized):
            value, code = divmod(value, len(uniques))
            labels.append(uniques[code])
        cell = tuple(reversed(labels))
        if cell not in position:
            raise ValueError(
                f"sensitive_features hold a combination of labels outside the declared groups ({len(declared)} declared "
                f"for {names}); declare every possible group in groups= (public knowledge) or drop those rows."
            )
        lookup[k] = position[cell]
    return declared, index, lookup[combo_codes]


def _resolve_single(groups: Any, name: str, values: np.ndarray, epsilon: float) -> tuple[list[Any], pd.Index, np.ndarray]:
    codes, uniques = _factorize(values, name)
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


# ----------------------------------------------------------------------------- the releases
def _release_plan(specs: list[MetricSpec], count_names: list[str], epsilon: float) -> tuple[float, list[dict[str, Any]]]:
    """``(share, releases)``: epsilon split equally between the table and each real metric's sums (``releases_``)."""
    share = epsilon / (1 + sum(spec.real for spec in specs))
    table_kind = "contingency table (group x y_true x y_pred)" if count_names else "group sizes"
    releases = [
        {"release": table_kind, "mechanism": "discrete Laplace (geometric), L1 sensitivity 1", "epsilon": share,
         "scale": _core.table_scale(share)}
    ]
    for spec in specs:
        if spec.real:
            releases.append({
                "release": f"per-group sums for {spec.key} ({spec.name}, per-row value in [0, {spec.width:g}])",
                "mechanism": f"Laplace, L1 sensitivity {spec.width:g}",
                "epsilon": share,
                "scale": 0.0 if math.isinf(share) else spec.width / share,
            })
    return share, releases


def _split_text(releases: list[dict[str, Any]]) -> str:
    """How epsilon is split between the releases, in words (the ledger's label and ``privacy_spent_``)."""
    split = "; ".join(f"{r['release']}: epsilon {r['epsilon']:g}" for r in releases)
    return f"epsilon split equally: {split}" if len(releases) > 1 else f"one release, {split}"


# ----------------------------------------------------------------------------- the frame
class PrivateMetricFrame(PrivateMechanismMixin):
    """Per-group fairness metrics with a differential-privacy guarantee and confidence intervals.

    Shaped like fairlearn's ``MetricFrame``: switch by changing the import and adding ``epsilon``
    and ``groups``.  ``.overall``, ``.by_group``, ``.difference()``, ``.ratio()``, ``.group_min()``
    and ``.group_max()`` have fairlearn's signatures and meaning; ``.conf_int`` holds an interval
    for each of them and ``privacy_spent_`` what was spent.  At ``epsilon=inf`` every number equals
    fairlearn's (the intervals then cover the sampling error only).

    **What is released.** Every count-based metric (selection rate, true/false positive and negative
    rates, accuracy, precision, recall, balanced accuracy, and so the demographic-parity and
    equalized-odds differences and ratios that fairlearn derives from them) is computed from *one*
    noisy release of the contingency table ``(group, y_true, y_pred)``: four counts per declared
    group.  Adding or removing one row changes one count by one, so the table has L1 sensitivity 1
    and receives **discrete-Laplace** (geometric) noise of scale ``1 / epsilon`` per cell, through
    :mod:`dpfair.privacy` (OpenDP's exact integer sampler unless ``random_state`` is given).  Why
    this mechanism: for counts it is pure ``epsilon``-DP with no floating-point vulnerability, it
    keeps the counts integers, and, since one person moves one cell, it adds less noise than the
    (discrete) Gaussian at any ``delta`` worth using.  Any number of count-based metrics costs that
    one ``epsilon`` (every group is a disjoint part of the data: parallel composition).
    A real-valued metric (``mean_squared_error``, ``mean_absolute_error``, ``mean_prediction``) is a
    per-group mean of a per-row value bounded through the declared ``bounds``; its per-group sums
    are released with Laplace noise (sensitivity: the width of the value's range) and divided by the
    table's group sizes.  ``epsilon`` is split equally between the table and each real-valued metric
    (sequential composition); ``releases_`` and ``privacy_spent_`` state the split.

    **Post-processing** (free): negative noisy counts become 0, so rates stay in [0, 1] and counts
    non-negative; a mean is clipped to its range.  A value whose denominator is 0 after this
    takes the overall value (an undefined overall takes the range midpoint), never NaN.

    **Confidence intervals** cover the sampling error (the rows are a sample of a population) and
    the privacy noise (whose law is known), by a parametric bootstrap from the released statistics:
    each of 2000 replicates redraws every cell as Poisson around the noisy count (plus 0.5), adds
    fresh noise of the release's law and recomputes every metric.  By-group and overall intervals
    are bootstrap percentiles.  ``difference()`` and ``ratio()`` (``max |contrast|`` over pairs of
    groups, or over groups against the overall value; ratios on the log scale) get a simultaneous
    band over every contrast, so that they stay valid when groups are close and the plug-in
    maximum is biased upwards.  For a real-valued metric the per-row values are resampled from the
    largest-variance law on their range that has the released mean (a conservative, assumption-free
    interval that needs no extra release).  The bootstrap uses released values only: it costs no
    privacy.

    **Noise-dominated groups.** A group's metric whose released denominator is below ``2 z`` noise
    standard deviations (``z`` the normal quantile of ``confidence_level``: the noise may move it by
    half its value; at ``epsilon=inf``: an empty denominator) is flagged in :attr:`flagged`.  Its
    interval is the metric's whole range; it is left out of the point estimates of the summaries
    (when at least two groups remain) and widens their intervals to the whole range on the side it
    can move.  A declared group absent from the data is handled the same way: its counts are pure
    noise, it is never dropped.

    Parameters
    ----------
    metrics : str, callable or dict of str to (str or callable)
        One metric, or a dict from output name to metric.  A metric is one of
        :data:`SUPPORTED_METRICS` by name, or the fairlearn / scikit-learn function of that name.
        Anything else is refused with the list of supported metrics.
    y_true : array-like of shape (n_samples,)
        True labels: 0/1 for count-based metrics, numbers in ``bounds`` for real-valued ones.
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
        name to its labels (every combination is a group), or a list of label tuples.
    bounds : (float, float), optional
        Public range of ``y_true`` and ``y_pred`` for the real-valued metrics (required by them; a
        value outside raises).  Unused by count-based metrics.
    confidence_level : float, default 0.95
        Nominal coverage of every interval, in (0, 1).
    budget : PrivacyBudget, optional
        Charged ``(epsilon, 0)`` once, after every argument is validated and before any noise.
    random_state : None, int, numpy Generator or NoiseSource
        ``None``: secure noise (OpenDP) and an OS-seeded bootstrap.  A seed gives reproducible, *not
        hardened* noise, for experiments and tests only.

    Attributes
    ----------
    privacy_spent_ : dict
        ``{"epsilon", "delta", "protects", "neighbouring"}`` of the whole frame.
    releases_ : list of dict
        Each noisy release: what, mechanism, its share of ``epsilon`` and its noise scale.
    noisy_table_ : pandas.DataFrame
        The released table as drawn (integers, possibly negative): one row per group, columns
        ``TN, FP, FN, TP`` (count-based metrics) or ``count``.

    Raises
    ------
    TypeError, ValueError
        For invalid arguments, naming the argument and the fix; nothing is charged.
    PrivacyBudgetExceededError
        If ``budget`` refuses the charge (nothing is released).

    See Also
    --------
    dpfair.classification.DPEqualizedOddsPostProcessor : Mitigate the disparities measured here.

    Notes
    -----
    Protected: every row's ``(sensitive features, y_true, y_pred)``, under adding or removing one row.
    Differences from fairlearn: only the metrics listed are supported (each must be a function of
    the table or of bounded sums); labels must be 0/1; ``control_features`` and ``sample_params``
    are not supported; a group whose metric is undefined (0/0) is flagged and takes the overall
    value instead of scikit-learn's ``zero_division`` value or NaN.

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
    ...                         epsilon=1.0, groups=["a", "b"], random_state=0)
    >>> round(float(mf.difference()["sr"]), 1)
    0.2
    >>> lower, upper = mf.conf_int["difference"]["lower"]["sr"], mf.conf_int["difference"]["upper"]["sr"]
    >>> bool(lower < mf.difference()["sr"] < upper)
    True
    """

    _privacy_parameters: ClassVar[dict[str, str]] = {
        "epsilon": "epsilon", "delta": "delta", "budget": "budget", "random_state": "random_state",
    }
    _privacy_neighbouring: ClassVar[str] = _NEIGHBOURING

    def __init__(
        self,
        *,
        metrics: str | Callable[..., Any] | dict[str, str | Callable[..., Any]],
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
    ) -> None:
        self.epsilon = epsilon
        self.delta = delta
        self.groups = groups
        self.bounds = bounds
        self.confidence_level = confidence_level
        self.budget = budget
        self.random_state = random_state
        self._metrics = metrics
        # one release (dpfair.base): every argument is checked before the single charge; results are set last
        for name, value in self._release(y_true, y_pred, sensitive_features).items():
            setattr(self, name, value)

    # ------------------------------------------------------------------ the steps of dpfair.base's template
    def _charge_label(self, params: PrivacyParameters) -> str:
        """The ledger's label of the one charge: how epsilon is split."""
        plan = _release_plan(params.extra["specs"], params.extra["counts"], params.epsilon)
        return f"PrivateMetricFrame ({_split_text(plan[1])})"

    def _validate_params(self) -> dict[str, Any]:
        parsed, single = _parse_metrics(self._metrics)
        confidence = check_open_unit(self.confidence_level, "confidence_level")
        count_names = [name for _, name in parsed if name in COUNT_METRICS]
        real_names = [name for _, name in parsed if name in REAL_METRICS]
        bounds = None
        if real_names:
            if self.bounds is None:
                raise ValueError(
                    f"bounds is required for the real-valued metric(s) {real_names}: declare (lower, upper) that y_true "
                    "and y_pred always lie in, from public knowledge (never read off the data)."
                )
            bounds = check_bounds(self.bounds, "bounds")
        specs = [_core.real_spec(key, name, bounds) if name in REAL_METRICS else MetricSpec(key, name) for key, name in parsed]
        return {"single": single, "specs": specs, "confidence": confidence, "counts": count_names, "reals": real_names,
                "bounds": bounds}

    def _validate_data(self, params: PrivacyParameters, y_true: Any, y_pred: Any, sensitive_features: Any) -> dict[str, Any]:
        count_names, real_names, bounds = params.extra["counts"], params.extra["reals"], params.extra["bounds"]
        y_t = _as_1d(y_true, "y_true")
        n_rows = y_t.shape[0]
        y_p = _as_1d(y_pred, "y_pred", n_rows)
        columns = _sensitive_columns(sensitive_features, n_rows)
        data: dict[str, Any] = {"labels_true": None, "labels_pred": None, "values_true": None, "values_pred": None}
        if count_names:
            data["labels_true"] = _binary(y_t, "y_true", count_names)
            data["labels_pred"] = _binary(y_p, "y_pred", count_names)
        if real_names:
            data["values_true"] = _bounded(y_t, "y_true", bounds)
            data["values_pred"] = _bounded(y_p, "y_pred", bounds)
        if len(columns) == 1:
            declared, data["index"], data["group"] = _resolve_single(self.groups, columns[0][0], columns[0][1], params.epsilon)
        else:
            declared, data["index"], data["group"] = _resolve_intersections(self.groups, columns, params.epsilon)
        data["n_groups"] = len(declared)
        return data

    def _compute_statistics(self, params: PrivacyParameters, data: dict[str, Any]) -> dict[str, Any]:
        """The exact table and per-group sums (not released), and the plan of the releases (refused if it overflows)."""
        specs, group, n_groups = params.extra["specs"], data["group"], data["n_groups"]
        counts = _core.tabulate(group, n_groups, data["labels_true"], data["labels_pred"])
        sums = {
            spec.key: _core.group_sums(group, n_groups, _core.per_row_values(spec, data["values_true"], data["values_pred"]))
            for spec in specs
            if spec.real
        }
        share, releases = _release_plan(specs, params.extra["counts"], params.epsilon)
        scale = releases[0]["scale"]
        if scale and (not math.isfinite(1000.0 * scale) or int(counts.max(initial=0)) + 1000.0 * scale >= 2.0**62):
            raise ValueError(
                f"epsilon={params.epsilon!r} is too small: the noise (scale {scale:.3g} per count) would overflow; use a "
                "larger epsilon."
            )
        if scale:
            for spec in specs:
                if spec.real and not math.isfinite(1000.0 * spec.width / share):
                    raise ValueError(
                        f"epsilon={params.epsilon!r} is too small for bounds={self.bounds!r}: the noise would overflow."
                    )
        return {"counts": counts, "sums": sums, "share": share, "releases": releases}

    def _privacy_cost(self, params: PrivacyParameters) -> tuple[float, float]:
        return params.epsilon, 0.0  # pure epsilon-DP: delta is accepted for fairlearn-like signatures, never spent

    def _warn_non_private(self, params: PrivacyParameters) -> None:
        warn_non_private(params.epsilon, "PrivateMetricFrame's table and metrics", stacklevel=6)

    def _draw_noise(self, params: PrivacyParameters, statistics: dict[str, Any], noise: NoiseSource) -> dict[str, Any]:
        """Release the table and the sums, each at ``share`` of epsilon; seed the bootstrap of the intervals from ``noise``."""
        specs, share = params.extra["specs"], statistics["share"]
        noisy = _core.release_table(statistics["counts"], share, noise)
        sums = {
            spec.key: _core.release_sums(statistics["sums"][spec.key], spec.width, share, noise) for spec in specs if spec.real
        }
        return {**statistics, "table": noisy, "sums": sums, "rng": np.random.default_rng(predict_seed(noise))}

    def _solve(self, params: PrivacyParameters, noisy: dict[str, Any], data: dict[str, Any]) -> dict[str, Any]:
        """Post-processing (free): estimates, flags and intervals from the noisy table and sums."""
        specs, share, table = params.extra["specs"], noisy["share"], noisy["table"]
        est, flagged, cis = _core.intervals(
            table[None], {k: v[None] for k, v in noisy["sums"].items()}, specs, share, share, params.extra["confidence"],
            noisy["rng"],
        )
        columns_table = list(_core.CELL_NAMES) if table.shape[1] == 4 else ["count"]
        return {
            "_single": params.extra["single"],
            "_specs": specs,
            "_index": data["index"],
            "_est": {k: (g[0], o[0]) for k, (g, o) in est.items()},
            "_flagged": {k: f[0] for k, f in flagged.items()},
            "_cis": cis,
            "_usable_members": {
                k: (~f[0]) if (~f[0]).sum() >= 2 else np.ones_like(f[0], dtype=bool) for k, f in flagged.items()
            },
            "noisy_table_": pd.DataFrame(table, index=data["index"].copy(), columns=columns_table),
            "releases_": noisy["releases"],
        }

    def _privacy_spent(self, params: PrivacyParameters, results: dict[str, Any]) -> dict[str, Any]:
        if math.isinf(params.epsilon):
            protects = "nothing: epsilon=inf computes the exact metrics"
        else:
            protects = f"every row's sensitive features, y_true and y_pred; {_split_text(results['releases_'])}"
        return privacy_spent(params.epsilon, 0.0, protects=protects, neighbouring=self._privacy_neighbouring)

    # ------------------------------------------------------------------ helpers
    @property
    def _keys(self) -> list[str]:
        return [spec.key for spec in self._specs]

    def _scalar_or_series(self, values: dict[str, float]) -> Any:
        if self._single:
            return np.float64(values[self._keys[0]])
        return pd.Series({k: float(values[k]) for k in self._keys}, dtype=float)

    def _frame_or_series(self, values: dict[str, np.ndarray], dtype: Any = float) -> Any:
        if self._single:
            key = self._keys[0]
            return pd.Series(values[key], index=self._index.copy(), name=key, dtype=dtype)
        return pd.DataFrame({k: values[k] for k in self._keys}, index=self._index.copy()).astype(dtype)

    @staticmethod
    def _check(method: str | None, errors: str) -> None:
        if method is not None and method not in _METHODS:
            raise ValueError(f"method must be one of {list(_METHODS)}, got {method!r}.")
        if errors not in _ERRORS:
            raise ValueError(f"errors must be one of {list(_ERRORS)}, got {errors!r}.")

    def _group_extreme(self, errors: str, fill: float, extreme: Callable[[np.ndarray], Any]) -> Any:
        """``extreme`` (min or max) of every metric over the usable groups (the others filled with ``fill``)."""
        self._check(None, errors)
        return self._scalar_or_series(
            {k: extreme(np.where(self._usable_members[k], g, fill)) for k, (g, _) in self._est.items()}
        )

    # ------------------------------------------------------------------ fairlearn's interface
    @property
    def overall(self) -> Any:
        """The metrics on all rows together (computed from the summed noisy table).

        Returns
        -------
        float or pandas.Series
            A float for a single metric, else a Series indexed by metric name.
        """
        return self._scalar_or_series({k: o for k, (_, o) in self._est.items()})

    @property
    def by_group(self) -> Any:
        """The metrics of every declared group.

        Returns
        -------
        pandas.Series or pandas.DataFrame
            A Series (single metric) or a DataFrame with one column per metric, indexed by the
            declared groups (a MultiIndex for several sensitive features).
        """
        return self._frame_or_series({k: g for k, (g, _) in self._est.items()})

    @property
    def flagged(self) -> Any:
        """Which group values rest on a noise-dominated (or empty) denominator.

        Returns
        -------
        pandas.Series or pandas.DataFrame of bool
            Shaped like :attr:`by_group`.
        """
        return self._frame_or_series(self._flagged, dtype=bool)

    @property
    def sensitive_levels(self) -> list[str]:
        """The names of the sensitive features.

        Returns
        -------
        list of str
            One name per sensitive feature (``sensitive_feature_<i>`` when unnamed).
        """
        return [str(n) for n in self._index.names]

    def group_min(self, errors: Literal["raise", "coerce"] = "raise") -> Any:
        """The smallest group value of each metric (noise-dominated groups left out when two remain).

        Parameters
        ----------
        errors : {"raise", "coerce"}, default "raise"
            Accepted for fairlearn's signature; every metric here is a scalar.

        Returns
        -------
        float or pandas.Series
            As :attr:`overall`.
        """
        return self._group_extreme(errors, np.inf, np.min)

    def group_max(self, errors: Literal["raise", "coerce"] = "raise") -> Any:
        """The largest group value of each metric (noise-dominated groups left out when two remain).

        Parameters
        ----------
        errors : {"raise", "coerce"}, default "raise"
            Accepted for fairlearn's signature; every metric here is a scalar.

        Returns
        -------
        float or pandas.Series
            As :attr:`overall`.
        """
        return self._group_extreme(errors, -np.inf, np.max)

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
        self._check(method, errors)
        return self._scalar_or_series({k: ci.difference[method][0][0] for k, ci in self._cis.items()})

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
        self._check(method, errors)
        return self._scalar_or_series({k: ci.ratio[method][0][0] for k, ci in self._cis.items()})

    @property
    def conf_int(self) -> dict[str, dict[str, Any]]:
        """Confidence intervals at ``confidence_level`` for every estimate.

        Returns
        -------
        dict
            Keys ``"overall"``, ``"by_group"``, ``"difference"``, ``"ratio"`` (the ``between_groups``
            methods), ``"difference_to_overall"`` and ``"ratio_to_overall"``; each maps ``"lower"``
            and ``"upper"`` to objects shaped like the estimate, e.g.
            ``conf_int["difference"]["lower"]["true_positive_rate"]``.
        """
        out: dict[str, dict[str, Any]] = {}
        for end in ("lower", "upper"):
            out.setdefault("overall", {})[end] = self._scalar_or_series(
                {k: getattr(ci.overall, end)[0] for k, ci in self._cis.items()}
            )
            out.setdefault("by_group", {})[end] = self._frame_or_series(
                {k: getattr(ci.by_group, end)[0] for k, ci in self._cis.items()}
            )
            for name, method in (("difference", "between_groups"), ("difference_to_overall", "to_overall")):
                out.setdefault(name, {})[end] = self._scalar_or_series(
                    {k: getattr(ci.difference[method][1], end)[0] for k, ci in self._cis.items()}
                )
            for name, method in (("ratio", "between_groups"), ("ratio_to_overall", "to_overall")):
                out.setdefault(name, {})[end] = self._scalar_or_series(
                    {k: getattr(ci.ratio[method][1], end)[0] for k, ci in self._cis.items()}
                )
        return out

    def __repr__(self) -> str:
        metrics = ", ".join(f"{s.key}={s.name}" if s.key != s.name else s.name for s in self._specs)
        return (
            f"PrivateMetricFrame(metrics=[{metrics}], groups={len(self._index)}, epsilon={self.privacy_spent_['epsilon']:g}, "
            f"confidence_level={self.confidence_level})"
        )
