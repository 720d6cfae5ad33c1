"""Federated fairness-of-exposure learners: Fed-FairX-LinUCB and Priv-FairX-LinUCB (Solanki, Jain & Gujar, Algorithms 1-2).

They hold parameters only; :func:`dpfair.bandits.simulate_federated` runs them (see
:mod:`dpfair.bandits.fairx.simulator` for the protocols, the PRIVATIZER's use and the confidence radius).
"""

from __future__ import annotations

from typing import Any, ClassVar

from dpfair.bandits.fairx.merit_policy import _EXPONENTIAL, _FairXParameters
from dpfair.bandits.fairx.online import _FederatedOnline

__all__ = ["FedFairXLinUCB", "PrivFairXLinUCB"]


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


class PrivFairXLinUCB(FedFairXLinUCB):
    """Priv-FairX-LinUCB: Fed-FairX-LinUCB whose messages go through the PRIVATIZER (Algorithm 2).

    Each agent's statistics are released as running sums over the communication rounds
    (:mod:`dpfair.bandits.fairx.privatizer`): by default through the square-root factorization of the
    prefix-sum matrix (``continual="sqrt"``, a lower-triangular Gaussian matrix mechanism) with the
    smallest noise that makes one agent's whole stream of releases ``(epsilon, delta)``-DP by the exact
    Gaussian privacy profile; or through Algorithm 2's binary tree, tightly calibrated by zCDP
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
    continual : {"auto", "sqrt", "honaker", "tree"}, default "auto"
        The continual release of each agent's running sums (:mod:`dpfair.privacy._factorizations`):
        ``"auto"`` is ``"sqrt"`` for ``"tight"`` and ``"tree"`` for ``"paper"`` (which needs the tree) or
        beyond 2**22 planned releases (a factorization keeps every release's noise: ``O(tau)`` memory).
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
        Charged the reported ``(epsilon, delta)`` once per simulation, before any noise is drawn.
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
