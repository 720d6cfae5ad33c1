"""One online protocol for the FairX learners: rounds, the agent's half and the server's half of a synchronization.

Solanki, Jain & Gujar, Algorithms 1 and 2.  Everything here works on *rows*: a batch of agents
(``(learner, seed, agent)`` in :func:`~dpfair.bandits.simulate_federated`, one agent in its own
process under :mod:`dpfair.federated`).  The same code runs in both, so a deployment reproduces the
simulator:

* :class:`_Rounds` -- Algorithm 1, lines 5-9 for every row (the numpy reference of a round; the
  compiled kernels of :mod:`dpfair.bandits.fairx._kernels` run spans of the same rounds);
* :class:`_AgentSync` -- the agent's half of a synchronization: accumulate ``S^i, s^i`` (line 9),
  ask for a synchronization (the log-det trigger), *release* ``U_hat^i, u_hat^i`` (lines 19-20:
  through the PRIVATIZER of Algorithm 2 for the private learner, so only noisy statistics leave
  the agent) and *receive* the shared ``U, u`` (lines 22 and 27);
* :class:`_ServerSync` -- the server's half: when to synchronize (the protocols of
  :mod:`dpfair.bandits.fairx.schedules`) and the sum ``U = sum_j U_hat^j`` over the latest release of every
  agent (line 22; an agent that stops answering keeps its last release in the sum);
* :class:`_Sync` -- both halves for the simulator (every agent of a seed synchronizes together).

What an agent releases is the paper's ``U_hat^i = lambda I + sum_{tau <= t'} x x^T (+ H^i)`` and
``u_hat^i = sum x y (+ h^i)``: its own running sums since the start (the PRIVATIZER's tree releases
running sums).  For the private learner each communication round's increment is rounded to the noise
grid *before* it enters the running sum, and the sum of rounded increments plus the lattice noise is
released (:meth:`~dpfair.bandits.fairx.privatizer.Privatizer.release`): the one place where the engines'
local statistics are rounded, so the numpy rounds, the compiled kernels and an agent in its own
process release the same values.  After a synchronization every agent has
``V^i = U (+ c I) + S^i`` with ``S^i = 0``: the shift ``c`` of Lemma 4 for the private learner (module
docstring of :mod:`dpfair.bandits.fairx.simulator`).  With one agent and exact statistics there is
nothing to receive and ``V`` is left as it is (bit for bit the single-agent FairX-LinUCB).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dpfair._estimator import privacy_spent
from dpfair._warnings import find_stack_level
from dpfair.bandits.fairx._privatizer_calibration import (
    CALIBRATIONS,
    MAX_FACTORIZED_RELEASES,
    PRIVATIZER_CONTINUAL,
    PrivatizerCalibration,
    _calibrate,
)
from dpfair.bandits.fairx.merit_policy import _EXPONENTIAL, _ascent, _callable_policy, _CoreOptions, _policy
from dpfair.bandits.fairx.privatizer import Privatizer, tree_key
from dpfair.bandits.fairx.schedules import communication_schedule
from dpfair.bandits.ridge import RidgeState, _cholesky
from dpfair.privacy.budget import charged_release
from dpfair.privacy.noise import SeededNoise

__all__: list[str] = []


@dataclass
class _Plan:
    name: str
    core: _CoreOptions
    protocol: str  # "none" for FairX-LinUCB
    schedule: np.ndarray | None = None  # bool of length T + 1
    threshold: float = 0.0
    private: bool = False
    epsilon: float = math.inf
    delta: float = 0.0
    context_bound: float = math.inf
    reward_bound: float = math.inf
    n_releases: int = 0
    random_state: Any = None
    noise_calibration: str = "tight"
    continual: str = "tree"
    shift: float = 0.0
    rho_max_extra: float = 0.0
    target_noise_bound: float = 0.0
    calibration: PrivatizerCalibration | None = None  # the PRIVATIZER's, made once by the plan
    spent: dict[str, Any] = field(default_factory=dict)

    def __getstate__(self) -> dict[str, Any]:
        # a Flower agent's context.state pickles its plan on every message: the (T + 1) bool schedule is packed
        # to bits (T = 100,000: 100 KB -> 12.5 KB) and unpacked exactly on load
        state = dict(self.__dict__)
        if state["schedule"] is not None:
            state["schedule"] = ("packed", len(state["schedule"]), np.packbits(state["schedule"]))
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        schedule = state.get("schedule")
        if isinstance(schedule, tuple) and schedule[0] == "packed":
            state = {**state, "schedule": np.unpackbits(schedule[2], count=schedule[1]).astype(bool)}
        self.__dict__.update(state)


_NON_PRIVATE = {"protects": "nothing: a non-private learner", "neighbouring": "none"}
_FEDERATED_DP = {
    "protects": "each agent's (context, reward) pairs against the other agents (federated DP)",
    "neighbouring": "replace one round's (x, y) of one agent",
}
_EXACT_SHARING = {
    "protects": "nothing: each agent sends its exact statistics (Gram matrix, reward sums) to the server",
    "neighbouring": "replace one round's (x, y) of one agent",
}
_ONE_AGENT = (
    "what the single agent's messages reveal of its (context, reward) pairs to the server (no other agent exists)"
)


def _check_calibration(value: Any) -> str:
    if value not in CALIBRATIONS:
        raise ValueError(f"noise_calibration must be one of {CALIBRATIONS}, got {value!r}.")
    return value


def _check_continual(value: Any, calibration: str, n_releases: int) -> str:
    """``continual``: ``"auto"`` is ``"tree"`` for ``"paper"`` and beyond ``MAX_FACTORIZED_RELEASES`` planned
    releases; for ``"tight"`` it stays ``"auto"``, resolved by :func:`_auto_release` from the calibrations."""
    if value == "auto":
        return "tree" if calibration == "paper" or n_releases > MAX_FACTORIZED_RELEASES else "auto"
    if value not in PRIVATIZER_CONTINUAL:  # the factorizations and the exact BLT ("blt-exact")
        raise ValueError(f"continual must be 'auto' or one of {PRIVATIZER_CONTINUAL}, got {value!r}.")
    if calibration == "paper" and value != "tree":
        raise ValueError(f"noise_calibration='paper' is Algorithm 2's tree formula; it needs continual='tree' (or "
                         f"'auto'), got continual={value!r}; use noise_calibration='tight' with a factorization.")
    return value


def _lemma4_noise(cal: Any, n_agents: int, dim: int, n_releases: int = 1) -> tuple[float, float, float]:
    """Lemma 4's noise terms from the noise actually released: ``(sigma_total, gram_rounding, target_rounding)``.

    The server's sum ``W = sum_j H^j`` over the ``m`` agents' latest releases.  A tree release sums at
    most ``nodes_per_release`` nodes, each off-diagonal entry of std ``node_sigma`` (diagonal ``sqrt(2)``
    times), so ``W``'s off-diagonal std is at most ``node_sigma sqrt(m nodes_per_release)``.  A factorized
    release ``k`` is ``g round((B z)_k / g)``: ``(B z)_k`` is, entry by entry, a linear map of independent
    Gaussians with the same coefficients, so its off-diagonal entries have std ``node_sigma ||B_k||``, the
    diagonal ``sqrt(2)`` times, distinct entries independent -- the tree's law with ``sqrt(popcount(k))``
    replaced by ``||B_k||`` -- and ``W``'s off-diagonal std is at most
    ``sigma_total = node_sigma * max_k ||B_k|| * sqrt(m)`` (``release_factor``).  The rounding to the grid
    adds ``|r_ij| <= g / 2`` per entry and agent: ``||r||_op <= ||r||_F <= m d g / 2`` for ``W`` and
    ``m sqrt(d) g / 2`` for the target's ``h``; the tree's lattice noise is exact (no rounding term).
    The exact BLT (``"blt-exact"``, :mod:`dpfair.bandits.fairx._privatizer_exact`) releases
    ``g (A m + B X + B (rho + e))``: ``X`` Gaussian (``B X`` has the law above), ``rho = rint(X) - X`` and the
    encoder's error ``e`` at most ``1/2`` and ``1/2 + eta`` per entry, so the bounded part of an entry is at most
    ``g (1 + eta) max_k ||B_k||_1`` (``_privatizer_exact.decoder_l1``) in place of ``g / 2``.
    """
    if cal.continual == "tree":  # bit for bit the earlier formula
        return cal.node_sigma * math.sqrt(n_agents * cal.nodes_per_release), 0.0, 0.0
    half = 0.5 * cal.granularity * n_agents
    if cal.continual == "blt-exact":
        from dpfair.bandits.fairx._privatizer_exact import decoder_l1

        half = cal.granularity * n_agents * decoder_l1(n_releases)
    return cal.node_sigma * cal.release_factor * math.sqrt(n_agents), half * dim, half * math.sqrt(dim)


@dataclass(frozen=True)
class _PrivacyOptions:
    """Priv-FairX-LinUCB's privacy parameters, each validated once before the plan reads them.

    ``epsilon``, ``delta`` and ``random_state`` by :mod:`dpfair.base`'s release template (``delta > 0`` and the
    PRIVATIZER's range of ``epsilon`` by the learner's step 1), the declared bounds and ``noise_calibration`` by the
    learner; ``continual`` as declared (``"auto"`` is resolved by :func:`_plan`, which knows the number of releases).
    """

    epsilon: float
    delta: float
    context_bound: float
    reward_bound: float
    noise_calibration: str
    continual: str
    random_state: Any


@dataclass(frozen=True)
class _RunOptions:
    """A FairX learner's validated parameters: all that :func:`_plan` reads (it never reads the learner).

    ``protocol`` is ``"none"`` for FairX-LinUCB (it learns alone); ``sync_threshold`` the log-det protocol's ``D``
    (``None``: its default); ``privacy`` Priv-FairX-LinUCB's parameters (``None``: exact statistics).
    """

    core: _CoreOptions
    protocol: str
    sync_threshold: float | None = None
    privacy: _PrivacyOptions | None = None


def _plan(name: str, options: _RunOptions, horizon: int, n_agents: int, dim: int) -> _Plan:
    """One learner's run from its validated options: protocol, schedule, noise calibration and what it reports spent."""
    core = options.core
    if options.protocol == "none":  # FairXLinUCB learns alone: releases nothing to anyone
        return _Plan(name, core, "none", spent=privacy_spent(0.0, 0.0, **_NON_PRIVATE))
    # Fed-FairX-LinUCB sends exact Gram matrices and reward sums to the server: no guarantee at all
    plan = _Plan(name, core, options.protocol, spent=privacy_spent(math.inf, 0.0, **_EXACT_SHARING))
    if options.protocol == "log-det":
        threshold = options.sync_threshold
        plan.threshold = horizon * math.log(n_agents * horizon) / (dim * n_agents) if threshold is None else threshold
        plan.n_releases = horizon
    else:
        rounds = communication_schedule(options.protocol, horizon, n_agents, dim)
        plan.schedule = np.zeros(horizon + 1, dtype=bool)
        plan.schedule[rounds] = True
        plan.n_releases = len(rounds)
    privacy = options.privacy
    if privacy is None:
        return plan
    plan.context_bound, plan.reward_bound = privacy.context_bound, privacy.reward_bound
    plan.private, plan.epsilon, plan.delta, plan.random_state = True, privacy.epsilon, privacy.delta, privacy.random_state
    if math.isinf(privacy.epsilon):
        plan.private = False  # exact statistics: Fed-FairX-LinUCB itself (the same code path)
        plan.spent = privacy_spent(math.inf, 0.0, **_FEDERATED_DP)
        return plan
    _plan_privatizer(plan, privacy, horizon, n_agents, dim)
    return plan


def _check_exact_range(plan: _Plan, cal: PrivatizerCalibration, horizon: int) -> None:
    """``continual="blt-exact"``: refuse a plan whose increments could take the encoder beyond its two-word range."""
    from dpfair.bandits.fairx._privatizer_exact import check_encoder_range

    rounds = horizon if plan.schedule is None else int(np.diff(np.flatnonzero(plan.schedule), prepend=0).max()) + 1
    check_encoder_range(rounds * (plan.context_bound**2 + plan.reward_bound**2) / cal.granularity,
                        plan.n_releases)  # an increment gathers the rounds since the last release


def _auto_release(plan: _Plan, privacy: _PrivacyOptions, horizon: int, dim: int) -> tuple[str, PrivatizerCalibration]:
    """``continual="auto"`` with ``"tight"``: the exact BLT wherever its calibration and its encoder's range hold for
    the plan, Algorithm 2's tree with lattice noise otherwise (both from the public plan alone: the bounds,
    ``(epsilon, delta)`` and the number of releases).

    Both are exact by construction (their noise tables' distance to the ideal law proved and charged to ``delta``);
    the square root (``continual="sqrt"``), whose doubles drawn for ``z`` are stated, not charged, is never the
    default.  Its noise is lower: the exact BLT's worst release is 0.5-3.6 % above it up to 20,002 releases at
    ``delta = 0.1``, ``d = 5``, every ``epsilon`` from 0.1 to 10; at 100,000 releases 3.4-4.1 % for ``epsilon >= 1``,
    5.4 % at 0.5 and 8.0 % at 0.1; 17 % with ``d = 10`` at ``(1, 1e-5)`` (the integer encoder's rounding slack,
    which grows as ``sqrt(T) d`` against the sensitivity).
    """
    args = (privacy.epsilon, privacy.delta, plan.context_bound, plan.reward_bound, dim, plan.n_releases, "tight")
    from dpfair.bandits.fairx._privatizer_exact import ExactBLTRefused

    try:  # an agent's increment sums at most `horizon` pairs: their float64 summation error is charged
        exact = _calibrate(*args, "blt-exact", summed_pairs=horizon)  # refuses where the table's share is too large
        _check_exact_range(plan, exact, horizon)
    except ExactBLTRefused:  # only the exact release's own refusals; any other error is raised as it is
        return "tree", _calibrate(*args, "tree", summed_pairs=horizon)
    return "blt-exact", exact


def _plan_privatizer(plan: _Plan, privacy: _PrivacyOptions, horizon: int, n_agents: int, dim: int) -> None:
    """A private plan's PRIVATIZER: its calibration, Lemma 4's shift and bounds, and ``privacy_spent``."""
    calibration = privacy.noise_calibration
    continual = _check_continual(privacy.continual, calibration, plan.n_releases)
    if horizon >= 2**40:  # the float64 sums' error bound (_summation_slack) needs n 2**-53 well below 1
        raise ValueError(f"horizon={horizon} is too long for the PRIVATIZER's exact running sums (at most 2**40 "
                         "rounds, where the float64 sums of an increment have a usable error bound); use a shorter "
                         "horizon.")
    if continual == "auto":
        continual, cal = _auto_release(plan, privacy, horizon, dim)
    else:
        cal = _calibrate(privacy.epsilon, privacy.delta, plan.context_bound, plan.reward_bound, dim, plan.n_releases,
                         calibration, continual, summed_pairs=horizon)
        if continual == "blt-exact":  # the encoder's two-word range, for every stream the declared bounds allow
            _check_exact_range(plan, cal, horizon)
    plan.noise_calibration, plan.continual, plan.calibration = calibration, continual, cal
    # the PRIVATIZER holds the running sums as int64 numbers of grid steps: |sum x x^T|, |sum x y| <= T (L^2 + B^2)
    if horizon * (plan.context_bound**2 + plan.reward_bound**2) / cal.granularity >= 2.0**62:
        raise ValueError(
            f"horizon={horizon} is too long for the PRIVATIZER's exact running sums at this noise grid (2**62 grid "
            "steps); use a shorter horizon or a smaller epsilon (the grid is a fixed fraction of the noise)."
        )
    # Lemma 4 with the noise actually used (worst release of the tree or the factorization: _lemma4_noise)
    sigma_total, gram_rounding, target_rounding = _lemma4_noise(cal, n_agents, dim, plan.n_releases)
    tail = math.sqrt(2.0 * math.log(2.0 * plan.n_releases * n_agents / plan.core.confidence_delta))
    plan.shift = math.sqrt(2.0) * sigma_total * (2.0 * math.sqrt(dim) + tail) + gram_rounding
    plan.rho_max_extra = 2.0 * plan.shift
    plan.target_noise_bound = sigma_total * (math.sqrt(dim) + tail) + target_rounding
    # "tight": the accounted epsilon is the requested one; "paper": usually far below it (the formula is
    # conservative; at delta = 0.1 it can be 0) -- the reported epsilon is the larger, never a claim the
    # accounting does not back
    protects = dict(_FEDERATED_DP)
    if n_agents == 1:
        protects["protects"] = _ONE_AGENT  # the release warns (_warn_one_agent)
    # tight: zcdp_for_approx_dp verified (epsilon, delta) itself; the conversion's epsilon_accounted may
    # exceed epsilon by its root-finding tolerance (~1e-13)
    epsilon = privacy.epsilon
    reported = epsilon if calibration == "tight" else max(epsilon, cal.epsilon_accounted)
    seeded = privacy.random_state is not None and not getattr(privacy.random_state, "secure", False)
    plan.spent = privacy_spent(reported, privacy.delta, **protects, noise="seeded" if seeded else "secure")
    plan.spent.update(
        noise_calibration=calibration,
        epsilon_accounted=cal.epsilon_accounted,
        delta_accounted=cal.delta_accounted,
        rho=cal.rho,
        node_sigma=cal.node_sigma,
        n_releases=plan.n_releases,
        continual=continual,
        mu=cal.mu,
        sensitivity=cal.sensitivity,
        column_sensitivity=cal.column_sensitivity,
        release_sigma=cal.node_sigma * cal.release_factor,
    )
    if plan.protocol == "log-det":
        plan.spent["note"] = "the data-dependent timing of the log-det trigger is not covered"


def _warn_one_agent(name: str) -> None:
    """The warning of a private release with ``n_agents = 1`` (raised once, by the release, at the user's line)."""
    warnings.warn(
        f"learner {name!r}: n_agents=1 -- federated DP (Definition 2) protects an agent from the *other* agents "
        "and there are none; the (epsilon, delta) covers only what the agent's messages reveal to the server "
        "(and anyone who reads them), and the noise costs accuracy. Use FairXLinUCB for a single agent.",
        UserWarning,
        stacklevel=find_stack_level(),  # the user's line: reset or simulate_federated
    )


def _tree_keys(random_state: Any, run_ids: tuple[int, ...], agents: np.ndarray) -> np.ndarray | None:
    """Keys of the seeded PRIVATIZER trees of rows ``(run, agent)``: ``tree_key(seed, run, agent)``.

    ``None`` (the source's own stream) unless the noise is seeded by an integer; a Generator or a
    seeded source gives one base integer drawn from it.
    """
    if random_state is None or isinstance(random_state, bool):
        return None
    if isinstance(random_state, int | np.integer):
        base = int(random_state)
    elif isinstance(random_state, np.random.Generator):
        base = int(random_state.integers(2**63))
    elif isinstance(random_state, SeededNoise):
        base = int(random_state.rng.integers(2**63))
    else:
        return None
    return np.array([[tree_key(base, run, int(a)) for a in agents] for run in run_ids], dtype=np.uint64)


class _Rounds:
    """Algorithm 1, lines 5-9, for rows ``(learner, seed, agent)`` (numpy, one vectorized step per round).

    ``plans`` share ``merit``, ``n_steps`` and ``regularization`` (a batch); the other
    hyper-parameters may differ per learner.  ``ridge`` holds ``V^i, V^{-1}, b^i`` of shape
    ``(L, S, M, ...)``.
    """

    def __init__(self, plans: list[_Plan], n_seeds: int, n_agents: int, dim: int, n_actions: int) -> None:
        L, S, M = len(plans), n_seeds, n_agents
        self.shape, self.dim, self.n_actions = (L, S, M), dim, n_actions
        core0 = plans[0].core
        self.merit, self.n_steps, lam = core0.merit, core0.n_steps, core0.regularization
        self.ridge = RidgeState(dim, batch_shape=(L, S, M), regularization=lam)
        per_learner = lambda key: np.repeat(np.array([getattr(p.core, key) for p in plans], dtype=float), S * M)  # noqa: E731
        self.scale = per_learner("merit_scale")[:, None]
        self.step = per_learner("step_size")[:, None]
        self.noise_std = per_learner("noise_std")
        self.norm_bound = per_learner("theta_norm_bound")
        self.log_conf = 2.0 * np.log(1.0 / per_learner("confidence_delta"))
        self.theory = np.array([p.core.radius == "theory" for p in plans])
        self.constant = np.repeat(
            np.array([0.0 if p.core.radius == "theory" else p.core.radius for p in plans]), S * M
        )
        self.theory_rows = np.repeat(self.theory, S * M)
        self.learner_scale = np.array([p.core.merit_scale for p in plans])[:, None, None, None]
        self.rows = np.arange(L * S * M)

    def select(self, Xt: np.ndarray, u: np.ndarray, rho_min: np.ndarray, extra: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Lines 5-8 for every row: the action and the policy.

        ``Xt`` ``(N, K, d)`` contexts, ``u`` ``(N,)`` uniform variates, ``rho_min`` and ``extra``
        ``(L, S)`` the synchronization state of the confidence radius.
        """
        M, d = self.shape[2], self.dim
        gram = self.ridge.gram.reshape(-1, d, d)
        eigvals, eigvecs = np.linalg.eigh(gram)
        center = self.ridge.theta().reshape(-1, d)
        # confidence radius sqrt(beta_t) (module docstring of dpfair.bandits.fairx.simulator; Abbasi-Yadkori et al.
        # Thm 2 / Lemma 4)
        if self.theory.any():
            rm = np.repeat(rho_min.reshape(-1), M)
            log_ratio = np.maximum(np.log(eigvals).sum(axis=-1) - d * np.log(rm), 0.0)
            radius = self.noise_std * np.sqrt(self.log_conf + log_ratio) + np.sqrt(rm) * self.norm_bound
            radius = radius + np.repeat(extra.reshape(-1), M)
            radius = np.where(self.theory_rows, radius, self.constant)
        else:
            radius = self.constant
        # Algorithm 1, line 6: optimistic theta by projected gradient ascent; line 7: the policy
        theta = _ascent(Xt, center, eigvals, eigvecs, radius, self.merit, self.scale, self.n_steps, self.step)
        mu = np.einsum("nkd,nd->nk", Xt, theta)
        pi = _policy(mu, self.merit, self.scale)[0]
        # line 8: sample a ~ pi with the round's uniform variate
        action = np.minimum((np.cumsum(pi, axis=-1) < u[:, None]).sum(axis=-1), self.n_actions - 1)
        return action, pi

    def update(self, x: np.ndarray, y: np.ndarray) -> None:
        """Line 9's ridge part: ``V += x x^T``, ``b += x y`` for every row (``x`` ``(L, S, M, d)``)."""
        self.ridge.update(x, y)


class _AgentSync:
    """The agents' half of one learner's synchronizations, batched over ``(seed, agent)``.

    ``local``: optional ``(S, s)`` arrays of shapes ``(n_seeds, n_agents, d, d)`` and
    ``(n_seeds, n_agents, d)`` to use (and update in place) as the local statistics (the compiled
    engine's kernels accumulate them).  ``tree_keys``: the seeded PRIVATIZER trees' keys
    ``(n_seeds, n_agents)``.  ``n_agents_total``: agents of the federation (the rows here may be a
    single agent of it).
    """

    def __init__(
        self, plan: _Plan, n_seeds: int, n_agents: int, dim: int,
        local: tuple[np.ndarray, np.ndarray] | None = None, *, tree_keys: np.ndarray | None = None,
        n_agents_total: int | None = None,
    ) -> None:
        self.plan, self.d = plan, dim
        self.m = n_agents if n_agents_total is None else n_agents_total
        S, M = n_seeds, n_agents
        if local is None:
            local = np.zeros((S, M, dim, dim)), np.zeros((S, M, dim))
        self.local_gram, self.local_target = local
        # each agent's own exact running sums up to its last release (non-private learners; the PRIVATIZER keeps
        # its own sums of rounded increments)
        self.own_gram, self.own_target = np.zeros((S, M, dim, dim)), np.zeros((S, M, dim))
        self.synced = np.zeros(S, dtype=bool)
        self.comms = np.zeros(S, dtype=np.int64)
        lam = plan.core.regularization
        self.rho_min = np.full(S, lam)
        self.extra = np.zeros(S)  # (sqrt(rho_max) - sqrt(rho_min)) S + z after the first sync
        self.t_last = np.zeros(S)
        self.logdet_last = np.full((S, M), dim * math.log(lam))
        self.privatizer: Privatizer | None = None
        if plan.private:
            with charged_release():  # the learner charged its (epsilon, delta) and warned for its trees already
                # the plan's calibration, made once from the options the template validated
                self.privatizer = Privatizer._calibrated(
                    plan.calibration, plan.context_bound, plan.reward_bound, dim, plan.n_releases, (S, M),
                    random_state=plan.random_state, tree_keys=tree_keys,
                )

    def accumulate(self, x: np.ndarray, y: np.ndarray) -> None:
        """Algorithm 1, line 9: ``S += x x^T``, ``s += x y`` (shared rewards clipped to ``B`` when private)."""
        if self.plan.private:
            y = np.clip(y, -self.plan.reward_bound, self.plan.reward_bound)
        self.local_gram += x[..., :, None] * x[..., None, :]
        self.local_target += y[..., None] * x

    def trigger(self, t: int, gram: np.ndarray) -> np.ndarray:
        """B1: ``(t - t_last) ln(det V_t / det V_last) > D`` per row ``(S, M)`` (``gram`` is ``V``)."""
        logdet = np.linalg.slogdet(gram)[1]
        return (t - self.t_last)[:, None] * (logdet - self.logdet_last) > self.plan.threshold

    def release(self, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Lines 19-20: the statistics that leave the agents of seeds ``mask`` (``U_hat``, ``u_hat`` per row).

        Private learners: Algorithm 2 through :meth:`Privatizer.release` -- the local statistics
        gathered since the previous release (the increment, accumulated by the numpy rounds or the
        compiled kernels alike) are rounded to the noise grid (:meth:`Privatizer.to_units`), added to the
        exact integer running sum and released with the noise of that release number
        (:meth:`Privatizer.release_noise_units`: the tree's nodes or ``round(B z)`` of the factorization
        ``plan.continual``); the exact running sums never leave this method.  Rows outside
        ``mask`` release nothing (their values are not meaningful).
        """
        lam, d = self.plan.core.regularization, self.d
        if self.privatizer is not None:
            rows = np.broadcast_to(mask[:, None], self.privatizer.batch_shape)
            gram, target = self.privatizer.release(self.local_gram, self.local_target, rows)
        else:
            sel = mask[:, None, None, None]
            self.own_gram = np.where(sel, self.own_gram + self.local_gram, self.own_gram)
            self.own_target = np.where(mask[:, None, None], self.own_target + self.local_target, self.own_target)
            gram, target = self.own_gram, self.own_target.copy()
        # Algorithm 1, line 27 (S^i = 0) at the release itself, not only at receive: an increment once released is
        # in the running sums, so a second release before receive (a server that missed a round) must not carry it
        # again -- one pair in two increments would move the stream by ||C (e_s + e_s+1)||, up to twice sens(C)
        self.local_gram[mask] = 0.0
        self.local_target[mask] = 0.0
        return gram + lam * np.eye(d), target

    def receive(self, t: int, shared_gram: np.ndarray, shared_target: np.ndarray, mask: np.ndarray,
                gram: np.ndarray, gram_inverse: np.ndarray, target: np.ndarray) -> None:
        """Lines 22 and 27: ``V^i = U (+ c I)``, ``b^i = u``, ``S^i = 0`` for the agents of seeds ``mask``.

        ``shared_*`` have shapes ``(S, d, d)`` and ``(S, d)``; ``gram``, ``gram_inverse``, ``target`` are
        the agents' ridge state ``(S, M, ...)``, updated in place.
        """
        plan, m, d, lam = self.plan, self.m, self.d, self.plan.core.regularization
        first = mask & ~self.synced
        if m > 1 or plan.private:  # one agent with exact statistics: U is V already (nothing to receive)
            new = shared_gram[:, None] + (plan.shift * np.eye(d) if plan.private else 0.0)
            new = np.broadcast_to(new, gram.shape)
            new_target = np.broadcast_to(shared_target[:, None], target.shape)
            rows = np.broadcast_to(mask[:, None], gram.shape[:2])
            sub = new[rows]
            sub = 0.5 * (sub + np.swapaxes(sub, -1, -2))
            chol = _cholesky(
                sub,
                "a synchronized Gram matrix is not positive definite (release noise above the shift); "
                "raise regularization or confidence_delta's shift, or use a larger epsilon.",
            )
            inv_chol = np.linalg.inv(chol)  # LAPACK gesv on the identity, as solve(chol, I)
            gram[rows] = sub
            gram_inverse[rows] = np.swapaxes(inv_chol, -1, -2) @ inv_chol
            target[rows] = new_target[rows]
        self.local_gram[mask] = 0.0
        self.local_target[mask] = 0.0
        if first.any():
            rho_min = m * lam
            self.rho_min[first] = rho_min
            if plan.private:
                rho_max = rho_min + plan.rho_max_extra
                z = plan.target_noise_bound / math.sqrt(rho_min)
                self.extra[first] = (math.sqrt(rho_max) - math.sqrt(rho_min)) * plan.core.theta_norm_bound + z
        self.synced |= mask
        self.comms += mask
        self.t_last[mask] = t
        if plan.schedule is None:
            self.logdet_last[mask] = np.linalg.slogdet(gram[mask])[1]


class _ServerSync:
    """The server's half: when to synchronize, and ``U = sum_j U_hat^j`` over each agent's latest release.

    Batched over seeds ``S`` with ``M`` agents each.  Before its first release an agent counts as
    ``U_1 = lambda I`` (Algorithm 1, line 2).
    """

    def __init__(self, plan: _Plan, n_seeds: int, n_agents: int, dim: int) -> None:
        self.plan = plan
        lam = plan.core.regularization
        self.last_gram = np.broadcast_to(lam * np.eye(dim), (n_seeds, n_agents, dim, dim)).copy()
        self.last_target = np.zeros((n_seeds, n_agents, dim))

    def next_round(self, after: int) -> int | None:
        """The next scheduled synchronization round after round ``after`` (``None``: no more, or log-det)."""
        if self.plan.schedule is None:
            return None
        later = np.flatnonzero(self.plan.schedule[after + 1:])
        return None if later.size == 0 else int(after + 1 + later[0])

    def aggregate(self, gram: np.ndarray, target: np.ndarray, received: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Line 22: keep the releases of rows ``received`` ``(S, M)`` and return ``U, u`` per seed."""
        self.last_gram[received] = gram[received]
        self.last_target[received] = target[received]
        return self.last_gram.sum(axis=1), self.last_target.sum(axis=1)


class _Sync:
    """Both halves of one learner's synchronizations for the simulator, batched over ``(seed, agent)``.

    ``index`` is the learner's position in the batch (its slice of the ridge state); ``local`` and
    ``tree_keys`` as in :class:`_AgentSync`.
    """

    def __init__(
        self, plan: _Plan, index: int, n_seeds: int, n_agents: int, dim: int,
        local: tuple[np.ndarray, np.ndarray] | None = None, *, tree_keys: np.ndarray | None = None,
    ) -> None:
        self.plan, self.index = plan, index
        self.agents = _AgentSync(plan, n_seeds, n_agents, dim, local, tree_keys=tree_keys)
        self.server = _ServerSync(plan, n_seeds, n_agents, dim)

    # the agents' state, read by the simulator and its compiled engine
    comms = property(lambda self: self.agents.comms)
    rho_min = property(lambda self: self.agents.rho_min)
    extra = property(lambda self: self.agents.extra)
    t_last = property(lambda self: self.agents.t_last)
    logdet_last = property(lambda self: self.agents.logdet_last)
    privatizer = property(lambda self: self.agents.privatizer)

    def after_round(self, t: int, x: np.ndarray, y: np.ndarray, ridge: RidgeState) -> None:
        """Line 9 (accumulate) then the protocol's check at the end of round ``t``."""
        self.agents.accumulate(x, y)
        self.check(t, ridge)

    def check(self, t: int, ridge: RidgeState) -> bool:
        """Synchronize at the end of round ``t`` if the protocol says so (Algorithm 1, lines 10-18); say whether it did."""
        plan = self.plan
        if plan.schedule is not None:
            if not plan.schedule[t]:
                return False
            mask = np.ones(self.agents.synced.shape[0], dtype=bool)
        else:  # B1: any agent's trigger synchronizes every agent of its seed
            mask = self.agents.trigger(t, ridge.gram[self.index]).any(axis=1)
            if not mask.any():
                return False
        gram, target = self.agents.release(mask)
        received = np.broadcast_to(mask[:, None], gram.shape[:2])
        shared_gram, shared_target = self.server.aggregate(gram, target, received)
        i = self.index
        self.agents.receive(t, shared_gram, shared_target, mask, ridge.gram[i], ridge.gram_inverse[i], ridge.target[i])
        return True


class _MeritFailed(Exception):
    """A callable merit failed on a learner's estimates during the run (after the charge); no text, no values."""


class _GuardedMerit:
    """A callable merit whose every answer is checked: any failure becomes :class:`_MeritFailed`.

    ``_callable_policy`` checks ``f(mu)`` but not ``f(mu +- h)`` (its derivative); here all three are checked, so
    a failing merit never leaves NaN in a learner's state.  The inputs are the learners' private estimates:
    nothing of the failure (its text, the values) is kept.
    """

    def __init__(self, merit: Any) -> None:
        self.merit = merit

    def __call__(self, mu: np.ndarray) -> np.ndarray:
        try:
            with np.errstate(all="ignore"):
                values = np.asarray(self.merit(mu), dtype=float)
        except Exception:
            raise _MeritFailed from None
        if values.shape != np.shape(mu) or not np.isfinite(values).all() or (values <= 0).any():
            raise _MeritFailed
        return values


def _probe_merits(plans: list[_Plan], n_seeds: int, n_agents: int, n_actions: int) -> None:
    """Refuse, before any charge, a callable merit that fails on a public probe.

    The probe is the documented range of the environment's mean rewards, ``mu = <x, theta*>`` in ``[0, 1]``
    (contexts in ``[0, 1]^dim``, ``theta*`` non-negative summing to 1), in the shapes a run passes (rows
    ``(learner, seed, agent)`` by action, and the metrics' ``(n_learners, n_seeds, n_agents, n_actions)``), with the
    central-difference points ``mu +- h`` the policy's gradient uses.  Nothing private enters it.
    """
    L, S, M, K = len(plans), n_seeds, n_agents, n_actions
    for plan in plans:
        merit = plan.core.merit
        if merit is _EXPONENTIAL:
            continue
        for shape in ((L * S * M, K), (L, S, M, K)):
            probe = np.linspace(0.0, 1.0, math.prod(shape)).reshape(shape)
            try:
                with np.errstate(all="ignore"):
                    _, weight = _callable_policy(_GuardedMerit(merit), probe)
                valid = bool(np.isfinite(weight).all())
            except _MeritFailed:
                valid = False
            if not valid:
                raise ValueError(
                    f"learners[{plan.name!r}].merit must return finite values > 0 of the shape of mu for every mu in "
                    f"[0, 1] (the range of this environment's mean rewards), and it does not on a public probe of "
                    f"shape {shape}; nothing was charged. Use a merit that is finite and > 0 for every real mu "
                    "(e.g. exp), which the learners' optimistic estimates may also reach."
                ) from None
