"""Exact fairness and accuracy of exponential-mechanism selection (Khalili et al. 2021).

Model (paper Section 2): ``n`` applicants are i.i.d. draws of ``(A, Y, R)`` from a discrete
joint distribution; ``R`` takes values on a finite grid.  The exponential mechanism selects
``m`` applicants with probability proportional to ``exp(epsilon * sum_{j in G} R_j / 2)``
(eq. 6; the mean utility with sensitivity 1/m on scores in [0, 1]).

For an applicant ``i`` with score ``rho``, let ``pi_m(rho; epsilon)`` be the probability that
``i`` is selected, averaged over the other ``n - 1`` applicants (``E{Z_i | R_i = rho}`` for
``m = 1``, ``E{W_i | R_i = rho}`` for ``m > 1``).  Every quantity of the paper is a linear
functional of ``pi_m``:

* equal opportunity gap (Definition 4, eq. 1): ``gamma = sum_rho pi(rho) (f0(rho) - f1(rho))``
  with ``fa = P(R | A = a, Y = 1)``;
* demographic-parity gap (appendix): the same with ``P(R | A = a)``;
* accuracy (Definition 5, eq. 8): ``theta = (n / m) sum_rho pi(rho) P(R = rho, Y = 1)``.

How ``pi_m`` is computed
------------------------
Exactly where possible: a Laplace integral for ``m = 1`` (an FFT on a score lattice), the top-m rule at
``epsilon = inf`` and past the epsilon where it is provably reached to double precision, an exact sum over the
multisets of the others' scores for ``m > 1``, else Monte Carlo with the exact conditional inclusion probability
(the others' histograms, elementary symmetric polynomials from power sums).  The kernels and the details are in
``dpfair.selection._probabilities``.

Speed and progress
------------------
:meth:`SelectionProblem.best_epsilon` and :meth:`SelectionProblem.perfectly_fair_epsilons`
evaluate a grid of epsilons and refine with Brent's method.  Both quantities a search needs
(``gamma`` and ``theta``) come from one computation of ``pi_m`` per epsilon, and a progress bar
(``rich``, as the CLI's) or a ``progress`` callback reports every evaluation of a search that
takes more than a couple of seconds (``benchmarks/bench_selection_analysis.py`` times them).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import optimize

from dpfair._estimator import as_sensitive_features
from dpfair._validation import as_finite_array, check_bounds, check_int, check_nonnegative_finite, check_positive_finite
from dpfair._warnings import find_stack_level
from dpfair.privacy.leaks import warn_privacy_leak
from dpfair.selection._checks import check_epsilon_array, check_n_select
from dpfair.selection._probabilities import SelectionProbabilities, _blas_controller
from dpfair.selection._progress import ProgressArgument, _SearchProgress

__all__ = ["MAX_APPLICANTS", "Estimate", "SelectionProblem"]

#: Largest pool size ``n_applicants`` the exact analysis accepts (the paper uses n = 10).
MAX_APPLICANTS = 1000


@dataclass(frozen=True)
class Estimate:
    """A computed quantity with its standard error (0 when exact).

    Parameters
    ----------
    value : float or ndarray
        The quantity (an array when several epsilons were asked for).
    standard_error : float or ndarray
        Monte Carlo standard error; 0 for exact methods.
    method : str
        ``"laplace-integral"``, ``"enumeration"``, ``"closed-form"`` or ``"monte-carlo"``.
    """

    value: Any
    standard_error: Any
    method: str

    def __float__(self) -> float:
        return float(self.value)


class SelectionProblem(SelectionProbabilities):
    """Applicants drawn i.i.d. from a discrete joint law of (group A, label Y, score R).

    Parameters
    ----------
    score_values : array-like of shape (n_scores,)
        The score grid (distinct values; the paper normalizes it to [0, 1]).
    joint_pmf : array-like of shape (n_groups, 2, n_scores)
        ``joint_pmf[a, y, j] = P(A = a, Y = y, R = score_values[j])``; sums to 1.
        Exactly two groups (the paper's A in {0, 1}).
    n_applicants : int
        Applicants per selection, ``n``.
    score_bounds : (float, float), default=(0.0, 1.0)
        Declared, finite score range; the exponential mechanism uses utility sensitivity
        ``(hi - lo) / m`` for the mean score.
    max_configurations : int, default=200_000
        Largest number of multisets of the others' scores enumerated exactly for m > 1.
    n_mc_samples : int, default=40_000
        Monte Carlo samples when enumeration is too large.
    random_state : int, default=0
        Seed of the Monte Carlo samples (fixed: the curves are deterministic functions of
        epsilon, which root finding needs).

    Attributes
    ----------
    score_values : ndarray of shape (n_scores,)
        The sorted score grid.
    joint_pmf : ndarray of shape (2, 2, n_scores)
        The joint law, columns in the order of ``score_values``.
    n_applicants, score_bounds, max_configurations, n_mc_samples, random_state
        The constructor's arguments, validated.
    f_r : ndarray of shape (n_scores,)
        ``P(R)``.
    p_qualified_score : ndarray of shape (n_scores,)
        ``P(R, Y = 1)``.
    f_qualified : ndarray of shape (2, n_scores)
        ``P(R | A = a, Y = 1)``.
    f_group : ndarray of shape (2, n_scores)
        ``P(R | A = a)``.

    Raises
    ------
    ValueError
        If the grid is not distinct and inside finite ``score_bounds``, ``joint_pmf`` has the
        wrong shape, is negative or does not sum to 1, a group has no qualified applicants, or
        ``n_applicants`` is not in ``[2, MAX_APPLICANTS]``.
    TypeError
        If an argument is not numeric (strings, booleans, objects are refused).

    Notes
    -----
    ``SelectionProblem`` analyses a *distribution* (public or synthetic); its outputs carry no
    privacy guarantee.  :meth:`from_samples` builds one from data and warns accordingly.
    """

    def __init__(
        self,
        score_values: Any,
        joint_pmf: Any,
        n_applicants: int,
        *,
        score_bounds: tuple[float, float] = (0.0, 1.0),
        max_configurations: int = 200_000,
        n_mc_samples: int = 40_000,
        random_state: int = 0,
    ) -> None:
        grid = as_finite_array(score_values, "score_values", ndim=1, mode="strict")
        pmf = as_finite_array(joint_pmf, "joint_pmf", ndim=3, mode="strict")
        if pmf.shape != (2, 2, grid.size):
            raise ValueError(f"joint_pmf must have shape (2, 2, {grid.size}) (groups, labels, scores); got {pmf.shape}.")
        if (pmf < 0).any() or not math.isclose(pmf.sum(), 1.0, abs_tol=1e-9):
            raise ValueError(f"joint_pmf must be non-negative and sum to 1 (sums to {pmf.sum():.12g}).")
        if np.unique(grid).size != grid.size:
            raise ValueError("score_values must be distinct.")
        lo, hi = check_bounds(score_bounds, "score_bounds")
        if grid.min() < lo or grid.max() > hi:
            raise ValueError(f"score_values must lie inside score_bounds={score_bounds}; declare bounds containing the grid.")
        for a in range(2):
            if pmf[a, 1].sum() <= 0:
                raise ValueError(f"group {a} has no qualified applicants (P(A={a}, Y=1) = 0); gamma is undefined.")
        order = np.argsort(grid)
        self.score_values = grid[order]
        self.joint_pmf = pmf[:, :, order] / pmf.sum()
        self.n_applicants = check_int(n_applicants, "n_applicants", minimum=2)
        if self.n_applicants > MAX_APPLICANTS:
            raise ValueError(f"n_applicants must be <= {MAX_APPLICANTS} (the exact analysis is for small pools), "
                             f"got {self.n_applicants}.")
        self.score_bounds = (float(lo), float(hi))
        self.max_configurations = check_int(max_configurations, "max_configurations", minimum=1)
        self.n_mc_samples = check_int(n_mc_samples, "n_mc_samples", minimum=100)
        self.random_state = check_int(random_state, "random_state", minimum=0)
        self.f_r = self.joint_pmf.sum(axis=(0, 1))  # P(R)
        self.p_qualified_score = self.joint_pmf[:, 1].sum(axis=0)  # P(R, Y = 1)
        self.f_qualified = self.joint_pmf[:, 1] / self.joint_pmf[:, 1].sum(axis=1, keepdims=True)  # P(R | A, Y=1)
        self.f_group = self.joint_pmf.sum(axis=1) / self.joint_pmf.sum(axis=(1, 2))[:, None]  # P(R | A)
        self._mc_cache: dict[tuple[Any, int], np.ndarray] = {}
        self._configurations: tuple[np.ndarray, np.ndarray] | None = None
        self._last_esp_routes: np.ndarray | None = None

    # ------------------------------------------------------------------ constructors
    @classmethod
    def from_fico(
        cls,
        groups: Sequence[str | Mapping[str, float]] = ("white", "black"),
        group_probabilities: Sequence[float] = (0.88, 0.12),
        n_applicants: int = 10,
        *,
        data_home: Any = None,
        download: bool = True,
        **kwargs: Any,
    ) -> SelectionProblem:
        """FICO scores / 100 with ``Y`` = non-default (Hardt et al. 2016 data).

        Parameters
        ----------
        groups : two entries
            Each a FICO group name (``"white"``, ``"black"``, ``"hispanic"``, ``"asian"``) or a
            mapping ``{name: share}`` mixing groups into one (for the paper's White+Hispanic
            group: ``{"white": 0.64, "hispanic": 0.36}``).
        group_probabilities : two floats
            ``P(A = 0)`` and ``P(A = 1)``.
        n_applicants : int, default=10
            Applicants per selection.
        data_home : path, optional
            Where the FICO files live (see :func:`dpfair.datasets.load_fico`).
        download : bool, default=True
            Download the data when missing.
        **kwargs
            Passed to :class:`SelectionProblem`.

        Returns
        -------
        SelectionProblem

        Raises
        ------
        ValueError
            If ``groups`` / ``group_probabilities`` are not two valid entries each.
        DataUnavailableError
            If the data is missing and cannot be downloaded.
        """
        from dpfair.datasets import load_fico

        fico = load_fico(data_home=data_home, download=download)
        if isinstance(groups, str) or len(groups) != 2 or len(group_probabilities) != 2:
            raise ValueError("groups and group_probabilities must have two entries each.")
        probs = as_finite_array(group_probabilities, "group_probabilities", ndim=1, mode="strict")
        if not (np.isclose(probs.sum(), 1.0) and (probs > 0).all()):
            raise ValueError(f"group_probabilities must be positive and sum to 1, got {list(probs)}.")
        joint = np.zeros((2, 2, fico.scores.size))
        for a, group in enumerate(groups):
            mix = {group: 1.0} if isinstance(group, str) else dict(group)
            if not math.isclose(sum(mix.values()), 1.0):
                raise ValueError(f"the shares of group {a} must sum to 1, got {mix}.")
            for name, share in mix.items():
                if name not in fico.groups:
                    raise ValueError(f"unknown FICO group {name!r}; choose from {fico.groups}.")
                p_r = fico.pmf[name].to_numpy()
                p_y = fico.non_default[name].to_numpy()
                joint[a, 1] += probs[a] * share * p_r * p_y
                joint[a, 0] += probs[a] * share * p_r * (1.0 - p_y)
        return cls(fico.scores, joint, n_applicants, **kwargs)

    @classmethod
    def from_samples(cls, scores: Any, groups: Any, labels: Any, n_applicants: int, **kwargs: Any) -> SelectionProblem:
        """Empirical joint law of (group, label, score) from data (two groups; labels 0/1).

        Group 0 is the first of the two sorted group labels.  The score grid is the set of
        observed scores, and the declared ``score_bounds`` (default [0, 1]) must contain it.

        Parameters
        ----------
        scores : array-like of shape (n_rows,)
            Real scores (strings, booleans and objects are refused).
        groups : array-like of shape (n_rows,)
            Group label of every row; exactly two distinct, comparable labels.
        labels : array-like of shape (n_rows,)
            0 / 1 (or booleans): ``Y``.
        n_applicants : int
            Applicants per selection.
        **kwargs
            Passed to :class:`SelectionProblem`.

        Returns
        -------
        SelectionProblem

        Raises
        ------
        ValueError
            If the lengths differ, labels are not 0/1, there are not exactly two groups, or the
            law is invalid (see :class:`SelectionProblem`).
        TypeError
            If an argument has the wrong type.

        Warns
        -----
        PrivacyLeakWarning
            Always: the law, and every quantity computed from it, is an exact function of the rows.
            Use it on public or synthetic data.
        """
        r = as_finite_array(scores, "scores", ndim=1, mode="strict")
        g = as_sensitive_features(groups, r.size, "groups")
        if isinstance(labels, pd.Series | pd.DataFrame):
            labels = labels.to_numpy()
        label_arr = np.asarray(labels) if not isinstance(labels, str | bytes) else labels
        if isinstance(label_arr, np.ndarray) and label_arr.dtype.kind == "b":
            label_arr = label_arr.astype(np.int64)
        y = as_finite_array(label_arr, "labels", ndim=1, mode="strict")
        if y.size != r.size:
            raise ValueError("scores, groups and labels must have the same length (one entry per row).")
        if not np.isin(y, (0, 1)).all():
            raise ValueError("labels must be 0 or 1.")
        group_values = pd.unique(pd.Series(g, dtype=object))
        if group_values.size != 2:
            raise ValueError("groups must take exactly two distinct values (the paper's A in {0, 1}).")
        try:
            group_values = np.asarray(sorted(group_values.tolist()), dtype=object)
        except TypeError:
            raise TypeError("groups must hold two comparable labels (e.g. two strings or two ints).") from None
        grid, r_index = np.unique(r, return_inverse=True)
        a_index = (g == group_values[1]).astype(np.int64)
        joint = np.zeros((2, 2, grid.size))
        np.add.at(joint, (a_index, y.astype(np.int64), r_index), 1.0)
        problem = cls(grid, joint / r.size, n_applicants, **kwargs)
        warn_privacy_leak(
            "SelectionProblem.from_samples builds the exact empirical law of the rows: its gamma, theta and selection "
            "probabilities are noise-free functions of the data. Use it on public or synthetic data only.",
        )
        return problem

    # ------------------------------------------------------------------ pi_m's functionals (pi_m: SelectionProbabilities)
    def _check_m(self, n_select: Any) -> int:
        return check_n_select(n_select, self.n_applicants, strict=True)

    def _functionals(
        self, epsilon: Any, n_select: int, coefficients: Sequence[np.ndarray], tick: Callable[[], None] | None = None
    ) -> list[Estimate]:
        """``sum_rho pi_m(rho; eps) * c[rho]`` for each epsilon and each ``c`` of ``coefficients``: one ``pi_m`` per epsilon.

        ``tick`` (if given) is called after each epsilon.
        """
        m = self._check_m(n_select)
        eps_arr = check_epsilon_array(epsilon)
        values = np.empty((len(coefficients), eps_arr.size))
        errors = np.zeros((len(coefficients), eps_arr.size))
        stacked = np.column_stack(coefficients)
        with _blas_controller().limit(limits=1, user_api="blas"):  # skinny products: threads contend on a busy machine
            self._evaluate_functionals(eps_arr, m, stacked, values, errors, tick)
        method = self._combined_method(eps_arr, m)
        scalar = np.ndim(epsilon) == 0
        return [Estimate(values[c, 0] if scalar else values[c], errors[c, 0] if scalar else errors[c], method)
                for c in range(len(coefficients))]

    def _functional(
        self, epsilon: Any, n_select: int, coefficients: np.ndarray, tick: Callable[[], None] | None = None
    ) -> Estimate:
        """``sum_rho pi_m(rho; eps) * coefficients[rho]`` for each epsilon."""
        return self._functionals(epsilon, n_select, [coefficients], tick)[0]

    def _gap_coefficients(self, notion: str) -> np.ndarray:
        if notion == "equal_opportunity":
            return self.f_qualified[0] - self.f_qualified[1]
        if notion == "demographic_parity":
            return self.f_group[0] - self.f_group[1]
        raise ValueError(f"notion must be 'equal_opportunity' or 'demographic_parity', got {notion!r}.")

    def _accuracy_coefficients(self, n_select: int) -> np.ndarray:
        return self.n_applicants / n_select * self.p_qualified_score

    # ------------------------------------------------------------------ public quantities
    def selection_probability_given_score(self, epsilon: float, n_select: int = 1) -> Estimate:
        """``pi_m(rho; epsilon)``: P(selected | own score = rho), averaged over the others, for every score value.

        Parameters
        ----------
        epsilon : float
            Privacy parameter, ``>= 0`` (``0``: uniform selection; ``inf``: the top-m rule).
        n_select : int, default=1
            Applicants selected, ``1 <= n_select < n_applicants``.

        Returns
        -------
        Estimate
            ``value`` of shape (n_scores,) (in the order of ``score_values``) with its standard error.

        Raises
        ------
        ValueError
            If ``epsilon`` is negative or NaN, or ``n_select`` is out of range.
        TypeError
            If an argument is not a number.
        """
        m = self._check_m(n_select)
        eps = check_epsilon_array(epsilon)
        if eps.size != 1 or np.ndim(epsilon) > 0:
            raise ValueError("epsilon must be one number here; call it once per epsilon.")
        weights, matrix, method = self._pi_terms(float(eps[0]), m)
        if weights is None:
            return Estimate(matrix.mean(axis=0), matrix.std(axis=0, ddof=1) / math.sqrt(matrix.shape[0]), method)
        return Estimate(weights @ matrix, 0.0, method)

    def fairness_gap(
        self, epsilon: Any, n_select: int = 1, notion: str = "equal_opportunity", *, progress: ProgressArgument = None
    ) -> Estimate:
        """Compute the fairness gap gamma(epsilon): P(selected | A=0, Y=1) - P(selected | A=1, Y=1) (Definition 4, eq. 1).

        Parameters
        ----------
        epsilon : float or array-like of float
            Privacy parameter(s), each ``>= 0`` (``0``: uniform selection; ``inf``: the top-m rule).
        n_select : int, default=1
            Applicants selected, ``1 <= n_select < n_applicants``.
        notion : {"equal_opportunity", "demographic_parity"}, default="equal_opportunity"
            ``"demographic_parity"`` gives the appendix's P(selected | A=0) - P(selected | A=1).
        progress : None, bool or callable, default None
            As in :meth:`best_epsilon`: a progress bar over the epsilons once they are projected to take
            over 2 seconds; ``True`` / ``False`` force it; a callable receives ``(done, total)``.

        Returns
        -------
        Estimate
            ``value`` (a float, or an array for array ``epsilon``) with its standard error.

        Raises
        ------
        ValueError
            If ``epsilon`` is negative, NaN, empty or not 1-d, ``n_select`` is out of range, or
            ``notion`` is unknown.
        TypeError
            If ``epsilon`` or ``n_select`` is not numeric.
        """
        coefficients = self._gap_coefficients(notion)
        size = check_epsilon_array(epsilon).size
        with _SearchProgress(progress, f"gamma (n={self.n_applicants}, m={n_select})") as bar:
            bar.expect(size)
            return self._functional(epsilon, n_select, coefficients, bar.tick)

    def accuracy(self, epsilon: Any, n_select: int = 1, *, progress: ProgressArgument = None) -> Estimate:
        """Compute the accuracy theta(epsilon): expected fraction of the m selected who are qualified (Definition 5, eq. 8).

        Parameters
        ----------
        epsilon : float or array-like of float
            Privacy parameter(s), each ``>= 0`` (``inf``: the top-m rule).
        n_select : int, default=1
            Applicants selected, ``1 <= n_select < n_applicants``.
        progress : None, bool or callable, default None
            As in :meth:`fairness_gap`.

        Returns
        -------
        Estimate
            ``value`` (a float, or an array for array ``epsilon``) with its standard error.

        Raises
        ------
        ValueError, TypeError
            As :meth:`fairness_gap`.
        """
        m = self._check_m(n_select)
        size = check_epsilon_array(epsilon).size
        with _SearchProgress(progress, f"theta (n={self.n_applicants}, m={m})") as bar:
            bar.expect(size)
            return self._functional(epsilon, m, self._accuracy_coefficients(m), bar.tick)

    def perfectly_fair_epsilons(
        self, n_select: int = 1, epsilon_max: float = 100.0, *, notion: str = "equal_opportunity", n_grid: int = 120,
        progress: ProgressArgument = None,
    ) -> list[float]:
        """Every epsilon_o in (0, epsilon_max] with gamma(epsilon_o) = 0 (bracketing, then Brent's method).

        Sign changes are bracketed on a log-spaced grid from 1e-3 to ``epsilon_max``; a root
        between two grid points closer than the grid spacing can be missed.

        Parameters
        ----------
        n_select : int, default=1
            Applicants selected, ``1 <= n_select < n_applicants``.
        epsilon_max : float, default=100.0
            Largest epsilon searched (finite, > 1e-3).
        notion : {"equal_opportunity", "demographic_parity"}, default="equal_opportunity"
            Fairness notion (see :meth:`fairness_gap`).
        n_grid : int, default=120
            Grid points (>= 2).
        progress : None, bool or callable, default None
            ``None``: a progress bar (``rich``) once the search is projected to take over 2 seconds;
            ``True``: always; ``False``: never; a callable is called with ``(done, total)`` after every
            evaluation of gamma (the total grows as Brent's method adds evaluations).

        Returns
        -------
        list of float
            The roots found, sorted (empty when gamma never changes sign).

        Raises
        ------
        ValueError, TypeError
            If an argument is out of range or of the wrong type.
        """
        m = self._check_m(n_select)
        epsilon_max = check_positive_finite(epsilon_max, "epsilon_max")
        if epsilon_max <= 1e-3:
            raise ValueError(f"epsilon_max must be > 1e-3 (the search grid starts there), got {epsilon_max!r}.")
        n_grid = check_int(n_grid, "n_grid", minimum=2)
        coef = self._gap_coefficients(notion)
        grid = np.geomspace(1e-3, epsilon_max, n_grid)
        with _SearchProgress(progress, f"perfectly fair epsilons (n={self.n_applicants}, m={m})") as bar:
            bar.expect(n_grid)
            gaps = np.asarray(self._functional(grid, m, coef, bar.tick).value)
            roots = []

            def gap_at(e: float) -> float:
                bar.expect(1)
                return float(self._functional(e, m, coef, bar.tick))

            for k in np.flatnonzero(np.sign(gaps[:-1]) * np.sign(gaps[1:]) < 0):
                roots.append(float(optimize.brentq(gap_at, grid[k], grid[k + 1], xtol=1e-10)))
        roots += [float(grid[k]) for k in np.flatnonzero(gaps == 0)]
        return sorted(roots)

    def best_epsilon(
        self, epsilon_max: float, gamma_max: float, n_select: int = 1, *, n_grid: int = 200,
        progress: ProgressArgument = None,
    ) -> float:
        """Corollary 1: the most accurate epsilon <= epsilon_max with ``|gamma(epsilon)| <= gamma_max``.

        Under Assumption 1 (monotone likelihood ratio) accuracy increases with epsilon, so
        the answer is ``epsilon_max`` when it is fair enough, else the largest epsilon with
        ``|gamma| = gamma_max``.  When Assumption 1 fails a warning is issued and the most
        accurate feasible epsilon on a grid (refined by Brent's method) is returned.

        Parameters
        ----------
        epsilon_max : float
            Largest acceptable epsilon (finite, > 1e-3).
        gamma_max : float
            Largest acceptable ``|gamma|`` (finite, >= 0).
        n_select : int, default=1
            Applicants selected, ``1 <= n_select < n_applicants``.
        n_grid : int, default=200
            Grid points of the search (>= 2).
        progress : None, bool or callable, default None
            ``None``: a progress bar (``rich``) once the search is projected to take over 2 seconds;
            ``True``: always; ``False``: never; a callable is called with ``(done, total)`` after every
            evaluation of ``pi_m`` (one gives both gamma and theta at an epsilon).

        Returns
        -------
        float
            The chosen epsilon.

        Raises
        ------
        ValueError, TypeError
            If an argument is out of range or of the wrong type.

        Warns
        -----
        UserWarning
            When Assumption 1 fails (grid search).
        """
        m = self._check_m(n_select)
        epsilon_max = check_positive_finite(epsilon_max, "epsilon_max")
        if epsilon_max <= 1e-3:
            raise ValueError(f"epsilon_max must be > 1e-3 (the search grid starts there), got {epsilon_max!r}.")
        gamma_max = check_nonnegative_finite(gamma_max, "gamma_max")
        n_grid = check_int(n_grid, "n_grid", minimum=2)
        monotone = self.monotone_likelihood_ratio()
        gap_coef = self._gap_coefficients("equal_opportunity")
        with _SearchProgress(progress, f"best epsilon (n={self.n_applicants}, m={m})") as bar:
            bar.expect(1 if monotone else 0)
            if monotone and abs(float(self._functional(epsilon_max, m, gap_coef, bar.tick))) <= gamma_max:
                return float(epsilon_max)
            grid = np.concatenate([[0.0], np.geomspace(1e-3, epsilon_max, n_grid)])
            bar.expect(grid.size)
            if monotone:
                gap = self._functional(grid, m, gap_coef, bar.tick)
            else:  # gamma and theta from one pi_m per epsilon
                gap, acc_estimate = self._functionals(grid, m, [gap_coef, self._accuracy_coefficients(m)], bar.tick)
            excess = np.abs(np.asarray(gap.value)) - gamma_max
            excess[0] = -gamma_max  # gamma(0) = 0 exactly (uniform selection); rounding must not make it infeasible
            if not monotone:
                warnings.warn("Assumption 1 (monotone likelihood ratio) fails: searching the grid for the most accurate "
                              "feasible epsilon.", stacklevel=find_stack_level())
                acc = np.asarray(acc_estimate.value)
                feasible = np.flatnonzero(excess <= 0)
                return float(grid[feasible[np.argmax(acc[feasible])]])
            last_feasible = np.flatnonzero(excess <= 0).max()
            if last_feasible == grid.size - 1:
                return float(epsilon_max)
            lo, hi = grid[last_feasible], grid[last_feasible + 1]

            def excess_at(e: float) -> float:
                bar.expect(1)
                return abs(float(self._functional(e, m, gap_coef, bar.tick))) - gamma_max

            if excess_at(lo) > 0 or excess_at(hi) <= 0:  # no sign change to refine (e.g. gamma_max = 0 at lo = 0)
                return float(lo)
            return float(optimize.brentq(excess_at, lo, hi, xtol=1e-10))

    def monotone_likelihood_ratio(self) -> bool:
        """Assumption 1: P(R=rho|Y=1)/P(R=rho|Y=0) is non-decreasing in rho (on the support).

        Returns
        -------
        bool
            Whether Assumption 1 holds.
        """
        p1 = self.joint_pmf[:, 1].sum(axis=0)
        p0 = self.joint_pmf[:, 0].sum(axis=0)
        # cross-multiplied so zero probabilities need no division: p1[j] p0[k] >= p1[k] p0[j] for j > k
        cross = p1[:, None] * p0[None, :] - p1[None, :] * p0[:, None]
        upper = np.triu_indices(p1.size, 1)
        return bool((cross.T[upper] >= -1e-15).all())

    def theorem_conditions(self, n_select: int = 1) -> dict[str, dict[str, Any]]:
        """The sufficient conditions of Theorems 1/5 (perfect fairness), 2 and 7, with their values.

        Parameters
        ----------
        n_select : int, default=1
            Applicants selected, ``1 <= n_select < n_applicants``.

        Returns
        -------
        dict
            Keyed by theorem (``"theorem_1_5"``, ``"theorem_2"``, ``"theorem_7"``,
            ``"assumption_1"``); each entry has the compared values and ``holds``.

        Raises
        ------
        ValueError, TypeError
            If ``n_select`` is not an integer in range.
        """
        m = self._check_m(n_select)
        pi_inf = self._pi_infinity(m)
        z = [float(pi_inf @ self.f_qualified[a]) for a in range(2)]
        r = [float(self.score_values @ self.f_qualified[a]) for a in range(2)]
        holds_1 = (z[0] < z[1] and r[0] > r[1]) or (z[1] < z[0] and r[1] > r[0])
        out: dict[str, dict[str, Any]] = {
            "theorem_1_5": {
                "E[selected at eps=inf | A=a, Y=1]": z,
                "E[R | A=a, Y=1]": r,
                "gamma_inf": z[0] - z[1],
                "holds": holds_1,
            }
        }
        diff = self.f_qualified[0] - self.f_qualified[1]
        out["theorem_2"] = {
            "f0 - f1 strictly increasing": bool((np.diff(diff) > 0).all()),
            "f_R strictly decreasing": bool((np.diff(self.f_r) < 0).all()),
            "f0 - f1 >= 0 above the lowest score": bool((diff[1:] >= 0).all()),
        }
        out["theorem_2"]["holds"] = all(out["theorem_2"].values())
        zd = [float(pi_inf @ self.f_group[a]) for a in range(2)]
        rd = [float(self.score_values @ self.f_group[a]) for a in range(2)]
        out["theorem_7"] = {
            "E[selected at eps=inf | A=a]": zd,
            "E[R | A=a]": rd,
            "holds": (zd[0] < zd[1] and rd[0] > rd[1]) or (zd[1] < zd[0] and rd[1] > rd[0]),
        }
        out["assumption_1"] = {"holds": self.monotone_likelihood_ratio()}
        return out
