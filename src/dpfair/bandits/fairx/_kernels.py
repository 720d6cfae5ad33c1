"""Compiled rounds and synchronizations of the federated FairX-LinUCB simulator (numba).

:func:`dpfair.bandits.simulate_federated` with ``engine="compiled"`` keeps the state of a batch of
learners as rows (learner x seed x agent) and hands whole blocks of rounds to :func:`run_groups` (the
``(learner, seed)`` groups of agents split between threads: the kernels release the GIL).  Per round and row
it does what the numpy reference (``_run_group`` of :mod:`dpfair.bandits.fairx.simulator` with
:mod:`dpfair.bandits.fairx.linucb`) does, up to floating-point rounding (:mod:`dpfair.bandits.fairx._lanes`):

1. eigendecomposition of the (symmetric ``d x d``) ``V`` by cyclic Jacobi rotations, the centre
   ``theta_hat = V^{-1} b`` as :meth:`dpfair.bandits.RidgeState.theta` computes it and the confidence
   radius (Solanki et al., Algorithm 1, line 5);
2. projected gradient ascent for the optimistic ``theta_t`` (line 6) with the exact projection of
   :func:`dpfair.bandits.fairx.merit_policy._project` (the same Newton iteration on the secular equation, stopping
   rule and final rescaling);
3. the exponential-merit policy (line 7; ``exp`` by :func:`dpfair.bandits.fairx._lanes._exp`, within an ulp
   of the correctly rounded value as numpy's and libm's are), the action drawn with the round's shared
   uniform (line 8), the per-round fairness and reward regret terms;
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
floating-point operation between the rounding and the release.  The exact BLT (``continual="blt-exact"``) adds
its noise after an integer encoder of the data: Python fetches its rounded Gaussian ``Z`` ahead (a function of the
words alone) and the kernels run the encoder in two-word integers and the float decoder
(:mod:`dpfair.bandits.fairx._exact_kernels`), bit for bit :meth:`Privatizer.release`'s.  Only the exponential
merit is compiled.

The agents of all the groups of a call play a round in lockstep, as the vector lanes of
:func:`~dpfair.bandits.fairx._lanes.round_lanes` (each lane does exactly what its agent does alone, so the
results do not depend on which groups share a call or a thread); then each group's protocol and
synchronization run in turn.  The kernels are cached on disk (``cache=True``) next to this file or, where the
package is read-only, in numba's user-wide cache directory (``NUMBA_CACHE_DIR``); else compiled in memory at
each process's first call.
"""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from dpfair.bandits._numba import cholesky, threads
from dpfair.bandits._numba import jit as _jit
from dpfair.bandits.fairx._exact_kernels import encode_group, entry_index, release_entry
from dpfair.bandits.fairx._lanes import _eigh_lanes, _project_lanes, lane_scratch, round_lanes

__all__ = ["pool", "project_rows", "run", "run_groups", "threads"]


# --------------------------------------------------------------------------------------------------
# ln det and the projection helper for tests
# --------------------------------------------------------------------------------------------------
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


@_jit()
def project_rows(points: np.ndarray, centers: np.ndarray, grams: np.ndarray, radii: np.ndarray) -> np.ndarray:
    """Project each row of ``points`` onto its ellipsoid ``{||theta - c||_V <= r}`` (tests, checks).

    The kernels' own steps (:mod:`dpfair.bandits.fairx._lanes`), one lane per row: the eigendecomposition of
    ``V`` from a cold start, the projection in its eigenbasis; a point inside is returned unchanged.

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
    gram = np.empty((d, d, n))
    q = np.zeros((d, d, n))
    for r in range(n):
        for i in range(d):
            q[i, i, r] = 1.0  # cold start
            for k in range(d):
                gram[i, k, r] = grams[r, i, k]
    eigvals, largest = np.empty((d, n)), np.empty(n)
    _eigh_lanes(n, gram, q, np.empty((d, d, n)), np.empty((d, d, n)), eigvals, largest, np.empty((3, n)))
    z = np.zeros((d, n))
    inside = np.zeros(n, dtype=np.bool_)
    for r in range(n):
        total = 0.0
        for k in range(d):
            acc = 0.0
            for i in range(d):
                acc += q[i, k, r] * (points[r, i] - centers[r, i])
            z[k, r] = acc
            total += eigvals[k, r] * acc * acc
        inside[r] = not total > radii[r] * radii[r]
    _project_lanes(n, z, eigvals, largest, np.ascontiguousarray(radii), np.empty((d, n)), z, np.empty((4, n)))
    out = np.empty((n, d))
    for r in range(n):
        for i in range(d):
            if inside[r]:  # inside: returned unchanged, as fairx._project does
                out[r, i] = points[r, i]
                continue
            acc = 0.0
            for k in range(d):
                acc += q[i, k, r] * z[k, r]
            out[r, i] = centers[r, i] + acc
    return out


# --------------------------------------------------------------------------------------------------
# synchronizations (Algorithm 1, lines 10-27) inside the kernels
# --------------------------------------------------------------------------------------------------
# what run_groups reports per group (status) when it stops before the end of the block
DONE, NEED_NOISE, NEED_DECISION, NOT_POSITIVE_DEFINITE, BEYOND_RANGE, BEYOND_CAPACITY = 0, 1, 2, 3, 4, 5
BEYOND_ENCODER = 6  # the exact BLT encoder's two-word range (_exact_kernels)
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
def _release_status(base, n_agents, n_releases, g, count, noise_row, noise_first, noise_len, units_gram, units_target,
                    local_gram, local_target) -> int:
    """The checks of a private group's release before anything changes: ``DONE`` when every agent of the group can
    release (its tree has room, its noise is fetched, its running sums stay within ``_MAX_STEPS``), else the status."""
    d = units_target.shape[1]
    for a in range(n_agents):
        n = base + a
        if count[n] + 1 > n_releases:
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
    return DONE


@_jit()
def _after_receive(group, t, learner, n_agents, lam, ridge, norm_bound, sync_rows, gram_last, protocol, is_private,
                   learner_real, control, mat) -> None:
    """The end of :func:`_sync_group`: ``S^i = 0``; at the first synchronization ``rho_min = m lambda`` and (private)
    the radius' ``extra``; ``t_last = t``; for log-det the new ``ln det V`` and a copy of ``V``; the counters."""
    gram, local_gram, local_target = ridge[0], ridge[3], ridge[4]
    rho_min, extra, t_last, log_det_last = sync_rows[0], sync_rows[1], sync_rows[2], sync_rows[3]
    rho_max_extra, target_noise_bound = learner_real[2], learner_real[3]
    synced, comms = control[0], control[1]
    d, base = gram.shape[1], group * n_agents
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
    (``noise_*[noise_row[n], slot]``; ``NEED_NOISE`` when it is not there, before anything changes); with
    ``continual="blt-exact"`` the rounded increments enter the two-word encoder first (``BEYOND_ENCODER`` if out of
    range, before anything changes) and the release is ``g`` times the decoder's prefix sum of ``r + Z``.
    *Aggregate* (``_ServerSync.aggregate``): ``U = sum_j U_hat^j``, ``u = sum_j u_hat^j`` in agent order.
    *Receive* (``_AgentSync.receive``): ``V^i = sym(U (+ c I))``, ``V^{-1}`` through its Cholesky factor,
    ``b^i = u``, ``S^i = 0``; the first synchronization sets ``rho_min = m lambda`` and (private) the radius'
    ``extra``; ``t_last = t``, and for log-det the new ``ln det V`` and a copy of ``V`` (for Python's exact
    decisions).
    """
    gram, gram_inverse, target, local_gram, local_target = ridge
    shared_gram, shift, granularity = sync_rows[4], learner_real[1], learner_real[4]
    own_gram, own_target, units_gram, units_target, count, noise_gram, noise_target, noise_first, noise_len = private_rows[:9]
    exact_total = private_rows[13]  # continual="blt-exact" (_exact_kernels): the decoder's prefix sums
    d, base = gram.shape[1], group * n_agents
    shared, chol, chol_inverse, inverse = work[group, 0], work[group, 1], work[group, 2], work[group, 3]
    shared_target = work[group, 4, 0]
    is_private, g = private[learner], granularity[learner]
    p = slot = 0
    if is_private:  # every check before any change (Privatizer.release checks the whole batch first)
        status = _release_status(base, n_agents, n_releases[learner], g, count, noise_row, noise_first, noise_len,
                                 units_gram, units_target, local_gram, local_target)
        if status != DONE:
            return status
    exact = is_private and private_rows[16][learner]
    if exact and not encode_group(base, n_agents, g, learner, noise_row, local_gram, local_target, private_rows):
        return BEYOND_ENCODER
    # lines 19-20 (release) and 22 (aggregate)
    for a in range(n_agents):
        n = base + a
        if is_private:  # Algorithm 2, lines 10-15: rounded increment into the running sum, sum + noise released
            count[n] += 1
            p = noise_row[n]
            slot = count[n] - noise_first[p]
        for i in range(d):
            for j in range(d):
                if exact:  # the upper entry's release, computed at its first visit (_exact_kernels)
                    units_gram[n, i, j] += np.int64(np.rint(local_gram[n, i, j] / g))
                    if i <= j:
                        release_entry(p, entry_index(i, j, d + 1), noise_gram[p, slot, i, j], learner, private_rows)
                    value = exact_total[p, entry_index(min(i, j), max(i, j), d + 1)] * g
                elif is_private:
                    units_gram[n, i, j] += np.int64(np.rint(local_gram[n, i, j] / g))
                    value = float(units_gram[n, i, j] + noise_gram[p, slot, i, j]) * g
                else:
                    own_gram[n, i, j] += local_gram[n, i, j]
                    value = own_gram[n, i, j]
                value = value + lam if i == j else value + 0.0  # U_hat^j = lambda I + ...
                shared[i, j] = value if a == 0 else shared[i, j] + value
            if exact:
                units_target[n, i] += np.int64(np.rint(local_target[n, i] / g))
                value = release_entry(p, entry_index(i, d, d + 1), noise_target[p, slot, i], learner, private_rows) * g
            elif is_private:
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
            shared_gram[n] = 1.0  # every agent's V is the same matrix: one eigendecomposition next round
    _after_receive(group, t, learner, n_agents, lam, ridge, norm_bound, sync_rows, gram_last, protocol, is_private,
                   learner_real, control, mat)
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
    seed``).  Per round, every agent of every group at that round plays, in lockstep
    (:func:`~dpfair.bandits.fairx._lanes.round_lanes`: Algorithm 1, lines 5-9), then for each group the
    protocol decides (``protocol[learner]``: 0 none, 1 the schedule ``schedule[learner, t]``, 2 the log-det
    trigger) and :func:`_sync_group` synchronizes the group.  Each group starts at ``progress[group]`` and
    runs to ``stop`` unless it needs Python (``status[group]``): ``NEED_NOISE`` (fetch the next noise
    block), ``NEED_DECISION`` (a log-det trigger too close to call: write ``decision[group]``) or an error; it
    then stops where it is and resumes there at the next call (``pending[group]``).  ``margin``: the
    relative band of :func:`_trigger` (``TRIGGER_MARGIN``).

    ``control = (synced, comms, progress, pending, decision, status)``; ``out = (fair, regret, actions)``
    ``(N, b)``; ``scratch = (mat, work)``: ``mat[n, 0]`` row ``n``'s eigenvectors of ``V`` (the next round's
    warm start), ``mat[n, 1]`` and ``work[group]`` scratch; the rest as in
    :func:`~dpfair.bandits.fairx._lanes.round_lanes` and :func:`_sync_group`.
    """
    gram, norm_bound = ridge[0], learning[3]
    rho_min, extra = sync_rows[0], sync_rows[1]
    progress, pending, decision, status = control[2], control[3], control[4], control[5]
    mat, work = scratch
    threshold = learner_real[0]
    eigenvectors = mat[:, 0]  # each row's eigenvectors of V, kept from round to round
    n_groups = len(groups)
    # this thread's scratch: the agents of every group of the call are the lanes of one round
    cubes, planes, vectors, ints = lane_scratch(gram.shape[1], stream[0].shape[3], n_groups * n_agents)
    rows = np.empty(n_groups * n_agents, dtype=np.int64)  # lane -> row
    running = np.ones(n_groups, dtype=np.bool_)  # no stop for Python yet
    j = stop
    for g in range(n_groups):
        status[groups[g]] = DONE
        j = min(j, progress[groups[g]])
    while True:
        # lines 10-27 at the end of round t0 + j, for each group whose next round is j
        for g in range(n_groups):
            group = groups[g]
            if not running[g] or progress[group] != j:
                continue
            if pending[group] == UNDECIDED:  # Python's decision
                pending[group] = SYNC_DUE if decision[group] else NO_SYNC
            if pending[group] == SYNC_DUE:
                code = _sync_group(
                    group, t0 + j, group // n_seeds, n_agents, lam, ridge, norm_bound, sync_rows, gram_last, protocol,
                    private, n_releases, learner_real, private_rows, noise_row, control, mat, work,
                )
                if code != DONE:
                    status[group] = code
                    running[g] = False
                    continue
                pending[group] = NO_SYNC
        if j >= stop:
            break
        lanes = 0
        for g in range(n_groups):
            if running[g] and progress[groups[g]] == j:
                for a in range(n_agents):
                    rows[lanes] = groups[g] * n_agents + a
                    lanes += 1
        if lanes == 0:  # no group at round j: the next round some group is at (stop too: its pending sync)
            later = -1
            for g in range(n_groups):
                if running[g] and progress[groups[g]] > j:
                    later = progress[groups[g]] if later < 0 else min(later, progress[groups[g]])
            if later < 0:
                break
            j = later
            continue
        # lines 5-9: every agent of these groups, in lockstep
        round_lanes(j, rows[:lanes], n_seeds, n_agents, n_steps, stream, ridge, learning, theory, rho_min, extra,
                    sync_rows[4], eigenvectors, cubes, planes, vectors, ints, out)
        for g in range(n_groups):
            group = groups[g]
            if not running[g] or progress[group] != j:
                continue
            learner = group // n_seeds
            progress[group] = j + 1
            if protocol[learner] == 1:
                pending[group] = SYNC_DUE if schedule[learner, t0 + j + 1] else NO_SYNC
            elif protocol[learner] == 2:
                pending[group] = _trigger(group, t0 + j + 1, learner, n_agents, gram, sync_rows, threshold, margin, mat)
                if pending[group] == UNDECIDED:
                    status[group] = NEED_DECISION
                    running[g] = False
        j += 1


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
