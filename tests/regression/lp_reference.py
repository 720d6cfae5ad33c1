"""Exact LP references for the closed-form barycenter solver (tests and benchmarks only, not the library).

* :func:`solve_barycenter_lp_reference`: the whole barycenter LP of Algorithm 1, line 10, in scipy's
  HiGHS (every coupling cell a variable), in the CDF variables of ``dpfair.regression._lp``.
* :func:`solve_barycenter_column_generation`: the previous library solver (before the closed form),
  certified column generation over ``highspy`` (a test-extra dependency, imported only when called).

Imported by ``tests/regression`` and ``tests/property`` and by ``benchmarks/bench_regression.py``
(which put this folder on ``sys.path``).  The LP reference stays here, out of the library path: the library needs no LP solver.
"""

from __future__ import annotations

import math
import numbers

import numpy as np
from scipy import optimize, sparse

from dpfair.regression._lp import (
    BarycenterSolution,
    _check_lp_inputs,
    _check_solver_alpha,
    _closed_form,
    check_alpha,
    check_coupling_size,
)

__all__ = ["solve_barycenter_column_generation", "solve_barycenter_lp_reference"]


def _from_dense(couplings: np.ndarray, barycenter: np.ndarray, objective: float) -> BarycenterSolution:
    group, source, target = np.nonzero(couplings > 0)
    mass = couplings[group, source, target]
    return BarycenterSolution(barycenter, couplings.sum(axis=1), objective, group, source, target, mass)


def _solve_full_lp(pmfs: np.ndarray, weights: np.ndarray, grid: np.ndarray, alpha: float) -> BarycenterSolution:
    """The whole LP with scipy's HiGHS (dual simplex), every coupling cell a variable."""
    n_groups, k = pmfs.shape
    ga, gj, gl = (idx.ravel() for idx in np.meshgrid(np.arange(n_groups), np.arange(k), np.arange(k), indexing="ij"))
    n_pi = ga.size
    n_var = n_pi + n_groups * k + k  # pi, G_a, G
    cost = (grid[gj] - grid[gl]) ** 2 * weights[ga]
    c = np.concatenate([cost, np.zeros(n_groups * k + k)])
    r = np.arange(k)
    g_a = n_pi + np.arange(n_groups * k).reshape(n_groups, k)
    g = n_pi + n_groups * k + r
    # equality rows: [row sums (a, j)] [column sums (a, l) = G_a(l) - G_a(l-1)] [G(k) = 1]
    rows = [ga * k + gj, n_groups * k + ga * k + gl,
            n_groups * k + (np.arange(n_groups)[:, None] * k + r).ravel(),
            n_groups * k + (np.arange(n_groups)[:, None] * k + r[1:]).ravel(),
            np.array([2 * n_groups * k])]
    cols = [np.arange(n_pi), np.arange(n_pi), g_a.ravel(), g_a[:, :-1].ravel(), g[-1:]]
    vals = [np.ones(n_pi), np.ones(n_pi), -np.ones(n_groups * k), np.ones(n_groups * (k - 1)), np.ones(1)]
    a_eq = sparse.csr_array(
        (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(2 * n_groups * k + 1, n_var)
    )
    b_eq = np.concatenate([pmfs.ravel(), np.zeros(n_groups * k), [1.0]])
    # inequality rows: G_a - G <= alpha/2, G - G_a <= alpha/2, G(l-1) - G(l) <= 0
    ks = np.arange(n_groups * k)
    g_rep = np.tile(g, n_groups)
    mono = 2 * n_groups * k + np.arange(k - 1)
    rows_ub = [ks, ks, n_groups * k + ks, n_groups * k + ks, mono, mono]
    cols_ub = [g_a.ravel(), g_rep, g_a.ravel(), g_rep, g[:-1], g[1:]]
    vals_ub = [np.ones(n_groups * k), -np.ones(n_groups * k), -np.ones(n_groups * k), np.ones(n_groups * k),
               np.ones(k - 1), -np.ones(k - 1)]
    a_ub = sparse.csr_array(
        (np.concatenate(vals_ub), (np.concatenate(rows_ub), np.concatenate(cols_ub))),
        shape=(2 * n_groups * k + k - 1, n_var),
    )
    b_ub = np.concatenate([np.full(2 * n_groups * k, min(alpha, 2.0) / 2.0), np.zeros(k - 1)])
    bounds = np.zeros((n_var, 2))
    bounds[:, 1] = np.inf
    bounds[n_pi:, 1] = 1.0  # CDF values
    res = optimize.linprog(
        c, A_ub=a_ub, b_ub=b_ub, A_eq=a_eq, b_eq=b_eq, bounds=bounds, method="highs-ds",
        options={"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10},
    )
    if res.status != 0:
        raise RuntimeError(f"HiGHS did not solve the barycenter LP: status {res.status} ({res.message}).")
    couplings = np.clip(res.x[:n_pi], 0.0, None).reshape(n_groups, k, k)
    cdf = res.x[n_pi + n_groups * k :]
    return _from_dense(couplings, np.clip(np.diff(cdf, prepend=0.0), 0.0, None), float(res.fun))


def solve_barycenter_lp_reference(pmfs: np.ndarray, weights: np.ndarray, grid: np.ndarray, alpha: float) -> BarycenterSolution:
    """Solve the full LP with HiGHS (all k*k coupling variables per group): the reference.

    Slow (seconds at ``k = 180``): the exact reference ``solve_barycenter_lp`` is tested and
    benchmarked against, not a production path.

    Parameters
    ----------
    pmfs : array-like of shape (n_groups, k)
        Group PMFs on ``grid``: finite, ``>= 0``, each row summing to 1 (within 1e-6).
    weights : array-like of shape (n_groups,)
        Group weights ``w_a``: finite, ``>= 0``, not all 0.
    grid : array-like of shape (k,)
        Bin midpoints, finite and strictly increasing.
    alpha : float
        Fairness tolerance (KS distance between the targets), ``>= 0``; values past 2 never bind.

    Returns
    -------
    BarycenterSolution
        The optimal couplings, the barycenter (the centre of the KS ball), the group targets
        and the optimal objective.

    Raises
    ------
    ValueError
        If a PMF is negative or does not sum to 1, the weights are negative or all 0, the grid is not
        strictly increasing, ``alpha`` is negative, shapes disagree, or the problem exceeds
        ``MAX_COUPLING_CELLS``.
    TypeError
        If an argument is not real-valued.
    RuntimeError
        If HiGHS fails (numerical trouble); not expected.
    """
    pmfs, weights, grid = _check_lp_inputs(pmfs, weights, grid)
    alpha = _check_solver_alpha(alpha)
    check_coupling_size(*pmfs.shape, "k")
    return _solve_full_lp(pmfs, weights, grid, alpha)


def _monotone_support(p: np.ndarray, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Cells (j, l) of the monotone (north-west corner) coupling of p and q on a common grid."""
    cp = np.cumsum(p)
    cq = np.cumsum(q)
    cuts = np.unique(np.concatenate([cp, cq]))
    cuts = cuts[cuts > 1e-15]
    mids = cuts - np.diff(np.concatenate([[0.0], cuts])) / 2  # a point inside each piece of [0, 1]
    src = np.minimum(np.searchsorted(cp, mids), p.size - 1)
    dst = np.minimum(np.searchsorted(cq, mids), q.size - 1)
    return src, dst


def solve_barycenter_column_generation(
    pmfs: np.ndarray, weights: np.ndarray, grid: np.ndarray, alpha: float, *, margin: int = 4, tol: float = 1e-11
) -> BarycenterSolution:
    """The previous exact solver (before the closed form): column generation over HiGHS on a band.

    Kept as a second exact reference for tests and benchmarks; needs ``highspy``.  Optimal one-dimensional
    couplings are monotone, so each group's coupling lives near the monotone map from ``p_a``
    to its target.  We start with, for each bin j, the cells between j itself and the image of
    j under the monotone map to the alpha = 0 barycenter (plus ``margin`` cells), solve that
    restricted LP with HiGHS (highspy, warm-started when cells are added), and price every excluded cell
    with the duals: a cell with negative reduced cost ``w_a c(j, l) - u_a(j) - v_a(l)`` is added
    and the LP re-solved.  We stop when the weak-duality bound on the distance to the full
    optimum, ``sum_{a,j} p_a(j) max(0, -min_l reduced_cost[a, j, l])``, is below ``tol``
    (1e-11): the objective is then optimal to ``tol``, a certificate, not a heuristic.

    Parameters
    ----------
    pmfs : array-like of shape (n_groups, k)
        Group PMFs on ``grid``: finite, ``>= 0``, each row summing to 1 (within 1e-6).
    weights : array-like of shape (n_groups,)
        Group weights ``w_a``: finite, ``>= 0``, not all 0.
    grid : array-like of shape (k,)
        Bin midpoints, finite and strictly increasing.
    alpha : float
        Fairness tolerance (KS distance between the targets), in ``[0, 1]``.
    margin : int, default 4
        Extra cells on each side of the initial band (``>= 0``).
    tol : float, default 1e-11
        Stopping tolerance on the duality-gap bound (finite, ``> 0``).

    Returns
    -------
    BarycenterSolution
        The optimal couplings, the barycenter (the centre of the KS ball), the group targets
        and the objective, optimal to within ``tol``.

    Raises
    ------
    ValueError
        If an input is outside the domain above, shapes disagree, or ``n_groups * k**2`` exceeds
        ``MAX_COUPLING_CELLS``.
    TypeError
        If an input is not real-valued.
    RuntimeError
        If HiGHS fails on a valid problem (numerical trouble); not expected.
    """
    pmfs, weights, grid = _check_lp_inputs(pmfs, weights, grid)
    alpha = check_alpha(alpha)
    check_coupling_size(*pmfs.shape, "k")
    if isinstance(margin, bool) or not isinstance(margin, numbers.Integral) or margin < 0:
        raise ValueError(f"margin must be an integer >= 0, got {margin!r}.")
    if isinstance(tol, bool) or not isinstance(tol, numbers.Real) or not (math.isfinite(tol) and tol > 0):
        raise ValueError(f"tol must be a finite number > 0, got {tol!r}.")
    n_groups, k = pmfs.shape
    exact0 = _closed_form(pmfs, weights, grid, 0.0)
    if alpha == 0:
        return exact0
    # the alpha = 0 barycenter is the initial guess: each target lies between p_a and it
    guess = exact0.barycenter
    mask = np.zeros((n_groups, k, k), dtype=bool)
    rows = np.arange(k)
    for a in range(n_groups):
        src, dst = _monotone_support(pmfs[a], guess)
        lo = rows.copy()
        hi = rows.copy()
        np.minimum.at(lo, src, dst)
        np.maximum.at(hi, src, dst)
        lo = np.maximum(lo - margin, 0)
        hi = np.minimum(hi + margin, k - 1)
        mask[a] = (rows[None, :] >= lo[:, None]) & (rows[None, :] <= hi[:, None])
    cost = (grid[:, None] - grid[None, :]) ** 2
    lp = _WarmBarycenterLP(pmfs, weights, grid, alpha)
    lp.add_cells(*np.nonzero(mask))
    for _ in range(50):
        objective, u, v = lp.solve()
        reduced = weights[:, None, None] * cost[None] - u[:, :, None] - v[:, None, :]
        # Weak duality: every feasible point of the full LP costs at least the restricted optimum
        # minus sum_{a,j} p_a(j) * max(0, -min_l reduced[a, j, l])  (row j of group a carries p_a(j)).
        gap_bound = float(np.sum(pmfs * np.maximum(0.0, -reduced.min(axis=2))))
        if gap_bound <= tol:
            return lp.solution(objective)
        entering = (reduced < 0) & ~mask
        if not entering.any():  # pragma: no cover - numerically negligible reduced costs only
            return lp.solution(objective)
        mask |= entering
        lp.add_cells(*np.nonzero(entering))
    raise RuntimeError("column generation did not converge in 50 rounds; use solve_barycenter_lp_reference.")


class _WarmBarycenterLP:
    """The LP in HiGHS (highspy), grown column by column with warm starts.

    Columns: ``G_a`` (n_groups*k), ``G`` (k), then coupling cells in the order added.
    Rows: row sums (n_groups*k), column sums (n_groups*k), KS (n_groups*k, two-sided),
    monotonicity of ``G`` (k-1).  Adding cells keeps the basis, so re-solving after pricing
    costs a few simplex iterations instead of a fresh solve.
    """

    def __init__(self, pmfs: np.ndarray, weights: np.ndarray, grid: np.ndarray, alpha: float) -> None:
        import highspy

        self.pmfs, self.weights, self.grid = pmfs, weights, grid
        n_groups, k = pmfs.shape
        self.n_groups, self.k = n_groups, k
        h = highspy.Highs()
        h.setOptionValue("output_flag", False)
        h.setOptionValue("primal_feasibility_tolerance", 1e-10)
        h.setOptionValue("dual_feasibility_tolerance", 1e-10)
        h.setOptionValue("presolve", "off")  # keeps the basis valid across added columns
        inf = highspy.kHighsInf
        n_struct = n_groups * k + k
        lower = np.zeros(n_struct)
        upper = np.ones(n_struct)
        lower[-1] = 1.0  # G(k) = 1
        h.addVars(n_struct, lower, upper)
        r = np.arange(k)
        g_a = (np.arange(n_groups)[:, None] * k + r).ravel()
        g = n_groups * k + r
        # rows: row sums, column sums (with their G_a terms), KS, monotone
        row_lo = np.concatenate([pmfs.ravel(), np.zeros(n_groups * k), np.full(n_groups * k, -alpha / 2), np.zeros(k - 1)])
        row_hi = np.concatenate([pmfs.ravel(), np.zeros(n_groups * k), np.full(n_groups * k, alpha / 2), np.full(k - 1, inf)])
        entries_row, entries_col, entries_val = [], [], []
        col_rows = n_groups * k + g_a
        entries_row += [col_rows, col_rows[(g_a % k) > 0]]
        entries_col += [g_a, g_a[(g_a % k) > 0] - 1]
        entries_val += [-np.ones(g_a.size), np.ones(int(((g_a % k) > 0).sum()))]
        ks_rows = 2 * n_groups * k + g_a
        entries_row += [ks_rows, ks_rows]
        entries_col += [g_a, np.tile(g, n_groups)]
        entries_val += [np.ones(g_a.size), -np.ones(g_a.size)]
        mono = 3 * n_groups * k + np.arange(k - 1)
        entries_row += [mono, mono]
        entries_col += [g[1:], g[:-1]]
        entries_val += [np.ones(k - 1), -np.ones(k - 1)]
        m = sparse.csr_array(
            (np.concatenate(entries_val), (np.concatenate(entries_row), np.concatenate(entries_col))),
            shape=(row_lo.size, n_struct),
        )
        h.addRows(row_lo.size, row_lo, row_hi, m.nnz, m.indptr.astype(np.int32), m.indices.astype(np.int32), m.data)
        self.h = h
        self.n_struct = n_struct
        self.cells = np.zeros((0, 3), dtype=np.int64)
        self.inf = inf

    def add_cells(self, ga: np.ndarray, gj: np.ndarray, gl: np.ndarray) -> None:
        k, n_groups = self.k, self.n_groups
        n_new = ga.size
        cost = self.weights[ga] * (self.grid[gj] - self.grid[gl]) ** 2
        starts = np.arange(0, 2 * n_new, 2, dtype=np.int32)
        rows = np.empty(2 * n_new, dtype=np.int32)
        rows[0::2] = ga * k + gj  # row-sum row
        rows[1::2] = n_groups * k + ga * k + gl  # column-sum row
        self.h.addCols(n_new, cost, np.zeros(n_new), np.full(n_new, self.inf), 2 * n_new, starts, rows, np.ones(2 * n_new))
        self.cells = np.concatenate([self.cells, np.stack([ga, gj, gl], axis=1)])

    def solve(self) -> tuple[float, np.ndarray, np.ndarray]:
        self.h.run()
        status = self.h.getModelStatus()
        if self.h.modelStatusToString(status) != "Optimal":
            raise RuntimeError(f"HiGHS did not solve the barycenter LP: {self.h.modelStatusToString(status)}.")
        sol = self.h.getSolution()
        duals = np.asarray(sol.row_dual)
        nk = self.n_groups * self.k
        row_duals = duals[:nk].reshape(self.n_groups, self.k)
        column_duals = duals[nk : 2 * nk].reshape(self.n_groups, self.k)
        return float(self.h.getInfo().objective_function_value), row_duals, column_duals

    def solution(self, objective: float) -> BarycenterSolution:
        x = np.asarray(self.h.getSolution().col_value)
        n_groups, k = self.n_groups, self.k
        couplings = np.zeros((n_groups, k, k))
        c = self.cells
        couplings[c[:, 0], c[:, 1], c[:, 2]] = np.clip(x[self.n_struct :], 0.0, None)
        cdf = x[n_groups * k : n_groups * k + k]
        return _from_dense(couplings, np.clip(np.diff(cdf, prepend=0.0), 0.0, None), objective)
