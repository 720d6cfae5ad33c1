"""Factorizations ``A = B C`` of the prefix-sum matrix for continual release (the matrix mechanism).

The prefix-sum ("continual counting") matrix ``A`` is the ``T x T`` all-ones lower-triangular
matrix: ``(A x)_t = x_1 + ... + x_t``.  A factorization ``A = B C`` releases ``B (C x + z)`` with
Gaussian ``z ~ N(0, sigma^2 I)``, i.e. the exact prefix sums ``A x`` plus correlated noise ``B z``
(Li, Miklau, Hay, McGregor & Rastogi 2015; Denisov, McMahan, Rush, Smith & Thakurta 2022).

* **Privacy.**  Replacing one element ``x_s`` by ``x_s'`` (``||x_s - x_s'||_2 <= Delta``) moves
  ``C x`` by ``C e_s (x_s - x_s')``, of norm ``<= Delta ||C e_s||``.  So the release is
  ``rho``-zCDP with ``rho = (Delta * sens(C))^2 / (2 sigma^2)``, ``sens(C) = max_s ||C e_s||``
  (the Gaussian mechanism; Bun & Steinke 2016, Prop. 1.6), exactly, with equality for the
  worst column.  Every ``C`` here is lower-triangular in time (row ``r`` of ``C`` only reads elements
  that have arrived when its noise is drawn), which keeps the guarantee for adaptively chosen streams
  (Denisov et al. 2022, Thm. 2.1).
* **Error.**  Release ``t`` carries noise ``(B z)_t`` of standard deviation ``sigma ||B_t||``
  (row norm of ``B``), per entry.

Three factorizations, each with its analytic row / column norms, a dense form for tests and a
streaming noise generator:

``"tree"``
    The binary tree of :class:`~dpfair.privacy.BinaryTreeMechanism` (Dwork et al. 2010; Chan, Shi
    & Song 2011): one node per step, the dyadic block ``[t - 2^lsb(t) + 1, t]``; release ``t`` sums the
    ``popcount(t)`` nodes of its binary decomposition.  ``sens = sqrt(floor(log2 T) + 1)``; memory
    ``O(log T)``.
``"honaker"``
    Honaker's (2015) estimator on the full dyadic tree (every node of sizes ``1, 2, ..., 2^(L-1)``, so
    ``lsb(t) + 1`` nodes end at step ``t``; same sensitivity as the tree).  Each completed node's
    estimate is the inverse-variance mix of its own noisy value and the sum of its children's
    estimates (the bottom-up pass: ``V_0 = 1``, ``V_i = 2 V_{i-1} / (2 V_{i-1} + 1)``), which is the
    best linear unbiased estimate of the prefix sum from every node completed by ``t``.  Memory ``O(log T)``.
``"sqrt"``
    The square-root factorization ``B = C = A^{1/2}``: lower-triangular Toeplitz with
    ``c_j = C(2j, j) / 4^j`` (the Taylor coefficients of ``(1 - x)^{-1/2}``, so ``C . C = A``;
    Fichtenberger, Henzinger & Upadhyay 2023; Henzinger, Upadhyay & Upadhyay 2023).  Release ``t``'s
    noise is the convolution ``sum_{j < t} c_j z_{t-j}``: memory ``O(T)`` noise vectors; the ``z`` are
    drawn ahead in doubling blocks and each block's noise is one FFT convolution (``O(log T)`` amortized
    per release; the direct sum would be ``O(t)``).  ``sens = ||c||_2 ~ sqrt(ln(T) / pi)``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy.signal import fftconvolve

from dpfair._validation import check_int

__all__ = [
    "FACTORIZATIONS",
    "Factorization",
    "HonakerFactorization",
    "SqrtFactorization",
    "TreeFactorization",
    "get_factorization",
]

_DENSE_LIMIT = 4096  # dense matrices are for tests and small horizons only


def _lsb(t: int) -> int:
    """Index of the lowest set bit of ``t >= 1``."""
    return (t & -t).bit_length() - 1


def _popcounts(horizon: int) -> np.ndarray:
    t = np.arange(1, horizon + 1, dtype=np.int64)
    return np.array([int(v).bit_count() for v in t], dtype=np.int64)


def _prefix_matrix(horizon: int) -> np.ndarray:
    return np.tril(np.ones((horizon, horizon)))


class Factorization:
    """A factorization ``A = B C`` of the ``T x T`` prefix-sum matrix, with its streaming noise.

    Subclasses give the analytic norms (:meth:`column_norms`, :meth:`release_norms`), the dense
    matrices (:meth:`matrices`, small ``T``) and the streaming generator of the release noise
    ``(B z)_t`` (:meth:`stream`), which consumes the rows of ``z`` in the order of the rows of ``C``:
    :meth:`n_draws` ``(t)`` of them at step ``t``.

    Parameters
    ----------
    horizon : int
        Number of releases ``T >= 1``.
    """

    name: str = ""
    memory: str = ""

    def __init__(self, horizon: int) -> None:
        self.horizon = check_int(horizon, "horizon", minimum=1)
        self.n_levels = self.horizon.bit_length()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(horizon={self.horizon})"

    def n_draws(self, t: int) -> int:
        """Number of noise vectors (rows of ``z``, in the row order of ``C``) drawn at step ``t``.

        The trees draw the rows of the nodes completed at ``t``; the square root draws a block ahead.

        Parameters
        ----------
        t : int
            The step, from 1.

        Returns
        -------
        int
            How many noise vectors step ``t`` draws.
        """
        return 1

    @property
    def n_rows(self) -> int:
        """Number of rows of ``C`` (the length of the noise vector ``z``)."""
        return self.horizon

    def column_norms(self) -> np.ndarray:
        """``||C e_s||_2`` for ``s = 1..T`` (analytic)."""
        raise NotImplementedError

    def release_norms(self) -> np.ndarray:
        """``||B_t||_2`` (row norms of ``B``) for ``t = 1..T``: release ``t``'s noise std in units of ``sigma``."""
        raise NotImplementedError

    @property
    def sensitivity(self) -> float:
        """``max_s ||C e_s||_2``: the L2 sensitivity of ``C x`` to one element of unit norm."""
        return float(self.column_norms().max())

    def error(self) -> dict[str, float]:
        """Noise standard deviation of the releases in units of ``Delta / sqrt(2 rho)`` (at equal ``rho``).

        Returns
        -------
        dict
            ``{"worst": sens * max_t ||B_t||, "rms": sens * sqrt(mean_t ||B_t||^2)}``.
        """
        norms = self.release_norms()
        sens = self.sensitivity
        return {"worst": sens * float(norms.max()), "rms": sens * math.sqrt(float(np.mean(norms * norms)))}

    def matrices(self) -> tuple[np.ndarray, np.ndarray]:
        """Dense ``(B, C)`` with ``B @ C`` the prefix-sum matrix (``T <= 4096``)."""
        raise NotImplementedError

    def _check_dense(self) -> None:
        if self.horizon > _DENSE_LIMIT:
            raise ValueError(f"matrices() is for horizons <= {_DENSE_LIMIT}, got {self.horizon}; use the analytic norms.")

    def stream(self, shape: tuple[int, ...]) -> Any:
        """A fresh streaming generator of the release noise for elements of ``shape``.

        Its ``step(z)`` takes the ``n_draws(t)`` noise vectors of step ``t`` as an array of shape
        ``(n_draws(t), *shape)`` and returns ``(B z)_t``.

        Parameters
        ----------
        shape : tuple of int
            The shape of one element of the stream.

        Returns
        -------
        object
            The generator, with a ``step(z)`` method.
        """
        raise NotImplementedError


# ---------------------------------------------------------------------------------------------- binary tree
class TreeFactorization(Factorization):
    """The binary tree of :class:`~dpfair.privacy.BinaryTreeMechanism`: node ``t`` is ``[t - 2^lsb(t) + 1, t]``."""

    name = "tree"
    memory = "O(log T)"

    def column_norms(self) -> np.ndarray:
        # element s lies in the level-i node ending at e = ceil(s / 2^i) 2^i iff e <= T and lsb(e) == i
        s = np.arange(1, self.horizon + 1, dtype=np.int64)
        count = np.zeros(self.horizon)
        for i in range(self.n_levels):
            end = -(-s // 2**i) * 2**i
            count += (end <= self.horizon) & ((end >> i) & 1 == 1)
        return np.sqrt(count)

    def release_norms(self) -> np.ndarray:
        return np.sqrt(_popcounts(self.horizon).astype(float))

    def matrices(self) -> tuple[np.ndarray, np.ndarray]:
        self._check_dense()
        T = self.horizon
        C = np.zeros((T, T))
        B = np.zeros((T, T))
        for t in range(1, T + 1):
            C[t - 1, t - 2 ** _lsb(t) : t] = 1.0
            for i in range(self.n_levels):
                if (t >> i) & 1:  # the node of bit i of t ends at (t >> (i+1) << (i+1)) + 2^i, which is node number end
                    B[t - 1, ((t >> (i + 1)) << (i + 1)) + 2**i - 1] = 1.0
        return B, C

    def stream(self, shape: tuple[int, ...]) -> _TreeStream:
        return _TreeStream(self.n_levels, shape)


class _TreeStream:
    """Noise of the binary tree: one node per step, ``O(log T)`` noise vectors kept."""

    def __init__(self, n_levels: int, shape: tuple[int, ...]) -> None:
        self.nodes = np.zeros((n_levels, *shape))
        self.t = 0

    def step(self, z: np.ndarray) -> np.ndarray:
        t = self.t + 1
        level = _lsb(t)
        self.nodes[level] = z[0]
        self.nodes[:level] = 0.0
        self.t = t
        return self.nodes[[i for i in range(len(self.nodes)) if (t >> i) & 1]].sum(axis=0)


# ------------------------------------------------------------------------------------------------ Honaker
def _honaker_variances(n_levels: int) -> np.ndarray:
    """``V_i``: variance (units of sigma^2) of a level-``i`` node's bottom-up estimate; also its own weight."""
    v = np.ones(n_levels)
    for i in range(1, n_levels):
        v[i] = 2.0 * v[i - 1] / (2.0 * v[i - 1] + 1.0)  # 1 / (1 + 1 / (2 V_{i-1})): inverse-variance mix
    return v


class HonakerFactorization(Factorization):
    """Honaker's bottom-up estimator on the full dyadic tree (``lsb(t) + 1`` nodes end at step ``t``)."""

    name = "honaker"
    memory = "O(log T)"

    def n_draws(self, t: int) -> int:
        return _lsb(t) + 1

    @property
    def n_rows(self) -> int:
        return sum(self.horizon >> i for i in range(self.n_levels))

    def column_norms(self) -> np.ndarray:
        # element s lies in one node per level i, completed iff ceil(s / 2^i) 2^i <= T
        s = np.arange(1, self.horizon + 1, dtype=np.int64)
        count = np.zeros(self.horizon)
        for i in range(self.n_levels):
            count += -(-s // 2**i) * 2**i <= self.horizon
        return np.sqrt(count)

    def release_norms(self) -> np.ndarray:
        v = _honaker_variances(self.n_levels)
        t = np.arange(1, self.horizon + 1, dtype=np.int64)
        var = np.zeros(self.horizon)
        for i in range(self.n_levels):
            var += v[i] * ((t >> i) & 1)
        return np.sqrt(var)

    def rows(self) -> list[tuple[int, int]]:
        """``(end, level)`` of each row of ``C``, in draw order (by end, then level)."""
        return [(t, i) for t in range(1, self.horizon + 1) for i in range(_lsb(t) + 1)]

    def matrices(self) -> tuple[np.ndarray, np.ndarray]:
        self._check_dense()
        rows = self.rows()
        v = _honaker_variances(self.n_levels)
        C = np.zeros((len(rows), self.horizon))
        est: dict[tuple[int, int], np.ndarray] = {}  # each node's estimate as a row vector over z
        for k, (end, i) in enumerate(rows):
            C[k, end - 2**i : end] = 1.0
            own = np.zeros(len(rows))
            own[k] = 1.0
            if i == 0:
                est[(end, i)] = own
            else:
                children = est[(end - 2 ** (i - 1), i - 1)] + est[(end, i - 1)]
                est[(end, i)] = v[i] * own + (1.0 - v[i]) * children
        B = np.zeros((self.horizon, len(rows)))
        for t in range(1, self.horizon + 1):
            for i in range(self.n_levels):
                if (t >> i) & 1:
                    B[t - 1] += est[(((t >> (i + 1)) << (i + 1)) + 2**i, i)]
        return B, C

    def stream(self, shape: tuple[int, ...]) -> _HonakerStream:
        return _HonakerStream(self.n_levels, shape)


class _HonakerStream:
    """Bottom-up Honaker estimates of the latest completed node of each level: ``O(log T)`` vectors."""

    def __init__(self, n_levels: int, shape: tuple[int, ...]) -> None:
        self.weights = _honaker_variances(n_levels)
        self.est = np.zeros((n_levels, *shape))
        self.t = 0

    def step(self, z: np.ndarray) -> np.ndarray:
        t = self.t + 1
        top = _lsb(t)
        est, w = self.est, self.weights
        new = z[0]
        for i in range(1, top + 1):  # left child: est[i-1] (ended at t - 2^(i-1)); right child: the new one
            new, est[i - 1] = w[i] * z[i] + (1.0 - w[i]) * (est[i - 1] + new), new
        est[top] = new
        self.t = t
        return est[[i for i in range(len(est)) if (t >> i) & 1]].sum(axis=0)


# -------------------------------------------------------------------------------------------- square root
def sqrt_coefficients(horizon: int) -> np.ndarray:
    """``c_j = C(2j, j) / 4^j`` for ``j = 0..T-1`` (recurrence ``c_j = c_{j-1} (2j - 1) / (2j)``)."""
    horizon = check_int(horizon, "horizon", minimum=1)
    j = np.arange(1, horizon, dtype=float)
    return np.concatenate([[1.0], np.cumprod((2.0 * j - 1.0) / (2.0 * j))])


class SqrtFactorization(Factorization):
    """The square root of the prefix-sum matrix: ``B = C``, Toeplitz with ``c_j = C(2j, j) / 4^j``.

    Parameters
    ----------
    horizon : int
        Number of releases ``T``.
    block : int, default 256
        The noise vectors ``z_t`` do not depend on the data, so they are drawn ahead, in blocks (which
        changes nothing in the distribution of the releases, adaptive streams included): a block starting
        at step ``t`` covers ``max(block, t - 1)`` steps, so the blocks double and at most about twice the
        steps used are ever drawn.  Each block's noise ``(C z)_t`` is one FFT convolution over the stored
        ``z``: ``O(T log T)`` in all, ``O(log T)`` per release amortized, instead of the ``O(t)`` per
        release of the direct sum.  Memory ``O(T)`` noise vectors either way.
    """

    name = "sqrt"
    memory = "O(T)"

    def __init__(self, horizon: int, *, block: int = 256) -> None:
        super().__init__(horizon)
        self.block = check_int(block, "block", minimum=1)
        self.coefficients = sqrt_coefficients(self.horizon)
        self._blocks: dict[int, int] = {}  # first step -> number of steps (O(log T) blocks)
        start = 1
        while start <= self.horizon:
            size = min(max(self.block, start - 1), self.horizon - start + 1)
            self._blocks[start] = size
            start += size

    def n_draws(self, t: int) -> int:
        return self._blocks.get(t, 0)

    def column_norms(self) -> np.ndarray:
        # column s of the Toeplitz C holds c_0..c_{T-s}
        return np.sqrt(np.cumsum(self.coefficients**2))[::-1].copy()

    def release_norms(self) -> np.ndarray:
        return np.sqrt(np.cumsum(self.coefficients**2))

    def matrices(self) -> tuple[np.ndarray, np.ndarray]:
        self._check_dense()
        T = self.horizon
        lag = np.subtract.outer(np.arange(T), np.arange(T))
        C = np.where(lag >= 0, self.coefficients[np.clip(lag, 0, None)], 0.0)
        return C, C.copy()

    def stream(self, shape: tuple[int, ...]) -> _SqrtStream:
        return _SqrtStream(self.coefficients, shape)


class _SqrtStream:
    """The Toeplitz convolution ``(C z)_t = sum_{j < t} c_j z_{t-j}`` over all stored ``z``: ``O(T)`` memory."""

    def __init__(self, coefficients: np.ndarray, shape: tuple[int, ...]) -> None:
        self.shape = shape
        self.coefficients = coefficients  # computed once
        self.z = np.empty((len(coefficients), math.prod(shape)))
        self.noise = np.zeros((0, math.prod(shape)))
        self.offset = 0
        self.t = 0

    def step(self, z: np.ndarray) -> np.ndarray:
        t = self.t + 1
        if len(z):  # a new block: z_t .. z_{t+k-1}, and the noise of releases t .. t+k-1 by one FFT convolution
            end = t - 1 + len(z)
            self.z[t - 1 : end] = z.reshape(len(z), -1)
            self.noise = fftconvolve(self.coefficients[:end, None], self.z[:end], axes=0)[t - 1 : end]
            self.offset = t - 1
        self.t = t
        return self.noise[t - 1 - self.offset].reshape(self.shape)


FACTORIZATIONS: dict[str, type[Factorization]] = {
    "tree": TreeFactorization,
    "honaker": HonakerFactorization,
    "sqrt": SqrtFactorization,
}


def get_factorization(factorization: Any, horizon: int) -> Factorization:
    """Resolve ``factorization`` (a name in :data:`FACTORIZATIONS` or an instance) for ``horizon``.

    Parameters
    ----------
    factorization : str or Factorization
        ``"tree"``, ``"honaker"`` or ``"sqrt"``, or a :class:`Factorization` of the same horizon.
    horizon : int
        Number of releases.

    Returns
    -------
    Factorization
        The factorization of the prefix-sum matrix for ``horizon`` releases.

    Raises
    ------
    TypeError, ValueError
        For an unknown name, another type, or an instance built for another horizon.
    """
    horizon = check_int(horizon, "horizon", minimum=1)
    if isinstance(factorization, Factorization):
        if factorization.horizon != horizon:
            raise ValueError(
                f"factorization was built for horizon {factorization.horizon}, not {horizon}; "
                "pass its name or build it with the mechanism's horizon."
            )
        return factorization
    if not isinstance(factorization, str):
        raise TypeError(f"factorization must be one of {sorted(FACTORIZATIONS)} or a Factorization, got "
                        f"{type(factorization).__name__}.")
    if factorization not in FACTORIZATIONS:
        raise ValueError(f"factorization must be one of {sorted(FACTORIZATIONS)}, got {factorization!r}.")
    return FACTORIZATIONS[factorization](horizon)
