"""The release noise of a factorized PRIVATIZER (``continual="honaker"`` or ``"sqrt"``), in integer grid units.

One agent's releases are the prefix sums ``P = A m`` of its rounded increments ``m`` (integers of grid
steps ``g``, exact) plus integer noise: release ``k`` is ``g (P_k + n_k)`` with ``n = round(B z)``,
``A = B C`` a factorization of the prefix-sum matrix (:mod:`dpfair.privacy._factorizations`) and ``z``
Gaussian, computed from ``z`` alone.  Because ``P_k`` is an integer,
``P_k + round((B z)_k) = round((A m + B z)_k) = round((B (C m + z))_k)``: the releases are a
post-processing of the Gaussian mechanism ``C m + z``, and the data never meets a floating-point
operation (no low-order bit of it can leak; Mironov 2012).  ``z`` has one row per row of ``C`` and one
column per distinct entry of the symmetric ``(d+1) x (d+1)`` augmented matrix, off-diagonal std
``sigma`` and diagonal std ``sqrt(2) sigma`` (the law of the tree's node noise): the calibration is in
:func:`dpfair.bandits._privatizer_calibration._calibrate_factorized`.

``z`` is ``sigma * Phi^{-1}(u)`` with ``u`` a 53-bit uniform from 64-bit words of the noise source (the
OS CSPRNG by default; a tree's own SplitMix64 stream with seeded, keyed trees): a data-independent
approximation of the Gaussian at about ``2^-53`` in the uniform and truncated beyond ``8.2 sigma``, then
rounded to the grid ``g ~ sigma / 2^14`` after ``B``.

The noise of release ``k`` of every row is computed in lock-step for all rows (the factorization's
streaming generator, ``n_draws(k)`` rows of ``z`` at step ``k``) and kept in a table, so it is a fixed
function of ``(row, k)`` once drawn whatever the masks of the synchronizations.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from scipy.special import ndtri

from dpfair.privacy.continual import Factorization

__all__: list[str] = []


class _FactorizedNoise:
    """Integer release noise ``round(sigma_units * (B z)_k)`` per row, extended lazily to the largest ``k`` asked.

    ``words(first_draw, k)`` returns the uint64 words of draws ``first_draw .. first_draw + k - 1``,
    shape ``(k, n_rows, n_entries)``.
    """

    def __init__(self, factorization: Factorization, sigma_units: float, on_diagonal: np.ndarray, n_rows: int,
                 words: Callable[[int, int], np.ndarray]) -> None:
        self.factorization = factorization
        self.n_rows, self.n_entries = n_rows, int(on_diagonal.size)
        self.scale = np.where(on_diagonal, math.sqrt(2.0) * sigma_units, sigma_units)
        self.words = words
        self.stream = factorization.stream((n_rows, self.n_entries)) if sigma_units > 0 else None
        # row 0: release 0 (nothing released yet) has no noise; the pages are touched as they are filled
        self.table = np.zeros((factorization.horizon + 1, n_rows, self.n_entries), dtype=np.int64)
        self.filled = 0
        self.draws = 0

    def _gaussian(self, k: int) -> np.ndarray:
        words = self.words(self.draws, k)
        self.draws += k
        uniform = ((words >> np.uint64(11)).astype(float) + 0.5) * 2.0**-53  # in (0, 1), never 0 or 1
        return ndtri(uniform) * self.scale

    def extend(self, upto: int) -> None:
        """Compute the noise of every release up to ``upto`` (in order: the draws are sequential)."""
        if self.stream is None:
            self.filled = max(self.filled, upto)
            return
        while self.filled < upto:
            t = self.filled + 1
            k = self.factorization.n_draws(t)
            z = self._gaussian(k) if k else np.zeros((0, self.n_rows, self.n_entries))
            self.table[t] = np.rint(self.stream.step(z))  # n_t = round((B z)_t): a function of z alone
            self.filled = t

    def units(self, release_index: np.ndarray) -> np.ndarray:
        """``n_k`` of each row (``release_index`` of shape ``(n_rows,)``), int64 ``(n_rows, n_entries)``."""
        self.extend(int(release_index.max(initial=0)))
        return self.table[release_index, np.arange(self.n_rows)]
