"""Sufficient-statistics perturbation of :class:`~dpfair.linear_model.DPLinearRegression`: release, sensitivity, solve.

Least squares needs only ``Z^T Z`` and ``Z^T y``.  This module packs them into the released vector
(:func:`sufficient_statistics`), gives its sensitivity under "replace one row" (:func:`ssp_sensitivity`), adds the
mechanism's noise (:func:`release_statistics`), unpacks the noisy statistics and solves the ridge normal equations
after a PSD repair (:func:`solve_normal_equations`), with the ridge penalty of ``alpha="auto"`` tied to the noise
(:func:`auto_alpha`).
"""

from __future__ import annotations

import math

import numpy as np

from dpfair.privacy.mechanisms import gaussian_mechanism, laplace_mechanism
from dpfair.privacy.noise import NoiseSource

__all__ = [
    "AUTO_ALPHA_FAILURE_PROBABILITY", "auto_alpha", "noise_standard_deviation", "release_statistics",
    "solve_normal_equations", "ssp_sensitivity", "sufficient_statistics", "unpack_statistics",
]

#: Probability with which ``alpha="auto"`` must dominate the noise (see :func:`auto_alpha`).
AUTO_ALPHA_FAILURE_PROBABILITY = 0.05


def noise_standard_deviation(scale: float, mechanism: str) -> float:
    """Standard deviation of the noise on one released entry: the Gaussian ``sigma``, or ``sqrt(2) b`` for Laplace."""
    return scale if mechanism == "gaussian" else math.sqrt(2.0) * scale


def auto_alpha(noise_std: float, n_columns: int, failure_probability: float = AUTO_ALPHA_FAILURE_PROBABILITY) -> float:
    """The ridge penalty of ``alpha="auto"``: a bound on the noise's spectral norm that holds with probability ``1 - rho``.

    The released Gram matrix is ``G + E`` with ``E`` symmetric, its upper triangle independent noise of standard
    deviation ``s = noise_std`` (the intercept's diagonal entry ``n`` is public and exact).  The penalty ``alpha``
    is chosen so that ``G + E + alpha I`` dominates the exact ``G`` (``E + alpha I`` is positive semi-definite),
    i.e. ``alpha >= -lambda_min(E)``, with probability ``1 - rho``:

    * ``E[lambda_max(-E)] <= 2 s sqrt(p)`` for ``p = n_columns`` (Gaussian comparison with the Gaussian
      orthogonal ensemble, whose diagonal variance ``2 s^2`` exceeds ours; Davidson & Szarek 2001, Thm 2.11);
    * ``lambda_max`` is ``sqrt(2) s``-Lipschitz in the standardised noise (``||E||_2 <= ||E||_F <= sqrt(2)`` times
      the norm of the upper triangle), so Gaussian concentration adds ``sqrt(2) s sqrt(2 log(1 / rho))``.

    Hence ``alpha = s (2 sqrt(p) + 2 sqrt(log(1 / rho)))``: AdaSSP's rule (Wang 2018, "Revisiting differentially
    private linear regression", Algorithm 2) with its privately estimated ``lambda_min(G)`` replaced by 0, so that
    the rule is a function of epsilon, delta, the declared bounds and ``p`` only (no budget is spent on it).  For
    Laplace noise ``s = sqrt(2) b`` (the same second moment; the bound is then a heuristic, not a guarantee).

    Parameters
    ----------
    noise_std : float
        Standard deviation of the noise on one released entry (0 at ``epsilon = inf``: ``alpha = 0``).
    n_columns : int
        Columns of the design, the intercept's included.
    failure_probability : float, default 0.05
        ``rho``.

    Returns
    -------
    float
        The penalty, in the units of the released Gram matrix.
    """
    return float(noise_std * (2.0 * math.sqrt(n_columns) + 2.0 * math.sqrt(math.log(1.0 / failure_probability))))


def ssp_sensitivity(bound_sq: float, dim: int, mechanism: str) -> float:
    """Sensitivity of the released statistics under "replace one row".

    One row contributes ``u u^T`` with ``u = (z, y)`` and ``||u||^2 <= bound_sq`` (``data_norm^2``,
    plus 1 for the intercept column, plus ``target_bound^2``); the release is a sub-vector of the upper
    triangle of ``sum_i u_i u_i^T``.

    * L2 (Gaussian): ``||u u^T - u' u'^T||_F^2 = ||u||^4 + ||u'||^4 - 2 (u . u')^2 <= 2 bound_sq^2``,
      so the sensitivity is ``sqrt(2) bound_sq``.
    * L1 (Laplace): the upper triangle of ``u u^T`` has L1 norm
      ``(||u||_1^2 + ||u||_2^2) / 2 <= (dim + 1) bound_sq / 2`` (Cauchy-Schwarz, ``dim = len(u)``), so
      the sensitivity is ``(dim + 1) bound_sq``.

    Parameters
    ----------
    bound_sq : float
        Declared bound on ``||u||^2``.
    dim : int
        Length of ``u``.
    mechanism : {"gaussian", "laplace"}
        Which norm.

    Returns
    -------
    float
        The L2 (Gaussian) or L1 (Laplace) sensitivity.
    """
    if mechanism == "gaussian":
        return math.sqrt(2.0) * bound_sq
    return (dim + 1) * bound_sq


def sufficient_statistics(Z: np.ndarray, y: np.ndarray, intercept: bool) -> np.ndarray:
    """The released vector: the upper triangle of ``Z^T Z`` (without the public count ``n``) and ``Z^T y``.

    Parameters
    ----------
    Z : ndarray of shape (n, p)
        Design (the last column is ones when ``intercept``).
    y : ndarray of shape (n,)
        Targets.
    intercept : bool
        Whether the last column of ``Z`` is the intercept's column of ones.

    Returns
    -------
    ndarray of shape (p (p + 1) / 2 - intercept + p,)
    """
    p = Z.shape[1]
    rows, cols = np.triu_indices(p)
    keep = ~((rows == p - 1) & (cols == p - 1)) if intercept else np.ones(rows.size, dtype=bool)
    gram = Z.T @ Z
    return np.concatenate([gram[rows[keep], cols[keep]], Z.T @ y])


def unpack_statistics(vector: np.ndarray, p: int, n: int, intercept: bool) -> tuple[np.ndarray, np.ndarray]:
    """Inverse of :func:`sufficient_statistics`: the symmetric ``(p, p)`` Gram matrix and the ``(p,)`` moment."""
    rows, cols = np.triu_indices(p)
    keep = ~((rows == p - 1) & (cols == p - 1)) if intercept else np.ones(rows.size, dtype=bool)
    n_gram = int(keep.sum())
    gram = np.zeros((p, p))
    gram[rows[keep], cols[keep]] = vector[:n_gram]
    gram = gram + np.triu(gram, 1).T
    if intercept:
        gram[p - 1, p - 1] = float(n)  # public: the number of rows
    return gram, np.array(vector[n_gram:], dtype=float)


def release_statistics(
    vector: np.ndarray, *, sensitivity: float, epsilon: float, delta: float, mechanism: str, noise: NoiseSource
) -> np.ndarray:
    """Add the mechanism's noise to the statistics (any shape: a stack of vectors is noised entry by entry).

    Parameters
    ----------
    vector : ndarray
        Exact statistics.
    sensitivity : float
        From :func:`ssp_sensitivity`.
    epsilon, delta : float
        Privacy parameters (``delta`` only for the Gaussian mechanism).
    mechanism : {"gaussian", "laplace"}
        Which mechanism of :mod:`dpfair.privacy.mechanisms`.
    noise : NoiseSource
        Noise source.

    Returns
    -------
    ndarray
        The noisy statistics, same shape.
    """
    if mechanism == "gaussian":
        return gaussian_mechanism(vector, sensitivity=sensitivity, epsilon=epsilon, delta=delta, noise=noise)
    return laplace_mechanism(vector, sensitivity=sensitivity, epsilon=epsilon, noise=noise)


def solve_normal_equations(gram: np.ndarray, moment: np.ndarray, alpha: float, intercept: bool, repair: bool) -> np.ndarray:
    """Ridge normal equations ``(G_+ + alpha P) w = m`` with the PSD repair ``G_+`` of a noisy Gram matrix.

    ``G_+`` is the projection of the symmetric ``G`` onto the positive semi-definite cone (negative
    eigenvalues set to 0: the nearest PSD matrix in Frobenius norm); ``P`` is the identity without the
    intercept's entry (the intercept is not penalised, as in :class:`sklearn.linear_model.Ridge`).  A
    singular system (``alpha = 0`` and a rank-deficient ``G_+``) gets the minimum-norm least-squares
    solution.

    Parameters
    ----------
    gram : ndarray of shape (p, p)
        Symmetric (noisy) ``Z^T Z``.
    moment : ndarray of shape (p,)
        (Noisy) ``Z^T y``.
    alpha : float
        Ridge penalty, ``>= 0``.
    intercept : bool
        Whether the last coordinate is the (unpenalised) intercept.
    repair : bool
        Project ``gram`` onto the PSD cone first.

    Returns
    -------
    ndarray of shape (p,)
        The weights (the intercept last).
    """
    if repair:
        values, vectors = np.linalg.eigh(gram)
        gram = (vectors * np.maximum(values, 0.0)) @ vectors.T
    penalty = np.full(gram.shape[0], alpha)
    if intercept:
        penalty[-1] = 0.0
    system = gram + np.diag(penalty)
    try:
        return np.linalg.solve(system, moment)
    except np.linalg.LinAlgError:
        return np.linalg.lstsq(system, moment, rcond=None)[0]
