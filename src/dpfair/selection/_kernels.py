"""Compiled (numba) kernels of the Monte Carlo analysis of :class:`~dpfair.selection.SelectionProblem` for ``m > 1``.

Imported at the first Monte Carlo evaluation, never with :mod:`dpfair.selection` (numba loads in about a second).

* :func:`histogram_rows`: the histograms of the others' scores, the same draws as ``Generator.choice(k, size, p)``
  (``cdf.searchsorted(uniforms, side="right")`` with ``cdf = cumsum(p) / sum(p)``) without the index array.
* :func:`esp_newton` and :func:`esp_fallback`: ``(e_{m-1}, e_m)`` of every sample's others, the elementary
  symmetric polynomials of the exponential mechanism's weights (the coefficients of ``prod_j (1 + w_j z)^{c_j}``),
  computed by Newton's identities from the power sums where a computed bound says they are accurate, else by
  splitting off the sample's highest scores or without any subtraction.
* :func:`sample_functionals`: ``sum_rho c(rho) pi(rho | sample)`` for every sample, with
  ``pi = x e_{m-1} / (e_m + x e_{m-1})`` (one pass over the score grid, no ``(samples, scores)`` matrix).

numba's on-disk cache checks only this file: the kernels call no function of another module.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numba
import numpy as np

__all__ = ["NEWTON_MAX_AMPLIFICATION", "esp_fallback", "esp_newton", "histogram_rows", "sample_functionals"]

#: Newton's identities subtract; their value of ``e_k`` is kept when the same recursion without the signs (the
#: magnitude ``M_k >= |e_k|``, which bounds the rounding error by about ``k * u * M_k``) is at most this many
#: times ``e_k``: relative error below ~``64 * m * 1.1e-16`` (7e-14 for m = 10) from the recursion, plus the power
#: sums' own relative rounding (about ``sqrt(k) u`` for ``k`` score values, ``k u`` at worst) amplified by at most
#: the same factor; the tests measure 1e-12 or better against the frozen reference and against sums over subsets.
NEWTON_MAX_AMPLIFICATION = 64.0


def _jit(function: Callable[..., Any] | None = None, **options: Any) -> Any:
    """``numba.njit`` with the on-disk cache where one can be written (numpy's error model: 1/0 = inf).

    ``@_jit`` or ``@_jit(**options)`` (more ``numba.njit`` options, e.g. ``fastmath``).
    """

    def wrap(compiled: Callable[..., Any]) -> Any:
        try:
            return numba.njit(cache=True, nogil=True, error_model="numpy", **options)(compiled)
        except RuntimeError:  # "cannot cache function ...: no locator available" (read-only install)
            return numba.njit(cache=False, nogil=True, error_model="numpy", **options)(compiled)

    return wrap if function is None else wrap(function)


@_jit
def histogram_rows(cdf: Any, uniforms: Any, counts: Any) -> None:  # pragma: no cover - compiled
    """``counts[i, j] += #{l : searchsorted(cdf, uniforms[i, l], side="right") == j}`` (rows: samples).

    ``cdf`` is non-decreasing with ``cdf[-1] = 1`` and the uniforms lie in ``[0, 1)``.  A table over 4,096 equal
    buckets of ``[0, 1)`` gives the first candidate (``u * 4096`` is exact, so ``floor`` finds ``u``'s bucket), then a
    forward scan finds the first ``cdf[j] > u``: exactly numpy's ``searchsorted``, without its binary search.
    """
    n_bins, n_buckets = cdf.size, 4096
    first = np.empty(n_buckets, dtype=np.int64)  # first[b] = #{j : cdf[j] <= b / n_buckets}
    j = 0
    for b in range(n_buckets):
        while j < n_bins - 1 and cdf[j] <= b / n_buckets:
            j += 1
        first[b] = j
    for i in range(uniforms.shape[0]):
        for value in uniforms[i]:
            index = first[int(value * n_buckets)]
            while index < n_bins - 1 and cdf[index] <= value:
                index += 1
            counts[i, index] += 1


@_jit
def _newton(power_sums: Any, m: int, e: Any, magnitude: Any) -> None:  # pragma: no cover - compiled
    """Newton's identities ``k e_k = sum_{i=1..k} (-1)^(i-1) e_{k-i} p_i`` and their unsigned twin ``M_k``."""
    e[0] = 1.0
    magnitude[0] = 1.0
    for k in range(1, m + 1):
        signed, unsigned = 0.0, 0.0
        for i in range(1, k + 1):
            term = e[k - i] * power_sums[i - 1]
            signed += term if i % 2 == 1 else -term
            unsigned += magnitude[k - i] * power_sums[i - 1]
        e[k] = signed / k
        magnitude[k] = unsigned / k


@_jit
def _times_binomial_factor(poly: Any, weight: float, count: int, m: int) -> None:  # pragma: no cover - compiled
    """``poly *= (1 + weight z)^count`` truncated at degree ``m``, in place (no subtraction)."""
    for t in range(m, 0, -1):  # highest degree first: poly[t - a] is still the old coefficient
        factor = 1.0  # C(count, a) weight^a, a = 1..min(t, count)
        acc = poly[t]
        for a in range(1, min(t, count) + 1):
            factor = factor * weight * (count - a + 1) / a
            acc += factor * poly[t - a]
        poly[t] = acc


@_jit
def esp_newton(
    power_sums: Any, m: int, max_amplification: float, e_prev: Any, e_m: Any, route: Any,
) -> None:  # pragma: no cover - compiled
    """Route 0 of the elementary symmetric polynomials ``(e_{m-1}, e_m)`` of every Monte Carlo sample's others.

    Newton's identities from the power sums ``power_sums[r - 1, s] = sum_j counts[s, j] weights[j]^r`` (r = 1..m,
    one matrix product for all samples), kept (``route[s] = 0``) when ``M_k <= max_amplification * e_k`` for
    ``k = m - 1, m``; otherwise ``route[s] = -1`` and :func:`esp_fallback` computes the sample.
    """
    e = np.empty(m + 1)
    magnitude = np.empty(m + 1)
    for s in range(power_sums.shape[1]):
        _newton(power_sums[:, s], m, e, magnitude)
        if magnitude[m] <= max_amplification * e[m] and magnitude[m - 1] <= max_amplification * e[m - 1]:
            e_prev[s], e_m[s], route[s] = e[m - 1], e[m], 0
        else:
            route[s] = -1


@_jit
def esp_fallback(
    rows: Any, rest_power_sums: Any, counts: Any, weights: Any, m: int, max_amplification: float, e_prev: Any, e_m: Any,
    route: Any,
) -> None:  # pragma: no cover - compiled
    """Routes 1 and 2 of ``(e_{m-1}, e_m)`` for the samples ``rows`` that Newton's identities could not compute.

    1. Split the sample into its head ``H`` (its highest scores, whole score values, until ``m`` items) and the rest
       ``L``: Newton's identities on ``L``'s power sums (``rest_power_sums[:, s]`` when given, one column per sample,
       else computed here), then times the head's binomial factors (``e_k = sum_a e_a(H) e_{k-a}(L)``, no subtraction),
       kept under :func:`esp_newton`'s test on the propagated magnitudes (``route[s] = 1``).
    2. Else the truncated product of the binomial factors ``(1 + w_j z)^{c_j}`` of every score value, no subtraction
       (``route[s] = 2``).

    The weights are at most 1 and in the linear domain (no product of ``m`` of them underflows).
    """
    n_scores = counts.shape[1]
    e = np.empty(m + 1)
    magnitude = np.empty(m + 1)
    rest_sums = np.empty(m)
    powers = np.empty((n_scores, m))  # powers[j, r - 1] = weights[j]^r
    for j in range(n_scores):
        power = 1.0
        for r in range(m):
            power *= weights[j]
            powers[j, r] = power
    given = rest_power_sums.shape[1] > 0
    for s in rows:
        row = counts[s]
        head_start, in_head = n_scores, 0  # head: score values head_start.. (ascending grid), >= m items
        while head_start > 0 and in_head < m:
            head_start -= 1
            in_head += row[head_start]
        if given:
            rest_sums[:] = rest_power_sums[:, s]
        else:
            rest_sums[:] = 0.0
            for j in range(head_start):
                if row[j] > 0:
                    for r in range(m):
                        rest_sums[r] += row[j] * powers[j, r]
        _newton(rest_sums, m, e, magnitude)
        for j in range(head_start, n_scores):
            if row[j] > 0:
                _times_binomial_factor(e, weights[j], row[j], m)
                _times_binomial_factor(magnitude, weights[j], row[j], m)
        if magnitude[m] <= max_amplification * e[m] and magnitude[m - 1] <= max_amplification * e[m - 1]:
            e_prev[s], e_m[s], route[s] = e[m - 1], e[m], 1
            continue
        e[:] = 0.0
        e[0] = 1.0
        for j in range(n_scores):
            if row[j] > 0:
                _times_binomial_factor(e, weights[j], row[j], m)
        e_prev[s], e_m[s], route[s] = e[m - 1], e[m], 2


@_jit(fastmath={"reassoc"})  # the only reassociated sum: a dot product of 198 terms
def _dot(pi: Any, coefficients: Any, column: int) -> float:  # pragma: no cover - compiled
    """``sum_j pi[j] coefficients[j, column]``, the sum reassociated (vectorized; same value to rounding)."""
    total = 0.0
    for j in range(pi.size):
        total += pi[j] * coefficients[j, column]
    return total


@_jit
def sample_functionals(e_prev: Any, e_m: Any, x: Any, coefficients: Any, out: Any) -> None:  # pragma: no cover
    """``out[s, q] = sum_j coefficients[j, q] x_j e_prev[s] / (e_m[s] + x_j e_prev[s])`` (one pass per sample)."""
    n_scores, n_coefficients = coefficients.shape
    pi = np.empty(n_scores)
    for s in range(e_prev.size):
        for j in range(n_scores):
            numerator = x[j] * e_prev[s]  # pi = x e_{m-1} / (e_m + x e_{m-1})
            pi[j] = numerator / (e_m[s] + numerator)
        for q in range(n_coefficients):
            out[s, q] = _dot(pi, coefficients, q)
