"""Rank pools of the group meritocratic policies: counts over a finite support, or stored contexts.

See :mod:`dpfair.bandits.gmf.policies` ("Ranks without a pass over the history") for the method.
"""

from __future__ import annotations

import numpy as np

_CHUNK_VALUES = 2**21  # random numbers drawn ahead per compiled kernel call (16 MB of float64)

# Relative tolerance of the rank comparisons: a pooled context x' counts as at or below the candidate x when
# <x', theta> <= <x, theta> + RANK_RTOL ||theta|| (||x'|| + ||x||).  Distinct contexts of a discrete support
# often project to the *same* real number (theta_hat inherits equal coordinates from repeated records:
# 0.2 (t_0 + t_1) == 0.4 t_0 when t_0 == t_1), and then the last bits of theta_hat and of the projection
# (BLAS, Cholesky, summation order) decide the comparison; the numpy rounds and the compiled kernels round
# differently (seen on ACS contexts: rows tying in exact arithmetic ranked apart by one engine).  The tolerance
# counts such ties as ties in every engine.  It is far above the rounding of the ridge estimate (about cond(V)
# 1e-16 relative, cond(V) <= 1 + N max||x||^2 / lambda) and far below any gap that matters statistically.
RANK_RTOL = 1e-9


def _chunks(horizon: int, values_per_round: int) -> list[tuple[int, int]]:
    """Spans ``[t0, t1)`` of rounds whose random numbers (``values_per_round`` each) fit in ``_CHUNK_VALUES``."""
    size = max(1, min(4096, _CHUNK_VALUES // max(values_per_round, 1)))
    return [(t0, min(t0 + size, horizon)) for t0 in range(0, horizon, size)]


def tie_break_argmax(scores: np.ndarray, uniforms: np.ndarray) -> np.ndarray:
    """Index of the largest score of each row, ties broken by the uniforms (uniformly at random).

    Parameters
    ----------
    scores : numpy.ndarray of shape (n_runs, K)
        Scores.
    uniforms : numpy.ndarray of shape (n_runs, K)
        Independent U[0, 1) variates.

    Returns
    -------
    numpy.ndarray of int64, shape (n_runs,)
        The chosen index per row.
    """
    best = scores == scores.max(axis=1, keepdims=True)
    return np.argmax(np.where(best, uniforms, -1.0), axis=1)


def rank_tolerance(theta: np.ndarray) -> np.ndarray:
    """``RANK_RTOL ||theta||`` of every run: the comparisons' tolerance per unit of context norm.

    Parameters
    ----------
    theta : numpy.ndarray of shape (n_runs, d)
        The estimates the contexts are projected on.

    Returns
    -------
    numpy.ndarray of shape (n_runs,)
        ``c`` with ``x'`` at or below ``x`` when ``<x', theta> - c ||x'|| <= <x, theta> + c ||x||``.
    """
    return RANK_RTOL * np.sqrt(np.einsum("sd,sd->s", theta, theta))


class _SupportPool:
    """Rank pool over a finite support: per-run counts of each support row (module docstring)."""

    def __init__(self, support: np.ndarray, offsets: np.ndarray, n_runs: int) -> None:
        self.support = support
        self.norms = np.sqrt(np.einsum("md,md->m", support, support))  # ||x'|| of every row (rank_tolerance)
        self.offsets = offsets
        self.sizes = np.diff(offsets)
        # counts are small integers: exact in float32 (and their sums, below 2**24)
        self.counts = np.zeros((support.shape[0], n_runs), dtype=np.float32)
        self._runs = np.arange(n_runs)[:, None]
        self._proj = np.empty((support.shape[0], n_runs))
        self._below = np.empty((support.shape[0], n_runs), dtype=bool)
        self._weighted = np.empty((support.shape[0], n_runs), dtype=np.float32)
        self._tol = np.zeros(n_runs)
        self._theta: np.ndarray | None = None

    def add(self, ids: np.ndarray, sign: float = 1.0) -> None:
        np.add.at(self.counts, (ids, np.broadcast_to(self._runs, ids.shape)), sign)

    def rank_counts(self, theta: np.ndarray, ids: np.ndarray) -> np.ndarray:
        if self._theta is None or not np.array_equal(theta, self._theta):
            # every support row under every run's theta_hat, lowered by its tolerance: <x', theta> - c ||x'||,
            # (M, n_runs); reused while theta_hat is unchanged
            self._tol = rank_tolerance(theta)
            np.matmul(self.support, theta.T, out=self._proj)
            self._proj -= self.norms[:, None] * self._tol[None, :]
            self._theta = theta.copy()
        # (n_runs, K): the candidates' own projections raised by their tolerance, <x_k, theta> + c ||x_k||
        q = self._proj[ids, self._runs] + 2.0 * self._tol[:, None] * self.norms[ids]
        # 1{<x', theta_hat> <= <x_k, theta_hat>} (to the tolerance RANK_RTOL) for every support row x' of group k
        np.less_equal(self._proj, np.repeat(q.T, self.sizes, axis=0), out=self._below)
        np.multiply(self.counts, self._below, out=self._weighted)
        # sum the pool counts of the rows at or below the candidate, group by group
        return np.add.reduceat(self._weighted, self.offsets[:-1], axis=0).T.astype(float)


def _factor_support(support: np.ndarray) -> tuple[np.ndarray, ...]:
    """Split the support's columns for ``dpfair.bandits.gmf._kernels._project_factored`` where that saves products.

    Columns are taken in order of increasing number of distinct values into the block ``A`` whose
    distinct combinations (``U`` of them) are projected once; the others are added row by row.  The
    block minimizing ``U |A| + M (|B| + 6)`` (a row's look-up costs about six products) is used when it
    saves a fifth of the ``M d`` products of the direct projection; otherwise ``cols_a`` is empty.

    Returns
    -------
    tuple of numpy.ndarray
        ``combos_t`` ``(|A|, U)``, ``codes`` ``(M,)``, ``rest_t`` ``(|B|, M)``, ``cols_a``, ``cols_b``.
    """
    n_rows, dim = support.shape
    values = [np.unique(support[:, i], return_inverse=True) for i in range(dim)]
    order = np.argsort([v.size for v, _ in values], kind="stable")
    best, best_cost = 0, 0.8 * n_rows * dim
    combo = np.zeros(n_rows, dtype=np.int64)  # dense code of each row's values in the columns taken so far
    for m, column in enumerate(order, start=1):
        distinct, inverse = values[column]
        _, combo = np.unique(combo * distinct.size + inverse.reshape(-1), return_inverse=True)
        cost = (int(combo.max()) + 1) * m + n_rows * (dim - m + 6)
        if cost < best_cost:
            best, best_cost = m, cost
    if best == 0:
        empty = np.zeros(0, dtype=np.int64)
        return np.zeros((0, 1)), np.zeros(n_rows, dtype=np.int64), np.zeros((0, n_rows)), empty, empty
    cols_a, cols_b = np.sort(order[:best]), np.sort(order[best:])
    combos, codes = np.unique(support[:, cols_a], axis=0, return_inverse=True)
    return (np.ascontiguousarray(combos.T), codes.reshape(-1).astype(np.int64), np.ascontiguousarray(support[:, cols_b].T),
            cols_a.astype(np.int64), cols_b.astype(np.int64))


class _ContextPool:
    """Rank pool over stored contexts: the direct computation, ``O(N_t K d)`` per run and round."""

    def __init__(self, horizon: int, n_runs: int, n_groups: int, dim: int) -> None:
        self.buffer = np.zeros((horizon, n_runs, n_groups, dim))
        self.start = 0
        self.end = 0

    def add(self, contexts: np.ndarray) -> None:
        self.buffer[self.end] = contexts
        self.end += 1

    def remove_oldest(self) -> None:
        self.start += 1

    def rank_counts(self, theta: np.ndarray, contexts: np.ndarray) -> np.ndarray:
        window = self.buffer[self.start : self.end]
        both = np.concatenate([window, contexts[None]], axis=0)
        proj = np.einsum("nskd,sd->nsk", both, theta)
        # <x', theta> - c ||x'|| <= <x_k, theta> + c ||x_k||: the support pool's comparison (RANK_RTOL)
        slack = rank_tolerance(theta)[None, :, None] * np.sqrt(np.einsum("nskd,nskd->nsk", both, both))
        return (proj[:-1] - slack[:-1] <= (proj[-1] + slack[-1])[None]).sum(axis=0).astype(float)
