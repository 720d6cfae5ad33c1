"""Attribute-blind private fair post-processing of a regressor under statistical parity.

:class:`BlindFairRegressionPostProcessor` is the extension that Section 5 of Xian, Li, Kamath & Zhao (ICML 2024)
names and leaves open: the sensitive attribute is available for training (privately) but not when predicting.
It reuses the attribute-aware :class:`~dpfair.regression.FairRegressionPostProcessor`'s pieces (the declared
bounds and bins of Algorithm 1, line 2; the Laplace histogram of line 4 with its L1 sensitivity ``2/n``; the
L-infinity isotonic CDF repair of lines 7-9; the release template) and replaces the group of a row by the cell
of a group-membership model's probabilities ``g(x) ~ P(A | x)``, as Xian, Yin & Zhao (ICML 2023) do for
classification.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from sklearn.base import BaseEstimator, MetaEstimatorMixin, RegressorMixin
from sklearn.utils.validation import check_is_fitted

from dpfair._estimator import CloneLineageMixin, check_bool, prediction_noise, warn_non_private, wrapped_tags
from dpfair._validation import check_allocation, check_bounds, check_int
from dpfair._wrapped_fit import check_shared_budgets, check_wrapped_estimator, post_processor_fit_charges
from dpfair.base import PrivacyParameters, PrivateEstimator, ValidatedData, ValidatedOptions
from dpfair.privacy.noise import NoiseSource
from dpfair.regression._attribute_release import (
    attribute_privacy_spent,
    check_protects,
    entry_noise_scale,
    relation_of,
)
from dpfair.regression._blind_inputs import (
    _check_beta,
    _check_bin_values,
    _check_noise_multiple,
    _feature_attributes,
    _membership_probabilities,
    _outputs_and_membership_in,
)
from dpfair.regression._blind_lp import (
    max_block_sum_bound,
    max_partial_sum_bound,
    membership_cell_index,
    n_membership_cells,
    pool_noisy_cells,
    solve_blind_lp,
)
from dpfair.regression._blind_lp import noise_margin as released_noise_margin
from dpfair.regression._lp import check_alpha
from dpfair.regression._wrapped import _NEIGHBOURING, WRAPPED_REGRESSOR, _predict_outputs
from dpfair.regression.postprocessing import (
    _MAX_WIDTH,
    _bin_index,
    _declared_groups,
    _histogram_privacy_spent,
    _laplace_histogram,
    _outputs_and_bounds,
    _private_pmfs,
    _program_table,
    _rows_and_groups,
    _warn_clipped,
)

# the aware post-processor's stages, whose columns here are the cells (score bin first, then membership cell)
from dpfair.regression.postprocessing import _Histogram as _CellHistogram
from dpfair.regression.postprocessing import _ReleasedHistogram as _ReleasedCells

__all__ = ["BlindFairRegressionPostProcessor"]

_PROTECTS_END_TO_END = (
    "every row (x, y, group): the private regressor's fit of (x, y) composed with the histogram of (group, binned "
    "regressor output, membership cell)"
)

#: Most (group, cell) entries of the released table accepted: beyond it the noise swamps every cell.
_MAX_TABLE_CELLS = 2_000_000

#: Most variables of the blind program (``n_cells * (n_bins - 1)``) accepted, refused before the charge.
_MAX_LP_VARIABLES = 5_000_000


@dataclass(frozen=True, eq=False)
class _BlindOptions(ValidatedOptions):
    """The blind post-processor's validated parameters that are not privacy parameters."""

    n_bins: int
    membership_bins: int
    pool_threshold: float
    noise_margin: float
    alpha: float
    beta: float
    bounds: tuple[float, float] | None
    bin_values: np.ndarray | None
    prefit: bool
    protects: str = "records"


@dataclass(frozen=True, eq=False, kw_only=True)
class _BlindData(ValidatedData):
    """Step 1's data: the rows (for a regressor fitted here), their outputs when known, and their membership."""

    X: Any
    y: Any
    outputs: np.ndarray | None
    membership: np.ndarray


class BlindFairRegressionPostProcessor(
    PrivateEstimator, CloneLineageMixin, MetaEstimatorMixin, RegressorMixin, BaseEstimator
):
    """Differentially private, attribute-blind fair post-processing of a regressor (statistical parity).

    ``fit`` uses each row's group privately; ``predict(X)`` takes **no** sensitive features: the fair output of a
    row is a randomized map of its *cell* ``c = (s, m)``, where ``s`` is the bin of the regressor's output ``f(x)``
    on the declared ``bounds`` (Algorithm 1, line 2, of Xian, Li, Kamath & Zhao 2024) and ``m`` the point of the
    public lattice ``{eta : membership_bins * eta integer, sum eta = 1}`` nearest (by largest remainders) to a
    group-membership model's probabilities ``g(x) ~ P(A | x)``.

    **The reading implemented.** Section 5 of the paper sketches the blind extension: estimate the joint
    distribution of the output and the predicted membership instead of that of the output and ``A``, and solve
    the LP with predicted membership.  Following Xian, Yin & Zhao (2023), the optimal blind predictor reads ``x``
    only through ``(f(x), P(A | x))``; we discretize that pair into cells and learn a map ``T(l | c)`` by the
    linear program of ``dpfair.regression._blind_lp``: minimise the squared deviation from the bin's point (its
    midpoint, or its declared ``bin_values`` entry) subject to ``max_a F_a(v_l) - min_a F_a(v_l) <= alpha`` at
    every grid point, where
    ``F_a(v_l) = sum_c P(c | A = a) T(<= l | c)`` is group ``a``'s output CDF.  The statistics are the joint
    table of (true group, cell): the groups' output distributions are computed with the rows' **true** groups
    (not with ``g``'s probabilities), so the fairness constraint holds whether or not ``g`` is calibrated; ``g``
    only decides how little the map must move the outputs.  The population version through the membership
    model (group ``a``'s mass in a cell ``sum_i g_a(x_i)`` over its rows, or the cell's count times its
    membership cell's group shares, which needs one noisy column instead of one per group) is exact only when
    ``P(A | f(x), g(x)) = g(x)``; with the regression guide's histogram membership models it missed the held-out
    KS target on Law School and Communities even without noise (0.101-0.314 against ``alpha + 0.05`` = 0.10 /
    0.15 / 0.25; ``bench_regression.py --blind-variants``), so the table keeps the true groups.  With ``g``
    uninformative every cell mixes the groups as the population does and only near-constant maps are fair; with
    ``g`` exact (``P(A | x)`` a vertex) the cells separate the groups and the program is the attribute-aware one.

    **Steps** (lines of the paper's Algorithm 1 in brackets): (line 3) the exact table ``p(a, c)`` of
    (group, cell) over the declared groups, cells ordered score bin first, then membership cell; (line 4) the
    Laplace mechanism with scale ``b = 2 / (n epsilon)``; (new) within each score bin, the cells whose released
    total mass is below ``pool_threshold`` standard deviations of its noise (``b sqrt(2 G)``) pooled into one
    cell (``pool_noisy_cells`` in ``dpfair.regression._blind_lp``: otherwise the program buys fairness by moving
    nearly empty cells whose noise looks like a small group's mass, a fairness of the noise only); (line 6)
    private weights ``w_a = max(sum_c p~(a, c), 0)``; (lines 7-9) each group's distribution over the pooled cells
    by the L-infinity isotonic repair of its noisy partial sums along that order; (line 10) the program above on
    these, at ``alpha`` less ``margin_`` (``noise_margin`` standard deviations of the noise in the gap between
    the two lightest groups' CDFs, ``b sqrt(n_pooled) sqrt(1 / w_1^2 + 1 / w_2^2)``; 0 by default and at
    ``epsilon = inf``); (lines 12-13) predictions drawn from ``T(. | c)``, every cell mapped as its pool.  A pool
    with no private mass maps like the nearest score bin of its membership cell that has mass (its own point if
    none has).  Neither pooling nor the margin reads anything but the released table.

    **Differences from the attribute-aware algorithm.** The aware LP transports each group separately to a
    KS ball around a barycenter (closed form); here one map serves every group in a cell, so the program
    couples the groups through the cells and is solved by HiGHS (``n_cells x (n_bins - 1)`` variables).  The
    released table has ``n_groups x n_bins x n_membership_cells`` entries instead of ``n_groups x n_bins``:
    more noise per group, the price of blindness beside the MSE one.  As for the aware post-processor,
    :meth:`refit_alpha` re-solves the program for another ``alpha`` from the private statistics, for free.

    **Privacy.** ``fit`` is ``(epsilon, 0)``-DP for each post-processing row's (regressor output, membership
    cell, group) under replace-one-row (``n`` public): the only use of the rows is the table, in which one
    replaced row moves ``1/n`` of mass between two entries (L1 sensitivity ``2/n``, the paper's Remark B.1);
    everything after the Laplace mechanism is post-processing.  ``bounds``, ``groups``, ``n_bins`` and
    ``membership_bins`` are declared, never read off the rows.  The two wrapped models are *not* covered: the
    regressor, as in the aware post-processor (``prefit=False`` with a private dpfair regressor composes its
    charge, with a non-private one the whole object has ``epsilon = inf``), and the membership model, always
    used as given: train it privately (for example :class:`dpfair.linear_model.DPLogisticRegression`, one
    versus the rest) with its own share of the budget, or on other rows; by composition the pipeline then
    spends the sum.

    **Only the attribute private** (``protects="attribute"``, the relation of Jagielski et al. 2019 that the
    classification post-processors use): features and labels are public, so every row's cell (its score bin and
    membership cell, functions of its public ``x`` through the released or public models) and every cell's total
    ``T(c)`` are public; changing one row's group moves ``1/n`` between two groups within its cell.  Two groups:
    group 1's column only, ``p(1, c) + Lap(1 / (n epsilon))`` (L1 sensitivity ``1/n``), group 0's ``T(c)`` less
    it; more groups: every entry plus ``Lap(2 / (n epsilon))`` (L1 sensitivity ``2/n``, two entries of one cell).
    Either is ``epsilon``-DP under ``"change_attribute"`` (proof in ``dpfair.regression._attribute_release``).
    Pooling, the repair and the program then read the table projected by least squares onto the public totals
    (each cell's entries summing to ``T(c)``; the identity with two groups), post-processing; the noise scale ``b``
    of the steps above is every entry's (``1 / (n epsilon)`` with two groups).  ``noisy_table_`` is the
    released, unprojected table.  The membership model stays as given: under this relation it may be trained on
    the public features, but a model of the group needs the private groups, so train it privately as before.

    **The fairness it guarantees** (``guaranteed_violation_``, from released quantities only). With probability
    ``>= 1 - beta`` over the noise, the KS distance between any two constrained groups' output distributions
    on the training rows (the map's randomness integrated out) is at most ``guaranteed_violation_``. Proof: let
    ``F^_a`` be group ``a``'s exact CDF over the ordered cells and ``F~_a`` the repaired one the program used.
    The isotonic repair does not move a sequence further (in sup norm) from any non-decreasing sequence than
    it was, so ``|F~_a - F^_a| <= |S~_a - F^_a|`` where ``S~_a = (P^_a + N_a) / w~_a`` are the noisy scaled
    partial sums; with ``w~_a = w^_a + N_a(end)`` this is ``|N_a(j) - F^_a(j) N_a(end)| / w~_a <=
    2 max_j |N_a(j)| / w~_a``, and ``max_j |N_a(j)| <= E`` for every group with probability ``1 - beta``
    (``max_partial_sum_bound`` in ``dpfair.regression._blind_lp``, Levy's inequality with a Chernoff bound, a
    union bound over groups).  With pooling (``pool_threshold > 0``) the order of the pooled cells depends on the
    noise, so a partial sum along it is a partial sum over whole score bins in the fixed order plus part of one
    bin: ``E`` is then ``max_partial_sum_bound`` plus ``max_block_sum_bound`` (the largest sum of one bin's
    ``M`` absolute noises), each at failure ``beta / (2 G)``.  Summation by parts then gives, at every grid point
    ``l``, ``|sum_c (p^_a(c) - p~_a(c)) T(<= l | c)| <= max_j |F^_a(j) - F~_a(j)| * V_l`` where ``V_l`` is the
    total variation of ``T(<= l | .)`` along the (pooled) cell order (released: the map), so the exact KS is at
    most ``alpha - margin_ + max_l V_l * max_{a != a'} (2E / w~_a + 2E / w~_a')``, capped at 1.  At
    ``epsilon = inf`` it is ``alpha`` (the exact program).  Under ``protects="attribute"`` the program reads the
    projected table ``x - D`` (``x`` released, ``D`` the projection's move, released): its partial sums err by the
    noise's partial sums less ``D``'s, so ``E`` gains ``max_j |D_a(j)|`` along the pooled order for group ``a``.
    A group whose private weight is 0 is left out of the constraints (its distribution is noise); the guarantee
    is then 1.

    **When it says something.** ``E`` is about ``4.8 sqrt(n_cells) * 2 / (n epsilon)`` (``n_cells`` = ``n_bins x
    M``, failure ``beta / G`` with ``beta = 0.05``, ``G = 4``), so the slack is about
    ``38 V sqrt(n_cells) / (n_min epsilon)`` with ``n_min`` the smallest group's rows and ``V`` the map's
    variation (at least 1 for any map that moves mass): it falls under 0.1 only when the smallest group has more
    than about ``380 sqrt(n_cells) / epsilon`` rows.  On Law School (about 300 rows in its smallest groups,
    ``n_cells = 360``, ``epsilon = 0.75``) that is 30 times too few, and a single noisy partial sum over the
    cells (standard deviation ``1.4 sqrt(n_cells) * 2 / (n epsilon)``, 72 rows' worth) is already a quarter of
    the smallest group's mass: no bound computed from this release can certify the KS there, so the guarantee
    is 1.  It is the noise of the table, not the looseness of the proof, that leaves it vacuous; the held-out KS
    measured in the regression guide is the evidence at those sizes.

    Parameters
    ----------
    estimator : regressor or None, default None
        The regressor to post-process.  ``None`` (with ``membership_estimator=None``) means ``X`` already holds,
        per row, the regressor's output followed by the membership probabilities, one column per declared group
        (one column, the output, when a single group is declared).
    membership_estimator : classifier or None, default None
        A fitted model of ``P(A | x)`` with ``predict_proba`` and ``classes_`` within the declared groups, used
        as given (``prefit`` does not apply to it).  Required with a regressor and several groups; not used with
        one group.
    epsilon : float, default 1.0
        Privacy parameter of the table (> 0; ``inf`` gives the non-private algorithm and a
        :class:`~dpfair.privacy.PrivacyLeakWarning`).
    n_bins : int, default 16
        Score bins ``k`` (also the output grid).
    membership_bins : int, default 2
        Resolution ``B`` of the membership lattice: ``C(B + G - 1, G - 1)`` cells for ``G`` groups (3 for two
        groups, 10 for four at ``B = 2``; 5 and 35 at ``B = 4``).  More cells separate the groups better and carry
        more noise: on Law School and Communities at ``epsilon = 1`` (a few hundred rows in the smallest groups)
        ``B = 2`` gave a held-out KS close to the aware post-processor's, ``B = 4`` one 0.05 to 0.1 above it
        (exploratory runs, 2 splits each, beside the regression guide's comparison).  On Law School with 36 score
        bins, ``B = 3`` lowered the excess MSE by 15-30% against ``B = 2`` (the same noise draws) and raised the
        held-out KS by 0.01-0.04 (5 splits x 2-3 seeded noises, four settings of the noise).
    pool_threshold : float, default 3.0
        Cells whose released total mass is below this many standard deviations of its noise are pooled within
        their score bin (``0``: no pooling; nothing is pooled at ``epsilon = inf``).  On Law School at
        ``epsilon = 1`` (12 bins x 10 membership cells, of which about 100 hold almost no row; 25 (split, noise)
        pairs, the program solved at ``alpha - 0.03``) pooling at 3 lowered the held-out KS from 0.119 / 0.147 /
        0.224 to 0.100 / 0.127 / 0.196 at ``alpha`` = 0.05 / 0.1 / 0.2 (the map's KS on its own rows 0.09 above
        the ``alpha`` it was solved at before, 0.08 after), the excess MSE rising from 1.56 / 1.43 / 1.19 to
        1.72 / 1.75 / 1.66 times the aware post-processor's: less fairness bought on noise.
    noise_margin : float, default 0.0
        The program is solved at ``max(0, alpha - margin_)`` with ``margin_`` this many standard deviations of
        the noise in the gap between the two lightest groups' CDFs (Steps above): room for the noise that the
        program still fits.  The regression guide's comparison uses 0.8 (about 0.03 on Law School and
        Communities at ``epsilon = 1``).
    alpha : float, default 0.0
        Statistical-parity tolerance: KS distance between the groups' output distributions, in ``[0, 1]``.
    beta : float, default 0.05
        Failure probability of ``guaranteed_violation_``, in (0, 1).
    bounds : (float, float) or None, default None
        Declared interval of the regressor's outputs (required with finite ``epsilon``); an output beyond it goes
        to the end bin with a warning, as in the aware post-processor.  Declare it as tight as public facts
        allow (for a linear regressor trained on other rows: its range over a declared box of the features):
        a bin no output reaches still carries ``n_groups x M`` noisy entries here (``n_groups`` for the aware
        post-processor).  On Law School, the ridge's range [2.5, 3.5] with 12 bins instead of [1, 4] with 36
        (the same width) lowered the blind excess MSE by a sixth to a fifth at the same held-out KS
        (the regression guide).
    bin_values : array-like of shape (n_bins,) or None, default None
        The output point of each score bin (``grid_``), declared: strictly increasing, within the declared
        ``bounds``.  ``None``: the midpoints (line 2).  The program's squared moves are read between these points,
        and with ``v_s = E[f(x) | bin s]`` its cost is the true one up to a constant (``E[(f(x) - v_l)^2 | s] =
        Var(f(x) | s) + (v_s - v_l)^2``): take each bin's mean of *public* scores, such as the regressor's outputs
        on the rows it was trained on (not on the post-processing rows, whose outputs the table protects).  In
        the regression guide that lowered the blind excess MSE by 1-4% at the same held-out KS (30 paired draws).
    groups : list or None, default None
        The declared groups, in order (required with finite ``epsilon``).
    prefit : bool, default True
        ``True``: ``estimator`` is fitted and used as is.  ``False``: a clone is fitted on ``(X, y)``.
    protects : {"records", "attribute"}, default "records"
        What ``epsilon`` protects.  ``"records"``: every post-processing row's output, membership cell and group
        (replace one row; ``Lap(2 / (n epsilon))`` per entry).  ``"attribute"``: only every row's group, its
        features and label public (change one row's attribute; the table released on its public cell totals,
        above): less noise for the same ``epsilon``, a weaker guarantee.
    budget : PrivacyBudget or None, default None
        Charged ``(epsilon, 0)`` once per ``fit`` (plus a private regressor's charge with ``prefit=False``).
    random_state : None, int, numpy Generator or NoiseSource, default None
        ``None``: secure noise and secure randomized predictions.  A seed: reproducible, *not hardened*.

    Attributes
    ----------
    estimator_ : regressor or None
        The regressor post-processed.
    membership_estimator_ : classifier or None
        The membership model (as given).
    groups_ : ndarray of shape (n_groups,)
        The declared groups.
    bounds_ : (float, float)
        The bounds of the outputs.
    grid_ : ndarray of shape (n_bins,)
        The output values: ``bin_values``, or the bin midpoints.
    n_membership_cells_ : int
        Number of lattice cells ``M``.
    noisy_table_ : ndarray of shape (n_groups, n_bins * M)
        The released table ``p~(a, c)``, cells ``c = s * M + m``.
    group_weights_ : ndarray of shape (n_groups,)
        Private group weights.
    cell_pmfs_ : ndarray of shape (n_groups, n_pooled)
        Each group's repaired distribution over the pooled cells (the program's input).
    pooled_cell_ : ndarray of shape (n_bins * M,)
        The pooled cell of every cell (``arange`` when nothing is pooled).
    transport_ : ndarray of shape (n_bins * M, n_bins)
        The map ``transport_[c, l] = P(output = grid_[l] | cell c)``.
    objective_ : float
        Optimal weighted squared deviation, in squared output units.
    alpha_ : float
        The ``alpha`` of the current map (the target; the program was solved at ``alpha_ - margin_``).
    margin_ : float
        What ``alpha`` was lowered by for the noise (``noise_margin``; 0 at ``epsilon = inf``).
    guaranteed_violation_ : float
        The KS bound above (with probability ``>= 1 - beta``; ``alpha`` at ``epsilon = inf``).
    n_features_in_ : int
        Number of features of ``X`` (when known).
    privacy_spent_ : dict
        ``{"epsilon", "delta", "protects", "neighbouring", "relation", "noise"}``.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> groups = rng.integers(0, 2, 400)
    >>> outputs = np.clip(rng.normal(0.4 + 0.2 * groups, 0.1), 0, 1)
    >>> membership = np.clip(0.5 + 0.3 * (2 * groups - 1) + rng.normal(0, 0.1, 400), 0, 1)
    >>> X = np.column_stack([outputs, 1 - membership, membership])
    >>> pp = BlindFairRegressionPostProcessor(epsilon=1.0, n_bins=8, alpha=0.1, bounds=(0, 1), groups=[0, 1],
    ...                                       random_state=0).fit(X, sensitive_features=groups)
    >>> pp.predict(X[:3]).shape
    (3,)
    """

    _privacy_parameters: ClassVar[dict[str, str]] = {
        "epsilon": "epsilon", "groups": "groups", "budget": "budget", "random_state": "random_state",
    }
    _results_hold_feature_attributes: ClassVar[bool] = True
    _privacy_protects: ClassVar[str] = (
        "the regressor output, membership cell and group of every post-processing row (labels are not used)"
    )
    _privacy_neighbouring: ClassVar[str] = _NEIGHBOURING

    def __init__(
        self,
        estimator: Any = None,
        membership_estimator: Any = None,
        *,
        epsilon: float = 1.0,
        n_bins: int = 16,
        membership_bins: int = 2,
        pool_threshold: float = 3.0,
        noise_margin: float = 0.0,
        alpha: float = 0.0,
        beta: float = 0.05,
        bounds: tuple[float, float] | None = None,
        bin_values: Any = None,
        groups: Any = None,
        prefit: bool = True,
        protects: str = "records",
        budget: Any = None,
        random_state: Any = None,
    ) -> None:
        self.estimator = estimator
        self.membership_estimator = membership_estimator
        self.epsilon = epsilon
        self.n_bins = n_bins
        self.membership_bins = membership_bins
        self.pool_threshold = pool_threshold
        self.noise_margin = noise_margin
        self.alpha = alpha
        self.beta = beta
        self.bounds = bounds
        self.bin_values = bin_values
        self.groups = groups
        self.prefit = prefit
        self.protects = protects
        self.budget = budget
        self.random_state = random_state

    def __sklearn_tags__(self):  # scikit-learn's tags, with the wrapped estimator's input support
        return wrapped_tags(self, super().__sklearn_tags__())

    def _dpfair_fit_charges(self) -> list[tuple[Any, float, float]]:
        """``[(budget, epsilon, delta)]`` of one ``fit``: the regressor's fit with ``prefit=False``, then the table."""
        return post_processor_fit_charges(self)

    def fit(self, X: Any, y: Any = None, *, sensitive_features: Any = None) -> BlindFairRegressionPostProcessor:
        """Learn the private blind map from unlabeled rows and their groups.

        Parameters
        ----------
        X : array-like
            Features for ``estimator`` and ``membership_estimator`` (or, with both ``None``, the outputs and the
            membership probabilities, see ``estimator``).
        y : array-like or None, default None
            Labels, used only to fit the regressor's clone with ``prefit=False``.
        sensitive_features : array-like of shape (n_samples,) or None, default None
            Group of every row (one of ``groups``); may be omitted with one declared group.

        Returns
        -------
        BlindFairRegressionPostProcessor
            The fitted post-processor (``self``).

        Raises
        ------
        ValueError, TypeError
            On an invalid argument (the message names it); nothing is charged.
        NotFittedError
            If ``prefit=True`` and ``estimator`` is not fitted.
        PrivacyBudgetExceededError
            If ``budget`` refuses the charge; nothing is changed.

        Warns
        -----
        PrivacyLeakWarning
            With ``epsilon = inf`` or a non-private regressor fitted here.
        UserWarning
            If some outputs fall outside ``bounds``, or a group's private weight is 0 after noise.
        """
        return self._set_fitted(self._release(X, y, sensitive_features=sensitive_features))

    # ---------------------------------------------------------------- the steps of the dpfair.base template
    @property
    def _privacy_label(self) -> str:
        return f"{type(self).__name__}.fit (Laplace cell histogram)"

    def _validate_params(self) -> _BlindOptions:
        n_bins = check_int(self.n_bins, "n_bins", minimum=1)
        bounds = None if self.bounds is None else check_bounds(self.bounds, "bounds", max_width=_MAX_WIDTH)
        return _BlindOptions(
            n_bins=n_bins,
            membership_bins=check_int(self.membership_bins, "membership_bins", minimum=1),
            pool_threshold=_check_noise_multiple(self.pool_threshold, "pool_threshold"),
            noise_margin=_check_noise_multiple(self.noise_margin, "noise_margin"),
            alpha=check_alpha(self.alpha),
            beta=_check_beta(self.beta),
            bounds=bounds,
            bin_values=_check_bin_values(self.bin_values, n_bins, bounds),
            prefit=check_bool(self.prefit, "prefit"),
            protects=check_protects(self.protects),
        )

    def _declared_relation(self) -> str:
        """``"change_attribute"`` under ``protects="attribute"``, else ``"replace"``."""
        return relation_of(self.protects)

    def _n_cells(self, options: _BlindOptions, n_groups: int) -> int:
        cells = options.n_bins * (1 if n_groups == 1 else n_membership_cells(n_groups, options.membership_bins))
        if n_groups * cells > _MAX_TABLE_CELLS:
            raise ValueError(
                f"n_bins={options.n_bins} and membership_bins={options.membership_bins} with {n_groups} groups give "
                f"{n_groups * cells:,} table entries, above {_MAX_TABLE_CELLS:,}: the noise would swamp every entry "
                "and the program would not fit in memory; lower n_bins or membership_bins."
            )
        if cells * (options.n_bins - 1) > _MAX_LP_VARIABLES:
            raise ValueError(
                f"n_bins={options.n_bins} and membership_bins={options.membership_bins} with {n_groups} groups give a "
                f"program of {cells * (options.n_bins - 1):,} variables, above {_MAX_LP_VARIABLES:,}; lower n_bins or "
                "membership_bins."
            )
        check_allocation(8 * 64 * cells * options.n_bins, subject=f"n_bins={options.n_bins}",
                         what="the blind program", fix="lower n_bins or membership_bins")
        return cells

    def _validate_data(
        self, params: PrivacyParameters, X: Any, y: Any = None, *, sensitive_features: Any = None
    ) -> _BlindData:
        """Declarations, the rows' groups, the wrapped models' checks and outputs (nothing is fitted)."""
        options = params.options
        declared = _declared_groups(params)
        if declared is not None:
            self._n_cells(options, declared.size)
        rows = _rows_and_groups(self, params, X, sensitive_features)
        n_rows = rows.n_rows
        groups = rows.groups if rows.groups is not None else np.empty(0, dtype=object)
        n_groups = groups.size
        if self.estimator is None and self.membership_estimator is not None:
            raise TypeError(
                "membership_estimator needs a regressor: pass estimator= too, or pass neither and give X as the "
                "regressor's outputs followed by the membership probabilities."
            )
        if self.estimator is None:
            outputs, membership = _outputs_and_membership_in(X, n_groups)
            return _BlindData(n_rows=outputs.size, sensitive_features=sensitive_features, groups=rows.groups,
                              group_index=rows.group_index, X=X, y=y, outputs=outputs, membership=membership)
        check_shared_budgets(self, options.prefit, kind="regressor")
        check_wrapped_estimator(WRAPPED_REGRESSOR, self.estimator, X, y, prefit=options.prefit,
                                owner=type(self).__name__)
        if n_groups > 1:
            if self.membership_estimator is None:
                raise TypeError(
                    "membership_estimator is required with several groups: a fitted classifier with predict_proba "
                    "(a model of P(A | x) trained privately or on other rows)."
                )
            membership = _membership_probabilities(self.membership_estimator, X, groups)
        else:
            membership = np.ones((n_rows, 1))
        outputs = _predict_outputs(self.estimator, X, type(self).__name__) if options.prefit else None
        return _BlindData(n_rows=n_rows, sensitive_features=sensitive_features, groups=rows.groups,
                          group_index=rows.group_index, X=X, y=y, outputs=outputs, membership=membership)

    def _warn_non_private(self, params: PrivacyParameters) -> None:
        read_off = ", and bounds read off the data)" if params.options.bounds is None else ")"
        warn_non_private(params.epsilon, "the fitted post-processor (cell histogram" + read_off, estimator=self)

    def _cells_of(self, outputs: np.ndarray, membership: np.ndarray, bounds: tuple[float, float], k: int,
                  membership_bins: int) -> np.ndarray:
        """Score-major cell index ``s * M + m`` of every row (line 2 for ``s``; the lattice for ``m``)."""
        lo, hi = bounds
        n_cells_m = 1 if membership.shape[1] == 1 else n_membership_cells(membership.shape[1], membership_bins)
        return _bin_index(outputs, lo, hi, k) * n_cells_m + membership_cell_index(membership, membership_bins)

    def _compute_statistics(self, params: PrivacyParameters, data: _BlindData) -> _CellHistogram:
        """The regressor's outputs (its fit first, with ``prefit=False``), then line 3: the exact (group, cell) table."""
        options = params.options
        k = options.n_bins
        estimator, outputs, (lo, hi) = _outputs_and_bounds(self, params, data)
        n_groups = data.groups.size
        n_cells = self._n_cells(options, n_groups)
        _warn_clipped(outputs, lo, hi)
        cells = self._cells_of(outputs, data.membership, (lo, hi), k, options.membership_bins)
        n = outputs.size
        joint = np.zeros((n_groups, n_cells))
        np.add.at(joint, (data.group_index, cells), 1.0 / n)
        return _CellHistogram(estimator=estimator, bounds=(lo, hi), joint=joint, n_rows=n)

    def _draw_noise(self, params: PrivacyParameters, statistics: _CellHistogram, noise: NoiseSource) -> _ReleasedCells:
        """Line 4: the Laplace mechanism on the (group, cell) table, L1 sensitivity 2/n (on public totals under the
        attribute relation: ``dpfair.regression._attribute_release``)."""
        return _laplace_histogram(statistics, params.epsilon, noise, params.options.protects)

    def _solve(self, params: PrivacyParameters, noisy: _ReleasedCells, data: _BlindData) -> dict[str, Any]:
        """Lines 6-12 on the released table (post-processing)."""
        histogram = noisy.histogram
        options = params.options
        k, declared, (lo, hi) = options.n_bins, data.groups, noisy.bounds
        n_cells = histogram.shape[1]
        # every released entry's Laplace scale (1/(n eps) for two groups on public totals, else 2/(n eps))
        noise_scale = entry_noise_scale(params.epsilon, noisy.n_rows, declared.size, options.protects)
        table = _program_table(noisy)  # projected onto the public cell totals under the attribute relation
        # cells at the noise level pooled within their score bin (_blind_lp module docstring): released data only
        threshold = options.pool_threshold * noise_scale * math.sqrt(2.0 * declared.size)
        pooled_of, representative = pool_noisy_cells(table, k, threshold)
        pooled = np.zeros((table.shape[0], representative.size))
        np.add.at(pooled.T, pooled_of, table.T)
        # the projection's move along the pooled order (released): the guarantee adds it to the noise's partial sums
        moved = np.zeros_like(pooled)
        np.add.at(moved.T, pooled_of, (histogram - table).T)
        shift = np.abs(np.cumsum(moved, axis=1)).max(axis=1) if moved.size else np.zeros(table.shape[0])
        weights, cell_pmfs = _private_pmfs(pooled, declared, "they are left out of the fairness constraints")
        estimator = noisy.estimator
        if options.bin_values is None:  # line 2's midpoints; the program on the unit grid, its objective rescaled
            grid, unit_grid = lo + (np.arange(k) + 0.5) * (hi - lo) / k, (np.arange(k) + 0.5) / k
        else:  # declared points (public), within the declared bounds
            grid, unit_grid = options.bin_values, (options.bin_values - lo) / (hi - lo)
        return {
            "estimator_": estimator,
            "membership_estimator_": self.membership_estimator,
            "groups_": declared,
            "bounds_": (lo, hi),
            "grid_": grid,
            "n_membership_cells_": n_cells // k,
            "noisy_table_": histogram,
            "group_weights_": weights,
            "cell_pmfs_": cell_pmfs,
            "pooled_cell_": pooled_of,
            "_representative_": representative,
            "_pool_threshold_": options.pool_threshold,
            "_noise_multiple_": options.noise_margin,
            "_noise_scale_": noise_scale,
            "_projection_shift_": shift,
            "_beta_": options.beta,
            "_membership_bins_": options.membership_bins,
            "_unit_grid_": unit_grid,
            **self._solution_attributes(cell_pmfs, weights, (pooled_of, representative), unit_grid, hi - lo,
                                        options.alpha, options.beta, (noise_scale, options.pool_threshold > 0, shift),
                                        options.noise_margin),
            "_predict_seed_": noisy.predict_seed,
            **_feature_attributes(data.X, estimator),
        }

    @staticmethod
    def _solution_attributes(cell_pmfs: np.ndarray, weights: np.ndarray, pooling: tuple[np.ndarray, np.ndarray],
                             unit_grid: np.ndarray, width: float, alpha: float, beta: float,
                             noise: tuple[float, bool, np.ndarray], noise_multiple: float) -> dict[str, Any]:
        """Line 10 (the blind program on the pooled cells), the fill-in of massless cells, the released guarantee.

        ``unit_grid``: the output points as fractions of ``width`` above the lower bound (the program's squared
        moves are read on it; the objective is returned in output units).  ``pooling`` is ``(pooled_of,
        representative)`` (:func:`pool_noisy_cells`); ``noise`` is ``(scale, pooling enabled, shift)``, ``shift``
        per group the largest partial sum of the projection's move (0 without public totals); ``noise_multiple``
        the ``noise_margin`` parameter.  The map is returned on the cells (every cell the map of its pooled cell);
        the program is solved at ``max(0, alpha - margin)``.
        """
        n_groups, k = cell_pmfs.shape[0], unit_grid.size
        pooled_of, representative = pooling
        noise_scale, pooling_enabled, shift = noise
        n_cells = pooled_of.size
        n_m = n_cells // k
        total = float(weights.sum())
        # every private weight 0: equal weights (the cell distributions are then uniform noise)
        lp_weights = weights / total if total > 0 else np.full(n_groups, 1.0 / n_groups)
        margin = released_noise_margin(noise_multiple, noise_scale, cell_pmfs.shape[1], weights)
        solved_alpha = max(0.0, alpha - margin)
        pooled_transport, objective = solve_blind_lp(cell_pmfs, lp_weights, representative // n_m, unit_grid,
                                                     solved_alpha)
        # a massless pooled cell maps like the nearest score bin of its representative's membership cell with mass
        pooled_mass = lp_weights @ cell_pmfs
        has_mass = (pooled_mass[pooled_of] > 0).reshape(k, n_m)
        for j in np.flatnonzero(pooled_mass <= 0):
            s, m = divmod(int(representative[j]), n_m)
            bins_with_mass = np.flatnonzero(has_mass[:, m])
            if bins_with_mass.size:
                nearest = bins_with_mass[np.argmin(np.abs(bins_with_mass - s))]
                pooled_transport[j] = pooled_transport[pooled_of[nearest * n_m + m]]
        transport = pooled_transport[pooled_of]
        # the guarantee (class docstring): alpha + max_l V_l * max_{a != a'} (2E / w_a + 2E / w_a')
        present = weights > 0
        if n_groups == 1:
            guarantee = 0.0
        elif not present.all():
            guarantee = 1.0
        elif noise_scale == 0.0:
            guarantee = alpha
        else:
            if pooling_enabled:  # partial sums along a data-dependent pooled order: a bin prefix plus one bin's |noise|
                bound = (max_partial_sum_bound(n_cells, noise_scale, beta / (2 * n_groups))
                         + max_block_sum_bound(n_m, k, noise_scale, beta / (2 * n_groups)))
            else:
                bound = max_partial_sum_bound(n_cells, noise_scale, beta / n_groups)
            slack = np.sort(2.0 * (bound + shift) / weights)[::-1]
            cdf = np.cumsum(pooled_transport, axis=1)[:, :-1]  # T(<= l | c) along the pooled cell order
            variation = (float(np.abs(np.diff(cdf, axis=0)).sum(axis=0).max()) if cdf.size and cdf.shape[0] > 1
                         else 0.0)
            guarantee = min(1.0, solved_alpha + variation * float(slack[0] + slack[1]))
        return {
            "alpha_": alpha,
            "margin_": margin,
            "transport_": transport,
            "objective_": objective * (total if total > 0 else 0.0) * width**2,
            "guaranteed_violation_": guarantee,
        }

    def _privacy_spent(self, params: PrivacyParameters, results: dict[str, Any]) -> dict[str, Any]:
        """The whole fitted object's guarantee: composed with a private regressor fitted here on the same rows."""
        if params.options.protects == "attribute":
            return attribute_privacy_spent(params.epsilon, "cell histogram", membership=(
                "; the membership model is not covered: public or trained on other rows, or its own epsilon (trained "
                "privately on these rows' groups) adds to this one"))
        return _histogram_privacy_spent(
            params.epsilon, results["estimator_"], prefit=params.options.prefit, protects=self._privacy_protects,
            released="cell histogram", wrapped="the wrapped regressor (prefit) and the membership model",
            protects_end_to_end=_PROTECTS_END_TO_END,
        )

    def refit_alpha(self, alpha: float) -> BlindFairRegressionPostProcessor:
        """Re-solve the blind program for another ``alpha`` from the same private statistics (no privacy cost).

        Parameters
        ----------
        alpha : float
            New statistical-parity tolerance, in ``[0, 1]``.

        Returns
        -------
        BlindFairRegressionPostProcessor
            ``self``, with the map, ``objective_`` and ``guaranteed_violation_`` re-solved.

        Raises
        ------
        NotFittedError
            Before ``fit``.
        ValueError, TypeError
            If ``alpha`` is not a number in ``[0, 1]``.
        """
        check_is_fitted(self, "cell_pmfs_")
        value = check_alpha(alpha)
        lo, hi = self.bounds_
        pooling = (self.pooled_cell_, self._representative_)
        solved = self._solution_attributes(self.cell_pmfs_, self.group_weights_, pooling,
                                           self._unit_grid_, hi - lo, value, self._beta_,
                                           (self._noise_scale_, self._pool_threshold_ > 0, self._projection_shift_),
                                           self._noise_multiple_)
        self.alpha = alpha
        self._set_fitted(solved)
        return self

    def _cells_for_prediction(self, X: Any) -> np.ndarray:
        n_groups = self.groups_.size
        if self.estimator_ is None:
            outputs, membership = _outputs_and_membership_in(X, n_groups)
        else:
            outputs = _predict_outputs(self.estimator_, X, type(self).__name__)
            membership = (_membership_probabilities(self.membership_estimator_, X, self.groups_) if n_groups > 1
                          else np.ones((outputs.size, 1)))
        return self._cells_of(outputs, membership, self.bounds_, self.grid_.size, self._membership_bins_)

    def predict(self, X: Any, *, random_state: Any = None) -> np.ndarray:
        """Randomized fair predictions from ``(f(x), g(x))`` only: no sensitive features.

        Parameters
        ----------
        X : array-like
            Features (or the outputs and membership probabilities, as in :meth:`fit`).
        random_state : None, int, numpy Generator or NoiseSource, default None
            Randomness of the map (``None``: the estimator's policy, as in the aware post-processor).

        Returns
        -------
        ndarray of shape (n_samples,)
            Post-processed predictions, each a point of ``grid_``.

        Raises
        ------
        NotFittedError
            Before ``fit``.
        ValueError, TypeError
            On invalid input.
        """
        check_is_fitted(self, "transport_")
        cells = self._cells_for_prediction(X)
        noise = prediction_noise(random_state, self._predict_seed_)
        cumulative = np.cumsum(self.transport_, axis=1)
        rows = cumulative[cells]
        level = noise.uniform(cells.size) * rows[:, -1]
        choice = (rows <= level[:, None]).sum(axis=1)
        return self.grid_[np.minimum(choice, self.grid_.size - 1)]

    def output_distribution(self, X: Any) -> np.ndarray:
        """The exact distribution of every row's randomized prediction over ``grid_`` (no sampling).

        Parameters
        ----------
        X : array-like
            As for :meth:`predict`.

        Returns
        -------
        ndarray of shape (n_samples, n_bins)
            Row ``i`` is ``P(predict(X)[i] = grid_[l])``.

        Raises
        ------
        NotFittedError
            Before ``fit``.
        """
        check_is_fitted(self, "transport_")
        return self.transport_[self._cells_for_prediction(X)]
