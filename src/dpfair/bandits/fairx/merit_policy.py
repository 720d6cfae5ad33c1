"""The merit-proportional policy of FairX-LinUCB and its optimistic parameter (Solanki et al., Algorithm 1, lines 5-8).

The pieces every FairX learner and engine shares, below the learners in the import graph: the
merit functions and the policy ``pi(a) = f(theta . x(a)) / sum_a' f(theta . x(a'))`` (Solanki et al.,
Eq. 1), the exact projection onto a confidence ellipsoid, the projected gradient ascent for the
optimistic ``theta_t`` (line 6) and the validation of the parameters the learners share.  The learners
are in :mod:`dpfair.bandits.fairx.linucb` (``B0``) and :mod:`dpfair.bandits.fairx.learners`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator

from dpfair._validation import (
    _as_float,
    as_finite_array,
    check_int,
    check_nonnegative_finite,
    check_open_unit,
    check_positive_finite,
)
from dpfair.fairness import merit_proportional_policy

__all__ = ["merit_policy", "optimistic_parameter", "project_onto_ellipsoid"]

_EXPONENTIAL = "exponential"


# --------------------------------------------------------------------------------------------------
# merit and policy
# --------------------------------------------------------------------------------------------------
def _check_merit(merit: Any, merit_scale: Any) -> tuple[Any, float]:
    if isinstance(merit, str):
        if merit != _EXPONENTIAL:
            raise ValueError(
                f"merit must be 'exponential' (f(mu) = exp(merit_scale * mu)) or a callable f(mu) > 0, got {merit!r}."
            )
        return _EXPONENTIAL, check_positive_finite(merit_scale, "merit_scale")
    if not callable(merit):
        raise TypeError(f"merit must be 'exponential' or a callable f(mu) > 0 on numpy arrays, got {type(merit).__name__}.")
    return merit, 1.0


def _callable_policy(merit: Any, mu: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Policy and log-derivative ``f'/f`` of a callable merit (central differences)."""
    f = np.asarray(merit(mu), dtype=float)
    if f.shape != mu.shape or not np.isfinite(f).all() or (f <= 0).any():
        raise ValueError(
            "merit(mu) must return finite values > 0 of the shape of mu (the minimum-merit assumption "
            "gamma > 0); check the merit function on the rewards' range."
        )
    h = 1e-6 * np.maximum(1.0, np.abs(mu))
    up = np.asarray(merit(mu + h), dtype=float)
    down = np.asarray(merit(mu - h), dtype=float)
    weight = (up - down) / (2.0 * h * f)
    return merit_proportional_policy(f), weight


def _policy(mu: np.ndarray, merit: Any, scale: Any) -> tuple[np.ndarray, Any]:
    """``pi`` (last axis) and the log-derivative ``f'(mu)/f(mu)`` of the merit (a scalar for exp)."""
    if merit is _EXPONENTIAL or (isinstance(merit, str) and merit == _EXPONENTIAL):
        z = scale * mu
        z = z - z.max(axis=-1, keepdims=True)
        e = np.exp(z)
        return e / e.sum(axis=-1, keepdims=True), scale
    return _callable_policy(merit, mu)


def merit_policy(mu: Any, merit: Any = _EXPONENTIAL, merit_scale: float = 10.0) -> np.ndarray:
    """Merit-proportional policy ``pi(a) = f(mu_a) / sum_a' f(mu_a')`` along the last axis (Eq. 1).

    Parameters
    ----------
    mu : array-like of shape (..., n_actions)
        Expected rewards ``theta . x(a)``.
    merit : {"exponential"} or callable, default "exponential"
        ``f``; ``"exponential"`` is ``exp(merit_scale * mu)`` (computed as a softmax).
    merit_scale : float, default 10.0
        Steepness of the exponential merit.

    Returns
    -------
    numpy.ndarray
        Probabilities of the shape of ``mu``.
    """
    merit, scale = _check_merit(merit, merit_scale)
    mu = as_finite_array(mu, "mu", allow_empty=True, allow_nonfinite=True)
    if mu.ndim == 0 or mu.shape[-1] == 0 or not np.isfinite(mu).all():
        raise ValueError("mu must be finite with the actions on a non-empty last axis.")
    if merit is _EXPONENTIAL:
        # exp(s mu) / sum exp(s mu') is unchanged by a shift of mu; shifting first keeps s * mu from overflowing
        with np.errstate(over="ignore"):
            mu = mu - mu.max(axis=-1, keepdims=True)  # <= 0, possibly -inf: exp gives 0, never NaN
            return _policy(mu, merit, scale)[0]  # scale * mu may overflow to -inf here, harmlessly
    return _policy(mu, merit, scale)[0]


# --------------------------------------------------------------------------------------------------
# projection onto an ellipsoid and projected gradient ascent
# --------------------------------------------------------------------------------------------------
def _project(points: np.ndarray, center: np.ndarray, eigvals: np.ndarray, eigvecs: np.ndarray, radius: np.ndarray) -> np.ndarray:
    """Euclidean projection of ``points`` (N, d) onto ``{||theta - center||_V <= radius}`` (batched).

    With ``V = Q diag(lam) Q^T`` and ``z = Q^T (p - c)``, the projection of an outside point is
    ``c + Q (z / (1 + mu lam))`` where ``mu > 0`` solves the secular equation
    ``sum_k lam_k z_k^2 / (1 + mu lam_k)^2 = r^2`` (KKT conditions).  Newton's method on
    ``phi(mu) = g(mu)^{-1/2} - 1/r`` (nearly linear in ``mu``, as in More & Sorensen's trust-region
    solver) converges from ``mu = 0`` in a few iterations; a final rescaling by
    ``min(1, r / ||y||_V)`` keeps every returned point inside the ellipsoid.

    :mod:`dpfair.bandits.fairx._kernels` compiles the same iteration (``engine="compiled"`` of
    :func:`dpfair.bandits.simulate_federated`): change both together
    (``tests/bandits/fairx/test_compiled_fairx.py`` checks that they agree).
    """
    y = points - center
    z = np.einsum("nik,ni->nk", eigvecs, y)
    lz2 = eigvals * z * z
    r2 = radius * radius
    outside = lz2.sum(axis=-1) > r2
    if not outside.any():
        return points
    idx = np.nonzero(outside)[0]
    lam, w2, zz, r = eigvals[idx], lz2[idx], z[idx], radius[idx]
    result = points.copy()
    zero = r <= 0
    inv_r = 1.0 / np.where(zero, 1.0, r)
    # start left of the root: g(mu) >= q / (1 + mu lam_max)^2, so phi(mu_0) <= 0 for this mu_0
    mu = np.maximum(np.sqrt(w2.sum(axis=-1)) * inv_r - 1.0, 0.0) / lam[:, -1]
    with np.errstate(all="ignore"):  # radii near 0 underflow; the final rescaling keeps them exact enough
        for _ in range(100):
            inv = 1.0 / (1.0 + mu[:, None] * lam)
            a = w2 * inv * inv
            g = a.sum(axis=-1)
            root = np.sqrt(g)
            # Newton on phi = g^{-1/2} - 1/r, with phi' = -g'/(2 g^{3/2}) and g' = -2 sum lam a / (1 + mu lam)
            step = (1.0 / root - inv_r) * g * root / (lam * a * inv).sum(axis=-1)
            step = np.where(np.isfinite(step), step, 0.0)
            mu = np.maximum(mu - step, 0.0)
            if np.all(np.abs(step) <= 1e-13 * (1.0 + mu)):
                break
    w = zz / (1.0 + mu[:, None] * lam)
    norm = np.sqrt((lam * w * w).sum(axis=-1))
    shrink = np.minimum(1.0, r / np.maximum(norm, 1e-300))
    proj = center[idx] + np.einsum("nik,nk->ni", eigvecs[idx], w * shrink[:, None])
    result[idx] = np.where(zero[:, None], center[idx], proj)
    return result


def _ascent(
    contexts: np.ndarray,
    center: np.ndarray,
    eigvals: np.ndarray,
    eigvecs: np.ndarray,
    radius: np.ndarray,
    merit: Any,
    scale: Any,
    n_steps: int,
    step_size: Any,
) -> np.ndarray:
    """``n_steps`` of projected gradient ascent on ``J(theta) = sum_a pi_theta(a) theta . x(a)`` (line 6).

    ``grad J = sum_a pi_a (1 + w_a (mu_a - J)) x_a`` with ``mu_a = theta . x_a`` and
    ``w_a = f'(mu_a) / f(mu_a)`` (``w = merit_scale`` for the exponential merit): the derivative of
    ``pi_a`` is ``pi_a (w_a e_a - sum_b pi_b w_b e_b)`` in ``mu``.  The compiled engine's
    ``round_lanes`` (:mod:`dpfair.bandits.fairx._lanes`) runs the same steps for the exponential merit.
    """
    theta = center
    for _ in range(n_steps):
        mu = np.einsum("nkd,nd->nk", contexts, theta)
        pi, weight = _policy(mu, merit, scale)
        value = (pi * mu).sum(axis=-1, keepdims=True)
        coef = pi * (1.0 + weight * (mu - value))
        grad = np.einsum("nk,nkd->nd", coef, contexts)
        theta = _project(theta + step_size * grad, center, eigvals, eigvecs, radius)
    return theta


def _check_ellipsoid(center: Any, gram: Any, radius: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, tuple]:
    center = np.asarray(center, dtype=float)
    gram = np.asarray(gram, dtype=float)
    if center.ndim < 1 or gram.shape != (*center.shape, center.shape[-1]):
        raise ValueError(f"gram must have shape center.shape + (d,), got center {center.shape} and gram {gram.shape}.")
    if not (np.isfinite(center).all() and np.isfinite(gram).all()):
        raise ValueError("center and gram must be finite.")
    batch = center.shape[:-1]
    d = center.shape[-1]
    radius = np.broadcast_to(np.asarray(radius, dtype=float), batch).reshape(-1)
    if not np.isfinite(radius).all() or (radius < 0).any():
        raise ValueError("radius must be finite and >= 0.")
    eigvals, eigvecs = np.linalg.eigh(0.5 * (gram + np.swapaxes(gram, -1, -2)).reshape(-1, d, d))
    if (eigvals <= 0).any():
        raise ValueError("gram must be positive definite (the ellipsoid's matrix V).")
    return center.reshape(-1, d), eigvals, eigvecs, radius, batch


def project_onto_ellipsoid(points: Any, center: Any, gram: Any, radius: Any) -> np.ndarray:
    """Exact Euclidean projection onto the ellipsoid ``{theta : ||theta - center||_gram <= radius}``.

    Parameters
    ----------
    points : array-like of shape (..., d)
        Points to project.
    center : array-like of shape (..., d)
        Centres (``theta_hat``).
    gram : array-like of shape (..., d, d)
        Positive definite ``V``.
    radius : float or array-like of shape (...)
        ``sqrt(beta) >= 0``.

    Returns
    -------
    numpy.ndarray
        The nearest points of the ellipsoids (points inside are returned unchanged).
    """
    c, lam, q, r, batch = _check_ellipsoid(center, gram, radius)
    p = np.asarray(points, dtype=float)
    if p.shape != (*batch, c.shape[-1]) or not np.isfinite(p).all():
        raise ValueError(f"points must be finite with the shape of center {(*batch, c.shape[-1])}, got {p.shape}.")
    return _project(p.reshape(c.shape), c, lam, q, r).reshape(p.shape)


def optimistic_parameter(
    contexts: Any,
    center: Any,
    gram: Any,
    radius: Any,
    *,
    merit: Any = _EXPONENTIAL,
    merit_scale: float = 10.0,
    n_steps: int = 10,
    step_size: float = 0.1,
) -> np.ndarray:
    """Optimistic ``theta_t`` of Algorithm 1, line 6, by projected gradient ascent from ``center``.

    Parameters
    ----------
    contexts : array-like of shape (..., n_actions, d)
        Candidate contexts ``x(a)``.
    center : array-like of shape (..., d)
        ``theta_hat`` (the starting point).
    gram : array-like of shape (..., d, d)
        ``V`` of the confidence ellipsoid.
    radius : float or array-like of shape (...)
        ``sqrt(beta_t)``.
    merit : {"exponential"} or callable, default "exponential"
        The merit function ``f``.
    merit_scale : float, default 10.0
        Steepness of the exponential merit.
    n_steps : int, default 10
        Gradient steps (0 returns ``center``).
    step_size : float, default 0.1
        Step length ``eta`` of ``theta <- P(theta + eta grad J)``.

    Returns
    -------
    numpy.ndarray
        ``theta_t`` of shape ``(..., d)``, inside the ellipsoid.
    """
    merit, scale = _check_merit(merit, merit_scale)
    n_steps = check_int(n_steps, "n_steps", minimum=0)
    step_size = check_nonnegative_finite(step_size, "step_size")
    c, lam, q, r, batch = _check_ellipsoid(center, gram, radius)
    x = np.asarray(contexts, dtype=float)
    if x.ndim != len(batch) + 2 or x.shape[:-2] != batch or x.shape[-1] != c.shape[-1] or not np.isfinite(x).all():
        raise ValueError(f"contexts must be finite of shape {(*batch, 'n_actions', c.shape[-1])}, got {x.shape}.")
    out = _ascent(x.reshape(c.shape[0], -1, c.shape[-1]), c, lam, q, r, merit, scale, n_steps, step_size)
    return out.reshape(*batch, c.shape[-1])


# --------------------------------------------------------------------------------------------------
# the learners' shared parameters
# --------------------------------------------------------------------------------------------------
def _check_radius(radius: Any) -> Any:
    if isinstance(radius, str):
        if radius != "theory":
            raise ValueError(f"radius must be 'theory' or a number >= 0 (a constant sqrt(beta)), got {radius!r}.")
        return "theory"
    value = _as_float(radius, "radius")
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"radius must be 'theory' or a finite number >= 0, got {radius!r}.")
    return value


@dataclass(frozen=True)
class _CoreOptions:
    """The parameters every FairX learner shares, validated once (:meth:`_FairXParameters._core`).

    A typed stage: the plan, the rounds and the compiled engine read these fields by name.
    """

    merit: Any  # "exponential" or the callable f
    merit_scale: float
    regularization: float
    noise_std: float
    theta_norm_bound: float
    confidence_delta: float
    radius: Any  # "theory" or a constant sqrt(beta)
    n_steps: int
    step_size: float


class _FairXParameters(BaseEstimator):
    """Validation of the parameters every FairX learner shares (at use time, never in ``__init__``)."""

    def _core(self) -> _CoreOptions:
        merit, scale = _check_merit(self.merit, self.merit_scale)
        noise_std = check_nonnegative_finite(self.noise_std, "noise_std")
        confidence_delta = check_open_unit(self.confidence_delta, "confidence_delta")
        return _CoreOptions(
            merit=merit,
            merit_scale=scale,
            regularization=check_positive_finite(self.regularization, "regularization"),
            noise_std=noise_std,
            theta_norm_bound=check_nonnegative_finite(self.theta_norm_bound, "theta_norm_bound"),
            confidence_delta=confidence_delta,
            radius=_check_radius(self.radius),
            n_steps=check_int(self.n_steps, "n_steps", minimum=0),
            step_size=check_nonnegative_finite(self.step_size, "step_size"),
        )
