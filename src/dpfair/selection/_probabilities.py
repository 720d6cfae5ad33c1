"""Selection probabilities ``pi_m(rho; epsilon)`` of the exponential mechanism (Khalili et al. 2021): the numerical kernels.

:class:`SelectionProbabilities` holds the computation of ``pi_m`` for
:class:`~dpfair.selection.SelectionProblem` (which subclasses it and owns the law, the public quantities and the
searches): the Laplace-integral (and FFT on a score lattice) path for ``m = 1``, the closed form at
``epsilon = inf``, exact enumeration of the others' score multisets, and Monte Carlo histograms with the
elementary symmetric polynomials from power sums (compiled kernels in :mod:`dpfair.selection._kernels`).
See :mod:`dpfair.selection.analysis` for the model.

How ``pi_m`` is computed
------------------------
* ``m = 1``, finite epsilon (exact): with weights ``w = exp(epsilon * R / 2)`` and
  ``S`` the others' total weight, ``1 / (w + S) = int_0^inf exp(-t (w + S)) dt``, so
  ``pi(rho) = int_0^inf w exp(-t w) L(t)**(n-1) dt`` with the Laplace transform
  ``L(t) = E exp(-t w(R))``.  Substituting ``u = t w(rho)`` gives
  ``pi(rho) = int_0^inf exp(-u) L_rho(u)**(n-1) du`` with
  ``L_rho(u) = E exp(-u exp(epsilon (R - rho) / 2))``: only weight *ratios* appear, so nothing
  underflows at any epsilon (the old form divided by weights that underflow past epsilon ~ 1e3).
  We integrate over ``s = log u`` with the trapezoidal rule, which converges exponentially fast
  for this smooth, doubly-exponentially decaying integrand (step 0.2: error below 1e-13;
  checked against enumeration in the tests).
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
  numbers across epsilon) and report its standard error.  Each sample enters only through
  its histogram ``c`` over the score grid (the others' scores form a multiset): its ``e_k``
  follow from the power sums ``p_r = c @ w^r`` (one matrix product for all samples) by
  Newton's identities, kept where the identities' unsigned twin bounds their rounding error
  (relative error below ~1e-13 for any ``m``); the other samples (a few dominant scores: the
  identities cancel) split their highest scores off (Newton's identities on the rest, times the
  head's binomial factors) or multiply out ``prod_j (1 + w_j z)^{c_j}`` over the grid's ``k``
  values (no subtraction).  ``O(k m)`` per sample instead of ``O(n m)``, in compiled kernels
  (:mod:`dpfair.selection._kernels`: also the histograms of the draws and the per-sample
  functionals), and the same numbers as the item-by-item recursion to 1e-12 relative (checked
  against it and against sums over every m-subset in the tests).
* Large finite epsilon, ``m > 1``: once ``C(n, m) n exp(-epsilon d / (2 (hi - lo))) < 1e-20``
  (``d`` the smallest gap between score values) the finite-epsilon value provably equals the
  ``epsilon = inf`` value to double precision (see :meth:`SelectionProblem._at_limit`), and
  the limit is computed instead: at such epsilons the weights' rounding errors
  (``epsilon * 1e-16``) would otherwise swamp the result.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
from scipy import signal
from scipy.special import gammaln, logsumexp
from threadpoolctl import ThreadpoolController

from dpfair._validation import check_int
from dpfair.selection._esp import _compositions, _log_esp_binomial_factors

#: Past the epsilon where ``C(n, m) * n * exp(-epsilon * d / (2 (hi - lo)))`` (d: the smallest gap
#: between score values) drops below this, every quantity equals its epsilon = inf limit to far
#: better than double precision, and the limit is used (see ``SelectionProblem._at_limit``).
_LIMIT_TOLERANCE = 1e-20

#: Monte Carlo samples drawn per chunk when building their histograms (bounds the memory of the draw).
_MC_CHUNK_ELEMENTS = 4_000_000

_BLAS: list[ThreadpoolController] = []


def _blas_controller() -> ThreadpoolController:
    """One :class:`threadpoolctl.ThreadpoolController` per process (building it inspects the loaded libraries)."""
    if not _BLAS:
        _BLAS.append(ThreadpoolController())
    return _BLAS[0]


class SelectionProbabilities:
    """``pi_m(rho; epsilon)``: P(selected | own score = rho), averaged over the others, computed exactly or by Monte Carlo.

    A base class of :class:`~dpfair.selection.SelectionProblem`, which sets the attributes below; it holds no
    state of its own.
    """

    score_values: np.ndarray
    score_bounds: tuple[float, float]
    f_r: np.ndarray
    n_applicants: int
    max_configurations: int
    n_mc_samples: int
    random_state: int
    _mc_cache: dict[tuple[Any, int], np.ndarray]
    _configurations: tuple[np.ndarray, np.ndarray] | None
    #: How many samples of the last :meth:`_esp_top_two` took each route of its kernel (Newton, split, product).
    _last_esp_routes: np.ndarray | None

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
        lattice = self._score_lattice()
        if lattice is not None:  # L_rho(u) for every rho at once: a correlation on the lattice (FFT)
            step, index = lattice
            top = int(index.max())
            with np.errstate(over="ignore"):
                ratio = np.exp(epsilon * (step * np.arange(-top, top + 1)) / (2.0 * (hi - lo)))  # by lattice offset
                kernel = np.exp(-u[:, None] * ratio[None, :])  # (u, 2 top + 1)
            mass = np.zeros(top + 1)
            np.add.at(mass, index[support], f)
            # L[i, q] = sum_l mass[l] kernel[i, l - q + top] = (mass * reversed kernel)[top + q]
            full = signal.fftconvolve(mass[None, :], kernel[:, ::-1], mode="full", axes=1)
            transform = np.clip(full[:, top : 2 * top + 1][:, index], 0.0, 1.0)  # (u, rho)
            integrand = (u * np.exp(-u))[:, None] * transform ** (self.n_applicants - 1)
            return np.trapezoid(integrand, s, axis=0)
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

    def _score_lattice(self) -> tuple[float, np.ndarray] | None:
        """``(h, index)`` with ``score_values = score_values[0] + h * index`` (integers), or ``None``.

        A grid on a lattice of at most 4,096 steps (FICO's scores / 100: step 0.005; the case study's: 0.1) lets
        :meth:`_pi_laplace` compute every ``L_rho`` as one correlation; the lattice is checked to ``1e-9`` steps.
        """
        grid = self.score_values
        if grid.size < 2:
            return None
        step = float(np.diff(grid).min())
        index = np.rint((grid - grid[0]) / step)
        if index[-1] > 4096 or not np.allclose(grid[0] + step * index, grid, rtol=0.0, atol=1e-9 * step):
            return None
        return step, index.astype(np.int64)

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

    def _mc_counts(self) -> np.ndarray:
        """Histograms of the Monte Carlo samples of the others' scores: shape (n_mc_samples, n_scores), int32.

        Row ``i`` counts the ``n - 1`` scores of sample ``i``.  The draws are those of
        ``default_rng(random_state).choice(n_scores, size=(n_mc_samples, n - 1), p=P(R))``, which is
        ``cdf.searchsorted(rng.random(size), side="right")`` with ``cdf = cumsum(P(R)) / sum(P(R))``: the same
        uniforms, taken in chunks of rows (the same stream), binned by a compiled kernel
        (:func:`dpfair.selection._kernels.histogram_rows`) without holding the ``(n_mc_samples, n - 1)`` indices;
        cached per ``(random_state, n_mc_samples)``.
        """
        # keyed by seed and size: changing random_state (as the experiments do per seed) draws new samples
        seed = check_int(self.random_state, "random_state", minimum=0)
        n_samples = check_int(self.n_mc_samples, "n_mc_samples", minimum=100)
        key = (seed, n_samples)
        if key not in self._mc_cache:
            from dpfair.selection._kernels import histogram_rows

            rng = np.random.default_rng(seed)
            k, others = self.score_values.size, self.n_applicants - 1
            cdf = np.cumsum(self.f_r)
            cdf /= cdf[-1]
            counts = np.zeros((n_samples, k), dtype=np.int32)
            chunk = max(1, _MC_CHUNK_ELEMENTS // max(others, 1))
            for start in range(0, n_samples, chunk):
                rows = min(chunk, n_samples - start)
                histogram_rows(cdf, rng.random((rows, others)), counts[start : start + rows])
            self._mc_cache[key] = counts
        return self._mc_cache[key]

    def _pi_monte_carlo(self, epsilon: float, n_select: int) -> np.ndarray:
        """Per-sample exact conditional inclusion probabilities, shape (n_mc_samples, n_scores).

        ``e_k`` of a sample's others is the coefficient of ``z^k`` in ``prod_j (1 + w_j z)^{c_j}`` over
        the score values ``j`` with ``c_j`` copies: in the linear domain (when no product of ``m`` weights
        underflows and no ``e_k`` can overflow) from :meth:`_esp_top_two`, otherwise in log space
        (:func:`dpfair.selection._esp._log_esp_binomial_factors`).
        """
        counts = self._mc_counts()
        if self._at_limit(epsilon, n_select):
            # the same samples' exact conditional at epsilon = inf (top m, uniform ties): continuous in epsilon
            hist = counts.astype(float)
            above = hist[:, ::-1].cumsum(axis=1)[:, ::-1] - hist  # others strictly above each score
            return np.where(above < n_select, np.minimum(1.0, (n_select - above) / (hist + 1.0)), 0.0)
        m = n_select
        log_x = self._log_weights(epsilon, m)
        support = np.flatnonzero(self.f_r > 0)
        if not self._linear_domain(log_x, support, m):
            poly = _log_esp_binomial_factors(log_x[support], counts[:, support], m)
            return self._pi_from_log_esp(log_x, poly[:, m - 1], poly[:, m])
        e_prev, e_m = self._esp_top_two(log_x, m)
        x = np.exp(log_x)
        numerator = e_prev[:, None] * x[None, :]
        return numerator / (e_m[:, None] + numerator)

    def _esp_top_two(self, log_x: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
        """``(e_{m-1}, e_m)`` of every Monte Carlo sample's others, in the linear domain (no underflow, no overflow).

        The power sums ``p_r = sum_j c_j w_j^r`` (r = 1..m) of all samples come from one matrix product; the compiled
        :func:`dpfair.selection._kernels.esp_newton` turns them into ``e_k`` by Newton's identities where the
        identities' unsigned twin bounds their rounding error to ~1e-13; :func:`~dpfair.selection._kernels.esp_fallback`
        computes the other samples by splitting their highest scores off (the rest's power sums from a second matrix
        product when over a quarter of the samples need them) or by multiplying out their binomial factors (no
        subtraction).  ``O(k m)`` per sample for any ``m``.  Which route takes a sample depends only on the sample
        and epsilon, so the numbers do not depend on earlier calls.
        """
        from dpfair.selection._kernels import NEWTON_MAX_AMPLIFICATION, esp_fallback, esp_newton

        counts = self._mc_counts()
        weights = np.exp(log_x)  # zero-probability scores have zero counts in every sample
        powers = np.ascontiguousarray(weights[None, :] ** np.arange(1, m + 1)[:, None])  # (m, k): w_j^r
        power_sums = powers @ self._mc_counts_by_score()  # (m, S): p_1..p_m of every sample
        n_samples = counts.shape[0]
        e_prev, e_m = np.empty(n_samples), np.empty(n_samples)
        route = np.empty(n_samples, dtype=np.int8)
        esp_newton(power_sums, m, NEWTON_MAX_AMPLIFICATION, e_prev, e_m, route)
        rows = np.flatnonzero(route < 0)
        if rows.size:
            rest_power_sums = np.empty((m, 0))
            if rows.size > n_samples // 4:  # the rest's power sums by one matrix product (else in the kernel)
                rest_power_sums = powers @ self._mc_rest_counts_by_score(m)
            esp_fallback(rows, rest_power_sums, counts, weights, m, NEWTON_MAX_AMPLIFICATION, e_prev, e_m, route)
        self._last_esp_routes = np.bincount(route, minlength=3)
        return e_prev, e_m

    def _mc_counts_by_score(self) -> np.ndarray:
        """:meth:`_mc_counts` transposed as float64, C-contiguous (n_scores, n_mc_samples), cached with it.

        The power sums' matrix product in this layout streams the counts once (half the time of the other layout).
        """
        counts = self._mc_counts()
        key = ("by score", id(counts))
        if key not in self._mc_cache:
            self._mc_cache = {k: v for k, v in self._mc_cache.items() if not (isinstance(k, tuple) and k[:1] == ("by score",))}
            self._mc_cache[key] = np.ascontiguousarray(counts.T, dtype=np.float64)
        return self._mc_cache[key]

    def _mc_rest_counts_by_score(self, m: int) -> np.ndarray:
        """:meth:`_mc_counts_by_score` without each sample's head (its highest score values, until ``m`` items), cached.

        Score value ``j`` is in the head when fewer than ``m`` of the sample's others score strictly above it
        (:func:`dpfair.selection._kernels.esp_fallback` splits the same head off).
        """
        counts = self._mc_counts()
        key = ("rest", id(counts), m)
        if key not in self._mc_cache:
            self._mc_cache = {k: v for k, v in self._mc_cache.items() if not (isinstance(k, tuple) and k[:1] == ("rest",))}
            by_score = self._mc_counts_by_score()
            strictly_above = by_score[::-1].cumsum(axis=0)[::-1] - by_score
            self._mc_cache[key] = np.where(strictly_above >= m, by_score, 0.0)
        return self._mc_cache[key]

    def _method(self, epsilon: float, n_select: int) -> str:
        """How ``pi_m(.; epsilon)`` is computed (see the module docstring)."""
        m = n_select
        if math.isinf(epsilon) or (m > 1 and self._at_limit(epsilon, m) and self._n_configurations() <= self.max_configurations):
            return "closed-form"
        if m == 1:
            return "laplace-integral"
        if self._n_configurations() <= self.max_configurations:
            return "enumeration"
        return "monte-carlo"

    def _pi_terms(self, epsilon: float, n_select: int) -> tuple[np.ndarray | None, np.ndarray, str]:
        """``(weights, matrix, method)``: ``pi_m(.; eps) = weights @ matrix`` (``weights=None``: MC rows)."""
        m = n_select
        method = self._method(epsilon, m)
        if method == "closed-form":
            return np.ones(1), self._pi_infinity(m)[None, :], method
        if method == "laplace-integral":
            return np.ones(1), self._pi_laplace(epsilon)[None, :], method
        if method == "enumeration":
            probs, pis = self._pi_enumeration(epsilon, m)
            return probs, pis, method
        return None, self._pi_monte_carlo(epsilon, m), method

    def _mc_sample_functionals(self, epsilon: float, n_select: int, coefficients: np.ndarray) -> np.ndarray:
        """``pi_m``'s Monte Carlo rows times ``coefficients`` (n_scores, c), shape (n_mc_samples, c).

        The same numbers as ``self._pi_monte_carlo(epsilon, n_select) @ coefficients`` to rounding, computed sample by
        sample by :func:`dpfair.selection._kernels.sample_functionals` in the linear domain (the
        (n_mc_samples, n_scores) matrix is never held).
        """
        m = n_select
        log_x = self._log_weights(epsilon, m)
        support = np.flatnonzero(self.f_r > 0)
        if self._at_limit(epsilon, m) or not self._linear_domain(log_x, support, m):
            return self._pi_monte_carlo(epsilon, m) @ coefficients
        from dpfair.selection._kernels import sample_functionals

        e_prev, e_m = self._esp_top_two(log_x, m)
        out = np.empty((e_prev.size, coefficients.shape[1]))
        sample_functionals(e_prev, e_m, np.exp(log_x), np.ascontiguousarray(coefficients, dtype=np.float64), out)
        return out

    def _linear_domain(self, log_x: np.ndarray, support: np.ndarray, m: int) -> bool:
        """Whether no product of ``m`` weights underflows and no ``e_k <= C(n - 1, k)`` overflows (then no logs)."""
        others = self.n_applicants - 1
        log_binomial = gammaln(others + 1) - gammaln(m + 1) - gammaln(max(others - m, 0) + 1)
        return m * float(-log_x[support].min()) < 600.0 and log_binomial < 600.0

    def _combined_method(self, eps_arr: np.ndarray, m: int) -> str:
        """The method reported for several epsilons: the last one that is not the closed form."""
        method = "closed-form"
        for eps in eps_arr:
            how = self._method(float(eps), m)
            if how != "closed-form":
                method = how
        return method

    def _evaluate_functionals(
        self, eps_arr: np.ndarray, m: int, stacked: np.ndarray, values: np.ndarray, errors: np.ndarray,
        tick: Callable[[], None] | None,
    ) -> None:
        """Fill ``values`` and ``errors`` (one column per epsilon) for :meth:`_functionals`."""
        for i, eps in enumerate(eps_arr):
            how = self._method(float(eps), m)
            if how == "monte-carlo":
                weights, matrix = None, np.empty(0)
            else:
                weights, matrix, how = self._pi_terms(float(eps), m)
            if weights is None:
                per_sample = self._mc_sample_functionals(float(eps), m, stacked)
                values[:, i] = per_sample.mean(axis=0)
                errors[:, i] = per_sample.std(axis=0, ddof=1) / math.sqrt(per_sample.shape[0])
            else:
                values[:, i] = weights @ (matrix @ stacked)
            if tick is not None:
                tick()
