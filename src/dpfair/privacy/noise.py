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
import numbers
import os
from abc import ABC, abstractmethod
from typing import Any

import numpy as np

from dpfair._validation import as_finite_array, check_int, check_nonnegative_finite

__all__ = ["NoiseSource", "SecureNoise", "SeededNoise", "get_noise_source"]

# Noise is bounded, in practice, by ~40 scales (Laplace from 53-bit uniforms: ln(2**53) ~ 37;
# Gaussian and Gumbel far less often).  ``values + _NOISE_REACH * scale`` must stay finite,
# so a release can never overflow to inf.
_NOISE_REACH = 1000.0
_MAX_FLOAT = float(np.finfo(float).max)


class NoiseSource(ABC):
    """Interface shared by the secure and the seeded noise source."""

    #: True for sources meant to protect real data.
    secure: bool = False

    @abstractmethod
    def laplace(self, values: Any, scale: float) -> np.ndarray:
        """Return ``values + Laplace(0, scale)`` noise, elementwise.

        Parameters
        ----------
        values : array-like of real numbers
            Any shape (empty and 0-d included).
        scale : float
            Laplace scale ``b >= 0`` (finite); 0 returns a copy of ``values``.

        Returns
        -------
        ndarray of float
            Same shape as ``values``.
        """

    @abstractmethod
    def gaussian(self, values: Any, scale: float) -> np.ndarray:
        """Return ``values + N(0, scale**2)`` noise, elementwise.

        Parameters
        ----------
        values : array-like of real numbers
            Any shape.
        scale : float
            Standard deviation ``>= 0`` (finite).

        Returns
        -------
        ndarray of float
            Same shape as ``values``.
        """

    @abstractmethod
    def discrete_laplace(self, values: Any, scale: float) -> np.ndarray:
        """Return integer ``values`` plus discrete-Laplace noise ``P(k) ~ exp(-|k|/scale)``.

        Parameters
        ----------
        values : array-like of integers
            Integral values (``1.7`` is refused, never truncated).
        scale : float
            Scale ``>= 0`` (finite).

        Returns
        -------
        ndarray of int64
            Same shape as ``values``.
        """

    @abstractmethod
    def uniform(self, shape: int | tuple[int, ...]) -> np.ndarray:
        """Draw independent U[0, 1) variates of the given shape.

        Parameters
        ----------
        shape : int or tuple of int
            Non-negative sizes.

        Returns
        -------
        ndarray of float
            Independent U[0, 1) variates of shape ``shape``.
        """

    @abstractmethod
    def noisy_argmax_gumbel(self, scores: Any, scale: float) -> int:
        """Return the index of ``max(scores + Gumbel(scale))``: ``P(i) ~ exp(scores_i / scale)``.

        Parameters
        ----------
        scores : array-like of shape (n,)
            Non-empty, finite.
        scale : float
            Gumbel scale ``>= 0``; 0 picks uniformly among the maximizers.

        Returns
        -------
        int
            The selected index, in ``[0, n)``.
        """

    def _uniform_argmax(self, scores: np.ndarray) -> int:
        """Return one of the maximizers of ``scores``, chosen uniformly with :meth:`uniform`.

        The ``scale = 0`` (``epsilon = inf``) case of :meth:`noisy_argmax_gumbel` and of the
        exponential mechanism.

        Parameters
        ----------
        scores : ndarray of shape (n,)
            Non-empty, finite.

        Returns
        -------
        int
            The selected index, in ``[0, n)``.
        """
        best = np.flatnonzero(scores == scores.max())
        return int(best[min(int(self.uniform(1)[0] * best.size), best.size - 1)])

    def random_words(self, shape: int | tuple[int, ...]) -> np.ndarray:
        """Draw independent uniform 64-bit words (for table samplers such as :class:`~dpfair.privacy.lattice.LatticeGaussian`).

        Parameters
        ----------
        shape : int or tuple of int
            Non-negative sizes.

        Returns
        -------
        ndarray of uint64
            Independent uniform words of shape ``shape``.

        Raises
        ------
        NotImplementedError
            For a user-defined source that does not provide random words.
        """
        raise NotImplementedError(f"{type(self).__name__} does not draw random 64-bit words; implement random_words().")

    def standard_normal(self, shape: int | tuple[int, ...]) -> np.ndarray:
        """Draw standard normal variates of the given shape (via :meth:`gaussian` on zeros).

        Parameters
        ----------
        shape : int or tuple of int
            Non-negative sizes.

        Returns
        -------
        ndarray of float
            Independent ``N(0, 1)`` variates of shape ``shape``.
        """
        return self.gaussian(np.zeros(_check_shape(shape)), 1.0)


def _check_shape(shape: Any) -> tuple[int, ...]:
    """A shape: a non-negative int or a tuple of them."""
    if isinstance(shape, tuple | list):
        return tuple(check_int(s, "shape", minimum=0) for s in shape)
    return (check_int(shape, "shape", minimum=0),)


def _urandom_words(shape: Any) -> np.ndarray:
    """Uniform 64-bit words of ``shape`` from the OS CSPRNG (``os.urandom``), in one call (a writable array)."""
    shape = _check_shape(shape)
    return np.frombuffer(os.urandom(8 * math.prod(shape)), dtype=np.uint64).reshape(shape).copy()


def check_noise_room(arr: np.ndarray, scale: float, name: str = "values") -> None:
    """Refuse ``values`` and ``scale`` so large that ``values + noise`` could overflow to inf.

    Parameters
    ----------
    arr : ndarray
        The finite values the noise is added to.
    scale : float
        The finite noise scale.
    name : str, default "values"
        Argument name used in the error message.

    Raises
    ------
    ValueError
        If ``max|values| + 1000 * scale`` exceeds the float64 range.
    """
    top = float(np.max(np.abs(arr))) if arr.size else 0.0
    if top > _MAX_FLOAT - _NOISE_REACH * scale or _NOISE_REACH * scale > _MAX_FLOAT:
        raise ValueError(
            f"{name} and the noise scale ({scale:.3g}) are too large: values + noise could overflow float64; "
            "rescale the statistic (and its sensitivity) or use a larger epsilon."
        )


def _prepare(values: Any, scale: float, dtype: Any = float) -> tuple[np.ndarray, float]:
    arr = as_finite_array(values, "values", allow_empty=True, dtype=dtype)
    scale = check_nonnegative_finite(scale, "scale")
    if scale and arr.dtype.kind == "f":
        check_noise_room(arr, scale)
    return arr, scale


def _prepare_integers(values: Any, scale: float) -> tuple[np.ndarray, float]:
    arr = as_finite_array(values, "values", allow_empty=True, dtype=np.int64)
    scale = check_nonnegative_finite(scale, "scale")
    top = max(-int(arr.min()), int(arr.max())) if arr.size else 0
    if scale and top + _NOISE_REACH * scale >= 2.0**62:
        raise ValueError(
            f"values and the noise scale ({scale:.3g}) are too large: values + noise could overflow int64; "
            "rescale the statistic or use a larger epsilon."
        )
    return arr, scale


def _prepare_scores(scores: Any, scale: float) -> tuple[np.ndarray, float]:
    arr = as_finite_array(scores, "scores", ndim=1)
    scale = check_nonnegative_finite(scale, "scale")
    if scale:
        check_noise_room(arr, scale, "scores")
    return arr, scale


def one_noise_source(random_state: Any, noise: NoiseSource | None) -> Any:
    """The one noise argument a release uses: ``noise`` or ``random_state``.

    ``noise`` is a :class:`NoiseSource` a caller already holds (an estimator passes the one its release template
    opened after the charge); ``random_state`` is what a user passes.  Both at once is ambiguous and refused.

    Parameters
    ----------
    random_state : None, int, Generator or NoiseSource
        What :func:`get_noise_source` accepts (checked later, by :func:`check_random_state`).
    noise : NoiseSource or None
        A source already held.

    Returns
    -------
    object
        ``noise`` when given, else ``random_state``.

    Raises
    ------
    TypeError
        If ``noise`` is not a :class:`NoiseSource`, or both are given.
    """
    if noise is None:
        return random_state
    if not isinstance(noise, NoiseSource):
        raise TypeError(
            f"noise must be a dpfair.privacy.NoiseSource (or None), got {type(noise).__name__}; "
            "pass a seed or a numpy Generator as random_state= instead."
        )
    if random_state is not None:
        raise TypeError("pass either noise= (a NoiseSource) or random_state=, not both.")
    return noise


def check_random_state(random_state: Any) -> None:
    """Check that ``random_state`` is something :func:`get_noise_source` accepts.

    Parameters
    ----------
    random_state : object
        The candidate.

    Raises
    ------
    TypeError
        If it is not None, an int, a numpy Generator / BitGenerator / SeedSequence or a
        :class:`NoiseSource` (floats such as ``0.5``, bools and strings included).
    ValueError
        If it is a negative int.
    """
    if random_state is None or isinstance(random_state, NoiseSource | np.random.Generator):
        return
    if isinstance(random_state, np.random.BitGenerator | np.random.SeedSequence):
        return
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool | np.bool_):
        if random_state < 0:
            raise ValueError(f"random_state must be a non-negative int seed, got {int(random_state)}.")
        return
    raise TypeError(
        "random_state must be None (secure noise), a non-negative int seed, a numpy Generator or a NoiseSource, "
        f"got {type(random_state).__name__}."
    )


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
        if random_state is None or isinstance(random_state, NoiseSource):
            raise TypeError("random_state must be an int, a numpy Generator or a SeedSequence for SeededNoise.")
        check_random_state(random_state)
        self.rng = np.random.default_rng(random_state)

    def laplace(self, values: Any, scale: float) -> np.ndarray:
        """Return ``values + Laplace(0, scale)`` noise drawn from the numpy generator, elementwise.

        Parameters
        ----------
        values : array-like of real numbers
            Any shape (empty and 0-d included).
        scale : float
            Laplace scale ``b >= 0`` (finite); 0 returns a copy of ``values``.

        Returns
        -------
        ndarray of float
            ``values`` plus the noise, same shape as ``values``.
        """
        arr, scale = _prepare(values, scale)
        if scale == 0:
            return arr.copy()
        return arr + self.rng.laplace(0.0, scale, size=arr.shape)

    def gaussian(self, values: Any, scale: float) -> np.ndarray:
        """Return ``values + N(0, scale**2)`` noise drawn from the numpy generator, elementwise.

        Parameters
        ----------
        values : array-like of real numbers
            Any shape (empty and 0-d included).
        scale : float
            Standard deviation ``>= 0`` (finite); 0 returns a copy of ``values``.

        Returns
        -------
        ndarray of float
            ``values`` plus the noise, same shape as ``values``.
        """
        arr, scale = _prepare(values, scale)
        if scale == 0:
            return arr.copy()
        return arr + self.rng.normal(0.0, scale, size=arr.shape)

    def discrete_laplace(self, values: Any, scale: float) -> np.ndarray:
        """Return integer ``values`` plus discrete-Laplace noise ``P(k) ~ exp(-|k|/scale)``.

        The noise is the difference of two i.i.d. geometric variables drawn from the numpy
        generator.

        Parameters
        ----------
        values : array-like of integers
            Integral values (``1.7`` is refused, never truncated).
        scale : float
            Scale ``>= 0`` (finite); 0 returns a copy of ``values``.

        Returns
        -------
        ndarray of int64
            ``values`` plus the noise, same shape as ``values``.
        """
        arr, scale = _prepare_integers(values, scale)
        if scale == 0:
            return arr.copy()
        # difference of two i.i.d. geometric variables on {0, 1, ...} is discrete Laplace
        p = -math.expm1(-1.0 / scale)
        g1 = self.rng.geometric(p, size=arr.shape) - 1
        g2 = self.rng.geometric(p, size=arr.shape) - 1
        return arr + g1 - g2

    def uniform(self, shape: int | tuple[int, ...]) -> np.ndarray:
        """Draw independent U[0, 1) variates from the numpy generator.

        Parameters
        ----------
        shape : int or tuple of int
            Non-negative sizes.

        Returns
        -------
        ndarray of float
            Independent U[0, 1) variates of shape ``shape``.
        """
        return self.rng.random(_check_shape(shape))

    def random_words(self, shape: int | tuple[int, ...]) -> np.ndarray:
        """Draw uniform 64-bit words from the numpy generator (reproducible, not hardened).

        Parameters
        ----------
        shape : int or tuple of int
            Non-negative sizes.

        Returns
        -------
        ndarray of uint64
            Independent uniform words of shape ``shape``.
        """
        shape = _check_shape(shape)
        # the bit generator's raw 64-bit outputs: uniform words, without integers()'s range arithmetic
        return self.rng.bit_generator.random_raw(math.prod(shape)).astype(np.uint64, copy=False).reshape(shape)

    def noisy_argmax_gumbel(self, scores: Any, scale: float) -> int:
        """Return the index of ``max(scores + Gumbel(scale))``: ``P(i) ~ exp(scores_i / scale)``.

        The Gumbel noise comes from the numpy generator; with ``scale = 0`` the tie among
        the maximizers is broken with :meth:`uniform`.

        Parameters
        ----------
        scores : array-like of shape (n,)
            Non-empty, finite.
        scale : float
            Gumbel scale ``>= 0``; 0 picks uniformly among the maximizers.

        Returns
        -------
        int
            The selected index, in ``[0, n)``.
        """
        arr, scale = _prepare_scores(scores, scale)
        if scale == 0:
            return self._uniform_argmax(arr)
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

    def __reduce__(self) -> tuple:
        """Pickle as "a new secure source": it has no state, and OpenDP's module object cannot be pickled.

        So a learner or estimator that holds one survives ``pickle`` / ``copy.deepcopy`` / Flower's
        ``context.state``, and the copy draws fresh secure noise.
        """
        return (SecureNoise, ())

    def _add_float_noise(self, values: Any, scale: float, law: str) -> np.ndarray:
        """``values`` plus OpenDP's ``make_laplace`` (L1 space) or ``make_gaussian`` (L2 space) noise."""
        arr, scale = _prepare(values, scale)
        if scale == 0 or arr.size == 0:
            return arr.copy()
        dp = self._dp
        domain = dp.vector_domain(dp.atom_domain(T=float, nan=False))
        if law == "laplace":
            meas = dp.m.make_laplace(domain, dp.l1_distance(T=float), scale=scale)
        else:
            meas = dp.m.make_gaussian(domain, dp.l2_distance(T=float), scale=scale)
        return np.asarray(meas(arr.ravel().tolist()), dtype=float).reshape(arr.shape)

    def laplace(self, values: Any, scale: float) -> np.ndarray:
        """Return ``values + Laplace(0, scale)`` noise from OpenDP's ``make_laplace``, elementwise.

        Parameters
        ----------
        values : array-like of real numbers
            Any shape (empty and 0-d included).
        scale : float
            Laplace scale ``b >= 0`` (finite); 0 returns a copy of ``values``.

        Returns
        -------
        ndarray of float
            ``values`` plus the noise, same shape as ``values``.
        """
        return self._add_float_noise(values, scale, "laplace")

    def gaussian(self, values: Any, scale: float) -> np.ndarray:
        """Return ``values + N(0, scale**2)`` noise from OpenDP's ``make_gaussian``, elementwise.

        Parameters
        ----------
        values : array-like of real numbers
            Any shape (empty and 0-d included).
        scale : float
            Standard deviation ``>= 0`` (finite); 0 returns a copy of ``values``.

        Returns
        -------
        ndarray of float
            ``values`` plus the noise, same shape as ``values``.
        """
        return self._add_float_noise(values, scale, "gaussian")

    def discrete_laplace(self, values: Any, scale: float) -> np.ndarray:
        """Return integer ``values`` plus discrete-Laplace noise ``P(k) ~ exp(-|k|/scale)``.

        The noise comes from OpenDP's discrete Laplace sampler on 64-bit integers.

        Parameters
        ----------
        values : array-like of integers
            Integral values (``1.7`` is refused, never truncated).
        scale : float
            Scale ``>= 0`` (finite); 0 returns a copy of ``values``.

        Returns
        -------
        ndarray of int64
            ``values`` plus the noise, same shape as ``values``.
        """
        arr, scale = _prepare_integers(values, scale)
        if scale == 0 or arr.size == 0:
            return arr.copy()
        dp = self._dp
        # 64-bit integers: OpenDP's default ``int`` is 32-bit and refuses counts beyond 2**31
        meas = dp.m.make_laplace(dp.vector_domain(dp.atom_domain(T="i64")), dp.l1_distance(T="i64"), scale=scale)
        return np.asarray(meas(arr.ravel().tolist()), dtype=np.int64).reshape(arr.shape)

    def uniform(self, shape: int | tuple[int, ...]) -> np.ndarray:
        """Draw independent U[0, 1) variates from the OS CSPRNG (``os.urandom``).

        Each variate is ``k * 2**-53`` with ``k`` made of 53 random bits.

        Parameters
        ----------
        shape : int or tuple of int
            Non-negative sizes.

        Returns
        -------
        ndarray of float
            Independent U[0, 1) variates of shape ``shape``.
        """
        bits = _urandom_words(shape)
        # 53 random bits -> a uniform double on the grid k * 2**-53 in [0, 1)
        return (bits >> np.uint64(11)).astype(np.float64) * 2.0**-53

    def random_words(self, shape: int | tuple[int, ...]) -> np.ndarray:
        """Draw uniform 64-bit words from the OS CSPRNG (``os.urandom``), all in one call.

        Parameters
        ----------
        shape : int or tuple of int
            Non-negative sizes.

        Returns
        -------
        ndarray of uint64
            Independent uniform words of shape ``shape``.
        """
        return _urandom_words(shape)

    def noisy_argmax_gumbel(self, scores: Any, scale: float) -> int:
        """Return the index of ``max(scores + Gumbel(scale))``: ``P(i) ~ exp(scores_i / scale)``.

        The selection is OpenDP's ``make_noisy_max`` with Gumbel noise (the exponential
        mechanism); with ``scale = 0`` the tie among the maximizers is broken with
        :meth:`uniform`.

        Parameters
        ----------
        scores : array-like of shape (n,)
            Non-empty, finite.
        scale : float
            Gumbel scale ``>= 0``; 0 picks uniformly among the maximizers.

        Returns
        -------
        int
            The selected index, in ``[0, n)``.
        """
        arr, scale = _prepare_scores(scores, scale)
        if scale == 0:
            return self._uniform_argmax(arr)
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

    Returns
    -------
    NoiseSource
        A new :class:`SecureNoise` or :class:`SeededNoise`, or ``random_state`` itself when
        it is already a :class:`NoiseSource`.

    Raises
    ------
    TypeError
        For anything else (a float such as ``0.5``, a bool, a string, ``np.random.RandomState``).
    ValueError
        For a negative int seed.
    """
    check_random_state(random_state)
    if random_state is None:
        return SecureNoise()
    if isinstance(random_state, NoiseSource):
        return random_state
    return SeededNoise(random_state)
