"""One round of the agents of a group as SIMD lanes: the compiled FairX-LinUCB round (numba).

:func:`round_lanes` runs Algorithm 1, lines 5-9 (Solanki et al.), for the ``m`` agents of one ``(learner,
seed)`` group of :func:`dpfair.bandits.fairx._kernels.run_groups`.  Every array of a round is laid out with the
agent last (structure of arrays: ``q[i, j, a]`` is entry ``(i, j)`` of agent ``a``'s eigenvectors), and every
loop over the agents is innermost and free of branches, so that the compiler runs the agents in the vector
lanes of the CPU (4 or 8 doubles at a time).  Each lane does exactly the floating-point operations the agent
does alone, in the same order (no fused multiply-add: numba compiles without fast-math), so the results do not
depend on ``m`` or on the vector width:

* where an iteration is done for one agent and not for another (a Jacobi rotation that a pair does not need,
  a Newton step after convergence) the lane computes it and keeps its old value by a select;
* the Jacobi sweeps run until a sweep rotates no pair of any agent; an agent whose sweep rotated nothing
  rotates nothing in the next one (its matrix did not change), so the extra sweeps change nothing;
* the Newton iterations of the projections run until every agent has converged (each agent's stopping rule).

The steps, per agent (the numpy reference: ``_run_group`` of :mod:`dpfair.bandits.fairx.simulator` with
:mod:`dpfair.bandits.fairx.linucb`):

1. :func:`_eigh_lanes`: eigendecomposition of ``V`` by cyclic Jacobi from the previous round's eigenvectors
   (once per group in the round after a synchronization, when every agent of the group has the same ``V``);
2. :func:`_prepare_lanes`: ``theta_hat = V^{-1} b``, the confidence radius (line 5), the contexts in the
   eigenbasis;
3. ``n_steps`` times :func:`_ascent_lanes` and :func:`_project_lanes`: projected gradient ascent for the
   optimistic ``theta`` (line 6) in the eigenbasis, with the exact projection onto the ellipsoid;
4. :func:`_finish_lanes`: the exponential-merit policy (line 7), the action (line 8), the regret terms and
   the ridge update with the local statistics (line 9).
"""

from __future__ import annotations

import math

import numpy as np

from dpfair.bandits._numba import jit as _jit
from dpfair.bandits._numba import sherman_morrison

__all__: list[str] = []

_JACOBI_SKIP = 1e-32  # a pair is not rotated when a_pq^2 <= 1e-32 |a_pp a_qq| (below the rounding of V)

# exp(x) for the merit weights (Eq. 1), in arithmetic the compiler can run in vector lanes (libm's exp is a call
# per element): x = k ln 2 + r with |r| <= ln(2) / 2 (Cody & Waite's two-part ln 2 of fdlibm, k ln2_hi exact),
# exp(r) by its Taylor polynomial of degree 13 (truncation below 4.3e-18 relative), times 2^k as 2^h 2^(k-h),
# h = floor(k / 2), both normal numbers from one table: the first product is exact, the second rounds once (also
# into the subnormal range, and with no table entry beyond the largest double at k = 1024).
_LOG2_E = 1.4426950408889634
_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10
_EXP_MIN, _EXP_MAX = -745.2, 709.782712893384  # exp(x) is 0 below (under the least subnormal); inf above
_TAYLOR = tuple(1.0 / math.factorial(n) for n in range(14))
_POW2 = np.array([math.ldexp(1.0, h) for h in range(-538, 513)])  # 2^h at h + 538


@_jit(inline="always")
def _exp(x: float) -> float:
    """``exp(x)`` within an ulp of the correctly rounded value (tested; subnormal results within one unit of
    ``2^-1074``), 0 below ``-745.2``, ``inf`` above ``ln(DBL_MAX)``, NaN for NaN."""
    y = min(max(x, _EXP_MIN), _EXP_MAX)
    y = y if y == y else 0.0  # NaN: a valid table index below, NaN returned
    k = np.rint(y * _LOG2_E)
    r = (y - k * _LN2_HI) - k * _LN2_LO
    p = _TAYLOR[13]
    for n in range(12, -1, -1):  # Horner (a constant trip count: unrolled by the compiler)
        p = p * r + _TAYLOR[n]
    power = int(k)
    half = power >> 1  # floor(k / 2)
    value = (p * _POW2[half + 538]) * _POW2[power - half + 538]
    return (value if x >= _EXP_MIN else 0.0) if x <= _EXP_MAX else (np.inf if x > _EXP_MAX else np.nan)


@_jit(inline="always")
def _column_dot(lanes, q, i, j, out) -> None:
    """``out[a] = sum_k q[k, i, a] q[k, j, a]``, added in the order of ``k``."""
    for a in range(lanes):
        out[a] = 0.0
    for k in range(q.shape[0]):
        for a in range(lanes):
            out[a] += q[k, i, a] * q[k, j, a]


@_jit()
def _eigh_lanes(lanes, gram, q, work, product, eigvals, largest, params) -> None:
    """Eigenvalues (unsorted) and eigenvectors (columns) of each lane's symmetric ``gram[:, :, a]`` by cyclic Jacobi.

    ``q[:, :, a]`` holds a guess on entry (the previous round's eigenvectors: ``V`` changes by a rank-one term
    between rounds; the identity for a cold start) and the eigenvectors on return.  The guess is
    re-orthonormalized first (modified Gram-Schmidt, so rounding does not build up over the rounds), then
    ``work = Q^T V Q`` is diagonalized by the rotations of Golub & Van Loan (3rd ed., Algorithm 8.4.3, the
    stable ``t = sign(theta) / (|theta| + sqrt(1 + theta^2))``), skipping the pairs with
    ``a_pq^2 <= 1e-32 |a_pp a_qq|``, until a sweep rotates no pair of any lane (at most 60 sweeps);
    ``largest[a]`` is the largest eigenvalue.  ``product`` ``(d, d, lanes)`` and ``params`` ``(3, lanes)`` are
    scratch.
    """
    d = gram.shape[0]
    dot, t_lane, c_lane, s_lane = params[0], params[0], params[1], params[2]
    for j in range(d):  # modified Gram-Schmidt on the columns of the guess
        for i in range(j):
            _column_dot(lanes, q, i, j, dot)
            for k in range(d):
                for a in range(lanes):
                    q[k, j, a] -= dot[a] * q[k, i, a]
        _column_dot(lanes, q, j, j, dot)
        for a in range(lanes):
            dot[a] = math.sqrt(dot[a])
        for k in range(d):
            for a in range(lanes):
                q[k, j, a] /= dot[a]
    for i in range(d):  # product = V Q
        for j in range(d):
            for a in range(lanes):
                product[i, j, a] = 0.0
            for k in range(d):
                for a in range(lanes):
                    product[i, j, a] += gram[i, k, a] * q[k, j, a]
    for i in range(d):  # work = Q^T (V Q), symmetric
        for j in range(i, d):
            for a in range(lanes):
                work[i, j, a] = 0.0
            for k in range(d):
                for a in range(lanes):
                    work[i, j, a] += q[k, i, a] * product[k, j, a]
            for a in range(lanes):
                work[j, i, a] = work[i, j, a]
    for _ in range(60):
        rotations = 0
        for p in range(d - 1):
            for r in range(p + 1, d):
                needed = 0
                for a in range(lanes):
                    apq = work[p, r, a]
                    needed += 1 if apq * apq > _JACOBI_SKIP * abs(work[p, p, a] * work[r, r, a]) else 0
                if needed == 0:  # no lane rotates this pair: nothing changes (the last sweep, mostly)
                    continue
                for a in range(lanes):
                    apq, app, aqq = work[p, r, a], work[p, p, a], work[r, r, a]
                    rotate = apq * apq > _JACOBI_SKIP * abs(app * aqq)
                    theta = (aqq - app) / (2.0 * apq)
                    t = 1.0 / (abs(theta) + math.sqrt(1.0 + theta * theta))
                    t = -t if theta < 0.0 else t
                    c = 1.0 / math.sqrt(1.0 + t * t)
                    s = t * c
                    t = t if rotate else 0.0  # a pair that is not rotated keeps every entry (a select)
                    c = c if rotate else 1.0
                    s = s if rotate else 0.0
                    rotations += 1 if rotate else 0
                    # work <- J^T work J: a_pp - t a_pq, a_qq + t a_pq, a_pq = 0, rows/columns p and r rotated
                    work[p, p, a] = app - t * apq
                    work[r, r, a] = aqq + t * apq
                    off = 0.0 if rotate else apq
                    work[p, r, a] = off
                    work[r, p, a] = off
                    t_lane[a], c_lane[a], s_lane[a] = t, c, s
                for k in range(d):
                    if k != p and k != r:
                        for a in range(lanes):
                            x, y = work[k, p, a], work[k, r, a]
                            work[k, p, a] = c_lane[a] * x - s_lane[a] * y
                            work[k, r, a] = s_lane[a] * x + c_lane[a] * y
                            work[p, k, a] = work[k, p, a]
                            work[r, k, a] = work[k, r, a]
                for k in range(d):  # eigvecs <- eigvecs J
                    for a in range(lanes):
                        x, y = q[k, p, a], q[k, r, a]
                        q[k, p, a] = c_lane[a] * x - s_lane[a] * y
                        q[k, r, a] = s_lane[a] * x + c_lane[a] * y
        if rotations == 0:
            break
    for a in range(lanes):
        largest[a] = -np.inf
    for i in range(d):
        for a in range(lanes):
            eigvals[i, a] = work[i, i, a]
            largest[a] = max(largest[a], work[i, i, a])


_INSIDE, _ITERATING, _CONVERGED, _CENTRE = 0.0, 1.0, 2.0, 3.0  # the states of a lane's projection


@_jit()
def _project_lanes(lanes, z, eigvals, largest, radius, w, out, sums) -> None:
    """``fairx._project`` in the eigenbasis of each lane's ``V``: ``z = Q^T (p - c)`` in, ``Q^T (P(p) - c)`` out.

    Inside (``sum lam z^2 <= r^2``) ``z`` is returned unchanged; outside a zero radius, the centre.  Otherwise
    Newton's method on ``phi(mu) = g(mu)^{-1/2} - 1/r``, ``g(mu) = sum_k lam_k z_k^2 / (1 + mu lam_k)^2``, from
    the reference's start and with its stopping rule, then ``z / (1 + mu lam)`` rescaled by
    ``min(1, r / ||.||_V)``.  ``out`` may be ``z``.  ``w`` ``(d, lanes)`` and ``sums`` ``(4, lanes)`` are
    scratch (``g``, the slope, the multiplier, the lane's state).
    """
    d = z.shape[0]
    g_lane, slope_lane, multiplier, state = sums[0], sums[1], sums[2], sums[3]
    for a in range(lanes):
        g_lane[a] = 0.0  # the squared V-norm of z
    for k in range(d):
        for a in range(lanes):
            w[k, a] = eigvals[k, a] * z[k, a] * z[k, a]
            g_lane[a] += w[k, a]
    outside = 0
    for a in range(lanes):
        r, total = radius[a], g_lane[a]
        iterate = total > r * r and r > 0.0
        outside += 1 if iterate else 0
        state[a] = _ITERATING if iterate else (_INSIDE if not total > r * r else _CENTRE)
        # start left of the root: g(mu) >= q / (1 + mu lam_max)^2
        start = max(math.sqrt(total) * (1.0 / r) - 1.0, 0.0) / largest[a]
        multiplier[a] = start if iterate else 0.0
    for _ in range(100):
        if outside == 0:
            break
        for a in range(lanes):
            g_lane[a] = 0.0
            slope_lane[a] = 0.0
        for k in range(d):
            for a in range(lanes):
                inv = 1.0 / (1.0 + multiplier[a] * eigvals[k, a])
                b = w[k, a] * inv * inv
                g_lane[a] += b
                slope_lane[a] += eigvals[k, a] * b * inv
        outside = 0
        for a in range(lanes):
            g, mu = g_lane[a], multiplier[a]
            # Newton on phi with phi' = -g'/(2 g^{3/2}), g' = -2 sum lam a / (1 + mu lam):
            # (g^{-1/2} - 1/r) g^{3/2} / slope = g (1 - g^{1/2} / r) / slope
            step = g * (1.0 - math.sqrt(g) * (1.0 / radius[a])) / slope_lane[a]
            step = step if math.isfinite(step) else 0.0
            new = max(mu - step, 0.0)
            active = state[a] == _ITERATING
            multiplier[a] = new if active else mu
            going = active and not abs(step) <= 1e-13 * (1.0 + new)
            state[a] = _ITERATING if going else (_CONVERGED if active else state[a])
            outside += 1 if going else 0
    # converged, or the reference's cap on the iterations: the last multiplier
    for a in range(lanes):
        g_lane[a] = 0.0  # the squared V-norm of z / (1 + mu lam)
    for k in range(d):
        for a in range(lanes):
            wk = z[k, a] / (1.0 + multiplier[a] * eigvals[k, a])
            w[k, a] = wk
            g_lane[a] += eigvals[k, a] * wk * wk
    for a in range(lanes):
        slope_lane[a] = min(1.0, radius[a] / max(math.sqrt(g_lane[a]), 1e-300))  # the rescaling
    for k in range(d):
        for a in range(lanes):
            moved = w[k, a] * slope_lane[a] if state[a] != _CENTRE else 0.0
            out[k, a] = z[k, a] if state[a] == _INSIDE else moved


@_jit()
def _prepare_lanes(lanes, j, rows, seeds, agents, contexts, gram_inverse, target, learning, theory, rho_min, extra, q,
                   eigvals, xs, base, rotated, theta_hat, radius, zeta) -> None:
    """Line 5 after the eigendecomposition: ``theta_hat = V^{-1} b``, the radius, the contexts in the eigenbasis.

    Line 6 then runs in the eigenbasis of ``V`` (``theta = theta_hat + Q zeta``, ``x~_k = Q^T x_k``): the
    projection needs no change of basis.  ``xs[k, i, a]`` is context ``k`` of agent ``a``; ``base[k, a] =
    x_k . theta_hat``; ``rotated[i, k, a] = (Q^T x_k)_i``; ``zeta`` starts at 0 (``theta = theta_hat``).
    """
    noise_std, norm_bound, log_conf, constant = learning[2], learning[3], learning[4], learning[5]
    d, n_actions = xs.shape[1], xs.shape[0]
    for a in range(lanes):  # theta_hat = V^{-1} b (RidgeState.theta), one lane at a time (contiguous rows)
        n = rows[a]
        for i in range(d):
            acc = 0.0
            for k in range(d):
                acc += gram_inverse[n, i, k] * target[n, k]
            theta_hat[i, a] = acc
    for a in range(lanes):
        n = rows[a]
        if theory[n]:
            log_det = 0.0
            for k in range(d):
                log_det += math.log(eigvals[k, a])
            log_ratio = max(log_det - d * math.log(rho_min[n]), 0.0)
            r = noise_std[n] * math.sqrt(log_conf[n] + log_ratio) + math.sqrt(rho_min[n]) * norm_bound[n]
            radius[a] = r + extra[n]
        else:
            radius[a] = constant[n]
    for a in range(lanes):  # one lane at a time: its contexts are one contiguous block
        seed, agent = seeds[a], agents[a]
        for k in range(n_actions):
            for i in range(d):
                xs[k, i, a] = contexts[j, seed, agent, k, i]
    for k in range(n_actions):
        for a in range(lanes):
            base[k, a] = 0.0
        for i in range(d):
            for a in range(lanes):
                base[k, a] += xs[k, i, a] * theta_hat[i, a]  # x_k . theta_hat
        for jj in range(d):
            for a in range(lanes):
                rotated[jj, k, a] = 0.0
            for i in range(d):
                for a in range(lanes):
                    rotated[jj, k, a] += xs[k, i, a] * q[i, jj, a]  # (Q^T x_k)_jj
    for jj in range(d):
        for a in range(lanes):
            zeta[jj, a] = 0.0


@_jit()
def _softmax_lanes(lanes, values, scale, weights, top, total) -> None:
    """``weights[:, a] = exp(scale_a values[:, a] - top_a)`` with ``top_a = max_k scale_a values[k, a]`` (Eq. 1,
    unnormalized) and ``total[a]`` their sum, added in the order of ``k``."""
    n_actions = values.shape[0]
    for a in range(lanes):
        top[a] = -np.inf
    for k in range(n_actions):
        for a in range(lanes):
            top[a] = max(top[a], scale[a] * values[k, a])
    for a in range(lanes):
        total[a] = 0.0
    for k in range(n_actions):
        for a in range(lanes):
            weights[k, a] = _exp(scale[a] * values[k, a] - top[a])
            total[a] += weights[k, a]


@_jit()
def _ascent_lanes(lanes, scale, step_size, base, rotated, zeta, z, mu, weights, sums) -> None:
    """One gradient step of line 6 for each lane: from ``zeta`` into ``z`` (before the projection).

    ``J(theta) = sum_k pi_theta(k) theta . x_k``: ``mu = base + rotated^T zeta``, ``pi = softmax(scale mu)``,
    ``grad = sum_k pi_k (1 + scale (mu_k - J)) x~_k``, ``z = zeta + step grad``.
    """
    d, n_actions = rotated.shape[0], rotated.shape[1]
    for k in range(n_actions):
        for a in range(lanes):
            mu[k, a] = base[k, a]
        for jj in range(d):
            for a in range(lanes):
                mu[k, a] += rotated[jj, k, a] * zeta[jj, a]
    inv_total, value = sums[0], sums[1]
    _softmax_lanes(lanes, mu, scale, weights, value, inv_total)  # value: the max first, free after
    for a in range(lanes):
        inv_total[a] = 1.0 / inv_total[a]
        value[a] = 0.0
    for k in range(n_actions):
        for a in range(lanes):
            weights[k, a] = weights[k, a] * inv_total[a]  # pi
            value[a] += weights[k, a] * mu[k, a]
    for k in range(n_actions):  # the gradient's coefficients
        for a in range(lanes):
            weights[k, a] = weights[k, a] * (1.0 + scale[a] * (mu[k, a] - value[a]))
    for jj in range(d):  # sum_k coef_k rotated[jj, k], added in the order of k
        for a in range(lanes):
            z[jj, a] = 0.0
        for k in range(n_actions):
            for a in range(lanes):
                z[jj, a] += weights[k, a] * rotated[jj, k, a]
        for a in range(lanes):
            z[jj, a] = zeta[jj, a] + step_size[a] * z[jj, a]


@_jit()
def _finish_lanes(lanes, j, rows, seeds, agents, stream, ridge, scale, clip, q, xs, theta_hat, zeta, theta, mu, weights,
                  fair_weights, params, sums, row, work, out) -> None:
    """Lines 7-9 for each lane: the policy, the action, the regret terms, the ridge update and local statistics.

    ``row`` and ``work`` are ``(d,)`` scratch of the ridge update (Sherman-Morrison on the agent's ``V^{-1}``).
    """
    noise, uniforms, mu_true = stream[1], stream[2], stream[3]
    gram, gram_inverse, target, local_gram, local_target = ridge
    d, n_actions = theta.shape[0], xs.shape[0]
    for i in range(d):  # theta = theta_hat + Q zeta
        for a in range(lanes):
            theta[i, a] = 0.0
        for k in range(d):
            for a in range(lanes):
                theta[i, a] += q[i, k, a] * zeta[k, a]
        for a in range(lanes):
            theta[i, a] = theta_hat[i, a] + theta[i, a]
    # line 7: the policy softmax(scale X theta)
    for k in range(n_actions):
        for a in range(lanes):
            mu[k, a] = 0.0
        for i in range(d):
            for a in range(lanes):
                mu[k, a] += xs[k, i, a] * theta[i, a]
    inv_total, cumulative, top, total = sums[0], sums[1], sums[2], sums[3]
    _softmax_lanes(lanes, mu, scale, weights, cumulative, inv_total)
    for a in range(lanes):
        inv_total[a] = 1.0 / inv_total[a]
    # Definition 1: the optimal fair policy softmax(scale mu*), normalized by a division as the reference's
    for a in range(lanes):  # mu* of each lane (the policy's mu is no longer needed)
        seed, agent = seeds[a], agents[a]
        for k in range(n_actions):
            mu[k, a] = mu_true[j, seed, agent, k]
    _softmax_lanes(lanes, mu, scale, fair_weights, top, total)
    fair, regret, below = params[0], params[1], params[2]
    for a in range(lanes):
        cumulative[a] = 0.0
        top[a] = uniforms[j, seeds[a], agents[a]]
        below[a] = 0.0  # the actions below the uniform (line 8: (cumsum(pi) < u).sum())
        fair[a] = 0.0
        regret[a] = 0.0
    for k in range(n_actions):
        for a in range(lanes):
            pi = weights[k, a] * inv_total[a]
            cumulative[a] += pi
            below[a] += 1.0 if cumulative[a] < top[a] else 0.0
            optimal = fair_weights[k, a] / total[a]
            fair[a] += abs(pi - optimal)  # the L1 distance to the optimal fair policy
            regret[a] += (optimal - pi) * mu[k, a]  # the reward regret against it
    # line 9: the ridge update (RidgeState.update, Sherman-Morrison on V^{-1}) and S += x x^T, s += x y
    for a in range(lanes):
        n, seed, agent = rows[a], seeds[a], agents[a]
        action = min(int(below[a]), n_actions - 1)
        out[0][n, j] = fair[a]
        out[1][n, j] = regret[a]
        out[2][n, j] = action
        reward = mu_true[j, seed, agent, action] + noise[j, seed, agent]
        shared = min(max(reward, -clip[n]), clip[n])  # shared rewards are clipped to B (private learners)
        for i in range(d):
            row[i] = xs[action, i, a]
        for i in range(d):
            for k in range(d):
                gram[n, i, k] += row[i] * row[k]
                local_gram[n, i, k] += row[i] * row[k]
            target[n, i] += reward * row[i]
            local_target[n, i] += shared * row[i]
        sherman_morrison(gram_inverse[n], row, work)


@_jit()
def round_lanes(j, rows, n_seeds, n_agents, n_steps, stream, ridge, learning, theory, rho_min, extra, shared_gram,
                eigenvectors, cubes, planes, vectors, ints, out) -> None:
    """Algorithm 1, lines 5-9, at block round ``j`` for the agents (rows) ``rows``, one lane each.

    Row ``n`` is agent ``n % n_agents`` of group ``n // n_agents`` (seed ``group % n_seeds``); the rows may
    come from several groups.  ``eigenvectors[n]`` is the row's eigenvectors of ``V`` (``(d, d)``, kept from
    round to round as the next round's guess).  ``shared_gram[n]`` is 1 where a synchronization gave every
    agent of row ``n``'s group the same ``V`` (one eigendecomposition serves the group; cleared here).  Scratch
    (:func:`lane_scratch`, at least ``len(rows)`` lanes): ``cubes`` six ``(d, d, lanes)``, ``(K, d, lanes)`` and
    ``(d, K, lanes)`` arrays, ``planes`` twelve ``(d, lanes)``, ``(K, lanes)``, ``(3, lanes)`` and ``(4, lanes)``
    arrays, ``vectors`` four ``(lanes,)`` and two ``(d,)`` arrays, ``ints`` three ``(lanes,)`` int64 arrays.
    """
    gram_lanes, q, work, product, xs, rotated = cubes
    eigvals, theta_hat, zeta, z, w, theta, base, mu, weights, fair_weights, params, sums = planes
    largest, radius, scale, step_size, row, scratch = vectors
    seeds, agents, slot = ints  # each lane's seed and agent (the streams' indices), its eigendecomposition's lane
    lanes = rows.shape[0]  # the arrays keep their full (contiguous) shape: the loops run over the first lanes
    gram, gram_inverse, target = ridge[0], ridge[1], ridge[2]
    d = gram.shape[1]
    for a in range(lanes):
        seeds[a] = (rows[a] // n_agents) % n_seeds
        agents[a] = rows[a] % n_agents
        scale[a] = learning[0][rows[a]]
        step_size[a] = learning[1][rows[a]]
    # line 5: V = Q diag(lam) Q^T from the previous round's Q.  After a synchronization every agent of a group has
    # the same V (the aggregate): its first agent's eigendecomposition serves them all (numpy's eigh gives each
    # the same numbers too), so only the other lanes and these first agents go through the Jacobi sweeps
    solved = 0
    for a in range(lanes):
        n = rows[a]
        if shared_gram[n] != 0.0 and agents[a] > 0 and a >= agents[a] and rows[a - agents[a]] == n - agents[a]:
            slot[a] = slot[a - agents[a]]  # the group's first agent's lane (always before it: rows come in order)
            continue
        slot[a] = solved
        for i in range(d):  # compacted: lane `solved` <= a
            for k in range(d):
                gram_lanes[i, k, solved] = gram[n, i, k]
                q[i, k, solved] = eigenvectors[n, i, k]
        solved += 1
    _eigh_lanes(solved, gram_lanes, q, work, product, eigvals, largest, params)
    for a in range(lanes - 1, -1, -1):  # spread back to every lane (from the last: slot[a] <= a is still intact)
        source = slot[a]
        if source == a:
            continue
        for i in range(d):
            eigvals[i, a] = eigvals[i, source]
            for k in range(d):
                q[i, k, a] = q[i, k, source]
        largest[a] = largest[source]
    for a in range(lanes):
        shared_gram[rows[a]] = 0.0
    # theta_hat, the radius
    _prepare_lanes(lanes, j, rows, seeds, agents, stream[0], gram_inverse, target, learning, theory, rho_min, extra, q,
                   eigvals, xs, base, rotated, theta_hat, radius, zeta)
    # line 6: projected gradient ascent on J(theta) = sum_a pi_theta(a) theta . x(a) from theta_hat
    for _ in range(n_steps):
        _ascent_lanes(lanes, scale, step_size, base, rotated, zeta, z, mu, weights, sums)
        _project_lanes(lanes, z, eigvals, largest, radius, w, zeta, sums)
    _finish_lanes(lanes, j, rows, seeds, agents, stream, ridge, scale, learning[6], q, xs, theta_hat, zeta, theta, mu,
                  weights, fair_weights, params, sums, row, scratch, out)
    for a in range(lanes):
        n = rows[a]
        for i in range(d):
            for k in range(d):
                eigenvectors[n, i, k] = q[i, k, a]


@_jit()
def lane_scratch(dim, n_actions, lanes):
    """Scratch arrays of :func:`round_lanes` for up to ``lanes`` agents (one set per thread): ``(cubes, planes,
    vectors, ints)`` for ``d = dim`` and ``K = n_actions``."""
    d, k = dim, n_actions
    cubes = (np.zeros((d, d, lanes)), np.zeros((d, d, lanes)), np.zeros((d, d, lanes)), np.zeros((d, d, lanes)),
             np.zeros((k, d, lanes)), np.zeros((d, k, lanes)))
    planes = (np.zeros((d, lanes)), np.zeros((d, lanes)), np.zeros((d, lanes)), np.zeros((d, lanes)),
              np.zeros((d, lanes)), np.zeros((d, lanes)), np.zeros((k, lanes)), np.zeros((k, lanes)),
              np.zeros((k, lanes)), np.zeros((k, lanes)), np.zeros((3, lanes)), np.zeros((4, lanes)))
    vectors = (np.zeros(lanes), np.zeros(lanes), np.zeros(lanes), np.zeros(lanes), np.zeros(d), np.zeros(d))
    ints = (np.zeros(lanes, dtype=np.int64), np.zeros(lanes, dtype=np.int64), np.zeros(lanes, dtype=np.int64))
    return cubes, planes, vectors, ints
