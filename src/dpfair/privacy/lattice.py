"""Discrete Gaussian noise on a fine grid, tabulated: secure noise at the cost of a table look-up.

OpenDP's exact samplers cost 8-45 microseconds per float sample (the default grid ``2**-1074``
needs arbitrary-precision arithmetic; a grid of ``2**-40`` still costs ~8 us).  Mechanisms that
release millions of Gaussian entries (the PRIVATIZER of Priv-FairX-LinUCB releases ``(d+1)(d+2)/2``
entries per agent per communication round: 21 million for the paper's Exp 1) cannot pay that.
:class:`LatticeGaussian` draws the same kind of noise in ~0.05 us per sample:

* **A grid.**  Noise and released values are integer multiples of ``granularity = 2**k`` with
  ``k = floor(log2 sigma) - resolution_bits`` (``sigma / granularity`` is between ``2**14`` and
  ``2**15`` by default).  The input is rounded to the grid (:meth:`LatticeGaussian.round`, exact:
  a power-of-two scaling), the integer noise is added exactly, and the float result is a
  deterministic function of that exact integer sum: no low-order bit of the input survives, which
  is what defeats the floating-point attacks of Mironov (2012) (the same construction as OpenDP's
  ``make_gaussian(k=...)``).
* **The discrete Gaussian** ``P(z) ~ exp(-z^2 / (2 s^2))`` on the integers (``s = sigma / granularity``):
  Canonne, Kamath & Steinke (2020) show it satisfies the zCDP of the continuous Gaussian,
  ``rho = Delta^2 / (2 s^2)`` for an integer-valued query of L2 sensitivity ``Delta``.  Rounding the
  input to the grid adds at most one grid unit per entry to the sensitivity: callers add
  ``granularity * sqrt(n_entries)`` to ``Delta`` (the PRIVATIZER does).
* **A table with a stated error.**  ``|Z|`` is drawn by inverse CDF from a table of 63-bit fixed-point
  cumulative probabilities, the sign from one more bit: one 64-bit random word per sample.  The
  probabilities are computed in extended precision and rounded to multiples of ``2**-63`` (the total
  made exact by adjusting ``P(0)``); the table measures its own distance to the exact law,
  :attr:`LatticeGaussian.total_variation` (about ``2e-14`` at ``2**14`` grid units per ``sigma``).
  A mechanism that draws ``n`` such samples is ``(epsilon, delta + (1 + e^epsilon) n tv)``-DP when the
  exact one is ``(epsilon, delta)``-DP (for every event ``S``, ``P'(S) <= P(S) + n tv``): callers
  account that term (the PRIVATIZER takes it out of ``delta`` before it calibrates).
* **Constant time.**  The inverse CDF is a search of fixed length: every word walks every level of a
  search tree over the table (8 entries compared per level, their count -- a sum, with no branch --
  picks the next block), so a draw costs the same at the centre of the law as in its deepest tail
  (``tests/privacy/test_lattice_timing.py``).  A search that stops where it finds the value (a guide
  table and a linear scan: 4 ns per draw at the centre, 80 us at 8 sigma) makes the duration of a
  release reveal its tail noise.

**The rule for every sampler in dpfair: no sampler's running time may depend on the sampled value.**
A sampler of its own (a table, a rejection loop, a search) runs a number of steps fixed by its
parameters only, with no branch on the value; a timing test compares draws at the centre and in the
tail.  (What remains is the cache: the table entries read depend on the value.  The reads are the
same in number, and the last levels of an 8-way tree touch a few cache lines.)

The random words come from the noise source: the OS CSPRNG for :class:`~dpfair.privacy.SecureNoise`
(``os.urandom``), the numpy generator for :class:`~dpfair.privacy.SeededNoise` (reproducible, not
hardened): both draw the same law, so seeded experiments measure exactly what secure runs do.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

import numba
import numpy as np

from dpfair._validation import check_int, check_positive_finite

__all__ = ["LAWS", "LatticeGaussian", "lattice_granularity"]

_FRACTION_BITS = 63
_ONE = 2**_FRACTION_BITS
_TAIL_SIGMAS = 12.0  # mass beyond 12 s is below exp(-72) (counted in the total variation)


def lattice_granularity(sigma: float, resolution_bits: int = 14) -> float:
    """The grid ``2**k``, ``k = floor(log2 sigma) - resolution_bits``: ``sigma`` spans ``2**resolution_bits`` units or more.

    Parameters
    ----------
    sigma : float
        Noise standard deviation (> 0, finite).
    resolution_bits : int, default 14
        Grid units per ``sigma`` (as a power of two): ``sigma / granularity`` is in
        ``[2**resolution_bits, 2**(resolution_bits + 1))``.

    Returns
    -------
    float
        A power of two.
    """
    sigma = check_positive_finite(sigma, "sigma")
    bits = check_int(resolution_bits, "resolution_bits", minimum=1)
    if bits > 18:
        raise ValueError(f"resolution_bits must be at most 18 (a table of 12 * 2**19 entries), got {bits}.")
    return lattice_granularity_unvalidated(sigma, bits)


def lattice_granularity_unvalidated(sigma: float, resolution_bits: int = 14) -> float:
    """:func:`lattice_granularity` of validated arguments (a finite ``sigma > 0``, an int in ``[1, 18]``).

    For a calibration inside dpfair whose own checks make ``sigma`` representable (the PRIVATIZER's
    ``calibrate_privatizer``); the grid is the same number.

    Parameters
    ----------
    sigma : float
        Noise standard deviation (> 0, finite).
    resolution_bits : int, default 14
        Grid units per ``sigma`` (as a power of two).

    Returns
    -------
    float
        A power of two.

    Raises
    ------
    ValueError
        If the grid is below the float64 normal range.
    """
    exponent = math.floor(math.log2(sigma)) - resolution_bits
    if exponent < -1022:
        raise ValueError(f"sigma={sigma:g} is too small for a grid of 2**{resolution_bits} units per sigma; "
                         "use a larger sigma.")
    return math.ldexp(1.0, exponent)


_FANOUT = 8  # entries compared per level of the search tree (8: the fastest on x86-64 with AVX2)


@numba.njit(cache=True, nogil=True)
def _search(levels: np.ndarray, offsets: np.ndarray, words: np.ndarray, out: np.ndarray) -> None:  # pragma: no cover
    # |Z| = #{k : cumulative[k] <= u} for u = word >> 1 (searchsorted(..., side="right")), the sign the word's
    # low bit.  Constant time: every word walks every level of the search tree (_search_tree) from the top and
    # compares u with all _FANOUT entries of one block per level; the count of entries below u -- a sum of
    # comparisons, no branch and no select -- picks the block of the next level.  The work depends on the
    # table's size only, never on u; the sign is applied by arithmetic.  levels[k] = cumulative[k] - 1, so
    # that "cumulative <= u" is the signed "levels < u" (u < 2**63).
    one = np.uint64(1)
    n_levels = offsets.size
    for j in range(words.size):
        word = words[j]
        u = np.int64(word >> one)
        position = 0
        for level in range(n_levels - 1, -1, -1):
            start = offsets[level] + position * _FANOUT
            below = 0
            for k in range(_FANOUT):
                below += np.int64(levels[start + k] < u)
            position = position * _FANOUT + below
        sign = np.int64(word & one)
        out[j] = (position ^ -sign) + sign  # -position when the sign bit is set (two's complement)


def _search_tree(cumulative: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The levels of the constant-time search over ``cumulative`` (one flat int64 array) and their offsets.

    Level 0 is ``cumulative`` padded with ``2**63`` (above every ``u``) to a multiple of ``_FANOUT``;
    level ``l + 1`` holds the last entry of each block of level ``l``, padded the same way, up to a
    level of one block.  Every block's last entry is above ``u`` in the block the search reaches (the
    table ends at ``2**63``), so the count of entries ``<= u`` in that block is below ``_FANOUT`` and
    ``position * _FANOUT + count`` is the block to read one level down; at level 0 it is
    ``#{k : cumulative[k] <= u}``.  Stored minus one as int64 (all entries are at least 1).
    """
    end = np.uint64(_ONE)

    def padded(a: np.ndarray) -> np.ndarray:
        return np.concatenate([a, np.full(-a.size % _FANOUT, end, dtype=np.uint64)])

    levels = [padded(cumulative)]
    while levels[-1].size > _FANOUT:
        levels.append(padded(levels[-1][_FANOUT - 1:: _FANOUT]))
    offsets = np.cumsum([0] + [level.size for level in levels[:-1]]).astype(np.int64)
    flat = (np.concatenate(levels) - np.uint64(1)).astype(np.int64)  # in [0, 2**63 - 1]
    return np.ascontiguousarray(flat), offsets


# 3-point Gauss-Legendre on a cell [k - 1/2, k + 1/2]: nodes and weights (the rounded Gaussian's cell masses)
_GL_NODES = (-math.sqrt(0.15), 0.0, math.sqrt(0.15))
_GL_WEIGHTS = (5.0 / 18.0, 8.0 / 18.0, 5.0 / 18.0)
LAWS = ("discrete", "rounded")


_BLOCK = 64  # entries per block of the exponential below: one extended-precision exp per block, not per entry
_EXP_ULPS = {"discrete": 0.0, "rounded": 300.0}  # the masses' own rounding, beyond a few ulp (_gaussian_terms)


def _gaussian_terms(t0: np.ndarray, count: int, s2: np.longdouble) -> np.ndarray:
    """``exp(-t^2 / s2)`` for ``t = t0 + j``, ``j = 0 .. count - 1`` (``t0`` the blocks' starts), by blocks.

    ``exp(-(t0 + j)^2 / s2) = exp(-t0^2 / s2) * exp(-2 t0 / s2)^j * exp(-j^2 / s2)``: three tables of exponentials
    (two per block, one of ``count`` entries) and the power by a running product, in extended precision.  Each
    term's relative error, in units ``u`` of the working precision: the first factor's ``1 + 3 x`` (``x = t0^2 /
    s2``, at most ``max(t^2, 1) / s2``: the argument's own rounding scaled by the exponential, which is within
    ``1 u`` itself); the power's ``(j - 1) + j (1 + 1)`` (``j - 1`` products, each factor's ``2 u`` while its
    argument ``2 t0 / s2`` is below 1: in block 0, ``|t0| < 0.4``, and in every block with ``t0 < s^2``; a block
    with ``t0 >= max(64, s^2)`` holds mass below ``exp(-t0 / 2) <= e^-32``, where a larger error weighs nothing);
    the third factor's ``2 u`` and the two products'.  At most ``4 count + 2 + 3 x`` with ``count = 64``, so
    ``sum_k p_k err_k <= (258 + 3 E[x]) u``, ``E[x] < 0.51`` here (``x`` of a term is ``Z^2 / 2`` at most): under
    ``260 u`` on the law (:func:`_table` charges ``300 u``; measured against one exponential per entry, 2.3 u).
    The same exponentials entry by entry made the whole table 2.6 times as slow (0.78 s against 0.30 s at
    ``1.3 * 2**17`` grid units per ``sigma``) for ``3 u``.
    """
    j = np.arange(count, dtype=np.longdouble)
    first = np.exp(-(t0 * t0) / s2)
    ratio = np.exp(-(2 * t0) / s2)
    powers = np.empty((t0.size, count), dtype=np.longdouble)
    powers[:, 0] = 1
    powers[:, 1:] = ratio[:, None]
    np.cumprod(powers, axis=1, out=powers)
    return (first[:, None] * powers * np.exp(-(j * j) / s2)[None, :]).reshape(-1)


def _masses(n_entries: int, sigma_units: float, law: str) -> tuple[np.ndarray, float]:
    """Unnormalised masses of ``k = 0, 1, .., n_entries - 1`` and the bound on their summed quadrature error.

    ``"discrete"``: ``exp(-k^2 / 2 s^2)`` (Canonne, Kamath & Steinke 2020).  ``"rounded"``: the law of ``rint(X)``,
    ``X ~ N(0, s^2)``, cell ``k`` holding ``int_{k-1/2}^{k+1/2} phi(x / s) dx / s``; by 3-point Gauss-Legendre, whose
    error on a cell of width 1 is ``(3!)^4 / (7 (6!)^3) max |f^(6)| <= 5e-7 * 10 s^-7`` (``f^(6) = s^-7 He_6 phi``,
    ``|He_6 phi| <= 10``), over at most ``25 s + 2`` cells: below ``2e-4 s^-6`` in all (relative to the total).
    Its three exponentials per cell by blocks (:func:`_gaussian_terms`, its rounding error stated there: 300 ulp,
    :data:`_EXP_ULPS`).
    """
    s2 = 2 * np.longdouble(sigma_units) ** 2
    if law == "discrete":  # one exponential per entry (one table, the tree's; its values as they always were)
        k = np.arange(n_entries, dtype=np.longdouble)
        return np.exp(-(k * k) / s2), 0.0
    n_blocks = -(-n_entries // _BLOCK)
    starts = np.arange(n_blocks, dtype=np.longdouble) * _BLOCK
    total = np.zeros(n_blocks * _BLOCK, dtype=np.longdouble)
    for node, weight in zip(_GL_NODES, _GL_WEIGHTS, strict=True):
        c = np.longdouble(node)  # nodes of [-1/2, 1/2] (half those of [-1, 1]: +-sqrt(3/5) / 2, 0)
        terms = _gaussian_terms(starts + c, _BLOCK, s2)  # block 0 starts at c < 0 for the first node: any sign
        total += np.longdouble(weight) * terms
    return total[:n_entries], 2e-4 * float(sigma_units) ** -6


@lru_cache(maxsize=16)
def _table(sigma_units: float, law: str = "discrete") -> tuple[np.ndarray, float]:
    """Cumulative 63-bit fixed-point law of ``|Z|`` and its total-variation distance to the exact law."""
    half = math.ceil(_TAIL_SIGMAS * sigma_units)
    # extended precision (64-bit mantissa on x86; float64 elsewhere, covered by the float term below)
    e, quadrature = _masses(half + 1, sigma_units, law)
    norm = e[0] + 2 * np.sum(e[1:])  # pairwise summation: relative error ~ log2(n) ulp
    prob = e / norm
    prob[1:] *= 2  # P(|Z| = k)
    scaled = prob * np.longdouble(_ONE)
    weights = np.rint(scaled)  # < 2**63 / s: exact integers
    rounding = float(np.sum(np.abs(weights - scaled))) / _ONE
    weights = weights.astype(np.uint64)
    total = int(weights.sum(dtype=np.uint64))
    adjust = _ONE - total
    first = int(weights[0]) + adjust
    if first <= 0:  # pragma: no cover - impossible for s >= 1
        raise ValueError("the lattice Gaussian table could not be normalised.")
    weights[0] = np.uint64(first)
    cumulative = np.cumsum(weights, dtype=np.uint64)
    last = int(np.searchsorted(cumulative, cumulative[-1]))  # drop the zero-weight tail
    cumulative = np.ascontiguousarray(cumulative[: last + 1])
    # TV <= sum |rounded - computed| + the normalising adjustment + the computed probabilities' own error
    # (a few ulp of the working precision, relative, summed over a law of mass 1, the rounded law's exponentials'
    # 300 more (_gaussian_terms)) + the tail beyond 12 s,
    # sum_{k > 12 s} exp(-k^2 / 2 s^2) / norm <= exp(-72) (s / 12 + 1) / (s sqrt(2 pi)) < 1e-30
    ulp = float(np.finfo(np.longdouble).eps)
    tv = 1.01 * rounding + abs(adjust) / _ONE + (_EXP_ULPS[law] + 16.0 * math.log2(half + 2)) * ulp + 1e-30 + 2.0 * quadrature
    return cumulative, tv


@lru_cache(maxsize=16)
def _search_tree_for(sigma_units: float, law: str = "discrete") -> tuple[np.ndarray, np.ndarray]:
    return _search_tree(_table(sigma_units, law)[0])


def _sigma_units(sigma: float, granularity: float) -> float:
    """``sigma / granularity``, refused outside ``[1, 2**18]`` (the sizes of table the sampler builds)."""
    sigma_units = sigma / granularity
    if not 1.0 <= sigma_units <= 2.0**18:
        raise ValueError(
            f"sigma / granularity must be in [1, 2**18], got {sigma_units:.4g}; use lattice_granularity(sigma)."
        )
    return sigma_units


def lattice_total_variation(sigma: float, granularity: float, law: str = "discrete") -> float:
    """Per-sample total variation of the two tables of a symmetric matrix's noise, validated arguments.

    The larger :attr:`LatticeGaussian.total_variation` of the tables at ``sigma`` (off-diagonal entries) and
    ``sqrt(2) sigma`` (diagonal entries) on ``granularity``, the same numbers, without building the samplers: for a
    calibration inside dpfair that validated its arguments once (the PRIVATIZER's ``calibrate_privatizer``, which
    takes ``(1 + e^epsilon) n tv`` of its ``delta`` for ``n`` samples).

    Parameters
    ----------
    sigma : float
        Off-diagonal noise standard deviation (> 0, finite).
    granularity : float
        The grid, a power of two (:func:`lattice_granularity_unvalidated`).
    law : {"discrete", "rounded"}, default "discrete"
        The law tabulated (:class:`LatticeGaussian`).

    Returns
    -------
    float
        The bound on one sample's total variation distance to the exact law.

    Raises
    ------
    ValueError
        If ``sigma / granularity`` (or ``sqrt(2)`` times it) is outside ``[1, 2**18]``.
    """
    return max(_table(_sigma_units(sigma, granularity), law)[1],
               _table(_sigma_units(math.sqrt(2.0) * sigma, granularity), law)[1])


def _predicted_total_variation(sigma_units: float, law: str) -> float:
    """:func:`_table`'s total variation predicted from its size, without the table (:func:`lattice_total_variation_estimate`).

    Entries whose scaled mass is at least half a unit of ``2**-63``, ``|k| <= k_max = s sqrt(2 ln(4 2**63 /
    (s sqrt(2 pi))))``, round by a fraction spread evenly over ``[0, 1/2]``: ``1.01 * 0.25 k_max 2**-63`` for the
    rounding term, plus :func:`_table`'s fixed terms.  The tail below half a unit adds a little (measured tables
    are at most 1.06 times the prediction for ``s`` from 1 to ``2**18``, both laws).
    """
    half = math.ceil(_TAIL_SIGMAS * sigma_units)
    k_max = sigma_units * math.sqrt(2.0 * math.log(4.0 * _ONE / (sigma_units * math.sqrt(2.0 * math.pi))))
    quadrature = 0.0 if law == "discrete" else 2e-4 * float(sigma_units) ** -6
    ulp = float(np.finfo(np.longdouble).eps)
    return 1.01 * 0.25 * k_max / _ONE + (_EXP_ULPS[law] + 16.0 * math.log2(half + 2)) * ulp + 1e-30 + 2.0 * quadrature


def lattice_total_variation_estimate(sigma: float, granularity: float, law: str = "discrete") -> float:
    """An estimate of :func:`lattice_total_variation` that builds no table: for a calibration's first guess.

    A calibration that charges the tables' distance to ``delta`` needs it before ``sigma`` is final, and building
    the tables (0.3-0.5 s each at ``2**16`` grid units per ``sigma``) at a ``sigma`` that is then moved costs a table
    pair per try.  This estimate (from the number of entries that round to a nonzero weight: the rounding term
    dominates) is 1.15 times the prediction, which measured tables stay within 6 % of: the caller charges it, builds
    the tables once at the final ``sigma`` and checks that their measured distance is below what it charged
    (``calibrate_exact_blt`` does, and tries again if not).

    Parameters
    ----------
    sigma : float
        Off-diagonal noise standard deviation (> 0, finite).
    granularity : float
        The grid, a power of two (:func:`lattice_granularity_unvalidated`).
    law : {"discrete", "rounded"}, default "discrete"
        The law tabulated (:class:`LatticeGaussian`).

    Returns
    -------
    float
        The estimate, for the tables at ``sigma`` and ``sqrt(2) sigma`` (the larger).

    Raises
    ------
    ValueError
        If ``sigma / granularity`` (or ``sqrt(2)`` times it) is outside ``[1, 2**18]``.
    """
    return 1.15 * max(_predicted_total_variation(_sigma_units(sigma, granularity), law),
                      _predicted_total_variation(_sigma_units(math.sqrt(2.0) * sigma, granularity), law))


class LatticeGaussian:
    """Discrete Gaussian noise on the grid ``granularity * Z`` (module docstring).

    Parameters
    ----------
    sigma : float
        Standard deviation of the noise, in the units of the data (> 0).
    granularity : float
        The grid, a power of two (see :func:`lattice_granularity`); ``sigma / granularity`` must be at
        least 1 and at most ``2**18``.
    law : {"discrete", "rounded"}, default "discrete"
        ``"discrete"``: the discrete Gaussian, ``P(k) ~ exp(-k^2 / 2 s^2)``; ``"rounded"``: the law of ``rint(X)`` for
        ``X ~ N(0, s^2)`` (``s = sigma / granularity``), so that ``q + Z`` for an integer ``q`` is ``rint(q + X)``:
        a post-processing of the continuous Gaussian mechanism, private by its exact ``mu``-GDP profile
        (:mod:`dpfair.bandits.fairx._privatizer_exact`).

    Attributes
    ----------
    sigma_units : float
        ``sigma / granularity``.
    total_variation : float
        Bound on the total variation distance between one sample's law and the exact discrete
        Gaussian.
    """

    def __init__(self, sigma: float, granularity: float, law: str = "discrete") -> None:
        self.sigma = check_positive_finite(sigma, "sigma")
        g = check_positive_finite(granularity, "granularity")
        mantissa, _ = math.frexp(g)
        if mantissa != 0.5:
            raise ValueError(f"granularity must be a power of two (rounding to it is then exact), got {granularity!r}.")
        self.granularity = g
        if law not in LAWS:
            raise ValueError(f"law must be one of {LAWS}, got {law!r}.")
        self.law = law
        self.sigma_units = _sigma_units(self.sigma, g)
        self._cumulative, self.total_variation = _table(self.sigma_units, law)
        self._levels, self._offsets = _search_tree_for(self.sigma_units, law)

    def sample_units(self, words: Any) -> np.ndarray:
        """Discrete Gaussian integers (in grid units), one per 64-bit random word.

        Parameters
        ----------
        words : numpy.ndarray of uint64
            Uniform random words (bit 0 gives the sign, bits 1-63 the magnitude).

        Returns
        -------
        numpy.ndarray of int64
            Same shape as ``words``.
        """
        w = np.asarray(words)
        if w.dtype != np.uint64:
            raise TypeError(f"words must be a uint64 array of uniform random words, got dtype {w.dtype}.")
        flat = np.ascontiguousarray(w).reshape(-1)
        out = np.empty(flat.size, dtype=np.int64)
        _search(self._levels, self._offsets, flat, out)
        return out.reshape(w.shape)

    def sample(self, words: Any) -> np.ndarray:
        """Noise values ``granularity * Z`` (floats, exact multiples of the grid), one per word.

        Parameters
        ----------
        words : numpy.ndarray of uint64
            Uniform random words.

        Returns
        -------
        numpy.ndarray of float
            Same shape as ``words``.
        """
        return self.sample_units(words).astype(float) * self.granularity

    def round(self, values: Any) -> np.ndarray:
        """Round ``values`` to the grid (exactly: a power-of-two scaling and ``rint``).

        Parameters
        ----------
        values : array-like of float
            Finite values.

        Returns
        -------
        numpy.ndarray of float
            The nearest multiples of ``granularity``.
        """
        g = self.granularity
        return np.rint(np.asarray(values, dtype=float) / g) * g

    def __repr__(self) -> str:
        return f"LatticeGaussian(sigma={self.sigma:g}, granularity=2**{math.frexp(self.granularity)[1] - 1})"
