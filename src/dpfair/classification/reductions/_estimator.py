"""Differentially private fair classification by reductions (DP-oracle-learner).

:class:`DPExponentiatedGradient` implements Algorithm 3 (with Subroutine 2) of Jagielski, Kearns,
Mao, Oprea, Roth, Sharifi-Malvajerdi & Ullman, "Differentially Private Fair Learning" (ICML 2019),
the private version of the exponentiated-gradient reduction of Agarwal et al. (2018) (the paper's
Algorithm 5), with the private cost-sensitive oracle of their Section 5 (one least-squares
regression per cost vector, ``(X^T X)^-1 X^T C_b``, made private by Laplace noise): ``oracle="paper"``.  The
default A-blind oracle, ``oracle="statistics"`` (:mod:`~dpfair.classification.reductions._oracle`), releases the
oracle's sufficient statistics (the per-(group, label) sums of ``[x, 1]``) once with the Gaussian mechanism, so every
best response is post-processing and the oracle's noise does not grow with the number of rounds; the bullets below
describe the paper's accounting, that module the other one.

Privacy protects the sensitive attribute ``A`` (the group label) of every training row; ``X`` and
``y`` are treated as public, as in the paper (Section 2.3, "differentially private in the
sensitive attributes").  Neighbouring datasets differ in one row's group label.

Privacy accounting (all through :mod:`dpfair.privacy` and ``dp_accounting``):

* the counts ``n_ay`` of rows per (group, label) are released once with the Laplace mechanism
  (L1 sensitivity 2: one row leaves one cell and enters another).  Every later denominator and
  sensitivity uses these *noisy* counts, so no noise scale is read off private data (the paper
  uses the exact ``min_ay q_ay m - 1``, a private quantity);
* each of the ``T`` rounds runs two ``epsilon'``-DP Laplace releases (the Learner's noisy
  ``X^T C_1`` and the Auditor's noisy violation vector ``r~``).  ``accountant="tight"`` (default)
  gives the ``2T`` releases ``(0.9 epsilon, delta)`` and finds the largest ``epsilon'`` that the
  privacy loss distribution of ``2T`` Laplace mechanisms (``dp_accounting``'s PLD accountant, exact
  up to a pessimistic discretization) or their Renyi-DP curve certifies, whichever is larger
  (:func:`~dpfair.classification.reductions.per_round_epsilon`); ``accountant="advanced"`` does the same with the
  advanced composition
  theorem (Dwork-Rothblum-Vadhan) or basic composition; ``accountant="paper"`` uses Algorithm 3's
  ``epsilon' = epsilon / (4 sqrt(T ln(1/delta)))`` (line 5), lowered where the advanced
  composition theorem does not certify it;
* the A-aware oracle (``use_sensitive_at_test_time=True``) also releases ``Z^T Z`` and ``Z^T C_0``
  (``Z = [X, one-hot(A)]``) once, and with ``selection="best"`` its best prefix (exponential mechanism);
* the counts (and the A-aware statistics) get the rest of ``epsilon`` (a tenth, or more with
  ``accountant="paper"``), in equal parts.  The whole fit is ``(epsilon, delta)``-DP (basic composition of
  the parts);
* the best-iterate selection (``selection="best"``) scores every prefix ``t`` by
  ``err(Q_t) + B max(0, max_k r~_k(Q_t) + margin)``.  A-blind, ``h(x)`` is a function of public ``X`` and
  released values, so its training error (``y`` is public) and the choice are post-processing (checked
  white-box: identical releases give the identical choice).  A-aware (``use_sensitive_at_test_time=True``),
  ``h(x, a)`` is evaluated at every row's true group, so ``err(Q_t)`` reads ``A`` exactly: the
  prefix is then chosen by the exponential mechanism (utility ``-value_t``, sensitivity ``1/m``), paid with a
  third of the one-off share (``epsilon_selection_``; the counts and ``Z^T Z`` get the other two thirds).

Defaults (Theorems 4.3-4.6): ``bound_B = |A|`` (the choice of Corollary 4.6.1; Lemma C.4's
violation slack ``(1 + 2 nu) / B`` is a worst case, and the game's equilibrium only needs ``B``
above the norm of the optimal multipliers), the requested equilibrium accuracy ``nu`` (default
``1 / sqrt(m)``, the statistical resolution of an in-sample rate), the number of rounds
``T = min(16 B^2 ln(K+1) / nu^2, T_privacy)`` (Lemma 4.2 with exact players: the auditor's regret
``4 B sqrt(ln(K+1) / T)`` is at most ``nu``; ``T_privacy`` is Algorithm 3's line 1, ``K`` the number
of constraints) and the step ``eta = (1/2) sqrt(ln(K+1) / T)`` (Algorithm 3's).  At
``epsilon = inf`` the game stops as soon as the exact duality gap of the output is at most ``nu``.

Randomness policy (as in :mod:`dpfair.regression`): ``random_state=None`` draws secure noise;
a seed gives reproducible, *not hardened* noise and a seeded stream for the randomized
:meth:`DPExponentiatedGradient.predict` (fresh for every ``fit``).
"""

from __future__ import annotations

import math
import warnings
from typing import Any, ClassVar

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.multiclass import check_classification_targets, type_of_target

from dpfair._estimator import (
    privacy_spent,
    warn_non_private,
)
from dpfair._validation import (
    check_bool,
    check_int,
    check_nonnegative_finite,
    check_open_unit,
    check_positive_finite,
)
from dpfair._warnings import find_stack_level
from dpfair.base import PrivacyParameters, PrivateEstimator, ValidatedData
from dpfair.classification._group_evidence import warn_empty_groups
from dpfair.classification.constraints import make_constraint
from dpfair.classification.reductions._accounting import (
    _check_choice,
)
from dpfair.classification.reductions._fallback import (
    SmallBudgetWarning,
    constant_weights,
    warn_constant_fallback,
)
from dpfair.classification.reductions._inputs import (
    _check_rows,
    _features,
    _l1_row_bound,
)
from dpfair.classification.reductions._oracle import (
    NOISE_TO_SIGNAL_LIMIT,
    l2_row_bound,
)
from dpfair.classification.reductions._plan import (
    GameData,
    GameOptions,
    GameOutcome,
    GameStatistics,
    game_plan,
    game_statistics,
)
from dpfair.classification.reductions._predict import _MixturePredictor
from dpfair.classification.reductions._run import run_game
from dpfair.privacy.noise import NoiseSource
from dpfair.privacy.relations import CHANGE_ATTRIBUTE

__all__ = ["DEFAULT_DELTA", "DPExponentiatedGradient"]

#: The default ``delta`` (``delta=None``): fixed, because the charge is decided by the parameters alone.
DEFAULT_DELTA = 1e-6



REFERENCES = ("group0", "overall")
ACCOUNTANTS = ("tight", "advanced", "paper")
SELECTIONS = ("average", "best")
ORACLES = ("auto", "statistics", "paper")

_PROTECTS = (
    "the sensitive attribute A (group label) of every training row; X and y are treated as public, "
    "as in Jagielski et al. (2019)"
)
_NEIGHBOURING = "change one training row's sensitive attribute (group label); X, y, the number of rows and the groups are public"


class DPExponentiatedGradient(PrivateEstimator, _MixturePredictor, ClassifierMixin, BaseEstimator):
    """Differentially private fair classifier under equalized odds or another rate parity (DP-oracle-learner).

    Algorithm 3 of Jagielski et al. (2019): the Auditor plays exponentiated gradient on noisy
    fairness violations, the Learner best-responds with a private cost-sensitive oracle (one
    noisy least-squares regression per cost vector, Section 5), and the output is the uniform
    mixture of the best responses (or, with ``selection="best"``, of the first ``t`` of them for the
    ``t`` whose mixture is best).  The fit is ``(epsilon, delta)``-differentially private with respect
    to the sensitive attribute ``A`` of every training row (neighbouring datasets: change one row's group
    label; ``X`` and ``y`` are public, as in the paper).  At ``epsilon = inf`` it is the exact reduction
    of Agarwal et al. (Algorithm 5), stopped at duality gap ``nu``.

    Parameters
    ----------
    epsilon : float
        Total privacy parameter, ``> 0``; ``inf`` runs the exact non-private reduction and raises
        :class:`~dpfair.privacy.PrivacyLeakWarning`.
    delta : float or None, default None
        Total ``delta`` in ``(0, 1)`` (all of it goes to the composition of the ``2T`` per-round releases).
        ``None``: ``1e-6`` (:data:`DEFAULT_DELTA`).  The charge must be fixed by the parameters alone
        (:meth:`planned_charge` has no data), so the default cannot follow the number of rows ``m``; ``1e-6`` keeps
        the usual rule ``delta <= 1 / (10 m)`` for every ``m`` up to 100,000, and a fit on more rows with the default
        warns (pass ``delta`` explicitly, e.g. ``1 / (10 m)`` or smaller).
    gamma : float or None, default None
        Allowed violation (``>= 0``); equalized odds: ``|FP_a - FP_ref| <= gamma`` and ``|TP_a - TP_ref| <= gamma``
        for every group ``a``, the reference being set by ``constraint_reference``.  ``None``:
        ``max(0.05, sqrt(|A| / m))`` from public sizes (``gamma_``): 0.05, or, when larger, the standard error of a
        difference of two rates measured on cells of the mean size ``m / (2|A|)`` (``sqrt(|A| / m)``), below which a
        held-out rate difference is not resolved (:func:`~dpfair.classification.reductions.default_gamma`).
    constraints : str or FairnessConstraint, default "equalized_odds"
        The fairness constraint (:mod:`~dpfair.classification.constraints`): ``"equalized_odds"``,
        ``"demographic_parity"`` or ``"true_positive_rate_parity"``, built with ``constraint_reference``; or an
        instance (which owns its reference), e.g. of a new subclass.
    bound_B : float or None, default None
        ``B``, the bound on ``||lambda||_1`` (``> 0``).  ``None``: ``B = |A|``, the number of declared
        groups (Corollary 4.6.1's choice).  Larger ``B`` enforces the constraints more strongly (Lemma C.4:
        violation at most ``gamma + (1 + 2 nu) / B``) but needs ``B^2`` times more rounds and makes the
        Learner's costs, hence its noise, larger (Theorem 4.4).
    beta : float, default 0.05
        Confidence parameter of Algorithm 3's ``T`` (in ``(0, 1)``).
    x_norm_bound : float or None, default None
        Declared bound on the Euclidean norm of every row of ``X`` (``> 0``); it bounds
        ``||x||_1 <= sqrt(d) x_norm_bound``.  A training row above it raises.
    x_l1_bound : float, array-like of shape (n_features,) or None, default None
        Declared bound on the L1 norm of every row of ``X`` (a number), or on every ``|x_j|`` (one
        number per feature; then ``||x||_1 <= sum_j x_l1_bound[j]``).  A training row above it raises.  The
        oracle's noise is calibrated to the smallest L1 bound the declared bounds give, never to the data;
        at least one of ``x_norm_bound`` and ``x_l1_bound`` is required with a finite ``epsilon``.
    n_iter : int or None, default None
        Number of rounds ``T``; ``None``: ``min(16 B^2 ln(K+1) / nu^2, T_privacy)`` where ``T_privacy`` is
        Algorithm 3's formula (capped at 1,000, also at ``epsilon = inf``, where the game stops as
        soon as the exact duality gap is at most ``nu``).
    eta : float or None, default None
        Exponentiated-gradient step; ``None`` uses ``(1/2) sqrt(ln(K+1) / T)`` (Algorithm 3).
    nu : float or None, default None
        Requested accuracy: the duality gap of the approximate equilibrium (Theorem 4.3: error at most
        ``2 nu`` above the best ``gamma``-fair classifier).  ``None``: ``1 / sqrt(m)``.
    constraint_reference : {"group0", "overall"}, default "group0"
        ``"group0"``: every group's rates against the first declared group's (the paper's Definition 2.1,
        ``4(|A|-1)`` equalized-odds constraints).  ``"overall"``: every group's rates against the rates of all rows
        of the same event (fairlearn's ``EqualizedOdds``, ``4|A|`` constraints).
    accountant : {"tight", "advanced", "paper"}, default "tight"
        How the ``2T`` per-round Laplace releases are composed (see :func:`~dpfair.classification.reductions.per_round_epsilon`):
        ``"tight"`` (privacy loss distributions or Renyi DP, whichever certifies the larger
        per-round ``epsilon'``), ``"advanced"`` (the advanced composition theorem) or ``"paper"``
        (Algorithm 3's ``epsilon'`` formula).  All three are ``(epsilon, delta)``-DP.
    selection : {"average", "best"}, default "best"
        ``"average"``: the uniform mixture of the ``T`` best responses (Algorithm 3's output).  ``"best"``:
        the mixture of the first ``t`` best responses for the ``t`` with the smallest primal value
        ``err(Q_t) + B max(0, max_k r_k(Q_t))`` (fairlearn's best-iterate selection).  The violations
        ``r(Q_t)`` are the averages of the released noisy ``r~``, taken with an upper confidence margin of two
        standard deviations of their noise.  A-blind, the training error ``err(Q_t)`` depends on public ``X``,
        ``y`` and released values only: the choice is post-processing and costs no privacy.  A-aware
        (``use_sensitive_at_test_time=True``) the hypotheses read every row's group, so ``err(Q_t)`` is private:
        with a finite ``epsilon`` the prefix is drawn by the exponential mechanism (sensitivity ``1/m``) with a
        third of the one-off share of ``epsilon`` (``epsilon_selection_``), inside the total ``epsilon``.
    oracle : {"auto", "statistics", "paper"}, default "auto"
        The private Learner.  ``"paper"``: Section 5's oracle, a noisy ``Z^T C_1`` every round (Laplace, composed by
        ``accountant``).  ``"statistics"`` (A-blind only): the cell sums of ``[x, 1]`` released once (Gaussian
        mechanism), every best response post-processing, and the Auditor's positive counts per cell released each
        round (Gaussian); the fit is ``mu``-GDP, hence ``(epsilon, delta)``-DP
        (:mod:`~dpfair.classification.reductions._oracle`), ``accountant`` and ``beta`` are not used and
        ``n_iter=None`` plays ``min(50, 16 B^2 ln(K+1) / nu^2)`` rounds (200 before; see
        ``_oracle.STATISTICS_N_ITER``).  ``"auto"``: ``"statistics"`` A-blind, ``"paper"`` with
        ``use_sensitive_at_test_time=True``.  At ``epsilon = inf`` both are the exact reduction.
    groups : list or None, default None
        The declared group labels (public; the first is the reference group 0).  Required with a
        finite ``epsilon``; with ``epsilon = inf`` it may be omitted and is read off the data.
    use_sensitive_at_test_time : bool, default False
        ``False``: A-blind hypotheses ``h(x)`` (``predict`` needs no group).  ``True``: A-aware
        hypotheses ``h(x, a)`` on ``[X, onehot(A)]`` (Section 4.1, Theorems 4.5-4.6), whose oracle also
        adds noise to ``Z^T Z``; ``predict`` then needs ``sensitive_features``.
    fallback : {"constant", None}, default "constant"
        Never worse than the constant (A-blind, finite ``epsilon``): when the output mixture's training error plus
        two standard errors is not below the error of the best constant classifier (predict the majority label of
        ``y`` for every row: its rates are equal in every group, so every constraint holds), the fit returns that
        constant, sets ``fallback_ = "constant"`` and raises :class:`ConstantFallbackWarning` with the ``epsilon``
        that would help.  Everything the rule reads is public or released (``X``, ``y``, the released weights), so it
        is part of the same single charge (post-processing); the reasoning is in
        :mod:`~dpfair.classification.reductions._fallback`.  A-aware (``use_sensitive_at_test_time=True``,
        ``selection="best"``) the prefixes' errors read the groups: the constant is then one more candidate of the
        exponential mechanism that chooses the prefix (its value, its error, does not depend on ``A``, so the
        sensitivity ``1/m`` holds), inside the same ``epsilon_selection_``.  ``None``: always the game's output
        (Algorithm 3 as written).
    budget : PrivacyBudget or None, default None
        Charged ``(epsilon, delta)`` once per ``fit``, after validation and before the first noise
        draw; a refused charge leaves the budget and any earlier fitted state unchanged.
    random_state : None, int, numpy Generator or NoiseSource, default None
        ``None``: secure noise and secure randomized predictions.  A seed: reproducible, *not
        hardened* noise and predictions (experiments and tests only).

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        The two labels (``classes_[1]`` is the positive label, ``y = 1`` in the paper).
    groups_ : ndarray
        The declared groups.
    bound_B_ : float
        The ``B`` used.
    gamma_ : float
        The ``gamma`` used (``gamma=None`` resolved).
    delta_ : float
        The ``delta`` charged (``delta=None`` resolved; 0 is charged at ``epsilon = inf``).
    nu_ : float
        The requested accuracy used.
    n_iter_ : int
        Number of rounds run.
    best_iter_ : int
        Number of best responses in the output mixture (``n_iter_`` with ``selection="average"``).
    eta_ : float
        Step size used.
    epsilon_step_ : float
        Per-release ``epsilon'`` of each round (``inf`` without privacy; NaN with ``oracle="statistics"``, whose
        releases are Gaussian: see ``accountant_``).
    oracle_ : str
        The oracle used (``"statistics"`` or ``"paper"``).
    noise_to_signal_ : dict
        ``{"oracle": float, "auditor": float}``, the released noise-to-signal ratios of the fit (0 without privacy);
        :class:`SmallBudgetWarning` is raised when one exceeds 1.
    epsilon_selection_ : float
        The ``epsilon`` of the private best-prefix choice (A-aware, ``selection="best"``, finite ``epsilon``;
        part of the total ``epsilon``), 0 where the choice is post-processing or not made.
    constraint_ : FairnessConstraint
        The constraint played (equalized odds: ``lambda_`` of shape ``(K / 4, 4)``).
    accountant_ : str
        The bound that certifies ``epsilon_step_`` (also stated in ``privacy_spent_["protects"]``).
    gap_ : float
        Exact duality gap of the output at ``epsilon = inf``; NaN at finite ``epsilon`` (it would read
        the data exactly).
    coef_ : ndarray of shape (``best_iter_``, n_weights)
        Weights ``w_t`` of the best responses: ``h_t(z) = 1{z . w_t > 0}`` with ``z = [x, 1]``
        (A-blind) or ``z = [x, onehot(a)]`` (A-aware).
    lambda_ : ndarray of shape ``constraint_.violation_shape(n_groups)``
        Average dual play ``lambda~`` over the output's rounds (Algorithm 3's second output).
    privacy_spent_ : dict
        ``{"epsilon", "delta", "protects", "neighbouring"}``; ``protects`` names the accountant.
    fallback_ : str or None
        ``"constant"`` when the fit returned the best constant classifier (``fallback``), else ``None``; ``coef_`` is
        then one row, ``h(z) = 1{z . w > 0}`` with zero weights on ``x`` and the intercept ``+1`` or ``-1``.
    n_features_in_ : int
        Number of features seen in ``fit``.

    Warns
    -----
    SmallBudgetWarning
        Once per ``fit``, when a released noise-to-signal ratio (``noise_to_signal_``) exceeds 1.
    ConstantFallbackWarning
        Instead of the generic :class:`SmallBudgetWarning` when the fit returned the best constant classifier.
    EmptyGroupWarning
        When a declared group has no row, or too few for the noise, in the released counts (its constraints dropped).
    sklearn.exceptions.ConvergenceWarning
        When the output's violation (estimated from the released, noisy violations) exceeds ``gamma``
        clearly: the data's fairness / accuracy trade-off is steeper than ``B`` allows; raise ``bound_B``.

    See Also
    --------
    fairlearn.reductions.ExponentiatedGradient : The non-private reduction (Agarwal et al., 2018).
    dpfair.classification.DPEqualizedOddsPostProcessor : Private post-processing (Algorithm 1).

    Notes
    -----
    **Empty and tiny declared groups.** A cell (group, label) whose released count is indistinguishable from zero
    (below ``Phi^-1(1 - beta / n_cells)`` standard deviations of the count's noise; any row at ``epsilon = inf``)
    carries no evidence about its rates: the constraints that read it are dropped (their multipliers stay 0) and its
    denominator no longer enters the noise scales, so a declared group without rows cannot turn the fit into a
    constant classifier.  :class:`EmptyGroupWarning` names such groups.  The rule reads released counts and public
    noise scales only (:mod:`~dpfair.classification._group_evidence`).

    Examples
    --------
    >>> from dpfair.datasets import make_classification
    >>> from dpfair.classification.reductions import DPExponentiatedGradient
    >>> X, y, g = make_classification(1000, random_state=0)
    >>> clf = DPExponentiatedGradient(epsilon=50.0, delta=1e-6, gamma=0.05, x_norm_bound=10.0,
    ...                               groups=[0, 1], random_state=0)
    >>> clf = clf.fit(X, y, sensitive_features=g)
    >>> clf.predict_proba(X[:2]).shape
    (2, 2)
    """

    _privacy_parameters: ClassVar[dict[str, str]] = {
        "epsilon": "epsilon", "groups": "groups", "budget": "budget", "random_state": "random_state"
    }
    _privacy_protects = _PROTECTS
    _privacy_neighbouring = _NEIGHBOURING
    _privacy_relation = CHANGE_ATTRIBUTE  # X, y and the number of rows are public

    def __init__(
        self,
        *,
        epsilon: float,
        delta: float | None = None,
        gamma: float | None = None,
        constraints: Any = "equalized_odds",
        bound_B: float | None = None,
        beta: float = 0.05,
        x_norm_bound: float | None = None,
        x_l1_bound: Any = None,
        n_iter: int | None = None,
        eta: float | None = None,
        nu: float | None = None,
        constraint_reference: str = "group0",
        accountant: str = "tight",
        selection: str = "best",
        oracle: str = "auto",
        groups: Any = None,
        use_sensitive_at_test_time: bool = False,
        fallback: str | None = "constant",
        budget: Any = None,
        random_state: Any = None,
    ) -> None:
        self.epsilon = epsilon
        self.delta = delta
        self.gamma = gamma
        self.constraints = constraints
        self.bound_B = bound_B
        self.beta = beta
        self.x_norm_bound = x_norm_bound
        self.x_l1_bound = x_l1_bound
        self.n_iter = n_iter
        self.eta = eta
        self.nu = nu
        self.constraint_reference = constraint_reference
        self.accountant = accountant
        self.selection = selection
        self.oracle = oracle
        self.groups = groups
        self.use_sensitive_at_test_time = use_sensitive_at_test_time
        self.fallback = fallback
        self.budget = budget
        self.random_state = random_state

    def __sklearn_tags__(self):  # binary classifier
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        return tags

    # ------------------------------------------------------------------ fit
    def fit(self, X: Any, y: Any, *, sensitive_features: Any = None) -> DPExponentiatedGradient:
        """Run Algorithm 3: ``(epsilon, delta)``-DP in every training row's group label.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Public features, every row within the declared ``x_norm_bound`` / ``x_l1_bound``.
        y : array-like of shape (n_samples,)
            Public binary labels (exactly two distinct values).
        sensitive_features : array-like of shape (n_samples,) or None, default None
            The private group label of every row, each one of ``groups``.  May be omitted only when
            ``groups`` declares exactly one group (every row is then in it).  Routed by metadata
            routing (``set_fit_request(sensitive_features=True)``).

        Returns
        -------
        DPExponentiatedGradient
            The fitted estimator (``self``).

        Raises
        ------
        ValueError
            If an argument is invalid (the message names it), ``groups`` is missing with finite
            ``epsilon``, a row's group is not declared, ``y`` is not binary, or a row of ``X`` is outside
            a declared bound.
        TypeError
            If an argument has the wrong type.
        PrivacyBudgetExceededError
            If ``budget`` refuses the charge; nothing is changed.

        Warns
        -----
        PrivacyLeakWarning
            With ``epsilon = inf``.
        SmallBudgetWarning
            When a released noise-to-signal ratio exceeds 1.
        ConvergenceWarning
            When the output clearly exceeds ``gamma`` (raise ``bound_B``).
        """
        with self._feature_attributes_kept(always=False):  # a refused fit leaves the estimator as it was
            return self._set_fitted(self._release(X, y, sensitive_features=sensitive_features))

    # ------------------------------------------------------------------ the steps of dpfair.base's release template
    @property
    def _privacy_label(self) -> str:  # the ledger's label of the charge
        return f"{type(self).__name__}.fit (Algorithm 3)"

    def _validate_params(self) -> GameOptions:
        # delta is not the template's delta role (0 <= delta < 1): Algorithm 3's T and epsilon' need ln(1/delta) > 0
        delta = DEFAULT_DELTA if self.delta is None else check_open_unit(self.delta, "delta")
        gamma = None if self.gamma is None else check_nonnegative_finite(self.gamma, "gamma")
        bound_B = None if self.bound_B is None else check_positive_finite(self.bound_B, "bound_B")
        beta = check_open_unit(self.beta, "beta")
        n_iter = None if self.n_iter is None else check_int(self.n_iter, "n_iter", minimum=1)
        if n_iter is not None and n_iter > 100_000:
            raise ValueError(f"n_iter must be <= 100000, got {n_iter}.")
        eta = None if self.eta is None else check_positive_finite(self.eta, "eta")
        nu = None if self.nu is None else check_positive_finite(self.nu, "nu")
        constraint = make_constraint(self.constraints, _check_choice(self.constraint_reference, "constraint_reference",
                                                                     REFERENCES))
        reference = constraint.reference
        accountant = _check_choice(self.accountant, "accountant", ACCOUNTANTS)
        selection = _check_choice(self.selection, "selection", SELECTIONS)
        aware = check_bool(self.use_sensitive_at_test_time, "use_sensitive_at_test_time")
        oracle = _check_choice(self.oracle, "oracle", ORACLES)
        if oracle == "statistics" and aware:
            raise ValueError(
                'oracle="statistics" is A-blind (its released cell sums do not give the A-aware Gram matrix of '
                'Z = [X, onehot(A)]); use oracle="paper" (or "auto") with use_sensitive_at_test_time=True.'
            )
        oracle = ("paper" if aware else "statistics") if oracle == "auto" else oracle
        if self.fallback is not None and not (isinstance(self.fallback, str) and self.fallback == "constant"):
            raise ValueError(f"fallback must be 'constant' or None, got {self.fallback!r}.")
        return GameOptions(oracle=oracle, delta=delta, gamma=gamma, bound_B=bound_B, beta=beta, n_iter=n_iter, eta=eta,
                           nu=nu, reference=reference, accountant=accountant, selection=selection, aware=aware,
                           constraint=constraint, fallback=self.fallback)

    def _privacy_cost(self, params: PrivacyParameters) -> tuple[float, float]:
        return params.epsilon, 0.0 if math.isinf(params.epsilon) else params.options.delta

    def _validate_data(
        self, params: PrivacyParameters, X: Any, y: Any, *, sensitive_features: Any = None
    ) -> GameData:
        """The public rows, then each row's group, then Algorithm 3's plan (refused when a noise scale overflows)."""
        if y is None:
            raise ValueError(
                f"{type(self).__name__} requires y to be passed, but the target y is None; pass one binary label per row."
            )
        X_arr, y_arr = _features(self, X, reset=True, y=y)
        try:
            check_classification_targets(y_arr)  # "Unknown label type: continuous" for real-valued y
        except ValueError as exc:  # keep scikit-learn's wording (its checks match it) and name the argument
            raise ValueError(f"y: {exc} y must hold the binary labels 0 and 1.") from None
        classes, y01 = np.unique(y_arr, return_inverse=True)
        if classes.size == 1:
            raise ValueError("y holds 1 class only; y must hold two classes (binary classification).")
        if classes.size != 2:
            raise ValueError(
                "Only binary classification is supported. The type of the target is "
                f"{type_of_target(y_arr, input_name='y')}; y must hold exactly two classes."
            )
        m, d = X_arr.shape
        if self.delta is None and not math.isinf(params.epsilon) and m > 0.1 / DEFAULT_DELTA:
            warnings.warn(
                f"delta=None charges delta={DEFAULT_DELTA:g}, above 1/(10 m) for these {m} rows (the number of rows is "
                "public): pass delta explicitly, e.g. delta=1/(10*m) or smaller.",
                UserWarning,
                stacklevel=find_stack_level(),
            )
        if self.x_norm_bound is None and self.x_l1_bound is None and math.isinf(params.epsilon):
            l1_row_bound = l2_bound = math.inf  # no noise to calibrate
        else:
            l1_row_bound, per_feature, l2 = _l1_row_bound(self.x_norm_bound, self.x_l1_bound, d)
            l2_bound = l2_row_bound(l1_row_bound, l2, per_feature)
            l1_scalar = None if self.x_l1_bound is None or per_feature is not None else float(self.x_l1_bound)
            _check_rows(X_arr, l2, l1_scalar, per_feature)
        # each row's group (as the template maps them), then the plan: the number of groups is part of it
        rows = self._resolve_declared_groups(params, ValidatedData(n_rows=m, sensitive_features=sensitive_features))
        plan = game_plan(params.options, params.epsilon, m, d, rows.groups.size, l1_row_bound, l2_bound)
        return GameData(n_rows=m, sensitive_features=sensitive_features, groups=rows.groups,
                        group_index=rows.group_index, X=X_arr, y01=y01, classes=classes, l1_row_bound=l1_row_bound,
                        l2_row_bound=l2_bound, plan=plan)

    def _warn_non_private(self, params: PrivacyParameters) -> None:
        warn_non_private(params.epsilon, "the fitted classifier", estimator=self)

    def _compute_statistics(self, params: PrivacyParameters, data: GameData) -> GameStatistics:
        """The exact statistics Algorithm 3 releases (its plan, public, is ``data.plan``)."""
        return game_statistics(data.plan, params.options.aware, data.X, data.y01, data.group_index)

    def _run(self, params: PrivacyParameters, data: GameData, statistics: GameStatistics,
             noise: NoiseSource) -> GameOutcome:
        """Algorithm 3 after the charge: the one-off releases, then the noisy game (every use of ``noise``).

        An iterative mechanism (the template's ``_run`` step): each round's releases depend on the previous rounds'
        released values, so noise and computation interleave (:func:`~dpfair.classification.reductions._run.run_game`).
        """
        return run_game(params, data, statistics, noise)

    def _solve(self, params: PrivacyParameters, noisy: GameOutcome, data: GameData) -> dict[str, Any]:
        plan, options = data.plan, params.options
        gamma, private, best_t, bound_B = plan.gamma, plan.private, noisy.best_t, plan.bound_B
        ratios = noisy.noise_to_signal
        fallback = noisy.fallback
        warn_empty_groups(data.groups, noisy.dropped_groups, type(self).__name__, params.epsilon,
                          "Declare only the groups the data hold, merge small groups, or use a larger epsilon.")
        if fallback is not None:  # the constant classifier (_fallback): it says more than the generic warning
            warn_constant_fallback(fallback, data.classes, params.epsilon, options.delta, plan.by_statistics, ratios)
        elif max(ratios.values()) > NOISE_TO_SIGNAL_LIMIT:
            warnings.warn(
                f"the privacy noise dominates the signal (released noise-to-signal ratios: oracle "
                f"{ratios['oracle']:.3g}, auditor {ratios['auditor']:.3g}; above {NOISE_TO_SIGNAL_LIMIT:g} the "
                f"{'oracle' if ratios['oracle'] > NOISE_TO_SIGNAL_LIMIT else 'auditor'} carries little information): "
                "use a larger epsilon, more rows, a larger gamma or, with oracle='paper', the default oracle; "
                "DPEqualizedOddsPostProcessor spends the budget once.",
                SmallBudgetWarning,
                stacklevel=find_stack_level(),
            )
        if not private and plan.n_groups > 1 and noisy.gap > plan.nu:  # the exact game stopped short of nu
            warnings.warn(
                f"the exact game (epsilon = inf) stopped after {noisy.rounds} rounds at duality gap {noisy.gap:.3g}, "
                f"above the target nu={plan.nu:.3g} (Theorem 4.3: error within 2 nu of the best gamma-fair classifier): "
                f"pass a larger n_iter (the cap is {plan.T}), a larger step eta (e.g. eta={2.0 / bound_B:.3g}, "
                "fairlearn's 2 / B) or a larger nu.",
                ConvergenceWarning,
                stacklevel=find_stack_level(),
            )
        if plan.n_groups > 1 and fallback is None:
            # Lemma C.4: a violation above gamma with the multipliers at their bound means B is too small for this
            # problem's accuracy / fairness trade-off.  Read off the released (noisy) violations: post-processing.
            r_best = noisy.r_exact if not private else noisy.r_best_sum / best_t
            excess = float(r_best.max()) - 2.0 * noisy.noise_sd / math.sqrt(best_t)
            if excess > 0.25 * max(gamma, 0.01):
                shown = f" by about {excess:.3g}" if not private else ""
                warnings.warn(
                    f"the fitted classifier exceeds gamma={gamma:g}{shown} (estimated from the released violations): "
                    f"with bound_B={bound_B:g} the game prefers violating, i.e. on these data fairness costs more error "
                    "per unit of violation than B allows (Lemma C.4: violation <= gamma + (1 + 2 nu) / B). Pass a larger "
                    "bound_B (more rounds and, at finite epsilon, more noise) if the violation matters more than the error.",
                    ConvergenceWarning,
                    stacklevel=find_stack_level(),
                )
        return {
            "classes_": data.classes, "groups_": data.groups, "bound_B_": bound_B, "nu_": plan.nu, "gamma_": gamma,
            "delta_": options.delta,
            "n_iter_": noisy.rounds, "best_iter_": best_t, "eta_": plan.eta,
            "epsilon_step_": plan.epsilon_step, "epsilon_selection_": plan.epsilon_selection,
            "accountant_": plan.certified_by,
            "gap_": float(noisy.gap) if not private else math.nan, "coef_": noisy.weights[:best_t].copy(),
            "lambda_": noisy.lam_sums[best_t] / best_t, "_aware": options.aware, "mixture_weights_": None,
            "_predict_seed_": noisy.predict_seed, "oracle_": options.oracle,
            "noise_to_signal_": dict(noisy.noise_to_signal), "constraint_": options.constraint,
            "fallback_": None if fallback is None else "constant",
        } | ({} if noisy.mixture is None else {  # epsilon = inf: the exact best mixture (_mixture)
            "coef_": noisy.weights[noisy.mixture["rounds"]], "mixture_weights_": noisy.mixture["q"],
            "lambda_": noisy.mixture["lam"], "best_iter_": int(noisy.mixture["rounds"].size),
        }) | ({} if fallback is None else {  # the best constant classifier (_fallback)
            "coef_": constant_weights(fallback.label, noisy.weights.shape[1], plan.n_groups if options.aware else 1),
            "best_iter_": 0,
        })

    def _privacy_spent(self, params: PrivacyParameters, results: dict[str, Any]) -> dict[str, Any]:
        if math.isinf(params.epsilon):
            return privacy_spent(
                math.inf, 0.0, protects="nothing: epsilon=inf runs the exact reduction", neighbouring=_NEIGHBOURING,
                relation=CHANGE_ATTRIBUTE,
            )
        # with a finite epsilon the game never stops early, so n_iter_ is the planned T
        how = (f"; oracle='statistics': {results['accountant_']}" if results["oracle_"] == "statistics" else
               f"; the 2T = {2 * results['n_iter_']} per-round releases composed by: {results['accountant_']} "
               f"(accountant={params.options.accountant!r})")
        if results["epsilon_selection_"]:
            how += (f"; the A-aware best-prefix choice by the exponential mechanism, epsilon "
                    f"{results['epsilon_selection_']:.6g} of the total (basic composition)")
        return privacy_spent(params.epsilon, params.options.delta, protects=_PROTECTS + how, neighbouring=_NEIGHBOURING,
                             relation=CHANGE_ATTRIBUTE)
