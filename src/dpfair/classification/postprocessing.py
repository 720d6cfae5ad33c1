"""Differentially private equalized-odds post-processing (Jagielski et al. 2019, Algorithm 1).

:class:`DPEqualizedOddsPostProcessor` is the *DP-postprocessing* algorithm of Section 3 of
Jagielski, Kearns, Mao, Oprea, Roth, Sharifi-Malvajerdi and Ullman, "Differentially Private Fair
Learning" (ICML 2019): the post-processing of Hardt, Price and Srebro (2016) run on a Laplace-noised
table of joint frequencies ``q~(y_hat, a, y)`` and the slack-widened linear program LP~ (1).

Privacy model (the paper's, Section 2.3): the sensitive attribute ``A`` of every training row is
protected; the features ``X`` and labels ``y`` are public.  Neighbouring datasets differ in one
row's ``A``.  The randomness policy is the regression post-processors' (see
:mod:`dpfair.regression.postprocessing`): ``random_state=None`` draws secure noise and secure
prediction randomness, a seed gives reproducible, *not hardened* randomness.
"""

from __future__ import annotations

import math
import warnings
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, ClassifierMixin, MetaEstimatorMixin
from sklearn.utils.validation import _num_samples, check_is_fitted, column_or_1d

from dpfair._estimator import CloneLineageMixin, fit_charges, refuse_raw_values, warn_non_private
from dpfair._estimator import check_bool as _check_bool
from dpfair._estimator import predict_seed as _predict_seed
from dpfair._estimator import prediction_noise as _prediction_noise
from dpfair._estimator import rows_of_fitted_groups as _rows_of_fitted_groups
from dpfair._estimator import wrapped_tags as _wrapped_tags
from dpfair._validation import check_nonnegative_finite, check_open_unit
from dpfair._warnings import find_stack_level
from dpfair._wrapped_fit import (
    SensitiveScoreMixin,
    WrappedEstimator,
    check_shared_budgets,
    check_wrapped_estimator,
    fit_wrapped_estimator,
    post_processor_fit_charges,
    wrapped_feature_attributes,
    wrapped_privacy_spent,
)
from dpfair.base import PrivacyParameters, PrivateEstimator, ValidatedData
from dpfair.classification._frequency_table import joint_frequencies, valid_frequencies
from dpfair.classification._group_evidence import (
    EmptyGroupWarning,
    VacuousConstraintWarning,
    warn_empty_groups,
)
from dpfair.classification._postprocessing_constant import constant_fallback, warn_fallback, whole_row_split
from dpfair.classification._postprocessing_guarantee import (
    FairnessSlackWarning,
    base_scores,
    guaranteed_violation,
    resolve_score_bins,
    score_bins_of,
    slack_matters,
)
from dpfair.classification._postprocessing_labels import _classes, _label_array
from dpfair.classification._postprocessing_lp import (
    _HIGHS_INF,
    _empty_groups,
    _warn_vacuous,
    best_constant_classifier,
    lp_slack,
    noisy_frequencies,
    solve_lp,
)
from dpfair.classification._postprocessing_mix import check_constant_mix, mixed_with_constant
from dpfair.classification._postprocessing_score_lp import pooled_for_empty, solve_score_lp
from dpfair.classification._postprocessing_stages import (
    EqualizedOddsData,
    EqualizedOddsOptions,
    FrequencyTable,
    ReleasedTable,
)
from dpfair.classification._postprocessing_table import (
    _anchor_order,
    _score_bin_slack,
    check_public_totals,
    projected_to_totals,
)
from dpfair.classification.blind_table import released_positive_count
from dpfair.privacy.noise import NoiseSource
from dpfair.privacy.relations import CHANGE_ATTRIBUTE, REPLACE

__all__ = ["DPEqualizedOddsPostProcessor", "EmptyGroupWarning", "FairnessSlackWarning", "VacuousConstraintWarning"]

CONSTRAINTS = ("equalized_odds", "true_positive_rate_parity", "false_positive_rate_parity")
#: The labels whose rates each constraint family equalizes (0: false-positive, 1: true-positive rate).
_CONSTRAINED_LABELS = {"equalized_odds": (0, 1), "true_positive_rate_parity": (1,), "false_positive_rate_parity": (0,)}

#: Largest Laplace scale ``2 / (m epsilon)`` accepted: beyond it the table carries no information.
_MAX_NOISE_SCALE = 1e100

_PROTECTS = (
    "the sensitive attribute A (group) of every training row; X and y are public, so a base classifier "
    "trained on (X, y) only does not weaken the guarantee"
)
_NEIGHBOURING = "change one row's sensitive attribute A (X, y and the number of rows m are public)"
_PROTECTS_END_TO_END = (
    "every training row (X, y, A): the private base classifier's fit of (X, y) composed with the noisy table of "
    "(base prediction or score bin, A, y)"
)
_NEIGHBOURING_END_TO_END = "replace one training row (X, y, A) (the number of rows m is public)"


# ---------------------------------------------------------------------------- helpers
def _check_constraints(constraints: Any) -> str:
    if not isinstance(constraints, str) or constraints not in CONSTRAINTS:
        raise ValueError(f"constraints must be one of {list(CONSTRAINTS)}, got {constraints!r}.")
    return constraints


#: How the post-processor uses its base classifier (dpfair._wrapped_fit).  X and y are public (Section 2.3), so a
#: clone trained on them non-privately does not weaken the guarantee: no leak warning.
_BASE_CLASSIFIER = WrappedEstimator(
    kind="classifier",
    not_fitted=(
        "estimator is not fitted but prefit=True (the default; before dpfair 0.3 it was False): fit it first, or "
        "pass prefit=False to let {owner} fit a clone of it on (X, y) (a private one, e.g. "
        "dpfair.linear_model.DPLogisticRegression, keeps the whole pipeline private)."
    ),
)


def _refuse_raw_features(exc: BaseException, X: Any, owner: str) -> None:
    """After the base classifier refused ``X``: strings and NaN get dpfair's message (the column and the fix).

    The post-processor passes ``X`` to its base classifier as it is (a pipeline with
    :class:`~dpfair.preprocessing.DeclaredOneHotEncoder` takes strings), so ``X`` is checked only once the base
    has refused it: scikit-learn's message ("could not convert string to float: '<the value>'") prints a private
    value and advises an imputer that reads private statistics.
    """
    refuse_raw_values(exc, X, owner=f"{owner}'s estimator")


def _base_predictions(estimator: Any, X: Any, classes: np.ndarray) -> np.ndarray:
    """The base classifier's predictions on ``X`` as 0/1 codes of ``classes`` (the second is 1)."""
    try:
        raw = estimator.predict(X)
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"X was refused by the estimator's predict ({exc}); pass the features it was fitted on.") from None
    fix = f"Wrap a binary classifier whose predict returns the labels of y, {classes.tolist()}."
    arr = _label_array(raw, "the estimator's predictions", fix)
    index = pd.Index(classes).get_indexer(pd.Index(arr))
    if (index < 0).any():
        raise ValueError(f"the estimator's predictions hold labels outside classes_ {classes.tolist()}. {fix}")
    return index.astype(np.int64)


def _base_cells(estimator: Any, X: Any, classes: np.ndarray, n_bins: int | None) -> np.ndarray:
    """The row's cell of the table: the base prediction (``n_bins=None``) or its probability's public bin."""
    try:
        if n_bins is None:
            return _base_predictions(estimator, X, classes)
        return score_bins_of(base_scores(estimator, X, classes), n_bins)
    except (TypeError, ValueError) as exc:
        _refuse_raw_features(exc, X, "DPEqualizedOddsPostProcessor")  # strings, NaN: dpfair's message, no private value
        raise


# The pieces the attribute-blind post-processor (dpfair.classification.blind_postprocessing) shares.
def _two_labels(X: Any, y: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """``y`` of a fit: as an array, its two classes, every row's 0/1 code, and the number of rows of ``X``.

    Raises ``ValueError`` for complex labels, not exactly two classes, or not one label per row of ``X``.
    """
    y_array = np.asarray(y)
    if np.iscomplexobj(y_array):
        raise ValueError("Complex data not supported: y must hold two class labels.")
    if y_array.ndim == 2 and y_array.shape[1] == 1:
        y_array = column_or_1d(y_array, warn=True)
    classes, labels = _classes(y_array, "y", "Pass two class labels, e.g. 0 and 1.")
    m = _num_samples(X)
    if labels.shape[0] != m:
        raise ValueError(f"y must have one label per row of X ({m} rows), got {labels.shape[0]}.")
    return y_array, classes, labels, m


def _base_target(y: np.ndarray, classes: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """The labels the base classifier is fitted on: as given, or their 0/1 codes when the classes are 0 and 1."""
    return y if classes[0] != 0 or classes[1] != 1 else labels


def _relation_of(post_processor: Any) -> str:
    """``"replace"`` when a private base model is fitted here (end to end), else ``"change_attribute"``.

    Given the base model's (already released) predictions, replacing a whole row moves it from one cell of
    the (prediction, group, label) table to another, as changing its group does: the table's sensitivity
    holds under replacement.  With a base model trained non-privately on the same rows (or given prefit),
    ``X`` and ``y`` are treated as public and only the change of one row's group is protected.
    """
    private_fit_here = post_processor.prefit is False and post_processor.estimator is not None and any(
        not math.isinf(epsilon) for _, epsilon, _ in fit_charges(post_processor.estimator))
    return REPLACE if private_fit_here else CHANGE_ATTRIBUTE


def _randomized_labels(classes: np.ndarray, positive: np.ndarray, random_state: Any,
                       predict_seed: list[int] | None) -> np.ndarray:
    """``classes[1]`` with probability ``positive`` (per row), else ``classes[0]``: one uniform draw per row.

    The draws come from ``random_state`` if given, else from the fit's ``predict_seed`` (a seeded fit), else from
    secure randomness (:func:`dpfair._estimator.prediction_noise`).
    """
    noise = _prediction_noise(random_state, predict_seed)
    uniforms = noise.uniform(positive.size) if positive.size else np.empty(0)
    return classes[(uniforms < positive).astype(np.int64)]


# ---------------------------------------------------------------------------- estimator
class DPEqualizedOddsPostProcessor(
    PrivateEstimator, SensitiveScoreMixin, CloneLineageMixin, MetaEstimatorMixin, ClassifierMixin, BaseEstimator
):
    """Differentially private equalized-odds post-processing (Jagielski et al. 2019, Algorithm 1).

    Derives from a binary base classifier ``Y_hat`` a randomized classifier ``Y_hat_p`` that predicts
    1 with probability ``p~*[y_hat, a]`` given ``Y_hat = y_hat`` and group ``A = a``: the solution of
    LP~ (1), which minimizes the noisy error subject to (approximate) equalized odds.

    **What it protects.** ``fit`` is ``(epsilon, 0)``-DP with respect to the sensitive attribute ``A``
    of every training row (the neighbouring datasets differ in one row's ``A``); ``X`` and ``y`` are
    public, as in the paper.  The only use of ``A`` is the table ``q_hat[y_hat, a, y]`` of joint
    frequencies, whose L1 sensitivity is ``2/m`` (Claim B.1); every cell gets ``Lap(2/(m epsilon))``
    noise (Algorithm 1, line 3) through :func:`dpfair.privacy.laplace_mechanism`, and everything
    after is post-processing.  The base classifier is trained on ``(X, y)`` only, never on ``A``
    (Algorithm 1, line 1), so fitting it inside ``fit`` (``prefit=False``) is *not* a leak under this
    privacy model.  ``predict`` needs each row's group: the predictions reveal the rows' groups to
    whoever sees them, which is outside the training-data guarantee.

    **A private base classifier: one guarantee for the whole pipeline.** With ``prefit=False`` and a
    private dpfair base estimator (one that reports ``privacy_spent_``, such as
    :class:`dpfair.linear_model.DPLogisticRegression`), the base is released first and the table is
    computed given it; replacing one whole training row ``(x, y, a)`` moves ``1/m`` of mass between
    two cells, so the sensitivity is still ``2/m``.  By basic composition the fitted object is
    ``(eps_base + epsilon, delta_base)``-DP for every training row ``(X, y, A)``, and
    ``privacy_spent_`` says so.  With score bins the labels are then private too, and ``epsilon`` is split
    ``eps_t + eps_c``: the table gets ``Lap(2/(m eps_t))`` per cell and the number of positive labels (sensitivity
    1: replacing a row changes one label at most) ``Lap(1/eps_c)``, ``eps_c`` a function of the public ``m`` and
    ``epsilon`` (:func:`~dpfair.classification._postprocessing_constant.count_epsilon`); base, table and count
    compose to the request, charged once.  Give both the same ``budget``: ``fit`` checks that it can pay for
    both charges before fitting anything.  With ``prefit=True`` the base was trained elsewhere and
    ``privacy_spent_`` covers this object's own release only.

    **Labels.** ``y`` may hold any two labels (as in scikit-learn): ``classes_`` is the sorted pair and
    the second is the positive class (labels within {0, 1} give ``[0, 1]``).  The base classifier
    must predict the same labels.

    **Slack, small groups and failure.** Each constraint of LP~ (1) is widened by
    ``4 ln(4|A|/beta) / (min{q~_a y, q~_0 y} m epsilon)`` (``0`` is the anchor, see below), so that the non-private
    optimum stays feasible with probability ``1 - beta`` (Lemma B.2).  Once the table is released, ``fit`` cannot
    fail ("nothing can fail after the charge"): the LP is solved on the
    table clipped to valid frequencies (:func:`valid_frequencies`, post-processing; ``noisy_frequencies_``
    keeps the release itself), a declared group absent from the data or drowned by the noise (a noisy
    ``q~_ay <= 0``) gets the limit of the slack, a vacuous constraint, and if HiGHS reports no optimum
    the best constant classifier (equal rates in every group) is returned.  A
    :class:`VacuousConstraintWarning` names the declared groups whose constraints bind nothing (slack
    ``>= 1``) and the fallback; no message prints private values.  A group without evidence gets the LP's
    choice on its (noise-only) frequencies.

    **Never worse than the constant** (whole-row privacy with score bins).  The LP's objective is then read off
    the noisy table, whose label totals are noise-dominated on small data: on the fairness suite's 1,000-row task at
    ``epsilon = 0.5`` (whole records, 5 splits x 40 seeds) the 5-split median error exceeded the constant's + 0.005
    for 35 % (DPFairClassifier) / 23 % (this class on ``DPLogisticRegression``) of the seeds, 7 % / 5 % with what
    follows; at ``epsilon = 1`` 10 % / 7 % became 0 %, the median error .391 / .405 the constant's .441.  The fit is
    the constant the released count and the table's unclipped totals together say is the majority
    (:func:`~dpfair.classification.blind_table.released_constant_rule`) when the LP's rule is constant or its noisy
    error gain over that constant is within two standard deviations of the gain's noise plus a share of what that
    noise can add to a rule chosen on it (``OPTIMISM_FACTOR`` in ``dpfair.classification._postprocessing_constant``), with a
    :class:`~dpfair.classification.reductions.SmallBudgetWarning`; ``fallback_`` says so.  Post-processing of the
    releases; under the attribute relation (labels public), with ``score_bins=None`` or at ``epsilon = inf``
    nothing is released or changed.

    **The fairness it guarantees.** ``guaranteed_violation_`` bounds the fitted predictor's equalized-odds
    violation on its training rows (``max_{a != 0}`` of the constrained ``|R_a - R_0|``, exact table; ``0`` is the
    anchor), with
    probability ``>= 1 - beta`` over the noise, from released quantities only. Proof: for any ``p``, a rate's
    noisy minus exact value is ``sum_k (p_k - R_hat) e_k / q~_ay`` (``e`` the clipped table's error, at most the
    Laplace noise ``W`` cell by cell), so it is at most ``sum_k |W_kay| / q~_ay``; each such sum is
    ``Gamma(K, 2/(m epsilon))`` and the sums are independent, so all lie below the quantile ``E`` with
    probability ``1 - beta``; hence ``|R_a - R_0| <= |R~_a - R~_0| + E/q~_ay + E/q~_0y`` (the paper's Lemma B.2,
    parts 3-4, for ``K = 2``). A :class:`FairnessSlackWarning` says when the noise adds more than ``gamma`` and more than the
    sampling resolution of the rates (four standard errors of a rate difference on the released cell sizes), i.e. when
    it matters on data drawn like the training rows.

    **The anchor.** Every constraint (and, with score bins, the operating point and the guarantee) is written
    against one group, the *anchor* (the paper's group 0).  It is the group of largest *released* mass
    (``noisy_frequencies_`` summed over bins and labels; ties keep the first declared), not the first declared group:
    a small group declared first (alphabetically, say) made every constraint point at its noisy rates, widened every
    slack by its small mass, and the robust snap of the score bins never charged its noise.  The choice reads the
    released table only (post-processing: the privacy is unchanged); the LPs and the guarantee are solved on the table
    with the groups' columns permuted and the solution is permuted back, so ``groups_``, ``probabilities_`` and the
    predictions keep the declared order, and declaring the groups in another order gives the same rule per group on
    the same noise.  Jagielski et al. call "the choice of group 0 as an anchor [...] arbitrary and without loss of
    generality" (Section 2.1), and Lemma B.2's event (every cell within its bound at once) holds for any anchor, so the
    paper's Algorithm 1 (``score_bins=None``) gets it too with three groups or more; with two its LP and slack are
    symmetric in the anchor and the first declared group stays the anchor (``slack_fp_[0] = 0``), so the seeded
    reproductions (dpfair.experiments.classification, whose group 0 is Adult's women, the smaller group) keep their
    numbers bit for bit (letting the larger group anchor there changed no metric of 24 reproduction cells, but the
    last bit of a pinned ``objective_``).  Measured at ``epsilon = 1`` (5 splits x 4 seeds, base ``LogisticRegression``,
    held-out EO before -> after), score bins: the nine synthetic groups declared smallest first .42 -> .24 at the same
    error (.255); three groups of 2,000 / 2,000 / 40 rows with the 40 first, 40 paired draws, .125 -> .091 (at
    ``epsilon = 2`` .103 -> .071); Adult by race with Other (353 rows) first .152 -> .149 (paired standard error .009),
    error .166 -> .171; binary predictions: Law School by race (Asian, 897 rows, first) .214 -> .182 (s.e. .008), error
    .412 -> .419; Adult by race, Other first, .425 -> .424, error .158 -> .165; two groups with score bins: Adult by
    sex (women first) .018 -> .017, Communities (1,024 / 970 rows) .077 -> .079 (s.e. .0014).  Tasks whose first
    declared group is the largest (Adult by race, ACS, the nine groups as declared) are unchanged bit for bit.

    **Score bins** (``score_bins=K``, not in the paper; the default for a base model with a score). Hardt et
    al.'s derived predictor on a thresholded score: the base's probability of the positive class is cut at the
    public thresholds ``1/K, ..., (K-1)/K`` and the LP picks ``P(predict 1 | bin, group)``: the same table with
    ``K`` rows instead of 2, the same sensitivity ``2/m`` and charge.  Four post-processing rules
    (``dpfair.classification._postprocessing_score_lp``) make it hold up on rows it was not fitted on, where
    small groups' cells are as noisy as they are large: ``P(predict 1 | bin, group)`` is non-decreasing in the bin
    (a randomized threshold per group, as Hardt et al.'s derived predictor on a score and fairlearn's
    ``ThresholdOptimizer``); a group without evidence (see ``EmptyGroupWarning``) is given the pooled score
    distribution of the others; and the LP is first solved with each constraint widened by a quarter of the
    noise's standard deviation of the rate difference (``resolution_fp_`` / ``resolution_tp_``), which picks the operating
    point, after which every group is moved as close to that point as its own table allows (onto it when it can
    reach it and there is no noise), its distance charged the noise its rule picks up from its cells (a group of a
    dozen rows is given a flatter threshold near the point rather than one fitted to its noise: a change of the
    linear program only, so post-processing of the released table, which reads the public Laplace scale
    ``2/(m epsilon)``); last, among the thresholds with the same rates (hence the same error), each group gets the
    one the noise and the sampling move least.  The constant classifier is always feasible, and the guarantee is
    the observed noisy difference plus the noise's part.
    ``score_bins="auto"`` (the default) is ``K = 8`` when the base classifier
    has ``predict_proba`` or ``decision_function``, and the paper's binary predictions (``score_bins=None``)
    otherwise: decided from the estimator's public methods before any fit or charge, never from the data.
    On Adult with a private base model it gives held-out error 0.19-0.20 at an equalized-odds difference of
    0.02-0.03 where the paper's variant gives 0.24 / 0.04 (the user guide's table).  **The paper's exact
    Algorithm 1** is ``score_bins=None``.

    At ``epsilon = inf`` the slack is 0 and this is the post-processing of Hardt et al. (2016),
    the same optimum as fairlearn's ``ThresholdOptimizer(constraints="equalized_odds")`` on binary
    predictions (which searches a grid of false-positive rates).

    Parameters
    ----------
    estimator : classifier
        Binary base classifier whose ``predict`` returns the labels of ``y``.
    epsilon : float
        Privacy parameter (> 0; ``inf`` gives the non-private algorithm and a
        :class:`~dpfair.privacy.PrivacyLeakWarning`).
    gamma : float, default 0.0
        Fairness tolerance: allowed difference of each constrained rate between a group and the anchor, the
        group of largest released mass (finite, ``>= 0``).
    beta : float, default 0.05
        Confidence parameter of the slack, in (0, 1).
    constraints : {"equalized_odds", "true_positive_rate_parity", "false_positive_rate_parity"}, \
default "equalized_odds"
        Which rates are equalized: both, true-positive only, or false-positive only.
    groups : list or None, default None
        The declared set of groups, in order (the order of ``groups_`` and ``probabilities_``' columns; the
        anchor is chosen from the released table, not by the order).  Required with finite ``epsilon``.
        When it declares exactly one group, ``sensitive_features`` may be omitted and every row
        belongs to that group (no fairness constraint then applies).
    prefit : bool, default True
        ``True``: ``estimator`` is already fitted and used as is.  ``False``: fit ``clone(estimator)`` on
        ``(X, y)`` inside ``fit`` (stored as ``estimator_``).  The default is ``True`` for every dpfair
        post-processor (it was ``False`` here before dpfair 0.3; an unfitted estimator now raises
        ``NotFittedError`` saying to pass ``prefit=False``).
    budget : PrivacyBudget or None, default None
        Charged ``(epsilon, 0)`` once per ``fit``, after every argument is validated and just before
        the noise draw; a refused charge leaves the budget and any earlier fitted state unchanged.
        With ``prefit=False``, ``fit`` first checks that every budget can pay for both this charge and
        the base estimator's, so a too-small shared budget is refused before anything is fitted.
    random_state : None, int, numpy Generator or NoiseSource, default None
        ``None``: secure noise (OpenDP) and secure randomized predictions.  A seed: reproducible,
        *not hardened* noise and predictions (experiments and tests only).
    score_bins : "auto", int or None, default "auto"
        ``None``: the paper's Algorithm 1 on the base's binary predictions (LP~ (1), widened by its slack).
        An integer ``K`` in [2, 1000]: the score-bin variant above (the base needs ``predict_proba`` or
        ``decision_function``).  ``"auto"``: ``K = 8`` when the base has either method (``hasattr`` on the
        estimator as given, before any fit), else ``None``; ``score_bins_`` holds the choice.
    constant_mix : float, default 0.0
        A share ``lambda`` in ``[0, 1)``: the fitted rule becomes ``(1 - lambda) p + lambda c``, ``c`` the best
        constant classifier on the released table; every rate difference between groups, on any rows, and the
        advantage over the constant are multiplied by ``1 - lambda`` (post-processing, not in the paper; 0 leaves
        the fit unchanged; ``DPFairClassifier`` sets 0.12 below 2,000 rows, see ``_postprocessing_mix``).
    public_totals : bool, default False
        ``True``: the released table is projected onto its exact totals over the groups per (bin, label), a
        function of the public ``(X, y)`` (least squares: ``1 / n_groups`` of every cell's noise variance goes);
        post-processing, not in the paper; refused with a private base fitted here (whole-row privacy, labels
        private).  ``noisy_frequencies_`` keeps the release; ``_postprocessing_table`` has the figures.

    Attributes
    ----------
    estimator_ : classifier
        The base classifier ``Y_hat``.
    classes_ : ndarray of shape (2,)
        The two labels (``[0, 1]`` for labels within {0, 1}); the second is the positive class.
    groups_ : ndarray of shape (n_groups,)
        The declared groups (read off the data only with ``epsilon = inf`` and ``groups=None``).
    noisy_frequencies_ : ndarray of shape (2, n_groups, 2) or (K, n_groups, 2)
        The private table ``q~[y_hat, a, y]`` (Algorithm 1, line 4); ``K = score_bins_`` rows with score bins.
    slack_fp_, slack_tp_ : ndarray of shape (n_groups,)
        The slack of every group's false- and true-positive constraint (0 for the anchor): the paper's with binary
        predictions; with score bins 0, or 1e20 for a rate without evidence (unconstrained).
    resolution_fp_, resolution_tp_ : ndarray of shape (n_groups,)
        With score bins, the first LP's widening of every group's false- and true-positive constraint (a quarter of
        the noise's standard deviation of the rate difference, from the released table; 0 for the anchor, at
        ``epsilon = inf`` and with binary predictions), before every group is moved to the operating point.
    probabilities_ : ndarray of shape (2, n_groups) or (score_bins, n_groups)
        ``p~*[y_hat, a]``: probability of predicting 1 given base prediction (or score bin) and group.
    guaranteed_violation_ : float
        With probability ``>= 1 - beta`` over the noise, the fitted predictor's equalized-odds violation on
        its training rows is at most this (released; 0 with one group; at ``epsilon = inf`` the exact one).
    noise_slack_ : float
        The part of ``guaranteed_violation_`` due to the noise: the largest ``E / q~_ay + E / q~_0y``.
    score_bins_ : int or None
        The number of score bins of the fit (``"auto"`` resolved), or ``None`` for the paper's binary predictions.
    objective_ : float
        The noisy error ``err~`` of the solution (under the table clipped to valid frequencies).
    fallback_ : bool
        Whether the fit fell back to the released constant (whole-row privacy with score bins only).
    n_features_in_ : int
        Number of features of ``X`` (when the base classifier knows it).
    privacy_spent_ : dict
        ``{"epsilon", "delta", "protects", "neighbouring"}``: this object's release, plus the base
        estimator's ``privacy_spent_`` when it was fitted here (``prefit=False``) and is private.
    """

    _score_metric = "accuracy"  # SensitiveScoreMixin.score
    _privacy_parameters: ClassVar[dict[str, str]] = {
        "epsilon": "epsilon", "groups": "groups", "budget": "budget", "random_state": "random_state"
    }
    _results_hold_feature_attributes: ClassVar[bool] = True  # stale feature attributes go (dpfair.base)
    _privacy_protects = _PROTECTS
    _privacy_neighbouring = _NEIGHBOURING
    _privacy_relation = CHANGE_ATTRIBUTE

    def __init__(
        self, estimator: Any = None, *, epsilon: float = 1.0, gamma: float = 0.0, beta: float = 0.05,
        constraints: str = "equalized_odds", groups: Any = None, prefit: bool = True, budget: Any = None,
        random_state: Any = None, score_bins: int | str | None = "auto", constant_mix: float = 0.0,
        public_totals: bool = False,
    ) -> None:
        self.estimator = estimator
        self.epsilon = epsilon
        self.gamma = gamma
        self.beta = beta
        self.constraints = constraints
        self.score_bins = score_bins
        self.groups = groups
        self.prefit = prefit
        self.budget = budget
        self.random_state = random_state
        self.constant_mix = constant_mix
        self.public_totals = public_totals

    def __sklearn_tags__(self):  # scikit-learn's tags, with the wrapped estimator's input support
        tags = _wrapped_tags(self, super().__sklearn_tags__())
        tags.target_tags.required = True
        tags.classifier_tags.multi_class = False  # binary labels only (the paper's Y)
        tags.non_deterministic = True
        return tags

    def _dpfair_fit_charges(self) -> list[tuple[Any, float, float]]:
        """``[(budget, epsilon, delta)]`` of one ``fit``: the base's fit with ``prefit=False``, then this table."""
        return post_processor_fit_charges(self)

    def fit(self, X: Any, y: Any, *, sensitive_features: Any = None) -> DPEqualizedOddsPostProcessor:
        """Learn ``p~*`` from the private table of joint frequencies (Algorithm 1).

        Parameters
        ----------
        X : array-like
            Features for the base classifier (public).
        y : array-like of shape (n_samples,)
            Two class labels (public, unless the base estimator is private and fitted here).
        sensitive_features : array-like of shape (n_samples,) or None, default None
            Group of every row (private); may be omitted when ``groups`` declares one group.

        Returns
        -------
        DPEqualizedOddsPostProcessor
            The fitted post-processor (``self``).

        Raises
        ------
        ValueError
            On an invalid argument (the message names it), ``y`` without two labels, ``groups`` missing
            with finite ``epsilon``, or an undeclared group; always before the charge.
        TypeError
            If an argument has the wrong type.
        NotFittedError
            If ``prefit=True`` and ``estimator`` is not fitted.
        PrivacyBudgetExceededError
            If ``budget`` refuses the charge (or, with ``prefit=False``, cannot pay for the base estimator's
            charge too); nothing is changed.

        Warns
        -----
        PrivacyLeakWarning
            With ``epsilon = inf``.
        VacuousConstraintWarning
            When a declared group's constraint binds nothing (too little of the group in the noisy table,
            e.g. a group without rows), or when HiGHS found no optimum (the best constant classifier is returned).
        FairnessSlackWarning
            At a finite ``epsilon``, when the noise's part of ``guaranteed_violation_`` exceeds both ``gamma`` and the
            sampling resolution of a rate difference (:func:`~dpfair.classification._postprocessing_guarantee.slack_matters`).
        SmallBudgetWarning
            Under whole-row privacy with score bins, when the fit falls back to the released constant.
        EmptyGroupWarning
            When a declared group's released number of rows is indistinguishable from 0 (empty, or too small for the
            noise): a :class:`VacuousConstraintWarning` naming it specifically.
        """
        return self._set_fitted(self._release(X, y, sensitive_features=sensitive_features))

    # ------------------------------------------------------------------ the steps of dpfair.base's release template
    @property
    def _privacy_label(self) -> str:  # the ledger's label of the charge
        return f"{type(self).__name__}.fit (Laplace frequency table)"

    def _validate_params(self) -> EqualizedOddsOptions:
        return EqualizedOddsOptions(
            gamma=check_nonnegative_finite(self.gamma, "gamma"),
            beta=check_open_unit(self.beta, "beta"),  # the failure probability of the slack
            constraints=_check_constraints(self.constraints),
            prefit=_check_bool(self.prefit, "prefit"),
            score_bins=resolve_score_bins(self.score_bins, self.estimator),  # "auto": the estimator's API, no data
            constant_mix=check_constant_mix(self.constant_mix),
            public_totals=check_public_totals(self.public_totals, _relation_of(self) == REPLACE),  # y public only
        )

    def _validate_data(
        self, params: PrivacyParameters, X: Any, y: Any, *, sensitive_features: Any = None
    ) -> EqualizedOddsData:
        """The rows, their groups, then every check of the base classifier that needs no fit (nothing is fitted here)."""
        if y is None:
            raise ValueError(
                f"{type(self).__name__} requires y to be passed, but the target y is None: pass the two class labels."
            )
        if hasattr(X, "dtype") and np.iscomplexobj(X):
            raise ValueError("Complex data not supported: X must hold real numbers.")
        y_array, classes, labels, m = _two_labels(X, y)
        if m == 0:
            raise ValueError("X is empty; pass at least one row.")
        epsilon, _ = whole_row_split(_relation_of(self), params.options.score_bins, m, params.epsilon)  # the table's
        if not math.isinf(epsilon) and 2.0 / (m * epsilon) > _MAX_NOISE_SCALE:
            raise ValueError(
                f"epsilon={epsilon!r} is too small for the number of rows: the Laplace scale 2/(m*epsilon) exceeds "
                f"{_MAX_NOISE_SCALE:g}; the table would carry no information. Use a larger epsilon."
            )
        # the groups first (as the template would map them), then the base classifier's checks
        rows = self._resolve_declared_groups(params, ValidatedData(n_rows=m, sensitive_features=sensitive_features))
        options = params.options
        check_shared_budgets(self, options.prefit, kind="base estimator")  # before the base's fit (and its own charge)
        n_bins = options.score_bins
        if n_bins is not None and self.estimator is not None and not (
                hasattr(self.estimator, "predict_proba") or hasattr(self.estimator, "decision_function")):
            base_scores(self.estimator, None, classes)  # raises the error naming score_bins, before any fit or charge
        try:
            check_wrapped_estimator(_BASE_CLASSIFIER, self.estimator, X, _base_target(y_array, classes, labels),
                                    prefit=options.prefit, owner=type(self).__name__)
        except (TypeError, ValueError) as exc:
            _refuse_raw_features(exc, X, type(self).__name__)  # strings, NaN: dpfair's message, no private value
            raise
        return EqualizedOddsData(n_rows=m, sensitive_features=sensitive_features, groups=rows.groups,
                                 group_index=rows.group_index, X=X, y=y_array, classes=classes, labels=labels)

    def _warn_non_private(self, params: PrivacyParameters) -> None:
        warn_non_private(params.epsilon, "the fitted post-processor (exact frequency table)", estimator=self)

    def _compute_statistics(self, params: PrivacyParameters, data: EqualizedOddsData) -> FrequencyTable:
        """Algorithm 1, lines 1-2: the base classifier (fitted here with ``prefit=False``) and the exact table."""
        classes, m, n_bins = data.classes, data.n_rows, params.options.score_bins
        # Algorithm 1, line 1: the base classifier is trained on {(X_i, Y_i)} only -- A is never passed
        try:
            estimator = fit_wrapped_estimator(_BASE_CLASSIFIER, self.estimator, data.X,
                                              _base_target(data.y, classes, data.labels),
                                              prefit=params.options.prefit, owner=type(self).__name__, caller=self)
        except (TypeError, ValueError) as exc:
            _refuse_raw_features(exc, data.X, type(self).__name__)  # strings, NaN: dpfair's message, no private value
            raise
        y_pred = _base_cells(estimator, data.X, classes, n_bins)
        if y_pred.shape[0] != m:
            raise ValueError(f"the estimator returned {y_pred.shape[0]} predictions for {m} rows of X.")
        q_hat = joint_frequencies(y_pred, data.group_index, data.labels, data.groups.size,
                                  2 if n_bins is None else n_bins)  # line 2 (score bins: the same table, K rows)
        # the totals over the groups, from (X, y) alone (one group: not q_hat's sum, whose rounding would read A)
        totals = joint_frequencies(y_pred, np.zeros(m, dtype=np.int64), data.labels, 1, q_hat.shape[0])[:, 0, :] \
            if params.options.public_totals else None
        return FrequencyTable(estimator=estimator, q_hat=q_hat, n_rows=m, n_positive=float(data.labels.sum()),
                              public_totals=totals)

    def _draw_noise(self, params: PrivacyParameters, statistics: FrequencyTable, noise: NoiseSource) -> ReleasedTable:
        """Algorithm 1, lines 3-4 at ``eps_t``; under whole-row privacy with score bins, then the label count at ``eps_c``."""
        q_hat, m = statistics.q_hat, statistics.n_rows
        epsilon, epsilon_count = whole_row_split(_relation_of(self), params.options.score_bins, m, params.epsilon)
        q_tilde = q_hat if math.isinf(epsilon) else noisy_frequencies(q_hat, m, epsilon, noise)  # 3-4
        # the positive-label count, Lap(1/eps_c): sensitivity 1 under replace-one-row (_postprocessing_constant)
        count = released_positive_count(np.array([statistics.n_positive]), epsilon_count, noise) if epsilon_count > 0 \
            else None
        return ReleasedTable(estimator=statistics.estimator, q_tilde=q_tilde, n_rows=m, predict_seed=_predict_seed(noise),
                             epsilon_table=epsilon, positive_count=count, epsilon_count=epsilon_count,
                             public_totals=statistics.public_totals)

    def _solve(self, params: PrivacyParameters, noisy: ReleasedTable, data: EqualizedOddsData) -> dict[str, Any]:
        """Post-processing of the released table; it cannot fail once the budget was charged.

        The LPs and the guarantee are solved with the groups' columns of the released table permuted so that the
        anchor is the group of largest released mass (:func:`_anchor_order`), and the solution is permuted back:
        every fitted attribute keeps the declared order.
        """
        options, groups = params.options, data.groups
        q_tilde = projected_to_totals(noisy.q_tilde, noisy.public_totals)  # public_totals=True: onto (X, y)'s totals
        q_released = None if q_tilde is noisy.q_tilde else noisy.q_tilde  # the guarantee's table (its proof)
        # Jagielski et al., Section 2.1: the anchor is arbitrary.  LP~ (1) with two groups is symmetric in it (its
        # slack reads min{q~_1y, q~_0y}): the declared order is kept there, so those fits stay bit for bit
        symmetric = options.score_bins is None and groups.size == 2
        order = None if symmetric else _anchor_order(q_tilde)
        if order is not None:  # post-processing of the release: the anchor is read off the released table only
            q_tilde, groups = q_tilde[:, order, :], groups[order]
            q_released = None if q_released is None else q_released[:, order, :]
        epsilon = params.epsilon if noisy.epsilon_table is None else noisy.epsilon_table  # the table's share
        count = None if noisy.positive_count is None else (noisy.positive_count, noisy.epsilon_count)
        p, objective, slack_fp, slack_tp, widening, guarantee, noise_slack, fallback = self._solve_anchored(
            options, q_tilde, noisy.n_rows, epsilon, groups, count, q_released)
        if order is not None:
            back = np.argsort(order)  # declared group a sits at column back[a] of the permuted solution
            p, slack_fp, slack_tp, widening = p[:, back], slack_fp[back], slack_tp[back], widening[back]
        return {
            "estimator_": noisy.estimator, "classes_": data.classes, "groups_": data.groups,
            "noisy_frequencies_": np.array(noisy.q_tilde, dtype=float), "slack_fp_": slack_fp, "slack_tp_": slack_tp,
            "resolution_fp_": widening[:, 0].copy(), "resolution_tp_": widening[:, 1].copy(),
            "probabilities_": p, "objective_": objective, "_predict_seed_": noisy.predict_seed,
            "guaranteed_violation_": guarantee, "noise_slack_": noise_slack, "score_bins_": options.score_bins,
            "fallback_": fallback, **wrapped_feature_attributes(noisy.estimator),
        }

    def _solve_anchored(self, options: EqualizedOddsOptions, q_tilde: np.ndarray, n_rows: int, epsilon: float,
                        groups: np.ndarray, count: tuple[float, float] | None = None,
                        q_released: np.ndarray | None = None) -> tuple[Any, ...]:
        """The LP and the guarantee on the released table, with column 0 (``groups[0]``) as the anchor.

        ``epsilon`` is the table's; ``count`` the released positive-label count and its epsilon (whole-row privacy
        with score bins), which pick the constant the fit falls back to (:func:`constant_fallback`).  ``q_released``:
        the release itself when ``q_tilde`` is its projection onto public totals; the guarantee reads it, as its proof
        bounds each cell's Laplace noise (a projected cell's noise, ``W_a`` less the groups' mean, is not so bounded).

        A declared group absent from the data (or drowned by the noise) is handled here: the table is clipped to
        valid frequencies, a rate without evidence gets the vacuous slack (:func:`lp_slack`), and a failed LP falls
        back to the best constant classifier; each case raises :class:`VacuousConstraintWarning`, never an error.
        """
        constraints, n_groups = options.constraints, groups.size
        q_valid = valid_frequencies(q_tilde)
        q_lp, bound_fp, bound_tp = q_valid, None, None
        slack_fp = slack_tp = np.zeros(n_groups)
        widening = np.zeros((n_groups, 2))
        if n_groups > 1:
            # a declared group whose released mass is indistinguishable from 0 (empty, or too small for the noise):
            # named by the specific EmptyGroupWarning rather than among the vacuous rates (_group_evidence)
            empty = _empty_groups(q_tilde, n_rows, epsilon, options.beta)
            warn_empty_groups(groups, [int(a) for a in np.nonzero(empty)[0]], type(self).__name__, epsilon,
                              "Use a larger epsilon, more rows, or merge small groups.")
            if options.score_bins is None:  # LP~ (1): widened by the paper's slack
                slack_fp, slack_tp = lp_slack(q_valid, n_rows, epsilon, options.beta)
            else:  # score bins: the noise's resolution (_postprocessing_score_lp), groups without evidence pooled
                q_lp = pooled_for_empty(q_valid, empty)
                slack, widening = _score_bin_slack(q_lp, n_rows, epsilon)
                slack_fp, slack_tp = slack[:, 0].copy(), slack[:, 1].copy()
            vacuous: dict[str, np.ndarray] = {}
            if constraints != "true_positive_rate_parity":
                bound_fp = np.minimum(options.gamma + slack_fp + widening[:, 0], _HIGHS_INF)
                vacuous["false-positive"] = (slack_fp[1:] >= 1.0) & ~empty[1:]
            if constraints != "false_positive_rate_parity":
                bound_tp = np.minimum(options.gamma + slack_tp + widening[:, 1], _HIGHS_INF)
                vacuous["true-positive"] = (slack_tp[1:] >= 1.0) & ~empty[1:]
            _warn_vacuous(vacuous, groups, epsilon)
        try:
            if options.score_bins is None:
                p, objective = solve_lp(q_valid, bound_fp, bound_tp)  # line 5
            else:
                cell_variance = 0.0 if math.isinf(epsilon) else 4.0 / n_rows / epsilon / epsilon
                noise_scale = 0.0 if math.isinf(epsilon) else 2.0 / (n_rows * epsilon)  # Algorithm 1, line 3
                p = solve_score_lp(q_lp, bound_fp, bound_tp, options.gamma, cell_variance, noise_scale)
                if p is None:
                    raise ValueError("no optimum")
                objective = float((q_valid[:, :, 0] * p + q_valid[:, :, 1] * (1.0 - p)).sum())
        except ValueError:  # HiGHS found no optimum (numerical trouble): the LP's always-feasible fallback
            p, objective = best_constant_classifier(q_valid, n_groups)
            warnings.warn(
                "HiGHS found no optimum of the noisy linear program LP~ (1); the fitted post-processor is the best "
                "constant classifier (equal rates in every group, so every constraint holds). Use a larger epsilon, "
                "fewer (merged) groups or a larger gamma.",
                VacuousConstraintWarning,
                stacklevel=find_stack_level(),
            )
        fallback = False
        if count is not None:  # whole rows private: never worse than the constant (_postprocessing_constant)
            p, objective, reason, factor = constant_fallback(p, objective, q_valid, q_tilde, count[0], n_rows, epsilon,
                                                             count[1])
            fallback = reason is not None
            if fallback:
                warn_fallback(reason, factor, epsilon, n_rows)
        if not fallback:  # every rate difference times 1 - constant_mix (_postprocessing_mix); 0: unchanged
            p, mixed_objective = mixed_with_constant(p, q_valid, options.constant_mix)
            objective = objective if mixed_objective is None else mixed_objective
        guarantee, noise_slack = (0.0, 0.0) if fallback else guaranteed_violation(  # a constant: equal rates, exactly
            q_valid if q_released is None else valid_frequencies(q_released), p, n_rows, epsilon, options.beta,
            _CONSTRAINED_LABELS[constraints])
        gamma = options.gamma
        # only when the noise's slack exceeds gamma and the sampling resolution of a rate difference (slack_matters)
        if noise_slack > 0 and slack_matters(q_valid, n_rows, epsilon, options.beta,
                                             _CONSTRAINED_LABELS[constraints], gamma):
            warnings.warn(
                f"the noise of the private table adds up to {noise_slack:.3g} to gamma={gamma:g}, more than gamma and "
                f"than the sampling resolution of the rates: the fitted predictor is guaranteed (probability "
                f"{1 - options.beta:g}) an equalized-odds violation of at most {guarantee:.3g} on its training rows "
                "(guaranteed_violation_). Use a larger epsilon for the post-processor, more rows, fewer score_bins or "
                "a larger gamma.",
                FairnessSlackWarning,
                stacklevel=find_stack_level(),
            )
        return p, objective, slack_fp, slack_tp, widening, guarantee, noise_slack, fallback

    def _declared_relation(self) -> str:
        """``"replace"`` when a private base model is fitted here (end to end), else ``"change_attribute"``."""
        return _relation_of(self)

    def _privacy_spent(self, params: PrivacyParameters, results: dict[str, Any]) -> dict[str, Any]:
        return wrapped_privacy_spent(super()._privacy_spent(params, results), results["estimator_"],
                                     prefit=params.options.prefit, protects=_PROTECTS_END_TO_END,
                                     neighbouring=_NEIGHBOURING_END_TO_END)

    def _rows(self, X: Any, sensitive_features: Any) -> tuple[np.ndarray, np.ndarray]:
        check_is_fitted(self, "probabilities_")
        y_pred = _base_cells(self.estimator_, X, self.classes_, getattr(self, "score_bins_", None))
        return y_pred, _rows_of_fitted_groups(self.groups_, sensitive_features, y_pred.size)

    def predict_proba(self, X: Any, *, sensitive_features: Any = None) -> np.ndarray:
        """Probability of each class, ``P(Y_hat_p = 1 | x, a) = p~*[Y_hat(x), a]``.

        Parameters
        ----------
        X : array-like
            Features for the base classifier.
        sensitive_features : array-like of shape (n_samples,) or None, default None
            Group of every row (one of ``groups_``); may be omitted when one group was declared.

        Returns
        -------
        ndarray of shape (n_samples, 2)
            Probabilities of ``classes_[0]`` and ``classes_[1]`` (the positive class).

        Raises
        ------
        NotFittedError
            Before ``fit``.
        ValueError, TypeError
            On invalid input or a group outside ``groups_``.
        """
        y_pred, index = self._rows(X, sensitive_features)
        positive = self.probabilities_[y_pred, index]
        return np.column_stack([1.0 - positive, positive])

    def predict(self, X: Any, *, sensitive_features: Any = None, random_state: Any = None) -> np.ndarray:
        """Randomized fair predictions: the positive class ``classes_[1]`` with probability ``p~*[Y_hat(x), a]``.

        Parameters
        ----------
        X : array-like
            Features for the base classifier.
        sensitive_features : array-like of shape (n_samples,) or None, default None
            Group of every row (one of ``groups_``); may be omitted when one group was declared.
        random_state : None, int, numpy Generator or NoiseSource, default None
            Randomness of the predictions.  ``None``: the estimator's policy (secure randomness, or a
            generator derived from the constructor's seed at ``fit``: reproducible predictions).

        Returns
        -------
        ndarray of shape (n_samples,)
            Predictions, labels from ``classes_``.

        Raises
        ------
        NotFittedError
            Before ``fit``.
        ValueError, TypeError
            On invalid input or a group outside ``groups_``.
        """
        y_pred, index = self._rows(X, sensitive_features)
        return _randomized_labels(self.classes_, self.probabilities_[y_pred, index], random_state, self._predict_seed_)
