"""Federated fairness of exposure: Fed-FairX-LinUCB, Priv-FairX-LinUCB and the communication baselines.

Solanki, Jain & Gujar, "Fairness and Privacy Guarantees in Federated Contextual Bandits"
(Algorithms 1 and 2, Sections 4-6).  ``m`` agents share the unknown ``theta*``; each plays
FairX-LinUCB (:mod:`dpfair.bandits.fairx.linucb`) on its own contexts, keeps the statistics it gathered
since the last synchronization (``S^i, s^i``) and the shared ones (``U, u``), and at communication
rounds every agent's ``S^j, s^j`` is sent to all the others (through the PRIVATIZER of
:mod:`dpfair.bandits.fairx.privatizer` for Priv-FairX-LinUCB).

Statistics (Section 4.1, Algorithm 1 lines 2, 9, 22 and 27)
------------------------------------------------------------
``U = sum_j (lambda I + sum_{tau <= t'} x x^T)`` after a synchronization at ``t'`` (``U_1 = lambda I``
before the first one), ``V^i = U + S^i`` and ``b^i = u + s^i``.  The code keeps ``V^i`` directly and
adds, at a synchronization, the other agents' ``S^j, s^j`` (plus their ``lambda I`` at the first one):
the same matrix, and with ``m = 1`` (nothing to receive) bit-for-bit the single-agent FairX-LinUCB.
For Priv-FairX-LinUCB, ``V^i = sum_j U_hat^j + S^i`` with ``U_hat^j = lambda I + sum x x^T + H^j``
(Section 4.2), plus the shift below.

Communication protocols (``protocol=``)
---------------------------------------
``"bounded-gap"`` (Algorithm 1, lines 10-17, exactly)
    ``G = ceil(T / (m d^2 ln(1 + T/d)^2))`` (natural logarithm, as in the elliptical-potential
    bound it comes from).  Synchronize at the end of round ``t = tau``, starting at ``tau = 1``; then
    ``tau <- 2 tau`` if ``t < G``, else ``tau <- tau + G``: doubling gaps early, then a fixed gap ``G``.
``"log-det"`` (B1: the trigger of Dubey & Pentland's FedUCB, after Wang et al.'s DisLinUCB)
    After its update at round ``t``, agent ``i`` asks for a synchronization when
    ``(t - t_last) * ln(det V^i_t / det V^i_last) > D``, ``t_last`` the last synchronization round and
    ``V^i_last`` its matrix right after it; all agents synchronize when any one asks (the synchronous
    setting).  ``D = sync_threshold``, by default ``T ln(m T) / (d m)`` (DisLinUCB's choice, which
    FedUCB inherits).  Reading: FedUCB states the trigger but no value of ``D`` for this setting.
``"p-fcb"`` (B2: Solanki et al. 2022 as the Fed-FairX paper describes it)
    Synchronize at rounds ``t = 1, 2, 4, 8, ...`` (powers of two) for the whole run: the doubling
    phase of Algorithm 1 that never switches to a fixed gap, so the last gaps are ``T/2 = O(T)``
    (Section 6.5: "communication gaps are as high as O(T) in the later stages").  Reading: P-FCB's
    own schedule also selects which arms to share; with one shared ``theta*`` only its exponentially
    spaced communication rounds carry over.

PRIVATIZER tree capacity (``tau`` of Algorithm 2): the length of the schedule for ``"bounded-gap"``
and ``"p-fcb"``; ``T`` for ``"log-det"``, whose number of synchronizations is data-dependent and
cannot be declared in advance any tighter.  The log-det trigger itself reads the agent's own
statistics and its timing is broadcast: that timing is *not* covered by the privacy accounting
(as in FedUCB's experiments); the bounded-gap and P-FCB schedules are data-independent.

Keeping the noisy Gram matrices positive definite (Lemma 4)
-----------------------------------------------------------
At each synchronization the total release noise in ``V^i`` is ``W = sum_j H^j``: a sum of at most
``m n`` symmetrized node blocks, i.e. ``sigma sqrt(m n) (G + G^T) / sqrt(2)`` with ``G`` standard
Gaussian ``d x d``, so ``||W||_op <= c = sqrt(2) sigma sqrt(m n) (2 sqrt(d) + sqrt(2 ln(1/b)))`` with
probability ``1 - b`` (Davidson-Szarek), ``b = alpha / (2 tau m)`` (union over releases and agents,
the ``(alpha / 2nm)``-accuracy of Lemma 4).  From the first synchronization on, ``V^i`` carries
the shift ``c I``, so its regularizer ``m lambda I + W + c I`` lies between ``rho_min = m lambda`` and
``rho_max = m lambda + 2c``.  The noise ``h`` of the target has ``||h|| <= sigma sqrt(m n)
(sqrt(d) + sqrt(2 ln(1/b)))`` with probability ``1 - b``; ``z = ||h|| / sqrt(rho_min)``.

Confidence radius (``radius="theory"``)
---------------------------------------
``sqrt(beta_t) = R sqrt(2 ln(1/alpha) + max(0, ln det V_t - d ln rho_min)) + sqrt(rho_max) S + z``:
Abbasi-Yadkori et al.'s Theorem 2 with the regularizer of Lemma 4 in its log-determinant form
(Lemma 4 then bounds ``det V_t`` by ``(rho_max + t/d)^d``).  Non-private learners have
``rho_min = rho_max`` = the ridge weight in ``V`` (``lambda``, ``m lambda`` after the first
synchronization) and ``z = 0`` (:func:`dpfair.bandits.confidence_radius`).  ``radius=`` a number
gives a constant ``sqrt(beta)`` instead (the paper does not state the ``beta_t`` of its
experiments).
"""

from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any

import numpy as np

from dpfair._validation import check_allocation, check_int
from dpfair._warnings import find_stack_level
from dpfair.bandits.fairx.environment import _BLOCK, FederatedSyntheticEnvironment
from dpfair.bandits.fairx.merit_policy import _EXPONENTIAL, _policy
from dpfair.bandits.fairx.result import FederatedResult
from dpfair.bandits.fairx.synchronization import (
    _AgentSync,
    _GuardedMerit,
    _MeritFailed,
    _Plan,
    _probe_merits,
    _Rounds,
    _Sync,
    _tree_keys,
)
from dpfair.bandits.ridge import RidgeState
from dpfair.privacy.budget import check_budgets_cover

__all__ = ["simulate_federated"]


# --------------------------------------------------------------------------------------------------
# the simulator
# --------------------------------------------------------------------------------------------------
def _check_seeds(seeds: Any) -> tuple[int, ...]:
    if isinstance(seeds, numbers.Integral):
        seeds = [seeds]
    if not isinstance(seeds, Sequence | np.ndarray) or len(seeds) == 0:
        raise ValueError("seeds must be a non-empty sequence of non-negative integers, e.g. seeds=[0, 1, 2].")
    out = tuple(check_int(s, "seeds", minimum=0) for s in seeds)
    if len(set(out)) != len(out):
        raise ValueError("seeds must be distinct (a repeated seed repeats the same run).")
    return out


ENGINES = ("compiled", "numpy")


def simulate_federated(
    env: FederatedSyntheticEnvironment,
    learners: Mapping[str, Any],
    horizon: int,
    n_agents: int,
    seeds: Sequence[int],
    *,
    engine: str = "compiled",
    record_actions: bool = False,
) -> FederatedResult:
    """Run learners on the same federated streams and measure fairness regret, reward regret and communication.

    All learners of a seed see the same contexts, reward noise and sampling variates.  State is
    batched over (learner, seed, agent) rows (learners that differ in merit function, ascent steps
    or ``regularization`` run in separate batches).  ``engine="compiled"`` runs every round of every
    row and every synchronization (release through the PRIVATIZER's noise, aggregate, receive) in numba
    kernels (:mod:`dpfair.bandits.fairx._kernels`), a block of 256 rounds per call, while another thread
    computes the private learners' noise for the next block; ``engine="numpy"`` is the reference: one
    vectorized numpy step per round.  Both give the same actions and the same results up to floating-point
    rounding (the tests check 1e-9).

    Parameters
    ----------
    env : FederatedSyntheticEnvironment
        The world.
    learners : mapping of str to learner
        Names and :class:`FairXLinUCB` / :class:`FedFairXLinUCB` / :class:`PrivFairXLinUCB` objects
        (not modified).
    horizon : int
        Rounds ``T``.
    n_agents : int
        Agents ``m`` (each ``FairXLinUCB`` agent learns alone).
    seeds : sequence of int
        One independent run (``theta*`` and streams) per seed.
    engine : {"compiled", "numpy"}, default "compiled"
        ``"compiled"``: numba kernels (compiled at the first call of a process, then read from
        numba's on-disk cache); ``"numpy"``: the vectorized numpy reference.  Learners with a callable
        ``merit`` cannot be compiled: their batch runs the numpy path under either engine.
    record_actions : bool, default False
        Keep every agent's action in ``result.actions`` (shape ``(n_learners, n_seeds, n_agents,
        horizon)``), under either engine.

    Returns
    -------
    FederatedResult
        Curves of shape ``(n_learners, n_seeds, horizon)`` (cumulative, averaged over agents),
        communication rounds ``(n_learners, n_seeds)`` and each learner's privacy.

    Raises
    ------
    TypeError, ValueError
        For invalid arguments, a declared ``context_bound`` below the environment's documented
        ``sqrt(dim)``, or sizes whose arrays cannot fit in memory.
    PrivacyBudgetExceededError
        When the learners' budgets cannot pay for all of them together.  Every check runs before any
        budget is charged: a refused call spends nothing.

    Warns
    -----
    UserWarning
        When a callable ``merit`` fails during the run (see Notes).

    Notes
    -----
    Everything is checked before any budget is charged: the environment, every learner's parameters,
    the sizes, the budgets together, and each callable ``merit`` on a public probe (the environment's
    range of mean rewards, ``[0, 1]``, in the shapes the run uses).  One thing can only be checked after
    the charge: the merit of the learners' own estimates, which depend on the private streams and the
    noise.  A merit that fails there (not finite and ``> 0``, or raising) is a handled outcome, not an
    exception: its batch of learners gets NaN curves and ``-1`` communication rounds,
    ``result.failed`` names each with ``{"code": "invalid_merit", "argument": "merit"}`` (no values), the
    other learners' results are kept, a ``UserWarning`` is raised and the charges stand (the noise was
    drawn).
    """
    dim, n_actions, horizon, n_agents, seeds = _check_arguments(env, learners, horizon, n_agents, seeds, engine,
                                                                record_actions)
    plans = _check_and_charge(learners, dim, n_actions, horizon, n_agents, len(seeds))
    fair, reward, comms, actions, failed = _run_batches(env, plans, horizon, n_agents, seeds, dim, n_actions, engine,
                                                        record_actions)
    if failed:
        _warn_failed_merits(failed)
    return FederatedResult(
        seeds=seeds,
        privacy_spent={p.name: p.spent for p in plans},
        learner_names=tuple(p.name for p in plans),
        fair_regret=np.cumsum(fair, axis=-1),
        reward_regret=np.cumsum(reward, axis=-1),
        communication_rounds=comms,
        actions=actions,
        failed=failed,
    )


def _check_and_charge(learners: Mapping[str, Any], dim: int, n_actions: int, horizon: int, n_agents: int,
                      n_seeds: int) -> list[_Plan]:
    """Every learner's plan, every check before any charge, then each private learner's one charge; the plans run."""
    # every learner's dry run, named as in this simulation (a private learner's: dpfair.base's template, steps 1
    # and 2, as check_reset runs them) checks all that its run will, plans it and says its charge, charging nothing
    charges, plans = {}, []
    for name, learner in learners.items():
        if getattr(type(learner), "_fairx_role", None) not in ("alone", "federated"):
            raise TypeError(f"learners[{name!r}] must be FairXLinUCB, FedFairXLinUCB or PrivFairXLinUCB, got "
                            f"{type(learner).__name__}.")
        plan, charge = learner._dry_run_plan(n_actions, dim, horizon, n_agents=n_agents, name=str(name))
        plans.append(plan)
        if charge is not None:
            charges[name] = charge
    _check_numeric_ranges(plans, dim, horizon, n_agents)
    # every callable merit on a public probe: the documented range of the mean rewards, in the shapes the run uses
    _probe_merits(plans, n_seeds, n_agents, n_actions)
    # budgets shared by several private learners must pay for all of them before any is charged (the dry run's charge
    # is the one the release makes: epsilon = inf is charged as inf, which only an infinite budget pays)
    check_budgets_cover(
        [(charge.budget, charge.epsilon, charge.delta, f"learners[{name!r}].budget", charge.relation)
         for name, charge in charges.items()],
        fix="give each private learner a budget that pays for it, or a larger shared budget",
    )
    # every argument is valid: each private learner's release template checks again, charges once and warns at the
    # user's line; its run's plan (from the options it validated) is the one the simulation runs
    for i, name in enumerate(learners):
        if name in charges:
            plans[i] = learners[name]._open(n_actions, dim, horizon, n_agents=n_agents, name=str(name))["run"].plan
    return plans


def _warn_failed_merits(failed: dict[str, dict[str, str]]) -> None:
    """The one warning of learners whose merit failed on their own estimates (after the charges), at the user's line."""
    warnings.warn(
        f"learners {sorted(failed)}: merit returned values that are not finite and > 0 (or raised) on the learners' "
        "own estimates during the run, after the budgets were charged (the charges stand: the noise was drawn). "
        "Their curves are NaN, their communication rounds -1, and result.failed names them. Use a merit that is "
        "finite and > 0 for every real mu (e.g. exp, or softplus plus a floor).",
        UserWarning,
        stacklevel=find_stack_level(),
    )


def _check_arguments(env: Any, learners: Any, horizon: Any, n_agents: Any, seeds: Any, engine: Any,
                     record_actions: Any) -> tuple[int, int, int, int, tuple[int, ...]]:
    """The arguments of :func:`simulate_federated` and whether its arrays fit: ``(dim, n_actions, horizon, n_agents, seeds)``."""
    if not isinstance(record_actions, bool):
        raise TypeError(f"record_actions must be True or False, got {record_actions!r}.")
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {ENGINES} ('numpy' is the reference implementation), got {engine!r}.")
    if not isinstance(env, FederatedSyntheticEnvironment):
        raise TypeError(f"env must be a FederatedSyntheticEnvironment, got {type(env).__name__}.")
    dim, n_actions, _ = env._validate()
    horizon = check_int(horizon, "horizon", minimum=1)
    n_agents = check_int(n_agents, "n_agents", minimum=1)
    seeds = _check_seeds(seeds)
    if not isinstance(learners, Mapping) or not learners:
        raise ValueError("learners must be a non-empty dict of name -> learner, e.g. {'Fed': FedFairXLinUCB()}.")
    if horizon >= 2**63:
        raise ValueError(f"horizon={horizon} does not fit the int64 round numbers; use a horizon below 2**63.")
    L_, S_, M_ = len(learners), len(seeds), n_agents
    # the curves (and their running sums), each learner's schedule, the batched ridge state and a block of contexts
    terms = [
        (4 * 8 * L_ * S_ * horizon + L_ * (horizon + 1), f"horizon={horizon} with {L_} learner(s) and {S_} seed(s)",
         "lower horizon or use fewer seeds"),
        (6 * 8 * L_ * S_ * M_ * dim * dim, f"n_agents={n_agents} and dim={dim} with {L_} learner(s) and {S_} seed(s)",
         "lower n_agents or dim"),
        (8 * (2 * min(_BLOCK, horizon) + 4 * L_) * S_ * M_ * n_actions * dim,
         f"n_agents={n_agents}, dim={dim} and n_actions={n_actions} with {S_} seed(s)", "lower n_agents, dim or n_actions"),
    ]
    largest = max(terms)
    check_allocation(sum(t[0] for t in terms), subject=largest[1], what="the simulation's arrays", fix=largest[2])
    return dim, n_actions, horizon, n_agents, seeds


def _check_numeric_ranges(plans: list[_Plan], dim: int, horizon: int, n_agents: int) -> None:
    """Each plan's shared hyper-parameters in their float64 ranges, and its declared context bound."""
    # declared bounds against the environment's documented one: contexts uniform in [0, 1]^dim, ||x||_2 <= sqrt(dim)
    documented = math.sqrt(dim)
    for plan in plans:
        # numeric ranges of the shared hyper-parameters: outside them some round overflows to inf, then NaN, after
        # the budgets were charged (V singular, exp(merit_scale * mu), the ascent's step, the radius)
        c, learner_name = plan.core, f"learners[{plan.name!r}]"
        floor = 1e-12 * dim * (horizon + 1)  # V = lambda I + sum x x^T, ||x||^2 <= dim: condition number <= 1e12
        if not floor <= c.regularization <= 1e300 / n_agents:
            raise ValueError(
                f"{learner_name}.regularization={c.regularization!r} is outside [{floor:.3g}, {1e300 / n_agents:.3g}] "
                f"for dim={dim}, horizon={horizon} and n_agents={n_agents}: V = regularization I + sum x x^T would be "
                "singular or overflow in float64; choose a regularization in that range."
            )
        scale = c.merit_scale if c.merit is _EXPONENTIAL else 1.0
        if not (scale <= 1e100 and c.step_size * (1.0 + scale) <= 1e100):
            raise ValueError(
                f"{learner_name}.merit_scale={c.merit_scale!r} with step_size={c.step_size!r} is too large: "
                "exp(merit_scale * mu) or the ascent's steps overflow float64; use merit_scale <= 1e100 and "
                "step_size * (1 + merit_scale) <= 1e100."
            )
        if c.confidence_delta < 1e-300:
            raise ValueError(
                f"{learner_name}.confidence_delta={c.confidence_delta!r} is too small: ln(1 / confidence_delta) "
                "overflows float64; use confidence_delta >= 1e-300."
            )
        radius = c.radius if c.radius != "theory" else 0.0
        if not (c.noise_std <= 1e100 and c.theta_norm_bound * math.sqrt(c.regularization) <= 1e100
                and radius <= 1e100):
            raise ValueError(
                f"{learner_name}: noise_std={c.noise_std!r}, theta_norm_bound={c.theta_norm_bound!r} (times "
                f"sqrt(regularization)) or radius={c.radius!r} give a confidence radius that overflows float64; "
                "keep each below 1e100."
            )
        if math.isfinite(plan.context_bound) and plan.context_bound < documented:
            raise ValueError(
                f"learners[{plan.name!r}].context_bound={plan.context_bound!r} is below the environment's documented "
                f"bound sqrt(dim)={documented:.6g} (contexts uniform in [0, 1]^dim); declare context_bound >= sqrt(dim)."
            )


def _run_batches(env: FederatedSyntheticEnvironment, plans: list[_Plan], horizon: int, n_agents: int,
                 seeds: tuple[int, ...], dim: int, n_actions: int, engine: str, record_actions: bool) -> tuple[Any, ...]:
    """Every batch of learners (same merit, ascent steps and regularization) on its engine, after the charges.

    Returns ``(fair, reward, comms, actions, failed)``: the per-round regrets ``(L, S, horizon)``, the communication
    rounds ``(L, S)``, the actions (or ``None``) and the learners whose merit failed on their own estimates.
    """
    S_, M_ = len(seeds), n_agents
    L, S = len(plans), len(seeds)
    fair = np.zeros((L, S, horizon))
    reward = np.zeros((L, S, horizon))
    comms = np.zeros((L, S), dtype=np.int64)
    actions = np.zeros((L, S, M_, horizon), dtype=np.int64) if record_actions else None
    groups: dict[Any, list[int]] = {}
    for i, plan in enumerate(plans):
        c = plan.core
        key = (c.merit if c.merit is _EXPONENTIAL else id(c.merit), c.n_steps, c.regularization)
        groups.setdefault(key, []).append(i)
    failed: dict[str, dict[str, str]] = {}
    guards: dict[int, _GuardedMerit] = {}
    for members in groups.values():
        group = [plans[i] for i in members]
        chosen = None if actions is None else np.zeros((len(members), S_, M_, horizon), dtype=np.int64)
        # a callable merit cannot be compiled: its batch runs the numpy reference
        if engine == "compiled" and group[0].core.merit is _EXPONENTIAL:
            f, r, cm = _run_group_compiled(env, group, horizon, n_agents, seeds, dim, n_actions, chosen)
        else:
            merit = group[0].core.merit
            if merit is not _EXPONENTIAL:
                # the merit of the learners' own estimates can only be checked during the run, after the charge:
                # a failure there is a handled outcome of this batch (result.failed), never a raise-after-charge
                guard = guards.setdefault(id(merit), _GuardedMerit(merit))
                group = [replace(plan, core=replace(plan.core, merit=guard)) for plan in group]
            try:
                f, r, cm = _run_group(env, group, horizon, n_agents, seeds, dim, n_actions, chosen)
            except _MeritFailed:
                f, r = np.full((len(members), S, horizon), np.nan), np.full((len(members), S, horizon), np.nan)
                cm = np.full((len(members), S), -1, dtype=np.int64)
                if chosen is not None:
                    chosen[...] = -1
                failed.update({plans[i].name: {"code": "invalid_merit", "argument": "merit"} for i in members})
        if actions is not None:
            actions[members] = chosen
        fair[members], reward[members], comms[members] = f, r, cm
    return fair, reward, comms, actions, failed


def _run_group(
    env: FederatedSyntheticEnvironment,
    plans: list[_Plan],
    horizon: int,
    n_agents: int,
    seeds: tuple[int, ...],
    dim: int,
    n_actions: int,
    actions: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The numpy reference: every round of every row through :class:`_Rounds`, synchronizations through :class:`_Sync`.

    ``actions``: optional ``(L, S, M, T)`` array filled with every agent's action.
    """
    L, S, M, d, K = len(plans), len(seeds), n_agents, dim, n_actions
    N = L * S * M
    rounds = _Rounds(plans, S, M, d, K)
    ridge = rounds.ridge
    syncs = [_Sync(p, i, S, M, d, tree_keys=_keys(p, seeds, M)) for i, p in enumerate(plans) if p.protocol != "none"]
    bounds = [p.context_bound for p in plans if p.private or math.isfinite(p.context_bound)]
    bound = min(bounds) if bounds else math.inf
    thetas = np.stack([env.theta_star(s) for s in seeds])  # (S, d)
    fair = np.zeros((L, S, horizon))
    reward = np.zeros((L, S, horizon))
    rows = np.arange(N)
    streams = [env._blocks(s, horizon, M) for s in seeds]
    t = 0
    lam = plans[0].core.regularization
    rho_min = np.full((L, S), lam)
    extra = np.zeros((L, S))
    for blocks in zip(*streams, strict=True):
        X = np.stack([b[0] for b in blocks], axis=1)  # (b, S, M, K, d)
        eta = np.stack([b[1] for b in blocks], axis=1)  # (b, S, M)
        U = np.stack([b[2] for b in blocks], axis=1)
        _check_context_bound(X, bound)
        mu_true = np.einsum("bsmkd,sd->bsmk", X, thetas)
        for i in range(X.shape[0]):
            t += 1
            Xt = np.broadcast_to(X[i], (L, S, M, K, d)).reshape(N, K, d)
            for sync in syncs:
                rho_min[sync.index], extra[sync.index] = sync.rho_min, sync.extra
            # Algorithm 1, lines 5-8
            u = np.broadcast_to(U[i], (L, S, M)).reshape(N)
            action, pi = rounds.select(Xt, u, rho_min, extra)
            if actions is not None:
                actions[..., t - 1] = action.reshape(L, S, M)
            x = Xt[rows, action]
            mu_t = np.broadcast_to(mu_true[i], (L, S, M, K))
            y = mu_t.reshape(N, K)[rows, action] + np.broadcast_to(eta[i], (L, S, M)).reshape(N)
            # metrics: Definition 1 (L1 distance to the optimal fair policy: the per-round term of
            # dpfair.fairness.fairness_regret, streamed so no (T, ..., K) policy array is stored) and reward regret
            pi_star = _policy(mu_t, rounds.merit, rounds.learner_scale)[0]
            pi4 = pi.reshape(L, S, M, K)
            fair[:, :, t - 1] = np.abs(pi4 - pi_star).sum(axis=-1).mean(axis=-1)
            reward[:, :, t - 1] = ((pi_star - pi4) * mu_t).sum(axis=-1).mean(axis=-1)
            # line 9: local ridge update; lines 10-27: synchronization
            x4, y3 = x.reshape(L, S, M, d), y.reshape(L, S, M)
            rounds.update(x4, y3)
            for sync in syncs:
                sync.after_round(t, x4[sync.index], y3[sync.index], ridge)
    comms = np.zeros((L, S), dtype=np.int64)
    for sync in syncs:
        comms[sync.index] = sync.comms
    return fair, reward, comms


def _keys(plan: _Plan, seeds: tuple[int, ...], n_agents: int) -> np.ndarray | None:
    """Seeded PRIVATIZER trees keyed by (random_state, seed, agent): the noise a lone agent draws too."""
    return _tree_keys(plan.random_state, seeds, np.arange(n_agents)) if plan.private else None


def _check_context_bound(X: np.ndarray, bound: float) -> None:
    if math.isfinite(bound) and np.sqrt((X * X).sum(axis=-1)).max() > bound:
        raise ValueError(
            f"a context has ||x||_2 above the declared context_bound={bound:g}; declare a bound that holds "
            "for every possible context (sqrt(dim) for contexts in [0, 1]^dim)."
        )


def _run_group_compiled(
    env: FederatedSyntheticEnvironment,
    plans: list[_Plan],
    horizon: int,
    n_agents: int,
    seeds: tuple[int, ...],
    dim: int,
    n_actions: int,
    actions: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`_run_group` with the rounds *and* the synchronizations in numba kernels (exponential merit only).

    The same streams, state and arithmetic (up to floating-point rounding): each ``(learner, seed)`` group of
    agents runs a whole block of rounds in :func:`dpfair.bandits.fairx._kernels.run_groups`, synchronizing
    inside the kernel (release, aggregate, receive).  Python is entered between blocks and only where a group
    needs it: the next block of PRIVATIZER noise (:class:`_NoiseFeed`), a log-det trigger within rounding of
    its threshold (decided here with the reference's ``np.linalg.slogdet``), or an error to raise.
    """
    from dpfair.bandits.fairx import _kernels as kernels  # numba is imported at the first compiled run

    L, S, M, d = len(plans), len(seeds), n_agents, dim
    N, G = L * S * M, L * S
    core0 = plans[0].core
    n_steps, lam = core0.n_steps, core0.regularization
    ridge = RidgeState(d, batch_shape=(N,), regularization=lam)
    ridge_state = (ridge.gram, ridge.gram_inverse, ridge.target, np.zeros((N, d, d)), np.zeros((N, d)))
    learning, theory = _row_parameters(plans, S * M)
    # per row: rho_min, extra, t_last, ln det V_last (and V_last itself, for Python's exact log-det decisions), and
    # 1 where a synchronization gave every agent of the row's group the same V (one eigendecomposition for them)
    sync_rows = (np.full(N, lam), np.zeros(N), np.zeros(N), np.full(N, d * math.log(lam)), np.zeros(N))
    gram_last = np.zeros((N, d, d))
    protocol = np.array([{"none": 0, "log-det": 2}.get(p.protocol, 1) for p in plans], dtype=np.int64)
    schedule = np.zeros((L, horizon + 1), dtype=bool)
    for i, p in enumerate(plans):
        if p.schedule is not None:
            schedule[i] = p.schedule
    private = np.array([p.private for p in plans])
    n_releases = np.array([p.n_releases for p in plans], dtype=np.int64)
    feeds, learner_real, noise_row, private_rows = _privatizer_rows(plans, seeds, M, d)
    control = tuple(np.zeros(G, dtype=np.int64) for _ in range(6))  # synced, comms, progress, pending, decision, status
    progress, status = control[2], control[5]
    out = (np.zeros((N, _BLOCK)), np.zeros((N, _BLOCK)), np.zeros((N, _BLOCK), dtype=np.int64))
    mat = np.zeros((N, 2, d, d))
    mat[:, 0] = np.eye(d)  # each row's eigenvectors of V, kept from round to round (a warm start); 1: scratch
    scratch = (mat, np.zeros((G, 5, d, d)))  # and each group's synchronization scratch
    bounds = [p.context_bound for p in plans if p.private or math.isfinite(p.context_bound)]
    bound = min(bounds) if bounds else math.inf
    thetas = np.stack([env.theta_star(s) for s in seeds])  # (S, d)
    fair = np.zeros((L, S, horizon))
    reward = np.zeros((L, S, horizon))
    streams = [env._blocks(s, horizon, M) for s in seeds]
    all_groups = np.arange(G, dtype=np.int64)
    t = 0
    # the noise of the next block's releases is computed by another thread while the kernels run this block (a
    # factorized PRIVATIZER's table: a function of its keys alone, the same integers whenever it is computed)
    ahead = [feed for feed in feeds.values() if feed.can_prefetch]
    with kernels.pool() as workers, ThreadPoolExecutor(max_workers=1, thread_name_prefix="dpfair-noise") as noise:
        prefetched: list = []
        for blocks in zip(*streams, strict=True):
            X = np.ascontiguousarray(np.stack([b[0] for b in blocks], axis=1))  # (b, S, M, K, d)
            eta = np.ascontiguousarray(np.stack([b[1] for b in blocks], axis=1))  # (b, S, M)
            U = np.ascontiguousarray(np.stack([b[2] for b in blocks], axis=1))
            _check_context_bound(X, bound)
            mu_true = np.ascontiguousarray(np.einsum("bsmkd,sd->bsmk", X, thetas))
            b = X.shape[0]
            args = (S, M, n_steps, lam, kernels.TRIGGER_MARGIN, (X, eta, U, mu_true), ridge_state, learning, theory,
                    sync_rows, gram_last, protocol, schedule, private, n_releases, learner_real, private_rows, noise_row,
                    control, out, scratch)
            for future in prefetched:
                future.result()  # its errors, here
            for feed in feeds.values():  # noise for every release this block may make (no stop for it, usually)
                feed.refill(b)
            # what the next block's refill will copy: up to a full set of slots after this block's releases
            prefetched = [noise.submit(feed.prefetch, feed.reach(b)) for feed in ahead] if t + b < horizon else []
            progress[:] = 0
            todo = all_groups
            while todo.size:
                kernels.run(workers, todo, int(progress[todo].min()), b, t, M, args)
                todo = todo[status[todo] != kernels.DONE]
                for group in todo:  # what the kernels need from Python (rare: once per noise block, or an error)
                    code, learner = int(status[group]), int(group) // S
                    if code == kernels.NEED_NOISE:
                        feeds[learner].refill(1)
                    elif code == kernels.NEED_DECISION:
                        control[4][group] = _log_det_decision(group, t + int(progress[group]), plans[learner], M, d,
                                                              ridge.gram, gram_last, sync_rows[2], control[0][group])
                    else:
                        _raise_kernel_error(code)
            fair[:, :, t : t + b] = out[0][:, :b].reshape(L, S, M, b).mean(axis=2)
            reward[:, :, t : t + b] = out[1][:, :b].reshape(L, S, M, b).mean(axis=2)
            if actions is not None:
                actions[..., t : t + b] = out[2][:, :b].reshape(L, S, M, b)
            t += b
        for future in prefetched:
            future.result()
    return fair, reward, control[1].reshape(L, S).copy()


def _row_parameters(plans: list[_Plan], per_learner: int) -> tuple[tuple[np.ndarray, ...], np.ndarray]:
    """Each row's learning parameters for the kernels (a learner's repeated over its ``per_learner`` rows).

    Returns ``(learning, theory)``: merit scale, step size, noise std, theta bound, ``2 ln(1 / confidence_delta)``,
    the fixed radius and the shared rewards' clip ``B``; and where the radius is the theory's.
    """
    rows = lambda values: np.repeat(np.asarray(values, dtype=float), per_learner)  # noqa: E731
    learning = (
        rows([p.core.merit_scale for p in plans]), rows([p.core.step_size for p in plans]),
        rows([p.core.noise_std for p in plans]), rows([p.core.theta_norm_bound for p in plans]),
        2.0 * np.log(1.0 / rows([p.core.confidence_delta for p in plans])),
        rows([0.0 if p.core.radius == "theory" else p.core.radius for p in plans]),
        rows([p.reward_bound if p.private else math.inf for p in plans]),  # shared rewards clipped to B
    )
    theory = np.repeat(np.array([p.core.radius == "theory" for p in plans]), per_learner)
    return learning, theory


def _privatizer_rows(plans: list[_Plan], seeds: tuple[int, ...], M: int,
                     d: int) -> tuple[dict[int, _NoiseFeed], tuple[np.ndarray, ...], np.ndarray, tuple[np.ndarray, ...]]:
    """The PRIVATIZERs of the private learners and the kernels' arrays for them.

    Returns ``(feeds, learner_real, noise_row, private_rows)``: each private learner's noise feed (built as the
    numpy engine builds its PRIVATIZER, the same seeded keys), each learner's real parameters, each row's slot in
    the noise arrays (-1: none) and the running sums and noise slots the kernels read and write.
    """
    L, S = len(plans), len(seeds)
    N = L * S * M
    # the PRIVATIZERs of the private learners, built as the numpy engine builds them (the same seeded keys)
    feeds = {}
    for i, p in enumerate(plans):
        if p.private:
            feeds[i] = _NoiseFeed(_AgentSync(p, S, M, d, tree_keys=_keys(p, seeds, M)).privatizer, S, M, d, i * S * M)
    learner_real = (
        np.array([p.threshold for p in plans]), np.array([p.shift for p in plans]),
        np.array([p.rho_max_extra for p in plans]), np.array([p.target_noise_bound for p in plans]),
        np.array([feeds[i].privatizer.granularity if i in feeds else 1.0 for i in range(L)]),
    )
    noise_row = np.full(N, -1, dtype=np.int64)
    for k, feed in enumerate(feeds.values()):
        noise_row[feed.first_row : feed.first_row + S * M] = k * S * M + np.arange(S * M)
    block = _NoiseFeed.block_length(len(feeds) * S * M, d)
    P = max(1, len(feeds) * S * M)
    private_rows = (
        np.zeros((N, d, d)), np.zeros((N, d)),  # exact running sums of the non-private agents
        np.zeros((N, d, d), dtype=np.int64), np.zeros((N, d), dtype=np.int64), np.zeros(N, dtype=np.int64),
        np.zeros((P, block, d, d), dtype=np.int64), np.zeros((P, block, d), dtype=np.int64),  # noise of the next releases
        np.zeros(P, dtype=np.int64), np.zeros(P, dtype=np.int64),  # release number of each row's slot 0, slots filled
    )
    private_rows = private_rows + _exact_rows(plans, feeds, P, d)
    for k, feed in enumerate(feeds.values()):
        feed.bind(private_rows, k * S * M)
    return feeds, learner_real, noise_row, private_rows


def _exact_rows(plans: list[_Plan], feeds: dict[int, _NoiseFeed], n_rows: int, d: int) -> tuple[np.ndarray, ...]:
    """The exact BLT's arrays of the kernels (:mod:`dpfair.bandits.fairx._exact_kernels`; one row where no learner
    uses it): encoder and its pending step (two-word integers), pending outputs, decoder, released sums, each
    learner's ``(Theta, Omega)`` and ``(theta, omega)``, and which learners use it."""
    from dpfair.bandits.fairx._exact_kernels import check_parameters
    from dpfair.bandits.fairx._privatizer_exact import PARAM_BITS, dyadic_blt

    exact = np.array([i in feeds and feeds[i].privatizer._exact_blt is not None for i in range(len(plans))])
    B, E = 3, (d + 1) * (d + 2) // 2
    P = n_rows if exact.any() else 1
    blt_int = np.zeros((len(plans), 2, B), dtype=np.int64)
    for i in np.flatnonzero(exact):
        blt_int[i] = check_parameters(*dyadic_blt(plans[i].n_releases, B))
    return (
        np.zeros((P, B, E, 2), dtype=np.uint64), np.zeros((P, B, E, 2), dtype=np.uint64), np.zeros((P, E), np.int64),
        np.zeros((P, B, E)), np.zeros((P, E)), blt_int, blt_int / 2.0**PARAM_BITS, exact,
    )


def _log_det_decision(group: int, t: int, plan: _Plan, M: int, d: int, gram: np.ndarray, gram_last: np.ndarray,
                      t_last: np.ndarray, synced: int) -> int:
    """B1's trigger for one group exactly as ``_AgentSync.trigger`` computes it (``np.linalg.slogdet``)."""
    rows = slice(group * M, (group + 1) * M)
    log_det = np.linalg.slogdet(gram[rows])[1]
    last = np.linalg.slogdet(gram_last[rows])[1] if synced else np.full(M, d * math.log(plan.core.regularization))
    return int(((t - t_last[rows]) * (log_det - last) > plan.threshold).any())


def _raise_kernel_error(code: int) -> None:
    """The errors of the numpy engine's synchronizations, raised for a kernel's status ``code``."""
    from dpfair.bandits.fairx import _kernels as kernels

    if code == kernels.NOT_POSITIVE_DEFINITE:  # _AgentSync.receive
        raise ValueError("a synchronized Gram matrix is not positive definite (release noise above the shift); "
                         "raise regularization or confidence_delta's shift, or use a larger epsilon.")
    if code == kernels.BEYOND_RANGE:  # Privatizer.release
        raise ValueError("the running sums reach 2**62 grid steps of the noise, beyond exact integer arithmetic; "
                         "rescale the contexts and rewards (smaller context_bound and reward_bound) or plan fewer rounds.")
    if code == kernels.BEYOND_ENCODER:  # ExactBLTRelease.encode
        raise ValueError("the exact BLT encoder's buffers would reach 2**78 (or its output 2**62) grid steps, beyond "
                         "the compiled engine's two-word integers; rescale the contexts and rewards (smaller "
                         "context_bound and reward_bound) or plan fewer rounds.")
    raise ValueError("the PRIVATIZER's tree holds n_releases communication rounds; a further release was requested: "
                     "plan more releases.")


class _NoiseFeed:
    """The noise of a private learner's next releases, fetched from its PRIVATIZER ahead of the kernels.

    The contract of :class:`~dpfair.bandits.fairx.privatizer.Privatizer`: release ``k`` of a row is ``granularity *
    (sum of to_units(increments 1..k) + release_noise_units(k))``; the kernels hold the integer sums and
    round the increments (the same expression as ``to_units``), and this feed keeps in each row's slots
    ``release_noise_units(k)`` for its next releases ``k = count + 1, ...``, topped up in order (each release
    number fetched once).  A factorized privatizer answers any ``k`` (its table); a tree is advanced one
    release at a time and asked for its current count (an unkeyed tree, secure noise, can only answer that):
    the nodes it draws are the ones the releases use, in the same order.  The exact BLT (``"blt-exact"``) has no
    release noise of its own: its slots hold each release's rounded Gaussian ``Z`` (a function of the words alone),
    which the kernels add after their encoder (:mod:`dpfair.bandits.fairx._exact_kernels`).
    """

    _BYTES = 64 * 2**20  # the noise held for all rows at once

    def __init__(self, privatizer: Any, n_seeds: int, n_agents: int, dim: int, first_row: int) -> None:
        self.privatizer, self.first_row = privatizer, first_row
        self.shape, self.dim = (n_seeds, n_agents), dim
        # a tree is advanced one release at a time, as Privatizer.release does: one new node per release (a keyed
        # tree could answer any release, but by drawing all popcount(k) nodes of each)
        self.sequential = privatizer.continual == "tree"

    @staticmethod
    def block_length(n_private_rows: int, dim: int) -> int:
        """Slots per row: 2 blocks of rounds (512), fewer where that would hold more than ``_BYTES`` of noise."""
        per_release = 8 * max(1, n_private_rows) * dim * (dim + 1)
        return max(1, min(2 * _BLOCK, _NoiseFeed._BYTES // per_release))

    def bind(self, private_rows: tuple, offset: int) -> None:
        """Use the kernels' noise arrays, rows ``offset .. offset + n_seeds * n_agents`` of them."""
        self.noise_gram, self.noise_target, self.noise_first, self.noise_len = private_rows[5:9]
        self.part = slice(offset, offset + math.prod(self.shape))
        self.count = private_rows[4][self.first_row : self.first_row + math.prod(self.shape)]

    @property
    def can_prefetch(self) -> bool:
        """Whether the noise can be computed ahead by another thread: a factorized PRIVATIZER whose table is a
        function of its keys (secure PRF or seeded keys), not of a noise source's stream drawn in order."""
        factorized = self.privatizer._factorized
        return factorized is not None and factorized.key_digest is not None

    def reach(self, rounds: int) -> int:
        """The last release whose noise the next :meth:`refill` may copy if ``rounds`` rounds run before it."""
        return min(int(self.count.max(initial=0)) + rounds + self.noise_gram.shape[1], self.privatizer.n_releases)

    def prefetch(self, upto: int) -> None:
        """Compute the noise of every release up to ``upto`` (:meth:`reach`) in the PRIVATIZER's table.

        Only the table grows (under its lock; the kernels read the slots, never the table), in release order
        as always: the next :meth:`refill` then copies integers computed already.  Run by another thread while
        the kernels run.
        """
        if upto > 0:
            self.privatizer._factorized.extend(upto)

    def refill(self, wanted: int) -> None:
        """Top up to a full set of slots the rows with fewer than ``wanted`` releases' noise left (and more to come)."""
        priv, part, d = self.privatizer, self.part, self.dim
        first, length = self.noise_first[part], self.noise_len[part]
        released = self.count
        filled = np.maximum(first + length - 1, released)  # the last release number fetched
        end = np.minimum(released + self.noise_gram.shape[1], priv.n_releases)
        need = (filled - released < wanted) & (filled < end)
        if not need.any():
            return
        if priv._factorized is not None:  # the table's integers into the slots: release_noise_units' integers,
            # without its temporaries (fill_noise_slots)
            from dpfair.bandits.fairx._prf_kernels import fill_noise_slots

            table = priv._factorized.table(int(end[need].max()))
            fill_noise_slots(table, np.flatnonzero(need), released, filled, end, first, length, priv._upper,
                             self.noise_gram[part], self.noise_target[part])
            return
        n_new = int((end - filled)[need].max())
        flat_need, flat_filled = need.reshape(self.shape), filled.reshape(self.shape)
        flat_end = end.reshape(self.shape)
        ahead = np.arange(1, n_new + 1).reshape(-1, *(1,) * len(self.shape))
        fetch = flat_need & (flat_filled + ahead <= flat_end)  # (n_new, *shape): the releases each row needs
        if priv._exact_blt is not None:
            gram, target = self._exact_noise(fetch.reshape(n_new, -1), filled, n_new)
        elif self.sequential:  # draw release filled + 1 + k's node, in release order, for the rows that need it
            gram = np.zeros((n_new, *self.shape, d, d), dtype=np.int64)
            target = np.zeros((n_new, *self.shape, d), dtype=np.int64)
            for k in range(n_new):
                priv.advance(fetch[k])
                gram[k], target[k] = priv.release_noise_units(priv.count)
        else:  # every release of every row in one call (0: no noise, cheap)
            gram, target = priv.release_noise_units(np.where(fetch, flat_filled + ahead, 0))
        gram, target = gram.reshape(n_new, -1, d, d), target.reshape(n_new, -1, d)
        self._copy_slots(need, filled, end, gram, target)

    def _exact_noise(self, fetch: np.ndarray, filled: np.ndarray, n_new: int) -> tuple[np.ndarray, np.ndarray]:
        """``continual="blt-exact"``: the rounded Gaussian ``Z`` of releases ``filled + 1 ..`` of the rows of
        ``fetch`` (``ExactBLTRelease.noise_at``: keyed words by (key, release), in release order), laid out as
        ``release_noise_units`` lays out its noise (gram entries mirrored; the corner dropped)."""
        priv, d = self.privatizer, self.dim
        rows_u, cols_u = priv._upper
        gram = np.zeros((n_new, fetch.shape[1], d, d), dtype=np.int64)
        target = np.zeros((n_new, fetch.shape[1], d), dtype=np.int64)
        in_gram, in_target = cols_u < d, (cols_u == d) & (rows_u < d)
        ks, rows = np.nonzero(fetch)  # every (release, row) at once, in release order
        z = priv._exact_blt.noise_at(rows, filled[rows] + ks)  # 0-based release filled + k + 1 - 1
        gram[ks[:, None], rows[:, None], rows_u[in_gram], cols_u[in_gram]] = z[:, in_gram]
        gram[ks[:, None], rows[:, None], cols_u[in_gram], rows_u[in_gram]] = z[:, in_gram]
        target[ks[:, None], rows[:, None], rows_u[in_target]] = z[:, in_target]
        return gram, target

    def _copy_slots(self, need: np.ndarray, filled: np.ndarray, end: np.ndarray, gram: np.ndarray,
                    target: np.ndarray) -> None:
        """Move each refilled row's unused slots to the front and append its fresh releases' noise."""
        first, length, released = self.noise_first[self.part], self.noise_len[self.part], self.count
        noise_gram, noise_target = self.noise_gram[self.part], self.noise_target[self.part]
        for row in np.flatnonzero(need):
            keep = filled[row] - released[row]  # unused slots, moved to the front
            src = released[row] + 1 - first[row]
            noise_gram[row, :keep] = noise_gram[row, src : src + keep].copy()
            noise_target[row, :keep] = noise_target[row, src : src + keep].copy()
            fresh = end[row] - filled[row]
            noise_gram[row, keep : keep + fresh] = gram[:fresh, row]
            noise_target[row, keep : keep + fresh] = target[:fresh, row]
            first[row], length[row] = released[row] + 1, end[row] - released[row]
