"""Elementary symmetric polynomials of the exponential mechanism's weights, in log space.

The exact ``m > 1`` analysis of Khalili et al. (2021) sums over them (:class:`~dpfair.selection.SelectionProblem`).
"""

from __future__ import annotations

import itertools
import math

import numpy as np


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
