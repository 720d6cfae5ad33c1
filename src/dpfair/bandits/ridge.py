"""Ridge-regression state of the linear bandits, batched over any leading axes (seeds, agents).

Both online-selection families of dpfair estimate the reward vector ``theta*`` of a linear model
``r = <x, theta*> + noise`` by ridge regression on the contexts they chose:

* ``V_t = lambda I + sum_{s <= t} x_s x_s^T`` (the *Gram* matrix), ``b_t = sum_{s <= t} r_s x_s``,
* ``theta_hat_t = V_t^{-1} b_t``,

and build confidence ellipsoids ``{theta : ||theta - theta_hat_t||_{V_t} <= sqrt(beta_t)}`` around it
(Abbasi-Yadkori, Pal & Szepesvari 2011, Theorem 2).  :class:`RidgeState` holds ``V``, ``b`` and
``V^{-1}`` for a whole batch of independent learners at once (shape ``batch_shape + (d, d)``), so
the simulators advance every seed (and every agent) with one vectorized step per round: a rank-one
Sherman-Morrison update of ``V^{-1}`` per observation, or a batched inverse when whole sufficient
statistics are added (a synchronization of the federated learners, a private release).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dpfair._validation import (
    as_finite_array,
    check_allocation,
    check_int,
    check_nonnegative_finite,
    check_open_unit,
    check_positive_finite,
    check_positive_normal,
)

__all__ = ["RidgeState", "confidence_radius"]


def confidence_radius(
    log_det_gram: np.ndarray | float,
    *,
    dim: int,
    regularization: float,
    noise_std: float,
    theta_norm_bound: float,
    delta: float,
) -> np.ndarray:
    """Compute the radius ``sqrt(beta_t)`` of the self-normalized confidence ellipsoid (Abbasi-Yadkori et al. 2011, Thm 2).

    ``sqrt(beta_t) = R sqrt(2 ln(1/delta) + ln(det V_t / det(lambda I))) + sqrt(lambda) S``: with
    probability at least ``1 - delta``, for every round, ``||theta_hat_t - theta*||_{V_t} <= sqrt(beta_t)``
    when the reward noise is conditionally ``R``-sub-Gaussian and ``||theta*|| <= S``.

    Parameters
    ----------
    log_det_gram : float or numpy.ndarray
        ``ln det V_t`` (any shape: one value per learner of a batch).
    dim : int
        Dimension ``d`` of the contexts.
    regularization : float
        Ridge parameter ``lambda > 0``.
    noise_std : float
        Sub-Gaussian noise level ``R >= 0``.
    theta_norm_bound : float
        Declared bound ``S`` on ``||theta*||_2``.
    delta : float
        Failure probability in ``(0, 1)``.

    Returns
    -------
    numpy.ndarray
        ``sqrt(beta_t)``, the shape of ``log_det_gram``.
    """
    dim = check_int(dim, "dim", minimum=1)
    lam = check_positive_finite(regularization, "regularization")
    noise = check_nonnegative_finite(noise_std, "noise_std")
    bound = check_nonnegative_finite(theta_norm_bound, "theta_norm_bound")
    delta = check_open_unit(delta, "delta")
    log_det = as_finite_array(log_det_gram, "log_det_gram", allow_empty=True, allow_nonfinite=True)
    if np.isnan(log_det).any() or (log_det == -np.inf).any():
        raise ValueError("log_det_gram holds NaN or -inf; pass ln det V_t of a positive definite V_t (finite, or +inf).")
    with np.errstate(over="ignore"):
        log_ratio = np.maximum(log_det - dim * math.log(lam), 0.0)
        radius = noise * np.sqrt(2.0 * math.log(1.0 / delta) + log_ratio) + math.sqrt(lam) * bound
    if not np.isfinite(radius).all():
        raise ValueError(
            "log_det_gram, noise_std and theta_norm_bound give a radius that overflows float64; pass a finite "
            "log_det_gram and smaller noise_std or theta_norm_bound."
        )
    return radius


def _cholesky(gram: np.ndarray, problem: str) -> np.ndarray:
    """Lower Cholesky factor of the symmetric ``gram`` (batched), or a ``ValueError(problem)`` where one is not
    positive definite.

    Parameters
    ----------
    gram : numpy.ndarray of shape (..., d, d)
        Symmetric matrices.
    problem : str
        The error message: what went wrong and how to fix it.

    Returns
    -------
    numpy.ndarray
        ``L`` with ``gram = L L^T`` (:func:`numpy.linalg.cholesky`).
    """
    try:
        return np.linalg.cholesky(gram)
    except np.linalg.LinAlgError:
        raise ValueError(problem) from None


class RidgeState:
    """Ridge-regression sufficient statistics for a batch of independent linear learners.

    Parameters
    ----------
    dim : int
        Context dimension ``d``.
    batch_shape : tuple of int, default ()
        Leading axes, one learner per entry (for example ``(n_seeds,)`` or ``(n_seeds, n_agents)``).
    regularization : float, default 1.0
        Ridge parameter ``lambda > 0``: ``V_0 = lambda I``.

    Attributes
    ----------
    gram : numpy.ndarray
        ``V`` of shape ``batch_shape + (d, d)``.
    target : numpy.ndarray
        ``b = sum r x`` of shape ``batch_shape + (d,)``.
    gram_inverse : numpy.ndarray
        ``V^{-1}``, kept in step with ``gram``.
    n_observations : numpy.ndarray
        Number of ``(x, r)`` pairs added to each learner, shape ``batch_shape``.

    Examples
    --------
    >>> import numpy as np
    >>> state = RidgeState(2, batch_shape=(3,), regularization=1.0)
    >>> state.update(np.ones((3, 2)), np.array([1.0, 2.0, 3.0]))
    >>> state.theta().round(3).tolist()
    [[0.333, 0.333], [0.667, 0.667], [1.0, 1.0]]
    """

    def __init__(self, dim: int, *, batch_shape: tuple[int, ...] = (), regularization: float = 1.0) -> None:
        self.dim = check_int(dim, "dim", minimum=1)
        self.batch_shape = tuple(check_int(s, "batch_shape", minimum=1) for s in batch_shape)
        self.regularization = check_positive_normal(regularization, "regularization")
        n_learners = math.prod(self.batch_shape)
        check_allocation(
            3 * 8 * n_learners * self.dim * self.dim, subject=f"dim={self.dim} with batch_shape={self.batch_shape}",
            what="the Gram matrices and their inverses", fix="lower dim or the batch size",
        )
        eye = np.eye(self.dim)
        self.gram = np.broadcast_to(self.regularization * eye, (*self.batch_shape, self.dim, self.dim)).copy()
        self.gram_inverse = np.broadcast_to(eye / self.regularization, self.gram.shape).copy()
        self.target = np.zeros((*self.batch_shape, self.dim))
        self.n_observations = np.zeros(self.batch_shape, dtype=np.int64)

    def _check_contexts(self, x: Any, name: str = "x") -> np.ndarray:
        x = as_finite_array(x, name, allow_empty=True, allow_nonfinite=True)
        if x.shape != (*self.batch_shape, self.dim):
            raise ValueError(f"{name} must have shape {(*self.batch_shape, self.dim)}, got {x.shape}.")
        if not np.isfinite(x).all():
            raise ValueError(f"{name} holds NaN or infinite values; contexts must be finite.")
        return x

    def update(self, x: Any, reward: Any, mask: Any = None) -> None:
        """Add one observation ``(x, r)`` to every learner of the batch (rank-one update).

        Parameters
        ----------
        x : array-like of shape ``batch_shape + (d,)``
            The chosen contexts.
        reward : array-like of shape batch_shape
            Their observed rewards.
        mask : array-like of bool of shape batch_shape, optional
            Learners that observe; the others are left unchanged.
        """
        x = self._check_contexts(x)
        reward = as_finite_array(reward, "reward", allow_empty=True, allow_nonfinite=True)
        try:
            reward = np.broadcast_to(reward, self.batch_shape)
        except ValueError:
            raise ValueError(f"reward must have shape {self.batch_shape} (or broadcast to it), got {reward.shape}.") from None
        if not np.isfinite(reward).all():
            raise ValueError("reward holds NaN or infinite values; rewards must be finite.")
        if mask is not None:
            keep = np.asarray(mask)
            if keep.dtype.kind != "b":
                raise TypeError(f"mask must hold True/False per learner, got dtype {keep.dtype}.")
            try:
                keep = np.broadcast_to(keep, self.batch_shape)
            except ValueError:
                raise ValueError(f"mask must have shape {self.batch_shape} (or broadcast to it), got {keep.shape}.") from None
            x = np.where(keep[..., None], x, 0.0)
            reward = np.where(keep, reward, 0.0)
        with np.errstate(over="ignore", invalid="ignore"):
            gram = self.gram + x[..., :, None] * x[..., None, :]
            target = self.target + reward[..., None] * x
        # refuse, with the state unchanged, an observation whose x x^T or r x overflows the running sums
        if not np.isfinite(gram).all():
            raise ValueError("x is too large: adding x x^T overflows the Gram matrix (float64); rescale the contexts.")
        if not np.isfinite(target).all():
            raise ValueError("reward is too large: adding reward * x overflows the target b (float64); rescale the rewards.")
        self.n_observations += keep if mask is not None else 1
        self.gram, self.target = gram, target
        # Sherman-Morrison: (V + x x^T)^{-1} = V^{-1} - V^{-1} x x^T V^{-1} / (1 + x^T V^{-1} x)
        vx = np.einsum("...ij,...j->...i", self.gram_inverse, x)
        denom = 1.0 + np.einsum("...i,...i->...", x, vx)
        self.gram_inverse -= vx[..., :, None] * vx[..., None, :] / denom[..., None, None]

    def add_statistics(self, gram_increment: Any, target_increment: Any, n_observations: Any = 0) -> None:
        """Add whole sufficient statistics (a synchronization, a private release) and re-invert.

        Parameters
        ----------
        gram_increment : array-like of shape ``batch_shape + (d, d,)``
            Symmetric matrix added to ``V``.
        target_increment : array-like of shape ``batch_shape + (d,)``
            Vector added to ``b``.
        n_observations : int or array-like of shape batch_shape, default 0
            Number of observations the increments summarize.

        Raises
        ------
        ValueError
            When the updated ``V`` is not positive definite (a noisy increment too negative).
        """
        gram_increment, target_increment = self._checked_statistics(
            gram_increment, target_increment, "gram_increment", "target_increment"
        )
        counts = as_finite_array(n_observations, "n_observations", dtype=np.int64, allow_empty=True)
        try:
            counts = np.broadcast_to(counts, self.batch_shape)
        except ValueError:
            raise ValueError(f"n_observations must be an int or have shape {self.batch_shape}, got {counts.shape}.") from None
        if (counts < 0).any():
            raise ValueError("n_observations must be >= 0 (the number of observations the increments summarize).")
        with np.errstate(over="ignore", invalid="ignore"):
            gram, target = self.gram + gram_increment, self.target + target_increment
        if not (np.isfinite(gram).all() and np.isfinite(target).all()):
            raise ValueError(
                "gram_increment and target_increment overflow the statistics when added (float64); rescale them."
            )
        self.set_statistics(gram, target)
        self.n_observations = self.n_observations + counts

    def _checked_statistics(self, gram: Any, target: Any, gram_name: str, target_name: str) -> tuple[np.ndarray, np.ndarray]:
        """``gram`` and ``target`` as finite float arrays of the shapes of ``V`` and ``b`` (else a ValueError naming them)."""
        gram = as_finite_array(gram, gram_name, allow_empty=True, allow_nonfinite=True)
        target = as_finite_array(target, target_name, allow_empty=True, allow_nonfinite=True)
        for value, name in ((gram, gram_name), (target, target_name)):
            if not np.isfinite(value).all():
                raise ValueError(f"{name} holds NaN or infinite values; pass finite statistics.")
        if gram.shape != self.gram.shape or target.shape != self.target.shape:
            raise ValueError(
                f"{gram_name} and {target_name} must have shapes {self.gram.shape} and {self.target.shape}, "
                f"got {gram.shape} and {target.shape}."
            )
        return gram, target

    def set_statistics(self, gram: Any, target: Any) -> None:
        """Replace ``V`` and ``b`` (``V`` already includes the regularization) and re-invert.

        Parameters
        ----------
        gram : array-like of shape ``batch_shape + (d, d,)``
            The new ``V``; must be symmetric positive definite.
        target : array-like of shape ``batch_shape + (d,)``
            The new ``b``.

        Raises
        ------
        ValueError
            When ``gram`` is not positive definite.
        """
        gram, target = (np.array(v, dtype=float) for v in self._checked_statistics(gram, target, "gram", "target"))
        with np.errstate(over="ignore"):
            gram = 0.5 * gram + 0.5 * np.swapaxes(gram, -1, -2)
        chol = _cholesky(
            gram,
            "the Gram matrix is not positive definite (a noisy release below the shift?): raise the "
            "regularization or the privacy shift.",
        )
        eye = np.broadcast_to(np.eye(self.dim), gram.shape)
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            chol_inv = np.linalg.solve(chol, eye)
            inverse = np.swapaxes(chol_inv, -1, -2) @ chol_inv
        if not np.isfinite(inverse).all():
            raise ValueError(
                "the Gram matrix is too close to singular to invert in float64 (a noisy release below the shift?): "
                "raise the regularization or the privacy shift."
            )
        self.gram, self.target = gram, target
        self.gram_inverse = inverse

    def theta(self) -> np.ndarray:
        """Ridge estimate ``theta_hat = V^{-1} b`` of every learner.

        Returns
        -------
        numpy.ndarray
            Shape ``batch_shape + (d,)``.
        """
        return np.einsum("...ij,...j->...i", self.gram_inverse, self.target)

    def log_det(self) -> np.ndarray:
        """``ln det V`` of every learner.

        Returns
        -------
        numpy.ndarray
            Shape ``batch_shape``.
        """
        return np.linalg.slogdet(self.gram)[1]

    def norms(self, x: Any) -> np.ndarray:
        """``||x||_{V^{-1}} = sqrt(x^T V^{-1} x)`` for candidate contexts of every learner.

        Parameters
        ----------
        x : array-like of shape ``batch_shape + (n_candidates, d,)``
            Candidates per learner.

        Returns
        -------
        numpy.ndarray
            Shape ``batch_shape + (n_candidates,)``.
        """
        x = as_finite_array(x, "x", allow_empty=True, allow_nonfinite=True)
        if x.ndim != len(self.batch_shape) + 2 or x.shape[: len(self.batch_shape)] != self.batch_shape or x.shape[-1] != self.dim:
            raise ValueError(f"x must have shape {(*self.batch_shape, 'n_candidates', self.dim)}, got {x.shape}.")
        if not np.isfinite(x).all():
            raise ValueError("x holds NaN or infinite values; contexts must be finite.")
        with np.errstate(over="ignore", invalid="ignore"):
            quad = np.einsum("...ki,...ij,...kj->...k", x, self.gram_inverse, x)
        if not np.isfinite(quad).all():
            raise ValueError("x is too large: x^T V^{-1} x overflows float64; rescale the contexts.")
        return np.sqrt(np.maximum(quad, 0.0))

    def copy(self) -> RidgeState:
        """An independent copy.

        Returns
        -------
        RidgeState
            Same statistics, separate arrays.
        """
        other = RidgeState.__new__(RidgeState)
        other.dim, other.batch_shape, other.regularization = self.dim, self.batch_shape, self.regularization
        other.gram, other.target = self.gram.copy(), self.target.copy()
        other.gram_inverse, other.n_observations = self.gram_inverse.copy(), self.n_observations.copy()
        return other

    def __repr__(self) -> str:
        return f"RidgeState(dim={self.dim}, batch_shape={self.batch_shape}, regularization={self.regularization:g})"

