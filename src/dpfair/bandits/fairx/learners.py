"""Federated fairness-of-exposure learners: Fed-FairX-LinUCB and Priv-FairX-LinUCB (Solanki, Jain & Gujar, Algorithms 1-2).

They hold parameters; :func:`dpfair.bandits.simulate_federated` runs them batched, and ``reset`` / ``select`` /
``update`` drive one agent (:mod:`dpfair.bandits.fairx.online`; see :mod:`dpfair.bandits.fairx.simulator` for the
protocols, the PRIVATIZER's use and the confidence radius).  Priv-FairX-LinUCB is a release of
:mod:`dpfair.base`'s template: one ``reset`` of an agent (or one learner of a simulation) validates every argument,
charges its budget once and only then draws noise; ``planned_charge()`` and ``check_reset(...)`` say that charge
beforehand.  Fed-FairX-LinUCB has no privacy parameter and charges nothing (it shares exact statistics:
``privacy_spent["epsilon"] = inf``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, ClassVar

from dpfair._validation import check_positive_finite
from dpfair.bandits.fairx._privatizer_checks import _check_norm_bounds, _check_privatizer_range
from dpfair.bandits.fairx.merit_policy import _EXPONENTIAL, _FairXParameters
from dpfair.bandits.fairx.online import _AgentRun, _FederatedOnline
from dpfair.bandits.fairx.synchronization import (
    _FEDERATED_DP,
    _check_calibration,
    _Plan,
    _PrivacyOptions,
    _RunOptions,
    _warn_one_agent,
)
from dpfair.base import PlannedCharge, PrivacyParameters, PrivateMechanismMixin, ValidatedOptions
from dpfair.privacy.leaks import warn_privacy_leak
from dpfair.privacy.noise import NoiseSource
from dpfair.privacy.relations import REPLACE

__all__ = ["FedFairXLinUCB", "PrivFairXLinUCB"]

#: The ledger's label of one agent's charge (``reset``) and of one learner's (``simulate_federated``).
_LABEL = "Priv-FairX-LinUCB"


# --------------------------------------------------------------------------------------------------
# learners
# --------------------------------------------------------------------------------------------------
class FedFairXLinUCB(_FairXParameters, _FederatedOnline):
    """Fed-FairX-LinUCB: FairX-LinUCB agents sharing exact statistics at communication rounds.

    Algorithm 1 without the PRIVATIZER.  Run it with :func:`dpfair.bandits.simulate_federated`.

    Parameters
    ----------
    protocol : {"bounded-gap", "log-det", "p-fcb"}, default "bounded-gap"
        When the agents synchronize: the paper's bounded-gap protocol, or the baselines B1 (log-det
        trigger of FedUCB) and B2 (P-FCB's doubling gaps); the module docstring states each rule.
    merit : {"exponential"} or callable, default "exponential"
        Merit function ``f`` (see :class:`FairXLinUCB`).
    merit_scale : float, default 10.0
        Steepness of the exponential merit.
    regularization : float, default 1.0
        Ridge parameter ``lambda`` of each agent.
    noise_std : float, default 0.1
        Declared sub-Gaussian level ``R`` of the reward noise.
    theta_norm_bound : float, default 1.0
        Declared ``S >= ||theta*||_2``.
    confidence_delta : float, default 0.1
        Failure probability ``alpha`` of the confidence ellipsoids.
    radius : {"theory"} or float, default "theory"
        ``sqrt(beta_t)`` (see the module docstring) or a constant.
    n_steps : int, default 10
        Projected-gradient-ascent steps per round.
    step_size : float, default 0.1
        Step length of the ascent.
    sync_threshold : float, optional
        ``D`` of the log-det protocol (default ``T ln(m T) / (d m)``); ignored by the others.
    """

    _fairx_role: ClassVar[str] = "federated"
    _private: ClassVar[bool] = False

    def __init__(
        self,
        protocol: str = "bounded-gap",
        *,
        merit: Any = _EXPONENTIAL,
        merit_scale: float = 10.0,
        regularization: float = 1.0,
        noise_std: float = 0.1,
        theta_norm_bound: float = 1.0,
        confidence_delta: float = 0.1,
        radius: Any = "theory",
        n_steps: int = 10,
        step_size: float = 0.1,
        sync_threshold: float | None = None,
    ) -> None:
        self.protocol = protocol
        self.merit = merit
        self.merit_scale = merit_scale
        self.regularization = regularization
        self.noise_std = noise_std
        self.theta_norm_bound = theta_norm_bound
        self.confidence_delta = confidence_delta
        self.radius = radius
        self.n_steps = n_steps
        self.step_size = step_size
        self.sync_threshold = sync_threshold


@dataclass(frozen=True, eq=False)
class _PrivOptions(ValidatedOptions):
    """The parameters a release checks before its sizes are known (step 1; ``epsilon``, ``delta``: the template's).

    ``run``: what every FairX learner's plan reads (the shared parameters, the protocol, ``D``).  The plan
    (``synchronization._plan``) takes them as they are: each is checked once per release.
    """

    run: _RunOptions
    noise_calibration: str


class PrivFairXLinUCB(PrivateMechanismMixin, FedFairXLinUCB):
    """Priv-FairX-LinUCB: Fed-FairX-LinUCB whose messages go through the PRIVATIZER (Algorithm 2).

    Each agent's statistics are released as running sums over the communication rounds
    (:mod:`dpfair.bandits.fairx.privatizer`): by default through the exact constant-memory BLT release
    (``continual="blt-exact"``: an integer encoder and rounded Gaussian noise, a lower-triangular Gaussian matrix
    mechanism exact by construction) with the smallest noise that makes one agent's whole stream of releases
    ``(epsilon, delta)``-DP by the Gaussian privacy profile, or, on request, the square-root factorization of the
    prefix-sum matrix (``continual="sqrt"``: a little less noise, its float sampler stated, not charged); or through
    Algorithm 2's binary tree, tightly calibrated by zCDP
    (``continual="tree"``) or with Algorithm 2's formula ``N(0, 16 n (L^2 + B^2)^2 ln(2/delta)^2 /
    epsilon^2)`` (``noise_calibration="paper"``, for reproduction).  The noisy Gram matrices are shifted
    to stay positive definite and the confidence radius accounts for the noise of the worst release
    (Lemma 4 with the noise actually used: ``dpfair.bandits.fairx.synchronization._lemma4_noise``).
    ``epsilon = inf`` is exactly Fed-FairX-LinUCB (and warns).

    Parameters
    ----------
    epsilon : float, default 2.0
        Privacy parameter of the node-noise formula (the paper's Exp 1 uses 2).
    delta : float, default 0.1
        Privacy parameter ``delta`` in (0, 1).
    context_bound : float
        Declared ``L >= ||x||_2`` of every context; required.  Contexts above it raise.  Never read
        off the data.
    protocol : {"bounded-gap", "log-det", "p-fcb"}, default "bounded-gap"
        Communication protocol.  With few releases (``"p-fcb"``: ``log2 T`` of them) the tree is shallow
        and the noise small, but the gaps grow to ``T/2``; the user guide compares them.
    noise_calibration : {"tight", "paper"}, default "tight"
        ``"tight"``: the noise is the smallest that makes the stream of one agent's releases exactly
        ``(epsilon, delta)``-DP: by the exact ``mu``-GDP profile of the factorization (``continual`` other
        than ``"tree"``) or by dpfair's zCDP accounting of the tree actually used (its depth from the
        planned number of communication rounds); ``privacy_spent`` equals the request.
        ``"paper"``: Algorithm 2, line 6, exactly; ``privacy_spent`` reports the accounted ``epsilon``
        and ``delta`` beside the requested ones.  At Exp 1's setting (``epsilon = 2``, ``delta = 0.1``,
        ``L = sqrt(5)``, 20,002 releases) the paper's node standard deviation is 143.8, the tight one 20.6.
    continual : {"auto", "sqrt", "honaker", "tree", "blt", "blt-exact"}, default "auto"
        The continual release of each agent's running sums (:mod:`dpfair.privacy._factorizations`):
        ``"blt-exact"``: the BLT with an integer encoder and rounded Gaussian noise, exact by construction with
        ``O(1)`` noise state per agent (:mod:`dpfair.bandits.fairx._privatizer_exact`; the compiled engine runs
        its encoder in two-word integers, bit for bit the numpy engine's); its worst release's noise is 1.9 %
        above the square root's at Exp 1, 4.1 % at 100,000 releases.
        ``"auto"`` is ``"tree"`` for ``"paper"`` (which needs the tree) and beyond 2**22 planned releases; for
        ``"tight"`` it is ``"blt-exact"`` wherever, from the public plan alone (bounds, ``(epsilon, delta)``, the
        number of releases), its calibration and its encoder's range hold, and the tight tree otherwise: the default
        is exact by construction everywhere.  ``"sqrt"`` is lower noise (the exact BLT's worst release is within 5 %
        of it up to 20,002 releases at ``delta = 0.1``, ``d = 5``; 5.4 % above it at 100,000 releases and
        ``epsilon = 0.5``, 8.0 % at 0.1, 17 % with ``d = 10`` at ``(1, 1e-5)``) on a proof that is stated, not
        charged: it holds for an ideal Gaussian ``z``, and the doubles drawn for ``z`` (an inverse normal CDF of
        53-bit uniforms) are not charged to ``delta``.  ``privacy_spent["continual"]`` says which was used.
        At Exp 1's setting the worst release's noise standard deviation (off-diagonal, per agent) is
        77.2 for the tight tree, 47.5 for Honaker's estimator and 18.5 for the square root.
    reward_bound : float, default 1.0
        Declared ``B``: shared rewards are clipped to ``[-B, B]`` (the paper's ``L^2 + 1`` is
        ``B = 1``).  An agent's own rewards enter its own estimate unclipped.
    merit : {"exponential"} or callable, default "exponential"
        Merit function ``f`` (see :class:`FairXLinUCB`).
    merit_scale : float, default 10.0
        Steepness of the exponential merit.
    regularization : float, default 1.0
        Ridge parameter ``lambda`` of each agent.
    noise_std : float, default 0.1
        Declared sub-Gaussian level ``R`` of the reward noise.
    theta_norm_bound : float, default 1.0
        Declared ``S >= ||theta*||_2``.
    confidence_delta : float, default 0.1
        Failure probability ``alpha`` of the confidence ellipsoids (and of the noise bounds).
    radius : {"theory"} or float, default "theory"
        ``sqrt(beta_t)`` with the noise terms of Lemma 4 (module docstring), or a constant.
    n_steps : int, default 10
        Projected-gradient-ascent steps per round.
    step_size : float, default 0.1
        Step length of the ascent.
    sync_threshold : float, optional
        ``D`` of the log-det protocol.
    budget : dpfair.privacy.PrivacyBudget, optional
        Charged the reported ``(epsilon, delta)`` (``privacy_spent["epsilon"]``, ``["delta"]``) once per
        :meth:`reset` (per agent) or per :func:`~dpfair.bandits.simulate_federated`, after every argument is
        checked and before any noise is drawn (:mod:`dpfair.base`'s release template); ``epsilon = inf`` is
        charged as ``inf``, which only an infinite budget pays.  ``None`` charges the default ledger
        (:func:`dpfair.privacy.set_default_budget`) when one is set.
    random_state : None, int or numpy.random.Generator
        ``None`` draws secure noise (slow); a seed gives reproducible, not hardened, noise.

    Notes
    -----
    Protects each agent's (context, reward) pairs against what the other agents see (federated DP,
    Dubey & Pentland's Definition 1, ``m >= 2``), neighbouring streams differing in one round of one
    agent.  ``dpfair.privacy`` accounts the actual noise (zCDP of the tree, converted at ``delta``):
    ``privacy_spent["epsilon_accounted"]`` equals the requested ``epsilon`` for the tight calibration
    and is below it for the paper's, and the reported ``epsilon`` is the larger of the two.  With
    ``n_agents = 1`` there is no other agent: the guarantee covers what the agent's messages reveal
    to the server, ``privacy_spent["protects"]`` says so and a ``UserWarning`` is raised.
    """

    _private: ClassVar[bool] = True
    # the release template (dpfair.base): one reset of an agent (or one learner of simulate_federated) is one release
    _privacy_parameters: ClassVar[dict[str, str]] = {
        "epsilon": "epsilon", "delta": "delta", "budget": "budget", "random_state": "random_state",
    }
    _privacy_protects: ClassVar[str] = _FEDERATED_DP["protects"]
    _privacy_neighbouring: ClassVar[str] = _FEDERATED_DP["neighbouring"]
    _privacy_relation: ClassVar[str] = REPLACE
    _privacy_label: ClassVar[str | None] = _LABEL

    def __init__(
        self,
        epsilon: float = 2.0,
        delta: float = 0.1,
        context_bound: float | None = None,
        protocol: str = "bounded-gap",
        *,
        noise_calibration: str = "tight",
        continual: str = "auto",
        reward_bound: float = 1.0,
        merit: Any = _EXPONENTIAL,
        merit_scale: float = 10.0,
        regularization: float = 1.0,
        noise_std: float = 0.1,
        theta_norm_bound: float = 1.0,
        confidence_delta: float = 0.1,
        radius: Any = "theory",
        n_steps: int = 10,
        step_size: float = 0.1,
        sync_threshold: float | None = None,
        budget: Any = None,
        random_state: Any = None,
    ) -> None:
        self.epsilon = epsilon
        self.delta = delta
        self.context_bound = context_bound
        self.protocol = protocol
        self.noise_calibration = noise_calibration
        self.continual = continual
        self.reward_bound = reward_bound
        self.merit = merit
        self.merit_scale = merit_scale
        self.regularization = regularization
        self.noise_std = noise_std
        self.theta_norm_bound = theta_norm_bound
        self.confidence_delta = confidence_delta
        self.radius = radius
        self.n_steps = n_steps
        self.step_size = step_size
        self.sync_threshold = sync_threshold
        self.budget = budget
        self.random_state = random_state

    # ---------------------------------------------------------------- the release template (dpfair.base)
    # reset = _begin(_open(...)): _open runs the template once (every check, the plan, one charge, the warnings) and
    # _begin starts the rounds; check_reset is the template's dry run of the same steps.  The charge depends on the
    # run's sizes (the plan: "paper" reports max(epsilon, the accounted epsilon)): _plan_release hands the run to
    # the template, which gives it to the charge's hooks as params.plan.
    def check_reset(self, n_actions: int, dim: int, horizon: int, *, n_agents: int = 1, agent: int = 0,
                    run_id: int = 0) -> PlannedCharge:
        """A dry run of :meth:`reset`: every check it makes before its charge, and what it would charge.

        Nothing is started, no noise is drawn and no budget is touched.  Unlike :meth:`planned_charge` (the
        parameters alone) it knows the run's sizes, on which ``noise_calibration="paper"``'s charge depends.

        Parameters
        ----------
        n_actions, dim, horizon : int
            As for :meth:`reset`.
        n_agents : int, default 1
            As for :meth:`reset`.
        agent : int, default 0
            As for :meth:`reset` (the ledger's label names it).
        run_id : int, default 0
            As for :meth:`reset`.

        Returns
        -------
        PlannedCharge
            The ``(epsilon, delta)``, relation, label and budget of the one charge :meth:`reset` would make.

        Raises
        ------
        ValueError, TypeError
            Whatever :meth:`reset` would refuse before its charge (the message names the argument).
        """
        return self._dry_run(n_actions, dim, horizon, n_agents=n_agents, agent=agent, run_id=run_id)

    def _dry_run_plan(self, n_actions: int, dim: int, horizon: int, *, n_agents: int,
                      name: str) -> tuple[_Plan, PlannedCharge]:
        """The template's dry run of one named learner's run in a simulation: its plan and its planned charge."""
        params, run = self._validate_all(n_actions, dim, horizon, n_agents=n_agents, name=name)
        return run.plan, self._planned(params)

    def _open(self, n_actions: int, dim: int, horizon: int, *, n_agents: int = 1, agent: int = 0,
              run_id: int = 0, name: str | None = None) -> dict[str, Any]:
        """One agent's run (or one named learner's of a simulation) through the release template: every check,
        one charge, the warnings; ``{"run", "privacy_spent_"}``."""
        return self._release(n_actions, dim, horizon, n_agents=n_agents, agent=agent, run_id=run_id, name=name)

    def _validate_params(self) -> _PrivOptions:
        return _PrivOptions(run=self._run_options(), noise_calibration=_check_calibration(self.noise_calibration))

    def _validate_data(self, params: PrivacyParameters, *sizes: Any, **keywords: Any) -> _AgentRun:
        # the privacy options (the template's epsilon, delta and random_state in the PRIVATIZER's range, the declared
        # bounds), then the run's arguments (reset's, or one learner's of simulate_federated: its name): the sizes,
        # the agent, the plan from the options validated here and in step 1, the merit's probe
        _check_privatizer_range(params.epsilon, params.delta)
        if self.context_bound is None:
            raise ValueError(
                "context_bound is required: declare L >= ||x||_2 of every context (sqrt(dim) for contexts in "
                "[0, 1]^dim); it is never read off the data."
            )
        if math.isinf(params.epsilon):  # exact statistics: no noise for the bounds to scale
            context_bound = check_positive_finite(self.context_bound, "context_bound")
            reward_bound = check_positive_finite(self.reward_bound, "reward_bound")
        else:  # and within the range where the PRIVATIZER's noise is representable
            context_bound, reward_bound = _check_norm_bounds(self.context_bound, self.reward_bound)
        privacy = _PrivacyOptions(
            epsilon=params.epsilon, delta=params.delta, context_bound=context_bound, reward_bound=reward_bound,
            noise_calibration=params.options.noise_calibration, continual=self.continual,
            random_state=params.random_state,
        )
        return self._check_run(*sizes, options=replace(params.options.run, privacy=privacy), **keywords)

    def _plan_release(self, params: PrivacyParameters, data: _AgentRun) -> _AgentRun:
        return data  # the run: its plan decides the charge, its agent or name the ledger's label

    def _compute_statistics(self, params: PrivacyParameters, data: _AgentRun) -> None:
        return None  # the agent's Gram matrices and reward sums arrive round by round, after the charge

    def _draw_noise(self, params: PrivacyParameters, statistics: None, noise: NoiseSource) -> NoiseSource:
        # The PRIVATIZER's trees draw from random_state itself, keyed by (random_state, run_id, agent) so that an
        # agent's noise does not depend on its batch (synchronization._tree_keys); this source, created after the
        # charge, marks the release's noise as seeded or secure (the template's privacy_spent_["noise"]).
        return noise

    def _solve(self, params: PrivacyParameters, noisy: NoiseSource, data: _AgentRun) -> dict[str, Any]:
        if data.plan.private and data.n_agents == 1:
            _warn_one_agent(data.plan.name)  # the guarantee covers no other agent: said once, by the release
        return {"run": data}

    def _privacy_cost(self, params: PrivacyParameters) -> tuple[float, float]:
        """``privacy_spent["epsilon"], ["delta"]`` of the plan: the reported guarantee, charged as such.

        ``"tight"``: the requested ``(epsilon, delta)``; ``"paper"``: ``max(epsilon, epsilon_accounted)``, which
        depends on the run's sizes (the number of releases, ``dim``); ``epsilon = inf``: ``(inf, 0)``.
        """
        run = params.plan
        if run is not None:
            return run.plan.spent["epsilon"], run.plan.spent["delta"]
        # planned_charge(): the parameters alone (the PRIVATIZER's range of the template's epsilon and delta)
        _check_privatizer_range(params.epsilon, params.delta)
        if math.isinf(params.epsilon):
            return math.inf, 0.0
        if params.options.noise_calibration == "paper":
            raise ValueError(
                "noise_calibration='paper' charges max(epsilon, the accounted epsilon of Algorithm 2's noise), which "
                "depends on the run's horizon, n_agents and dim: use check_reset(n_actions, dim, horizon, "
                "n_agents=...) for its planned charge."
            )
        return params.epsilon, params.delta  # "tight": exactly the request (synchronization._plan reports it)

    def _charge_label(self, params: PrivacyParameters) -> str:
        run = params.plan
        if run is not None and run.name is not None:
            return f"{_LABEL} {run.name}"  # one learner of simulate_federated
        return f"{_LABEL} agent {0 if run is None else run.agent}"

    def _release_subject(self, params: PrivacyParameters) -> str:
        """What the template's seeded-noise warning names: the agent of a reset, or the learner of a simulation."""
        run = params.plan
        if run is not None and run.name is not None:
            return f"learner {run.name!r} ({_LABEL})"
        return f"{_LABEL} agent {0 if run is None else run.agent}"

    def _warn_non_private(self, params: PrivacyParameters) -> None:
        run = params.plan
        who = "this agent" if run is None or run.name is None else f"learner {run.name!r}"
        warn_privacy_leak(  # at the user's line (dpfair._warnings.find_stack_level)
            f"epsilon=inf: {who} shares exact statistics (Fed-FairX-LinUCB) and carries no privacy guarantee; use a "
            "finite epsilon on real people's data.",
        )

    def _privacy_spent(self, params: PrivacyParameters, results: dict[str, Any]) -> dict[str, Any]:
        return dict(results["run"].plan.spent)  # synchronization._plan's: the accounting of the noise actually used

