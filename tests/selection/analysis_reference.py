"""Frozen copy of dpfair.selection.analysis in its first, slower form (the reference the faster implementation is checked
against to 1e-9 in tests/selection/test_analysis.py, and timed against in benchmarks/bench_selection_analysis.py)."""
# ruff: noqa

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import optimize
from scipy.special import gammaln, logsumexp

from dpfair._estimator import as_sensitive_features
from dpfair._validation import as_finite_array, check_bounds, check_int, check_nonnegative_finite, check_positive_finite
from dpfair.privacy.leaks import warn_privacy_leak
from dpfair.selection._checks import check_epsilon_array, check_n_select
from dpfair.selection._esp import _compositions, _log_esp_binomial_factors, _log_esp_items

__all__ = ["MAX_APPLICANTS", "Estimate", "SelectionProblem"]

#: Largest pool size ``n_applicants`` the exact analysis accepts (the paper uses n = 10).
MAX_APPLICANTS = 1000
#: Past the epsilon where ``C(n, m) * n * exp(-epsilon * d / (2 (hi - lo)))`` (d: the smallest gap
#: between score values) drops below this, every quantity equals its epsilon = inf limit to far
#: better than double precision, and the limit is used (see ``SelectionProblem._at_limit``).
_LIMIT_TOLERANCE = 1e-20


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


class SelectionProblem:
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
            stacklevel=3,
        )
        return problem

    # ------------------------------------------------------------------ core: pi_m(rho; eps)
    def _log_weights(self, epsilon: float, n_select: int) -> np.ndarray:
        lo, hi = self.score_bounds
        # eq. (6): exp(eps * mean / (2 * (hi - lo)/m)) = exp(eps * sum_j R_j / (2 (hi - lo)));
        # the difference is scaled before epsilon multiplies it, so nothing overflows
        return epsilon * ((self.score_values - self.score_values.max()) / (2.0 * (hi - lo)))

    def _pi_laplace(self, epsilon: float) -> np.ndarray:
        """m = 1, finite epsilon: ``pi(rho) = int_0^inf exp(-u) L_rho(u)^(n-1) du`` (exact to ~1e-13).

        ``L_rho(u) = sum_k f_k exp(-u exp(epsilon (R_k - rho) / (2 (hi - lo))))`` holds only weight
        ratios relative to the applicant's own weight, so it neither underflows nor overflows
        (an infinite ratio gives ``exp(-inf) = 0``).  Trapezoidal rule over ``s = log u`` on
        ``[log 1e-20, log 80]``: the truncated tails are below 1e-20 and exp(-80).
        """
        lo, hi = self.score_bounds
        support = self.f_r > 0
        f = self.f_r[support]
        s = np.arange(math.log(1e-20), math.log(80.0) + 0.2, 0.2)
        u = np.exp(s)
        grid = self.score_values
        out = np.empty(grid.size)
        block = max(1, 2_000_000 // (u.size * f.size))  # applicants' scores per vectorized block
        for start in range(0, grid.size, block):
            rho = grid[start : start + block]
            gaps = (grid[support][None, :] - rho[:, None]) / (2.0 * (hi - lo))  # in [-1/2, 1/2]
            with np.errstate(over="ignore"):
                ratio = np.exp(epsilon * gaps)  # w_k / w_rho, possibly inf (then exp(-u * inf) = 0)
                transform = np.exp(-u[:, None, None] * ratio[None, :, :]) @ f  # L_rho(u), shape (u, rho)
            integrand = (u * np.exp(-u))[:, None] * transform ** (self.n_applicants - 1)
            out[start : start + block] = np.trapezoid(integrand, s, axis=0)
        return out

    def _pi_infinity(self, n_select: int) -> np.ndarray:
        """epsilon = inf: top-m with uniform ties, exact for any m (trinomial sum over above / tied / below)."""
        n, m = self.n_applicants, n_select
        cdf = np.cumsum(self.f_r)
        p_equal = self.f_r
        p_below = np.clip(cdf - p_equal, 0.0, 1.0)
        p_above = np.clip(1.0 - cdf, 0.0, 1.0)
        out = np.zeros_like(p_equal)
        others = n - 1
        with np.errstate(divide="ignore"):
            log_above, log_equal, log_below = np.log(p_above), np.log(p_equal), np.log(p_below)
        for above in range(min(m, others + 1)):
            tied = np.arange(others - above + 1)[:, None]
            below = others - above - tied
            log_coef = gammaln(others + 1) - gammaln(above + 1) - gammaln(tied + 1) - gammaln(below + 1)
            with np.errstate(invalid="ignore"):
                log_prob = (
                    log_coef
                    + np.where(above > 0, above * log_above, 0.0)[None, :]
                    + np.where(tied > 0, tied * log_equal[None, :], 0.0)
                    + np.where(below > 0, below * log_below[None, :], 0.0)
                )
            prob = np.nan_to_num(np.exp(log_prob))
            out += (prob * np.minimum(1.0, (m - above) / (tied + 1))).sum(axis=0)
        return out

    def _at_limit(self, epsilon: float, n_select: int) -> bool:
        """Whether every quantity at ``epsilon`` equals its ``epsilon = inf`` value to ~1e-20.

        Proof.  Fix the others' scores and the applicant's score.  Let ``G*`` be a subset of
        maximal total score and ``G`` a non-maximal one; order both by score, ``t_1 >= ... >= t_m``
        and ``g_1 >= ... >= g_m``.  The top m dominate, ``t_j >= g_j``, and the totals differ, so
        some ``t_j > g_j``, hence ``t_j - g_j >= d`` (the smallest gap between score values) and
        ``P_eps(G) <= P_eps(G) / P_eps(G*) <= exp(-epsilon d / (2 (hi - lo)))``.  Given the scores,
        ``P_eps`` restricted to the maximal subsets is uniform, as is ``P_inf``, so every event's
        probability changes by at most ``P_eps(non-maximal) <= C(n, m) exp(-epsilon d / (2 (hi - lo)))``;
        so does ``pi_m(rho)`` after averaging, and a functional with coefficients of total
        absolute value ``<= max(2, n / m) <= n`` by at most ``n`` times that.
        """
        if math.isinf(epsilon):
            return True
        lo, hi = self.score_bounds
        if self.score_values.size < 2:
            return True
        gap = float(np.diff(self.score_values).min()) * (1.0 - 1e-9)
        log_bound = (gammaln(self.n_applicants + 1) - gammaln(n_select + 1) - gammaln(self.n_applicants - n_select + 1)
                     + math.log(self.n_applicants) - epsilon * (gap / (2.0 * (hi - lo))))
        return bool(log_bound < math.log(_LIMIT_TOLERANCE))

    def _pi_from_log_esp(self, log_x: np.ndarray, log_e_prev: np.ndarray, log_e_m: np.ndarray) -> np.ndarray:
        # pi = x e_{m-1} / (e_m + x e_{m-1}), rows: configurations, columns: the applicant's score
        num = log_x[None, :] + log_e_prev[:, None]
        return np.exp(num - np.logaddexp(log_e_m[:, None], num))

    def _n_configurations(self) -> int:
        k = int((self.f_r > 0).sum())
        return math.comb(self.n_applicants - 1 + k - 1, k - 1)

    def _pi_enumeration(self, epsilon: float, n_select: int) -> tuple[np.ndarray, np.ndarray]:
        """Exact sum over the multisets of the others' scores: returns (probabilities, pi matrix)."""
        support = np.flatnonzero(self.f_r > 0)
        if self._configurations is None:
            counts = _compositions(self.n_applicants - 1, support.size)
            log_prob = gammaln(self.n_applicants) - gammaln(counts + 1).sum(axis=1) + counts @ np.log(self.f_r[support])
            self._configurations = (counts, np.exp(log_prob - logsumexp(log_prob)))
        counts, probs = self._configurations
        log_x = self._log_weights(epsilon, n_select)
        poly = _log_esp_binomial_factors(log_x[support], counts, n_select)
        pis = self._pi_from_log_esp(log_x, poly[:, n_select - 1], poly[:, n_select])
        return probs, pis

    def _mc_scores(self) -> np.ndarray:
        # keyed by seed and size: changing random_state (as the experiments do per seed) draws new samples
        seed = check_int(self.random_state, "random_state", minimum=0)
        n_samples = check_int(self.n_mc_samples, "n_mc_samples", minimum=100)
        key = (seed, n_samples)
        if key not in self._mc_cache:
            rng = np.random.default_rng(seed)
            self._mc_cache[key] = rng.choice(self.score_values.size, size=(n_samples, self.n_applicants - 1), p=self.f_r)
        return self._mc_cache[key]

    def _pi_monte_carlo(self, epsilon: float, n_select: int) -> np.ndarray:
        """Per-sample exact conditional inclusion probabilities, shape (n_mc_samples, n_scores)."""
        idx = self._mc_scores()
        if self._at_limit(epsilon, n_select):
            # the same samples' exact conditional at epsilon = inf (top m, uniform ties): continuous in epsilon
            k = self.score_values.size
            hist = np.zeros((idx.shape[0], k))
            np.add.at(hist, (np.repeat(np.arange(idx.shape[0]), idx.shape[1]), idx.ravel()), 1.0)
            above = hist[:, ::-1].cumsum(axis=1)[:, ::-1] - hist  # others strictly above each score
            return np.where(above < n_select, np.minimum(1.0, (n_select - above) / (hist + 1.0)), 0.0)
        log_x = self._log_weights(epsilon, n_select)
        poly = _log_esp_items(log_x[idx], n_select)
        return self._pi_from_log_esp(log_x, poly[:, n_select - 1], poly[:, n_select])

    def _pi_terms(self, epsilon: float, n_select: int) -> tuple[np.ndarray | None, np.ndarray, str]:
        """``(weights, matrix, method)``: ``pi_m(.; eps) = weights @ matrix`` (``weights=None``: MC rows)."""
        m = n_select
        if math.isinf(epsilon) or (m > 1 and self._at_limit(epsilon, m) and self._n_configurations() <= self.max_configurations):
            return np.ones(1), self._pi_infinity(m)[None, :], "closed-form"
        if m == 1:
            return np.ones(1), self._pi_laplace(epsilon)[None, :], "laplace-integral"
        if self._n_configurations() <= self.max_configurations:
            probs, pis = self._pi_enumeration(epsilon, m)
            return probs, pis, "enumeration"
        return None, self._pi_monte_carlo(epsilon, m), "monte-carlo"

    def _check_m(self, n_select: Any) -> int:
        return check_n_select(n_select, self.n_applicants, strict=True)

    def _functional(self, epsilon: Any, n_select: int, coefficients: np.ndarray) -> Estimate:
        """``sum_rho pi_m(rho; eps) * coefficients[rho]`` for each epsilon."""
        m = self._check_m(n_select)
        eps_arr = check_epsilon_array(epsilon)
        values = np.empty(eps_arr.size)
        errors = np.zeros(eps_arr.size)
        method = "closed-form"
        for i, eps in enumerate(eps_arr):
            weights, matrix, how = self._pi_terms(float(eps), m)
            if weights is None:
                per_sample = matrix @ coefficients
                values[i] = per_sample.mean()
                errors[i] = per_sample.std(ddof=1) / math.sqrt(per_sample.size)
            else:
                values[i] = weights @ (matrix @ coefficients)
            if how != "closed-form":
                method = how
        scalar = np.ndim(epsilon) == 0
        return Estimate(values[0] if scalar else values, errors[0] if scalar else errors, method)

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

    def fairness_gap(self, epsilon: Any, n_select: int = 1, notion: str = "equal_opportunity") -> Estimate:
        """Compute the fairness gap gamma(epsilon): P(selected | A=0, Y=1) - P(selected | A=1, Y=1) (Definition 4, eq. 1).

        Parameters
        ----------
        epsilon : float or array-like of float
            Privacy parameter(s), each ``>= 0`` (``0``: uniform selection; ``inf``: the top-m rule).
        n_select : int, default=1
            Applicants selected, ``1 <= n_select < n_applicants``.
        notion : {"equal_opportunity", "demographic_parity"}, default="equal_opportunity"
            ``"demographic_parity"`` gives the appendix's P(selected | A=0) - P(selected | A=1).

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
        if notion == "equal_opportunity":
            coef = self.f_qualified[0] - self.f_qualified[1]
        elif notion == "demographic_parity":
            coef = self.f_group[0] - self.f_group[1]
        else:
            raise ValueError(f"notion must be 'equal_opportunity' or 'demographic_parity', got {notion!r}.")
        return self._functional(epsilon, n_select, coef)

    def accuracy(self, epsilon: Any, n_select: int = 1) -> Estimate:
        """Compute the accuracy theta(epsilon): expected fraction of the m selected who are qualified (Definition 5, eq. 8).

        Parameters
        ----------
        epsilon : float or array-like of float
            Privacy parameter(s), each ``>= 0`` (``inf``: the top-m rule).
        n_select : int, default=1
            Applicants selected, ``1 <= n_select < n_applicants``.

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
        return self._functional(epsilon, m, self.n_applicants / m * self.p_qualified_score)

    def perfectly_fair_epsilons(
        self, n_select: int = 1, epsilon_max: float = 100.0, *, notion: str = "equal_opportunity", n_grid: int = 120
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
        grid = np.geomspace(1e-3, epsilon_max, n_grid)
        gaps = np.asarray(self.fairness_gap(grid, m, notion).value)
        roots = []
        for k in np.flatnonzero(np.sign(gaps[:-1]) * np.sign(gaps[1:]) < 0):
            root = optimize.brentq(lambda e: float(self.fairness_gap(e, m, notion)), grid[k], grid[k + 1], xtol=1e-10)
            roots.append(float(root))
        roots += [float(grid[k]) for k in np.flatnonzero(gaps == 0)]
        return sorted(roots)

    def best_epsilon(self, epsilon_max: float, gamma_max: float, n_select: int = 1, *, n_grid: int = 200) -> float:
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
        if abs(float(self.fairness_gap(epsilon_max, m))) <= gamma_max and monotone:
            return float(epsilon_max)
        grid = np.concatenate([[0.0], np.geomspace(1e-3, epsilon_max, n_grid)])
        excess = np.abs(np.asarray(self.fairness_gap(grid, m).value)) - gamma_max
        excess[0] = -gamma_max  # gamma(0) = 0 exactly (uniform selection); rounding must not make it infeasible
        if not monotone:
            warnings.warn("Assumption 1 (monotone likelihood ratio) fails: searching the grid for the most accurate "
                          "feasible epsilon.", stacklevel=2)
            acc = np.asarray(self.accuracy(grid, m).value)
            feasible = np.flatnonzero(excess <= 0)
            return float(grid[feasible[np.argmax(acc[feasible])]])
        last_feasible = np.flatnonzero(excess <= 0).max()
        if last_feasible == grid.size - 1:
            return float(epsilon_max)
        lo, hi = grid[last_feasible], grid[last_feasible + 1]

        def excess_at(e: float) -> float:
            return abs(float(self.fairness_gap(e, m))) - gamma_max

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
