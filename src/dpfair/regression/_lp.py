r"""The barycenter problem of Algorithm 1, line 10 (Xian et al. 2024, Section 3.3), solved in closed form.

The linear program ``LP({p_a}, {w_a}, alpha)`` of the paper is

    minimize    sum_a w_a sum_{j,l} (v_j - v_l)^2 pi_a(j, l)
    subject to  sum_l pi_a(j, l) = p_a(j)                  (pi_a is a coupling of p_a ...)
                sum_j pi_a(j, l) = q_a(l)                  (... and of the target q_a)
                |sum_{j<=l} (q_a(j) - q(j))| <= alpha / 2  (q_a in the KS ball around q)
                pi_a >= 0, q >= 0, sum_j q(j) = 1

on a grid ``v_1 < ... < v_k``.  :func:`solve_barycenter_lp` solves it exactly with no LP solver,
in ``O(g k log k log(g k))`` time and ``O(g k)`` memory (``g`` groups); the couplings it returns
are sparse (the monotone coupling has at most ``2k - 1`` non-zero cells per group).

Proof sketch (why the closed form is exact)
-------------------------------------------
Write ``beta = alpha / 2``, ``F_a`` for the CDF of ``p_a``, ``Q_a`` for its (left-continuous)
quantile function, ``G`` for the CDF of ``q`` and ``G_a`` for the CDF of ``q_a``, all evaluated at
the ``k - 1`` *cuts* between consecutive grid points (at ``v_k`` every CDF is 1).

1. *The transport cost is separable over cuts.*  On the line the monotone (quantile) coupling is
   optimal for any convex cost of ``v_j - v_l``, so ``W(p_a, q_a) = int_0^1 c(Q_a(t) - Q_{G_a}(t)) dt``.
   Telescoping ``c`` across the cuts between the two quantiles, the level ``t`` pays, at cut ``l``,
   the increment ``c(v_{l+1} - Q_a(t)) - c(v_l - Q_a(t))`` exactly when the cut separates the two
   quantiles, i.e. when ``t`` lies between ``G_a(l)`` and ``F_a(l)``.  Hence
   ``W = sum_l phi_{a,l}(G_a(l))`` where ``phi_{a,l}(h)`` integrates that increment over levels
   between ``h`` and ``F_a(l)``.  For the squared cost its derivative is
   ``phi'_{a,l}(h) = (v_{l+1} - v_l) (2 Q_a(h) - v_l - v_{l+1})``, non-decreasing in ``h``: every
   ``phi_{a,l}`` is convex, piecewise linear, and minimal (zero) at ``F_a(l)``.
2. *The targets follow from the centre.*  Given ``G``, the only constraints on ``G_a`` are
   ``|G_a(l) - G(l)| <= beta`` (and monotonicity), so cut by cut the best value is the projection
   ``G_a(l) = clip(F_a(l), G(l) - beta, G(l) + beta)``; it is monotone in ``l`` whenever ``G`` is, so
   the dropped monotonicity constraints hold.
3. *The centre splits into ``k - 1`` one-dimensional convex problems*
   ``psi_l(g) = sum_a w_a phi_{a,l}(clip(F_a(l), g - beta, g + beta))``.  Read ``g = t`` as a quantile
   level.  By step 1, ``psi'_l(t) = -(v_{l+1} - v_l) D_t'(c_l)`` where ``c_l = (v_l + v_{l+1}) / 2``
   and ``D_t(y) = sum_a w_a dist(y, [Q_a(t - beta), Q_a(t + beta)])^2`` (a window is open to
   ``-inf`` below level 0 and to ``+inf`` above level 1).  So ``psi_l`` decreases while the minimiser
   of ``D_t`` lies left of ``c_l`` and increases once it lies right of it: at every level ``t`` the
   barycenter sits at the grid point nearest the minimiser of ``D_t``, and
   ``G(l) = |{t in [0, 1] : D_t'(c_l) > 0}|`` (any value up to ``|{t : D_t'(c_l) >= 0}|`` is
   optimal too).  At ``beta = 0`` the windows are points and this is the quantile averaging of the
   exact barycenter.  Both sets are prefixes of ``[0, 1]`` that grow with ``l`` (windows move right
   as ``t`` grows, ``D_t'`` grows with ``y``), so ``G`` is monotone and dropping its monotonicity
   lost nothing.
4. *Finitely many levels matter.*  The windows only change at the ``O(g k)`` levels
   ``F_a(j) +- beta``, ``beta`` and ``1 - beta``.  On each interval between consecutive breakpoints
   the windows are fixed and found by binary search in the CDFs; for each cut the number of
   intervals where ``D_t'(c_l) > 0`` (a prefix) is found by a vectorised binary search over the
   intervals, so ``G(l)`` is an interval endpoint, read off exactly.
5. *Couplings.*  Each ``pi_a`` is the monotone (north-west corner) coupling of ``F_a`` and ``G_a``:
   at most ``2k - 1`` non-zero cells.  The objective is its cost.

*Ties.*  Where ``psi_l`` is flat (the windows of all groups with weight contain the cut at a
range of levels; in particular for ``alpha`` large every window is the whole line) the centre ``q``
is not unique.  We break ties deterministically towards the ``alpha = 0`` barycenter ``G_0``:
``G(l) = clip(G_0(l), lower_l, upper_l)`` over the optimal range ``[lower_l, upper_l]``, which stays
monotone.  The objective is unique; the targets of groups with positive weight and their couplings
are unique except at exact numerical ties (e.g. a weighted mean of grid points landing exactly on
the midpoint of two grid points), and a group of weight 0 gets the target closest to its own
distribution.  For ``alpha >= 2`` (or any ``alpha`` leaving every window open) each group keeps its
own distribution and the objective is 0.

The plain LP (scipy's HiGHS on all ``g k^2`` coupling variables) is kept in the tests
(``tests/regression/lp_reference.py``), not in the library: the closed form is tested against it.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import sparse

from dpfair._validation import as_finite_array

__all__ = [
    "MAX_COUPLING_CELLS",
    "BarycenterSolution",
    "solve_barycenter_alpha0",
    "solve_barycenter_lp",
]

#: Largest ``n_groups * n_bins**2`` for which *dense* couplings are built: the dense views
#: ``BarycenterSolution.couplings`` and
#: ``FairRegressionPostProcessor.couplings_`` / ``transport_``.  2**25 cells is 256 MiB per float64
#: array.  The closed-form solver and the fitted post-processor are sparse and have no such limit.
MAX_COUPLING_CELLS = 2**25

_PMF_TOL = 1e-6




def check_alpha(alpha: Any, name: str = "alpha") -> float:
    """``alpha`` as a float in ``[0, 1]`` (a Kolmogorov-Smirnov distance is at most 1)."""
    if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real):
        raise TypeError(f"{name} must be a real number in [0, 1], got {type(alpha).__name__}.")
    value = float(alpha)
    if not (0.0 <= value <= 1.0):  # also refuses NaN
        raise ValueError(f"{name} must be in [0, 1] (a KS distance is at most 1), got {value!r}.")
    return value


def _check_solver_alpha(alpha: Any) -> float:
    """``alpha >= 0`` for the solvers (``inf`` allowed: beyond 2 the KS constraint never binds)."""
    if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real):
        raise TypeError(f"alpha must be a real number >= 0, got {type(alpha).__name__}.")
    value = float(alpha)
    if not value >= 0.0:  # also refuses NaN
        raise ValueError(f"alpha must be >= 0 (a KS tolerance), got {value!r}.")
    return value


def check_coupling_size(n_groups: int, k: int, name: str = "n_bins") -> None:
    """Refuse dense couplings of ``n_groups * k**2`` cells beyond :data:`MAX_COUPLING_CELLS`."""
    cells = n_groups * k * k
    if cells > MAX_COUPLING_CELLS:
        raise ValueError(
            f"{name}={k} with {n_groups} group(s) needs n_groups * n_bins**2 = {cells:,} dense coupling cells "
            f"({cells * 8 / 2**30:.1f} GiB per float64 array), above the memory limit of {MAX_COUPLING_CELLS:,} "
            f"cells (dpfair.regression.MAX_COUPLING_CELLS); use the sparse form (sparse_couplings) or fewer bins."
        )


def _check_lp_inputs(pmfs: Any, weights: Any, grid: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Validate the LP's inputs: PMFs (rows on the simplex), weights (>= 0, not all 0), grid (increasing)."""
    pmfs = as_finite_array(pmfs, "pmfs", mode="dtype", allow_bool=True, allow_empty=True)
    if pmfs.ndim != 2 or pmfs.shape[0] == 0 or pmfs.shape[1] == 0:
        raise ValueError(f"pmfs must be a non-empty 2-d array of shape (n_groups, k), got shape {pmfs.shape}.")
    n_groups, k = pmfs.shape
    if (pmfs < 0).any():
        raise ValueError("pmfs must be >= 0: each row is a probability mass function.")
    if not np.allclose(pmfs.sum(axis=1), 1.0, rtol=0.0, atol=_PMF_TOL):
        raise ValueError(f"each row of pmfs must sum to 1 (within {_PMF_TOL:g}); normalize them first.")
    weights = as_finite_array(weights, "weights", mode="dtype", allow_bool=True, allow_empty=True)
    if weights.shape != (n_groups,):
        raise ValueError(f"weights must have shape (n_groups,) = ({n_groups},), got {weights.shape}.")
    if (weights < 0).any() or weights.sum() <= 0:
        raise ValueError("weights must be >= 0 and not all 0 (they weight each group's transport cost).")
    grid = as_finite_array(grid, "grid", mode="dtype", allow_bool=True, allow_empty=True)
    if grid.shape != (k,):
        raise ValueError(f"grid must have shape (k,) = ({k},), one point per column of pmfs, got {grid.shape}.")
    if k > 1 and not (np.diff(grid) > 0).all():
        raise ValueError("grid must be strictly increasing.")
    return pmfs, weights, grid


@dataclass(frozen=True)
class BarycenterSolution:
    """Optimal couplings (sparse), barycenter and targets of the barycenter LP.

    The couplings are stored as coordinate lists, one entry per non-zero cell: entry ``i`` moves
    ``coupling_mass[i]`` from bin ``coupling_source[i]`` to bin ``coupling_target[i]`` in group
    ``coupling_group[i]``.  Entries are sorted by group, then source bin.

    Parameters
    ----------
    barycenter : ndarray of shape (k,)
        The centre ``q`` of the KS ball.
    targets : ndarray of shape (n_groups, k)
        The target PMFs ``q_a`` (column sums of the couplings).
    objective : float
        Optimal value (weighted squared transport cost).
    coupling_group, coupling_source, coupling_target : ndarray of int64, shape (n_entries,)
        Group, source bin and target bin of every non-zero coupling cell.
    coupling_mass : ndarray of shape (n_entries,)
        Mass of every non-zero coupling cell (``> 0``).
    """

    barycenter: np.ndarray
    targets: np.ndarray
    objective: float
    coupling_group: np.ndarray
    coupling_source: np.ndarray
    coupling_target: np.ndarray
    coupling_mass: np.ndarray

    @property
    def n_groups(self) -> int:
        """Number of groups (int): the rows of ``targets``."""
        return int(self.targets.shape[0])

    @property
    def k(self) -> int:
        """Number of grid points (int): the columns of ``targets``."""
        return int(self.targets.shape[1])

    def sparse_couplings(self) -> sparse.csr_array:
        """The couplings as one sparse matrix: row ``a * k + j``, column ``l`` holds ``pi_a(j, l)``.

        Returns
        -------
        scipy.sparse.csr_array of shape (n_groups * k, k)
            The couplings, one row per (group, source bin).
        """
        k = self.k
        return sparse.csr_array(
            (self.coupling_mass, (self.coupling_group * k + self.coupling_source, self.coupling_target)),
            shape=(self.n_groups * k, k),
        )

    @property
    def couplings(self) -> np.ndarray:
        """Dense couplings ``couplings[a, j, l]`` (for small problems).

        Returns
        -------
        ndarray of shape (n_groups, k, k)

        Raises
        ------
        ValueError
            If ``n_groups * k**2`` exceeds :data:`MAX_COUPLING_CELLS`; use :meth:`sparse_couplings`.
        """
        check_coupling_size(self.n_groups, self.k, "k")
        dense = np.zeros((self.n_groups, self.k, self.k))
        np.add.at(dense, (self.coupling_group, self.coupling_source, self.coupling_target), self.coupling_mass)
        return dense


# ---------------------------------------------------------------------------- closed form
def _cdfs(pmfs: np.ndarray) -> np.ndarray:
    """Each row's CDF, renormalised so that it ends at exactly 1 (monotone, in [0, 1])."""
    cdf = np.cumsum(pmfs / pmfs.sum(axis=1, keepdims=True), axis=1)
    np.clip(cdf, 0.0, 1.0, out=cdf)
    cdf[:, -1] = 1.0
    return cdf


def _alpha0_cdf(cdf: np.ndarray, w: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """CDF ``G_0`` of the alpha = 0 barycenter at the k - 1 cuts (step 3 at beta = 0).

    Between consecutive CDF values of all groups every quantile ``Q_a(t)`` is fixed; the level
    goes to the grid point nearest the weighted mean of the quantiles (ties to the left point).
    """
    n_groups, k = cdf.shape
    levels = np.unique(cdf)  # right ends of the pieces of [0, 1] (the last one is 1)
    lengths = np.diff(levels, prepend=0.0)
    mean = np.zeros(levels.size)
    for a in range(n_groups):
        if w[a] > 0:
            mean += w[a] * grid[np.minimum(np.searchsorted(cdf[a], levels, side="left"), k - 1)]
    cuts = (grid[:-1] + grid[1:]) / 2.0
    target = np.searchsorted(cuts, mean, side="left")  # nearest grid point, ties to the left
    return np.cumsum(np.bincount(target, weights=lengths, minlength=k))[: k - 1]


#: Above this many (group, piece) pairs the windows are recomputed in every bisection step instead
#: of being tabulated once (memory O(g k) instead of O(g^2 k)).
_TABULATE_WINDOWS = 2**22


def _windows(levels: np.ndarray, flat_cdf: np.ndarray, n_groups: int, grid: np.ndarray, beta: float) -> tuple:
    """Every group's window ``[Q_a(t - beta), Q_a(t + beta)]`` at the given levels, shape (n_groups, ...).

    ``flat_cdf`` holds the groups' CDFs offset by ``2 a`` so that one ``searchsorted`` serves every
    group; a window is open (``-inf`` / ``+inf``) below level 0 and above level 1.  Every step is
    monotone in the level, so the windows are too, exactly, in floating point.
    """
    k = grid.size
    offsets = 2.0 * np.arange(n_groups).reshape((n_groups,) + (1,) * levels.ndim)
    base = (np.arange(n_groups) * k).reshape(offsets.shape)
    low = levels - beta
    high = levels + beta
    query = np.stack([np.clip(low, 0.0, 1.0) + offsets, np.clip(high, 0.0, 1.0) + offsets])
    ends = grid[np.minimum(np.searchsorted(flat_cdf, query, side="left") - base, k - 1)]
    left = np.where(low > 0.0, ends[0], -np.inf)
    right = np.where(high <= 1.0, ends[1], np.inf)
    return left, right


def _centre_range(cdf: np.ndarray, w: np.ndarray, grid: np.ndarray, beta: float) -> tuple[np.ndarray, np.ndarray]:
    """``(lower_l, upper_l)``: the optimal values of ``G(l)`` at every cut (steps 3-4).

    For every cut the pieces of ``[0, 1]`` where ``D_t'(c_l) > 0`` (resp. ``>= 0``) form a prefix;
    its length is found by bisection over the pieces, all cuts at once.
    """
    n_groups = cdf.shape[0]
    inner = cdf[:, :-1].ravel()
    levels = np.concatenate([inner + beta, inner - beta, [beta, 1.0 - beta, 0.0, 1.0]])
    levels = np.unique(levels[(levels >= 0.0) & (levels <= 1.0)])  # sorted breakpoints, 0 and 1 included
    mids = (levels[:-1] + levels[1:]) / 2.0
    n_pieces = mids.size
    cuts = (grid[:-1] + grid[1:]) / 2.0
    n_cuts = cuts.size
    flat_cdf = (cdf + 2.0 * np.arange(n_groups)[:, None]).ravel()
    tabulated = n_groups * n_pieces <= _TABULATE_WINDOWS
    if tabulated:
        left_all, right_all = _windows(mids, flat_cdf, n_groups, grid, beta)
    # rows 0..n_cuts-1: count pieces with D' > 0 (a prefix); rows n_cuts..: pieces with D' >= 0
    all_cuts = np.concatenate([cuts, cuts])
    lo = np.zeros(2 * n_cuts, dtype=np.int64)
    hi = np.full(2 * n_cuts, n_pieces, dtype=np.int64)
    for _ in range(max(1, int(n_pieces).bit_length())):
        mid = np.minimum((lo + hi) // 2, n_pieces - 1)
        if tabulated:
            left, right = left_all[:, mid], right_all[:, mid]
        else:
            left, right = _windows(mids[mid], flat_cdf, n_groups, grid, beta)
        # D_t'(c) / 2 = sum_a w_a [(c - Q_a(t + beta))^+ - (Q_a(t - beta) - c)^+]
        d = w @ (np.maximum(all_cuts - right, 0.0) - np.maximum(left - all_cuts, 0.0))
        holds = np.concatenate([d[:n_cuts] > 0.0, d[n_cuts:] >= 0.0])
        active = lo < hi
        lo = np.where(active & holds, mid + 1, lo)
        hi = np.where(active & ~holds, mid, hi)
    return levels[lo[:n_cuts]], levels[lo[n_cuts:]]


def _monotone_couplings(cdf: np.ndarray, target_cdf: np.ndarray) -> tuple[np.ndarray, ...]:
    """North-west corner (monotone) coupling of every ``F_a`` with ``G_a``: at most 2k - 1 cells each."""
    n_groups, k = cdf.shape
    parts = []
    for a in range(n_groups):
        levels = np.unique(np.concatenate([cdf[a], target_cdf[a]]))  # right ends of the pieces
        mass = np.diff(levels, prepend=0.0)
        keep = mass > 0
        levels, mass = levels[keep], mass[keep]
        source = np.minimum(np.searchsorted(cdf[a], levels, side="left"), k - 1)
        target = np.minimum(np.searchsorted(target_cdf[a], levels, side="left"), k - 1)
        parts.append((np.full(levels.size, a, dtype=np.int64), source, target, mass))
    return tuple(np.concatenate(column) for column in zip(*parts, strict=True))


def _closed_form(pmfs: np.ndarray, weights: np.ndarray, grid: np.ndarray, alpha: float) -> BarycenterSolution:
    """:func:`solve_barycenter_lp` on validated inputs."""
    n_groups, k = pmfs.shape
    beta = alpha / 2.0
    cdf = _cdfs(pmfs)
    w = weights / weights.sum()
    if k == 1:
        centre = np.ones(1)
        target_cdf = np.ones((n_groups, 1))
    else:
        centre0 = _alpha0_cdf(cdf, w, grid)
        if beta == 0.0:
            centre = centre0
        else:  # ties towards the alpha = 0 barycenter
            lower, upper = _centre_range(cdf, w, grid, beta)
            centre = np.clip(centre0, lower, upper)
        target_cdf = np.concatenate(
            [np.clip(cdf[:, :-1], centre - beta, centre + beta), np.ones((n_groups, 1))], axis=1
        )
        centre = np.append(centre, 1.0)
    group, source, target, mass = _monotone_couplings(cdf, target_cdf)
    objective = float(np.sum(weights[group] * mass * (grid[source] - grid[target]) ** 2))
    return BarycenterSolution(
        barycenter=np.maximum(np.diff(centre, prepend=0.0), 0.0),
        targets=np.maximum(np.diff(target_cdf, axis=1, prepend=0.0), 0.0),
        objective=objective,
        coupling_group=group, coupling_source=source, coupling_target=target, coupling_mass=mass,
    )


def solve_barycenter_lp(pmfs: np.ndarray, weights: np.ndarray, grid: np.ndarray, alpha: float) -> BarycenterSolution:
    """Solve the barycenter LP of Algorithm 1, line 10, exactly and without an LP solver.

    The KS-relaxed fixed-support barycenter problem splits, in CDF variables, into ``k - 1``
    one-dimensional convex problems whose minimisers are read off the groups' quantile windows
    ``[Q_a(t - alpha/2), Q_a(t + alpha/2)]``; the couplings are monotone.  The module docstring of
    ``dpfair.regression._lp`` gives the proof sketch and the tie-breaking rule (flat regions go
    towards the ``alpha = 0`` barycenter).  Time ``O(g k log k log(g k))``, memory ``O(g k)``; no
    dense ``k x k`` array is built.

    Parameters
    ----------
    pmfs : array-like of shape (n_groups, k)
        Group PMFs on ``grid``: finite, ``>= 0``, each row summing to 1 (within 1e-6; rows are
        renormalised to sum to exactly 1).
    weights : array-like of shape (n_groups,)
        Group weights ``w_a``: finite, ``>= 0``, not all 0.
    grid : array-like of shape (k,)
        Bin midpoints, finite and strictly increasing.
    alpha : float
        Fairness tolerance (KS distance between the targets), ``>= 0`` (``inf`` allowed; past 2 the
        constraint never binds and every group keeps its own distribution).

    Returns
    -------
    BarycenterSolution
        Sparse optimal couplings, the barycenter (the centre of the KS ball), the group targets and
        the optimal objective.

    Raises
    ------
    ValueError
        If an input is outside the domain above or shapes disagree.
    TypeError
        If an input is not real-valued.

    Examples
    --------
    >>> import numpy as np
    >>> sol = solve_barycenter_lp([[1.0, 0.0], [0.0, 1.0]], [0.5, 0.5], [0.0, 1.0], 0.0)
    >>> sol.objective, sol.barycenter.tolist()
    (0.5, [1.0, 0.0])
    """
    pmfs, weights, grid = _check_lp_inputs(pmfs, weights, grid)
    return _closed_form(pmfs, weights, grid, _check_solver_alpha(alpha))


def solve_barycenter_alpha0(pmfs: np.ndarray, weights: np.ndarray, grid: np.ndarray) -> BarycenterSolution:
    """Exact barycenter for ``alpha = 0``: quantile averaging (:func:`solve_barycenter_lp` at 0).

    Every level ``t`` of the groups' quantile functions goes to the grid point nearest the
    weighted mean ``sum_a w_a Q_a(t) / sum_a w_a`` (ties to the left point); all targets equal the
    barycenter.

    Parameters
    ----------
    pmfs : array-like of shape (n_groups, k)
        Group PMFs on ``grid``: finite, ``>= 0``, each row summing to 1 (within 1e-6).
    weights : array-like of shape (n_groups,)
        Group weights ``w_a``: finite, ``>= 0``, not all 0.
    grid : array-like of shape (k,)
        Bin midpoints, finite and strictly increasing.

    Returns
    -------
    BarycenterSolution
        The monotone couplings, the ``alpha = 0`` barycenter (every target equals it) and the
        optimal objective.

    Raises
    ------
    ValueError
        If an input is outside the domain above or shapes disagree.
    TypeError
        If an input is not real-valued.
    """
    pmfs, weights, grid = _check_lp_inputs(pmfs, weights, grid)
    return _closed_form(pmfs, weights, grid, 0.0)
