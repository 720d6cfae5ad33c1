"""Compiled words of the PRIVATIZER's noise: keyed BLAKE2b in counter mode and keyed SplitMix64 (numba).

:func:`dpfair.bandits.fairx._privatizer_factorized.prf_words` specifies the secure words: the words of draw
``j``, entries ``8 b .. 8 b + 7``, of a row with secret key ``K`` are the little-endian 64-bit words of
``BLAKE2b-512(key=K, person="dpfair.privz.v1", data=le64(j) || le64(b))``.  :func:`blake2b_words` computes
exactly that function (RFC 7693, written out: the same 64-bit words as :func:`hashlib.blake2b`, which the
tests check) without a Python call per digest: the state after the key block is computed once per row
(:func:`keyed_states`), then one compression per ``(row, draw, block)`` -- the same construction, the same
security argument (keyed BLAKE2b is a PRF), only cheaper.  :func:`splitmix_words` is the seeded trees'
SplitMix64 stream (:func:`dpfair.bandits.fairx.privatizer.keyed_words`) in the same layout.

Two more kernels of the same noise path, so that no numpy temporaries are made per draw block:
:func:`scaled_gaussians` (words to scaled Gaussians, calling scipy's own compiled ``ndtri``: the same doubles as
:func:`~dpfair.bandits.fairx._privatizer_factorized.gaussian_from_words` times the scale, in a running time that
does not depend on the value drawn: every draw evaluates both of ``ndtri``'s regions) and
:func:`fill_noise_slots` (the compiled engine's noise slots from the noise table).

Imported at the first factorized PRIVATIZER's noise only (numba is not imported with :mod:`dpfair.bandits`).
"""

from __future__ import annotations

import ctypes
import functools
from collections.abc import Sequence
from typing import Any

import numpy as np

from dpfair.bandits._numba import jit as _jit

__all__ = ["blake2b_words", "fill_noise_slots", "keyed_states", "scaled_gaussians", "splitmix_words"]

_IV = np.array([
    0x6A09E667F3BCC908, 0xBB67AE8584CAA73B, 0x3C6EF372FE94F82B, 0xA54FF53A5F1D36F1,
    0x510E527FADE682D1, 0x9B05688C2B3E6C1F, 0x1F83D9ABFB41BD6B, 0x5BE0CD19137E2179,
], dtype=np.uint64)
# the message schedule of the 12 rounds (RFC 7693, section 2.7; rounds 10 and 11 repeat 0 and 1)
_SIGMA = np.array([
    [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15],
    [14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3],
    [11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4],
    [7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8],
    [9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13],
    [2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9],
    [12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11],
    [13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10],
    [6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5],
    [10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0],
    [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15],
    [14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3],
], dtype=np.int64)
_BLOCK_BYTES = 128


@_jit(inline="always")
def _g(a, b, c, d, x, y):
    """The mixing function G (RFC 7693, 3.1): rotations by 32, 24, 16 and 63."""
    a = a + b + x
    d = d ^ a
    d = (d >> np.uint64(32)) | (d << np.uint64(32))
    c = c + d
    b = b ^ c
    b = (b >> np.uint64(24)) | (b << np.uint64(40))
    a = a + b + y
    d = d ^ a
    d = (d >> np.uint64(16)) | (d << np.uint64(48))
    c = c + d
    b = b ^ c
    b = (b >> np.uint64(63)) | (b << np.uint64(1))
    return a, b, c, d


@_jit()
def _compress(h, m, counter, last, sigma, iv) -> None:
    """The BLAKE2b compression ``F(h, m, t, f)`` (RFC 7693, 3.2), ``h`` updated in place (the state in registers)."""
    v0, v1, v2, v3, v4, v5, v6, v7 = h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7]
    v8, v9, v10, v11, v12, v13, v14, v15 = iv[0], iv[1], iv[2], iv[3], iv[4], iv[5], iv[6], iv[7]
    v12 ^= np.uint64(counter)  # t < 2^64: the high word of the counter stays 0
    if last:
        v14 = ~v14
    for r in range(12):
        s = sigma[r]
        v0, v4, v8, v12 = _g(v0, v4, v8, v12, m[s[0]], m[s[1]])  # the columns
        v1, v5, v9, v13 = _g(v1, v5, v9, v13, m[s[2]], m[s[3]])
        v2, v6, v10, v14 = _g(v2, v6, v10, v14, m[s[4]], m[s[5]])
        v3, v7, v11, v15 = _g(v3, v7, v11, v15, m[s[6]], m[s[7]])
        v0, v5, v10, v15 = _g(v0, v5, v10, v15, m[s[8]], m[s[9]])  # the diagonals
        v1, v6, v11, v12 = _g(v1, v6, v11, v12, m[s[10]], m[s[11]])
        v2, v7, v8, v13 = _g(v2, v7, v8, v13, m[s[12]], m[s[13]])
        v3, v4, v9, v14 = _g(v3, v4, v9, v14, m[s[14]], m[s[15]])
    h[0] ^= v0 ^ v8
    h[1] ^= v1 ^ v9
    h[2] ^= v2 ^ v10
    h[3] ^= v3 ^ v11
    h[4] ^= v4 ^ v12
    h[5] ^= v5 ^ v13
    h[6] ^= v6 ^ v14
    h[7] ^= v7 ^ v15


@_jit()
def _keyed_states(states, key_blocks, sigma, iv) -> None:
    """``states[r]``: from row ``r``'s parameter block to its state after the (padded) key block, in place."""
    m = np.zeros(16, dtype=np.uint64)
    for r in range(key_blocks.shape[0]):
        for i in range(16):
            m[i] = key_blocks[r, i]
        _compress(states[r], m, _BLOCK_BYTES, False, sigma, iv)


@_jit()
def _blake2b_words(states, first_draw, n_draws, n_blocks, n_entries, sigma, iv, out) -> None:
    """``out[j, r, e]``: word ``e`` of draw ``first_draw + j`` of row ``r`` (one compression per 8 words)."""
    m = np.zeros(16, dtype=np.uint64)
    h = np.zeros(8, dtype=np.uint64)
    for j in range(n_draws):
        m[0] = np.uint64(first_draw + j)  # le64(draw) || le64(block): the 16 bytes of the message
        for r in range(states.shape[0]):
            for b in range(n_blocks):
                m[1] = np.uint64(b)
                for i in range(8):
                    h[i] = states[r, i]
                _compress(h, m, _BLOCK_BYTES + 16, True, sigma, iv)
                for i in range(min(8, n_entries - 8 * b)):
                    out[j, r, 8 * b + i] = h[i]


def keyed_states(row_keys: Sequence[bytes], person: bytes, digest_size: int = 64) -> np.ndarray:
    """Each row's BLAKE2b state after its key block: ``(n_rows, 8)`` uint64 (the secret part of the PRF).

    Parameters
    ----------
    row_keys : sequence of bytes
        One key per row, 1 to 64 bytes each.
    person : bytes
        The personalization (at most 16 bytes, zero-padded).
    digest_size : int, default 64
        Output bytes of each digest (1 to 64).

    Returns
    -------
    numpy.ndarray of uint64, shape ``(n_rows, 8)``

    Raises
    ------
    ValueError
        For no key, a key of another length, or a longer personalization.
    """
    if not row_keys or not all(1 <= len(k) <= 64 for k in row_keys):
        raise ValueError("row_keys must be one or more keys of 1 to 64 bytes each.")
    if len(person) > 16 or not 1 <= digest_size <= 64:
        raise ValueError("person must be at most 16 bytes and digest_size in 1..64.")
    # the parameter block (RFC 7693, 2.5): digest and key lengths, fanout = depth = 1, the personalization
    params = np.tile(_IV, (len(row_keys), 1))
    params[:, 0] ^= np.array([0x01010000 ^ (len(k) << 8) ^ digest_size for k in row_keys], dtype=np.uint64)
    padded = np.frombuffer(person.ljust(16, b"\0"), dtype="<u8")
    params[:, 6] ^= padded[0]
    params[:, 7] ^= padded[1]
    key_blocks = np.frombuffer(b"".join(k.ljust(_BLOCK_BYTES, b"\0") for k in row_keys), dtype="<u8")
    _keyed_states(params, key_blocks.reshape(len(row_keys), 16).astype(np.uint64), _SIGMA, _IV)
    return params


def blake2b_words(states: np.ndarray, first_draw: int, n_draws: int, n_entries: int) -> np.ndarray:
    """Words of draws ``first_draw ..`` of each row: ``BLAKE2b-512`` (keyed) of ``le64(draw) || le64(block)``.

    Parameters
    ----------
    states : numpy.ndarray of uint64, shape ``(n_rows, 8)``
        :func:`keyed_states` of the rows' keys (64-byte digests).
    first_draw : int
        The first draw (0-based), below ``2**64``.
    n_draws : int
        Number of draws.
    n_entries : int
        Words per draw (``ceil(n_entries / 8)`` digests).

    Returns
    -------
    numpy.ndarray of uint64, shape ``(n_draws, n_rows, n_entries)``
    """
    out = np.empty((n_draws, states.shape[0], n_entries), dtype=np.uint64)
    _blake2b_words(states, first_draw, n_draws, -(-n_entries // 8), n_entries, _SIGMA, _IV, out)
    return out


_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


@_jit()
def _splitmix_words(keys, first_draw, n_draws, n_entries, out) -> None:
    golden = np.uint64(0x9E3779B97F4A7C15)
    for j in range(n_draws):
        for r in range(keys.shape[0]):
            for e in range(n_entries):
                z = keys[r] + np.uint64((first_draw + j) * n_entries + e + 1) * golden  # mod 2^64
                z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
                z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
                out[j, r, e] = z ^ (z >> np.uint64(31))


def splitmix_words(keys: np.ndarray, first_draw: int, n_draws: int, n_entries: int) -> np.ndarray:
    """Positions ``(first_draw + j) n_entries + e`` of each row's SplitMix64 stream, ``(n_draws, n_rows, n_entries)``.

    The same words as :func:`dpfair.bandits.fairx.privatizer.keyed_words` with ``start = first_draw *
    n_entries``, laid out by draw.

    Parameters
    ----------
    keys : numpy.ndarray of uint64, shape ``(n_rows,)``
        One stream seed per row.
    first_draw, n_draws, n_entries : int
        The draws and the words per draw.

    Returns
    -------
    numpy.ndarray of uint64, shape ``(n_draws, n_rows, n_entries)``
    """
    out = np.empty((n_draws, keys.shape[0], n_entries), dtype=np.uint64)
    _splitmix_words(np.ascontiguousarray(keys, dtype=np.uint64), first_draw, n_draws, n_entries, out)
    return out


# ------------------------------------------------------------------------------------ Gaussians from words
@functools.cache
def _ndtri() -> Any:
    """scipy's compiled ``ndtri`` (``scipy.special.cython_special``: the function its ufunc calls), as a ctypes
    function pointer that the kernel calls (passed as an argument: its address is not baked into the cache)."""
    from numba.extending import get_cython_function_address

    address = get_cython_function_address("scipy.special.cython_special", "ndtri")
    return ctypes.CFUNCTYPE(ctypes.c_double, ctypes.c_double)(address)


# cephes' ndtri (the function scipy's ndtri calls) evaluates one of two approximations: a rational function of
# u - 1/2 in the centre, exp(-2) < u <= 1 - exp(-2) (9 ns), or one of 1/sqrt(-2 log y), y = min(u, 1 - u), in the
# tails (two logarithms, a square root and a degree-8 rational function: 49 ns; its two sets of coefficients,
# below and above y = exp(-32), cost the same).  A draw calls it on its own u and on a dummy from the *other*
# region, so that every draw evaluates each region once, whatever its value (the running time of a draw is
# fixed: tests/bandits/fairx/test_noise_speed_kernels.py counts the regions, benchmarks/bench_lattice_timing.py
# times them).
_EXP_MINUS_2 = 0.13533528323661269189  # cephes' branch point exp(-2)
_CENTRE_LIMIT = 1.0 - _EXP_MINUS_2  # ... and 1 - exp(-2), rounded as cephes rounds it
CENTRE_DUMMY = 0.5  # evaluates the centre approximation
TAIL_DUMMY = 2.0**-10  # evaluates the tail approximation (sqrt(-2 log y) = 3.7)


@_jit()
def _scaled_gaussians(ndtri, words, scale, out, sink) -> None:
    """``out[i, e] = ndtri(min(((words[i, e] >> 11) + 1/2) 2^-53, 1 - 2^-53)) * scale[e]``, each operation rounded
    as numpy's; every draw also evaluates ``ndtri`` at the dummy of the other region (the module's balance), their
    sum kept in ``sink[0]`` (never used, never optimised away)."""
    balance = 0.0
    for i in range(words.shape[0]):
        for e in range(words.shape[1]):
            uniform = float(words[i, e] >> np.uint64(11))  # exact: below 2^53
            uniform += 0.5
            uniform *= 2.0**-53
            uniform = min(uniform, 1.0 - 2.0**-53)  # the top word: 1 - 2^-53, not 1 (ndtri(1) = inf)
            # 1.0 when u is in cephes' centre region, else 0.0: a product of comparisons, no branch
            centre = np.float64(uniform > _EXP_MINUS_2) * np.float64(uniform <= _CENTRE_LIMIT)
            value = ndtri(uniform)
            balance += ndtri(CENTRE_DUMMY + centre * (TAIL_DUMMY - CENTRE_DUMMY))  # the other region, always
            out[i, e] = value * scale[e]
    sink[0] = balance


def scaled_gaussians(words: np.ndarray, scale: np.ndarray, out: np.ndarray) -> None:
    """``out = gaussian_from_words(words) * scale`` (the last axis scaled), the same doubles, in a fixed time per draw.

    :func:`~dpfair.bandits.fairx._privatizer_factorized.gaussian_from_words` computes ``u = ((w >> 11) + 1/2)
    2^-53`` in three roundings (the sum rounds to even above ``2^52``), caps it at ``1 - 2^-53``, and
    ``ndtri(u)`` with scipy's ufunc; this kernel does the same operations in the same order and calls the same
    compiled function (scipy's ``cython_special.ndtri``, the cephes routine its ufunc loops call), then the
    product by the scale, rounded once as ``numpy.multiply``.

    **Running time independent of the value drawn.**  ``ndtri`` alone takes 9 ns for ``u`` in its centre region
    and 49 ns in its tails (beyond 1.5 sigma), so a release's duration would say how many of its draws were in the
    tails.  Each draw here calls ``ndtri`` twice, on its own ``u`` and on a fixed dummy of the *other* region
    (chosen by arithmetic on the comparison, not a branch): every draw evaluates one centre and one tail
    approximation, in the same order (``tests/bandits/fairx/test_noise_speed_kernels.py`` counts them for centre,
    beyond-4-sigma and beyond-8-sigma words; ``benchmarks/bench_lattice_timing.py`` times them: ratio ~1).

    Parameters
    ----------
    words : numpy.ndarray of uint64, shape ``(..., n_entries)``
        Uniform 64-bit words, C-contiguous.
    scale : numpy.ndarray of float, shape ``(n_entries,)``
        The factor of each entry.
    out : numpy.ndarray of float, the shape of ``words``
        Written in place (C-contiguous).
    """
    n_entries = scale.shape[0]
    if out.shape != words.shape or words.shape[-1] != n_entries or not out.flags.c_contiguous:
        raise ValueError(f"scaled_gaussians needs out of the words' shape {words.shape} (last axis {n_entries}, the "
                         f"scale's), C-contiguous; got {out.shape}: pass numpy.empty(words.shape).")
    _scaled_gaussians(_ndtri(), np.ascontiguousarray(words).reshape(-1, n_entries),
                      np.ascontiguousarray(scale, dtype=float), out.reshape(-1, n_entries), np.zeros(1))


# ------------------------------------------------------------------------------------ the noise slots
@_jit()
def _fill_noise_slots(table, rows, released, filled, end, first, length, upper_row, upper_col, dim, noise_gram,
                      noise_target) -> None:
    """For each row in ``rows``: its unused slots moved to the front, then the noise of releases ``filled + 1 ..
    end`` from the table (entry ``p`` is ``(upper_row[p], upper_col[p])`` of the augmented matrix)."""
    for n in range(rows.shape[0]):
        row = rows[n]
        keep = filled[row] - released[row]
        src = released[row] + 1 - first[row]
        for s in range(keep):  # forward: the destination is before the source
            for i in range(dim):
                noise_target[row, s, i] = noise_target[row, src + s, i]
                for j in range(dim):
                    noise_gram[row, s, i, j] = noise_gram[row, src + s, i, j]
        for k in range(end[row] - filled[row]):
            release, slot = filled[row] + 1 + k, keep + k
            for p in range(upper_row.shape[0]):
                i, j, value = upper_row[p], upper_col[p], table[release, row, p]
                if j < dim:
                    noise_gram[row, slot, i, j] = value
                    noise_gram[row, slot, j, i] = value
                elif i < dim:  # the last column: the target's noise (the corner is not released)
                    noise_target[row, slot, i] = value
        first[row] = released[row] + 1
        length[row] = end[row] - released[row]


def fill_noise_slots(table: np.ndarray, rows: np.ndarray, released: np.ndarray, filled: np.ndarray,
                     end: np.ndarray, first: np.ndarray, length: np.ndarray, upper: tuple[np.ndarray, np.ndarray],
                     noise_gram: np.ndarray, noise_target: np.ndarray) -> None:
    """Top up the compiled engine's noise slots of ``rows`` from a factorized PRIVATIZER's noise table.

    For each ``row``: the slots of releases ``released + 1 .. filled`` (still unused) move to the front, the noise
    of releases ``filled + 1 .. end`` follows them, and ``first[row], length[row]`` become ``released + 1`` and
    ``end - released`` -- what :meth:`~dpfair.bandits.fairx.privatizer.Privatizer.release_noise_units` of those
    releases, copied into the slots, gives (the same integers, without its temporaries).

    Parameters
    ----------
    table : numpy.ndarray of int64, shape ``(n_releases + 1, n_rows, n_entries)``
        Row ``k``: the noise of release ``k``, the upper triangle of the augmented ``(d+1) x (d+1)`` matrix;
        filled at least up to ``end.max()``.
    rows : numpy.ndarray of int64
        The rows to top up.
    released, filled, end : numpy.ndarray of int64, shape ``(n_rows,)``
        Each row's releases made, releases whose noise is in its slots, and the last release to fetch.
    first, length : numpy.ndarray of int64, shape ``(n_rows,)``
        Each row's release number of slot 0 and slots filled; updated in place.
    upper : tuple of numpy.ndarray
        ``numpy.triu_indices(d + 1)``: the ``(i, j)`` of each entry.
    noise_gram : numpy.ndarray of int64, shape ``(n_rows, slots, d, d)``
        Updated in place.
    noise_target : numpy.ndarray of int64, shape ``(n_rows, slots, d)``
        Updated in place.
    """
    _fill_noise_slots(table, np.ascontiguousarray(rows, dtype=np.int64), released, filled, end, first, length,
                      np.ascontiguousarray(upper[0], dtype=np.int64), np.ascontiguousarray(upper[1], dtype=np.int64),
                      noise_target.shape[-1], noise_gram, noise_target)
