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

Four factorizations, each with its analytic row / column norms, a dense form for tests and a
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
    noise is the convolution ``sum_{j < t} c_j z_{t-j}``: memory ``O(T)`` noise vectors (their spectra); the
    ``z`` are drawn ahead in doubling blocks and convolved by a uniformly partitioned overlap-add with a fixed
    FFT block ``L ~ sqrt(T)`` (each block of ``z`` transformed once, ``O(log L + T / L)`` per release, nothing
    recomputed as the stream grows; the direct sum would be ``O(t)``).  ``sens = ||c||_2 ~ sqrt(ln(T) / pi)``.

``"blt"``
    A buffered linear Toeplitz factorization (Dvijotham, McMahan, Pillutla, Steinke & Thakurta 2024; McKenna
    2024): ``C^{-1}`` has the generating function ``1 + sum_i omega_i x / (1 - theta_i x)`` with ``d = 3``
    buffers, its parameters optimised for the horizon (:func:`blt_parameters`: public, a function of ``T`` only);
    ``B = A C^{-1}``.  Release ``t``'s noise needs ``d + 1`` noise vectors and ``O(d)`` work: memory ``O(1)``.
    ``sens(C)`` comes from ``C``'s coefficients (the first column is the largest).  At equal privacy its worst
    release is 1.3 % noisier than the square root's at ``T = 20,002``, 2.9 % at ``100,000``, 6 % at ``400,000``:
    ``"auto"`` (:func:`auto_factorization`) takes it within 5 %.
    It lives in :mod:`dpfair.privacy._blt` (re-exported here); the base class and its stream in
    :mod:`dpfair.privacy._factorization_base`.

Every stream gives the noise of one step (``step``) or of many (``steps``): the same numbers, so a consumer
can ask for a block of releases in one call.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import scipy.fft as sp_fft

from dpfair._validation import check_int
from dpfair.privacy._blt import (  # noqa: F401  (re-exported: the BLT lives in its own module)
    BLTFactorization,
    _blt_closed_forms,
    _blt_inverse,
    _blt_inverse_python,
    _blt_objective,
    _blt_parts,
    _blt_steps,
    _blt_steps_python,
    _BLTStream,
    blt_parameters,
)
from dpfair.privacy._factorization_base import _DENSE_LIMIT, Factorization, _one_draw, _Stream  # noqa: F401

__all__ = [
    "FACTORIZATIONS",
    "BLTFactorization",
    "Factorization",
    "HonakerFactorization",
    "SqrtFactorization",
    "TreeFactorization",
    "auto_factorization",
    "blt_parameters",
    "get_factorization",
]

_CHUNK = 64  # columns of the square root's stream transformed together (their spectra stay in cache)


def _lsb(t: int) -> int:
    """Index of the lowest set bit of ``t >= 1``."""
    return (t & -t).bit_length() - 1


def _honaker_draws(t: int) -> int:
    """Honaker's draws at step ``t``: the ``lsb(t) + 1`` nodes that end there."""
    return _lsb(t) + 1


def _popcounts(horizon: int) -> np.ndarray:
    t = np.arange(1, horizon + 1, dtype=np.int64)
    return np.array([int(v).bit_count() for v in t], dtype=np.int64)


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


class _TreeStream(_Stream):
    """Noise of the binary tree: one node per step, ``O(log T)`` noise vectors kept."""

    def __init__(self, n_levels: int, shape: tuple[int, ...]) -> None:
        super().__init__(_one_draw, shape)
        self.nodes = np.zeros((n_levels, self.cols))

    def draws_for(self, n: int) -> int:
        return n  # one node per step

    def _advance(self, z: np.ndarray, n: int) -> np.ndarray:
        out = np.empty((n, self.cols))
        for k in range(n):
            t = self.t + 1
            level = _lsb(t)
            self.nodes[level] = z[k]
            self.nodes[:level] = 0.0
            self.t = t
            out[k] = self.nodes[[i for i in range(len(self.nodes)) if (t >> i) & 1]].sum(axis=0)
        return out


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


class _HonakerStream(_Stream):
    """Bottom-up Honaker estimates of the latest completed node of each level: ``O(log T)`` vectors."""

    def __init__(self, n_levels: int, shape: tuple[int, ...]) -> None:
        super().__init__(_honaker_draws, shape)
        self.weights = _honaker_variances(n_levels)
        self.est = np.zeros((n_levels, self.cols))

    def draws_for(self, n: int) -> int:
        # sum of lsb(t) + 1 over t in (a, b]: n, plus for each i >= 1 the multiples of 2^i there
        a, b = self.t, self.t + n
        return n + sum((b >> i) - (a >> i) for i in range(1, b.bit_length()))

    def _advance(self, z: np.ndarray, n: int) -> np.ndarray:
        out = np.empty((n, self.cols))
        est, w = self.est, self.weights
        used = 0
        for k in range(n):
            t = self.t + 1
            top = _lsb(t)
            zt = z[used : used + top + 1]
            used += top + 1
            new = zt[0]
            for i in range(1, top + 1):  # left child: est[i-1] (ended at t - 2^(i-1)); right child: the new one
                new, est[i - 1] = w[i] * zt[i] + (1.0 - w[i]) * (est[i - 1] + new), new
            est[top] = new
            self.t = t
            out[k] = est[[i for i in range(len(est)) if (t >> i) & 1]].sum(axis=0)
        return out


# -------------------------------------------------------------------------------------------- square root
def sqrt_coefficients(horizon: int) -> np.ndarray:
    """``c_j = C(2j, j) / 4^j`` for ``j = 0..T-1`` (recurrence ``c_j = c_{j-1} (2j - 1) / (2j)``)."""
    horizon = check_int(horizon, "horizon", minimum=1)
    j = np.arange(1, horizon, dtype=float)
    return np.concatenate([[1.0], np.cumprod((2.0 * j - 1.0) / (2.0 * j))])


def _default_fft_block(horizon: int) -> int:
    """The square root's FFT block ``L``: the power of two at or above ``sqrt(100 T)``, in ``[1024, 16384]``.

    Per release and entry the stream costs two real FFTs of size ``2 L`` over ``L`` releases
    (``~10 log2(2L)`` flops) plus the products of the spectra (``~4 T / L`` flops): ``L ~ sqrt(T)`` keeps both
    small (at ``T = 20,002``: ``L = 2048``, about 160 flops per release and entry).
    """
    return int(min(16384, max(1024, 1 << math.ceil(math.log2(math.sqrt(100.0 * horizon))))))


def _mac_python(kernel, spectra, complete, partial, i, lo, hi, out):  # pragma: no cover - run compiled
    """``S_i`` of columns ``lo .. hi - 1`` into ``out[: hi - lo]`` (see :func:`_spectral_mac`)."""
    n_freq = kernel.shape[1]
    for c in range(lo, hi):
        row = out[c - lo]
        source = spectra[i, c] if i < complete else partial[c - lo]
        for f in range(n_freq):
            row[f] = kernel[0, f] * source[f]
        for k in range(1, i + 1):
            j = i - k
            source = spectra[j, c] if j < complete else partial[c - lo]
            for f in range(n_freq):
                row[f] = row[f] + kernel[k, f] * source[f]


_MAC: Any = None


def _spectral_mac() -> Any:
    """The compiled product of spectra ``S_i = sum_{k <= i} K_k Z_{i-k}`` (numba, compiled at the first use).

    ``mac(kernel, spectra, complete, partial, i, lo, hi, out)`` writes ``S_i`` of columns ``lo .. hi - 1``
    into ``out[: hi - lo]``; ``Z_j`` is ``spectra[j]`` for the ``complete`` blocks and ``partial`` (rows
    ``lo .. hi - 1`` only) for the next one.  The terms are added in the order of ``k``, each product and sum
    rounded as written (no fused multiply-add: numba compiles without fast-math), so the result does not
    depend on the machine's vector width or on which columns share a call.
    """
    global _MAC
    if _MAC is None:
        import numba

        try:
            _MAC = numba.njit(cache=True, nogil=True)(_mac_python)
        except RuntimeError:  # no cache locator (a read-only install): compiled in memory
            _MAC = numba.njit(cache=False, nogil=True)(_mac_python)
    return _MAC


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
        steps used are ever drawn.
    fft_block : int, optional
        The stream's FFT block ``L`` (default :func:`_default_fft_block` of the horizon: a power of two in
        ``[1024, 16384]``).  The noise of the releases of a draw block that ends at or before ``L`` is one FFT
        convolution over the ``z`` drawn so far; after that the stream is a uniformly partitioned overlap-add
        convolution with blocks of ``L``: the spectrum of each block of ``z`` is computed once, the
        coefficients' ``L``-blocks once, and release block ``i`` costs one inverse FFT and ``i + 1`` products
        of spectra -- ``O(log L + T / L)`` per release, nothing recomputed as the stream grows.  Memory:
        the spectra of the ``z`` drawn, ``O(T)`` noise vectors.
    """

    name = "sqrt"
    memory = "O(T)"

    def __init__(self, horizon: int, *, block: int = 256, fft_block: int | None = None) -> None:
        super().__init__(horizon)
        self.block = check_int(block, "block", minimum=1)
        self.fft_block = _default_fft_block(self.horizon) if fft_block is None else check_int(fft_block, "fft_block",
                                                                                                  minimum=1)
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
        return _SqrtStream(self, shape)


class _SqrtStream(_Stream):
    """The Toeplitz convolution ``(C z)_t = sum_{j < t} c_j z_{t-j}``, computed a draw block at a time.

    When the draw block ``[a, e]`` arrives (its ``z`` are drawn at step ``a``), the noise of releases
    ``a .. e`` is computed from ``z_1 .. z_e``, as follows (``L`` the factorization's ``fft_block``):

    * ``e <= L``: one FFT convolution of ``c_0 .. c_{e-1}`` with ``z_1 .. z_e`` (``scipy.signal.fftconvolve``'s
      numbers: the previous stream's, bit for bit);
    * ``e > L``: uniformly partitioned overlap-add.  With ``Z_j`` the spectrum (real FFT of size ``2 L``) of
      ``z`` block ``j`` (releases ``jL + 1 .. jL + L``, zero beyond ``e``) and ``K_k`` that of ``c`` block
      ``k``, ``S_i = sum_{k <= i} K_k Z_{i-k}`` is the spectrum of every block product that lands on blocks
      ``i`` and ``i + 1``; release block ``i`` is the first half of ``irfft(S_i)`` plus the second half of
      ``irfft(S_{i-1})``.  A ``Z_j`` is computed once its block is complete and kept; a second half once
      every block it reads is complete.

    Each release's noise is therefore a fixed function of the ``z`` and of the draw block it belongs to
    (the same floating-point operations however many releases are asked at once, and when the noise is
    rebuilt from the same ``z``); the columns (entries, rows of a batch) do not mix.
    """

    def __init__(self, factorization: SqrtFactorization, shape: tuple[int, ...]) -> None:
        super().__init__(factorization.n_draws, shape)
        self.coefficients = factorization.coefficients
        self.horizon = factorization.horizon
        self.L = factorization.fft_block
        self._kernel: np.ndarray | None = None  # K_k, (n_blocks, L + 1), computed at the first partitioned block
        # Z_j of the complete z blocks; np.zeros maps pages lazily: memory is touched as the blocks complete
        self._spectra = np.zeros((-(-self.horizon // self.L), self.cols, self.L + 1), dtype=complex)
        self._complete = 0  # complete z blocks
        self._pending = np.zeros((self.L, self.cols))  # z of the first incomplete block (zero beyond the draws)
        self._head = np.zeros((0, self.cols))  # z_1 .. z_e while e <= L (the direct FFT convolution)
        self._tails: dict[int, np.ndarray] = {}  # second half of irfft(S_i) once every Z_j, j <= i, is complete
        self.drawn = 0
        self.noise = np.zeros((0, self.cols))
        self.offset = 0
        self._starts = tuple(factorization._blocks.items())  # (first step, steps) of each draw block

    def draws_for(self, n: int) -> int:
        """:meth:`_Stream.draws_for` from the draw blocks (``O(log T)``, not a loop over the steps)."""
        starts = self.__dict__.get("_starts")
        if starts is None:  # a stream pickled before the draw blocks were kept
            return super().draws_for(n)
        return sum(size for start, size in starts if self.t < start <= self.t + n)

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_spectra"] = self._spectra[: self._complete].copy()  # the blocks drawn, not the whole horizon
        state["_kernel"] = None  # the coefficients' spectra: recomputed
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        drawn = state["_spectra"]
        spectra = np.zeros((-(-state["horizon"] // state["L"]), state["cols"], state["L"] + 1), dtype=complex)
        spectra[: len(drawn)] = drawn
        state["_spectra"] = spectra
        self.__dict__.update(state)

    # --------------------------------------------------------------------------------------- the draws
    def _receive(self, z: np.ndarray) -> None:
        """Store the draws ``z_{e+1} .. z_{e+k}`` (``(k, cols)``)."""
        L, at = self.L, 0
        if self.drawn < L:
            self._head = np.concatenate([self._head, z[: L - self.drawn]])
        while at < len(z):
            pos = self.drawn % L
            take = min(L - pos, len(z) - at)
            self._pending[pos : pos + take] = z[at : at + take]
            at += take
            self.drawn += take
            if self.drawn % L == 0:  # block complete: its spectrum, once
                self._fft(self._pending, self._spectra[self._complete])
                self._complete += 1
                self._pending.fill(0.0)  # reused: no fresh pages per block

    def _fft(self, z: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """Spectra (real FFT of size ``2L``) of the columns of ``z`` (``(L, cols)``), a chunk of columns at a time."""
        out = np.empty((self.cols, self.L + 1), dtype=complex) if out is None else out
        for lo in range(0, self.cols, _CHUNK):
            out[lo : lo + _CHUNK] = sp_fft.rfft(np.ascontiguousarray(z[:, lo : lo + _CHUNK].T), 2 * self.L, axis=-1)
        return out

    def _kernel_spectra(self) -> np.ndarray:
        """``K_k``: the spectra of the coefficients' ``L``-blocks, ``(n_blocks, L + 1)`` (computed once)."""
        if self._kernel is None:
            L = self.L
            n_blocks = -(-self.horizon // L)
            padded = np.zeros(n_blocks * L)
            padded[: self.horizon] = self.coefficients
            self._kernel = sp_fft.rfft(padded.reshape(n_blocks, L), 2 * L, axis=-1)
        return self._kernel

    def _head_convolution(self, first: int, last: int) -> np.ndarray:
        """``fftconvolve(c[:last, None], z[:last], axes=0)[first - 1 : last]``: the same numbers, a chunk of columns at
        a time.

        :func:`scipy.signal.fftconvolve`'s own steps (real FFTs of size ``next_fast_len(2 last - 1)`` along the
        time axis, the product of the spectra in the same order and shapes, the inverse FFT), on column chunks:
        the previous implementation's noise for these releases, bit for bit (``fftconvolve`` itself is the
        test's reference), without its large temporaries.
        """
        n_fft = sp_fft.next_fast_len(2 * last - 1, True)
        kernel = sp_fft.rfft(self.coefficients[:last, None], n_fft, axis=0)  # (n_fft // 2 + 1, 1), as fftconvolve's
        out = np.empty((last - first + 1, self.cols))
        for c0 in range(0, self.cols, _CHUNK):
            spectrum = sp_fft.rfft(self._head[:last, c0 : c0 + _CHUNK], n_fft, axis=0)
            out[:, c0 : c0 + _CHUNK] = sp_fft.irfft(kernel * spectrum, n_fft, axis=0)[first - 1 : last]
        return out

    def _compute(self, first: int, last: int) -> np.ndarray:
        """The noise of releases ``first .. last`` (1-based; ``last`` = the draws so far), ``(n, cols)``.

        After the first ``L`` releases, a chunk of columns at a time (the temporaries stay small and in
        cache): for each release block ``i``, ``irfft(S_i)``; its first half plus the second half of
        ``irfft(S_{i-1})`` (kept from the previous draw block when every ``Z_j`` it read was complete, else
        recomputed: it reads complete blocks only, so the same numbers) is the block's noise.
        """
        L = self.L
        if last <= L:  # the draw blocks of the first L releases: one FFT convolution over z_1 .. z_last
            return self._head_convolution(first, last)
        kernel, complete, mac = self._kernel_spectra(), self._complete, _spectral_mac()
        out = np.empty((last - first + 1, self.cols))
        lo_block, hi_block = (first - 1) // L, (last - 1) // L
        kept = self._tails.get(lo_block - 1)
        start = lo_block if lo_block == 0 or kept is not None else lo_block - 1
        keep = max((i for i in range(lo_block, hi_block + 1) if i + 1 <= complete), default=None)
        tails = {keep: np.empty((self.cols, L))} if keep is not None else {}
        total = np.empty((min(_CHUNK, self.cols), L + 1), dtype=complex)
        for c0 in range(0, self.cols, _CHUNK):
            c1 = min(c0 + _CHUNK, self.cols)
            # Z_j of the incomplete block (zero beyond the draws), or an unused placeholder
            partial = (sp_fft.rfft(np.ascontiguousarray(self._pending[:, c0:c1].T), 2 * L, axis=-1)
                       if hi_block >= complete else np.zeros((1, 1), dtype=complex))
            tail = kept[c0:c1] if kept is not None else None
            for i in range(start, hi_block + 1):
                mac(kernel, self._spectra, complete, partial, i, c0, c1, total)  # S_i, in the order of k
                product = sp_fft.irfft(total[: c1 - c0], 2 * L, axis=-1)
                if i >= lo_block:
                    block = product[:, :L] if i == 0 else product[:, :L] + tail
                    lo, hi = max(first, i * L + 1), min(last, (i + 1) * L)
                    out[lo - first : hi - first + 1, c0:c1] = block[:, lo - i * L - 1 : hi - i * L].T
                tail = product[:, L:]
                if i == keep:  # every Z_j read was complete: final, kept for block i + 1
                    tails[i][c0:c1] = tail
        if keep is not None:
            self._tails = tails
        return out

    # --------------------------------------------------------------------------------------- the steps
    def step(self, z: np.ndarray) -> np.ndarray:
        """:meth:`_Stream.step`; a step inside the current draw block reads its noise (a view, as before)."""
        if len(z) or self.t - self.offset >= len(self.noise):
            return super().step(z)
        self.t += 1
        return self.noise[self.t - 1 - self.offset].reshape(self.shape)

    def _advance(self, z: np.ndarray, n: int) -> np.ndarray:
        out = np.empty((n, self.cols))
        used = k = 0
        while k < n:
            t = self.t + 1
            draws = self.n_draws(t)
            if draws:  # a new draw block: z_t .. z_{t+draws-1}, and the noise of its releases
                self._receive(z[used : used + draws])
                used += draws
                self.noise = self._compute(t, self.drawn)
                self.offset = t - 1
            run = min(n - k, self.offset + len(self.noise) - self.t)  # the steps left in this draw block
            out[k : k + run] = self.noise[self.t - self.offset : self.t - self.offset + run]
            self.t += run
            k += run
        return out


FACTORIZATIONS: dict[str, type[Factorization]] = {
    "tree": TreeFactorization,
    "honaker": HonakerFactorization,
    "sqrt": SqrtFactorization,
    "blt": BLTFactorization,
}


AUTO_TOLERANCE = 0.05  # "auto" takes the BLT when its worst release is within 5 % of the square root's


def auto_factorization(horizon: int, tolerance: float = AUTO_TOLERANCE) -> str:
    """``"blt"`` when its worst-release noise is within ``tolerance`` of the square root's at ``horizon``, else ``"sqrt"``.

    Both worst releases are compared at equal privacy (``sens(C) max_t ||B_t||``, :meth:`Factorization.error`):
    the BLT keeps ``O(1)`` noise vectors per stream, the square root ``O(T)``.

    Parameters
    ----------
    horizon : int
        Number of releases.
    tolerance : float, default 0.05
        The relative excess of noise accepted for constant memory.

    Returns
    -------
    str
        ``"blt"`` or ``"sqrt"``.
    """
    horizon = check_int(horizon, "horizon", minimum=1)
    blt = BLTFactorization(horizon).error()["worst"]
    sqrt = math.sqrt(float(np.sum(sqrt_coefficients(horizon) ** 2)))  # sens(C) = max ||B_t|| = ||c||_2
    return "blt" if blt <= (1.0 + tolerance) * sqrt * sqrt else "sqrt"


def get_factorization(factorization: Any, horizon: int) -> Factorization:
    """Resolve ``factorization`` (a name in :data:`FACTORIZATIONS` or an instance) for ``horizon``.

    Parameters
    ----------
    factorization : str or Factorization
        ``"tree"``, ``"honaker"``, ``"sqrt"``, ``"blt"`` or ``"auto"`` (:func:`auto_factorization`), or a
        :class:`Factorization` of the same horizon.
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
    if factorization == "auto":
        factorization = auto_factorization(horizon)
    if factorization not in FACTORIZATIONS:
        raise ValueError(f"factorization must be 'auto' or one of {sorted(FACTORIZATIONS)}, got {factorization!r}.")
    return FACTORIZATIONS[factorization](horizon)
