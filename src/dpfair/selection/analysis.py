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
* ``m = 1``, finite epsilon (exact): with weights ``w = exp(epsilon * R / 2)`` and
  ``S`` the others' total weight, ``1 / (w + S) = int_0^inf exp(-t (w + S)) dt``, so
  ``pi(rho) = int_0^inf w exp(-t w) L(t)**(n-1) dt`` with the Laplace transform
  ``L(t) = E exp(-t w(R))``.  We integrate over ``s = log t`` with the trapezoidal rule,
  which converges exponentially fast for this smooth, doubly-exponentially decaying
  integrand (step 0.2: error below 1e-13; checked against enumeration in the tests).
* ``epsilon = inf`` (exact, any m): the top-m rule with uniform tie-breaking. Given
  ``a`` others strictly above ``rho`` and ``b`` tied with it, ``i`` is selected with
  probability ``min(1, (m - a) / (b + 1))`` when ``a < m``; we sum over the trinomial law
  of ``(a, b)``.  (The paper's ``W_i = 1/|S_max|`` is the ``m = 1`` form; the limit of
  ``W_{i, eps}`` for ``m > 1`` is ``|S_i cap S_max| / |S_max|``, which is what this computes.)
* ``m > 1``, finite epsilon: ``pi = x e_{m-1}(O) / (e_m(O) + x e_{m-1}(O))`` where ``O`` are
  the others' weights and ``e_k`` the elementary symmetric polynomials.  When the number of
  multisets of others' scores is at most ``max_configurations`` we sum exactly over them
  (multinomial weights); otherwise we use Monte Carlo over the others' scores with the
  exact conditional inclusion probability (a Rao-Blackwellized estimator, common random
  numbers across epsilon) and report its standard error.
"""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import optimize
from scipy.special import gammaln, logsumexp

from dpfair._validation import as_finite_array, check_int

__all__ = ["Estimate", "SelectionProblem"]


@dataclass(frozen=True)
class Estimate:
    """A computed quantity with its standard error (0 when exact).

    Attributes
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


def _log_esp_binomial_factors(log_w: np.ndarray, counts: np.ndarray, degree: int) -> np.ndarray:
    """log e_k, k = 0..degree, of a multiset with ``counts[c, j]`` copies of weight ``exp(log_w[j])``.

    Product over categories of ``(1 + w_j z)^{c_j}`` truncated at ``degree``.  Computed in the
    linear domain when no product of ``degree`` weights can underflow (weights are <= 1),
    else in log space.
    """
    n_conf = counts.shape[0]
    max_count = int(counts.max()) if counts.size else 0
    binom = np.array([[math.comb(c, k) for k in range(degree + 1)] for c in range(max_count + 1)], dtype=float)
    if degree * float(-log_w.min()) < 600.0:
        w = np.exp(log_w)
        poly = np.zeros((n_conf, degree + 1))
        poly[:, 0] = 1.0
        for j in range(log_w.size):
            c = counts[:, j]
            if not c.any():
                continue
            factor = binom[c] * w[j] ** np.arange(degree + 1)  # C(c, k) w^k
            new = np.zeros_like(poly)
            for k in range(degree + 1):
                new[:, k:] += factor[:, k : k + 1] * poly[:, : degree + 1 - k]
            poly = new
        with np.errstate(divide="ignore"):
            return np.log(poly)
    log_binom = np.where(binom > 0, np.log(np.maximum(binom, 1e-300)), -np.inf)
    poly = np.full((n_conf, degree + 1), -np.inf)
    poly[:, 0] = 0.0
    for j in range(log_w.size):
        c = counts[:, j]
        if not c.any():
            continue
        factor = log_binom[c] + np.arange(degree + 1) * log_w[j]
        new = np.full_like(poly, -np.inf)
        for k in range(degree + 1):
            new[:, k:] = np.logaddexp(new[:, k:], factor[:, k : k + 1] + poly[:, : degree + 1 - k])
        poly = new
    return poly


def _log_esp_items(log_w: np.ndarray, degree: int) -> np.ndarray:
    """log e_k, k = 0..degree, of each row of item log-weights (shape (K, n_items)); weights <= 1."""
    k_rows = log_w.shape[0]
    if degree * float(-log_w.min()) < 600.0:
        w = np.exp(log_w)
        poly = np.zeros((k_rows, degree + 1))
        poly[:, 0] = 1.0
        for j in range(w.shape[1]):
            poly[:, 1:] = poly[:, 1:] + w[:, j : j + 1] * poly[:, :-1]
        with np.errstate(divide="ignore"):
            return np.log(poly)
    poly = np.full((k_rows, degree + 1), -np.inf)
    poly[:, 0] = 0.0
    for j in range(log_w.shape[1]):
        shifted = np.concatenate([np.full((k_rows, 1), -np.inf), poly[:, :-1] + log_w[:, j : j + 1]], axis=1)
        poly = np.logaddexp(poly, shifted)
    return poly


def _compositions(total: int, parts: int) -> np.ndarray:
    """Every vector of ``parts`` non-negative integers summing to ``total`` (stars and bars)."""
    bars = np.array(list(itertools.combinations(range(total + parts - 1), parts - 1)), dtype=np.int64)
    if parts == 1:
        return np.full((1, 1), total, dtype=np.int64)
    edges = np.concatenate([np.full((bars.shape[0], 1), -1), bars, np.full((bars.shape[0], 1), total + parts - 1)], axis=1)
    return np.diff(edges, axis=1) - 1


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
    score_bounds : (float, float), default (0, 1)
        Declared score range; the exponential mechanism uses utility sensitivity
        ``(hi - lo) / m`` for the mean score.
    max_configurations : int, default 200,000
        Largest number of multisets of the others' scores enumerated exactly for m > 1.
    n_mc_samples : int, default 40,000
        Monte Carlo samples when enumeration is too large.
    random_state : int, default 0
        Seed of the Monte Carlo samples (fixed: the curves are deterministic functions of
        epsilon, which root finding needs).
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
        grid = as_finite_array(score_values, "score_values", ndim=1)
        pmf = as_finite_array(joint_pmf, "joint_pmf", ndim=3)
        if pmf.shape != (2, 2, grid.size):
            raise ValueError(f"joint_pmf must have shape (2, 2, {grid.size}) (groups, labels, scores); got {pmf.shape}.")
        if (pmf < 0).any() or not math.isclose(pmf.sum(), 1.0, abs_tol=1e-9):
            raise ValueError(f"joint_pmf must be non-negative and sum to 1 (sums to {pmf.sum():.12g}).")
        if np.unique(grid).size != grid.size:
            raise ValueError("score_values must be distinct.")
        lo, hi = score_bounds
        if not (lo < hi) or grid.min() < lo or grid.max() > hi:
            raise ValueError(f"score_values must lie inside score_bounds={score_bounds}.")
        for a in range(2):
            if pmf[a, 1].sum() <= 0:
                raise ValueError(f"group {a} has no qualified applicants (P(A={a}, Y=1) = 0); gamma is undefined.")
        order = np.argsort(grid)
        self.score_values = grid[order]
        self.joint_pmf = pmf[:, :, order] / pmf.sum()
        self.n_applicants = check_int(n_applicants, "n_applicants", minimum=2)
        self.score_bounds = (float(lo), float(hi))
        self.max_configurations = check_int(max_configurations, "max_configurations", minimum=1)
        self.n_mc_samples = check_int(n_mc_samples, "n_mc_samples", minimum=100)
        self.random_state = random_state
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
        """
        from dpfair.datasets import load_fico

        fico = load_fico(data_home=data_home, download=download)
        if len(groups) != 2 or len(group_probabilities) != 2:
            raise ValueError("groups and group_probabilities must have two entries each.")
        probs = np.asarray(group_probabilities, dtype=float)
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
        """
        r = as_finite_array(scores, "scores", ndim=1)
        g = np.asarray(groups.to_numpy() if hasattr(groups, "to_numpy") else groups)
        y = as_finite_array(labels, "labels", ndim=1)
        if not (r.size == g.size == y.size):
            raise ValueError("scores, groups and labels must have the same length.")
        if not np.isin(y, (0, 1)).all():
            raise ValueError("labels must be 0 or 1.")
        group_values = np.unique(g)
        if group_values.size != 2:
            raise ValueError(f"groups must take exactly two values, got {group_values.size}.")
        grid, r_index = np.unique(r, return_inverse=True)
        a_index = np.searchsorted(group_values, g)
        joint = np.zeros((2, 2, grid.size))
        np.add.at(joint, (a_index, y.astype(int), r_index), 1.0)
        return cls(grid, joint / r.size, n_applicants, **kwargs)

    # ------------------------------------------------------------------ core: pi_m(rho; eps)
    def _log_weights(self, epsilon: float, n_select: int) -> np.ndarray:
        lo, hi = self.score_bounds
        # eq. (6): exp(eps * mean / (2 * (hi - lo)/m)) = exp(eps * sum_j R_j / (2 (hi - lo)))
        return epsilon * (self.score_values - self.score_values.max()) / (2.0 * (hi - lo))

    def _pi_laplace(self, epsilon: float) -> np.ndarray:
        """m = 1, finite epsilon: the Laplace-transform integral (exact to ~1e-13)."""
        w = np.exp(self._log_weights(epsilon, 1))
        support = self.f_r > 0
        w_min = max(float(w.min()), 1e-300)
        s = np.arange(math.log(1e-20), math.log(80.0) - math.log(w_min) + 0.2, 0.2)
        t = np.exp(s)
        transform = np.exp(-np.outer(t, w[support])) @ self.f_r[support]  # L(t)
        power = transform ** (self.n_applicants - 1)
        integrand = w[None, :] * t[:, None] * np.exp(-np.outer(t, w)) * power[:, None]
        return np.trapezoid(integrand, s, axis=0)

    def _pi_infinity(self, n_select: int) -> np.ndarray:
        """epsilon = inf: top-m with uniform ties, exact for any m."""
        n, m = self.n_applicants, n_select
        cdf = np.cumsum(self.f_r)
        p_equal = self.f_r
        p_below = cdf - p_equal
        p_above = np.clip(1.0 - cdf, 0.0, 1.0)
        out = np.zeros_like(p_equal)
        others = n - 1
        for above in range(min(m, others + 1)):
            for tied in range(others - above + 1):
                below = others - above - tied
                log_coef = gammaln(others + 1) - gammaln(above + 1) - gammaln(tied + 1) - gammaln(below + 1)
                with np.errstate(divide="ignore", invalid="ignore"):
                    prob = np.exp(
                        log_coef
                        + np.where(above > 0, above * np.log(p_above), 0.0)
                        + np.where(tied > 0, tied * np.log(p_equal), 0.0)
                        + np.where(below > 0, below * np.log(p_below), 0.0)
                    )
                out += np.nan_to_num(prob) * min(1.0, (m - above) / (tied + 1))
        return out

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
        key = (self.random_state, self.n_mc_samples)
        if key not in self._mc_cache:
            rng = np.random.default_rng(self.random_state)
            self._mc_cache[key] = rng.choice(self.score_values.size, size=(self.n_mc_samples, self.n_applicants - 1), p=self.f_r)
        return self._mc_cache[key]

    def _pi_monte_carlo(self, epsilon: float, n_select: int) -> np.ndarray:
        """Per-sample exact conditional inclusion probabilities, shape (n_mc_samples, n_scores)."""
        log_x = self._log_weights(epsilon, n_select)
        idx = self._mc_scores()
        poly = _log_esp_items(log_x[idx], n_select)
        return self._pi_from_log_esp(log_x, poly[:, n_select - 1], poly[:, n_select])

    def _functional(self, epsilon: Any, n_select: int, coefficients: np.ndarray) -> Estimate:
        """``sum_rho pi_m(rho; eps) * coefficients[rho]`` for each epsilon."""
        m = check_int(n_select, "n_select", minimum=1)
        if m >= self.n_applicants:
            raise ValueError(f"n_select must be < n_applicants ({self.n_applicants}), got {m}.")
        eps_arr = np.atleast_1d(np.asarray(epsilon, dtype=float))
        if np.isnan(eps_arr).any() or (eps_arr < 0).any():
            raise ValueError("epsilon must be >= 0 (0 is uniform selection; inf is the top-m rule), without NaN.")
        values = np.empty(eps_arr.size)
        errors = np.zeros(eps_arr.size)
        method = "closed-form"
        for i, eps in enumerate(eps_arr):
            if math.isinf(eps):
                values[i] = self._pi_infinity(m) @ coefficients
                continue
            if m == 1:
                values[i] = self._pi_laplace(eps) @ coefficients
                method = "laplace-integral"
            elif self._n_configurations() <= self.max_configurations:
                probs, pis = self._pi_enumeration(eps, m)
                values[i] = probs @ (pis @ coefficients)
                method = "enumeration"
            else:
                per_sample = self._pi_monte_carlo(eps, m) @ coefficients
                values[i] = per_sample.mean()
                errors[i] = per_sample.std(ddof=1) / math.sqrt(per_sample.size)
                method = "monte-carlo"
        scalar = np.ndim(epsilon) == 0
        return Estimate(values[0] if scalar else values, errors[0] if scalar else errors, method)

    # ------------------------------------------------------------------ public quantities
    def selection_probability_given_score(self, epsilon: float, n_select: int = 1) -> Estimate:
        """``pi_m(rho; epsilon)`` for every score value: P(selected | own score), averaged over the others."""
        m = check_int(n_select, "n_select", minimum=1)
        if math.isinf(epsilon):
            return Estimate(self._pi_infinity(m), 0.0, "closed-form")
        if m == 1:
            return Estimate(self._pi_laplace(epsilon), 0.0, "laplace-integral")
        if self._n_configurations() <= self.max_configurations:
            probs, pis = self._pi_enumeration(epsilon, m)
            return Estimate(probs @ pis, 0.0, "enumeration")
        per = self._pi_monte_carlo(epsilon, m)
        return Estimate(per.mean(axis=0), per.std(axis=0, ddof=1) / math.sqrt(per.shape[0]), "monte-carlo")

    def fairness_gap(self, epsilon: Any, n_select: int = 1, notion: str = "equal_opportunity") -> Estimate:
        """gamma(epsilon): P(selected | A=0, Y=1) - P(selected | A=1, Y=1) (Definition 4, eq. 1).

        ``notion="demographic_parity"`` gives the appendix's P(selected | A=0) - P(selected | A=1).
        ``epsilon`` may be an array.
        """
        if notion == "equal_opportunity":
            coef = self.f_qualified[0] - self.f_qualified[1]
        elif notion == "demographic_parity":
            coef = self.f_group[0] - self.f_group[1]
        else:
            raise ValueError(f"notion must be 'equal_opportunity' or 'demographic_parity', got {notion!r}.")
        return self._functional(epsilon, n_select, coef)

    def accuracy(self, epsilon: Any, n_select: int = 1) -> Estimate:
        """theta(epsilon): expected fraction of the m selected who are qualified (Definition 5, eq. 8)."""
        m = check_int(n_select, "n_select", minimum=1)
        return self._functional(epsilon, m, self.n_applicants / m * self.p_qualified_score)

    def perfectly_fair_epsilons(
        self, n_select: int = 1, epsilon_max: float = 100.0, *, notion: str = "equal_opportunity", n_grid: int = 120
    ) -> list[float]:
        """Every epsilon_o in (0, epsilon_max] with gamma(epsilon_o) = 0 (bracketing, then Brent's method).

        Sign changes are bracketed on a log-spaced grid from 1e-3 to ``epsilon_max``; a root
        between two grid points closer than the grid spacing can be missed.
        """
        grid = np.geomspace(1e-3, epsilon_max, n_grid)
        gaps = np.asarray(self.fairness_gap(grid, n_select, notion).value)
        roots = []
        for k in np.flatnonzero(np.sign(gaps[:-1]) * np.sign(gaps[1:]) < 0):
            roots.append(
                float(optimize.brentq(lambda e: float(self.fairness_gap(e, n_select, notion)), grid[k], grid[k + 1], xtol=1e-10))
            )
        roots += [float(grid[k]) for k in np.flatnonzero(gaps == 0)]
        return sorted(roots)

    def best_epsilon(self, epsilon_max: float, gamma_max: float, n_select: int = 1, *, n_grid: int = 200) -> float:
        """Corollary 1: the most accurate epsilon <= epsilon_max with |gamma(epsilon)| <= gamma_max.

        Under Assumption 1 (monotone likelihood ratio) accuracy increases with epsilon, so
        the answer is ``epsilon_max`` when it is fair enough, else the largest epsilon with
        ``|gamma| = gamma_max``.  When Assumption 1 fails a warning is issued and the most
        accurate feasible epsilon on a grid (refined by Brent's method) is returned.
        """
        if not (epsilon_max > 0 and gamma_max >= 0):
            raise ValueError("epsilon_max must be > 0 and gamma_max >= 0.")
        if abs(float(self.fairness_gap(epsilon_max, n_select))) <= gamma_max:
            if self.monotone_likelihood_ratio():
                return float(epsilon_max)
        grid = np.concatenate([[0.0], np.geomspace(1e-3, epsilon_max, n_grid)])
        excess = np.abs(np.asarray(self.fairness_gap(grid, n_select).value)) - gamma_max
        if not self.monotone_likelihood_ratio():
            warnings.warn("Assumption 1 (monotone likelihood ratio) fails: searching the grid for the most accurate "
                          "feasible epsilon.", stacklevel=2)
            acc = np.asarray(self.accuracy(grid, n_select).value)
            feasible = np.flatnonzero(excess <= 0)
            return float(grid[feasible[np.argmax(acc[feasible])]])
        last_feasible = np.flatnonzero(excess <= 0).max()
        if last_feasible == grid.size - 1:
            return float(epsilon_max)
        lo, hi = grid[last_feasible], grid[last_feasible + 1]
        return float(optimize.brentq(lambda e: abs(float(self.fairness_gap(e, n_select))) - gamma_max, lo, hi, xtol=1e-10))

    def monotone_likelihood_ratio(self) -> bool:
        """Assumption 1: P(R=rho|Y=1)/P(R=rho|Y=0) is non-decreasing in rho (on the support)."""
        p1 = self.joint_pmf[:, 1].sum(axis=0)
        p0 = self.joint_pmf[:, 0].sum(axis=0)
        # cross-multiplied so zero probabilities need no division: p1[j] p0[k] >= p1[k] p0[j] for j > k
        cross = p1[:, None] * p0[None, :] - p1[None, :] * p0[:, None]
        upper = np.triu_indices(p1.size, 1)
        return bool((cross.T[upper] >= -1e-15).all())

    def theorem_conditions(self, n_select: int = 1) -> dict[str, dict[str, Any]]:
        """The sufficient conditions of Theorems 1/5 (perfect fairness), 2 and 7, with their values.

        Returns a dict keyed by theorem; each entry has the compared values and ``holds``.
        """
        m = check_int(n_select, "n_select", minimum=1)
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
