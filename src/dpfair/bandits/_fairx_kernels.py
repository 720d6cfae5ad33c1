"""Compiled rounds of the federated FairX-LinUCB simulator (numba).

:func:`dpfair.bandits.simulate_federated` with ``engine="compiled"`` keeps the state of a batch of
learners as rows (learner x seed x agent) and hands whole spans of rounds to :func:`run`: between
two synchronizations the rows are independent, so one call runs every round of the span for every
row (the rows split between threads: the kernels release the GIL).  Per round and row it does
what the numpy reference (``_run_group`` of :mod:`dpfair.bandits.federated` with
:mod:`dpfair.bandits.fairx`) does, up to floating-point rounding:

1. eigendecomposition of the (symmetric ``d x d``) ``V`` by cyclic Jacobi rotations, the centre
   ``theta_hat = V^{-1} b`` as :meth:`dpfair.bandits.RidgeState.theta` computes it and the confidence
   radius (Solanki et al., Algorithm 1, line 5);
2. projected gradient ascent for the optimistic ``theta_t`` (line 6) with the exact projection of
   :func:`dpfair.bandits.fairx._project` (the same Newton iteration on the secular equation, stopping
   rule and final rescaling);
3. the exponential-merit policy (line 7), the action drawn with the round's shared uniform (line 8),
   the per-round fairness and reward regret terms;
4. the rank-one ridge update of ``V``, ``b`` and ``V^{-1}`` (Sherman-Morrison, as
   :meth:`~dpfair.bandits.RidgeState.update`) and the local statistics ``S += x x^T``, ``s += x y``
   (line 9; shared rewards clipped for the private learners);
5. for the log-det protocol, a conservative version of the trigger of ``_Sync.after_round``: the
   span stops after the first round where it may fire for any row, and Python decides exactly.

Synchronizations (and the PRIVATIZER) stay in numpy, called at the rounds where the span stops.  The
local statistics ``S``, ``s`` the kernels accumulate are exact (unrounded) increments since the last
release, bit for bit those of the numpy rounds; the PRIVATIZER rounds each increment to its noise
grid once, when it is released (:meth:`dpfair.bandits.privatizer.Privatizer.release`), so both
engines release the same values and nothing here rounds.
Only the exponential merit is compiled; a callable merit runs the numpy reference.

The kernels are cached on disk (``cache=True``) next to this file or, where the package is
read-only, in numba's user-wide cache directory (``NUMBA_CACHE_DIR``); where neither can be written
they are compiled in memory at the first call of each process.
"""

from __future__ import annotations

import math
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np

from dpfair.bandits._numba import jit as _jit
from dpfair.bandits._numba import sherman_morrison, threads

__all__ = ["pool", "project_rows", "run", "run_rows", "split", "start", "threads"]


# --------------------------------------------------------------------------------------------------
# linear algebra on one small symmetric matrix
# --------------------------------------------------------------------------------------------------
@_jit()
def _eigh(gram: np.ndarray, eigvals: np.ndarray, eigvecs: np.ndarray, work: np.ndarray, product: np.ndarray) -> float:
    """Eigenvalues (unsorted) and eigenvectors (columns) of a symmetric ``gram`` by cyclic Jacobi.

    ``eigvecs`` holds a guess on entry (the previous round's eigenvectors: ``V`` changes by a
    rank-one term between rounds, which saves about a third of the sweeps; the identity for a cold
    start).  The guess is re-orthonormalized first (modified Gram-Schmidt, so rounding does not build
    up over the rounds), then ``work = Q^T V Q`` is diagonalized by the rotations of Golub & Van Loan
    (3rd ed., Algorithm 8.4.3, the stable ``t = sign(theta) / (|theta| + sqrt(1 + theta^2))``), skipping the
    pairs with ``a_pq^2 <= 1e-32 |a_pp a_qq|`` (below the rounding of ``V``) until none is left.
    Returns the largest eigenvalue.
    """
    d = gram.shape[0]
    for j in range(d):
        for i in range(j):
            dot = 0.0
            for k in range(d):
                dot += eigvecs[k, i] * eigvecs[k, j]
            for k in range(d):
                eigvecs[k, j] -= dot * eigvecs[k, i]
        norm = 0.0
        for k in range(d):
            norm += eigvecs[k, j] * eigvecs[k, j]
        norm = math.sqrt(norm)
        for k in range(d):
            eigvecs[k, j] /= norm
    for i in range(d):  # product = V Q
        for j in range(d):
            acc = 0.0
            for k in range(d):
                acc += gram[i, k] * eigvecs[k, j]
            product[i, j] = acc
    for i in range(d):  # work = Q^T (V Q), symmetric
        for j in range(i, d):
            acc = 0.0
            for k in range(d):
                acc += eigvecs[k, i] * product[k, j]
            work[i, j] = acc
            work[j, i] = acc
    for _ in range(60):
        rotated = False
        for p in range(d - 1):
            for q in range(p + 1, d):
                apq = work[p, q]
                if apq * apq <= 1e-32 * abs(work[p, p] * work[q, q]):
                    continue
                rotated = True
                theta = (work[q, q] - work[p, p]) / (2.0 * apq)
                t = 1.0 / (abs(theta) + math.sqrt(1.0 + theta * theta))
                if theta < 0.0:
                    t = -t
                c = 1.0 / math.sqrt(1.0 + t * t)
                s = t * c
                # work <- J^T work J: a_pp - t a_pq, a_qq + t a_pq, a_pq = 0, rows/columns p and q rotated
                work[p, p] -= t * apq
                work[q, q] += t * apq
                work[p, q] = 0.0
                work[q, p] = 0.0
                for k in range(d):
                    if k != p and k != q:
                        a, b = work[k, p], work[k, q]
                        work[k, p] = c * a - s * b
                        work[k, q] = s * a + c * b
                        work[p, k] = work[k, p]
                        work[q, k] = work[k, q]
                for k in range(d):  # eigvecs <- eigvecs J
                    a, b = eigvecs[k, p], eigvecs[k, q]
                    eigvecs[k, p] = c * a - s * b
                    eigvecs[k, q] = s * a + c * b
        if not rotated:
            break
    largest = -np.inf
    for i in range(d):
        eigvals[i] = work[i, i]
        largest = max(largest, work[i, i])
    return largest


@_jit()
def _log_det(gram: np.ndarray, work: np.ndarray) -> float:
    """``ln det`` of a symmetric positive definite ``gram`` by Cholesky (``-inf`` if it is not)."""
    d = gram.shape[0]
    total = 0.0
    for j in range(d):
        s = gram[j, j]
        for k in range(j):
            s -= work[j, k] * work[j, k]
        if not s > 0.0:
            return -np.inf
        root = math.sqrt(s)
        work[j, j] = root
        total += math.log(root)
        for i in range(j + 1, d):
            s = gram[i, j]
            for k in range(j):
                s -= work[i, k] * work[j, k]
            work[i, j] = s / root
    return 2.0 * total


# --------------------------------------------------------------------------------------------------
# projection onto the confidence ellipsoid and projected gradient ascent
# --------------------------------------------------------------------------------------------------
@_jit()
def _project(z, eigvals, largest, radius, w, out) -> bool:
    """``fairx._project`` in the eigenbasis of ``V``: ``z = Q^T (p - c)`` in, ``Q^T (P(p) - c)`` out.

    Inside (``sum lam z^2 <= r^2``) ``z`` is returned unchanged, with ``r = 0`` the centre.  Outside,
    Newton's method on ``phi(mu) = g(mu)^{-1/2} - 1/r``, ``g(mu) = sum_k lam_k z_k^2 / (1 + mu lam_k)^2``,
    from the same start and with the same stopping rule, then ``z / (1 + mu lam)`` rescaled by
    ``min(1, r / ||.||_V)``.  ``out`` may be ``z``.  Returns whether the point was outside.
    """
    d = z.shape[0]
    total = 0.0
    for k in range(d):
        w[k] = eigvals[k] * z[k] * z[k]
        total += w[k]
    if not total > radius * radius:  # inside: unchanged
        for k in range(d):
            out[k] = z[k]
        return False
    if radius <= 0.0:
        for k in range(d):
            out[k] = 0.0
        return True
    inv_r = 1.0 / radius
    # start left of the root: g(mu) >= q / (1 + mu lam_max)^2
    mu = max(math.sqrt(total) * inv_r - 1.0, 0.0) / largest
    for _ in range(100):
        g = 0.0
        slope = 0.0
        for k in range(d):
            inv = 1.0 / (1.0 + mu * eigvals[k])
            a = w[k] * inv * inv
            g += a
            slope += eigvals[k] * a * inv
        # Newton on phi with phi' = -g'/(2 g^{3/2}), g' = -2 sum lam a / (1 + mu lam):
        # (g^{-1/2} - 1/r) g^{3/2} / slope = g (1 - g^{1/2} / r) / slope
        step = g * (1.0 - math.sqrt(g) * inv_r) / slope
        if not math.isfinite(step):
            step = 0.0
        mu = max(mu - step, 0.0)
        if abs(step) <= 1e-13 * (1.0 + mu):
            break
    norm2 = 0.0
    for k in range(d):
        wk = z[k] / (1.0 + mu * eigvals[k])
        w[k] = wk
        norm2 += eigvals[k] * wk * wk
    shrink = min(1.0, radius / max(math.sqrt(norm2), 1e-300))
    for k in range(d):
        out[k] = w[k] * shrink
    return True


@_jit(inline="always")  # inlined (numba IR): called in the ascent's every step
def _exp_weights(mu, scale, top, out) -> float:
    """``out = exp(scale mu - top)`` (unnormalized exponential-merit weights, Eq. 1); returns their sum."""
    total = 0.0
    for k in range(mu.shape[0]):
        e = math.exp(scale * mu[k] - top)
        out[k] = e
        total += e
    return total


@_jit()
def _softmax(contexts, theta, scale, mu, pi) -> None:
    """``mu = X theta`` and the exponential-merit policy ``pi = softmax(scale mu)`` (Eq. 1)."""
    n_actions, d = contexts.shape
    top = -np.inf
    for k in range(n_actions):
        acc = 0.0
        for i in range(d):
            acc += contexts[k, i] * theta[i]
        mu[k] = acc
        top = max(top, scale * acc)
    inv_total = 1.0 / _exp_weights(mu, scale, top, pi)
    for k in range(n_actions):
        pi[k] = pi[k] * inv_total


@_jit()
def project_rows(points: np.ndarray, centers: np.ndarray, grams: np.ndarray, radii: np.ndarray) -> np.ndarray:
    """Project each row of ``points`` onto its ellipsoid ``{||theta - c||_V <= r}`` (tests, checks).

    Parameters
    ----------
    points, centers : numpy.ndarray of shape (n, d)
        Points and centres.
    grams : numpy.ndarray of shape (n, d, d)
        Symmetric positive definite ``V``.
    radii : numpy.ndarray of shape (n,)
        Radii ``>= 0``.

    Returns
    -------
    numpy.ndarray
        The projections, shape ``(n, d)``.
    """
    n, d = points.shape
    out = np.empty((n, d))
    eigvals = np.empty(d)
    eigvecs = np.empty((d, d))
    work = np.empty((d, d))
    product = np.empty((d, d))
    z = np.empty(d)
    w = np.empty(d)
    for r in range(n):
        eigvecs[:] = np.eye(d)  # cold start
        largest = _eigh(grams[r], eigvals, eigvecs, work, product)
        for k in range(d):
            acc = 0.0
            for i in range(d):
                acc += eigvecs[i, k] * (points[r, i] - centers[r, i])
            z[k] = acc
        if not _project(z, eigvals, largest, radii[r], w, z):
            out[r] = points[r]  # inside: returned unchanged, as fairx._project does
            continue
        for i in range(d):
            acc = 0.0
            for k in range(d):
                acc += eigvecs[i, k] * z[k]
            out[r, i] = centers[r, i] + acc
    return out


# --------------------------------------------------------------------------------------------------
# one round of one row
# --------------------------------------------------------------------------------------------------
@_jit()
def _row_round(
    contexts, noise, uniform, mu_true, gram, gram_inverse, target, local_gram, local_target,
    scale, step_size, n_steps, noise_std, norm_bound, log_conf, theory, constant, clip, rho_min, extra,
    vec, mat, act,
):
    """Algorithm 1, lines 5-9, for one agent of one learner; returns the (fairness, reward) regret terms."""
    d = gram.shape[0]
    n_actions = contexts.shape[0]
    eigvals, center, theta, point, z, w, x = vec[0], vec[1], vec[2], vec[3], vec[4], vec[5], vec[6]
    eigvecs, work, product = mat[0], mat[1], mat[2]  # eigvecs: the previous round's (warm start)
    mu, pi, pi_star, base = act[0], act[1], act[2], act[3]
    rotated = act[4:]  # (d, K): rotated[j, k] = (Q^T x_k)_j
    # line 5: V = Q diag(lam) Q^T, theta_hat = V^{-1} b (RidgeState.theta), radius sqrt(beta_t)
    largest = _eigh(gram, eigvals, eigvecs, work, product)
    for i in range(d):
        acc = 0.0
        for j in range(d):
            acc += gram_inverse[i, j] * target[j]
        center[i] = acc
    if theory:
        log_det = 0.0
        for k in range(d):
            log_det += math.log(eigvals[k])
        log_ratio = max(log_det - d * math.log(rho_min), 0.0)
        radius = noise_std * math.sqrt(log_conf + log_ratio) + math.sqrt(rho_min) * norm_bound
        radius = radius + extra
    else:
        radius = constant
    # line 6: projected gradient ascent on J(theta) = sum_a pi_theta(a) theta . x(a) from theta_hat, in the
    # eigenbasis of V (theta = theta_hat + Q zeta, x~_a = Q^T x_a): the projection needs no change of basis
    for k in range(n_actions):
        acc = 0.0
        for i in range(d):
            acc += contexts[k, i] * center[i]
        base[k] = acc
        for j in range(d):
            acc = 0.0
            for i in range(d):
                acc += contexts[k, i] * eigvecs[i, j]
            rotated[j, k] = acc
    for j in range(d):
        point[j] = 0.0  # zeta
    for _ in range(n_steps):
        top = -np.inf
        for k in range(n_actions):
            acc = base[k]
            for j in range(d):
                acc += rotated[j, k] * point[j]
            mu[k] = acc
            top = max(top, scale * acc)
        inv_total = 1.0 / _exp_weights(mu, scale, top, pi)
        value = 0.0
        for k in range(n_actions):
            pi[k] = pi[k] * inv_total
            value += pi[k] * mu[k]
        for j in range(d):
            z[j] = 0.0
        for k in range(n_actions):
            coef = pi[k] * (1.0 + scale * (mu[k] - value))
            for j in range(d):
                z[j] += coef * rotated[j, k]
        for j in range(d):
            z[j] = point[j] + step_size * z[j]
        _project(z, eigvals, largest, radius, w, point)
    for i in range(d):
        acc = 0.0
        for j in range(d):
            acc += eigvecs[i, j] * point[j]
        theta[i] = center[i] + acc
    # line 7: the policy; line 8: a ~ pi with the round's shared uniform, as (cumsum(pi) < u).sum()
    _softmax(contexts, theta, scale, mu, pi)
    below = 0
    cumulative = 0.0
    for k in range(n_actions):
        cumulative += pi[k]
        if cumulative < uniform:
            below += 1
    action = min(below, n_actions - 1)
    # Definition 1: L1 distance to the optimal fair policy, and the reward regret against it
    top = -np.inf
    for k in range(n_actions):
        top = max(top, scale * mu_true[k])
    total = _exp_weights(mu_true, scale, top, pi_star)
    fair = 0.0
    regret = 0.0
    for k in range(n_actions):
        pi_star[k] = pi_star[k] / total
        fair += abs(pi[k] - pi_star[k])
        regret += (pi_star[k] - pi[k]) * mu_true[k]
    # line 9: the ridge update (RidgeState.update, Sherman-Morrison on V^{-1}) and S += x x^T, s += x y
    reward = mu_true[action] + noise
    shared = min(max(reward, -clip), clip)  # shared rewards are clipped to B (private learners)
    for i in range(d):
        x[i] = contexts[action, i]
    for i in range(d):
        for j in range(d):
            gram[i, j] += x[i] * x[j]
            local_gram[i, j] += x[i] * x[j]
        target[i] += reward * x[i]
        local_target[i] += shared * x[i]
    sherman_morrison(gram_inverse, x, z)
    return fair, regret


@_jit()
def run_rows(
    speculative: bool,
    first: int,
    stop: int,
    t0: int,
    rows: np.ndarray,
    contexts: np.ndarray,
    noise: np.ndarray,
    uniforms: np.ndarray,
    mu_true: np.ndarray,
    n_seeds: int,
    n_agents: int,
    gram: np.ndarray,
    gram_inverse: np.ndarray,
    target: np.ndarray,
    local_gram: np.ndarray,
    local_target: np.ndarray,
    scale: np.ndarray,
    step_size: np.ndarray,
    n_steps: int,
    noise_std: np.ndarray,
    norm_bound: np.ndarray,
    log_conf: np.ndarray,
    theory: np.ndarray,
    constant: np.ndarray,
    clip: np.ndarray,
    rho_min: np.ndarray,
    extra: np.ndarray,
    log_det_rows: np.ndarray,
    t_last: np.ndarray,
    log_det_last: np.ndarray,
    threshold: np.ndarray,
    fair: np.ndarray,
    regret: np.ndarray,
    vec: np.ndarray,
    mat: np.ndarray,
    act: np.ndarray,
    saved: np.ndarray,
    reached: np.ndarray,
    flags: np.ndarray,
) -> int:
    """Run block rounds ``first .. stop - 1`` (round ``t = t0 + j + 1``) for the rows ``rows``.

    Rows ``n = (learner * n_seeds + seed) * n_agents + agent`` read the block's streams
    ``contexts[j, seed, agent]`` (``(b, S, m, K, d)``), ``noise``, ``uniforms`` and ``mu_true``
    (``(b, S, m, K)``), update their ``V``, ``V^{-1}``, ``b``, ``S``, ``s`` in place and write the
    per-round terms to ``fair[n, j]`` and ``regret[n, j]``.

    Log-det rows (B1) must stop after the first round where the trigger of ``_Sync.after_round`` may
    fire for any of them, ``(t - t_last) (ln det V - ln det V_last) > D - margin`` (a superset of the
    rounds where it fires: Python decides exactly).  ``speculative=True`` runs only them, each from a
    saved copy of its state up to its own first such round ``j`` (``reached[n] = j + 1``,
    ``flags[n] = 1``; else ``reached[n] = stop``) and returns the smallest ``reached``: the span's
    ``end``.  Then ``speculative=False`` with ``stop = end`` runs every other row, and the log-det rows
    that went past ``end`` again from their copy (``flags[n] = 0``); it returns ``stop``.
    """
    d = gram.shape[1]
    end = stop
    for n in rows:
        if speculative:
            flags[n] = 0
            reached[n] = stop
            if not log_det_rows[n]:
                continue
            _save(n, gram, gram_inverse, target, local_gram, local_target, mat, saved, d, False)
        elif log_det_rows[n]:
            if reached[n] == stop:
                continue
            flags[n] = 0  # no trigger before the span's end
            _save(n, gram, gram_inverse, target, local_gram, local_target, mat, saved, d, True)
        seed = (n % (n_seeds * n_agents)) // n_agents
        agent = n % n_agents
        for j in range(first, stop):
            f, r = _row_round(
                contexts[j, seed, agent], noise[j, seed, agent], uniforms[j, seed, agent], mu_true[j, seed, agent],
                gram[n], gram_inverse[n], target[n], local_gram[n], local_target[n], scale[n], step_size[n],
                n_steps, noise_std[n], norm_bound[n], log_conf[n], theory[n], constant[n], clip[n], rho_min[n],
                extra[n], vec[n], mat[n], act[n],
            )
            fair[n, j] = f
            regret[n, j] = r
            if speculative:
                # B1 trigger of _Sync.after_round, with a margin for the rounding of ln det
                growth = (t0 + j + 1 - t_last[n]) * (_log_det(gram[n], mat[n, 1]) - log_det_last[n])
                if growth > threshold[n] - 1e-7 * (abs(threshold[n]) + abs(growth)):
                    reached[n] = j + 1
                    flags[n] = 1
                    break
        if speculative:
            end = min(end, reached[n])
    return end


@_jit()
def _save(n, gram, gram_inverse, target, local_gram, local_target, mat, saved, d, restore) -> None:
    """Copy row ``n``'s state (``V``, ``V^{-1}``, ``b``, ``S``, ``s``, eigenvectors) to ``saved[n]``, or back."""
    for i in range(d):
        for j in range(d):
            if restore:
                gram[n, i, j] = saved[n, 0, i, j]
                gram_inverse[n, i, j] = saved[n, 1, i, j]
                local_gram[n, i, j] = saved[n, 2, i, j]
                mat[n, 0, i, j] = saved[n, 3, i, j]
            else:
                saved[n, 0, i, j] = gram[n, i, j]
                saved[n, 1, i, j] = gram_inverse[n, i, j]
                saved[n, 2, i, j] = local_gram[n, i, j]
                saved[n, 3, i, j] = mat[n, 0, i, j]
        if restore:
            target[n, i] = saved[n, 4, 0, i]
            local_target[n, i] = saved[n, 5, 0, i]
        else:
            saved[n, 4, 0, i] = target[n, i]
            saved[n, 5, 0, i] = local_target[n, i]


# spans with less work than this (rows x rounds, about 5 us each) run in the calling thread alone
_PARALLEL_WORK = 500


def pool() -> ThreadPoolExecutor:
    """Worker threads for one simulation (``threads() - 1``: the calling thread is the other one).

    Use it as a context manager around one simulation: the threads end with it, so a process forked
    later (the experiment runner's pool) inherits no dead executor.  Python threads, not numba's
    ``parallel=True``: its OpenMP layer spins between parallel regions, which here alternate with the
    synchronizations in Python (16 s instead of 2.4 s for a span-per-round run on a busy 2-core
    machine), and aborts a process forked after it started.
    """
    return ThreadPoolExecutor(max_workers=max(1, threads() - 1), thread_name_prefix="dpfair-fairx")


def split(rows: np.ndarray, first: int, stop: int, parts: int) -> list[np.ndarray]:
    """``rows`` in ``parts`` strided subsets (each gets rows of every learner), or one if the span is short."""
    if parts <= 1 or (stop - first) * len(rows) < _PARALLEL_WORK:
        return [rows]
    return [rows[k::parts] for k in range(min(parts, len(rows)))]


def start(workers: ThreadPoolExecutor, first: int, stop: int, t0: int, rows: np.ndarray, args: tuple) -> Future:
    """:func:`run_rows` for ``rows`` (none of them log-det rows) in a worker thread; returns its future."""
    return workers.submit(run_rows, False, first, stop, t0, rows, *args)


def _map(
    workers: ThreadPoolExecutor, speculative: bool, first: int, stop: int, t0: int, parts: list[np.ndarray], args: tuple
) -> list[int]:
    """:func:`run_rows` on each part of the rows, the first in the calling thread, the others in workers."""
    futures = [workers.submit(run_rows, speculative, first, stop, t0, rows, *args) for rows in parts[1:]]
    results = [run_rows(speculative, first, stop, t0, parts[0], *args)]
    return results + [f.result() for f in futures]


def run(
    workers: ThreadPoolExecutor, first: int, stop: int, t0: int, parts: list[np.ndarray], log_det: bool, args: tuple
) -> int:
    """Run block rounds ``first .. stop - 1`` for the rows of ``parts``, one thread per part; return where the span ended.

    The kernels release the GIL, so the parts run in parallel.  With log-det rows among them
    (``log_det``), a speculative pass finds the earliest round where a trigger may fire (``end``) and
    the second pass runs every row to it; without, one pass runs every row to ``stop``.

    Parameters
    ----------
    workers : concurrent.futures.ThreadPoolExecutor
        The simulation's worker threads (:func:`pool`).
    first, stop : int
        The block rounds to run.
    t0 : int
        Rounds before the block (round ``t = t0 + j + 1``).
    parts : list of numpy.ndarray
        Row indices (int64), one array per thread (:func:`split`).
    log_det : bool
        Whether some of the rows are log-det rows.
    args : tuple
        The other arguments of :func:`run_rows`, in order (from ``contexts`` to ``flags``).

    Returns
    -------
    int
        ``end``: rounds ``first .. end - 1`` were run; ``flags`` marks the log-det rows whose trigger may
        fire at the end of round ``t0 + end``.
    """
    end = stop
    if log_det:
        end = min(_map(workers, True, first, stop, t0, parts, args))
    _map(workers, False, first, end, t0, parts, args)
    return end
