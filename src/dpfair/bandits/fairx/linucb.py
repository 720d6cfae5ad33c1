"""FairX-LinUCB (Wang, Bai, Sun & Joachims 2021): fairness of exposure in linear contextual bandits.

Each round a learner sees ``K`` candidate contexts ``x(a)`` and must play the *merit-proportional*
policy ``pi(a) = f(theta . x(a)) / sum_a' f(theta . x(a'))`` (Solanki et al., Eq. 1) for an unknown
``theta*``.  FairX-LinUCB (Solanki et al., Algorithm 1, lines 5-8, with one agent):

1. ridge estimate ``theta_hat = V^{-1} b`` and confidence ellipsoid
   ``CR = {theta : ||theta - theta_hat||_V <= sqrt(beta_t)}`` (line 5);
2. optimistic ``theta_t = argmax_{theta in CR} sum_a pi_theta(a) theta . x(a)`` (line 6), a non-convex
   problem solved approximately by projected gradient ascent started at ``theta_hat``
   (:func:`optimistic_parameter`), with an exact Euclidean projection onto the ellipsoid
   (:func:`project_onto_ellipsoid`);
3. play ``a ~ pi_{theta_t}`` (lines 7-8) and add ``(x(a), y)`` to the ridge statistics (line 9).

The merit function ``f`` is positive and increasing; the paper's experiments use the steep
``f(mu) = exp(10 mu)`` (``merit="exponential"``, ``merit_scale=10``).  For it the policy is a softmax
and every step is computed in log space.

:class:`FairXLinUCB` is the single-agent baseline ``B0``; the federated learners of
:mod:`dpfair.bandits.fairx.simulator` share its parameters and its per-round computation, and
:func:`dpfair.bandits.simulate_federated` runs them all.
"""

from __future__ import annotations

from typing import Any, ClassVar

from dpfair.bandits.fairx.merit_policy import _EXPONENTIAL, _FairXParameters
from dpfair.bandits.fairx.online import _OnlineFairX

__all__ = ["FairXLinUCB"]


class FairXLinUCB(_FairXParameters, _OnlineFairX):
    """FairX-LinUCB, the single-agent fairness-of-exposure learner (baseline ``B0`` of Solanki et al.).

    Each agent learns alone from its own observations (no communication).  Run it, alone or beside
    the federated learners, with :func:`dpfair.bandits.simulate_federated`; with ``n_agents = m`` it
    is ``m`` independent copies.

    Parameters
    ----------
    merit : {"exponential"} or callable, default "exponential"
        The merit function ``f`` (positive, increasing; minimum merit ``gamma > 0``).  ``"exponential"``
        is ``exp(merit_scale * mu)``, the paper's choice; a callable receives and returns numpy arrays.
    merit_scale : float, default 10.0
        Steepness of the exponential merit (the paper's 10).
    regularization : float, default 1.0
        Ridge parameter ``lambda``: ``V_1 = lambda I`` (Algorithm 1, line 2).
    noise_std : float, default 0.1
        Declared sub-Gaussian level ``R`` of the reward noise (for the confidence radius).
    theta_norm_bound : float, default 1.0
        Declared bound ``S`` on ``||theta*||_2``.
    confidence_delta : float, default 0.1
        Failure probability ``alpha`` of the confidence ellipsoids.
    radius : {"theory"} or float, default "theory"
        ``sqrt(beta_t)``: ``"theory"`` is Abbasi-Yadkori et al.'s
        ``R sqrt(2 ln(1/alpha) + ln(det V_t / lambda^d)) + sqrt(lambda) S``; a number is a constant radius.
    n_steps : int, default 10
        Projected-gradient-ascent steps per round (line 6).
    step_size : float, default 0.1
        Step length of the ascent.

    Examples
    --------
    >>> from dpfair.bandits import FairXLinUCB, FederatedSyntheticEnvironment, simulate_federated
    >>> result = simulate_federated(FederatedSyntheticEnvironment(), {"B0": FairXLinUCB()},
    ...                             horizon=50, n_agents=2, seeds=[0])
    >>> result.fair_regret.shape
    (1, 1, 50)
    """

    #: How the engines treat the learner (read by ``synchronization._plan``, so the protocol needs no import
    #: of the learner classes): ``"alone"`` learns from its own rounds, ``"federated"`` synchronizes.
    _fairx_role: ClassVar[str] = "alone"
    _private: ClassVar[bool] = False

    def __init__(
        self,
        merit: Any = _EXPONENTIAL,
        *,
        merit_scale: float = 10.0,
        regularization: float = 1.0,
        noise_std: float = 0.1,
        theta_norm_bound: float = 1.0,
        confidence_delta: float = 0.1,
        radius: Any = "theory",
        n_steps: int = 10,
        step_size: float = 0.1,
    ) -> None:
        self.merit = merit
        self.merit_scale = merit_scale
        self.regularization = regularization
        self.noise_std = noise_std
        self.theta_norm_bound = theta_norm_bound
        self.confidence_delta = confidence_delta
        self.radius = radius
        self.n_steps = n_steps
        self.step_size = step_size
