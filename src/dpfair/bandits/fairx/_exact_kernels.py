"""Compiled steps of the exact BLT release (``continual="blt-exact"``) in two-word integers (numba).

:class:`~dpfair.bandits.fairx._privatizer_exact.ExactBLTRelease` runs its encoder on Python integers, whose state
reaches about ``2^70`` (``2^F`` times the running sums over ``1 - theta``).  These kernels run the same recursion
on signed 128-bit integers held as two ``uint64`` words ``(hi, lo)`` (two's complement), with every operation
exact, so the same integers come out, bit for bit; then ``Y = r + Z`` (``Z`` the rounded Gaussian the Python
lattice table drew from the same words) and the float decoder in the Python path's order of operations.

Exactness and the bound that keeps it (one entry, ``W = 48``, ``F = 24``; ``|Theta_i|, |Omega_i| < 2^48`` since
``0 < theta_i < 1`` and ``|omega_i| < 1``: :func:`check_parameters`)
-----------------------------------------------------------------------------------------------------------
* *Products.*  ``_mul_signed(x, k)`` forms ``|x| |k|`` as ``lo(|x|) |k|`` (four exact products of 32-bit halves)
  plus ``hi(|x|) |k| 2^64`` and restores the sign: exact whenever ``|x| |k| < 2^127``.
* *Shifts.*  ``R_b(x) = floor((x + 2^(b-1)) / 2^b)`` is the addition of ``2^(b-1)`` (exact below ``2^127``) and an
  arithmetic right shift of the two words: the floor on two's complement, as Python's ``>>``.
* *Range.*  Every buffer starts at 0 and a step is accepted only if each new ``s_i`` lies in
  ``[-2^78, 2^78)`` and ``r`` in ``[-2^62, 2^62)`` (``ENCODER_LIMIT_BITS``, ``OUTPUT_LIMIT_BITS``).  Given accepted
  buffers, ``|Omega_i s_i|, |Theta_i s_i| < 2^126``; ``|m 2^F| < 2^87`` (``m`` is an int64); so
  ``|w| < 2^87 + 3 (2^78 + 1) < 2^88`` and the new ``s_i`` are below ``2^89``: no intermediate reaches ``2^127``,
  and the checks see the true values.  ``|Y| = |r + Z| < 2^62 + 2^40`` fits an int64, and ``float(Y)`` rounds
  to nearest as Python's ``float(int)`` does.  The Python path refuses the same steps (the same bounds, checked
  on its integers), so the two paths accept the same streams.  At Exp 1 the buffers reach about ``2^70``.
* *Decoder.*  ``u = Y + sum_i omega_i v_i`` (summed in buffer order, no fused multiply-add: numba does not
  contract without ``fastmath``), ``v_i <- theta_i v_i + Y``, ``total += u``: the order of
  :meth:`ExactBLTRelease.decode`.
"""

from __future__ import annotations

import numpy as np

from dpfair.bandits._numba import jit as _jit

__all__ = ["ENCODER_LIMIT_BITS", "OUTPUT_LIMIT_BITS", "check_parameters", "exact_blt_step", "from_words", "to_words"]

ENCODER_LIMIT_BITS = 78  # every buffer in [-2^78, 2^78)
OUTPUT_LIMIT_BITS = 62  # every encoder output r in [-2^62, 2^62)
_PARAM_BITS = 48  # PARAM_BITS of _privatizer_exact
_STATE_BITS = 24  # STATE_BITS of _privatizer_exact

_ONES = np.uint64(0xFFFFFFFFFFFFFFFF)
_LOW32 = np.uint64(0xFFFFFFFF)
_ZERO, _ONE, _32, _63, _64 = np.uint64(0), np.uint64(1), np.uint64(32), np.uint64(63), np.uint64(64)


def check_parameters(Theta: tuple[int, ...], Omega: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """The dyadic BLT's numerators as int64 arrays, after checking ``|Theta_i|, |Omega_i| < 2^48`` (module docstring).

    Parameters
    ----------
    Theta, Omega : tuple of int
        :func:`~dpfair.bandits.fairx._privatizer_exact.dyadic_blt`'s numerators.

    Returns
    -------
    tuple of numpy.ndarray
        ``Theta`` and ``Omega`` as int64.
    """
    if any(abs(int(x)) >= 2**_PARAM_BITS for x in (*Theta, *Omega)):
        raise ValueError("the exact BLT's parameters must lie below 1 in magnitude for the compiled encoder.")
    return np.array(Theta, dtype=np.int64), np.array(Omega, dtype=np.int64)


def to_words(values: np.ndarray) -> np.ndarray:
    """Python integers in ``[-2^127, 2^127)`` as two-word ``uint64`` pairs (last axis: hi, lo)."""
    flat = np.asarray(values, dtype=object).reshape(-1)
    out = np.zeros((flat.size, 2), dtype=np.uint64)
    for k, v in enumerate(flat):
        u = int(v) % 2**128
        out[k, 0], out[k, 1] = u >> 64, u & (2**64 - 1)
    return out.reshape(*np.shape(values), 2)


def from_words(words: np.ndarray) -> np.ndarray:
    """Two-word ``uint64`` pairs (last axis: hi, lo) as Python integers (object array)."""
    words = np.asarray(words, dtype=np.uint64)
    flat = words.reshape(-1, 2)
    out = np.empty(flat.shape[0], dtype=object)
    for k in range(flat.shape[0]):
        u = (int(flat[k, 0]) << 64) | int(flat[k, 1])
        out[k] = u - 2**128 if u >= 2**127 else u
    return out.reshape(words.shape[:-1])


@_jit()
def _add(ah, al, bh, bl):
    """``a + b`` modulo ``2^128``."""
    lo = al + bl
    carry = _ONE if lo < al else _ZERO
    return ah + bh + carry, lo


@_jit()
def _neg(h, lo):
    """``-x`` modulo ``2^128``."""
    lo2 = (lo ^ _ONES) + _ONE
    return (h ^ _ONES) + (_ONE if lo2 == _ZERO else _ZERO), lo2


@_jit()
def _mul64(a, b):
    """The exact 128-bit product of two ``uint64`` by 32-bit halves: ``(hi, lo)``."""
    a0, a1, b0, b1 = a & _LOW32, a >> _32, b & _LOW32, b >> _32
    p00, p01, p10, p11 = a0 * b0, a0 * b1, a1 * b0, a1 * b1
    mid = (p00 >> _32) + (p01 & _LOW32) + (p10 & _LOW32)  # < 3 * 2^32
    return p11 + (p01 >> _32) + (p10 >> _32) + (mid >> _32), (p00 & _LOW32) | (mid << _32)


@_jit()
def _mul_signed(h, lo, k):
    """``x k`` for a two-word ``x`` and an int64 ``|k| < 2^63``: exact when ``|x k| < 2^127``."""
    negative = (h >> _63) != _ZERO
    if negative:
        h, lo = _neg(h, lo)
    k_negative = k < 0
    km = np.uint64(-k) if k_negative else np.uint64(k)
    ph, pl = _mul64(lo, km)
    ph = ph + h * km
    if negative != k_negative:
        ph, pl = _neg(ph, pl)
    return ph, pl


@_jit()
def _round_shift(h, lo, bits):
    """``R_b(x) = floor(x / 2^b + 1/2)`` for ``1 <= b <= 63`` (an arithmetic shift of the two words)."""
    b = np.uint64(bits)
    h, lo = _add(h, lo, _ZERO, _ONE << np.uint64(bits - 1))
    new_lo = (lo >> b) | (h << (_64 - b))
    new_h = np.uint64(np.int64(h) >> np.int64(bits))
    return new_h, new_lo


@_jit()
def _within(h, lo, bits) -> bool:
    """``-2^b <= x < 2^b`` for ``64 <= b <= 126`` (``x`` as two words)."""
    top = np.int64(h)
    limit = np.int64(1) << np.int64(bits - 64)
    return -limit <= top < limit


@_jit()
def encode_entry(m, state, e, Theta, Omega, pending) -> tuple:
    """One encoder step of entry ``e``: ``pending[:, e] <- s'`` (``state`` unchanged); returns ``(ok, r)``.

    ``w = m 2^F - sum_i R_W(Omega_i s_i)``, ``s'_i = R_W(Theta_i s_i) + w``, ``r = R_F(w)``; ``ok`` is False (and
    ``r`` meaningless) where a buffer leaves ``[-2^78, 2^78)`` or ``r`` leaves ``[-2^62, 2^62)``.
    ``state`` and ``pending`` have shape ``(buffers, n_entries, 2)`` (uint64 hi, lo).
    """
    lo = np.uint64(m)
    h = _ONES if m < 0 else _ZERO
    F = np.uint64(_STATE_BITS)
    wh, wl = (h << F) | (lo >> (_64 - F)), lo << F
    for i in range(Omega.size):
        ph, pl = _mul_signed(state[i, e, 0], state[i, e, 1], Omega[i])
        ph, pl = _round_shift(ph, pl, _PARAM_BITS)
        nh, nl = _neg(ph, pl)
        wh, wl = _add(wh, wl, nh, nl)
    ok = True
    for i in range(Theta.size):
        ph, pl = _mul_signed(state[i, e, 0], state[i, e, 1], Theta[i])
        ph, pl = _round_shift(ph, pl, _PARAM_BITS)
        sh, sl = _add(ph, pl, wh, wl)
        ok = ok and _within(sh, sl, ENCODER_LIMIT_BITS)
        pending[i, e, 0], pending[i, e, 1] = sh, sl
    rh, rl = _round_shift(wh, wl, _STATE_BITS)
    r = np.int64(rl)
    limit = np.int64(1) << np.int64(OUTPUT_LIMIT_BITS)
    ok = ok and np.int64(rh) == (r >> np.int64(63)) and -limit <= r < limit
    return ok, r


@_jit()
def decode_entry(y, decoder, total, e, theta, omega) -> float:
    """``u = Y + sum_i omega_i v_i``, ``v_i <- theta_i v_i + Y``, ``total[e] += u`` (float, the Python order)."""
    value = float(y)
    acc = omega[0] * decoder[0, e]
    for i in range(1, omega.size):
        acc = acc + omega[i] * decoder[i, e]
    u = value + acc
    for i in range(theta.size):
        decoder[i, e] = theta[i] * decoder[i, e] + value
    total[e] = total[e] + u
    return total[e]


@_jit()
def _exact_blt_step(m, z, rows, encoder, decoder, total, pending, r, Theta, Omega, theta, omega) -> int:
    n_entries = m.shape[1]
    for k in range(rows.size):  # every check before any change
        for e in range(n_entries):
            ok, r[k, e] = encode_entry(m[k, e], encoder[rows[k]], e, Theta, Omega, pending[k])
            if not ok:
                return 1
    for k in range(rows.size):
        n = rows[k]
        for e in range(n_entries):
            for i in range(Theta.size):
                encoder[n, i, e, 0], encoder[n, i, e, 1] = pending[k, i, e, 0], pending[k, i, e, 1]
            decode_entry(r[k, e] + z[k, e], decoder[n], total[n], e, theta, omega)
    return 0


def exact_blt_step(m: np.ndarray, z: np.ndarray, rows: np.ndarray, encoder: np.ndarray, decoder: np.ndarray,
                   total: np.ndarray, Theta: np.ndarray, Omega: np.ndarray, theta: np.ndarray,
                   omega: np.ndarray) -> bool:
    """One release of ``rows``: encoder (128-bit), ``Y = r + z``, decoder; the state arrays updated in place.

    Parameters
    ----------
    m, z : numpy.ndarray of int64, shape ``(len(rows), n_entries)``
        The rows' increments and their rounded Gaussian noise, grid units.
    rows : numpy.ndarray of int64
        The rows that release.
    encoder : numpy.ndarray of uint64, shape ``(n_rows, buffers, n_entries, 2)``
        The encoder's buffers (hi, lo words).
    decoder : numpy.ndarray of float, shape ``(n_rows, buffers, n_entries)``
    total : numpy.ndarray of float, shape ``(n_rows, n_entries)``
        The decoder's buffers and the released prefix sums (grid units).
    Theta, Omega : numpy.ndarray of int64
        :func:`check_parameters`' numerators.
    theta, omega : numpy.ndarray of float
        ``Theta 2^-48`` and ``Omega 2^-48``.

    Returns
    -------
    bool
        False (and nothing changed) where a buffer or output would leave its range (module docstring).
    """
    rows = np.asarray(rows, dtype=np.int64)
    pending = np.zeros((rows.size, Theta.size, m.shape[1], 2), dtype=np.uint64)
    r = np.zeros(m.shape, dtype=np.int64)
    return _exact_blt_step(np.ascontiguousarray(m, dtype=np.int64), np.ascontiguousarray(z, dtype=np.int64), rows,
                           encoder, decoder, total, pending, r, Theta, Omega, theta, omega) == 0


# --------------------------------------------------------------------------------------------------
# the engine's release (_kernels._sync_group): private_rows[9:17] are the exact BLT's arrays
# (encoder, pending encoder, pending r, decoder, total, (Theta, Omega) and (theta, omega) per learner, exact flag)
# --------------------------------------------------------------------------------------------------
@_jit()
def entry_index(i, j, d1):
    """The position of ``(i, j)``, ``i <= j``, in ``np.triu_indices(d1)`` (the PRIVATIZER's entry order)."""
    return i * d1 - (i * (i - 1)) // 2 + (j - i)


@_jit()
def encode_group(base, n_agents, g, learner, noise_row, local_gram, local_target, private_rows) -> bool:
    """Every agent's encoder step of the group into the pending arrays (nothing else changes); False: refused.

    The increments are ``rint(S / g)`` (``Privatizer.to_units``) of the upper triangle of ``[[S, s], [s^T, 0]]``;
    the corner's increment is 0, so its buffers stay 0 (never released: not run).
    """
    encoder, pending, r = private_rows[9], private_rows[10], private_rows[11]
    Theta, Omega = private_rows[14][learner, 0], private_rows[14][learner, 1]
    d = local_target.shape[1]
    for a in range(n_agents):
        n = base + a
        p = noise_row[n]
        for i in range(d):
            for j in range(i, d + 1):
                m = np.int64(np.rint(local_target[n, i] / g)) if j == d else np.int64(np.rint(local_gram[n, i, j] / g))
                e = entry_index(i, j, d + 1)
                ok, r[p, e] = encode_entry(m, encoder[p], e, Theta, Omega, pending[p])
                if not ok:
                    return False
    return True


@_jit()
def release_entry(p, e, z, learner, private_rows) -> float:
    """Commit entry ``e``'s pending encoder step of noise row ``p``, decode ``Y = r + z``: the release (grid units)."""
    encoder, pending, r = private_rows[9], private_rows[10], private_rows[11]
    theta, omega = private_rows[15][learner, 0], private_rows[15][learner, 1]
    for i in range(theta.size):
        encoder[p, i, e, 0], encoder[p, i, e, 1] = pending[p, i, e, 0], pending[p, i, e, 1]
    return decode_entry(r[p, e] + z, private_rows[12][p], private_rows[13][p], e, theta, omega)
