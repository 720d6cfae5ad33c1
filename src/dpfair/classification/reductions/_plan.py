"""Algorithm 3's plan and exact statistics: the typed stages of :class:`DPExponentiatedGradient`'s release.

The steps of the release template (:mod:`dpfair.base`) hand each other frozen dataclasses:

* :class:`GameOptions`, the validated parameters (``params.options``);
* :class:`GameData`, the validated rows and their groups, with the :class:`GamePlan` -- Algorithm 3's plan,
  fixed before the charge from the parameters and the public shape only (``T``, ``eta``, the privacy split, the
  noise scales), refused when a scale would overflow: :func:`game_plan`, part of step 1, so that the dry run
  (:meth:`~dpfair.base.PrivateEstimator.check_release`) refuses it too;
* :class:`GameStatistics`, the exact statistics the game releases (step 3, :func:`game_statistics`);
* :class:`GameOutcome`, what the noisy game (step 5, :func:`~dpfair.classification.reductions._run.run_game`) hands
  post-processing.

The game itself is :mod:`dpfair.classification.reductions._run` (its releases go through the audited functions of
:mod:`~dpfair.classification.reductions._game` and :mod:`~dpfair.classification.reductions._oracle`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dpfair.base import ValidatedData, ValidatedOptions
from dpfair.classification.reductions._accounting import (
    accuracy_n_iter,
    default_eta,
    default_n_iter,
    privacy_split,
)
from dpfair.classification.reductions._game import auditor_sensitivity, aware_static_sensitivity, oracle_sensitivity
from dpfair.classification.reductions._inputs import _check_release_room
from dpfair.classification.reductions._oracle import (
    POSITIVES_SENSITIVITY,
    STATISTICS_N_ITER,
    cell_sum_sensitivity,
    count_weight,
    statistics_split,
)

__all__ = ["GameData", "GameOptions", "GameOutcome", "GamePlan", "GameStatistics", "default_gamma", "game_plan",
           "game_statistics"]

#: Largest noise scale accepted: beyond it a release carries no information and sums overflow.
MAX_NOISE_SCALE = 1e100
#: From this number of declared groups on, ``epsilon = inf`` steps by ``2 / B`` (see :func:`game_plan`).
MANY_GROUPS = 4
#: The smallest default ``gamma`` (``gamma=None``).
DEFAULT_GAMMA = 0.05


def default_gamma(n_rows: int, n_groups: int) -> float:
    """The default allowed violation: ``max(0.05, sqrt(|A| / m))``, from public sizes only.

    A rate measured on a cell of ``n`` rows has standard error at most ``1 / (2 sqrt(n))``; the difference of two
    rates on cells of the mean size ``n = m / (2|A|)`` has standard error at most ``sqrt(|A| / m)``.  A tolerance
    below it asks the game to equalize differences that the training rows cannot tell from sampling noise (and that
    a held-out evaluation would not see); 0.05 is the tolerance below which the Adult experiments gain no held-out
    fairness (equalized-odds difference .04 at ``gamma = 0.05``).

    Parameters
    ----------
    n_rows : int
        Number of training rows ``m`` (public).
    n_groups : int
        Number of declared groups ``|A|``.

    Returns
    -------
    float
        The default ``gamma``.
    """
    return max(DEFAULT_GAMMA, math.sqrt(max(n_groups, 1) / max(n_rows, 1)))


@dataclass(frozen=True, eq=False)
class GameOptions(ValidatedOptions):
    """The validated parameters of :class:`DPExponentiatedGradient` that are not privacy parameters.

    Parameters
    ----------
    oracle : {"statistics", "paper"}
        The private Learner (``"auto"`` resolved).
    delta, beta : float
        As the estimator's parameters (``delta=None`` resolved).
    gamma : float or None
        As the estimator's parameter (``None``: :func:`default_gamma`, resolved by the plan).
    bound_B, n_iter, eta, nu : float, int or None
        As the estimator's parameters (``None``: the defaults of the plan).
    reference : str
        The constraints' reference (``"group0"`` or ``"overall"``).
    accountant, selection : str
        As the estimator's parameters.
    aware : bool
        ``use_sensitive_at_test_time``.
    constraint : FairnessConstraint
        The fairness constraint.
    fallback : {"constant", None}
        Whether the best constant classifier replaces an output that does not err clearly less than it.
    """

    oracle: str
    delta: float
    gamma: float | None
    bound_B: float | None
    beta: float
    n_iter: int | None
    eta: float | None
    nu: float | None
    reference: str
    accountant: str
    selection: str
    aware: bool
    constraint: Any
    fallback: str | None = "constant"


@dataclass(frozen=True, eq=False)
class GamePlan:
    """Algorithm 3's plan, public: from the parameters and the shape of the data only (no value of a row).

    Parameters
    ----------
    m, n_groups : int
        Rows and declared groups.
    gamma : float
        The allowed violation (``gamma=None`` resolved by :func:`default_gamma`).
    bound_B, nu, eta : float
        The multipliers' bound, the requested accuracy and the step.
    T : int
        The number of rounds.
    private, by_statistics, private_selection : bool
        Whether the fit draws noise, whether with the statistics oracle, and whether the A-aware best prefix
        is chosen privately.
    mu_cells, mu_round, cell_sensitivity : float
        The statistics oracle's Gaussian parameters (``inf`` otherwise).
    epsilon_step, epsilon_counts, epsilon_rest, epsilon_gram, epsilon_selection : float
        The privacy split of the paper's oracle (NaN with the statistics oracle, ``inf`` without privacy).
    certified_by : str
        How the split was certified (the accountant's words).
    worst : float
        The largest noise scale of the plan (``nan`` without privacy).
    count_weight : float
        The weight of the count coordinate of the statistics oracle's released cell sums
        (:func:`~dpfair.classification.reductions._oracle.count_weight`; 1 otherwise).
    count_sd : float
        Standard deviation of the noise of one released cell count (0 without privacy): it decides which declared
        groups the released counts give evidence about (:mod:`~dpfair.classification._group_evidence`).
    """

    m: int
    n_groups: int
    gamma: float
    bound_B: float
    nu: float
    T: int
    eta: float
    private: bool
    by_statistics: bool
    private_selection: bool
    mu_cells: float
    mu_round: float
    cell_sensitivity: float
    epsilon_step: float
    epsilon_counts: float
    epsilon_rest: float
    epsilon_gram: float
    epsilon_selection: float
    certified_by: str
    worst: float
    count_sd: float = 0.0
    count_weight: float = 1.0


@dataclass(frozen=True, eq=False, kw_only=True)
class GameData(ValidatedData):
    """Step 1's data: the public rows, each row's group (the template's fields) and the plan.

    Parameters
    ----------
    X : ndarray of shape (m, d)
        The features (public).
    y01 : ndarray of int
        The labels as 0/1 (public).
    classes : ndarray
        The two classes.
    l1_row_bound, l2_row_bound : float
        The declared bounds on a row of ``[x, 1]``.
    plan : GamePlan
        Algorithm 3's plan.
    """

    X: np.ndarray
    y01: np.ndarray
    classes: np.ndarray
    l1_row_bound: float
    l2_row_bound: float
    plan: GamePlan


@dataclass(frozen=True, eq=False)
class GameStatistics:
    """Step 3's output: the exact statistics the game releases, and the public ones it reads.

    Parameters
    ----------
    cell : ndarray of int
        Each row's (group, label) cell.
    Z : ndarray
        The design ``[X, 1]`` (A-blind) or ``[X, onehot(A)]`` (A-aware).
    c0 : ndarray
        ``C_0 = 1{y != 0}`` (Subroutine 2).
    exact_counts, label_counts : ndarray
        The rows per (group, label) cell (private) and per label (public).
    gram, moment0, zt_base, zt_cells : ndarray
        ``Z^T Z``, ``Z^T C_0``, ``Z^T 1{y != 1}`` and the per-cell sums of ``Z``.
    label_totals : ndarray or None
        The per-label sums of ``Z`` (public; A-blind only).
    rhs_signal : float
        The norm of the unconstrained right-hand side ``[X, 1]^T (2y - 1)`` (public).
    """

    cell: np.ndarray
    Z: np.ndarray
    c0: np.ndarray
    exact_counts: np.ndarray
    label_counts: np.ndarray
    gram: np.ndarray
    moment0: np.ndarray
    zt_base: np.ndarray
    zt_cells: np.ndarray
    label_totals: np.ndarray | None
    rhs_signal: float


@dataclass(frozen=True, eq=False)
class GameOutcome:
    """Step 5's output: what the noisy game released and chose, for post-processing.

    Parameters
    ----------
    noise_to_signal : dict
        The released noise-to-signal ratios (``"oracle"``, ``"auditor"``).
    mixture : dict or None
        The exact best mixture at ``epsilon = inf`` (``None`` otherwise).
    r_exact : ndarray or None
        Its (or the best prefix's) exact violations at ``epsilon = inf``.
    noise_sd : float
        The standard deviation of one violation estimate.
    weights, lam_sums : ndarray
        Every round's best response and the running sums of the multipliers.
    r_best_sum : ndarray
        The sum of the released violations up to the chosen prefix.
    best_t, rounds : int
        The chosen prefix and the rounds run.
    gap : float
        The duality gap at ``epsilon = inf`` (NaN otherwise).
    predict_seed : list of int or None
        The seed of the randomized predictions.
    fallback : ConstantFallback or None
        The best constant classifier, when the released game cannot tell its output from it
        (:mod:`~dpfair.classification.reductions._fallback`); ``None`` otherwise.
    dropped_groups : list of int
        The declared groups whose constraints the released counts do not support (dropped).
    """

    noise_to_signal: dict[str, float]
    mixture: dict[str, Any] | None
    r_exact: np.ndarray | None
    noise_sd: float
    weights: np.ndarray
    lam_sums: np.ndarray
    r_best_sum: np.ndarray
    best_t: int
    rounds: int
    gap: float
    predict_seed: list[int] | None
    fallback: Any = None
    dropped_groups: list[int] = field(default_factory=list)


def _rounds_and_step(options: GameOptions, epsilon: float, m: int, n_features: int, n_groups: int, bound_B: float,
                     nu: float, by_statistics: bool) -> tuple[int, float]:
    """The number of rounds ``T`` and the step ``eta`` of :func:`game_plan` (public: parameters and shape only)."""
    ref = {"reference": options.reference, "constraint": options.constraint}
    delta, aware = options.delta, options.aware
    vc_dim = n_features + n_groups if aware else n_features + 1
    t_privacy = (STATISTICS_N_ITER if by_statistics else
                 default_n_iter(epsilon, delta, bound_B, n_groups, m, vc_dim, options.beta, **ref))
    n_iter = options.n_iter
    T = n_iter if n_iter is not None else min(t_privacy, accuracy_n_iter(bound_B, nu, n_groups, **ref))
    eta = options.eta if options.eta is not None else default_eta(n_groups, T, **ref)
    if options.eta is None and math.isinf(epsilon) and n_groups >= MANY_GROUPS:
        # without noise the step is not tied to the noise's accumulation: fairlearn's eta0 / B with eta0 = 2 (Agarwal
        # et al.'s implementation), when larger.  With 4 or more groups, Algorithm 3's (1/2) sqrt(ln(K+1) / T) and the
        # 1,000-round cap stopped at duality gaps .021 (ACS income, race in 4 groups; target nu = .0087) and .052
        # (9 groups; .021), where 2 / B reaches the target in 250 and 20 rounds.  With 2 groups Algorithm 3's step
        # reaches it within 40 rounds on Adult and Communities and stays closer to fairlearn's point: kept.
        eta = max(eta, 2.0 / bound_B)
    return T, eta


def game_plan(options: GameOptions, epsilon: float, m: int, n_features: int, n_groups: int, l1_row_bound: float,
              l2_row_bound: float) -> GamePlan:
    """Algorithm 3's plan (``T``, ``eta``, the privacy split: public), refused when a noise scale would overflow.

    Parameters
    ----------
    options : GameOptions
        The validated parameters.
    epsilon : float
        The fit's epsilon.
    m, n_features, n_groups : int
        The public shape: rows, features and declared groups.
    l1_row_bound, l2_row_bound : float
        The declared bounds on a row.

    Returns
    -------
    GamePlan

    Raises
    ------
    ValueError
        If a noise scale of the plan exceeds ``MAX_NOISE_SCALE`` (the message names the declared arguments).
    """
    delta, aware, reference = options.delta, options.aware, options.reference
    ref = {"reference": reference, "constraint": options.constraint}
    worst = math.nan
    bound_B = float(n_groups) if options.bound_B is None else options.bound_B  # Corollary 4.6.1: B = |A|
    nu = 1.0 / math.sqrt(m) if options.nu is None else options.nu
    private = not math.isinf(epsilon) and n_groups > 1  # with one group no output depends on the labels
    by_statistics = private and options.oracle == "statistics"
    T, eta = _rounds_and_step(options, epsilon, m, n_features, n_groups, bound_B, nu, by_statistics)
    # A-aware, h and its training error read A exactly: the best-prefix choice is then a charged release
    private_selection = private and aware and options.selection == "best"
    certified_by = "none (epsilon = inf)"
    epsilon_gram = epsilon_selection = 0.0
    mu_cells = mu_round = cell_sensitivity = math.inf
    if by_statistics:  # _oracle: one Gaussian release of the cell sums, then T Gaussian Auditor rounds
        mu_cells, mu_round = statistics_split(epsilon, delta, T)
        cell_sensitivity = cell_sum_sensitivity(l2_row_bound)
        epsilon_step = epsilon_counts = epsilon_rest = math.nan
        certified_by = (f"Gaussian DP (Dong, Roth & Su): the cell sums (mu = {mu_cells:.4g}) and {T} Auditor rounds "
                        f"(mu = {mu_round:.4g} each) compose to mu = {math.hypot(mu_cells, mu_round * math.sqrt(T)):.4g}"
                        "-GDP, exactly (epsilon, delta)-DP")
        worst = max(cell_sensitivity / mu_cells * 4.0 * bound_B * m * n_groups, POSITIVES_SENSITIVITY / mu_round)
        if not worst <= MAX_NOISE_SCALE:
            raise ValueError(
                f"epsilon={epsilon!r} (with delta={delta!r}, bound_B={bound_B!r}, the declared bound on X "
                f"(x_norm_bound / x_l1_bound) and {T} rounds) gives Gaussian scales above {MAX_NOISE_SCALE:g}: the "
                "releases would carry no information and overflow; use a larger epsilon, fewer rounds (n_iter) or a "
                "smaller bound_B."
            )
    elif private:
        epsilon_step, epsilon_rest, certified_by = privacy_split(epsilon, delta, T, options.accountant)
        # the one-off share, in equal parts: the counts; with the A-aware oracle its Z^T Z and Z^T C_0; and
        # with selection="best" the A-aware prefix choice (basic composition of the parts)
        n_parts = 1 + int(aware) + int(private_selection)
        epsilon_counts = epsilon_rest / n_parts
        epsilon_gram = epsilon_rest / n_parts if aware else 0.0
        epsilon_selection = epsilon_rest / n_parts if private_selection else 0.0
        # worst case over the (not yet released) counts: denominators are clipped to >= 1, so q~_min >= 1/m
        ones = np.ones((n_groups, 2))
        worst = max(
            2.0 / epsilon_counts,
            auditor_sensitivity(ones, label_counts=np.ones(2), aware=aware, **ref) / epsilon_step,
            oracle_sensitivity(bound_B, ones / m, l1_row_bound, aware, **ref) / epsilon_step,
            aware_static_sensitivity(l1_row_bound) / max(epsilon_gram, 1e-300) if aware else 0.0,
        )
        if not worst <= MAX_NOISE_SCALE:
            raise ValueError(
                f"epsilon={epsilon!r} (with delta={delta!r}, bound_B={bound_B!r}, the declared bound on X and "
                f"{T} rounds) gives Laplace scales above {MAX_NOISE_SCALE:g}: the releases would carry no "
                "information and overflow; use a larger epsilon, fewer rounds (n_iter) or a smaller bound_B."
            )
    else:
        epsilon_step = epsilon_counts = epsilon_rest = math.inf
    if by_statistics:  # the count is the last coordinate of the Gaussian cell sums
        count_sd = cell_sensitivity / mu_cells / count_weight(l2_row_bound)
    elif private:  # Laplace(2 / epsilon_counts): standard deviation sqrt(2) times the scale
        count_sd = math.sqrt(2.0) * 2.0 / epsilon_counts
    else:
        count_sd = 0.0
    gamma = default_gamma(m, n_groups) if options.gamma is None else options.gamma
    return GamePlan(m=m, n_groups=n_groups, gamma=gamma, bound_B=bound_B, nu=nu, T=T, eta=eta, private=private,
                    by_statistics=by_statistics, private_selection=private_selection, mu_cells=mu_cells,
                    mu_round=mu_round, cell_sensitivity=cell_sensitivity, epsilon_step=epsilon_step,
                    epsilon_counts=epsilon_counts, epsilon_rest=epsilon_rest, epsilon_gram=epsilon_gram,
                    epsilon_selection=epsilon_selection, certified_by=certified_by, worst=worst, count_sd=count_sd,
                    count_weight=count_weight(l2_row_bound) if by_statistics else 1.0)


def game_statistics(plan: GamePlan, aware: bool, X: np.ndarray, y01: np.ndarray, index: np.ndarray) -> GameStatistics:
    """The exact statistics Algorithm 3 releases, refused when their release would overflow (step 3).

    Parameters
    ----------
    plan : GamePlan
        The plan.
    aware : bool
        ``use_sensitive_at_test_time``.
    X : ndarray of shape (m, d)
        The features.
    y01 : ndarray of int
        The labels as 0/1.
    index : ndarray of int
        Each row's group.

    Returns
    -------
    GameStatistics

    Raises
    ------
    ValueError
        If a statistic would overflow float64 once released (``_check_release_room``).
    """
    X_arr, m, n_groups, bound_B = X, plan.m, plan.n_groups, plan.bound_B
    cell = index * 2 + y01  # (group, label) cell of every row
    Z = np.hstack([X_arr, np.eye(n_groups)[index]]) if aware else np.hstack([X_arr, np.ones((m, 1))])
    c0 = y01.astype(float)  # Subroutine 2: C_0 = 1{y != 0}
    with np.errstate(over="ignore", invalid="ignore"):
        gram, moment0 = Z.T @ Z, Z.T @ c0
        # Z^T C_1 = Z^T 1{y != 1} + sum_cells tau_cell Z^T 1_cell (the same vectors every round)
        zt_base = Z.T @ (1.0 - c0)
        zt_cells = np.stack([Z[cell == c].sum(axis=0) for c in range(2 * n_groups)])
    if plan.private:
        _check_release_room(gram, moment0, zt_base, zt_cells, bound_B=bound_B, n_rows=m, worst_scale=plan.worst)
    return GameStatistics(
        cell=cell, Z=Z, c0=c0,
        exact_counts=np.bincount(cell, minlength=2 * n_groups).reshape(n_groups, 2).astype(float),
        label_counts=np.bincount(y01, minlength=2).astype(float),  # public: y is public
        gram=gram, moment0=moment0, zt_base=zt_base, zt_cells=zt_cells,
        # public: X and y (the label totals of the cell sums, and the unconstrained right-hand side Z^T (2y - 1))
        label_totals=np.stack([Z[y01 == label].sum(axis=0) for label in (0, 1)]) if not aware else None,
        # public: the unconstrained least-squares right-hand side [X, 1]^T (2y - 1)
        rhs_signal=float(np.linalg.norm(np.hstack([X_arr, np.ones((m, 1))]).T @ (2.0 * y01 - 1.0))),
    )
