"""The PRIVATIZER of Priv-FairX-LinUCB (Solanki, Jain & Gujar, Algorithm 2): tree-based releases of each
agent's ridge statistics at the communication rounds.

One binary tree per agent runs over the *communication rounds* (not the bandit rounds): the
element inserted at communication round ``k`` is what the agent gathered since the previous one,
``[S | s]`` with ``S = sum x x^T`` and ``s = sum x y``.  Each node of the tree is noised once, when it
is completed, and the release at round ``k`` is the exact running sum plus the noise of the
``popcount(k)`` nodes of the binary decomposition of ``k`` (Algorithm 2, lines 10-15; Dubey &
Pentland 2020, Algorithm 5).

Node noise (Algorithm 2, lines 5-8)
-----------------------------------
The paper writes ``N_hat`` in ``R^{d x (d+1)}`` and ``N = (N_hat + N_hat^T) / sqrt(2)``, which only
type-checks for a square matrix.  Our reading: the node holds the augmented symmetric
``(d+1) x (d+1)`` matrix ``sum z z^T`` with ``z = (x, y)`` (as in Dubey & Pentland), ``N_hat`` has
i.i.d. entries ``N(0, sigma^2)`` with

    ``sigma^2 = 16 n (L^2 + B^2)^2 ln(2/delta)^2 / epsilon^2``      (line 6; ``B = 1`` in the paper)

and ``n = 1 + ceil(log2 tau)`` the depth of a tree over ``tau`` communication rounds (line 3).  The
released ``H`` is the top-left ``d x d`` block of ``N`` and ``h`` the first ``d`` entries of its last
column; the corner ``sum y^2`` is never released.  Off-diagonal entries of ``N`` have variance
``sigma^2``, diagonal ones ``2 sigma^2``.

Privacy accounting (``dpfair.privacy``)
---------------------------------------
Replacing one round's ``(x, y)`` of an agent (``||x|| <= L`` declared, ``|y| <= B`` by clipping)
changes ``D = z z^T - z' z'^T`` with ``||D||_F <= sqrt(2) (L^2 + B^2)`` (both terms are PSD rank one).
For the symmetric noise above, the privacy loss of one node equals that of a scalar Gaussian with
sensitivity ``||D||_F / sqrt(2) <= L^2 + B^2`` and standard deviation ``sigma``; the element lies in
at most ``floor(log2 tau) + 1 <= n`` nodes.  So the whole stream of one agent's releases is
``rho``-zCDP with ``rho = n_levels (L^2 + B^2)^2 / (2 sigma^2)`` (Bun & Steinke 2016), which
:func:`dpfair.privacy.zcdp_to_approx_dp` turns into the ``(epsilon, delta)`` reported.  With the
paper's ``sigma`` this is ``rho <= epsilon^2 / (32 ln(2/delta)^2)`` and the accounted
``epsilon(delta)`` is well below the requested ``epsilon`` (about ``0.2 epsilon`` at ``delta = 0.1``):
the paper's calibration is conservative, and the reported number is the accounted one.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dpfair._validation import check_delta, check_epsilon, check_int, check_positive_finite
from dpfair.privacy.accounting import zcdp_to_approx_dp
from dpfair.privacy.noise import NoiseSource, SeededNoise, get_noise_source

__all__ = ["Privatizer", "privatizer_depth", "privatizer_node_variance"]


def privatizer_depth(n_releases: int) -> int:
    """Depth ``n = 1 + ceil(log2 tau)`` of the PRIVATIZER's tree over ``tau`` releases (Algorithm 2, line 3).

    Parameters
    ----------
    n_releases : int
        The planned number of communication rounds ``tau >= 1``.

    Returns
    -------
    int
        ``n``; every element lies in at most ``floor(log2 tau) + 1 <= n`` nodes.
    """
    tau = check_int(n_releases, "n_releases", minimum=1)
    return 1 + (tau - 1).bit_length()  # ceil(log2 tau) exactly, without floating point


def privatizer_node_variance(
    epsilon: float, delta: float, context_bound: float, n_levels: int, reward_bound: float = 1.0
) -> float:
    """Variance of the PRIVATIZER's node noise, ``16 n (L^2 + B^2)^2 ln(2/delta)^2 / epsilon^2`` (Algorithm 2, line 6).

    Parameters
    ----------
    epsilon : float
        Privacy parameter ``epsilon > 0`` (``inf`` gives 0).
    delta : float
        Privacy parameter ``delta`` in (0, 1).
    context_bound : float
        Declared bound ``L`` on ``||x||_2``.
    n_levels : int
        Tree depth ``n`` (see :func:`privatizer_depth`).
    reward_bound : float, default 1.0
        Declared bound ``B`` on ``|y|`` (the paper's ``L^2 + 1`` is ``B = 1``).

    Returns
    -------
    float
        The variance ``sigma^2`` of each entry of ``N_hat``.
    """
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta)
    if delta == 0:
        raise ValueError("delta must be in (0, 1) for the PRIVATIZER's Gaussian noise, got 0.")
    bound = check_positive_finite(context_bound, "context_bound")
    reward = check_positive_finite(reward_bound, "reward_bound")
    n = check_int(n_levels, "n_levels", minimum=1)
    if math.isinf(epsilon):
        return 0.0
    return 16.0 * n * (bound**2 + reward**2) ** 2 * math.log(2.0 / delta) ** 2 / epsilon**2


class Privatizer:
    """Noise of Algorithm 2's trees for a batch of agents (one tree per agent, batched over leading axes).

    Because the tree mechanism is linear, a release is the exact running sum plus the sum of the
    noisy nodes' noise; this class keeps the noise only (the learner keeps the exact sums), so the
    released statistics are ``exact + noise()`` after every :meth:`advance`.

    Parameters
    ----------
    epsilon, delta : float
        Privacy parameters of the node-noise formula (``epsilon`` finite, ``delta`` in (0, 1)).
    context_bound : float
        Declared ``L``.
    dim : int
        Context dimension ``d``.
    n_releases : int
        Planned number of communication rounds ``tau`` (the tree's capacity).
    batch_shape : tuple of int
        One tree per entry, for example ``(n_seeds, n_agents)``.
    reward_bound : float, default 1.0
        Declared ``B``.
    random_state : None, int, numpy.random.Generator or NoiseSource
        ``None`` for secure noise (:class:`dpfair.privacy.SecureNoise`); a seed for experiments.

    Attributes
    ----------
    n_levels : int
        The paper's depth ``n``.
    node_variance : float
        ``sigma^2`` of :func:`privatizer_node_variance`.
    rho : float
        zCDP of one agent's whole stream of releases.
    count : numpy.ndarray
        Releases made so far per tree, shape ``batch_shape[:1]`` broadcast over the rest.
    """

    def __init__(
        self,
        epsilon: float,
        delta: float,
        context_bound: float,
        dim: int,
        n_releases: int,
        batch_shape: tuple[int, ...],
        *,
        reward_bound: float = 1.0,
        random_state: Any = None,
    ) -> None:
        self.epsilon = check_epsilon(epsilon)
        if math.isinf(self.epsilon):
            raise ValueError("the Privatizer needs a finite epsilon; epsilon=inf shares exact statistics (no Privatizer).")
        self.delta = check_delta(delta)
        self.context_bound = check_positive_finite(context_bound, "context_bound")
        self.reward_bound = check_positive_finite(reward_bound, "reward_bound")
        self.dim = check_int(dim, "dim", minimum=1)
        self.n_releases = check_int(n_releases, "n_releases", minimum=1)
        self.batch_shape = tuple(int(s) for s in batch_shape)
        self.n_levels = privatizer_depth(self.n_releases)
        self.node_variance = privatizer_node_variance(
            self.epsilon, self.delta, self.context_bound, self.n_levels, self.reward_bound
        )
        self.node_sigma = math.sqrt(self.node_variance)
        # levels an element actually occupies: floor(log2 tau) + 1 <= n
        self.levels_used = self.n_releases.bit_length()
        sensitivity = self.context_bound**2 + self.reward_bound**2
        self.rho = self.levels_used * sensitivity**2 / (2.0 * self.node_variance)
        self._noise: NoiseSource = get_noise_source(random_state)
        d1 = self.dim + 1
        self._nodes = np.zeros((self.n_levels, *self.batch_shape, d1, d1))
        self.count = np.zeros(self.batch_shape, dtype=np.int64)

    def accounted_epsilon(self, delta: float | None = None) -> float:
        """``epsilon`` of one agent's stream of releases at ``delta``, from its zCDP (``dpfair.privacy``).

        Parameters
        ----------
        delta : float, optional
            Target ``delta`` in (0, 1); default the privatizer's ``delta``.

        Returns
        -------
        float
            The accounted ``epsilon``.
        """
        return float(zcdp_to_approx_dp(self.rho, self.delta if delta is None else delta))

    def _draw(self, shape: tuple[int, ...]) -> np.ndarray:
        noise = self._noise
        if type(noise) is SeededNoise:
            return noise.rng.normal(0.0, self.node_sigma, size=shape)
        return noise.gaussian(np.zeros(shape), self.node_sigma)

    def advance(self, mask: Any = None) -> None:
        """Insert the next element into the trees selected by ``mask`` (a communication round).

        The node completed at release ``k`` (level = lowest set bit of ``k``) gets fresh noise
        ``(N_hat + N_hat^T) / sqrt(2)``; the lower levels, now covered by it, are cleared.

        Parameters
        ----------
        mask : array-like of bool, optional
            Trees that communicate (broadcast to ``batch_shape``); default all.

        Raises
        ------
        ValueError
            When a tree would exceed its planned ``n_releases``.
        """
        sel = np.ones(self.batch_shape, bool) if mask is None else np.broadcast_to(np.asarray(mask, bool), self.batch_shape)
        if not sel.any():
            return
        new_count = self.count + sel
        if (new_count > self.n_releases).any():
            raise ValueError(
                f"the PRIVATIZER's tree holds n_releases={self.n_releases} communication rounds; a further "
                "release was requested: plan more releases."
            )
        k = np.where(sel, new_count, 1)
        level = np.log2(k & -k).astype(np.int64)  # lowest set bit of k
        d1 = self.dim + 1
        n_sel = int(sel.sum())
        raw = self._draw((n_sel, d1, d1))
        fresh = (raw + np.swapaxes(raw, -1, -2)) / math.sqrt(2.0)  # Algorithm 2, line 7
        levels = np.arange(self.n_levels).reshape((-1,) + (1,) * len(self.batch_shape))
        clear = (levels < level) & sel
        self._nodes[clear] = 0.0
        nodes = np.moveaxis(self._nodes, 0, -3)  # (*batch, n_levels, d1, d1), a view
        idx = np.nonzero(sel)
        nodes[(*idx, level[sel])] = fresh
        self.count = new_count

    def noise(self) -> tuple[np.ndarray, np.ndarray]:
        """Noise of the current releases: ``H`` (``d x d``) and ``h`` (``d``) per tree.

        Returns
        -------
        H : numpy.ndarray
            Shape ``(*batch_shape, d, d)``, symmetric.
        h : numpy.ndarray
            Shape ``(*batch_shape, d)``.
        """
        total = self._nodes.sum(axis=0)  # nodes of levels whose bit is 0 in the count are zero
        d = self.dim
        return total[..., :d, :d], total[..., :d, d]

    def privatize(self, gram: Any, target: Any) -> tuple[np.ndarray, np.ndarray]:
        """Exact running sums plus the current release noise (Algorithm 2, lines 13-14).

        Parameters
        ----------
        gram : array-like of shape ``batch_shape + (d, d)``
            Exact ``sum x x^T`` up to the last release.
        target : array-like of shape ``batch_shape + (d,)``
            Exact ``sum x y`` up to the last release.

        Returns
        -------
        gram_hat : numpy.ndarray
            The released ``sum x x^T + H``.
        target_hat : numpy.ndarray
            The released ``sum x y + h``.
        """
        H, h = self.noise()
        return np.asarray(gram, float) + H, np.asarray(target, float) + h

    def __repr__(self) -> str:
        return (
            f"Privatizer(epsilon={self.epsilon:g}, delta={self.delta:g}, context_bound={self.context_bound:g}, "
            f"dim={self.dim}, n_releases={self.n_releases}, batch_shape={self.batch_shape})"
        )
