"""Fair post-processing of regressors under statistical parity.

* :class:`FairRegressionPostProcessor`: Algorithm 1 of Xian, Li, Kamath & Zhao (ICML 2024),
  epsilon-DP with respect to the unlabeled post-processing data (regressor output and group of
  every row).
* :class:`WassersteinBarycenterPostProcessor`: the non-private, non-discretized post-processor
  of Chzhen et al. (NeurIPS 2020) that the paper builds on.

Both follow the dpfair estimator contract (``CONTRIBUTING.md``): scikit-learn estimators whose
``sensitive_features`` travel by metadata routing, whose set of groups is declared (``groups=``),
and whose ``random_state`` policy is:

* ``random_state=None`` (construction): noise and randomized predictions come from secure
  randomness (OpenDP for the Laplace noise, the OS CSPRNG for uniforms);
* ``random_state=<seed>`` (construction): ``fit`` is reproducible, and ``predict`` called without
  its own ``random_state`` uses a generator derived from that seed at ``fit`` (fresh for every
  ``fit``, the same for every ``predict`` call of one fit), so a seeded estimator gives
  reproducible predictions.  Seeded randomness is *not hardened*: experiments and tests only;
* ``predict(..., random_state=<seed>)`` always wins.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from scipy import sparse
from sklearn.base import BaseEstimator, MetaEstimatorMixin, RegressorMixin
from sklearn.utils.validation import _num_samples, check_is_fitted

from dpfair._estimator import (
    CloneLineageMixin,
    check_bool,
    predict_seed,
    prediction_noise,
    privacy_spent,
    private_base,
    resolve_groups,
    rows_of_fitted_groups,
    warn_non_private,
    wrapped_tags,
)
from dpfair._validation import as_finite_array, check_allocation, check_bounds, check_int
from dpfair._warnings import find_stack_level
from dpfair._wrapped_fit import (
    SensitiveScoreMixin,
    check_shared_budgets,
    check_wrapped_estimator,
    post_processor_fit_charges,
    wrapped_feature_attributes,
    wrapped_privacy_spent,
)
from dpfair.base import PrivacyParameters, PrivateEstimator, ValidatedData, ValidatedOptions
from dpfair.privacy.mechanisms import laplace_mechanism
from dpfair.privacy.noise import NoiseSource
from dpfair.regression._attribute_release import (
    attribute_privacy_spent,
    check_protects,
    project_onto_totals,
    relation_of,
    release_on_public_totals,
)
from dpfair.regression._lp import BarycenterSolution, check_alpha, check_coupling_size, solve_barycenter_lp
from dpfair.regression._wrapped import _NEIGHBOURING, WRAPPED_REGRESSOR, _predict_outputs, fit_regressor_outputs

__all__ = ["FairRegressionPostProcessor", "l_inf_isotonic_cdf"]

#: Largest Laplace scale ``2 / (n epsilon)`` accepted: beyond it the release carries no information
#: and sums of the noisy histogram overflow floating point.
_MAX_NOISE_SCALE = 1e100

#: Widest ``bounds`` accepted: the objective is in squared output units.
_MAX_WIDTH = 1e150

_NEIGHBOURING_END_TO_END = "replace one row (x, y, group) (the number of rows n is public)"
_PROTECTS_END_TO_END = (
    "every row (x, y, group): the private regressor's fit of (x, y) composed with the histogram of (group, binned "
    "regressor output)"
)


# ---------------------------------------------------------------------------- helpers
def l_inf_isotonic_cdf(partial_sums: np.ndarray) -> np.ndarray:
    """Algorithm 1, line 8: L-infinity isotonic regression of noisy partial sums, clipped to [0, 1].

    ``F(j) = proj_[0,1]((max_{l <= j} S(l) + min_{r >= j} S(r)) / 2)`` for ``j < k`` and ``F(k) = 1``;
    the midpoint of the running max and the reverse running min is an optimal L-infinity
    isotonic fit (Stout 2017).  Works on the last axis.

    Parameters
    ----------
    partial_sums : array-like of shape (..., k)
        Noisy partial sums ``S(1), ..., S(k)`` (finite real numbers, ``k >= 1``).

    Returns
    -------
    ndarray of the same shape
        A valid CDF on the last axis: non-decreasing, in ``[0, 1]``, ending at 1.

    Raises
    ------
    TypeError
        If ``partial_sums`` is not real-valued (strings, objects and complex numbers are refused).
    ValueError
        If it holds NaN or inf, is a scalar, or its last axis is empty.
    """
    partial_sums = as_finite_array(partial_sums, "partial_sums", mode="dtype", allow_bool=True, allow_empty=True)
    if partial_sums.ndim == 0 or partial_sums.shape[-1] == 0 or partial_sums.size == 0:
        raise ValueError(f"partial_sums must have a non-empty last axis, got shape {partial_sums.shape}.")
    prefix_max = np.maximum.accumulate(partial_sums, axis=-1)
    suffix_min = np.minimum.accumulate(partial_sums[..., ::-1], axis=-1)[..., ::-1]
    cdf = np.clip((prefix_max + suffix_min) / 2.0, 0.0, 1.0)
    cdf[..., -1] = 1.0
    return cdf


def _bounds_of(outputs: np.ndarray) -> tuple[float, float]:
    """``epsilon = inf`` without declared bounds: the outputs' range, read off the data (a non-private release)."""
    lo, hi = float(outputs.min()), float(outputs.max())
    if not hi > lo:
        hi = lo + max(1.0, abs(lo) * 1e-9)
    if not hi - lo <= _MAX_WIDTH:
        raise ValueError(
            f"the outputs span more than {_MAX_WIDTH:g}, too wide for the transport costs in float arithmetic; "
            "declare bounds=(s, t) or rescale the target."
        )
    return lo, hi


@dataclass(frozen=True, eq=False)
class _HistogramOptions(ValidatedOptions):
    """The post-processor's validated parameters that are not privacy parameters."""

    n_bins: int
    alpha: float
    bounds: tuple[float, float] | None
    prefit: bool
    protects: str = "records"


@dataclass(frozen=True, eq=False, kw_only=True)
class _RegressionData(ValidatedData):
    """Step 1's data: the rows as given (for the regressor's fit), and its outputs when no fit is needed."""

    X: Any
    y: Any
    outputs: np.ndarray | None


@dataclass(frozen=True, eq=False)
class _Histogram:
    """Step 3's output: the regressor, the bounds of its outputs and their exact joint histogram with the groups.

    The blind post-processor's table is one too: its columns are cells (score bin, membership cell) instead of bins.
    """

    estimator: Any
    bounds: tuple[float, float]
    joint: np.ndarray
    n_rows: int


@dataclass(frozen=True, eq=False)
class _ReleasedHistogram:
    """Step 5's output: the released histogram, beside what post-processing needs."""

    estimator: Any
    bounds: tuple[float, float]
    histogram: np.ndarray
    n_rows: int
    predict_seed: list[int] | None
    #: The public column totals under ``protects="attribute"`` (the program reads the table projected onto them).
    totals: np.ndarray | None = None


#: float64 values held per (group, bin) cell at the peak of ``fit`` (histograms, CDFs, couplings, sparse maps),
#: measured with some margin: about 30.
_VALUES_PER_CELL = 32


def _check_histogram_size(n_bins: int, n_groups: int) -> None:
    """Refuse, before anything is fitted or charged, an ``n_bins`` whose histograms cannot fit in memory."""
    check_allocation(
        8 * _VALUES_PER_CELL * n_bins * n_groups,
        subject=f"n_bins={n_bins} with {n_groups} group(s)",
        what="the private histograms and the sparse transport maps",
        fix="lower n_bins",
    )


def _bin_index(outputs: np.ndarray, lo: float, hi: float, k: int) -> np.ndarray:
    """Line 2: index of the nearest bin midpoint (outputs outside ``[lo, hi]`` go to the end bins)."""
    position = (outputs - lo) / (hi - lo) * k
    return np.clip(np.floor(np.clip(position, -1.0, k + 1.0)), 0, k - 1).astype(np.int64)


def _dense_view(name: str, what: str) -> property:
    """The property ``name``: a dense ``(n_groups, n_bins, n_bins)`` view of the fitted ``sparse_<name>``."""

    def view(self: Any) -> np.ndarray:
        matrix = getattr(self, "sparse_" + name)  # AttributeError before fit, as for any fitted attribute
        n_groups, k = self.targets_.shape
        check_coupling_size(n_groups, k)
        return matrix.toarray().reshape(n_groups, k, k)

    view.__doc__ = f"""Dense {what} (a view of ``sparse_{name}``).

        Returns
        -------
        ndarray of shape (n_groups, n_bins, n_bins)

        Raises
        ------
        AttributeError
            Before ``fit``.
        ValueError
            If ``n_groups * n_bins**2`` exceeds :data:`~dpfair.regression.MAX_COUPLING_CELLS`.
        """
    return property(view)


# ---------------------------------------------------------------------------- Algorithm 1
def _check_noise_scale(epsilon: float, n_rows: int) -> None:
    """Refuse an ``epsilon`` whose Laplace scale ``2/(n*epsilon)`` would carry no information and overflow."""
    if 2.0 / (n_rows * epsilon) > _MAX_NOISE_SCALE:
        raise ValueError(
            f"epsilon={epsilon!r} is too small for {n_rows} rows: the Laplace scale 2/(n*epsilon) exceeds "
            f"{_MAX_NOISE_SCALE:g}, the release would carry no information and overflow; use a larger epsilon."
        )


# The steps of Algorithm 1 that the attribute-blind post-processor (dpfair.regression.blind) shares: its table has
# a column per (score bin, membership cell) where this one has a column per bin.
def _declared_groups(params: PrivacyParameters) -> np.ndarray | None:
    """The declarations read before the rows: ``bounds`` (required at a finite ``epsilon``) and ``groups``.

    Returns the declared groups, or ``None`` when they are read off the data (``epsilon = inf``).
    """
    if params.options.bounds is None and not math.isinf(params.epsilon):
        raise ValueError(
            "bounds is required: declare the interval [s, t] that contains the regressor's outputs. "
            "Reading it off the data would break differential privacy (allowed only with epsilon=inf)."
        )
    if params.groups is None:
        return None
    declared, _ = resolve_groups(params.groups, np.empty(0, dtype=object), params.epsilon)
    return declared


def _rows_and_groups(post_processor: Any, params: PrivacyParameters, X: Any, sensitive_features: Any) -> ValidatedData:
    """The number of rows of ``X`` and, when it has rows, their declared groups and the check of the noise scale.

    Every check of the rows that needs no regressor output, made before the regressor's checks: the groups
    (missing, undeclared, wrong length) and the noise scale.
    """
    try:
        n_rows = _num_samples(X)
    except TypeError:  # not array-like: refused by name when the rows are read (before any charge)
        n_rows = 0
    rows = ValidatedData(n_rows=n_rows, sensitive_features=sensitive_features)
    if n_rows > 0:
        rows = post_processor._resolve_declared_groups(params, rows)
        _check_noise_scale(params.epsilon, n_rows)
    return rows


def _outputs_and_bounds(
    post_processor: Any, params: PrivacyParameters, data: Any
) -> tuple[Any, np.ndarray, tuple[float, float]]:
    """The regressor (its clone fitted first with ``prefit=False``), its outputs and the bounds of line 2.

    With ``prefit=False`` a private regressor charges its own budget in its fit here.  The bounds are the declared
    ones, read off the outputs only at ``epsilon = inf``.
    """
    if data.outputs is None:
        estimator, outputs = fit_regressor_outputs(post_processor, data.X, data.y, prefit=False)
    else:
        estimator, outputs = post_processor.estimator, data.outputs
    bounds = params.options.bounds if params.options.bounds is not None else _bounds_of(outputs)
    return estimator, outputs, bounds


def _warn_clipped(outputs: np.ndarray, lo: float, hi: float) -> None:
    """Line 2's clamp: say (without a private value) that some outputs lie outside the declared bounds."""
    if ((outputs < lo) | (outputs > hi)).any():
        warnings.warn(
            f"some outputs lie outside bounds=({lo:g}, {hi:g}); they were clipped to the end bins. "
            "Declare wider bounds if that is not intended.",
            stacklevel=find_stack_level(),
        )


def _laplace_histogram(statistics: _Histogram, epsilon: float, noise: NoiseSource,
                       protects: str = "records") -> _ReleasedHistogram:
    """Line 4: the Laplace mechanism, L1 sensitivity 2/n (one row moves 1/n of mass between two cells).

    Under ``protects="attribute"`` the column totals are public and the table is released on them instead
    (:func:`dpfair.regression._attribute_release.release_on_public_totals`; the totals travel with it).
    """
    joint, n = statistics.joint, statistics.n_rows
    totals = None
    if protects == "attribute":  # exact at epsilon = inf or with one group, on the totals with two: nothing to project
        noisy = release_on_public_totals(joint, n, epsilon, noise)
        totals = None if math.isinf(epsilon) or joint.shape[0] <= 2 else joint.sum(axis=0)
    elif math.isinf(epsilon):  # scale 0: the exact histogram (already warned)
        noisy = joint.copy()
    else:
        noisy = laplace_mechanism(joint, sensitivity=2.0 / n, epsilon=epsilon, noise=noise)
    return _ReleasedHistogram(estimator=statistics.estimator, bounds=statistics.bounds, histogram=noisy, n_rows=n,
                              predict_seed=predict_seed(noise), totals=totals)


def _program_table(noisy: _ReleasedHistogram) -> np.ndarray:
    """The table the program reads: the released one, projected onto its public totals when it has them."""
    return noisy.histogram if noisy.totals is None else project_onto_totals(noisy.histogram, noisy.totals)


def _private_pmfs(histogram: np.ndarray, declared: np.ndarray, if_empty: str) -> tuple[np.ndarray, np.ndarray]:
    """Lines 6-9: the private group weights and each group's distribution over the histogram's columns.

    A group whose private weight is 0 after noise gets the uniform distribution and a warning that ends with
    ``if_empty`` (what that means for the fit).
    """
    weights = np.maximum(histogram.sum(axis=1), 0.0)  # line 6: private group weights
    empty = weights <= 0
    if empty.any():
        warnings.warn(
            f"the private weight of group(s) {declared[empty].tolist()} is 0 after noise; {if_empty}.",
            stacklevel=find_stack_level(),
        )
    partial = np.cumsum(histogram, axis=1) / np.where(empty, 1.0, weights)[:, None]  # line 7
    pmfs = np.diff(l_inf_isotonic_cdf(partial), axis=1, prepend=0.0)  # lines 8-9
    pmfs[empty] = 1.0 / histogram.shape[1]
    return weights, pmfs


def _histogram_privacy_spent(epsilon: float, estimator: Any, *, prefit: bool, protects: str, released: str,
                             wrapped: str, protects_end_to_end: str) -> dict[str, Any]:
    """The whole fitted object's guarantee: the histogram's, composed with a private regressor fitted here.

    ``protects``: what the histogram's release protects; ``released``: what ``epsilon = inf`` releases exactly;
    ``wrapped``: the models that must be trained privately or on other data; ``protects_end_to_end``: what the
    composition with a private regressor fitted on the same rows protects.  A non-private regressor fitted here
    leaves no guarantee as a whole (``epsilon = inf``).
    """
    if not prefit and estimator is not None and not private_base(estimator):
        return privacy_spent(
            math.inf, 0.0, neighbouring=_NEIGHBOURING,
            protects=(
                "nothing, as a whole: with prefit=False the wrapped estimator was trained non-privately on the "
                f"same rows. The post-processing step alone is ({epsilon:g}, 0)-DP for {protects}."
            ),
        )
    if math.isinf(epsilon):
        own = privacy_spent(math.inf, 0.0, neighbouring=_NEIGHBOURING,
                            protects=f"nothing: epsilon=inf releases the exact {released}")
    else:
        own = privacy_spent(epsilon, 0.0, neighbouring=_NEIGHBOURING,
                            protects=f"{protects}; {wrapped} must be trained privately or on other data")
    return wrapped_privacy_spent(own, estimator, prefit=prefit, protects=protects_end_to_end,
                                 neighbouring=_NEIGHBOURING_END_TO_END)


class FairRegressionPostProcessor(
    PrivateEstimator, SensitiveScoreMixin, CloneLineageMixin, MetaEstimatorMixin, RegressorMixin, BaseEstimator
):
    """Differentially private fair post-processing of a regressor (Algorithm 1, Xian et al. 2024).

    Learns, from unlabeled data, randomized maps ``g_a`` that transport each group's
    discretized output distribution to a target inside a KS ball of radius ``alpha/2``
    around their (fixed-support) Wasserstein barycenter, so that the post-processed
    regressor satisfies ``alpha``-approximate statistical parity (up to estimation error)
    with minimal squared deviation.

    **What it protects.** ``fit`` is ``(epsilon, 0)``-DP with respect to the post-processing rows:
    the object protected is each row's regressor output and group (its features enter only
    through the regressor's output; labels are not used), under the replace-one-row neighbouring
    relation (``n`` is public).  Only the joint histogram of (group, bin) is released, through the
    Laplace mechanism with scale ``2 / (n epsilon)`` (its L1 sensitivity is 2/n); everything
    after is post-processing.  The guarantee needs every input of the mechanism to be declared:
    ``bounds`` and ``groups`` are required with finite ``epsilon``.  The wrapped regressor must be
    trained privately or on other data (``prefit=True``) for end-to-end privacy; with
    ``prefit=False`` a non-private regressor is trained on the same rows and the fitted object as a
    whole has ``epsilon = inf`` (a :class:`~dpfair.privacy.PrivacyLeakWarning` says so).  With
    ``prefit=False`` and a *private* regressor (one that reports ``privacy_spent_``, such as
    :class:`dpfair.linear_model.DPLinearRegression`) the whole object is private end to end: the
    regressor is released first and the histogram is computed given it (one replaced row still moves
    ``1/n`` of mass between two cells), so by basic composition ``privacy_spent_`` is
    ``(eps_regressor + epsilon, delta_regressor)`` for every row ``(x, y, group)``.  Give both the
    same ``budget``: ``fit`` checks that it pays for both before fitting anything.

    **Only the attribute private** (``protects="attribute"``, the relation of Jagielski et al. 2019, Section 2.3):
    the rows' features and labels are public, so every row's bin (a function of its public ``x`` through the
    regressor, fitted on other rows or on these public ones) and the bins' totals ``T(j)`` are public, and
    changing one row's group moves ``1/n`` between two groups *within* its bin.  With two groups only group 1's
    column is released, ``p(1, j) + Lap(1 / (n epsilon))`` (L1 sensitivity ``1/n``: one entry moves), group 0's
    being ``T(j)`` less it; with more groups every entry gets ``Lap(2 / (n epsilon))`` (L1 sensitivity ``2/n``:
    two entries of one bin move).  Either is ``epsilon``-DP under ``"change_attribute"``; the table is then
    projected by least squares onto the public totals (each bin's entries summing to ``T(j)``) and lines 6-12 run
    on it, all post-processing (proof in ``dpfair.regression._attribute_release``).  ``privacy_spent_`` then
    protects the attribute only, whatever regressor is fitted here (it reads public ``(X, y)``).

    Parameters
    ----------
    estimator : regressor or None, default None
        The regressor to post-process.  ``None`` means ``X`` already holds the regressor's outputs
        (the paper's experiments post-process the true targets this way).
    epsilon : float, default 1.0
        Privacy parameter (> 0; ``inf`` gives the non-private algorithm and a
        :class:`~dpfair.privacy.PrivacyLeakWarning`).
    n_bins : int, default 16
        Number of histogram bins ``k``.  The maps are stored sparse (at most ``2k - 1`` coupling
        cells per group), so ``k`` may be large (``100_000`` bins with 20 groups fit in memory); only
        the dense views ``couplings_`` and ``transport_`` are limited to
        :data:`dpfair.regression.MAX_COUPLING_CELLS` cells.
    alpha : float, default 0.0
        Statistical-parity tolerance: KS distance between the groups' targets, in ``[0, 1]``.
    bounds : (float, float) or None, default None
        Declared interval ``[s, t]`` containing the regressor's outputs.  Required with finite
        ``epsilon``: reading it off the data would break DP.  With ``epsilon = inf`` it may be
        omitted and is then read off the data.  It bounds the *predictions* of the wrapped
        regressor, not data: an output outside it is sent to the nearest end bin (the discretizer
        of line 2) with a warning that says only that clipping happened, rather than refused.  The
        clamp is a fixed per-row map applied before the Laplace mechanism (post-processing of the
        regressor), so the histogram's sensitivity and the guarantee are unchanged (CONTRIBUTING,
        rule 9).
    groups : list or None, default None
        The declared set of groups, in order (group 0 first).  Required with finite ``epsilon``
        (reading it off the data reveals whether a rare group is present).  A declared group with
        no rows is handled by the mechanism (its private weight is noise around 0).  When it
        declares exactly one group, ``sensitive_features`` may be omitted and every row belongs to
        that group.
    prefit : bool, default True
        ``True``: ``estimator`` is already fitted and is used as is.  ``False``: a clone is fitted on
        ``(X, y)`` inside ``fit`` (stored as ``estimator_``), privately only if the regressor is a
        private dpfair estimator.  ``True`` is the default of every dpfair post-processor: the base
        model is trained on other data unless you say otherwise.
    protects : {"records", "attribute"}, default "records"
        What ``epsilon`` protects.  ``"records"``: every post-processing row's output and group (replace one
        row; the table with ``Lap(2 / (n epsilon))``).  ``"attribute"``: only every row's group, its features and
        label public (change one row's attribute; the table released on its public bin totals, above): less noise
        for the same ``epsilon``, a weaker guarantee.
    budget : PrivacyBudget or None, default None
        Charged ``(epsilon, 0)`` once per ``fit``, after every argument is validated and just before
        the noise draw; a refused charge leaves the budget and any earlier fitted state unchanged.
        :func:`sklearn.base.clone` (hence ``GridSearchCV``, ``cross_validate``) keeps the *same*
        budget object, so every fit of a search is charged to it (use ``n_jobs=1``: a budget sent to
        another process is a copy).
    random_state : None, int, numpy Generator or NoiseSource, default None
        ``None``: secure noise (OpenDP) and secure randomized predictions.  A seed: reproducible,
        *not hardened* noise and predictions (experiments and tests only); see the module docstring.

    Attributes
    ----------
    estimator_ : regressor or None
        The regressor whose outputs are post-processed.
    groups_ : ndarray of shape (n_groups,)
        The declared groups, in declared order (read off the data only with ``epsilon = inf`` and
        ``groups=None``).
    bounds_ : tuple of float
        The interval ``[s, t]`` used.
    grid_ : ndarray of shape (n_bins,)
        Bin midpoints ``v_j = s + (j - 1/2)(t - s)/k`` (line 1).
    group_weights_ : ndarray of shape (n_groups,)
        Private group weights ``w_a`` (line 6), clipped at 0.
    pmfs_ : ndarray of shape (n_groups, n_bins)
        Private group PMFs (lines 7-9).
    alpha_ : float
        The ``alpha`` the maps were solved for.
    barycenter_ : ndarray of shape (n_bins,)
        Barycenter ``q`` (line 10).
    targets_ : ndarray of shape (n_groups, n_bins)
        Per-group targets ``q_a``.
    sparse_couplings_ : scipy.sparse.csr_array of shape (n_groups * n_bins, n_bins)
        Optimal couplings: row ``a * n_bins + j``, column ``l`` holds ``pi_a(j, l)`` (the monotone
        coupling, at most ``2 n_bins - 1`` non-zeros per group).
    sparse_transport_ : scipy.sparse.csr_array of shape (n_groups * n_bins, n_bins)
        Row-stochastic maps (line 12): row ``a * n_bins + j``, column ``l`` holds
        ``P(g_a(v_j) = v_l)``; a bin with no private mass maps to itself.  :meth:`predict` samples
        from it.
    couplings_ : ndarray of shape (n_groups, n_bins, n_bins)
        Dense view of ``sparse_couplings_`` (a property; refused beyond
        :data:`~dpfair.regression.MAX_COUPLING_CELLS` cells).
    transport_ : ndarray of shape (n_groups, n_bins, n_bins)
        Dense view of ``sparse_transport_``: ``transport_[a, j, l] = P(g_a(v_j) = v_l)`` (a property;
        refused beyond :data:`~dpfair.regression.MAX_COUPLING_CELLS` cells).
    objective_ : float
        LP optimum (weighted squared transport cost, weights ``group_weights_``).
    n_features_in_ : int
        Number of features of ``X`` (when known).
    privacy_spent_ : dict
        ``{"epsilon", "delta", "protects", "neighbouring"}`` for the whole fitted object.

    Examples
    --------
    >>> from dpfair.datasets import make_regression
    >>> _, y, g = make_regression(500, random_state=0)
    >>> pp = FairRegressionPostProcessor(epsilon=1.0, n_bins=8, bounds=(0, 1), groups=[0, 1], random_state=0)
    >>> pp.fit(y, sensitive_features=g).predict(y[:3], sensitive_features=g[:3]).shape
    (3,)
    """

    # bounds is not declared with the template's "bounds" role: here it may be omitted with epsilon = inf (read
    # off the outputs in _compute_statistics) and has a maximal width, so it is checked in _validate_params /
    # _validate_data.
    _privacy_parameters: ClassVar[dict[str, str]] = {
        "epsilon": "epsilon", "groups": "groups", "budget": "budget", "random_state": "random_state",
    }
    _results_hold_feature_attributes: ClassVar[bool] = True  # stale feature attributes go (dpfair.base)
    _privacy_protects: ClassVar[str] = (
        "the regressor output and group of every post-processing row (labels are not used)"
    )
    _privacy_neighbouring: ClassVar[str] = _NEIGHBOURING

    def __init__(
        self,
        estimator: Any = None,
        *,
        epsilon: float = 1.0,
        n_bins: int = 16,
        alpha: float = 0.0,
        bounds: tuple[float, float] | None = None,
        groups: Any = None,
        prefit: bool = True,
        protects: str = "records",
        budget: Any = None,
        random_state: Any = None,
    ) -> None:
        self.estimator = estimator
        self.epsilon = epsilon
        self.n_bins = n_bins
        self.alpha = alpha
        self.bounds = bounds
        self.groups = groups
        self.prefit = prefit
        self.protects = protects
        self.budget = budget
        self.random_state = random_state

    def __sklearn_tags__(self):  # scikit-learn's tags, with the wrapped estimator's input support
        return wrapped_tags(self, super().__sklearn_tags__())

    def _dpfair_fit_charges(self) -> list[tuple[Any, float, float]]:
        """``[(budget, epsilon, delta)]`` of one ``fit``: the regressor's fit with ``prefit=False``, then the histogram."""
        return post_processor_fit_charges(self)

    def fit(self, X: Any, y: Any = None, *, sensitive_features: Any = None) -> FairRegressionPostProcessor:
        """Learn the private fair post-processing maps from unlabeled data (Algorithm 1, lines 1-12).

        Parameters
        ----------
        X : array-like
            Features for ``estimator`` (or, with ``estimator=None``, the regressor's outputs, 1-d
            or one column).
        y : array-like of shape (n_samples,) or None, default None
            Labels, used only to fit the clone of ``estimator`` when ``prefit=False``; ignored
            otherwise (the post-processing itself is unsupervised).
        sensitive_features : array-like of shape (n_samples,) or None, default None
            Group of every row, each one of ``groups``.  May be omitted only when ``groups``
            declares exactly one group (every row is then in it).  Routed by metadata routing
            (``set_fit_request(sensitive_features=True)``).

        Returns
        -------
        FairRegressionPostProcessor
            The fitted post-processor (``self``).

        Raises
        ------
        ValueError
            If an argument is invalid (the message names it), ``bounds``/``groups`` are missing
            with finite epsilon, a row's group is not declared, or ``sensitive_features`` is
            missing with several groups.
        TypeError
            If an argument has the wrong type (e.g. string or complex outputs).
        NotFittedError
            If ``prefit=True`` and ``estimator`` is not fitted.
        PrivacyBudgetExceededError
            If ``budget`` refuses the charge; nothing is changed.

        Warns
        -----
        PrivacyLeakWarning
            With ``epsilon = inf`` or ``prefit=False``.
        UserWarning
            If some outputs fall outside ``bounds`` (clipped to the end bins), or a group's private
            weight is 0 after noise (its PMF is then uniform).
        """
        return self._set_fitted(self._release(X, y, sensitive_features=sensitive_features))

    # ---------------------------------------------------------------- the steps of the dpfair.base template
    @property
    def _privacy_label(self) -> str:  # the label of the budget charge
        return f"{type(self).__name__}.fit (Laplace histogram)"

    def _validate_params(self) -> _HistogramOptions:
        return _HistogramOptions(
            n_bins=check_int(self.n_bins, "n_bins", minimum=1),
            alpha=check_alpha(self.alpha),
            # one bounds rule; squared transport costs overflow beyond _MAX_WIDTH; None only with epsilon = inf
            bounds=None if self.bounds is None else check_bounds(self.bounds, "bounds", max_width=_MAX_WIDTH),
            prefit=check_bool(self.prefit, "prefit"),
            protects=check_protects(self.protects),
        )

    def _declared_relation(self) -> str:
        """``"change_attribute"`` under ``protects="attribute"``, else ``"replace"``."""
        return relation_of(self.protects)

    def _validate_data(
        self, params: PrivacyParameters, X: Any, y: Any = None, *, sensitive_features: Any = None
    ) -> _RegressionData:
        """Declarations, the rows' groups, then every check of the wrapped regressor that needs no fit.

        Nothing is fitted here (with ``prefit=False`` the regressor is fitted in step 3, :meth:`_compute_statistics`);
        without a fit to make (``estimator=None`` or ``prefit=True``) the outputs on ``X`` are read and checked here.
        """
        prefit = params.options.prefit
        declared = _declared_groups(params)
        _check_histogram_size(params.options.n_bins, 1 if declared is None else declared.size)
        rows = _rows_and_groups(self, params, X, sensitive_features)
        check_shared_budgets(self, prefit, kind="regressor")
        check_wrapped_estimator(WRAPPED_REGRESSOR, self.estimator, X, y, prefit=prefit, owner=type(self).__name__)
        outputs = _predict_outputs(self.estimator, X, type(self).__name__) if prefit or self.estimator is None else None
        return _RegressionData(n_rows=rows.n_rows if outputs is None else outputs.size, sensitive_features=sensitive_features,
                               groups=rows.groups, group_index=rows.group_index, X=X, y=y, outputs=outputs)

    def _warn_non_private(self, params: PrivacyParameters) -> None:
        read_off = ", and bounds read off the data)" if params.options.bounds is None else ")"
        warn_non_private(params.epsilon, "the fitted post-processor (histogram" + read_off, estimator=self)

    def _compute_statistics(self, params: PrivacyParameters, data: _RegressionData) -> _Histogram:
        """The regressor's outputs (its fit first, with ``prefit=False``), then lines 2-3: the exact joint
        distribution of (group, bin) over the declared groups, and ``n``."""
        k = params.options.n_bins
        estimator, outputs, (lo, hi) = _outputs_and_bounds(self, params, data)
        n = outputs.size
        _check_histogram_size(k, data.groups.size)  # groups read off the data (epsilon = inf)
        _warn_clipped(outputs, lo, hi)
        # line 3: empirical joint distribution of (group, bin) over the declared groups (line 2: the bin of each row)
        joint = np.zeros((data.groups.size, k))
        np.add.at(joint, (data.group_index, _bin_index(outputs, lo, hi, k)), 1.0 / n)
        return _Histogram(estimator=estimator, bounds=(lo, hi), joint=joint, n_rows=n)

    def _draw_noise(self, params: PrivacyParameters, statistics: _Histogram, noise: NoiseSource) -> _ReleasedHistogram:
        """Line 4: the Laplace mechanism, L1 sensitivity 2/n (one row moves 1/n of mass between two cells); under
        ``protects="attribute"`` with two groups, group 1's column alone at 1/n (``_attribute_release``)."""
        return _laplace_histogram(statistics, params.epsilon, noise, params.options.protects)

    def _solve(self, params: PrivacyParameters, noisy: _ReleasedHistogram, data: _RegressionData) -> dict[str, Any]:
        """Lines 6-12 on the noisy histogram (post-processing; projected onto public totals under the attribute
        relation)."""
        histogram = _program_table(noisy)
        k, declared, (lo, hi) = params.options.n_bins, data.groups, noisy.bounds
        weights, pmfs = _private_pmfs(histogram, declared, "their PMF is set to uniform")  # lines 6-9
        solved = self._solve_maps(pmfs, weights, k, hi - lo, params.options.alpha)
        estimator = noisy.estimator
        return {
            "estimator_": estimator,
            "groups_": declared,
            "bounds_": (lo, hi),
            "grid_": lo + (np.arange(k) + 0.5) * (hi - lo) / k,  # line 1
            "group_weights_": weights,
            "pmfs_": pmfs,
            **self._solution_attributes(solved, float(self.alpha)),
            "_predict_seed_": noisy.predict_seed,
            **wrapped_feature_attributes(estimator),
        }

    def _privacy_spent(self, params: PrivacyParameters, results: dict[str, Any]) -> dict[str, Any]:
        """The whole fitted object's guarantee: composed with a private regressor fitted here on the same rows."""
        if params.options.protects == "attribute":
            return attribute_privacy_spent(params.epsilon, "histogram")
        return _histogram_privacy_spent(
            params.epsilon, results["estimator_"], prefit=params.options.prefit, protects=self._privacy_protects,
            released="histogram", wrapped="the wrapped estimator (prefit)", protects_end_to_end=_PROTECTS_END_TO_END,
        )

    @staticmethod
    def _solve_maps(
        pmfs: np.ndarray, weights: np.ndarray, k: int, width: float, alpha: float
    ) -> tuple[BarycenterSolution, float, sparse.csr_array]:
        """Lines 10-12 on private PMFs and weights; returns (solution, objective, sparse transport)."""
        total = float(weights.sum())
        # The LP's solution is invariant to scaling the weights and to affine maps of the grid:
        # solve with normalized weights (equal ones if every private weight is 0) on the unit grid
        # (j - 1/2)/k, for numerical stability whatever the bounds and the noise, and report the
        # objective in the original units.
        lp_weights = weights / total if total > 0 else np.full(weights.size, 1.0 / weights.size)
        unit_grid = (np.arange(k) + 0.5) / k
        solution = solve_barycenter_lp(pmfs, lp_weights, unit_grid, alpha)  # line 10
        objective = solution.objective * total * width**2 if total > 0 else 0.0
        # line 12: g_a(v_j) = v_l with probability pi_a(j, l) / p_a(j), or v_j when p_a(j) = 0
        n_rows = weights.size * k
        rows = solution.coupling_group * k + solution.coupling_source
        row_mass = np.bincount(rows, weights=solution.coupling_mass, minlength=n_rows)
        empty = np.flatnonzero(row_mass <= 0)
        all_rows = np.concatenate([rows, empty])
        columns = np.concatenate([solution.coupling_target, empty % k])
        values = np.concatenate([solution.coupling_mass / row_mass[rows], np.ones(empty.size)])
        order = np.lexsort((columns, all_rows))
        indptr = np.concatenate([[0], np.cumsum(np.bincount(all_rows, minlength=n_rows))])
        transport = sparse.csr_array((values[order], columns[order], indptr), shape=(n_rows, k))
        return solution, objective, transport

    @staticmethod
    def _solution_attributes(solved: tuple[BarycenterSolution, float, sparse.csr_array], alpha: float) -> dict[str, Any]:
        """The fitted attributes of one solve of lines 10-12 (set by ``fit`` and :meth:`refit_alpha`)."""
        solution, objective, transport = solved
        return {
            "alpha_": alpha,
            "barycenter_": solution.barycenter,
            "targets_": solution.targets,
            "sparse_couplings_": solution.sparse_couplings(),
            "objective_": objective,
            "sparse_transport_": transport,
        }

    couplings_ = _dense_view("couplings_", "optimal couplings ``couplings_[a, j, l] = pi_a(j, l)``")
    transport_ = _dense_view("transport_", "maps ``transport_[a, j, l] = P(g_a(v_j) = v_l)``")

    def refit_alpha(self, alpha: float) -> FairRegressionPostProcessor:
        """Re-solve for another ``alpha`` from the same private statistics (no privacy cost).

        Steps 2-3 of Algorithm 1 only post-process the private PMFs and weights, so sweeping
        ``alpha`` this way spends ``epsilon`` once in total; ``budget`` is not charged.  Changes
        the fitted maps and the ``alpha`` parameter in place.

        Parameters
        ----------
        alpha : float
            New statistical-parity tolerance, in ``[0, 1]``.

        Returns
        -------
        FairRegressionPostProcessor
            The post-processor (``self``), with its maps re-solved for ``alpha``.

        Raises
        ------
        NotFittedError
            Before ``fit``.
        ValueError, TypeError
            If ``alpha`` is not a number in ``[0, 1]``.
        """
        check_is_fitted(self, "pmfs_")
        value = check_alpha(alpha)
        lo, hi = self.bounds_
        solved = self._solve_maps(self.pmfs_, self.group_weights_, self.grid_.size, hi - lo, value)
        self.alpha = alpha
        self._set_fitted(self._solution_attributes(solved, value))
        return self

    def predict(self, X: Any, *, sensitive_features: Any = None, random_state: Any = None) -> np.ndarray:
        """Randomized fair predictions ``g_a(h(f(x)))`` (Algorithm 1, line 13).

        Parameters
        ----------
        X : array-like
            Features for the regressor (or its outputs when ``estimator=None``).
        sensitive_features : array-like of shape (n_samples,) or None, default None
            Group of every row (one of ``groups_``); may be omitted when one group was declared.
        random_state : None, int, numpy Generator or NoiseSource, default None
            Randomness of the maps.  ``None``: the estimator's policy (secure randomness, or a
            generator derived from the constructor's seed at ``fit``: reproducible predictions).

        Returns
        -------
        ndarray of shape (n_samples,)
            Post-processed predictions, each a point of ``grid_``.

        Raises
        ------
        NotFittedError
            Before ``fit``.
        ValueError, TypeError
            On invalid input or a group outside ``groups_`` (the message names the argument).
        """
        check_is_fitted(self, "sparse_transport_")
        outputs = _predict_outputs(self.estimator_, X, type(self).__name__)
        index = rows_of_fitted_groups(self.groups_, sensitive_features, outputs.size)
        noise = prediction_noise(random_state, self._predict_seed_)
        lo, hi = self.bounds_
        k = self.grid_.size
        rows = index * k + _bin_index(outputs, lo, hi, k)
        # line 13: draw g_a(v_j) from row a*k + j of the sparse row-stochastic map (inverse CDF)
        transport = self.sparse_transport_
        start, end = transport.indptr[rows], transport.indptr[rows + 1]
        cumulative = np.cumsum(transport.data)
        base = np.where(start > 0, cumulative[np.maximum(start - 1, 0)], 0.0)
        level = base + noise.uniform(outputs.size) * (cumulative[end - 1] - base)
        position = np.clip(np.searchsorted(cumulative, level, side="right"), start, end - 1)
        return self.grid_[transport.indices[position]]


