"""The per-agent online protocol of the FairX learners: reset, select, update and the synchronization halves.

Every bandit learner of dpfair is driven the same way: ``reset`` (validate, charge the budget, start a
run: for :class:`~dpfair.bandits.PrivFairXLinUCB` through :mod:`dpfair.base`'s release template), then per
round ``select(contexts)`` -> action and ``update(contexts, action, reward)``.  A
federated learner (:class:`~dpfair.bandits.FedFairXLinUCB`, :class:`~dpfair.bandits.PrivFairXLinUCB`)
adds the agent's half of a synchronization -- :meth:`local_statistics` (what leaves the agent: for the
private learner only the PRIVATIZER's noisy ``U_hat, u_hat``) and :meth:`receive_shared` -- and
:class:`FederatedServer` is the server's half (when to synchronize, the sum of the releases).

The arithmetic is :mod:`dpfair.bandits.fairx.synchronization`'s, the code
:func:`~dpfair.bandits.simulate_federated` runs for every row of its batch: an agent driven here on
its share of a :class:`~dpfair.bandits.FederatedSyntheticEnvironment` stream plays exactly the
actions the simulator gives that agent (with seeded noise, the same noise: each agent's PRIVATIZER
tree draws its own keyed stream).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpfair._validation import as_finite_array, check_int, check_positive_finite
from dpfair.bandits.fairx.schedules import _check_protocol
from dpfair.bandits.fairx.synchronization import (
    _AgentSync,
    _Plan,
    _plan,
    _probe_merits,
    _Rounds,
    _RunOptions,
    _ServerSync,
    _tree_keys,
)
from dpfair.base import PlannedCharge, ValidatedData

__all__ = ["FederatedServer"]


def _matrix(value: Any, name: str, shape: tuple[int, ...]) -> np.ndarray:
    arr = as_finite_array(value, name, allow_nonfinite=True)
    if arr.shape != shape:
        raise ValueError(f"{name} must have shape {shape}, got {arr.shape}.")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} holds NaN or infinite values; statistics must be finite.")
    return arr


@dataclass(eq=False)
class _OnlineRun:
    """One agent's run between ``reset`` and the horizon: its plan, its rounds, its synchronization state (``None``
    without a protocol), its sampling stream, and whether the current statistics were released (mutable: the rounds
    change it; pickled with the agent into Flower's state)."""

    plan: Any
    rounds: Any
    sync: Any
    sampling: np.random.Generator
    released: bool = False


@dataclass(frozen=True, eq=False, kw_only=True)
class _AgentRun(ValidatedData):
    """One agent's run, checked (step 1 of :mod:`dpfair.base`'s release template for the private learner).

    What :meth:`_OnlineFairX._check_run` returns (for Priv-FairX-LinUCB, as the template's ``_validate_data``) and
    ``_begin`` reads: the sizes, the agent and the learner's plan (:func:`~dpfair.bandits.fairx.synchronization._plan`:
    protocol, schedule, PRIVATIZER calibration, ``privacy_spent``).
    """

    n_actions: int
    dim: int
    horizon: int
    n_agents: int
    agent: int
    run_id: int
    name: str | None  # the learner's name in a simulation (None: an agent driven by reset)
    plan: _Plan


class _OnlineFairX:
    """``reset / select / update`` for one agent of a FairX learner (mixed into the learner classes).

    ``reset`` is ``_begin(_open(...))``: :meth:`_open` checks the run and opens it (Priv-FairX-LinUCB overrides it
    with :mod:`dpfair.base`'s release template: every check, one charge, the warnings) and ``_begin`` starts it.
    """

    def reset(self, n_actions: int, dim: int, horizon: int, *, n_agents: int = 1, agent: int = 0,
              run_id: int = 0) -> Any:
        """Validate the hyper-parameters, charge the budget (private learners) and start one agent's run.

        Parameters
        ----------
        n_actions : int
            Candidates per round ``K``.
        dim : int
            Context dimension ``d``.
        horizon : int
            Rounds ``T`` (the communication schedule and the PRIVATIZER's tree depend on it).
        n_agents : int, default 1
            Agents ``m`` of the federation (the schedule and Lemma 4's shift depend on it).
        agent : int, default 0
            This agent's index in ``[0, n_agents)``.
        run_id : int, default 0
            Seeded noise only: with ``random_state`` an integer, the agent's PRIVATIZER tree draws the
            stream keyed by ``(random_state, run_id, agent)`` -- the one
            :func:`~dpfair.bandits.simulate_federated` gives agent ``agent`` of its run with seed
            ``run_id``.

        Returns
        -------
        self
        """
        return self._begin(self._open(n_actions, dim, horizon, n_agents=n_agents, agent=agent, run_id=run_id))

    def _run_options(self) -> _RunOptions:
        """The parameters every FairX learner's plan reads, validated: the shared ones, the protocol, ``D``."""
        core = self._core()
        if self._fairx_role == "alone":  # FairXLinUCB learns alone: no protocol
            return _RunOptions(core=core, protocol="none")
        protocol = _check_protocol(self.protocol)
        threshold = None  # the log-det protocol's default D; the other protocols ignore sync_threshold
        if protocol == "log-det" and self.sync_threshold is not None:
            threshold = check_positive_finite(self.sync_threshold, "sync_threshold")
        return _RunOptions(core=core, protocol=protocol, sync_threshold=threshold)

    def _check_run(self, n_actions: int, dim: int, horizon: int, *, options: _RunOptions, n_agents: int = 1,
                   agent: int = 0, run_id: int = 0, name: str | None = None) -> _AgentRun:
        """Every check of one agent's run that charges nothing: the sizes, the agent, the plan, the merit's probe.

        ``options``: the learner's validated parameters (for the private learner, from its release template).
        """
        n_actions = check_int(n_actions, "n_actions", minimum=1)
        dim = check_int(dim, "dim", minimum=1)
        horizon = check_int(horizon, "horizon", minimum=1)
        n_agents = check_int(n_agents, "n_agents", minimum=1)
        agent = check_int(agent, "agent", minimum=0)
        run_id = check_int(run_id, "run_id", minimum=0)
        if agent >= n_agents:
            raise ValueError(f"agent={agent} must be below n_agents={n_agents} (agents are numbered from 0).")
        if horizon >= 2**62:
            raise ValueError(f"horizon={horizon} is too large; use a horizon below 2**62.")
        plan = _plan(type(self).__name__ if name is None else str(name), options, horizon, n_agents, dim)
        _probe_merits([plan], 1, 1, n_actions)  # a callable merit that fails on public input is refused before the charge
        return _AgentRun(n_actions=n_actions, dim=dim, horizon=horizon, n_agents=n_agents, agent=agent, run_id=run_id,
                         name=None if name is None else str(name), plan=plan)

    def _dry_run_plan(self, n_actions: int, dim: int, horizon: int, *, n_agents: int,
                      name: str) -> tuple[_Plan, PlannedCharge | None]:
        """One learner's run in :func:`~dpfair.bandits.simulate_federated`, checked and planned, nothing charged:
        ``(plan, planned charge)``, the charge ``None`` for a learner that charges nothing (Priv-FairX-LinUCB: its
        template's dry run)."""
        run = self._check_run(n_actions, dim, horizon, options=self._run_options(), n_agents=n_agents, name=name)
        return run.plan, None

    def _open(self, n_actions: int, dim: int, horizon: int, *, n_agents: int = 1, agent: int = 0,
              run_id: int = 0, name: str | None = None) -> dict[str, Any]:
        """Check a run (one agent's, or one named learner's of a simulation) and open it: nothing to charge for the
        non-private learners (the private one runs the release template instead).  Returns ``{"run": ...,
        "privacy_spent_": ...}``, as the template does."""
        run = self._check_run(n_actions, dim, horizon, options=self._run_options(), n_agents=n_agents, agent=agent,
                              run_id=run_id, name=name)
        return {"run": run, "privacy_spent_": run.plan.spent}

    def _begin(self, opened: dict[str, Any]) -> Any:
        """Start the run :meth:`_open` opened: the rounds, the agent's half of the synchronizations, the sampling."""
        run: _AgentRun = opened["run"]
        plan = run.plan
        rounds = _Rounds([plan], 1, 1, run.dim, run.n_actions)
        sync = None
        if plan.protocol != "none":
            # the PRIVATIZER's seeded trees draw the stream keyed by (random_state, run_id, agent), so that an agent's
            # noise does not depend on its batch (the simulator gives every row its own key the same way)
            keys = _tree_keys(plan.random_state, (run.run_id,), np.array([run.agent])) if plan.private else None
            sync = _AgentSync(plan, 1, 1, run.dim, tree_keys=keys, n_agents_total=run.n_agents)
        seed = getattr(self, "random_state", None)
        sampling = np.random.default_rng(None if not isinstance(seed, int | np.integer) else [int(seed), run.run_id,
                                                                                                 run.agent])
        self._online = _OnlineRun(plan=plan, rounds=rounds, sync=sync, sampling=sampling)
        self.n_actions_, self.dim_, self.horizon_ = run.n_actions, run.dim, run.horizon
        self.n_agents_, self.agent_ = run.n_agents, run.agent
        self.t_ = 0
        self.policy_: np.ndarray | None = None
        self.privacy_spent_ = opened["privacy_spent_"]
        self.n_synchronizations_ = 0
        return self

    # ---------------------------------------------------------------------------------------- rounds
    def _state(self) -> _OnlineRun:
        state = getattr(self, "_online", None)
        if state is None:
            raise ValueError(f"{type(self).__name__} has no run: call reset(n_actions, dim, horizon, ...) first.")
        return state

    def _contexts(self, contexts: Any) -> np.ndarray:
        state = self._state()
        x = _matrix(contexts, "contexts", (self.n_actions_, self.dim_))
        bound = state.plan.context_bound
        if math.isfinite(bound) and float(np.sqrt((x * x).sum(axis=-1)).max()) > bound:
            raise ValueError(
                f"a context has ||x||_2 above the declared context_bound={bound:g}; declare a bound that holds for "
                "every possible context."
            )
        if self.t_ >= self.horizon_:
            raise ValueError(f"the horizon T={self.horizon_} is used up; call reset() to start again.")
        return x

    def select(self, contexts: Any, *, uniform: float | None = None) -> int:
        """Algorithm 1, lines 5-8: the optimistic merit-proportional policy and an action drawn from it.

        Parameters
        ----------
        contexts : array-like of shape (n_actions, dim)
            This round's candidates.
        uniform : float in [0, 1), optional
            The variate that draws the action (``a = min{k : sum_{j <= k} pi_j >= u}``); default a fresh
            one from the learner's own generator.  Common random numbers across learners use it.

        Returns
        -------
        int
            The action.  The policy is kept in ``policy_``.
        """
        state = self._state()
        x = self._contexts(contexts)
        if uniform is None:
            u = float(state.sampling.random())
        else:
            u = float(uniform)
            if not 0.0 <= u < 1.0:
                raise ValueError(f"uniform must be in [0, 1), got {uniform!r}.")
        sync = state.sync
        lam = state.plan.core.regularization
        rho_min = np.full((1, 1), lam) if sync is None else sync.rho_min.reshape(1, 1)
        extra = np.zeros((1, 1)) if sync is None else sync.extra.reshape(1, 1)
        action, pi = state.rounds.select(x[None], np.array([u]), rho_min, extra)
        self.policy_ = pi[0]
        return int(action[0])

    def update(self, contexts: Any, action: int, reward: float) -> Any:
        """Algorithm 1, line 9: add the played context and its reward to the agent's statistics.

        Parameters
        ----------
        contexts : array-like of shape (n_actions, dim)
            This round's candidates (as given to :meth:`select`).
        action : int
            The action played.
        reward : float
            Its observed reward.

        Returns
        -------
        self
        """
        state = self._state()
        x_all = self._contexts(contexts)
        if isinstance(action, bool) or not isinstance(action, int | np.integer) or not 0 <= action < self.n_actions_:
            raise ValueError(f"action must be an integer in [0, {self.n_actions_}), got {action!r}.")
        y = _matrix(np.asarray(reward, dtype=float) if isinstance(reward, int | float | np.number) else reward,
                    "reward", ())
        x = x_all[int(action)]
        state.rounds.update(x.reshape(1, 1, 1, -1), y.reshape(1, 1, 1))
        if state.sync is not None:
            state.sync.accumulate(x.reshape(1, 1, -1), y.reshape(1, 1))
        self.t_ += 1
        state.released = False
        return self


class _FederatedOnline(_OnlineFairX):
    """The agent's half of a synchronization (mixed into the federated learners)."""

    def _sync(self) -> Any:
        return self._state().sync

    def synchronization_requested(self) -> bool:
        """The log-det trigger (B1) at the end of the current round: ``(t - t_last) ln(det V_t / det V_last) > D``.

        Returns
        -------
        bool
            Always ``False`` for the data-independent schedules (the server knows them).
        """
        sync = self._sync()
        if sync.plan.schedule is not None:
            return False
        return bool(sync.trigger(self.t_, self._state().rounds.ridge.gram[0])[0, 0])

    def local_statistics(self) -> tuple[np.ndarray, np.ndarray]:
        """Algorithm 1, lines 19-20: what this agent sends at a synchronization.

        ``U_hat = lambda I + sum x x^T`` and ``u_hat = sum x y`` over the agent's rounds so far
        (rewards clipped to ``reward_bound``), through the PRIVATIZER for Priv-FairX-LinUCB (Algorithm
        2: what the agent gathered since its previous release is rounded to the noise grid and added to
        the tree's running sum, which is released plus the tree's noise -- the only thing that leaves
        the agent; :meth:`~dpfair.bandits.fairx.privatizer.Privatizer.release`).
        Each call is a release (the tree advances): call it once per synchronization, then
        :meth:`receive_shared`.

        Returns
        -------
        gram : numpy.ndarray of shape (dim, dim)
            ``U_hat``.
        target : numpy.ndarray of shape (dim,)
            ``u_hat``.
        """
        state = self._state()
        if state.released:
            raise ValueError("local_statistics() was already called for this synchronization; call receive_shared() first.")
        gram, target = self._sync().release(np.ones(1, dtype=bool))
        state.released = True
        return gram[0, 0].copy(), target[0, 0].copy()

    def receive_shared(self, gram: Any, target: Any) -> Any:
        """Algorithm 1, lines 22 and 27: ``V = U (+ c I)``, ``b = u``, local statistics reset.

        Parameters
        ----------
        gram : array-like of shape (dim, dim)
            ``U``, the sum of every agent's latest release (:meth:`FederatedServer.aggregate`).
        target : array-like of shape (dim,)
            ``u``.

        Returns
        -------
        self
        """
        state = self._state()
        d = self.dim_
        U = _matrix(gram, "gram", (d, d))
        u = _matrix(target, "target", (d,))
        if not np.allclose(U, U.T, rtol=1e-9, atol=1e-9 * max(1.0, float(np.abs(U).max()))):
            raise ValueError("gram must be symmetric (a sum of released Gram matrices).")
        rounds = state.rounds
        ridge = rounds.ridge
        self._sync().receive(self.t_, U[None], u[None], np.ones(1, dtype=bool), ridge.gram[0], ridge.gram_inverse[0],
                             ridge.target[0])
        state.released = False
        self.n_synchronizations_ = int(self._sync().comms[0])
        return self

    def make_server(self, dim: int, horizon: int, n_agents: int) -> FederatedServer:
        """The server's half for this learner: see :class:`FederatedServer`.

        Parameters
        ----------
        dim, horizon, n_agents : int
            As in :meth:`reset`.

        Returns
        -------
        FederatedServer
            The server's half, knowing this learner's protocol and schedule.
        """
        return FederatedServer(self, dim, horizon, n_agents)


class FederatedServer:
    """The server of a federated FairX learner: the communication schedule and the sum of the agents' releases.

    It never sees a context or a reward: only what :meth:`~dpfair.bandits.FedFairXLinUCB.local_statistics`
    releases (noisy for :class:`~dpfair.bandits.PrivFairXLinUCB`).  ``U = sum_j U_hat^j`` over each
    agent's *latest* release (Algorithm 1, line 22): an agent that stops answering keeps its last release
    in the sum, so nothing already aggregated is lost.

    Parameters
    ----------
    learner : FedFairXLinUCB or PrivFairXLinUCB
        The learner every agent runs (its protocol and hyper-parameters).
    dim, horizon, n_agents : int
        ``d``, ``T``, ``m``.

    Attributes
    ----------
    protocol : str
        The learner's protocol.
    n_synchronizations_ : int
        Synchronizations aggregated so far.
    """

    def __init__(self, learner: Any, dim: int, horizon: int, n_agents: int) -> None:
        if getattr(type(learner), "_fairx_role", None) != "federated":  # FedFairXLinUCB or PrivFairXLinUCB
            raise TypeError(f"learner must be FedFairXLinUCB or PrivFairXLinUCB, got {type(learner).__name__}.")
        self.dim = check_int(dim, "dim", minimum=1)
        self.horizon = check_int(horizon, "horizon", minimum=1)
        self.n_agents = check_int(n_agents, "n_agents", minimum=1)
        if hasattr(learner, "check_reset"):  # a private learner: its settings refused here, before any agent runs
            learner.check_reset(1, self.dim, self.horizon, n_agents=self.n_agents)
        # the schedule and the ridge weight: the server adds what the agents release, whatever their privacy
        plan = _plan("server", learner._run_options(), self.horizon, self.n_agents, self.dim)
        self.protocol = plan.protocol
        self._server = _ServerSync(plan, 1, self.n_agents, self.dim)
        self.n_synchronizations_ = 0

    def next_round(self, after: int) -> int | None:
        """The next scheduled synchronization round after round ``after``.

        Parameters
        ----------
        after : int
            A round in ``[0, horizon]``.

        Returns
        -------
        int or None
            ``None`` when no scheduled synchronization is left, or for the log-det protocol (whose
            rounds the agents' triggers decide).
        """
        after = check_int(after, "after", minimum=0)
        return self._server.next_round(after)

    def aggregate(self, releases: Mapping[int, tuple[Any, Any]]) -> tuple[np.ndarray, np.ndarray]:
        """Line 22: keep each answering agent's release and return ``U, u``.

        Parameters
        ----------
        releases : mapping of int to (gram, target)
            Agent index -> its :meth:`local_statistics` of this synchronization.

        Returns
        -------
        gram : numpy.ndarray of shape (dim, dim)
            ``U``, the sum of every agent's latest release.
        target : numpy.ndarray of shape (dim,)
            ``u``.
        """
        d, m = self.dim, self.n_agents
        gram = np.zeros((1, m, d, d))
        target = np.zeros((1, m, d))
        received = np.zeros((1, m), dtype=bool)
        for agent, (g, b) in releases.items():
            if isinstance(agent, bool) or not isinstance(agent, int | np.integer) or not 0 <= agent < m:
                raise ValueError(f"releases has agent {agent!r}; agents are integers in [0, {m}).")
            gram[0, agent] = _matrix(g, f"releases[{agent}] gram", (d, d))
            target[0, agent] = _matrix(b, f"releases[{agent}] target", (d,))
            received[0, agent] = True
        U, u = self._server.aggregate(gram, target, received)
        self.n_synchronizations_ += 1
        return U[0], u[0]
