"""Compiled rounds of group meritocratic online selection (numba): OFUL, Fair-Greedy, Private-Fair-Greedy.

:func:`dpfair.bandits.simulate` with ``engine="compiled"`` hands a chunk of rounds of one policy, for
all its runs (seeds), to the kernels: the runs are independent, split in one contiguous part per
thread (:func:`parallel_runs`), the rounds in order inside.  Per round and run the kernels do what
the numpy reference (``select`` then ``update`` of :mod:`dpfair.bandits.gmf.policies` and
:mod:`dpfair.bandits.gmf.private_fair_greedy`) does:

* :func:`oful_rounds`: ``ln det V`` (Cholesky), the radius of :func:`dpfair.bandits.confidence_radius`,
  ``theta_hat = V^{-1} b`` as :meth:`~dpfair.bandits.RidgeState.theta` computes it, the optimistic
  scores, the tie-breaking argmax, and the rank-one update of ``V``, ``b`` and ``V^{-1}``
  (Sherman-Morrison, the same arithmetic as :meth:`~dpfair.bandits.RidgeState.update`);
* :func:`fair_greedy_rounds`: the support-count ranks of ``_SupportPool.rank_counts`` (project the
  support rows on ``theta_hat`` when it has changed, then, per candidate, sum the pool counts of its
  group's rows at or below it), the rank noise, the tie-breaking argmax, the pool counts, the
  binary-tree mechanism over ``[x; y][x; y]^T`` (exact and noisy nodes, upper triangles only), its
  shifted release and the ridge estimate from it (Cholesky; a release that is not positive definite
  keeps the run's last estimate, as ``FairGreedy._refresh_theta``).  With another factorization of the
  running sums (``PrivateFairGreedy(continual="sqrt" | "honaker")``, a
  :class:`~dpfair.privacy.ContinualSumMechanism`) the kernel keeps the exact running sum and adds each
  release's noise ``(B z)_t``, computed beforehand by the mechanism's own stream (data-independent).

Every random number (tie-breaking uniforms, rank noise, tree-node noise) is drawn *outside*, by the
policy's noise source in numpy, in the numpy reference's order, and passed in: a seeded run draws
the same stream under both engines.  The ranks are integer counts of comparisons between
projections computed by one function (a candidate is compared with its own projection, equal rows
get equal projections); the projections and ridge estimates agree with numpy's to floating-point
rounding, and the comparisons have the tolerance ``RANK_RTOL ||theta_hat|| (||x'|| + ||x||)`` of the
numpy pools (:mod:`dpfair.bandits._ranks`), which counts the exact ties of discrete supports (distinct
records with equal projections in exact arithmetic) as ties, so the actions are the same unless two
distinct contexts project within rounding of that tolerance's edge.  The caller checks the stream
first (``BanditPolicy._check_stream``): the kernels never meet a context or reward that ``update``
would refuse.

Cost per run: OFUL ``O(K d^2 + d^3)`` per round; Fair-Greedy ``O(M d)`` per change of ``theta_hat``
(every other round with the history split; fewer products with :func:`_project_factored`) plus
``O(M)`` per round for the counts, ``O(d^2 log T + d^3)`` per regression row for the tree and the
ridge estimate.  Sorting the support rows by projection when ``theta_hat`` changes would turn the
per-round counts into binary searches, but it costs ``O(M log M)`` at every change, which comes every
other round: more than the two linear passes it saves.

The kernels are cached on disk (``cache=True``) next to this file or, where the package is
read-only, in numba's user-wide cache directory (``NUMBA_CACHE_DIR``); where neither can be written
they are compiled in memory at the first call of each process.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

import numpy as np

from dpfair.bandits._numba import cholesky, sherman_morrison, threads
from dpfair.bandits._numba import jit as _jit

__all__ = ["fair_greedy_rounds", "oful_rounds", "parallel_runs", "threads"]

_BLOCK = 2048  # support rows projected per pass (their projections stay in L1)


def _call_parts(pool: ThreadPoolExecutor | None, parts: list[tuple[int, int]], kernel: Any, *args: Any) -> None:
    """``kernel(run_lo, run_hi, *args)`` for every part, the first in the calling thread, the others in ``pool``."""
    futures = [pool.submit(kernel, lo, hi, *args) for lo, hi in parts[1:]] if pool is not None else []
    try:
        kernel(*parts[0], *args)
    finally:
        for future in futures:
            future.result()


@contextmanager
def parallel_runs(n_runs: int) -> Iterator[Callable[..., None]]:
    """Yield ``call(kernel, *args)``: the kernel on contiguous parts of the runs, one part per thread.

    The kernels release the GIL and write disjoint runs, so the parts run in parallel.  Python threads,
    not numba's ``parallel=True``: numba's OpenMP layer aborts a process forked after it started (the
    experiment runner's process pool).  The threads live for the ``with`` block only.
    """
    n_parts = max(1, min(threads(), n_runs))
    parts = [(n_runs * k // n_parts, n_runs * (k + 1) // n_parts) for k in range(n_parts)]
    if n_parts == 1:
        yield lambda kernel, *args: _call_parts(None, parts, kernel, *args)
        return
    with ThreadPoolExecutor(max_workers=n_parts - 1, thread_name_prefix="dpfair-gmf") as pool:
        yield lambda kernel, *args: _call_parts(pool, parts, kernel, *args)


# --------------------------------------------------------------------------------------------------
# small dense linear algebra
# --------------------------------------------------------------------------------------------------
@_jit()
def _cholesky_solve(chol: np.ndarray, rhs: np.ndarray, out: np.ndarray) -> None:
    """``out = (chol chol^T)^{-1} rhs`` by forward and back substitution."""
    d = rhs.shape[0]
    for i in range(d):
        s = rhs[i]
        for k in range(i):
            s -= chol[i, k] * out[k]
        out[i] = s / chol[i, i]
    for i in range(d - 1, -1, -1):
        s = out[i]
        for k in range(i + 1, d):
            s -= chol[k, i] * out[k]
        out[i] = s / chol[i, i]


@_jit()
def _tie_break(scores: np.ndarray, uniforms: np.ndarray) -> int:
    """``policies.tie_break_argmax`` for one run: the maximizer with the largest uniform (the first on ties)."""
    best = scores[0]
    for k in range(1, scores.shape[0]):
        if scores[k] > best:
            best = scores[k]
    chosen = 0
    top = -1.0
    for k in range(scores.shape[0]):
        if scores[k] == best and uniforms[k] > top:
            top = uniforms[k]
            chosen = k
    return chosen


# --------------------------------------------------------------------------------------------------
# OFUL
# --------------------------------------------------------------------------------------------------
@_jit()
def oful_rounds(
    run_lo: int,
    run_hi: int,
    t0: int,
    t1: int,
    rows: np.ndarray,
    support: np.ndarray,
    rewards: np.ndarray,
    uniforms: np.ndarray,
    gram: np.ndarray,
    gram_inverse: np.ndarray,
    target: np.ndarray,
    n_observations: np.ndarray,
    log_confidence: float,
    dim_log_regularization: float,
    noise_std: float,
    radius_offset: float,
    exploration_scale: float,
    actions: np.ndarray,
) -> None:
    """Rounds ``t0 <= t < t1`` of OFUL for every run, in place.

    Parameters
    ----------
    run_lo, run_hi : int
        The runs ``run_lo <= r < run_hi`` (one thread's part).
    t0, t1 : int
        The rounds.
    rows : numpy.ndarray of int64, shape (n_runs, T, K)
        Support row of every candidate.
    support : numpy.ndarray of shape (M, d)
        The support (the policy's, sorted by group).
    rewards : numpy.ndarray of shape (n_runs, T, K)
        Reward of every candidate (the policy sees the chosen one's).
    uniforms : numpy.ndarray of shape (t1 - t0, n_runs, K)
        Tie-breaking uniforms of the rounds.
    gram, gram_inverse, target, n_observations : numpy.ndarray
        ``RidgeState`` of every run (updated in place).
    log_confidence, dim_log_regularization, noise_std, radius_offset, exploration_scale : float
        ``2 ln(1/delta)``, ``d ln(lambda)``, ``R``, ``sqrt(lambda) S`` and the radius multiplier.
    actions : numpy.ndarray of int64, shape (n_runs, T)
        Written: the chosen group of every round.
    """
    n_groups, d = rows.shape[2], support.shape[1]
    for r in range(run_lo, run_hi):
        chol = np.zeros((d, d))
        theta = np.empty(d)
        vx = np.empty(d)
        scores = np.empty(n_groups)
        V, V_inv, b = gram[r], gram_inverse[r], target[r]
        for t in range(t0, t1):
            # radius sqrt(beta_t) = R sqrt(2 ln(1/delta) + ln(det V_t / lambda^d)) + sqrt(lambda) S (Thm 2)
            cholesky(V, chol)
            log_det = 0.0
            for i in range(d):
                log_det += math.log(chol[i, i])
            log_ratio = max(2.0 * log_det - dim_log_regularization, 0.0)
            radius = noise_std * math.sqrt(log_confidence + log_ratio) + radius_offset
            width = exploration_scale * radius
            for i in range(d):  # theta_hat = V^{-1} b
                s = 0.0
                for j in range(d):
                    s += V_inv[i, j] * b[j]
                theta[i] = s
            # optimistic score <x_k, theta_hat> + scale sqrt(beta_t) ||x_k||_{V^{-1}} of every candidate
            for k in range(n_groups):
                x = support[rows[r, t, k]]
                mean = 0.0
                quad = 0.0
                for i in range(d):
                    mean += x[i] * theta[i]
                    s = 0.0
                    for j in range(d):
                        s += V_inv[i, j] * x[j]
                    quad += x[i] * s
                scores[k] = mean + width * math.sqrt(max(quad, 0.0))
            a = _tie_break(scores, uniforms[t - t0, r])
            actions[r, t] = a
            y = rewards[r, t, a]
            # RidgeState.update: V += x x^T, b += y x, Sherman-Morrison on V^{-1}
            x = support[rows[r, t, a]]
            for i in range(d):
                for j in range(d):
                    V[i, j] = V[i, j] + x[i] * x[j]
                b[i] = b[i] + y * x[i]
            sherman_morrison(V_inv, x, vx)
            n_observations[r] += 1


# --------------------------------------------------------------------------------------------------
# Fair-Greedy and Private-Fair-Greedy
# --------------------------------------------------------------------------------------------------
@_jit()
def _project(support_t: np.ndarray, theta: np.ndarray, out: np.ndarray) -> None:
    """``out[j] = <support_j, theta>`` for every support row (``support_t`` is the ``(d, M)`` transpose).

    Blocks of rows stay in L1 while four coordinates at a time are added (vectorized over the rows);
    every row is projected with the same arithmetic, so equal rows get equal projections.
    """
    d, n_rows = support_t.shape
    for start in range(0, n_rows, _BLOCK):
        stop = min(start + _BLOCK, n_rows)
        n = stop - start
        acc = out[start:stop]
        weight, row = theta[0], support_t[0, start:stop]
        for j in range(n):
            acc[j] = weight * row[j]
        i = 1
        while i + 3 < d:
            w0, w1, w2, w3 = theta[i], theta[i + 1], theta[i + 2], theta[i + 3]
            r0, r1 = support_t[i, start:stop], support_t[i + 1, start:stop]
            r2, r3 = support_t[i + 2, start:stop], support_t[i + 3, start:stop]
            for j in range(n):
                acc[j] += (w0 * r0[j] + w1 * r1[j]) + (w2 * r2[j] + w3 * r3[j])
            i += 4
        while i < d:
            weight, row = theta[i], support_t[i, start:stop]
            for j in range(n):
                acc[j] += weight * row[j]
            i += 1


@_jit()
def _project_factored(
    combos_t: np.ndarray, codes: np.ndarray, rest_t: np.ndarray, theta_a: np.ndarray, theta_b: np.ndarray,
    partial: np.ndarray, out: np.ndarray,
) -> None:
    """:func:`_project` over a factored support: ``out[j] = <combo_{codes[j]}, theta_a> + <rest_j, theta_b>``.

    The support's columns are split in two blocks: ``A``, whose combinations of values repeat (discrete
    features: ``combos_t`` holds the ``U`` distinct ones, transposed), and the rest ``B``.  The ``U``
    partial projections are computed once, then every row adds its ``B`` coordinates: ``U |A| + M |B|``
    products instead of ``M d``.  Every row is projected with the same arithmetic.
    """
    _project(combos_t, theta_a, partial)
    n_rows, n_rest = codes.shape[0], rest_t.shape[0]
    if n_rest == 0:
        for j in range(n_rows):
            out[j] = partial[codes[j]]
        return
    weight, row = theta_b[0], rest_t[0]
    for j in range(n_rows):
        out[j] = partial[codes[j]] + weight * row[j]
    for i in range(1, n_rest):
        weight, row = theta_b[i], rest_t[i]
        for j in range(n_rows):
            out[j] += weight * row[j]


@_jit()
def _count_at_or_below(proj: np.ndarray, counts: np.ndarray, value: float) -> int:
    """Sum of ``counts[j]`` over the rows with ``proj[j] <= value`` (contiguous slices: vectorized)."""
    total = np.int32(0)  # a group's pool count is below 2**31
    for j in range(proj.shape[0]):
        if proj[j] <= value:
            total += counts[j]
    return total


@_jit()
def _tree_add(
    exact: np.ndarray,
    noisy: np.ndarray,
    leaf_index: int,
    z: np.ndarray,
    pack_row: np.ndarray,
    pack_col: np.ndarray,
    node_noise: np.ndarray,
    with_noise: bool,
    block: np.ndarray,
) -> None:
    """``BinaryTreeMechanism.update`` with the leaf ``z z^T`` (packed upper triangles, one run)."""
    level = 0
    while (leaf_index >> level) & 1 == 0:
        level += 1
    n_packed = pack_row.shape[0]
    # the node completed at this leaf: the lower levels' exact sums plus the leaf
    if level == 0:
        for p in range(n_packed):
            block[p] = z[pack_row[p]] * z[pack_col[p]]
    else:
        for p in range(n_packed):
            block[p] = exact[0, p]
        for lv in range(1, level):
            for p in range(n_packed):
                block[p] = block[p] + exact[lv, p]
        for p in range(n_packed):
            block[p] = block[p] + z[pack_row[p]] * z[pack_col[p]]
    for p in range(n_packed):
        exact[level, p] = block[p]
        noisy[level, p] = block[p] + node_noise[p] if with_noise else block[p]
    for lv in range(level):
        for p in range(n_packed):
            exact[lv, p] = 0.0
            noisy[lv, p] = 0.0


@_jit(inline="always")
def _store_packed(p, value, shift, pack_row, pack_col, gram, target) -> None:
    """Packed entry ``p`` of a release into ``gram`` (symmetric, ``shift`` added on the diagonal) or ``target``
    (the augmented matrix's last column; its corner is not stored)."""
    d = gram.shape[0]
    i, j = pack_row[p], pack_col[p]
    if i == j:
        value = value + shift
    if j < d:
        gram[i, j] = value
        gram[j, i] = value
    elif i < d:
        target[i] = value


@_jit()
def _tree_release(
    noisy: np.ndarray, leaf_index: int, shift: float, pack_row: np.ndarray, pack_col: np.ndarray,
    released: np.ndarray, gram: np.ndarray, target: np.ndarray,
) -> None:
    """``BinaryTreeMechanism.release(shift)``: the noisy nodes of the bits of ``leaf_index``, split into ``V``, ``b``."""
    n_packed = pack_row.shape[0]
    first = True
    for lv in range(noisy.shape[0]):
        if (leaf_index >> lv) & 1:
            if first:
                for p in range(n_packed):
                    released[p] = noisy[lv, p]
                first = False
            else:
                for p in range(n_packed):
                    released[p] = released[p] + noisy[lv, p]
    for p in range(n_packed):
        _store_packed(p, released[p], shift, pack_row, pack_col, gram, target)


@_jit()
def _sum_add_release(
    exact: np.ndarray, z: np.ndarray, release_noise: np.ndarray, shift: float, pack_row: np.ndarray,
    pack_col: np.ndarray, gram: np.ndarray, target: np.ndarray,
) -> None:
    """``ContinualSumMechanism.update`` then ``release(shift)`` with the leaf ``z z^T`` (packed, one run).

    ``exact`` holds the exact running sum; ``release_noise`` is the factorization's noise ``(B z)_t`` of
    this release, drawn beforehand (it does not depend on the data).
    """
    for p in range(pack_row.shape[0]):
        exact[p] = exact[p] + z[pack_row[p]] * z[pack_col[p]]
        _store_packed(p, exact[p] + release_noise[p], shift, pack_row, pack_col, gram, target)


@_jit(inline="always")
def _tolerance(theta: np.ndarray, rank_rtol: float) -> float:
    """The tolerance of the rank comparisons per unit of norm, ``c = RANK_RTOL ||theta_hat||``
    (:func:`dpfair.bandits._ranks.rank_tolerance`)."""
    sq = 0.0
    for j in range(theta.shape[0]):
        sq += theta[j] * theta[j]
    return rank_rtol * math.sqrt(sq)


@_jit(inline="always")
def _reproject(theta, factored, cols_a, cols_b, theta_a, theta_b, combos_t, codes, rest_t, partial, support_t, norms,
               rank_rtol, proj) -> None:
    """``proj[j] = <x_j, theta_hat> - c ||x_j||`` for every support row, after ``theta_hat`` changed: through the
    factored support (:func:`_project_factored`) when it has one, else directly (:func:`_project`)."""
    tol = _tolerance(theta, rank_rtol)
    if factored:
        for j in range(cols_a.shape[0]):
            theta_a[j] = theta[cols_a[j]]
        for j in range(cols_b.shape[0]):
            theta_b[j] = theta[cols_b[j]]
        _project_factored(combos_t, codes, rest_t, theta_a, theta_b, partial, proj)
    else:
        _project(support_t, theta, proj)
    for j in range(norms.shape[0]):
        proj[j] -= tol * norms[j]


@_jit(inline="always")
def _relative_ranks(candidates, proj, counts, offsets, norms, tol, n_pool, noise, noisy, ranks) -> None:
    """Every group's relative rank of its candidate this round (Fair-Greedy's F_hat_k(<x_k, theta_hat>)): the
    share of group k's pooled contexts at or below ``<x_k, theta_hat> + c ||x_k||`` (pooled rows within the
    tolerance of a tie count, ``_ranks.RANK_RTOL``), plus the release's Gaussian noise when ``noisy``
    (Private-Fair-Greedy's private relative rank estimation, ``+ N(0, sigma_t^2)``)."""
    for k in range(ranks.shape[0]):
        value = proj[candidates[k]] + 2.0 * tol * norms[candidates[k]]
        lo, hi = offsets[k], offsets[k + 1]
        ranks[k] = _count_at_or_below(proj[lo:hi], counts[lo:hi], value) / n_pool
        if noisy:
            ranks[k] = ranks[k] + noise[k]


@_jit(inline="always")
def _regression_release(leaf, z, node_noise, noisy_tree, factorized, shift, exact, noisy, pack_row, pack_col, block,
                        released, V, b) -> None:
    """The ``leaf``-th regression row ``z = [x; y]`` enters the continually private sums and ``V``, ``b`` receive
    the release: the running sum plus the factorization's noise ``(B z)_leaf`` when ``factorized``, else the
    binary tree's leaf and its release."""
    if factorized:
        _sum_add_release(exact[0], z, node_noise, shift, pack_row, pack_col, V, b)
    else:
        _tree_add(exact, noisy, leaf, z, pack_row, pack_col, node_noise, noisy_tree, block)
        _tree_release(noisy, leaf, shift, pack_row, pack_col, released, V, b)


@_jit(inline="always")
def _refit(V, b, chol, theta_new, theta, target, gram) -> bool:
    """The ridge estimate ``theta_hat = V^-1 b`` of a released ``(V, b)`` when ``V`` is positive definite: it is
    stored with ``b`` and ``V`` as the run's state and True returned; False (nothing stored) otherwise."""
    if not cholesky(V, chol):
        return False
    _cholesky_solve(chol, b, theta_new)
    for j in range(theta.shape[0]):
        theta[j] = theta_new[j]
        target[j] = b[j]
        for m in range(theta.shape[0]):
            gram[j, m] = V[j, m]
    return True


@_jit()
def fair_greedy_rounds(
    run_lo: int, run_hi: int, t0: int, t1: int, split: bool, rows: np.ndarray, support: np.ndarray,
    support_t: np.ndarray, offsets: np.ndarray, norms: np.ndarray, rank_rtol: float, rewards: np.ndarray,
    uniforms: np.ndarray, rank_noise: np.ndarray, tree_noise: np.ndarray, factorized: bool, shifts: np.ndarray,
    combos_t: np.ndarray, codes: np.ndarray, rest_t: np.ndarray, cols_a: np.ndarray, cols_b: np.ndarray,
    pack_row: np.ndarray, pack_col: np.ndarray, counts: np.ndarray, proj: np.ndarray, proj_fresh: np.ndarray,
    theta: np.ndarray, gram: np.ndarray, target: np.ndarray, exact: np.ndarray, noisy: np.ndarray,
    failures: np.ndarray, actions: np.ndarray
) -> None:
    """Rounds ``t0 <= t < t1`` of (Private-)Fair-Greedy over a support for every run, in place.

    Parameters
    ----------
    run_lo, run_hi, t0, t1 : int
        The runs ``run_lo <= r < run_hi`` (one thread's part) and the rounds ``t0 <= t < t1``.
    split : bool
        ``split_history``: the first ``floor(n / 2)`` of ``n`` past rounds feed the regression.
    rows : numpy.ndarray of int64, shape (n_runs, T, K)
        Support row of every candidate (rows of group ``k`` are ``offsets[k] <= j < offsets[k + 1]``).
    support, support_t : numpy.ndarray
        The ``(M, d)`` support sorted by group, and its ``(d, M)`` transpose.
    offsets : numpy.ndarray of int64, shape (K + 1,)
        First support row of every group.
    norms : numpy.ndarray of shape (M,)
        Euclidean norm of every support row.
    rank_rtol : float
        ``dpfair.bandits._ranks.RANK_RTOL``: row ``j`` counts as at or below candidate ``x`` when
        ``<x_j, theta> - c ||x_j|| <= <x, theta> + c ||x||`` with ``c = rank_rtol ||theta||``.
    rewards, uniforms : numpy.ndarray of shapes (n_runs, T, K) and (t1 - t0, n_runs, K)
        Reward of every candidate; tie-breaking uniforms of the rounds.
    rank_noise : numpy.ndarray of shape (t1 - t0, n_runs, K), or (0, n_runs, K)
        Noise added to the ranks (zero in rounds without a release); empty for exact ranks.
    tree_noise : numpy.ndarray of shape (t1 - t0, n_runs, P), or (0, n_runs, P)
        Noise of the tree node completed in each round (packed upper triangle); empty for exact sums.
        With ``factorized``, the noise ``(B z)_t`` of the release each round makes instead.
    factorized : bool
        The regression sums go through a factorization (:class:`~dpfair.privacy.ContinualSumMechanism`):
        ``exact[:, 0]`` keeps the exact running sum and each release adds ``tree_noise`` of its round.
    shifts : numpy.ndarray of shape (n_regression + 1,)
        ``lambda + c`` added to the diagonal of the release after ``n`` regression rows.
    combos_t, codes, rest_t, cols_a, cols_b : numpy.ndarray
        The factored support of :func:`_project_factored` (columns ``cols_a`` and ``cols_b``); an
        empty ``cols_a`` projects the support directly.
    pack_row, pack_col : numpy.ndarray of int64, shape (P,)
        ``numpy.triu_indices(d + 1)``: the packing of the upper triangles.
    counts, proj, proj_fresh, theta, gram, target, exact, noisy, failures : numpy.ndarray
        State of every run (updated in place): pool count of every support row ``(n_runs, M)``, the
        rows' projections on ``theta_hat`` lowered by their tolerance ``c ||x_j||`` and whether they are
        current, ``theta_hat``, the last positive definite release ``V``, ``b``, the tree's exact and
        noisy nodes ``(n_runs, L, P)`` and the number of releases that were not positive definite.
    actions : numpy.ndarray of int64, shape (n_runs, T)
        Written: the chosen group of every round.
    """
    n_groups, d = rows.shape[2], support.shape[1]
    n_packed = pack_row.shape[0]
    noisy_ranks = rank_noise.shape[0] > 0
    noisy_tree = tree_noise.shape[0] > 0
    factored = cols_a.shape[0] > 0
    for r in range(run_lo, run_hi):
        # the run's scratch: ranks, the regression row z = [x; y], the release (V, b) and its Cholesky factor
        ranks, z, V, b, theta_new = np.empty(n_groups), np.empty(d + 1), np.empty((d, d)), np.empty(d), np.empty(d)
        block, released, empty_noise, chol = np.empty(n_packed), np.empty(n_packed), np.zeros(n_packed), np.zeros((d, d))
        theta_a, theta_b = np.empty(cols_a.shape[0]), np.empty(cols_b.shape[0])
        partial = np.empty(combos_t.shape[1])
        for t in range(t0, t1):
            i = t - t0
            n_regression = t // 2 if split else t  # rounds in the regression before this one
            n_pool = t - n_regression if split else t  # rounds in the rank pool (FairGreedy._pool_size)
            if n_pool == 0:
                ranks[:] = 0.0
            else:
                if not proj_fresh[r]:  # theta_hat changed: project every support row on it
                    _reproject(theta[r], factored, cols_a, cols_b, theta_a, theta_b, combos_t, codes, rest_t,
                               partial, support_t, norms, rank_rtol, proj[r])
                    proj_fresh[r] = True
                _relative_ranks(rows[r, t], proj[r], counts[r], offsets, norms, _tolerance(theta[r], rank_rtol), n_pool,
                                rank_noise[i, r] if noisy_ranks else ranks, noisy_ranks, ranks)
            a = _tie_break(ranks, uniforms[i, r])
            actions[r, t] = a
            for k in range(n_groups):  # the round's contexts enter the rank pool
                counts[r, rows[r, t, k]] += 1
            n_target = (t + 1) // 2 if split else t + 1
            if n_regression < n_target:  # one round enters the regression (one per round at most)
                s = n_regression
                if split:  # ... and leaves the rank pool
                    for k in range(n_groups):
                        counts[r, rows[r, s, k]] -= 1
                chosen = actions[r, s]
                x = support[rows[r, s, chosen]]
                for j in range(d):
                    z[j] = x[j]
                z[d] = rewards[r, s, chosen]
                # Continually private regression: the tree's (s+1)-th leaf is [x; y][x; y]^T
                _regression_release(s + 1, z, tree_noise[i, r] if noisy_tree else empty_noise, noisy_tree, factorized,
                                    shifts[s + 1], exact[r], noisy[r], pack_row, pack_col, block, released, V, b)
                if _refit(V, b, chol, theta_new, theta[r], target[r], gram[r]):
                    proj_fresh[r] = False
                else:  # the shift failed: keep the last estimate (post-processing, no privacy cost)
                    failures[r] += 1
