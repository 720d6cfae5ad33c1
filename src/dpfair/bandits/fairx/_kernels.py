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
row is ``g * (sum of the rounded increments 1..k + noise_units(k))``.  The kernels round each increment
with ``to_units``' expression (``rint(S / g)``, exact: ``g`` is a power of two), keep the int64 sums and add
the int64 noise that Python fetched ahead (``release_noise_units``, a block of releases per row): the
released values are bit for bit those of :meth:`~dpfair.bandits.fairx.privatizer.Privatizer.release`, and the
data meet no floating-point operation between the rounding and the release.
Only the exponential merit is compiled; a callable merit runs the numpy reference.

The kernels are cached on disk (``cache=True``) next to this file or, where the package is
read-only, in numba's user-wide cache directory (``NUMBA_CACHE_DIR``); where neither can be written
they are compiled in memory at the first call of each process.
"""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from dpfair.bandits._numba import jit as _jit
from dpfair.bandits._numba import sherman_morrison, threads

__all__ = ["pool", "project_rows", "run", "run_groups", "threads"]


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
    """Algorithm 1, lines 5-9, for one agent of one learner; returns the (fairness, reward) regret terms and the action."""
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
    return fair, regret, action



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
    for j in range(d):
        s = matrix[j, j]
        for k in range(j):
            s -= chol[j, k] * chol[j, k]
        if not s > 0.0:
            return False
        root = math.sqrt(s)
        chol[j, j] = root
        for i in range(j + 1, d):
            s = matrix[i, j]
            for k in range(j):
                s -= chol[i, k] * chol[j, k]
            chol[i, j] = s / root
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
    seed``).  Per round, every agent of the group plays (:func:`_row_round`: Algorithm 1, lines 5-9), then the
    protocol decides (``protocol[learner]``: 0 none, 1 the schedule ``schedule[learner, t]``, 2 the log-det
    trigger) and :func:`_sync_group` synchronizes the group.  Each group starts at ``progress[group]`` and
    runs to ``stop`` unless it needs Python (``status[group]``): ``NEED_NOISE`` (fetch the next noise
    block), ``NEED_DECISION`` (a log-det trigger too close to call: write ``decision[group]``) or an error; it
    then stops where it is and resumes there at the next call (``pending[group]``).  ``margin``: the
    relative band of :func:`_trigger` (``TRIGGER_MARGIN``).

    ``control = (synced, comms, progress, pending, decision, status)``; ``out = (fair, regret, actions)``
    ``(N, b)``; ``scratch = (vec, mat, act, work)``; the rest as in :func:`_row_round` and :func:`_sync_group`.
    """
    contexts, noise, uniforms, mu_true = stream
    gram, gram_inverse, target, local_gram, local_target = ridge
    scale, step_size, noise_std, norm_bound, log_conf, constant, clip = learning
    rho_min, extra = sync_rows[0], sync_rows[1]
    progress, pending, decision, status = control[2], control[3], control[4], control[5]
    fair, regret, actions = out
    vec, mat, act, work = scratch
    threshold = learner_real[0]
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
            for agent in range(n_agents):
                n = group * n_agents + agent
                f, r, action = _row_round(
                    contexts[j, seed, agent], noise[j, seed, agent], uniforms[j, seed, agent], mu_true[j, seed, agent],
                    gram[n], gram_inverse[n], target[n], local_gram[n], local_target[n], scale[n], step_size[n],
                    n_steps, noise_std[n], norm_bound[n], log_conf[n], theory[n], constant[n], clip[n], rho_min[n],
                    extra[n], vec[n], mat[n], act[n],
                )
                fair[n, j] = f
                regret[n, j] = r
                actions[n, j] = action
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
