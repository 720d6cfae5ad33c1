"""Noise sources: the only code in dpfair that draws randomness for privacy.

Two implementations of one interface, chosen explicitly:

* :class:`SecureNoise` (the default whenever no ``random_state`` is given). Laplace,
  Gaussian and discrete-Laplace noise come from OpenDP's floating-point-safe samplers
  (``make_laplace`` / ``make_gaussian`` on float vectors, the discrete Laplace for
  integer vectors), which add the noise *to the value* with exact arithmetic and so
  resist the floating-point attacks of Mironov (2012).  Uniform variates (used by the
  exact top-m sampler) come from the operating system's CSPRNG (``os.urandom``).
  OpenDP costs about 20-60 microseconds per float sample: right for one-off releases
  (histograms, count tables, LP inputs), slow for millions of draws.
* :class:`SeededNoise` (when the caller passes ``random_state``): a
  :class:`numpy.random.Generator`.  Reproducible and fast, for experiments and tests.
  **It is not hardened against floating-point attacks and its stream is predictable
  from the seed: do not use it to protect real people.**

Every method takes arrays and returns arrays of the same shape; none loops per sample
in Python.
"""

from __future__ import annotations

import math
import os
from abc import ABC, abstractmethod
from typing import Any

import numpy as np

from dpfair._validation import as_finite_array, check_nonnegative_finite

__all__ = ["NoiseSource", "SecureNoise", "SeededNoise", "get_noise_source"]


class NoiseSource(ABC):
    """Interface shared by the secure and the seeded noise source."""

    #: True for sources meant to protect real data.
    secure: bool = False

    @abstractmethod
    def laplace(self, values: Any, scale: float) -> np.ndarray:
        """Return ``values + Laplace(0, scale)`` noise, elementwise."""

    @abstractmethod
    def gaussian(self, values: Any, scale: float) -> np.ndarray:
        """Return ``values + N(0, scale**2)`` noise, elementwise."""

    @abstractmethod
    def discrete_laplace(self, values: Any, scale: float) -> np.ndarray:
        """Return integer ``values`` plus discrete-Laplace noise ``P(k) ~ exp(-|k|/scale)``."""

    @abstractmethod
    def uniform(self, shape: int | tuple[int, ...]) -> np.ndarray:
        """Independent U[0, 1) variates of the given shape."""

    @abstractmethod
    def noisy_argmax_gumbel(self, scores: Any, scale: float) -> int:
        """Index of ``max(scores + Gumbel(scale))``: ``P(i) ~ exp(scores_i / scale)``."""

    def standard_normal(self, shape: int | tuple[int, ...]) -> np.ndarray:
        """Standard normal variates of the given shape."""
        return self.gaussian(np.zeros(shape), 1.0)


def _prepare(values: Any, scale: float, dtype: Any = float) -> tuple[np.ndarray, float]:
    arr = as_finite_array(values, "values", allow_empty=True, dtype=dtype)
    scale = check_nonnegative_finite(scale, "scale")
    return arr, scale


class SeededNoise(NoiseSource):
    """Reproducible noise from a :class:`numpy.random.Generator`.

    Not hardened against floating-point attacks, and predictable from its seed: use it
    for experiments and tests, never to protect real data.

    Parameters
    ----------
    random_state : int, numpy.random.Generator or numpy.random.SeedSequence
        Seed or generator.
    """

    secure = False

    def __init__(self, random_state: Any) -> None:
        if isinstance(random_state, bool):
            raise TypeError("random_state must be an int, a numpy Generator or a SeedSequence, not a bool.")
        self.rng = np.random.default_rng(random_state)

    def laplace(self, values: Any, scale: float) -> np.ndarray:
        arr, scale = _prepare(values, scale)
        if scale == 0:
            return arr.copy()
        return arr + self.rng.laplace(0.0, scale, size=arr.shape)

    def gaussian(self, values: Any, scale: float) -> np.ndarray:
        arr, scale = _prepare(values, scale)
        if scale == 0:
            return arr.copy()
        return arr + self.rng.normal(0.0, scale, size=arr.shape)

    def discrete_laplace(self, values: Any, scale: float) -> np.ndarray:
        arr, scale = _prepare(values, scale, dtype=np.int64)
        if scale == 0:
            return arr.copy()
        # difference of two i.i.d. geometric variables on {0, 1, ...} is discrete Laplace
        p = -math.expm1(-1.0 / scale)
        g1 = self.rng.geometric(p, size=arr.shape) - 1
        g2 = self.rng.geometric(p, size=arr.shape) - 1
        return arr + g1 - g2

    def uniform(self, shape: int | tuple[int, ...]) -> np.ndarray:
        return self.rng.random(shape)

    def noisy_argmax_gumbel(self, scores: Any, scale: float) -> int:
        arr, scale = _prepare(scores, scale)
        return int(np.argmax(arr + self.rng.gumbel(0.0, scale, size=arr.shape)))

    def __repr__(self) -> str:
        return "SeededNoise(not hardened; for experiments and tests only)"


class SecureNoise(NoiseSource):
    """Floating-point-safe noise from OpenDP, and uniforms from the OS CSPRNG.

    This is the default noise source of every mechanism in dpfair.
    """

    secure = True

    def __init__(self) -> None:
        import opendp.prelude as dp

        dp.enable_features("contrib")
        self._dp = dp

    def _float_space(self, metric: str) -> tuple[Any, Any]:
        dp = self._dp
        domain = dp.vector_domain(dp.atom_domain(T=float, nan=False))
        dist = dp.l1_distance(T=float) if metric == "l1" else dp.l2_distance(T=float)
        return domain, dist

    def laplace(self, values: Any, scale: float) -> np.ndarray:
        arr, scale = _prepare(values, scale)
        if scale == 0 or arr.size == 0:
            return arr.copy()
        meas = self._dp.m.make_laplace(*self._float_space("l1"), scale=scale)
        return np.asarray(meas(arr.ravel().tolist()), dtype=float).reshape(arr.shape)

    def gaussian(self, values: Any, scale: float) -> np.ndarray:
        arr, scale = _prepare(values, scale)
        if scale == 0 or arr.size == 0:
            return arr.copy()
        meas = self._dp.m.make_gaussian(*self._float_space("l2"), scale=scale)
        return np.asarray(meas(arr.ravel().tolist()), dtype=float).reshape(arr.shape)

    def discrete_laplace(self, values: Any, scale: float) -> np.ndarray:
        arr, scale = _prepare(values, scale, dtype=np.int64)
        if scale == 0 or arr.size == 0:
            return arr.copy()
        dp = self._dp
        meas = dp.m.make_laplace(dp.vector_domain(dp.atom_domain(T=int)), dp.l1_distance(T=int), scale=scale)
        return np.asarray(meas([int(v) for v in arr.ravel()]), dtype=np.int64).reshape(arr.shape)

    def uniform(self, shape: int | tuple[int, ...]) -> np.ndarray:
        n = int(np.prod(shape))
        bits = np.frombuffer(os.urandom(8 * n), dtype=np.uint64)
        # 53 random bits -> a uniform double on the grid k * 2**-53 in [0, 1)
        return ((bits >> np.uint64(11)).astype(np.float64) * 2.0**-53).reshape(shape)

    def noisy_argmax_gumbel(self, scores: Any, scale: float) -> int:
        arr, scale = _prepare(scores, scale)
        if arr.ndim != 1 or arr.size == 0:
            raise ValueError("scores must be a non-empty 1-d array.")
        if scale == 0:
            best = np.flatnonzero(arr == arr.max())
            return int(best[int(self.uniform(1)[0] * best.size)])
        dp = self._dp
        # OpenDP adds Gumbel noise when the output measure is zCDP (the exponential
        # mechanism); with MaxDivergence it adds exponential noise instead, which is
        # permute-and-flip, a different distribution.  The measure only selects the noise.
        meas = dp.m.make_noisy_max(
            dp.vector_domain(dp.atom_domain(T=float, nan=False)),
            dp.linf_distance(T=float),
            dp.zero_concentrated_divergence(),
            scale=scale,
        )
        return int(meas(arr.tolist()))

    def __repr__(self) -> str:
        return "SecureNoise(OpenDP samplers, OS CSPRNG uniforms)"


def get_noise_source(random_state: Any = None) -> NoiseSource:
    """Choose the noise source: secure when ``random_state`` is None, seeded otherwise.

    Parameters
    ----------
    random_state : None, int, numpy.random.Generator, numpy.random.SeedSequence or NoiseSource
        ``None`` gives :class:`SecureNoise`; a seed or generator gives
        :class:`SeededNoise` (reproducible, not hardened); a :class:`NoiseSource` is
        returned unchanged.
    """
    if random_state is None:
        return SecureNoise()
    if isinstance(random_state, NoiseSource):
        return random_state
    if isinstance(random_state, (bool, float, str)):
        raise TypeError(
            f"random_state must be None (secure noise), an int seed, a numpy Generator or a NoiseSource, "
            f"got {type(random_state).__name__}."
        )
    return SeededNoise(random_state)
