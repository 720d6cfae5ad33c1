"""The synthetic world of the federated experiments (Solanki, Jain & Gujar, Section 6.1)."""

from __future__ import annotations

import math

import numpy as np
from sklearn.base import BaseEstimator

from dpfair._validation import (
    _as_float,
    check_allocation,
    check_int,
)
from dpfair.bandits.fairx.merit_policy import _policy

_BLOCK = 256  # rounds of contexts drawn at once (the streams do not depend on it)

__all__ = ["AgentStream", "FederatedSyntheticEnvironment"]


# --------------------------------------------------------------------------------------------------
# environment
# --------------------------------------------------------------------------------------------------
class FederatedSyntheticEnvironment(BaseEstimator):
    """The synthetic world of Section 6.1: contexts uniform in ``[0, 1]^d``, a random ``theta*``, Gaussian noise.

    For each seed: ``theta*`` uniform in ``[0, 1]^d`` scaled to ``||theta*||_1 = 1`` (so every expected
    reward ``theta* . x`` lies in ``[0, 1]``; the paper only says ``theta*`` is drawn at random), and for
    every round and agent ``n_actions`` contexts uniform in ``[0, 1]^d``, a reward noise
    ``N(0, noise_std^2)`` and a uniform variate that the learners use to sample their action.  All
    learners of a seed see the same streams (common random numbers).

    Parameters
    ----------
    dim : int, default 5
        Context dimension ``d`` (the paper's 5).
    n_actions : int, default 10
        Actions per round (the paper does not state it).
    noise_std : float, default 0.1
        Standard deviation of the reward noise.
    random_state : int, optional
        Mixed into every seed's streams (``None``: the seed alone determines them).

    Notes
    -----
    Contexts have ``||x||_2 <= sqrt(d)``: declare ``context_bound=sqrt(d)`` to a private learner.
    """

    def __init__(self, dim: int = 5, n_actions: int = 10, noise_std: float = 0.1, random_state: int | None = None) -> None:
        self.dim = dim
        self.n_actions = n_actions
        self.noise_std = noise_std
        self.random_state = random_state

    def _validate(self) -> tuple[int, int, float]:
        dim = check_int(self.dim, "dim", minimum=1)
        k = check_int(self.n_actions, "n_actions", minimum=1)
        noise = _as_float(self.noise_std, "noise_std")
        if not math.isfinite(noise) or noise < 0:
            raise ValueError(f"noise_std must be a finite number >= 0, got {self.noise_std!r}.")
        if noise > 1e100:  # rewards of that size summed into the ridge statistics could overflow float64
            raise ValueError(f"noise_std={noise!r} is too large for float64 reward sums; use noise_std <= 1e100.")
        if self.random_state is not None:
            check_int(self.random_state, "random_state", minimum=0)
        if dim * k >= 2**40:  # one round's contexts of one agent: dim * n_actions floats
            raise ValueError(f"dim={dim} and n_actions={k} give contexts too large to draw; lower dim or n_actions.")
        return dim, k, noise

    def _generators(self, seed: int) -> list[np.random.Generator]:
        entropy = [int(seed)] if self.random_state is None else [int(self.random_state), int(seed)]
        return [np.random.default_rng(s) for s in np.random.SeedSequence(entropy).spawn(4)]

    def theta_star(self, seed: int) -> np.ndarray:
        """``theta*`` of a seed.

        Parameters
        ----------
        seed : int
            The run's seed.

        Returns
        -------
        numpy.ndarray
            Shape ``(d,)``, non-negative, summing to 1.
        """
        dim, _, _ = self._validate()
        theta = self._generators(check_int(seed, "seed", minimum=0))[0].uniform(size=dim)
        return theta / theta.sum()

    def _blocks(self, seed: int, horizon: int, n_agents: int):
        dim, k, noise = self._validate()
        _, gx, gn, gu = self._generators(seed)
        done = 0
        while done < horizon:
            b = min(_BLOCK, horizon - done)
            yield (
                gx.uniform(size=(b, n_agents, k, dim)),
                noise * gn.standard_normal(size=(b, n_agents)),
                gu.uniform(size=(b, n_agents)),
            )
            done += b

    def _streams(self, seed: int, horizon: int, n_agents: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every block of a seed's streams joined: contexts ``(T, m, K, d)``, noise and uniforms ``(T, m)``."""
        parts = list(zip(*self._blocks(seed, horizon, n_agents), strict=True))
        return np.concatenate(parts[0]), np.concatenate(parts[1]), np.concatenate(parts[2])

    def sample(self, seed: int, horizon: int, n_agents: int) -> dict[str, np.ndarray]:
        """All streams of one seed at once (small horizons: tests and inspection).

        Parameters
        ----------
        seed : int
            The run's seed.
        horizon : int
            Rounds ``T``.
        n_agents : int
            Agents ``m``.

        Returns
        -------
        dict
            ``theta`` ``(d,)``, ``contexts`` ``(T, m, K, d)``, ``noise`` ``(T, m)``, ``uniforms`` ``(T, m)``.
        """
        seed, horizon, n_agents = _check_run(seed, horizon, n_agents)
        contexts, noise, uniforms = self._streams(seed, horizon, n_agents)
        return {"theta": self.theta_star(seed), "contexts": contexts, "noise": noise, "uniforms": uniforms}

    def agent_stream(self, seed: int, horizon: int, n_agents: int, agent: int) -> AgentStream:
        """One agent's share of a seed's streams: what that agent alone sees in a deployment.

        Parameters
        ----------
        seed : int
            The run's seed.
        horizon : int
            Rounds ``T``.
        n_agents : int
            Agents ``m`` of the run (the streams are drawn for all of them, then this agent's kept).
        agent : int
            The agent's index in ``[0, n_agents)``.

        Returns
        -------
        AgentStream
            The agent's contexts, reward noise and sampling variates for rounds ``1 .. horizon``.
        """
        seed, horizon, n_agents = _check_run(seed, horizon, n_agents)
        agent = check_int(agent, "agent", minimum=0)
        if agent >= n_agents:
            raise ValueError(f"agent={agent} must be below n_agents={n_agents}.")
        _, k, _ = self._validate()
        check_allocation(8 * horizon * n_agents * (k * (self.dim + 1) + 2), subject=f"horizon={horizon}",
                         what="the agent's streams", fix="lower horizon")
        contexts, noise, uniforms = self._streams(seed, horizon, n_agents)
        return AgentStream(
            theta=self.theta_star(seed),
            contexts=contexts[:, agent].copy(),
            noise=noise[:, agent].copy(),
            uniforms=uniforms[:, agent].copy(),
        )


def _check_run(seed: int, horizon: int, n_agents: int) -> tuple[int, int, int]:
    """``seed >= 0``, ``horizon >= 1`` and ``n_agents >= 1`` as ints (a run of the federated world)."""
    return (check_int(seed, "seed", minimum=0), check_int(horizon, "horizon", minimum=1),
            check_int(n_agents, "n_agents", minimum=1))


class AgentStream:
    """One agent's rounds of a synthetic federated world: contexts, rewards and the variates that draw actions.

    A deployment's agent reads its own data through this interface (``contexts(t)``, ``reward(t, a)``,
    ``uniform(t)``, rounds ``t = 1 .. T``); the synthetic world also knows ``theta*``, so it can score
    the agent's policies (``fairness_terms``), which a real agent cannot.

    Parameters
    ----------
    theta : numpy.ndarray of shape (d,)
        ``theta*``.
    contexts : numpy.ndarray of shape (T, K, d)
        The candidates of every round.
    noise : numpy.ndarray of shape (T,)
        Reward noise per round.
    uniforms : numpy.ndarray of shape (T,)
        The variate that draws each round's action.
    """

    def __init__(self, theta: np.ndarray, contexts: np.ndarray, noise: np.ndarray, uniforms: np.ndarray) -> None:
        self.theta, self.contexts_, self.noise, self.uniforms = theta, contexts, noise, uniforms
        self.horizon = contexts.shape[0]
        self._mu = np.einsum("tkd,d->tk", contexts, theta)

    def _round(self, t: int) -> int:
        if isinstance(t, bool) or not isinstance(t, int | np.integer) or not 1 <= t <= self.horizon:
            raise ValueError(f"round t must be an integer in [1, {self.horizon}], got {t!r}.")
        return int(t) - 1

    def contexts(self, t: int) -> np.ndarray:
        """Return the candidates of round ``t``.

        Parameters
        ----------
        t : int
            Round in ``[1, T]``.

        Returns
        -------
        numpy.ndarray of shape (K, d)
            One context per action.
        """
        return self.contexts_[self._round(t)]

    def uniform(self, t: int) -> float:
        """Return the variate that draws round ``t``'s action.

        Parameters
        ----------
        t : int
            Round in ``[1, T]``.

        Returns
        -------
        float
            Uniform in ``[0, 1)``.
        """
        return float(self.uniforms[self._round(t)])

    def reward(self, t: int, action: int) -> float:
        """Return the reward of ``action`` at round ``t``: ``theta* . x(a) + noise``.

        Parameters
        ----------
        t : int
            Round in ``[1, T]``.
        action : int
            The action played.

        Returns
        -------
        float
            Its reward.
        """
        i = self._round(t)
        return float(self._mu[i, action] + self.noise[i])

    def fairness_terms(self, t: int, policy: np.ndarray, merit_scale: float = 10.0) -> tuple[float, float]:
        """Return round ``t``'s fairness-regret and reward-regret terms of ``policy`` (exponential merit).

        Parameters
        ----------
        t : int
            Round in ``[1, T]``.
        policy : numpy.ndarray of shape (K,)
            The policy played.
        merit_scale : float, default 10.0
            Steepness of the merit ``exp(merit_scale * mu)`` of the optimal fair policy ``pi*``.

        Returns
        -------
        fair : float
            ``||pi - pi*||_1``.
        reward : float
            ``sum (pi* - pi) mu``.
        """
        mu = self._mu[self._round(t)]
        pi_star = _policy(mu[None], "exponential", np.array([[merit_scale]]))[0][0]
        return float(np.abs(policy - pi_star).sum()), float(((pi_star - policy) * mu).sum())
