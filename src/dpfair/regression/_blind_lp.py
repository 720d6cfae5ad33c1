r"""The pieces of the attribute-blind post-processor: membership cells, its linear program, its fairness bound.

:class:`~dpfair.regression.BlindFairRegressionPostProcessor` remaps a regressor's output with a randomized map
that reads only the *cell* ``c = (s, m)`` of a row: ``s`` the bin of the regressor's output (Xian et al. 2024,
Algorithm 1, line 2) and ``m`` the cell of a group-membership model's probabilities ``g(x) ~ P(A | x)`` on a
public lattice of the simplex.  This module holds

* :func:`membership_lattice` / :func:`membership_cell_index`: the public lattice ``{eta : B eta in N^G,
  sum eta = 1}`` and the rounding of a probability vector to it (largest remainders);
* :func:`solve_blind_lp`: the linear program that chooses the map, in the cumulative variables
  ``T(c, l) = P(output <= v_l | cell c)``;
* :func:`pool_noisy_cells`: the pooling, within each score bin, of the cells whose released mass is within a few
  standard deviations of its noise (the program could otherwise buy fairness on noise alone, below);
* :func:`max_partial_sum_bound` and :func:`max_block_sum_bound`: high-probability bounds on the partial sums of
  i.i.d. Laplace noise, from which the fitted estimator reports the fairness it guarantees.

The program (the blind counterpart of ``LP`` in Section 3.3 of the paper)
-----------------------------------------------------------------------
With ``P(c)`` the cell masses, ``p_a(c) = P(c | A = a)`` the groups' cell distributions and ``v`` the grid::

    minimize    sum_c P(c) sum_l (T(c, l) - T(c, l - 1)) (v_s(c) - v_l)^2
    subject to  0 = T(c, 0) <= T(c, 1) <= ... <= T(c, k) = 1                 (a distribution per cell)
                d_l <= sum_c p_a(c) T(c, l) <= d_l + alpha   for all a, l < k  (KS between groups <= alpha)

``sum_c p_a(c) T(c, l)`` is group ``a``'s output CDF at ``v_l`` (the map reads the cell, not the group), and
``max_a - min_a <= alpha`` at every ``l`` is the KS constraint of Definition 2.2 of the paper for every pair of
groups at once (``d_l`` is the lower end of the band).  Every feasible point is a valid randomized map, every
map of the cells is a feasible point when it is fair, and the constant map (every cell to one point) is
always feasible, so the program always has an optimum.  With one membership cell and one group per cell
distribution this is the paper's LP for one group; the attribute-aware LP is the case where the cell
determines the group.

Robust constraints (``margins``; measured, not used by the estimator)
---------------------------------------------------------------------
The released table's noise moves group ``a``'s CDF at cut ``l`` by ``sum_c (T(c, l) - F_a(l)) e_a(c) / w_a`` (to
first order; ``e_a(c)`` the entry's noise, ``w_a`` the group's weight): a map that varies over noisy cells has a
noisy CDF.  As the attribute-blind classification post-processor does for its rates
(``dpfair.classification.blind_table``), ``margins`` charges each group's band for it, with the band centre
``t_l = d_l + alpha / 2`` a variable::

    |sum_c p_a(c) T(c, l) - t_l| + sum_c m[a, c] |T(c, l) - t_l| <= alpha / 2      for all a, l < k

(linear through ``u(c, l) >= |T(c, l) - t_l|``; :func:`robust_margin_weights` gives ``m``).  Every feasible map
is fair (the charges are ``>= 0``), the constant map is still feasible (``T(c, l) = t_l``, no charge), and with
``m = 0`` it is the program above.  ``steady`` adds a second program, as the classification one's: among the maps
within a relative tolerance of the optimal cost, the one of least summed charge.  On Law School and Communities at
``epsilon = 1`` both moved along the front of the global margin (``noise_margin``) instead of past it (the
regression guide), so the estimator keeps the global margin; ``bench_regression.py --blind-variants`` runs them.
"""

from __future__ import annotations

import math
import warnings
from functools import lru_cache
from itertools import combinations

import numpy as np
from scipy import optimize, sparse

from dpfair._warnings import find_stack_level

__all__ = [
    "max_block_sum_bound",
    "max_partial_sum_bound",
    "membership_cell_index",
    "membership_lattice",
    "n_membership_cells",
    "noise_margin",
    "pool_noisy_cells",
    "robust_margin_weights",
    "solve_blind_lp",
]


def n_membership_cells(n_groups: int, membership_bins: int) -> int:
    """Number of points of the lattice ``{eta : B eta in N^G, sum eta = 1}``: ``C(B + G - 1, G - 1)``."""
    return math.comb(membership_bins + n_groups - 1, n_groups - 1)


@lru_cache(maxsize=16)
def membership_lattice(n_groups: int, membership_bins: int) -> np.ndarray:
    """The lattice points as integer counts ``B eta`` (rows sum to ``B``), in lexicographic order.

    Parameters
    ----------
    n_groups : int
        ``G >= 1``.
    membership_bins : int
        ``B >= 1``, the resolution: each probability is rounded to a multiple of ``1 / B``.

    Returns
    -------
    ndarray of int64, shape (n_cells, n_groups)
        The points (stars and bars), read-only.
    """
    rows = []
    for bars in combinations(range(membership_bins + n_groups - 1), n_groups - 1):
        edges = (-1, *bars, membership_bins + n_groups - 1)
        rows.append([edges[i + 1] - edges[i] - 1 for i in range(n_groups)])
    lattice = np.array(rows, dtype=np.int64).reshape(-1, n_groups)
    lattice = lattice[np.lexsort(lattice.T[::-1])]
    lattice.setflags(write=False)
    return lattice


def _codes(counts: np.ndarray, membership_bins: int) -> np.ndarray:
    """Mixed-radix code of every row of counts (base ``B + 1``), monotone in the lexicographic order."""
    radix = (membership_bins + 1) ** np.arange(counts.shape[1] - 1, -1, -1, dtype=np.int64)
    return counts @ radix


def membership_cell_index(probabilities: np.ndarray, membership_bins: int) -> np.ndarray:
    """Each row's lattice cell: ``B p`` rounded by largest remainders (a fixed, public per-row map).

    Rows are clipped to ``[0, 1]`` and renormalised first (a row summing to 0 is uniform).  The rounding keeps
    ``floor(B p)`` and gives the remaining units to the largest fractional parts (ties to the first group).

    Parameters
    ----------
    probabilities : ndarray of shape (n_rows, n_groups)
        Finite membership probabilities, columns in the declared order of the groups.
    membership_bins : int
        ``B``.

    Returns
    -------
    ndarray of int64, shape (n_rows,)
        Row index into :func:`membership_lattice`.
    """
    n_rows, n_groups = probabilities.shape
    if n_groups == 1:
        return np.zeros(n_rows, dtype=np.int64)
    p = np.clip(probabilities, 0.0, 1.0)
    total = p.sum(axis=1, keepdims=True)
    p = np.where(total > 0, p / np.where(total > 0, total, 1.0), 1.0 / n_groups)
    scaled = p * membership_bins
    counts = np.floor(scaled).astype(np.int64)
    np.minimum(counts, membership_bins, out=counts)
    missing = membership_bins - counts.sum(axis=1)
    order = np.argsort(-(scaled - counts), axis=1, kind="stable")  # largest remainders first, ties to the first
    rank = np.empty_like(order)
    np.put_along_axis(rank, order, np.arange(n_groups)[None, :].repeat(n_rows, axis=0), axis=1)
    counts += (rank < missing[:, None]).astype(np.int64)
    lattice = membership_lattice(n_groups, membership_bins)
    return np.searchsorted(_codes(lattice, membership_bins), _codes(counts, membership_bins)).astype(np.int64)


def solve_blind_lp(
    cell_pmfs: np.ndarray, weights: np.ndarray, cell_bin: np.ndarray, grid: np.ndarray, alpha: float,
    margins: np.ndarray | None = None, steady: tuple[np.ndarray, float] | None = None,
) -> tuple[np.ndarray, float]:
    """Solve the blind program of the module docstring (HiGHS on the cumulative variables).

    Parameters
    ----------
    cell_pmfs : ndarray of shape (n_groups, n_cells)
        ``p_a(c)``: each row a distribution over the cells (a group of weight 0 is left out of the constraints).
    weights : ndarray of shape (n_groups,)
        ``w_a >= 0``, not all 0: ``P(c) = sum_a w_a p_a(c) / sum_a w_a``.
    cell_bin : ndarray of int64, shape (n_cells,)
        The score bin ``s(c)`` of every cell (its source point ``v_s(c)``).
    grid : ndarray of shape (k,)
        Strictly increasing output points.
    alpha : float
        KS tolerance between groups, ``>= 0``.
    margins : ndarray of shape (n_groups, n_cells) or None, default None
        The robust constraints' weights ``m[a, c] >= 0`` (:func:`robust_margin_weights`): every band constraint of
        group ``a`` at cut ``l`` is charged ``sum_c m[a, c] |T(c, l) - t_l|`` (module docstring).  ``None`` or
        all 0: the plain program.
    steady : (ndarray of shape (n_groups, n_cells), float) or None, default None
        ``(sensitivity, tolerance)``: then a second program keeps the map of least
        ``sum_l sum_c (sum_a sensitivity[a, c]) |T(c, l) - t_l|`` among those (with the same constraints) whose
        cost is within ``tolerance`` times the optimal cost of the optimum.  ``None``: the first program's map.

    Returns
    -------
    transport : ndarray of shape (n_cells, k)
        Row-stochastic map ``P(output = v_l | cell c)``; a cell of mass 0 maps to its own point ``v_s(c)``
        (the caller may refill it).
    objective : float
        ``sum_c P(c) E[(output - v_s(c))^2 | c]`` at the optimum.

    Warns
    -----
    UserWarning
        If HiGHS reports no optimum (numerical trouble; the program is always feasible and bounded): the constant
        map to the grid point nearest the mean output is returned instead (exactly fair), so that nothing after a
        private release can fail.
    """
    n_cells = cell_pmfs.shape[1]
    k = grid.size
    w = weights / weights.sum()
    mass = w @ cell_pmfs
    active = np.flatnonzero(mass > 0)
    transport = np.zeros((n_cells, k))
    transport[np.arange(n_cells), cell_bin] = 1.0
    if k == 1 or active.size == 0 or np.count_nonzero(weights > 0) <= 1:
        return transport, 0.0  # nothing to equalise: every cell keeps its own point (the identity is optimal)
    n_active, n_cuts = active.size, k - 1
    cost = (grid[cell_bin[active]][:, None] - grid[None, :]) ** 2  # (n_active, k)
    # sum_l (T_l - T_{l-1}) K_l = sum_{l<k} T_l (K_l - K_{l+1}) + K_k   (T_k = 1, T_0 = 0)
    c_t = (mass[active][:, None] * (cost[:, :-1] - cost[:, 1:])).ravel()
    constant = float(mass[active] @ cost[:, -1])
    n_t = n_active * n_cuts
    objective = np.concatenate([c_t, np.zeros(n_cuts)])  # variables: T (cell-major), then d_l
    blocks, upper = _monotone_rows(n_active, n_cuts)
    constrained = np.flatnonzero(weights > 0)
    pmf = cell_pmfs[np.ix_(constrained, active)]  # (g', n_active)
    g_count = constrained.size
    robust = g_count > 1 and (steady is not None or (
        margins is not None and bool(np.any(margins[np.ix_(constrained, active)] > 0))))
    if robust:
        band = np.zeros((g_count, n_active)) if margins is None else margins[np.ix_(constrained, active)]
        objective, blocks, upper, bounds = _robust_program(objective, blocks, upper, pmf, band, n_cuts, alpha)
    else:
        if g_count > 1:
            blocks, upper = _plain_band(blocks, upper, pmf, n_cuts, alpha)
        bounds = np.array([(0.0, 1.0)] * n_t + [(-1.0, 1.0)] * n_cuts)
    if blocks:
        result = optimize.linprog(objective, A_ub=sparse.vstack(blocks).tocsr(), b_ub=np.concatenate(upper),
                                  bounds=bounds, method="highs")
    else:
        result = optimize.linprog(objective, bounds=bounds, method="highs")
    if result.status == 0 and robust and steady is not None:  # least sensitive map of nearly the optimal cost
        sensitivity = steady[0][np.ix_(constrained, active)].sum(axis=0)
        ceiling = result.fun + steady[1] * max(result.fun + constant, 0.0) + 1e-12
        second = np.concatenate([np.zeros(n_t + n_cuts), np.repeat(sensitivity, n_cuts)])
        again = optimize.linprog(second, A_ub=sparse.vstack([*blocks, sparse.csr_array(objective[None, :])]).tocsr(),
                                 b_ub=np.concatenate([*upper, [ceiling]]), bounds=bounds, method="highs")
        if again.status == 0:
            result = optimize.OptimizeResult(x=again.x, fun=float(objective @ again.x), status=0)
    if result.status != 0:  # numerical trouble only: the constant map is always feasible and the objective bounded
        warnings.warn("the blind post-processing LP was not solved by HiGHS; the constant map (exactly fair) is used "
                      "instead. Try fewer n_bins or membership_bins.", stacklevel=find_stack_level())
        point = int(np.argmin(np.abs(grid - mass[active] @ grid[cell_bin[active]])))
        constant_map = np.zeros((n_cells, k))
        constant_map[:, point] = 1.0
        return constant_map, float(mass[active] @ (grid[cell_bin[active]] - grid[point]) ** 2)
    cdf = np.clip(result.x[:n_t].reshape(n_active, n_cuts), 0.0, 1.0)
    cdf = np.maximum.accumulate(cdf, axis=1)  # HiGHS' tolerances: a monotone CDF ending at 1
    cdf = np.concatenate([cdf, np.ones((n_active, 1))], axis=1)
    transport[active] = np.diff(cdf, axis=1, prepend=0.0)
    return transport, float(result.fun + constant)


def _monotone_rows(n_active: int, n_cuts: int) -> tuple[list, list]:
    """The rows ``T(c, l - 1) - T(c, l) <= 0`` over the variables ``T`` (cell-major) and one per cut."""
    if n_cuts <= 1:
        return [], []
    n_t = n_active * n_cuts
    rows = np.arange(n_active * (n_cuts - 1))
    cell, cut = np.divmod(rows, n_cuts - 1)
    first = cell * n_cuts + cut
    block = sparse.csr_array((np.concatenate([np.ones(rows.size), -np.ones(rows.size)]),
                              (np.concatenate([rows, rows]), np.concatenate([first, first + 1]))),
                             shape=(rows.size, n_t + n_cuts))
    return [block], [np.zeros(rows.size)]


def _plain_band(blocks: list, upper: list, pmf: np.ndarray, n_cuts: int, alpha: float) -> tuple[list, list]:
    """The band rows of the plain program: ``sum_c p_a(c) T(c, l) - d_l <= alpha`` and ``d_l - sum_c ... <= 0``."""
    g_count, n_active = pmf.shape
    n_t = n_active * n_cuts
    group, cut, cell = np.meshgrid(np.arange(g_count), np.arange(n_cuts), np.arange(n_active), indexing="ij")
    row = (group * n_cuts + cut).ravel()
    column = (cell * n_cuts + cut).ravel()
    value = pmf[group.ravel(), cell.ravel()]
    keep = value != 0
    row, column, value = row[keep], column[keep], value[keep]
    d_rows = np.arange(g_count * n_cuts)
    d_columns = n_t + d_rows % n_cuts
    above = sparse.csr_array(
        (np.concatenate([value, -np.ones(d_rows.size)]), (np.concatenate([row, d_rows]),
                                                           np.concatenate([column, d_columns]))),
        shape=(g_count * n_cuts, n_t + n_cuts))
    return [*blocks, above, -above], [*upper, np.full(g_count * n_cuts, float(alpha)), np.zeros(g_count * n_cuts)]


def _robust_program(objective: np.ndarray, blocks: list, upper: list, pmf: np.ndarray, margins: np.ndarray,
                    n_cuts: int, alpha: float) -> tuple[np.ndarray, list, list, np.ndarray]:
    """The robust band constraints of :func:`solve_blind_lp` (module docstring, "Robust constraints").

    Variables: ``T`` (cell-major, as the plain program), the band centres ``t_l`` in [0, 1] (in place of the
    plain program's lower ends ``d_l``) and ``u(c, l) >= |T(c, l) - t_l|`` (cell-major).  Rows, for every
    constrained group ``a`` and cut ``l``: ``+-(sum_c p_a(c) T(c, l) - t_l) + sum_c m[a, c] u(c, l) <= alpha / 2``;
    for every cell and cut: ``+-(T(c, l) - t_l) - u(c, l) <= 0``.  ``blocks`` (the monotonicity rows) are widened
    to the new variables.  Returns the objective, blocks, right-hand sides and bounds of the whole program.
    """
    g_count, n_active = pmf.shape
    n_t = n_active * n_cuts
    width = 2 * n_t + n_cuts
    blocks = [sparse.hstack([block, sparse.csr_array((block.shape[0], n_t))]).tocsr() for block in blocks]
    group, cut, cell = np.meshgrid(np.arange(g_count), np.arange(n_cuts), np.arange(n_active), indexing="ij")
    row = (group * n_cuts + cut).ravel()
    column = (cell * n_cuts + cut).ravel()
    value, charge = pmf[group.ravel(), cell.ravel()], margins[group.ravel(), cell.ravel()]
    n_rows = g_count * n_cuts
    centre_rows = np.arange(n_rows)
    centre_columns = n_t + centre_rows % n_cuts

    def band(sign: float) -> sparse.csr_array:
        keep, paid = value != 0, charge > 0
        return sparse.csr_array(
            (np.concatenate([sign * value[keep], np.full(n_rows, -sign), charge[paid]]),
             (np.concatenate([row[keep], centre_rows, row[paid]]),
              np.concatenate([column[keep], centre_columns, n_t + n_cuts + column[paid]]))),
            shape=(n_rows, width))

    cells = np.arange(n_t)
    t_columns = n_t + cells % n_cuts

    def absolute(sign: float) -> sparse.csr_array:
        return sparse.csr_array(
            (np.concatenate([np.full(n_t, sign), np.full(n_t, -sign), -np.ones(n_t)]),
             (np.concatenate([cells, cells, cells]), np.concatenate([cells, t_columns, n_t + n_cuts + cells]))),
            shape=(n_t, width))

    blocks += [band(1.0), band(-1.0), absolute(1.0), absolute(-1.0)]
    upper += [np.full(n_rows, alpha / 2.0), np.full(n_rows, alpha / 2.0), np.zeros(n_t), np.zeros(n_t)]
    objective = np.concatenate([objective[:n_t], np.zeros(n_cuts + n_t)])
    bounds = np.array([(0.0, 1.0)] * (n_t + n_cuts) + [(0.0, 1.0)] * n_t)
    return objective, blocks, upper, bounds


def robust_margin_weights(multiple: float, noise_scale: float, pool_sizes: np.ndarray,
                          weights: np.ndarray) -> np.ndarray | None:
    """The weights ``m[a, c]`` of the robust constraints: ``multiple`` noise standard deviations, spread over cells.

    Group ``a``'s released CDF at cut ``l`` differs from its exact one by ``sum_c (T(c, l) - F_a(l)) e_a(c) / w_a``
    to first order (``e_a(c)`` the noise of the (group, pooled cell) entry, a sum of ``n_c`` Laplace(``b``) draws,
    standard deviation ``b sqrt(2 n_c)``), which is ``sum_c (T(c, l) - t_l) e_a(c) / w_a`` plus
    ``(t_l - F_a(l))`` times the group's total noise (at most ``alpha / 2`` of it).  Its standard deviation
    ``sqrt(sum_c 2 n_c b^2 (T(c, l) - t_l)^2) / w_a`` is ``sum_c b sqrt(2 n_c) |T(c, l) - t_l| / (w_a sqrt(C))``
    for a map that moves evenly over the ``C`` cells; the weights are ``multiple`` times that:
    ``m[a, c] = multiple * b sqrt(2 n_c) / (w_a sqrt(C))``.  Released quantities only (the private weights, the
    pool sizes, the public scale).

    Parameters
    ----------
    multiple : float
        How many standard deviations (``>= 0``).
    noise_scale : float
        The table's Laplace scale ``b`` (0: no noise).
    pool_sizes : ndarray of int, shape (n_pooled,)
        The number of cells in every pooled cell.
    weights : ndarray of shape (n_groups,)
        Private group weights (a group of weight 0 gets weight 0: it is not constrained).

    Returns
    -------
    ndarray of shape (n_groups, n_pooled) or None
        The weights; ``None`` without noise, with ``multiple = 0`` or fewer than two groups of positive weight.
    """
    present = weights > 0
    if multiple == 0.0 or noise_scale == 0.0 or np.count_nonzero(present) < 2:
        return None
    per_cell = noise_scale * np.sqrt(2.0 * np.asarray(pool_sizes, float)) / math.sqrt(pool_sizes.size)
    inverse = np.where(present, 1.0 / np.where(present, weights, 1.0), 0.0)
    return multiple * inverse[:, None] * per_cell[None, :]


def max_partial_sum_bound(n_terms: int, scale: float, failure: float) -> float:
    """``E`` with ``P(max_j |W_1 + ... + W_j| > E) <= failure`` for i.i.d. ``W_i ~ Laplace(scale)``.

    Levy's maximal inequality for symmetric summands, ``P(max_j |S_j| > t) <= 2 P(|S_n| > t)``, and the
    Chernoff bound ``P(|S_n| > t) <= 2 min_{0 < u < 1/b} exp(-u t) (1 - b^2 u^2)^(-n)`` (the Laplace moment
    generating function), solved for ``t`` by bisection.

    Parameters
    ----------
    n_terms : int
        ``n >= 1``.
    scale : float
        ``b >= 0`` (0: the bound is 0).
    failure : float
        In (0, 1).

    Returns
    -------
    float
        The bound ``E``.
    """
    if scale == 0.0:
        return 0.0
    n = float(n_terms)

    def log_tail(t: float) -> float:  # log of 4 min_u exp(-u t) (1 - u^2)^(-n), in units of b
        # the minimiser of -u t - n log(1 - u^2): u t (1 - u^2) ... solved in closed form
        u = (-n + math.sqrt(n * n + t * t)) / t
        return math.log(4.0) - u * t - n * math.log1p(-u * u)

    target = math.log(failure)
    lo, hi = 0.0, 1.0
    while log_tail(hi) > target:
        hi *= 2.0
    for _ in range(100):
        mid = (lo + hi) / 2.0
        if mid > 0 and log_tail(mid) <= target:
            hi = mid
        else:
            lo = mid
    return hi * scale


def pool_noisy_cells(table: np.ndarray, n_bins: int, threshold: float) -> tuple[np.ndarray, np.ndarray]:
    """Pool, within each score bin, the cells whose released total mass is below ``threshold``.

    In score bin ``s`` the cells with ``sum_a table[a, c] >= threshold`` stay cells of their own; the others
    form one pooled cell, or, if their pooled mass is still below ``threshold`` while the bin has a cell above
    it, join the bin's largest cell.  A bin whose cells are all below ``threshold`` becomes one cell.  Pooled
    cells keep the score-major order (within a bin, by the cell each is represented by: the first of a pool, or
    the largest cell it joined), so that nothing pooled (``threshold <= 0`` or every cell above it) is the
    identity.

    Parameters
    ----------
    table : ndarray of shape (n_groups, n_bins * M)
        The released (group, cell) table, cells score-major (``c = s * M + m``).
    n_bins : int
        Score bins ``k``.
    threshold : float
        Least released total mass of a cell kept on its own (``<= 0``: nothing is pooled).

    Returns
    -------
    pooled_of : ndarray of int64, shape (n_bins * M,)
        The pooled cell of every cell, numbered ``0 .. n_pooled - 1`` in the order above.
    representative : ndarray of int64, shape (n_pooled,)
        The cell each pooled cell is represented by (the first of a pool, or the largest cell it joined):
        its score bin is ``representative // M``.
    """
    n_m = table.shape[1] // n_bins
    if threshold <= 0:  # pooling off (or no noise)
        return np.arange(table.shape[1], dtype=np.int64), np.arange(table.shape[1], dtype=np.int64)
    total = table.sum(axis=0).reshape(n_bins, n_m)
    anchor = np.arange(n_bins * n_m).reshape(n_bins, n_m)  # each cell's representative (first cell of its pool)
    for s in range(n_bins):
        kept = total[s] >= threshold
        low = np.flatnonzero(~kept)
        if low.size == 0:
            continue
        if kept.any() and total[s, low].sum() < threshold:
            anchor[s, low] = anchor[s, np.flatnonzero(kept)[np.argmax(total[s, kept])]]
        else:
            anchor[s, low] = anchor[s, low[0]]
    representatives, pooled_of = np.unique(anchor.ravel(), return_inverse=True)  # numbered in score-major order
    return pooled_of.astype(np.int64), representatives.astype(np.int64)


def max_block_sum_bound(block: int, n_blocks: int, scale: float, failure: float) -> float:
    """``E`` with ``P(max_s sum_{m < M} |W_{s, m}| > E) <= failure`` for i.i.d. ``W ~ Laplace(scale)``.

    Each ``|W|`` is exponential with mean ``b``: the Chernoff bound ``P(sum > t) <= min_u exp(-u t / b)
    (1 - u)^(-M) = exp(M - t / b) (t / (M b))^M`` (at ``u = 1 - M b / t``), a union bound over the ``n_blocks``
    blocks, solved for ``t`` by bisection.

    Parameters
    ----------
    block : int
        ``M >= 1``, terms per block.
    n_blocks : int
        Number of blocks (``>= 1``).
    scale : float
        ``b >= 0`` (0: the bound is 0).
    failure : float
        In (0, 1).

    Returns
    -------
    float
        The bound ``E``.
    """
    if scale == 0.0:
        return 0.0
    m = float(block)
    target = math.log(failure / n_blocks)

    def log_tail(t: float) -> float:  # in units of b, for t > M
        return m - t + m * math.log(t / m)

    lo, hi = m, 2.0 * m + 1.0
    while log_tail(hi) > target:
        hi *= 2.0
    for _ in range(100):
        mid = (lo + hi) / 2.0
        if log_tail(mid) <= target:
            hi = mid
        else:
            lo = mid
    return hi * scale


def noise_margin(multiple: float, noise_scale: float, n_cells: int, weights: np.ndarray) -> float:
    """``multiple`` standard deviations of the noise in the gap between the two lightest groups' CDFs at mid-grid.

    Each group's CDF at a cut is a partial sum of about ``n_cells / 2`` Laplace(``b``) entries divided by its
    private weight ``w_a`` (standard deviation ``b sqrt(n_cells) / w_a``), so the gap between the two lightest
    groups has standard deviation ``b sqrt(n_cells) sqrt(1 / w_1^2 + 1 / w_2^2)``.  Released quantities only.

    Parameters
    ----------
    multiple : float
        How many standard deviations (``>= 0``).
    noise_scale : float
        The table's Laplace scale ``b`` (0: no noise).
    n_cells : int
        Cells of the program (after pooling).
    weights : ndarray of shape (n_groups,)
        Private group weights.

    Returns
    -------
    float
        The margin; 0 without noise or with fewer than two groups of positive weight.
    """
    present = np.sort(weights[weights > 0])
    if multiple == 0.0 or noise_scale == 0.0 or present.size < 2:
        return 0.0
    return multiple * noise_scale * math.sqrt(n_cells) * math.sqrt(1.0 / present[0] ** 2 + 1.0 / present[1] ** 2)
