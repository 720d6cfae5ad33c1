"""The synthetic world of the federated experiments (Solanki, Jain & Gujar, Section 6.1)."""

from __future__ import annotations

import math

import numpy as np
from sklearn.base import BaseEstimator

from dpfair._validation import (
    _as_float,
    check_int,
)

_BLOCK = 256  # rounds of contexts drawn at once (the streams do not depend on it)

__all__ = ["FederatedSyntheticEnvironment"]


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
        seed = check_int(seed, "seed", minimum=0)
        horizon = check_int(horizon, "horizon", minimum=1)
        n_agents = check_int(n_agents, "n_agents", minimum=1)
        parts = list(zip(*self._blocks(seed, horizon, n_agents), strict=True))
        return {
            "theta": self.theta_star(seed),
            "contexts": np.concatenate(parts[0]),
            "noise": np.concatenate(parts[1]),
            "uniforms": np.concatenate(parts[2]),
        }
