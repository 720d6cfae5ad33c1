"""Compiled rounds and synchronizations of the federated FairX-LinUCB simulator (numba).

:func:`dpfair.bandits.simulate_federated` with ``engine="compiled"`` keeps the state of a batch of
learners as rows (learner x seed x agent) and hands whole blocks of rounds to :func:`run_groups`, one
``(learner, seed)`` group of agents at a time (the groups split between threads: the kernels release the
GIL).  Per round and row it does what the numpy reference (``_run_group`` of
:mod:`dpfair.bandits.fairx.simulator` with :mod:`dpfair.bandits.fairx.linucb`) does, up to floating-point rounding:

1. eigendecomposition of the (symmetric ``d x d``) ``V`` by cyclic Jacobi rotations, the centre
   ``theta_hat = V^{-1} b`` as :meth:`dpfair.bandits.RidgeState.theta` computes it and the confidence
   radius (Solanki et al., Algorithm 1, line 5);
2. projected gradient ascent for the optimistic ``theta_t`` (line 6) with the exact projection of
   :func:`dpfair.bandits.fairx.linucb._project` (the same Newton iteration on the secular equation, stopping
   rule and final rescaling);
3. the exponential-merit policy (line 7), the action drawn with the round's shared uniform (line 8),
   the per-round fairness and reward regret terms;
4. the rank-one ridge update of ``V``, ``b`` and ``V^{-1}`` (Sherman-Morrison, as
   :meth:`~dpfair.bandits.RidgeState.update`) and the local statistics ``S += x x^T``, ``s += x y``
   (line 9; shared rewards clipped for the private learners);

and after every agent of the group has played the round, the protocol (lines 10-18: the schedule, or the
log-det trigger by Cholesky with a band around the threshold where Python decides with
``np.linalg.slogdet``) and the synchronization (:func:`_sync_group`: lines 19-27, ``_AgentSync.release``,
``_ServerSync.aggregate`` and ``_AgentSync.receive`` written out).

Private releases follow the contract of :class:`~dpfair.bandits.fairx.privatizer.Privatizer`: release ``k`` of a
row is ``g * (sum of the rounded increments 1..k + noise_units(k))``.  The kernels round each increment with
``to_units``' expression (``rint(S / g)``, exact: ``g`` is a power of two), keep the int64 sums and add the int64
noise that Python fetched ahead (``release_noise_units``, a block of releases per row): the released values are
bit for bit those of :meth:`~dpfair.bandits.fairx.privatizer.Privatizer.release`, and the data meet no
floating-point operation between the rounding and the release.  Only the exponential merit is compiled.

The agents of a group play a round in lockstep (:func:`_group_round`): each does exactly what it does alone,
and the iterations of the eigendecomposition and the projections interleave, so their latencies overlap.
The kernels are cached on disk (``cache=True``) next to this file or, where the package is read-only, in
numba's user-wide cache directory (``NUMBA_CACHE_DIR``); else compiled in memory at each process's first call.
"""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from dpfair.bandits._numba import cholesky, sherman_morrison, threads
from dpfair.bandits._numba import jit as _jit

__all__ = ["pool", "project_rows", "run", "run_groups", "threads"]


# --------------------------------------------------------------------------------------------------
# linear algebra on one small symmetric matrix
# --------------------------------------------------------------------------------------------------
@_jit()
def _eigh_rows(grams, eigvals, eigvecs, work, product, largest, done) -> None:
    """Eigenvalues (unsorted) and eigenvectors (columns) of the symmetric ``grams[a]`` by cyclic Jacobi, rows in lockstep.

    ``eigvecs[a]`` holds a guess on entry (the previous round's eigenvectors: ``V`` changes by a
    rank-one term between rounds, which saves about a third of the sweeps; the identity for a cold
    start).  The guess is re-orthonormalized first (modified Gram-Schmidt, so rounding does not build
    up over the rounds), then ``work = Q^T V Q`` is diagonalized by the rotations of Golub & Van Loan
    (3rd ed., Algorithm 8.4.3, the stable ``t = sign(theta) / (|theta| + sqrt(1 + theta^2))``), skipping the
    pairs with ``a_pq^2 <= 1e-32 |a_pp a_qq|`` (below the rounding of ``V``) until a sweep rotates none;
    ``largest[a]`` is the largest eigenvalue.  Each row does exactly what it does alone (a row done after a
    sweep without rotation): interleaved, the rows' chains of divisions and square roots overlap.
    """
    n_rows, d = grams.shape[0], grams.shape[1]
    for a in range(n_rows):
        for j in range(d):
            for i in range(j):
                dot = 0.0
                for k in range(d):
                    dot += eigvecs[a, k, i] * eigvecs[a, k, j]
                for k in range(d):
                    eigvecs[a, k, j] -= dot * eigvecs[a, k, i]
            norm = 0.0
            for k in range(d):
                norm += eigvecs[a, k, j] * eigvecs[a, k, j]
            norm = math.sqrt(norm)
            for k in range(d):
                eigvecs[a, k, j] /= norm
        for i in range(d):  # product = V Q
            for j in range(d):
                acc = 0.0
                for k in range(d):
                    acc += grams[a, i, k] * eigvecs[a, k, j]
                product[a, i, j] = acc
        for i in range(d):  # work = Q^T (V Q), symmetric
            for j in range(i, d):
                acc = 0.0
                for k in range(d):
                    acc += eigvecs[a, k, i] * product[a, k, j]
                work[a, i, j] = acc
                work[a, j, i] = acc
        done[a] = False
    for _ in range(60):
        for a in range(n_rows):
            largest[a] = 0.0  # this sweep's rotations of row a (a count)
        for p in range(d - 1):
            for q in range(p + 1, d):
                for a in range(n_rows):  # indexed directly: no per-row views (reference counts) in the sweeps
                    if done[a]:
                        continue
                    apq = work[a, p, q]
                    if apq * apq <= 1e-32 * abs(work[a, p, p] * work[a, q, q]):
                        continue
                    largest[a] += 1.0
                    theta = (work[a, q, q] - work[a, p, p]) / (2.0 * apq)
                    t = 1.0 / (abs(theta) + math.sqrt(1.0 + theta * theta))
                    if theta < 0.0:
                        t = -t
                    c = 1.0 / math.sqrt(1.0 + t * t)
                    s = t * c
                    # work <- J^T work J: a_pp - t a_pq, a_qq + t a_pq, a_pq = 0, rows/columns p and q rotated
                    work[a, p, p] -= t * apq
                    work[a, q, q] += t * apq
                    work[a, p, q] = 0.0
                    work[a, q, p] = 0.0
                    for k in range(d):
                        if k != p and k != q:
                            x, y = work[a, k, p], work[a, k, q]
                            work[a, k, p] = c * x - s * y
                            work[a, k, q] = s * x + c * y
                            work[a, p, k] = work[a, k, p]
                            work[a, q, k] = work[a, k, q]
                    for k in range(d):  # eigvecs <- eigvecs J
                        x, y = eigvecs[a, k, p], eigvecs[a, k, q]
                        eigvecs[a, k, p] = c * x - s * y
                        eigvecs[a, k, q] = s * x + c * y
        left = False
        for a in range(n_rows):
            if largest[a] == 0.0:
                done[a] = True
            left = left or not done[a]
        if not left:
            break
    for a in range(n_rows):
        top = -np.inf
        for i in range(d):
            eigvals[a, i] = work[a, i, i]
            top = max(top, work[a, i, i])
        largest[a] = top


@_jit()
def _eigh(gram: np.ndarray, eigvals: np.ndarray, eigvecs: np.ndarray, work: np.ndarray, product: np.ndarray) -> float:
    """:func:`_eigh_rows` for one symmetric matrix (``eigvecs`` the guess on entry); returns the largest eigenvalue."""
    d = gram.shape[0]
    largest = np.empty(1)
    _eigh_rows(gram.reshape((1, d, d)), eigvals.reshape((1, d)), eigvecs.reshape((1, d, d)), work.reshape((1, d, d)),
               product.reshape((1, d, d)), largest, np.zeros(1, dtype=np.bool_))
    return largest[0]


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
def _project_rows(z, eigvals, largest, radius, w, out, multiplier, state) -> None:
    """``fairx._project`` in the eigenbasis of each row's ``V``: ``z[a] = Q^T (p - c)`` in, ``Q^T (P(p) - c)`` out.

    Inside (``sum lam z^2 <= r^2``) ``z[a]`` is returned unchanged, with ``r = 0`` the centre.  Outside,
    Newton's method on ``phi(mu) = g(mu)^{-1/2} - 1/r``, ``g(mu) = sum_k lam_k z_k^2 / (1 + mu lam_k)^2``,
    from the reference's start and with its stopping rule, then ``z / (1 + mu lam)`` rescaled by
    ``min(1, r / ||.||_V)``.  ``out`` may be ``z``.  The rows iterate in lockstep, each exactly as alone (the
    same numbers): their chains of divisions and square roots overlap.  ``multiplier`` and ``state`` (0 done,
    1 iterating, 2 converged) are scratch.
    """
    n_rows, d = z.shape
    for a in range(n_rows):
        r = radius[a]
        total = 0.0
        for k in range(d):
            w[a, k] = eigvals[a, k] * z[a, k] * z[a, k]
            total += w[a, k]
        state[a] = 0
        if not total > r * r:  # inside: unchanged
            for k in range(d):
                out[a, k] = z[a, k]
            continue
        if r <= 0.0:
            for k in range(d):
                out[a, k] = 0.0
            continue
        # start left of the root: g(mu) >= q / (1 + mu lam_max)^2
        multiplier[a] = max(math.sqrt(total) * (1.0 / r) - 1.0, 0.0) / largest[a]
        state[a] = 1
    for _ in range(100):
        left = False
        for a in range(n_rows):
            if state[a] != 1:
                continue
            mu = multiplier[a]
            g = 0.0
            slope = 0.0
            for k in range(d):
                inv = 1.0 / (1.0 + mu * eigvals[a, k])
                b = w[a, k] * inv * inv
                g += b
                slope += eigvals[a, k] * b * inv
            # Newton on phi with phi' = -g'/(2 g^{3/2}), g' = -2 sum lam a / (1 + mu lam):
            # (g^{-1/2} - 1/r) g^{3/2} / slope = g (1 - g^{1/2} / r) / slope
            step = g * (1.0 - math.sqrt(g) * (1.0 / radius[a])) / slope
            if not math.isfinite(step):
                step = 0.0
            mu = max(mu - step, 0.0)
            multiplier[a] = mu
            if abs(step) <= 1e-13 * (1.0 + mu):
                state[a] = 2
            else:
                left = True
        if not left:
            break
    for a in range(n_rows):  # converged, or the reference's cap on the iterations: the last multiplier
        if state[a] != 0:
            mu = multiplier[a]
            norm2 = 0.0
            for k in range(d):
                wk = z[a, k] / (1.0 + mu * eigvals[a, k])
                w[a, k] = wk
                norm2 += eigvals[a, k] * wk * wk
            shrink = min(1.0, radius[a] / max(math.sqrt(norm2), 1e-300))
            for k in range(d):
                out[a, k] = w[a, k] * shrink


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
    eigvals = np.empty((n, d))
    eigvecs = np.zeros((n, d, d))
    for k in range(d):
        eigvecs[:, k, k] = 1.0  # cold start
    largest = np.empty(n)
    _eigh_rows(grams, eigvals, eigvecs, np.empty((n, d, d)), np.empty((n, d, d)), largest, np.zeros(n, dtype=np.bool_))
    z = np.empty((n, d))
    inside = np.zeros(n, dtype=np.bool_)
    for r in range(n):
        total = 0.0
        for k in range(d):
            acc = 0.0
            for i in range(d):
                acc += eigvecs[r, i, k] * (points[r, i] - centers[r, i])
            z[r, k] = acc
            total += eigvals[r, k] * acc * acc
        inside[r] = not total > radii[r] * radii[r]
    _project_rows(z, eigvals, largest, radii, np.empty((n, d)), z, np.empty(n), np.zeros(n, dtype=np.int64))
    for r in range(n):
        if inside[r]:  # inside: returned unchanged, as fairx._project does
            out[r] = points[r]
            continue
        for i in range(d):
            acc = 0.0
            for k in range(d):
                acc += eigvecs[r, i, k] * z[r, k]
            out[r, i] = centers[r, i] + acc
    return out


# --------------------------------------------------------------------------------------------------
# one round of the agents of a group
# --------------------------------------------------------------------------------------------------
@_jit()
def _prepare_rows(j, seed, first, n_agents, contexts, gram_inverse, target, learning, theory, rho_min, extra, vec, mat,
                  act, radius) -> None:
    """Line 5 after the eigendecomposition, each agent: ``theta_hat = V^{-1} b``, the radius, the rotated contexts.

    Indexed directly, as the ascent: no per-agent views.  Line 6 then runs in the eigenbasis of ``V``
    (``theta = theta_hat + Q zeta``, ``x~_a = Q^T x_a``): the projection needs no change of basis.
    """
    noise_std, norm_bound, log_conf, constant = learning[2], learning[3], learning[4], learning[5]
    d = gram_inverse.shape[1]
    for a in range(n_agents):
        n = first + a
        for i in range(d):  # theta_hat = V^{-1} b (RidgeState.theta)
            acc = 0.0
            for k in range(d):
                acc += gram_inverse[n, i, k] * target[n, k]
            vec[n, 1, i] = acc
        if theory[n]:
            log_det = 0.0
            for k in range(d):
                log_det += math.log(vec[n, 0, k])
            log_ratio = max(log_det - d * math.log(rho_min[n]), 0.0)
            r = noise_std[n] * math.sqrt(log_conf[n] + log_ratio) + math.sqrt(rho_min[n]) * norm_bound[n]
            radius[a] = r + extra[n]
        else:
            radius[a] = constant[n]
        for k in range(contexts.shape[3]):
            acc = 0.0
            for i in range(d):
                acc += contexts[j, seed, a, k, i] * vec[n, 1, i]
            act[n, 3, k] = acc  # base: x_a . theta_hat
            for jj in range(d):
                acc = 0.0
                for i in range(d):
                    acc += contexts[j, seed, a, k, i] * mat[n, 0, i, jj]
                act[n, 4 + jj, k] = acc  # rotated[jj, k] = (Q^T x_k)_jj
        for jj in range(d):
            vec[n, 3, jj] = 0.0  # zeta


@_jit()
def _ascent_steps(first, n_agents, scale, step_size, vec, act) -> None:
    """One gradient step of line 6 for each agent: from ``point`` (zeta, ``vec[n, 3]``) into ``z`` (``vec[n, 4]``).

    Indexed directly: no per-agent views (each view of a numba array costs reference counts).
    """
    d = vec.shape[2]
    n_actions = act.shape[2]
    for n in range(first, first + n_agents):
        sc = scale[n]
        top = -np.inf
        for k in range(n_actions):
            acc = act[n, 3, k]  # base: x_a . theta_hat
            for j in range(d):
                acc += act[n, 4 + j, k] * vec[n, 3, j]  # rotated[j, k] zeta_j
            act[n, 0, k] = acc  # mu
            top = max(top, sc * acc)
        total = 0.0
        for k in range(n_actions):  # the exponential-merit weights exp(scale mu - top) (Eq. 1)
            e = math.exp(sc * act[n, 0, k] - top)
            act[n, 1, k] = e
            total += e
        inv_total = 1.0 / total
        value = 0.0
        for k in range(n_actions):
            act[n, 1, k] = act[n, 1, k] * inv_total  # pi
            value += act[n, 1, k] * act[n, 0, k]
        for k in range(n_actions):  # the gradient's coefficients (act[n, 2] is free until the policy)
            act[n, 2, k] = act[n, 1, k] * (1.0 + sc * (act[n, 0, k] - value))
        for j in range(d):  # sum_k coef_k rotated[j, k], added in the order of k
            acc = 0.0
            for k in range(n_actions):
                acc += act[n, 2, k] * act[n, 4 + j, k]
            vec[n, 4, j] = vec[n, 3, j] + step_size[n] * acc


@_jit()
def _finish_rows(j, seed, first, n_agents, stream, ridge, scale, clip, vec, mat, act, out) -> None:
    """Lines 7-9 for each agent: the policy, the action, the regret terms and the ridge update (indexed directly)."""
    contexts, noise, uniforms, mu_true = stream
    gram, gram_inverse, target, local_gram, local_target = ridge
    d, n_actions = gram.shape[1], contexts.shape[3]
    for a in range(n_agents):
        n, sc = first + a, scale[first + a]
        for i in range(d):  # theta = theta_hat + Q zeta
            acc = 0.0
            for k in range(d):
                acc += mat[n, 0, i, k] * vec[n, 3, k]
            vec[n, 2, i] = vec[n, 1, i] + acc
        # line 7: the policy softmax(scale X theta); line 8: a ~ pi with the round's shared uniform, as
        # (cumsum(pi) < u).sum()
        top = -np.inf
        for k in range(n_actions):
            acc = 0.0
            for i in range(d):
                acc += contexts[j, seed, a, k, i] * vec[n, 2, i]
            act[n, 0, k] = acc
            top = max(top, sc * acc)
        total = 0.0
        for k in range(n_actions):
            e = math.exp(sc * act[n, 0, k] - top)
            act[n, 1, k] = e
            total += e
        inv_total = 1.0 / total
        below = 0
        cumulative = 0.0
        for k in range(n_actions):
            act[n, 1, k] = act[n, 1, k] * inv_total
            cumulative += act[n, 1, k]
            if cumulative < uniforms[j, seed, a]:
                below += 1
        action = min(below, n_actions - 1)
        # Definition 1: L1 distance to the optimal fair policy, and the reward regret against it
        top = -np.inf
        for k in range(n_actions):
            top = max(top, sc * mu_true[j, seed, a, k])
        total = 0.0
        for k in range(n_actions):
            e = math.exp(sc * mu_true[j, seed, a, k] - top)
            act[n, 2, k] = e
            total += e
        fair = 0.0
        regret = 0.0
        for k in range(n_actions):
            act[n, 2, k] = act[n, 2, k] / total
            fair += abs(act[n, 1, k] - act[n, 2, k])
            regret += (act[n, 2, k] - act[n, 1, k]) * mu_true[j, seed, a, k]
        out[0][n, j] = fair
        out[1][n, j] = regret
        out[2][n, j] = action
        # line 9: the ridge update (RidgeState.update, Sherman-Morrison on V^{-1}) and S += x x^T, s += x y
        reward = mu_true[j, seed, a, action] + noise[j, seed, a]
        shared = min(max(reward, -clip[n]), clip[n])  # shared rewards are clipped to B (private learners)
        for i in range(d):
            vec[n, 6, i] = contexts[j, seed, a, action, i]
        for i in range(d):
            for k in range(d):
                gram[n, i, k] += vec[n, 6, i] * vec[n, 6, k]
                local_gram[n, i, k] += vec[n, 6, i] * vec[n, 6, k]
            target[n, i] += reward * vec[n, 6, i]
            local_target[n, i] += shared * vec[n, 6, i]
        sherman_morrison(gram_inverse[n], vec[n, 6], vec[n, 4])


@_jit()
def _group_round(j, seed, first, n_agents, n_steps, stream, ridge, learning, theory, rho_min, extra, scratch, lanes,
                 state, done, out) -> None:
    """Algorithm 1, lines 5-9, for the agents ``first .. first + n_agents - 1`` of one group at block round ``j``.

    Each agent does what it would do alone (the same operations on its own rows, so the same numbers);
    the two iterations of a round -- the Jacobi sweeps of the eigendecomposition and the Newton steps of each
    projection -- run the agents in lockstep (:func:`_eigh_rows`, :func:`_project_rows`).  ``lanes`` is
    ``(3, n_agents)`` scratch (largest eigenvalue, radius, projection multiplier).  Bit for bit the results of
    one agent at a time.
    """
    contexts, (gram, gram_inverse, target) = stream[0], ridge[:3]
    scale, step_size, clip = learning[0], learning[1], learning[6]
    vec, mat, act = scratch[0], scratch[1], scratch[2]
    last = first + n_agents
    largest, radius, multiplier = lanes[0], lanes[1], lanes[2]
    # line 5: V = Q diag(lam) Q^T from the previous round's Q, every agent in lockstep
    _eigh_rows(gram[first:last], vec[first:last, 0], mat[first:last, 0], mat[first:last, 1], mat[first:last, 2],
               largest, done)
    _prepare_rows(j, seed, first, n_agents, contexts, gram_inverse, target, learning, theory, rho_min, extra, vec, mat,
                  act, radius)
    # line 6: projected gradient ascent on J(theta) = sum_a pi_theta(a) theta . x(a) from theta_hat
    for _ in range(n_steps):
        _ascent_steps(first, n_agents, scale, step_size, vec, act)
        _project_rows(vec[first:last, 4], vec[first:last, 0], largest, radius, vec[first:last, 5], vec[first:last, 3],
                      multiplier, state)
    _finish_rows(j, seed, first, n_agents, stream, ridge, scale, clip, vec, mat, act, out)


# --------------------------------------------------------------------------------------------------
# synchronizations (Algorithm 1, lines 10-27) inside the kernels
# --------------------------------------------------------------------------------------------------
# what run_groups reports per group (status) when it stops before the end of the block
DONE, NEED_NOISE, NEED_DECISION, NOT_POSITIVE_DEFINITE, BEYOND_RANGE, BEYOND_CAPACITY = 0, 1, 2, 3, 4, 5
# a group's synchronization at the end of the last round it ran (pending)
NO_SYNC, SYNC_DUE, UNDECIDED = 0, 1, 2
_MAX_STEPS = 2.0**62  # the PRIVATIZER's running sums are int64 numbers of grid steps
# relative band around the log-det threshold where Python decides (np.linalg.slogdet): read by the caller and
# passed to run_groups (a test widens it to send every decision to Python)
TRIGGER_MARGIN = 1e-7


@_jit()
def _cholesky_inverse(matrix, chol, chol_inverse, inverse) -> bool:
    """``chol = L`` (lower Cholesky factor of the symmetric ``matrix``) and ``inverse = L^{-T} L^{-1} = matrix^{-1}``.

    ``_AgentSync.receive``'s arithmetic (``np.linalg.cholesky``, ``inv(L)``, ``inv(L)^T inv(L)``) written out,
    ``L^{-1}`` by forward substitution into ``chol_inverse``.  Returns ``False`` where ``matrix`` is not positive
    definite (``inverse`` is then not written).
    """
    d = matrix.shape[0]
    if not cholesky(matrix, chol):
        return False
    for j in range(d):
        for i in range(j):
            chol_inverse[i, j] = 0.0
        chol_inverse[j, j] = 1.0 / chol[j, j]
        for i in range(j + 1, d):
            s = 0.0
            for k in range(j, i):
                s -= chol[i, k] * chol_inverse[k, j]
            chol_inverse[i, j] = s / chol[i, i]
    for i in range(d):
        for j in range(i, d):
            acc = 0.0
            for k in range(j, d):  # L^{-1} is lower triangular: rows k >= max(i, j) = j
                acc += chol_inverse[k, i] * chol_inverse[k, j]
            inverse[i, j] = acc
            inverse[j, i] = acc
    return True


@_jit()
def _sync_group(
    group, t, learner, n_agents, lam, ridge, norm_bound, sync_rows, gram_last, protocol, private, n_releases,
    learner_real, private_rows, noise_row, control, mat, work,
) -> int:
    """Lines 19-27 for the agents of one ``(learner, seed)`` group at the end of round ``t``; returns a status.

    *Release* (``_AgentSync.release``): each agent adds its increment ``S^i, s^i`` to its running sums and
    releases ``sums + lambda I`` -- exact sums for Fed-FairX-LinUCB; for Priv-FairX-LinUCB the increment is
    rounded to the noise grid (``rint(S / g)``, the expression of ``Privatizer.release``) and added to the int64
    sums, and the release is ``g (sums + noise)`` with the noise of this release number fetched beforehand
    (``noise_*[noise_row[n], slot]``; ``NEED_NOISE`` when it is not there, before anything changes).
    *Aggregate* (``_ServerSync.aggregate``): ``U = sum_j U_hat^j``, ``u = sum_j u_hat^j`` in agent order.
    *Receive* (``_AgentSync.receive``): ``V^i = sym(U (+ c I))``, ``V^{-1}`` through its Cholesky factor,
    ``b^i = u``, ``S^i = 0``; the first synchronization sets ``rho_min = m lambda`` and (private) the radius'
    ``extra``; ``t_last = t``, and for log-det the new ``ln det V`` and a copy of ``V`` (for Python's exact
    decisions).
    """
    gram, gram_inverse, target, local_gram, local_target = ridge
    rho_min, extra, t_last, log_det_last = sync_rows
    shift, rho_max_extra, target_noise_bound, granularity = learner_real[1:]
    own_gram, own_target, units_gram, units_target, count, noise_gram, noise_target, noise_first, noise_len = private_rows
    synced, comms = control[0], control[1]
    d = gram.shape[1]
    base = group * n_agents
    shared, chol, chol_inverse, inverse = work[group, 0], work[group, 1], work[group, 2], work[group, 3]
    shared_target = work[group, 4, 0]
    is_private = private[learner]
    g = granularity[learner]
    p = 0
    slot = 0
    if is_private:  # every check before any change (Privatizer.release checks the whole batch first)
        for a in range(n_agents):
            n = base + a
            if count[n] + 1 > n_releases[learner]:
                return BEYOND_CAPACITY
            slot = count[n] + 1 - noise_first[noise_row[n]]
            if slot < 0 or slot >= noise_len[noise_row[n]]:
                return NEED_NOISE
            for i in range(d):
                if abs(float(units_target[n, i]) + np.rint(local_target[n, i] / g)) >= _MAX_STEPS:
                    return BEYOND_RANGE
                for j in range(d):
                    if abs(float(units_gram[n, i, j]) + np.rint(local_gram[n, i, j] / g)) >= _MAX_STEPS:
                        return BEYOND_RANGE
    # lines 19-20 (release) and 22 (aggregate)
    for a in range(n_agents):
        n = base + a
        if is_private:  # Algorithm 2, lines 10-15: rounded increment into the running sum, sum + noise released
            count[n] += 1
            p = noise_row[n]
            slot = count[n] - noise_first[p]
        for i in range(d):
            for j in range(d):
                if is_private:
                    units_gram[n, i, j] += np.int64(np.rint(local_gram[n, i, j] / g))
                    value = float(units_gram[n, i, j] + noise_gram[p, slot, i, j]) * g
                else:
                    own_gram[n, i, j] += local_gram[n, i, j]
                    value = own_gram[n, i, j]
                value = value + lam if i == j else value + 0.0  # U_hat^j = lambda I + ...
                shared[i, j] = value if a == 0 else shared[i, j] + value
            if is_private:
                units_target[n, i] += np.int64(np.rint(local_target[n, i] / g))
                value = float(units_target[n, i] + noise_target[p, slot, i]) * g
            else:
                own_target[n, i] += local_target[n, i]
                value = own_target[n, i]
            shared_target[i] = value if a == 0 else shared_target[i] + value
    # lines 22 and 27 (receive): V^i = U (+ c I, Lemma 4's shift), symmetrized, b^i = u, S^i = 0
    if n_agents > 1 or is_private:  # one agent with exact statistics: U is V already
        c = shift[learner] if is_private else 0.0
        for i in range(d):
            for j in range(d):
                chol[i, j] = shared[i, j] + (c if i == j else 0.0)
        for i in range(d):
            for j in range(i, d):
                value = 0.5 * (chol[i, j] + chol[j, i])
                shared[i, j] = value
                shared[j, i] = value
        if not _cholesky_inverse(shared, chol, chol_inverse, inverse):
            return NOT_POSITIVE_DEFINITE
        for a in range(n_agents):
            n = base + a
            for i in range(d):
                for j in range(d):
                    gram[n, i, j] = shared[i, j]
                    gram_inverse[n, i, j] = inverse[i, j]
                target[n, i] = shared_target[i]
    first = synced[group] == 0
    for a in range(n_agents):
        n = base + a
        for i in range(d):
            for j in range(d):
                local_gram[n, i, j] = 0.0
            local_target[n, i] = 0.0
        if first:
            rho = n_agents * lam
            rho_min[n] = rho
            if is_private:  # (sqrt(rho_max) - sqrt(rho_min)) S + z (module docstring of dpfair.bandits.fairx.simulator)
                rho_max = rho + rho_max_extra[learner]
                z = target_noise_bound[learner] / math.sqrt(rho)
                extra[n] = (math.sqrt(rho_max) - math.sqrt(rho)) * norm_bound[n] + z
        t_last[n] = t
        if protocol[learner] == 2:
            log_det_last[n] = _log_det(gram[n], mat[n, 1])
            for i in range(d):
                for j in range(d):
                    gram_last[n, i, j] = gram[n, i, j]
    synced[group] = 1
    comms[group] += 1
    return DONE


@_jit()
def _trigger(group, t, learner, n_agents, gram, sync_rows, threshold, margin, mat) -> int:
    """B1's trigger of ``_AgentSync.trigger`` for one group: ``SYNC_DUE`` if some agent's fires, else ``NO_SYNC``.

    ``ln det`` by Cholesky differs from ``np.linalg.slogdet``'s by rounding: within a relative band
    ``margin`` of the threshold (and no agent clearly above it) the answer is ``UNDECIDED`` and Python
    decides with the reference's arithmetic.
    """
    t_last, log_det_last = sync_rows[2], sync_rows[3]
    limit = threshold[learner]
    verdict = NO_SYNC
    for a in range(n_agents):
        n = group * n_agents + a
        growth = (t - t_last[n]) * (_log_det(gram[n], mat[n, 1]) - log_det_last[n])
        band = margin * (abs(limit) + abs(growth))
        if growth > limit + band:
            return SYNC_DUE
        if growth > limit - band:
            verdict = UNDECIDED
    return verdict


@_jit()
def run_groups(groups, stop, t0, n_seeds, n_agents, n_steps, lam, margin, stream, ridge, learning, theory, sync_rows,
               gram_last, protocol, schedule, private, n_releases, learner_real, private_rows, noise_row, control, out,
               scratch) -> None:
    """Run block rounds ``progress[group] .. stop - 1`` (round ``t = t0 + j + 1``) for every agent of the ``groups``,
    with their synchronizations.

    A group is one ``(learner, seed)``: rows ``n = group * n_agents + agent`` (``group = learner * n_seeds +
    seed``).  Per round, every agent of the group plays (:func:`_group_round`: Algorithm 1, lines 5-9), then the
    protocol decides (``protocol[learner]``: 0 none, 1 the schedule ``schedule[learner, t]``, 2 the log-det
    trigger) and :func:`_sync_group` synchronizes the group.  Each group starts at ``progress[group]`` and
    runs to ``stop`` unless it needs Python (``status[group]``): ``NEED_NOISE`` (fetch the next noise
    block), ``NEED_DECISION`` (a log-det trigger too close to call: write ``decision[group]``) or an error; it
    then stops where it is and resumes there at the next call (``pending[group]``).  ``margin``: the
    relative band of :func:`_trigger` (``TRIGGER_MARGIN``).

    ``control = (synced, comms, progress, pending, decision, status)``; ``out = (fair, regret, actions)``
    ``(N, b)``; ``scratch = (vec, mat, act, work)``; the rest as in :func:`_group_round` and :func:`_sync_group`.
    """
    gram, norm_bound = ridge[0], learning[3]
    rho_min, extra = sync_rows[0], sync_rows[1]
    progress, pending, decision, status = control[2], control[3], control[4], control[5]
    mat, work = scratch[1], scratch[3]
    threshold = learner_real[0]
    lanes, state, done = np.empty((3, n_agents)), np.zeros(n_agents, np.int64), np.zeros(n_agents, np.bool_)
    for group in groups:
        learner = group // n_seeds
        seed = group % n_seeds
        j = progress[group]
        status[group] = DONE
        while True:
            if pending[group] == UNDECIDED:  # Python's decision
                pending[group] = SYNC_DUE if decision[group] else NO_SYNC
            if pending[group] == SYNC_DUE:  # lines 10-27 at the end of round t0 + j
                code = _sync_group(
                    group, t0 + j, learner, n_agents, lam, ridge, norm_bound, sync_rows, gram_last, protocol, private,
                    n_releases, learner_real, private_rows, noise_row, control, mat, work,
                )
                if code != DONE:
                    status[group] = code
                    break
                pending[group] = NO_SYNC
            if j >= stop:
                break
            _group_round(j, seed, group * n_agents, n_agents, n_steps, stream, ridge, learning, theory, rho_min, extra,
                         scratch, lanes, state, done, out)
            j += 1
            if protocol[learner] == 1:
                pending[group] = SYNC_DUE if schedule[learner, t0 + j] else NO_SYNC
            elif protocol[learner] == 2:
                pending[group] = _trigger(group, t0 + j, learner, n_agents, gram, sync_rows, threshold, margin, mat)
                if pending[group] == UNDECIDED:
                    status[group] = NEED_DECISION
                    break
        progress[group] = j


# agent-rounds below which a call runs in the calling thread alone (about 5 us each)
_PARALLEL_WORK = 500


def pool() -> ThreadPoolExecutor:
    """Worker threads for one simulation (``threads() - 1``: the calling thread is the other one).

    Use it as a context manager around one simulation: the threads end with it, so a process forked
    later (the experiment runner's pool) inherits no dead executor.  Python threads, not numba's
    ``parallel=True``: its OpenMP layer spins between parallel regions (the Python calls between blocks), and
    aborts a process forked after it started.

    Returns
    -------
    concurrent.futures.ThreadPoolExecutor
        The executor.
    """
    return ThreadPoolExecutor(max_workers=max(1, threads() - 1), thread_name_prefix="dpfair-fairx")


def run(workers: ThreadPoolExecutor, groups: np.ndarray, first: int, stop: int, t0: int, work: int, args: tuple) -> None:
    """:func:`run_groups` for ``groups``, split between the calling thread and ``workers`` (the kernel releases the GIL).

    Parameters
    ----------
    workers : concurrent.futures.ThreadPoolExecutor
        The simulation's worker threads (:func:`pool`).
    groups : numpy.ndarray
        Group indices (int64) to run.
    first, stop : int
        The block rounds: each group runs from its ``progress`` (at least ``first``) to ``stop``.
    t0 : int
        Rounds before the block.
    work : int
        Agents per group (the work of one group-round, to decide whether threads pay).
    args : tuple
        The arguments of :func:`run_groups` after ``t0`` (from ``n_seeds`` to ``scratch``).
    """
    parts = max(1, min(threads(), len(groups)))
    if parts == 1 or (stop - first) * len(groups) * work < _PARALLEL_WORK:
        run_groups(groups, stop, t0, *args)
        return
    # contiguous parts: one compiled specialization of run_groups
    split = [np.ascontiguousarray(groups[k::parts]) for k in range(parts)]
    futures = [workers.submit(run_groups, part, stop, t0, *args) for part in split[1:]]
    run_groups(split[0], stop, t0, *args)
    for future in futures:
        future.result()
