"""The base of the factorizations ``A = B C`` of the prefix-sum matrix: :class:`Factorization` and its noise stream.

:mod:`dpfair.privacy._factorizations` holds the tree, Honaker and square-root factorizations and resolves a name;
:mod:`dpfair.privacy._blt` the buffered linear Toeplitz one.  Both build on the classes here, which import
neither (no import circle).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dpfair._validation import check_int

_DENSE_LIMIT = 4096  # dense matrices are for tests and small horizons only


def _one_draw(t: int) -> int:
    """The binary tree's draws at step ``t``: its one new node."""
    return 1


class _Stream:
    """A streaming generator of the release noise ``(B z)_t``: one step (:meth:`step`) or many (:meth:`steps`).

    ``n_draws(t)`` rows of ``z`` (in the row order of ``C``) arrive at step ``t``; subclasses implement
    ``_advance(z, n)``, the noise of the next ``n`` steps as ``(n, cols)`` from their draws ``(k, cols)``.
    """

    shape: tuple[int, ...] = ()

    def __init__(self, n_draws: Any, shape: tuple[int, ...]) -> None:
        self.n_draws = n_draws
        self.shape = tuple(shape)
        self.cols = math.prod(self.shape)
        self.t = 0

    def draws_for(self, n: int) -> int:
        """Number of rows of ``z`` the next ``n`` steps draw (what :meth:`steps` takes).

        Parameters
        ----------
        n : int
            Steps.

        Returns
        -------
        int
            ``sum n_draws(t)`` over steps ``t + 1 .. t + n``.
        """
        return sum(self.n_draws(self.t + k) for k in range(1, n + 1))

    def step(self, z: np.ndarray) -> np.ndarray:
        """The noise of the next step from its ``n_draws(t)`` noise vectors ``z`` (shape ``(k, *shape)``).

        Parameters
        ----------
        z : numpy.ndarray
            The noise vectors drawn at this step.

        Returns
        -------
        numpy.ndarray
            ``(B z)_t``, shape ``shape``.
        """
        return self._advance(np.asarray(z, dtype=float).reshape(len(z), self.cols), 1)[0].reshape(self.shape)

    def steps(self, z: np.ndarray, n: int) -> np.ndarray:
        """The noise of the next ``n`` steps from their noise vectors, in draw order (as ``n`` calls of :meth:`step`).

        Parameters
        ----------
        z : numpy.ndarray
            The ``draws_for(n)`` noise vectors of steps ``t + 1 .. t + n``, shape ``(k, *shape)``.
        n : int
            Steps, at least 1.

        Returns
        -------
        numpy.ndarray
            ``(B z)_{t+1} .. (B z)_{t+n}``, shape ``(n, *shape)``, the same numbers :meth:`step` gives.

        Raises
        ------
        ValueError
            When ``z`` does not hold ``draws_for(n)`` vectors of ``shape``.
        """
        n = check_int(n, "n", minimum=1)
        z = np.asarray(z, dtype=float)
        expected = self.draws_for(n)
        if z.shape != (expected, *self.shape):
            raise ValueError(f"z must hold the {expected} noise vectors of the next {n} steps, shape "
                             f"{(expected, *self.shape)}, got {z.shape}.")
        return self._advance(z.reshape(expected, self.cols), n).reshape(n, *self.shape)

    def _advance(self, z: np.ndarray, n: int) -> np.ndarray:
        raise NotImplementedError


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
        ``(n_draws(t), *shape)`` and returns ``(B z)_t``; ``steps(z, n)`` does ``n`` steps at once (the
        same numbers), ``z`` holding their ``draws_for(n)`` vectors in draw order.

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
