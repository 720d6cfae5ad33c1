"""The buffered linear Toeplitz (BLT) factorization of the prefix-sum matrix and its constant-memory noise stream.

``C^{-1}`` has the generating function ``1 + sum_i omega_i x / (1 - theta_i x)`` with ``d`` buffers, its parameters
optimised for the horizon (:func:`blt_parameters`: public, a function of ``T`` only); ``B = A C^{-1}`` (Dvijotham,
McMahan, Pillutla, Steinke & Thakurta 2024; McKenna 2024).  :mod:`dpfair.privacy._factorizations` describes all four
factorizations and re-exports every name here.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from dpfair._validation import check_int
from dpfair.privacy._factorization_base import Factorization, _one_draw, _Stream

__all__ = ["BLTFactorization", "blt_parameters"]


# ------------------------------------------------------------------------------------ buffered linear Toeplitz
def _blt_parts(theta: np.ndarray, omega: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(r, p)``, ascending coefficients: ``q(x) = 1 + sum_i omega_i x / (1 - theta_i x) = p(x) / r(x)``,
    ``r(x) = prod_i (1 - theta_i x)``."""
    r = np.array([1.0])
    for t in theta:
        r = np.convolve(r, [1.0, -t])
    p = r.copy()
    for i in range(theta.size):
        others = np.array([1.0])
        for k, t in enumerate(theta):
            if k != i:
                others = np.convolve(others, [1.0, -t])
        p[1 : 1 + others.size] += omega[i] * others
    return r, p


def _blt_closed_forms(theta: np.ndarray, omega: np.ndarray, horizon: int) -> tuple[float, float]:
    """``(sum_{j<T} c_j^2, sum_{j<T} b_j^2)`` in closed form (the optimiser's objective, ``O(d^2)``, any ``T``).

    ``b_j = beta - sum_i g_i theta_i^j`` with ``g_i = omega_i / (1 - theta_i)``, ``beta = 1 + sum_i g_i``; ``c = r / p``
    is ``c_0 + sum_i kappa_i rho_i^j`` by partial fractions over the zeros ``1 / rho_i`` of ``p``; ``inf`` when a
    ``|rho_i| >= 1`` (``C`` would grow without bound).
    """
    T = horizon

    def geometric(ratio: Any, start: int, count: int) -> Any:  # sum_{j=start}^{start+count-1} ratio^j
        ratio = np.asarray(ratio)
        near = np.abs(1.0 - ratio) < 1e-12
        safe = np.where(near, 0.5, ratio)
        return np.where(near, float(count), safe**start * (1.0 - safe**count) / (1.0 - safe))

    g = omega / (1.0 - theta)
    beta = 1.0 + g.sum()  # = q(1): with omega < 0, q decreases on [0, 1], so q(1) <= 0 puts a pole of C in (0, 1]
    if beta <= 0.0:
        return math.inf, math.inf
    sum_b = (T * beta**2 - 2.0 * beta * float((g * geometric(theta, 0, T)).sum())
             + float((np.outer(g, g) * geometric(np.outer(theta, theta), 0, T)).sum()))
    r, p = _blt_parts(theta, omega)
    if abs(p[-1]) < 1e-300:
        return math.inf, sum_b
    zeros = np.roots(p[::-1])
    if zeros.size != theta.size or np.any(np.abs(zeros) <= 1.0 + 1e-12):  # a pole on or inside the unit circle
        return math.inf, sum_b
    rho = 1.0 / zeros
    dp = np.polyval(np.polyder(p[::-1]), zeros)
    kappa = -(np.polyval(r[::-1], zeros) / dp) / zeros  # c_j = sum_i kappa_i rho_i^j, j >= 1
    tail = np.outer(kappa, kappa) * geometric(np.outer(rho, rho), 1, T - 1)
    return 1.0 + float(np.real(tail.sum())), sum_b


def _blt_inverse_python(theta, omega, horizon):  # pragma: no cover - run compiled
    """The coefficients of ``1 / (1 + sum_i omega_i x / (1 - theta_i x))`` up to ``x^(horizon - 1)``."""
    out = np.empty(horizon)
    state = np.zeros(theta.size)
    for t in range(horizon):
        value = 1.0 if t == 0 else 0.0
        for i in range(theta.size):
            value -= omega[i] * state[i]
        for i in range(theta.size):
            state[i] = theta[i] * state[i] + value
        out[t] = value
    return out


_INVERSE: Any = None


def _blt_inverse(theta: np.ndarray, omega: np.ndarray, horizon: int) -> np.ndarray:
    """:func:`_blt_inverse_python`, compiled by numba at the first use."""
    global _INVERSE
    if _INVERSE is None:
        import numba

        try:
            _INVERSE = numba.njit(cache=True, nogil=True)(_blt_inverse_python)
        except RuntimeError:  # no cache locator (a read-only install): compiled in memory
            _INVERSE = numba.njit(cache=False, nogil=True)(_blt_inverse_python)
    return _INVERSE(np.ascontiguousarray(theta, dtype=float), np.ascontiguousarray(omega, dtype=float), int(horizon))


def _blt_objective(params: np.ndarray, buffers: int, horizon: int) -> float:
    theta = 1.0 / (1.0 + np.exp(-params[:buffers]))
    omega = -np.exp(params[buffers:])
    sum_c, sum_b = _blt_closed_forms(theta, omega, horizon)
    if not (math.isfinite(sum_c) and sum_b > 0):
        return 1e6
    return 0.5 * (math.log(sum_c) + math.log(sum_b))


@functools.lru_cache(maxsize=32)
def blt_parameters(horizon: int, buffers: int = 3) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """``(theta, omega)`` of the BLT whose worst release is least noisy at ``horizon`` (a deterministic optimisation).

    Minimises ``sens(C) max_t ||B_t|| = sqrt(sum_{j<T} c_j^2) sqrt(sum_{j<T} b_j^2)`` (both sums are the worst
    column and the worst row: their prefixes only grow) over ``theta`` in ``(0, 1)`` and ``omega < 0`` (the
    coefficients of ``C^{-1} ~ (1 - x)^{1/2}`` after the first are negative), from a least-squares fit of
    ``(1 - x)^{1/2}``'s coefficients, by Nelder-Mead on the closed forms (:func:`_blt_closed_forms`).  The
    parameters are public (a function of the horizon only); the accounting uses the coefficients they define,
    whatever the optimum's quality.

    Parameters
    ----------
    horizon : int
        Number of releases ``T``.
    buffers : int, default 3
        Number of buffers ``d``.

    Returns
    -------
    tuple
        ``theta`` and ``omega``, ``d`` floats each.
    """
    from scipy import optimize

    T = check_int(horizon, "horizon", minimum=1)
    d = check_int(buffers, "buffers", minimum=1)
    theta0 = 1.0 - np.exp(np.linspace(math.log(4.0 / max(T, 8)), math.log(0.5), d))
    j = np.arange(1, min(T, 4096), dtype=float)
    target = np.cumprod((j - 1.5) / j)  # coefficients 1.. of (1 - x)^{1/2}: negative
    basis = theta0[None, :] ** (j[:, None] - 1.0)
    weights, _ = optimize.nnls(basis, -target)
    weights = np.maximum(weights, 1e-6)
    weights *= min(1.0, 0.9 / float((weights / (1.0 - theta0)).sum()))  # start stable: q(1) = beta >= 0.1
    x0 = np.concatenate([np.log(theta0 / (1.0 - theta0)), np.log(weights)])
    best = optimize.minimize(_blt_objective, x0, args=(d, T), method="Nelder-Mead",
                             options={"maxiter": 600 * d, "xatol": 1e-7, "fatol": 1e-12})
    theta = 1.0 / (1.0 + np.exp(-best.x[:d]))
    omega = -np.exp(best.x[d:])
    return tuple(float(t) for t in theta), tuple(float(w) for w in omega)


class BLTFactorization(Factorization):
    """A buffered linear Toeplitz factorization: ``C^{-1}`` is BLT, so the release noise needs ``d`` buffers per entry.

    ``C^{-1}`` is lower-triangular Toeplitz with ``q_0 = 1`` and ``q_j = sum_i omega_i theta_i^(j-1)`` (``j >= 1``):
    the generating function ``1 + sum_i omega_i x / (1 - theta_i x)`` (Dvijotham, McMahan, Pillutla, Steinke &
    Thakurta 2024; McKenna 2024).  ``B = A C^{-1}`` (Toeplitz, ``b_j = q_0 + ... + q_j``) and ``C`` (Toeplitz,
    the coefficients of ``1 / q(x)``, a rational function: a recursion of order ``d``).  Release ``t``'s noise
    ``(B z)_t = n_{t-1} + w_t`` with ``w = C^{-1} z``, ``w_t = z_t + sum_i omega_i s_i`` and the buffers
    ``s_i <- theta_i s_i + z_t``: memory ``O(d)`` noise vectors, ``O(d)`` work per release, whatever ``T``.

    Privacy is the matrix mechanism's, from ``C``'s column norms: ``sens(C) = max_s ||C e_s||``, column ``s``
    holding ``c_0 .. c_{T-s}`` (the first column is the largest), computed from ``C``'s coefficients (the
    recursion ``p c = r``), not from the optimiser's closed forms.  ``C`` is lower-triangular: adaptive streams
    keep the guarantee (Denisov et al. 2022).

    Parameters
    ----------
    horizon : int
        Number of releases ``T``.
    buffers : int, default 3
        Number of buffers ``d`` (:func:`blt_parameters` chooses ``theta`` and ``omega`` for the horizon).
    """

    name = "blt"
    memory = "O(1)"

    def __init__(self, horizon: int, *, buffers: int = 3) -> None:
        super().__init__(horizon)
        self.buffers = check_int(buffers, "buffers", minimum=1)
        theta, omega = blt_parameters(self.horizon, self.buffers)
        self.theta, self.omega = np.array(theta), np.array(omega)

    def __repr__(self) -> str:
        return f"BLTFactorization(horizon={self.horizon}, buffers={self.buffers})"

    def inverse_coefficients(self) -> np.ndarray:
        """``q_j``, ``j < T``: the Toeplitz coefficients of ``C^{-1}``."""
        j = np.arange(self.horizon - 1, dtype=float)
        q = np.empty(self.horizon)
        q[0] = 1.0
        q[1:] = (self.omega[:, None] * self.theta[:, None] ** j[None, :]).sum(axis=0)
        return q

    def coefficients(self) -> np.ndarray:
        """``c_j``, ``j < T``: the Toeplitz coefficients of ``C = (C^{-1})^{-1}``.

        ``q c = 1`` in the buffers' (parallel) form: ``c_t = [t = 0] - sum_i omega_i s_i``, ``s_i <- theta_i s_i + c_t``
        -- the recursion the noise stream runs, well conditioned where the polynomial form ``p c = r`` (poles
        clustered near 1) loses digits at long horizons.
        """
        return _blt_inverse(self.theta, self.omega, self.horizon)

    def column_norms(self) -> np.ndarray:
        c = self.coefficients()
        return np.sqrt(np.cumsum(c * c))[::-1].copy()

    def release_norms(self) -> np.ndarray:
        b = np.cumsum(self.inverse_coefficients())
        return np.sqrt(np.cumsum(b * b))

    def matrices(self) -> tuple[np.ndarray, np.ndarray]:
        self._check_dense()
        T = self.horizon
        lag = np.subtract.outer(np.arange(T), np.arange(T))
        where = np.clip(lag, 0, None)
        b, c = np.cumsum(self.inverse_coefficients()), self.coefficients()
        return np.where(lag >= 0, b[where], 0.0), np.where(lag >= 0, c[where], 0.0)

    def stream(self, shape: tuple[int, ...]) -> _BLTStream:
        return _BLTStream(self.theta, self.omega, shape)


class _BLTStream(_Stream):
    """``(B z)_t = n_{t-1} + z_t + sum_i omega_i s_i``, then ``s_i <- theta_i s_i + z_t``: ``d + 1`` vectors kept."""

    def __init__(self, theta: np.ndarray, omega: np.ndarray, shape: tuple[int, ...]) -> None:
        super().__init__(_one_draw, shape)
        self.theta, self.omega = theta[:, None], omega[:, None]
        self.buffers = np.zeros((theta.size, self.cols))
        self.total = np.zeros(self.cols)

    def draws_for(self, n: int) -> int:
        return n  # one noise vector per step

    def _advance(self, z: np.ndarray, n: int) -> np.ndarray:
        out = np.empty((n, self.cols))
        _blt_steps(self.theta[:, 0].copy(), self.omega[:, 0].copy(), self.buffers, self.total,
                   np.ascontiguousarray(z[:n]), out)
        self.t += n
        return out


def _blt_steps_python(theta, omega, buffers, total, z, out):  # pragma: no cover - run compiled
    """``n`` steps of :class:`_BLTStream` in place: ``total += z_t + sum_i omega_i s_i`` then ``s_i = theta_i s_i + z_t``."""
    for k in range(z.shape[0]):
        for c in range(z.shape[1]):
            w = 0.0
            for i in range(theta.size):
                w += omega[i] * buffers[i, c]
            zk = z[k, c]
            total[c] += zk + w
            for i in range(theta.size):
                buffers[i, c] = theta[i] * buffers[i, c] + zk
            out[k, c] = total[c]


_STEPS: Any = None


def _blt_steps(theta, omega, buffers, total, z, out) -> None:
    """:func:`_blt_steps_python`, compiled by numba at the first use."""
    global _STEPS
    if _STEPS is None:
        import numba

        try:
            _STEPS = numba.njit(cache=True, nogil=True)(_blt_steps_python)
        except RuntimeError:  # no cache locator (a read-only install): compiled in memory
            _STEPS = numba.njit(cache=False, nogil=True)(_blt_steps_python)
    _STEPS(theta, omega, buffers, total, z, out)
