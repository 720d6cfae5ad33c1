"""Exact sampling from P(G) proportional to prod_{j in G} exp(w_j) over subsets |G| = m.

This is the distribution of the exponential mechanism with an additive utility
(``w_j = epsilon * u_j / (2 * Delta)``).  It is *not* the distribution of m sequential
draws without replacement (Plackett-Luce), nor of the top m Gumbel-perturbed weights.

Method (exact, O(n*m) time, no enumeration)
-------------------------------------------
The distribution equals conditional Poisson sampling: draw independent Bernoulli(p_j)
with odds ``p_j / (1 - p_j) = exp(w_j + c)`` for any constant ``c`` and condition on
exactly m successes; every subset of size m then has probability proportional to
``exp(c*m) * prod_{j in G} exp(w_j)``, so ``c`` cancels.  We choose ``c`` so that the
expected number of successes is close to m.  Then every quantity we need is a
*probability* of a Poisson-binomial count, which we store in the linear domain without
overflow: the normaliser is ``P(sum = m)``, at least about ``1/(n+1)`` (the mode of a
Poisson-binomial law is within one of its mean), so nothing that matters underflows.
Only terms below ~1e-300 of absolute probability are lost.

The Poisson-binomial probabilities of every dyadic block of items are kept in a
binary tree (a "segment tree" of truncated count distributions, degree <= m).  Leaves
are ``[1 - p_j, p_j]``; a parent is the convolution of its children, truncated to m.
These are the elementary symmetric polynomials of the tilted odds, up to the factor
``prod (1 - p_j)``.

* Sampling descends the tree: a node that must contain ``c`` selected items splits them
  between its children with probability proportional to ``L[a] * R[c - a]``.
* Inclusion probabilities use the reverse ("outside") pass: for each node, the
  probability that the items outside it contain ``m - c`` successes.  Then
  ``P(j in G) = p_j * P(outside(j) = m - 1) / P(sum = m)`` (the gradient of
  ``log e_m`` with respect to ``w_j``).
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit

__all__ = ["ConditionalPoissonTree"]


def _solve_tilt(log_weights: np.ndarray, m: int) -> float:
    """Return c with sum(expit(w + c)) within about one standard deviation of m.

    Any c gives the exact distribution; c only keeps the stored probabilities in range,
    so a few safeguarded Newton steps suffice.
    """
    n = log_weights.size
    base = np.log(m) - np.log(n - m)  # logit(m / n)
    lo = base - float(log_weights.max())
    hi = base - float(log_weights.min())
    # start so that the m-th largest weight has success probability m/n: exact for equal
    # weights, and a few Newton steps away otherwise
    kth = np.partition(log_weights, n - m)[n - m]
    c = base - float(kth)
    for _ in range(200):
        p = expit(log_weights + c)
        f = float(p.sum()) - m
        deriv = float(np.dot(p, 1.0 - p))
        if abs(f) <= max(0.5, 0.5 * np.sqrt(deriv)):
            return c
        if f > 0:
            hi = c
        else:
            lo = c
        c_new = c - f / deriv if deriv > 1e-12 else 0.5 * (lo + hi)
        if not (lo < c_new < hi):
            c_new = 0.5 * (lo + hi)
        c = c_new
    return c


def _conv_truncated(left: np.ndarray, right: np.ndarray, width: int) -> np.ndarray:
    """Convolution of two batches of count distributions (one per column), truncated to ``width`` rows.

    Arrays have shape (n_counts, n_blocks): each column is a distribution, and the row
    operations below run over long contiguous rows.
    """
    a = left.shape[0]
    b = right.shape[0]
    n_blocks = left.shape[1]
    width = min(width, a + b - 1)
    if n_blocks * width * a <= 600_000 and a > 8:
        # few wide blocks: one batched product with the Toeplitz matrices of ``right``
        lag = np.arange(width)[:, None] - np.arange(a)[None, :]  # out[k] uses right[k - i]
        valid = (lag >= 0) & (lag < b)
        toeplitz = np.where(valid, right.T[:, np.clip(lag, 0, b - 1)], 0.0)
        return np.matmul(toeplitz, left.T[:, :, None])[:, :, 0].T
    out = np.zeros((width, n_blocks))
    if a <= b:
        for i in range(min(a, width)):
            k = min(b, width - i)
            out[i : i + k] += left[i] * right[:k]
    else:
        for i in range(min(b, width)):
            k = min(a, width - i)
            out[i : i + k] += right[i] * left[:k]
    return out


class ConditionalPoissonTree:
    """Tree of truncated Poisson-binomial count distributions for exact top-m sampling.

    Parameters
    ----------
    log_weights : ndarray of shape (n,)
        Finite log-weights ``w_j``; subset probabilities are proportional to
        ``exp(sum_{j in G} w_j)``.
    m : int
        Subset size, ``0 < m < n``.
    """

    def __init__(self, log_weights: np.ndarray, m: int) -> None:
        w = np.asarray(log_weights, dtype=float)
        n = w.size
        if not 0 < m < n:
            raise ValueError("ConditionalPoissonTree needs 0 < m < n.")
        self.n = n
        self.m = m
        c = _solve_tilt(w, m)
        self.p = expit(w + c)
        q = expit(-(w + c))
        cur = np.vstack([q, self.p])  # (counts, blocks): column j is leaf j's law [1 - p_j, p_j]
        levels: list[np.ndarray] = []
        while cur.shape[1] > 1:
            if cur.shape[1] % 2:
                # pad with an empty block (count 0 with probability 1); it is never selected
                pad = np.zeros((cur.shape[0], 1))
                pad[0, 0] = 1.0
                cur = np.hstack([cur, pad])
            levels.append(cur)
            cur = _conv_truncated(cur[:, 0::2], cur[:, 1::2], m + 1)
        levels.append(cur)
        # stored as (blocks, counts) views: row b is block b's truncated count distribution
        self.levels: list[np.ndarray] = [lev.T for lev in levels]
        self.normaliser = float(self.levels[-1][0, m])
        if not self.normaliser > 0:  # pragma: no cover - guarded by the tilt
            raise FloatingPointError("top-m normaliser underflowed; report this as a bug.")

    def sample(self, uniforms: np.ndarray) -> np.ndarray:
        """Draw subsets using the supplied uniforms.

        Parameters
        ----------
        uniforms : ndarray of shape (size, n_levels, m)
            Independent U[0, 1) variates; ``n_levels = len(self.levels) - 1``.

        Returns
        -------
        ndarray of shape (size, m)
            Sorted indices of the selected items, one row per draw.
        """
        size = uniforms.shape[0]
        m = self.m
        # active nodes: (draw, node index at current level, count to place in it)
        draw = np.arange(size)
        node = np.zeros(size, dtype=np.int64)
        count = np.full(size, m, dtype=np.int64)
        slot = np.zeros(size, dtype=np.int64)  # which uniform column each active node uses
        n_up = len(self.levels) - 1
        for depth_from_top, level in enumerate(reversed(self.levels[:-1])):
            left = level[2 * node]
            right = level[2 * node + 1]
            a = np.arange(m + 1)
            ca = count[:, None] - a[None, :]
            valid = (ca >= 0) & (a[None, :] < left.shape[1]) & (ca < right.shape[1])
            lv = np.where(a[None, :] < left.shape[1], left[:, np.minimum(a, left.shape[1] - 1)], 0.0)
            rv = np.take_along_axis(right, np.clip(ca, 0, right.shape[1] - 1), axis=1)
            weights = np.where(valid, lv * rv, 0.0)
            cdf = np.cumsum(weights, axis=1)
            u = uniforms[draw, n_up - 1 - depth_from_top, slot] * cdf[:, -1]
            # first index whose cdf exceeds u: that cell has positive weight since u < cdf[-1]
            a_left = (cdf <= u[:, None]).sum(axis=1)
            a_right = count - a_left
            # children with a positive count stay active; they consume distinct uniform slots
            keep_l = a_left > 0
            keep_r = a_right > 0
            draw = np.concatenate([draw[keep_l], draw[keep_r]])
            new_node = np.concatenate([2 * node[keep_l], 2 * node[keep_r] + 1])
            count = np.concatenate([a_left[keep_l], a_right[keep_r]])
            order = np.lexsort((new_node, draw))
            draw, node, count = draw[order], new_node[order], count[order]
            # slot = rank of the node within its draw (at most m active nodes per draw)
            first = np.searchsorted(draw, draw, side="left")
            slot = np.arange(draw.size) - first
        return node.reshape(size, m)

    def inclusion_probabilities(self) -> np.ndarray:
        """Exact ``P(j in G)`` for every item (they sum to m)."""
        m = self.m
        # outside[c] for the root: probability that "nothing outside" holds m - c successes.
        root_width = self.levels[-1].shape[1]
        outside = np.zeros((1, root_width))
        outside[0, m] = 1.0
        for level in reversed(self.levels[:-1]):
            width = level.shape[1]
            left = level[0::2]
            right = level[1::2]
            outside = outside[: left.shape[0]]  # drop the parent's padding row, if any
            out_left = np.zeros((left.shape[0], width))
            out_right = np.zeros((left.shape[0], width))
            pw = outside.shape[1]
            # O_L[a] = sum_b R[b] * O_parent[a + b];  O_R[b] = sum_a L[a] * O_parent[a + b]
            for shift in range(width):
                k = min(width, pw - shift)
                if k <= 0:
                    break
                out_left[:, :k] += right[:, shift : shift + 1] * outside[:, shift : shift + k]
                out_right[:, :k] += left[:, shift : shift + 1] * outside[:, shift : shift + k]
            outside = np.empty((2 * left.shape[0], width))
            outside[0::2] = out_left
            outside[1::2] = out_right
        probs = self.p * outside[: self.n, 1] / self.normaliser
        return np.clip(probs, 0.0, 1.0)
