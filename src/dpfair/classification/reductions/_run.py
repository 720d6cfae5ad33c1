"""The noisy game of :class:`~dpfair.classification.DPExponentiatedGradient`, after its one charge (Algorithm 3).

The template's ``_run`` step (:mod:`dpfair.base`) of the reductions, in the order it draws its noise:

* :func:`release_once`, the one-off releases: the cell counts (Laplace, L1 sensitivity 2) or the statistics
  oracle's cell sums of ``[x, 1]`` (Gaussian), and, A-aware, ``Z^T Z`` and ``Z^T C_0``; what the released counts
  cannot tell from an empty group is dropped (:mod:`~dpfair.classification._group_evidence`);
* :class:`Oracle`, the Learner's best response to the multipliers (Subroutine 2 with the Section 5 oracle);
* :func:`play`, Algorithm 3's rounds: the Auditor's noisy violations and the exponentiated-gradient step;
* :func:`outcome`, the output: the chosen prefix, the exact gap at ``epsilon = inf``, the constant fallback and
  the released noise-to-signal ratios.

Every use of the noise source is here; each release goes through the functions the audits target
(:mod:`~dpfair.classification.reductions._game`, :mod:`~dpfair.classification.reductions._oracle`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpfair._estimator import predict_seed as _predict_seed
from dpfair.base import PrivacyParameters
from dpfair.classification._group_evidence import GroupEvidence, group_evidence
from dpfair.classification.reductions._fallback import best_constant, constant_fallback
from dpfair.classification.reductions._game import (
    _Game,
    _lambda,
    _noisy_moment,
    _private_prefix_choice,
    _psd_inverse,
    auditor_sensitivity,
    aware_static_sensitivity,
    cell_costs,
    noisy_violations,
    oracle_sensitivity,
    violations,
)
from dpfair.classification.reductions._mixture import ExactMixture, better_mixture
from dpfair.classification.reductions._oracle import (
    POSITIVES_SENSITIVITY,
    ShrunkSolver,
    noise_to_signal,
    release_cell_sums,
    release_positives,
)
from dpfair.classification.reductions._plan import GameData, GameOutcome, GameStatistics
from dpfair.privacy.mechanisms import laplace_mechanism
from dpfair.privacy.noise import NoiseSource

__all__ = ["GAP_CHECK_EVERY", "Oracle", "run_game"]

#: Rounds between two duality-gap checks at ``epsilon = inf``.
GAP_CHECK_EVERY = 10


@dataclass(frozen=True, eq=False)
class OneOff:
    """The one-off releases, and what post-processing of them gives the game."""

    denominators: np.ndarray  # the released counts clipped at 1 (m for a dropped cell)
    evidence: GroupEvidence | None  # the cells the released counts support (None with one group)
    proportions: np.ndarray  # q~_ay
    label_proportions: np.ndarray
    gram: np.ndarray  # Z^T Z (released A-aware)
    moment0: np.ndarray  # Z^T C_0 (released A-aware)
    zt_cells: np.ndarray  # per-cell Z^T sums (released by the statistics oracle)


@dataclass(frozen=True, eq=False)
class Played:
    """What the rounds of :func:`play` leave for :func:`outcome`."""

    weights: np.ndarray
    lam_sums: np.ndarray
    values: np.ndarray  # every prefix's primal value
    r_sums: np.ndarray  # every prefix's sum of released violations
    errors: np.ndarray  # every prefix's training error
    h_best: np.ndarray
    r_best_sum: np.ndarray
    best_t: int
    rounds: int
    gap: float
    mixture: dict[str, Any] | None
    exact: ExactMixture | None
    noise_sd: float


def release_once(plan: Any, aware: bool, beta: float, data: GameData, s: GameStatistics, noise: NoiseSource,
                 constraint: Any) -> OneOff:
    """The one-off releases (paid from ``epsilon_rest``), then their post-processing."""
    private, m, n_groups = plan.private, plan.m, plan.n_groups
    gram, moment0, zt_cells = s.gram, s.moment0, s.zt_cells
    # ---- one-off releases (paid from epsilon_rest): the cell counts, Laplace with L1 sensitivity 2; or the
    # statistics oracle's cell sums of [x, 1] (Gaussian), whose last coordinate is the count
    if plan.by_statistics:
        released_cells = release_cell_sums(zt_cells.reshape(n_groups, 2, -1), s.label_totals,
                                           plan.cell_sensitivity, plan.mu_cells, noise, plan.count_weight)
        counts, zt_cells = released_cells[..., -1], released_cells.reshape(2 * n_groups, -1)
    elif private:
        counts = laplace_mechanism(s.exact_counts, sensitivity=2.0, epsilon=plan.epsilon_counts, noise=noise)
    else:
        counts = s.exact_counts
    denominators = np.maximum(counts, 1.0)  # public after release (post-processing)
    # cells whose released count is indistinguishable from 0 (an empty or tiny declared group): their constraints
    # are dropped and their denominators set to m, so that their noise, divided by a denominator clipped near 0,
    # cannot drive the multipliers, the costs or the noise scales (_group_evidence; post-processing)
    evidence = (group_evidence(constraint, counts, denominators, plan.count_sd, beta, float(m))
                if n_groups > 1 else None)
    if evidence is not None:
        denominators = evidence.denominators
    if aware and private:
        upper = np.triu_indices(gram.shape[0])
        released = laplace_mechanism(
            np.concatenate([gram[upper], moment0]),
            sensitivity=aware_static_sensitivity(data.l1_row_bound),
            epsilon=plan.epsilon_gram,
            noise=noise,
        )
        gram = np.zeros_like(gram)
        gram[upper] = released[: upper[0].size]
        gram = gram + np.triu(gram, 1).T
        moment0 = released[upper[0].size :]
    return OneOff(denominators=denominators, evidence=evidence, proportions=denominators / m,
                  label_proportions=s.label_counts / m, gram=gram, moment0=moment0, zt_cells=zt_cells)


class Oracle:
    """The Learner's best response ``(w, h)`` to the multipliers (Subroutine 2 with the Section 5 oracle).

    Called as ``oracle(lam, step)``: the paper's oracle releases ``Z^T C_1`` through the audited
    :func:`~dpfair.classification.reductions._game._noisy_moment` at ``step`` (``inf``: exact); the statistics
    oracle solves from its released cell sums (post-processing).  ``tau_norms`` keeps the norm of every exact
    call's costs (the statistics oracle's noise-to-signal ratio reads them).
    """

    def __init__(self, plan: Any, aware: bool, reference: str, constraint: Any, data: GameData, s: GameStatistics,
                 released: OneOff, noise: NoiseSource) -> None:
        private, by_statistics = plan.private, plan.by_statistics
        self._ref = {"reference": reference, "constraint": constraint}
        self._released, self._noise, self._by_statistics = released, noise, by_statistics
        self.Z, self._zt_base = s.Z, s.zt_base  # Z^T C_1 = zt_base + sum_cells tau_cell zt_cells[cell]
        self.gram_inv = _psd_inverse(released.gram, exact=not (aware and private))
        if by_statistics:  # the released sums' noise, shrunk every round (_oracle.ShrunkSolver)
            self._shrunk = ShrunkSolver(released.gram, plan.cell_sensitivity / plan.mu_cells)
        self.sensitivity = (oracle_sensitivity(plan.bound_B, released.proportions, data.l1_row_bound, aware, **self._ref)
                            if private and not by_statistics else math.inf)
        self.step = math.inf if by_statistics else plan.epsilon_step  # the statistics oracle: post-processing
        self.tau_norms: list[float] = []

    def __call__(self, lam: np.ndarray, step: float) -> tuple[np.ndarray, np.ndarray]:
        released = self._released
        tau = cell_costs(lam, released.proportions, label_proportions=released.label_proportions, **self._ref)
        if math.isinf(step):
            self.tau_norms.append(float(np.linalg.norm(tau)))
        moment1 = _noisy_moment(self._zt_base + tau.ravel() @ released.zt_cells, self.sensitivity, step, self._noise)
        if self._by_statistics:
            w = self._shrunk.solve(released.moment0 - moment1, tau)
        else:
            w = self.gram_inv @ (released.moment0 - moment1)  # predicted C_0 - C_1: h = 1 when C_1 is predicted lower
        return w, (self.Z @ w > 0).astype(float)


def play(plan: Any, options: Any, game: _Game, oracle: Oracle, released: OneOff, noise_sd: float,
         noise: NoiseSource) -> Played:
    """Algorithm 3's main loop (vectorized over rows and groups), stopped at duality gap ``nu`` at ``epsilon = inf``."""
    ref = {"reference": options.reference, "constraint": options.constraint}
    private, m, n_groups, T, bound_B = plan.private, plan.m, plan.n_groups, plan.T, plan.bound_B
    gamma, selection, epsilon_step = plan.gamma, options.selection, plan.epsilon_step
    keep = None if released.evidence is None else released.evidence.keep
    denominators, label_counts = released.denominators, game.label_counts
    theta = np.zeros(options.constraint.violation_shape(n_groups))
    if keep is not None:
        theta[~keep] = -math.inf  # a dropped constraint's multiplier stays 0 (line 3)
    weights = np.empty((T, oracle.Z.shape[1]))
    lam_sums = np.zeros((T + 1, *theta.shape))
    r_sum = np.zeros_like(theta)
    err_sum = 0.0
    h_sum = np.zeros(m)
    h_best, r_best_sum = h_sum, r_sum
    values, r_sums = np.empty(T), np.empty((T, *theta.shape))  # every prefix's primal value and sum of r~
    errors = np.empty(T)  # every prefix's training error (public A-blind: X, y and released weights)
    best_value, best_t, rounds, gap = math.inf, 0, T, math.nan
    # epsilon = inf: the exact best mixture of the responses seen (_mixture), kept where its gap is smaller
    exact = ExactMixture(game, bound_B) if not private and n_groups > 1 and selection == "best" else None
    mixture = None
    for t in range(T):
        lam = _lambda(theta, bound_B)  # line 3
        lam_sums[t + 1] = lam_sums[t] + lam
        w, h = oracle(lam, oracle.step)  # line 4 (Subroutine 2) with the Section 5 oracle
        weights[t] = w
        if exact is not None:
            exact.add(h, t)
        # lines 6-7: the Auditor's noisy violations
        positive = game.positives(h)
        if n_groups > 1 and plan.by_statistics:  # the positives per cell (Gaussian), violations by post-processing
            r_noisy = violations(release_positives(positive, positive.sum(axis=0), plan.mu_round, noise),
                                 denominators, gamma, label_counts=label_counts, **ref)
        elif n_groups > 1:
            r_noisy = noisy_violations(positive, denominators, gamma, epsilon_step, noise, label_counts=label_counts,
                                       aware=options.aware, **ref)
        else:
            r_noisy = np.full_like(theta, -gamma)
        if keep is not None:
            r_noisy = np.where(keep, r_noisy, -gamma)  # a dropped constraint: nothing to audit
        theta = theta + plan.eta * r_noisy  # line 8
        # the output: Algorithm 3's average, or the best iterate by its (noisy, pessimistic) primal value
        r_sum += r_noisy
        err_sum += game.error(h)
        n = t + 1
        value = err_sum / n + bound_B * max(0.0, float(np.max(r_sum / n, initial=-math.inf)) + 2.0 * noise_sd / math.sqrt(n))
        values[t], r_sums[t], errors[t] = value, r_sum, err_sum / n
        h_sum += h
        if selection == "average" or (value <= best_value and not plan.epsilon_selection):
            best_value, best_t = value, n
            h_best = h_sum.copy()
            r_best_sum = r_sum.copy()
        if not private and n_groups > 1 and n % GAP_CHECK_EVERY == 0 and n < T:
            gap = game.gap(h_best / best_t, lam_sums[best_t] / best_t, bound_B, oracle)
            gap, mixture = better_mixture(exact, gap, oracle)
            if gap <= plan.nu:  # a nu-approximate equilibrium: stop (Theorem 4.3)
                rounds = n
                break
    return Played(weights=weights, lam_sums=lam_sums, values=values, r_sums=r_sums, errors=errors, h_best=h_best,
                  r_best_sum=r_best_sum, best_t=best_t, rounds=rounds, gap=gap, mixture=mixture, exact=exact,
                  noise_sd=noise_sd)


def outcome(plan: Any, options: Any, data: GameData, s: GameStatistics, game: _Game, oracle: Oracle,
            released: OneOff, played: Played, noise: NoiseSource) -> GameOutcome:
    """The output after the rounds: the chosen prefix (or constant), the exact gap, the fallback and the ratios."""
    private, m, n_groups, T, bound_B = plan.private, plan.m, plan.n_groups, plan.T, plan.bound_B
    rounds, best_t, gap, mixture = played.rounds, played.best_t, played.gap, played.mixture
    h_best, r_best_sum, noise_sd = played.h_best, played.r_best_sum, played.noise_sd
    y01 = data.y01
    aware_fallback = None
    if plan.epsilon_selection:
        # A-aware the prefixes' errors read A, so the constant (value err(c): its constraints hold exactly, its
        # error is public) is one more candidate of the same exponential mechanism (utility sensitivity 1/m
        # still: its utility does not depend on A), inside the same epsilon_selection
        constant = best_constant(y01) if options.fallback == "constant" else None
        candidates = played.values[:rounds] if constant is None else np.append(played.values[:rounds], constant.error)
        best_t = _private_prefix_choice(candidates, m, plan.epsilon_selection, noise)
        if best_t > rounds:  # the constant was chosen
            aware_fallback, best_t = constant, rounds
        r_best_sum = played.r_sums[best_t - 1].copy()  # (h_best is used only at epsilon = inf)
    if not private and n_groups > 1 and rounds == T:
        gap = game.gap(h_best / best_t, played.lam_sums[best_t] / best_t, bound_B, oracle)
        gap, mixture = better_mixture(played.exact, gap, oracle, final=True)
    if mixture is not None:  # the exact best mixture: its error and violations for _solve's check
        r_exact = game.violations(mixture["positives"])
    else:
        r_exact = (game.violations(game.positives(h_best / best_t))
                   if not private and n_groups > 1 and best_t else None)
    # never worse than the constant: the best constant classifier (its rates are equal in every group, so every
    # constraint holds exactly, read off no group; its error is public, y being public) against the output's
    # training error (public A-blind: X, y and released weights), with a margin: post-processing, no charge
    fallback = aware_fallback
    if private and not options.aware and best_t and options.fallback == "constant":
        fallback = constant_fallback(float(played.errors[best_t - 1]), h_best / best_t, y01)
    if not private:
        ratios = {"oracle": 0.0, "auditor": 0.0}
    else:
        # noise sd per coordinate of the right-hand side: the paper's, calibrated to the worst costs, every round;
        # the statistics oracle's, sigma ||tau_t||, at the rounds' released multipliers (root mean square)
        coordinate_sd = (plan.cell_sensitivity / plan.mu_cells * math.sqrt(np.mean(np.square(oracle.tau_norms)))
                         if plan.by_statistics else math.sqrt(2.0) * oracle.sensitivity / plan.epsilon_step)
        ratios = noise_to_signal(coordinate_sd * math.sqrt(s.Z.shape[1]), s.rhs_signal, noise_sd, T, plan.gamma)
    evidence = released.evidence
    return GameOutcome(noise_to_signal=ratios, mixture=mixture, r_exact=r_exact, noise_sd=noise_sd,
                       weights=played.weights, lam_sums=played.lam_sums, r_best_sum=r_best_sum, best_t=best_t,
                       rounds=rounds, gap=gap, predict_seed=_predict_seed(noise), fallback=fallback,
                       dropped_groups=[] if evidence is None else evidence.dropped_groups)


def run_game(params: PrivacyParameters, data: GameData, s: GameStatistics, noise: NoiseSource) -> GameOutcome:
    """Algorithm 3 after the charge: the one-off releases, then the noisy game (every use of ``noise``).

    Parameters
    ----------
    params : PrivacyParameters
        The validated parameters (``params.options`` a :class:`~dpfair.classification.reductions._plan.GameOptions`).
    data : GameData
        The validated rows, their groups and the plan (``data.plan``).
    s : GameStatistics
        The exact statistics the game releases.
    noise : NoiseSource
        The template's noise source; every draw of the release comes from it.

    Returns
    -------
    GameOutcome
        What the game released and chose, for post-processing.
    """
    plan, options = data.plan, params.options
    reference, constraint = options.reference, options.constraint
    released = release_once(plan, options.aware, options.beta, data, s, noise, constraint)
    oracle = Oracle(plan, options.aware, reference, constraint, data, s, released, noise)
    sens_auditor = auditor_sensitivity(released.denominators, label_counts=s.label_counts, aware=options.aware,
                                       reference=reference, constraint=constraint)
    keep = None if released.evidence is None else released.evidence.keep
    game = _Game(data.y01, s.cell, plan.n_groups, released.denominators, s.label_counts, plan.gamma, reference,
                 constraint, keep)
    if plan.by_statistics:  # sd of a violation entry: at most sigma (1 / n_a + 1 / n_ref), sigma of a released count
        noise_sd = constraint.violation_sd(POSITIVES_SENSITIVITY / plan.mu_round, released.denominators)
    else:  # sd of one Laplace draw
        noise_sd = math.sqrt(2.0) * sens_auditor / plan.epsilon_step if plan.private else 0.0
    played = play(plan, options, game, oracle, released, noise_sd, noise)
    return outcome(plan, options, data, s, game, oracle, released, played, noise)
