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
:func:`dpfair.bandits.fairx._privatizer_calibration._calibrate_factorized`.

``z`` is ``sigma * Phi^{-1}(u)`` with ``u`` a 53-bit uniform from 64-bit words (:func:`gaussian_from_words`):
a data-independent approximation of the Gaussian at about ``2^-53`` in the uniform and truncated beyond
``8.2 sigma``, then rounded to the grid ``g ~ sigma / 2^14`` after ``B``.  The compiled kernel
(:func:`~dpfair.bandits.fairx._prf_kernels.scaled_gaussians`) takes the same time for every draw: each draw
evaluates ``Phi^{-1}`` in both of its regions (centre and tails), so a release's duration says nothing of its noise.

What the accounting covers (stated, not charged)
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
The calibration (:func:`~dpfair.bandits.fairx._privatizer_calibration.calibrate_privatizer`) proves the releases
private for an *ideal* ``z`` (exact Gaussian) and an exact ``B z``; it charges nothing for the difference between
that and the ``z`` drawn here, only a relative margin of ``1e-9`` of ``delta``.  Under the quantile coupling (the
ideal ``z = Phi^{-1}(U)``, ``U`` uniform, drawn ``z`` from the 53-bit cell of ``U``) the releases can differ only
when (i) ``U`` falls in an end cell (the truncation: ``2^-52`` per draw, ``9.3e-11`` per agent over Exp 1's
``20,002 x 21`` draws, ``(1 + e^2) 9.3e-11 = 7.8e-10`` of ``delta``: above the margin, ``1e-10``), or (ii) the
53-bit grid, the rounding of ``Phi^{-1}`` and of the floating-point convolution move ``(B z)_k`` across a rounding
boundary of the grid ``g``: that probability is bounded only by ``2 E|B (z' - z)|_k`` summed over the releases and
entries, of the order of ``1e-3`` per agent at Exp 1, not a proof one can charge to a small ``delta``.  A sampler
swap does not close (ii): any ``z`` held in doubles moves ``(B z)_k`` by about ``1e-12`` grid units, and the bound
sums that over every release.  The exact paths are ``continual="tree"`` (integer node noise from the lattice
sampler, whose distance to the discrete Gaussian is proved and charged: :class:`dpfair.privacy.lattice.LatticeGaussian`)
and the PRIVATIZER's ``continual="blt-exact"``, which changes the construction rather than the sampler: the BLT's
encoder ``C m`` in integers, rounded Gaussian noise from a table on that integer, the exact ``mu``-GDP profile and
the table's distance charged (:mod:`dpfair.bandits.fairx._privatizer_exact`; 1.9 % more worst-release noise than
the square root at Exp 1).

The words come from

* **secure noise** (the default): a keyed cryptographic PRF in counter mode (:func:`prf_words`).  Each row
  (agent) gets a 256-bit secret key from the OS CSPRNG (:func:`new_row_keys`) when its PRIVATIZER is built;
  the words of draw ``j`` (row ``j`` of ``C``, 0-based: ``z_{j+1}`` for the square root, the ``j``-th node
  in draw order for Honaker's tree) are keyed BLAKE2b of the counter ``(j, block)``.  ``z`` is then a
  fixed function of ``(key, j)``, unpredictable without the key (BLAKE2b keyed is a PRF);
* **seeded, keyed trees** (``tree_keys``): the tree's SplitMix64 stream, position ``j * n_entries + e``
  (:func:`dpfair.bandits.fairx.privatizer.keyed_words`; reproducible, not hardened);
* a seeded generator without keys: its words in draw order (so the drawn ``z`` are part of the state).

The noise of release ``k`` of every row is computed in lock-step for all rows (the factorization's
streaming generator, ``n_draws(k)`` rows of ``z`` at step ``k``) and kept in a table
(:class:`_NoiseTable`), so it is a fixed function of ``(row, k)`` once drawn whatever the masks of the
synchronizations.

State and cache
---------------
With keyed words (the first two sources) the table is a *cache*: the pickled state of a
:class:`_FactorizedNoise` is the keys (inside the PRIVATIZER) and the factorization's name, constant-size in
the number of releases (:mod:`dpfair.federated` pickles each agent into Flower's ``context.state`` at every
message).  The table is rebuilt where the state is loaded, by replaying the same steps (``O(k log k)`` for
the square root after ``k`` releases, bit for bit the same integers), and shared within the process through
a cache keyed by a digest of the keys and the noise's parameters (:func:`_shared_table`): an agent loaded
again in a process that served it before continues its table.  The secret keys never leave the agent but
inside its own pickled state -- the storage of the agent's exact running sums, which say more than the
noise; a copy of that state (``pickle``, ``copy.deepcopy``) continues the same noise: it is the same
agent's state resumed, not a new agent (releasing different data from two copies would reuse the noise).
"""

from __future__ import annotations

import collections
import functools
import hashlib
import math
import secrets
import threading
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from scipy.special import ndtri

from dpfair.privacy.continual import Factorization

__all__: list[str] = []

KEY_BYTES = 32  # 256-bit secret key per row
_PERSON = b"dpfair.privz.v1"  # BLAKE2b personalization: domain separation of these words (<= 16 bytes)
_RECENT_TABLES = 16  # tables kept alive by the process cache after their last user is gone
_BELOW_ONE = 1.0 - 2.0**-53  # the largest double below 1: the cap of the uniforms (gaussian_from_words)
_CHUNK_WORDS = 2**18  # words drawn at once (2 MiB): z is computed a chunk of draws at a time


def new_row_keys(n_rows: int) -> tuple[bytes, ...]:
    """One fresh 256-bit secret key per row, from the OS CSPRNG (:func:`secrets.token_bytes`).

    Parameters
    ----------
    n_rows : int
        Number of rows (agents).

    Returns
    -------
    tuple of bytes
        ``n_rows`` keys of :data:`KEY_BYTES` bytes.
    """
    return tuple(secrets.token_bytes(KEY_BYTES) for _ in range(n_rows))


def prf_words(row_keys: Sequence[bytes], first_draw: int, n_draws: int, n_entries: int) -> np.ndarray:
    """Words of draws ``first_draw .. first_draw + n_draws - 1`` of each row, from its secret key.

    Counter mode of a keyed PRF: the words of draw ``j``, entries ``8 b .. 8 b + 7``, are the little-endian
    64-bit words of ``BLAKE2b-512(key=row_key, person="dpfair.privz.v1", data=le64(j) || le64(b))``
    (BLAKE2b keyed is a PRF: Aumasson, Neves, Wilcox-O'Hearn & Winnerlein 2013, RFC 7693), so every word is
    a fixed function of ``(key, j, entry)``, independent of how the draws are requested.  Computed by
    :func:`~dpfair.bandits.fairx._prf_kernels.blake2b_words` (RFC 7693 written out in numba, the same words as
    :func:`hashlib.blake2b`: one compression per eight words after each key's block, no Python call per
    digest); the security argument is the PRF's, unchanged.

    Parameters
    ----------
    row_keys : sequence of bytes
        One secret key per row (at most 64 bytes each; :func:`new_row_keys` gives 32).
    first_draw : int
        The first draw (0-based row of ``C``).
    n_draws : int
        Number of draws.
    n_entries : int
        Words per draw.

    Returns
    -------
    numpy.ndarray of uint64, shape ``(n_draws, len(row_keys), n_entries)``
    """
    from dpfair.bandits.fairx._prf_kernels import blake2b_words  # compiled: numba at the first noise

    return blake2b_words(_prf_states(tuple(row_keys)), int(first_draw), int(n_draws), int(n_entries))


@functools.lru_cache(maxsize=_RECENT_TABLES)
def _prf_states(row_keys: tuple[bytes, ...]) -> np.ndarray:
    """The rows' BLAKE2b states after their key blocks (:func:`~dpfair.bandits.fairx._prf_kernels.keyed_states`)."""
    from dpfair.bandits.fairx._prf_kernels import keyed_states

    states = keyed_states(row_keys, _PERSON)
    states.flags.writeable = False
    return states


def gaussian_from_words(words: np.ndarray) -> np.ndarray:
    """Standard normal variates ``Phi^{-1}(u)``, ``u = (top 53 bits + 1/2) 2^-53`` in (0, 1), never 0 or 1.

    The one map from words to ``z`` of every source (secure PRF, seeded keyed or seeded streams).  ``u`` is
    computed in doubles: above ``2^52`` the sum rounds to even, and the largest word would give exactly 1 (and
    ``Phi^{-1}(1) = inf``), so ``u`` is capped at ``1 - 2^-53``, the largest double below 1: ``z`` lies in
    ``[Phi^{-1}(2^-54), Phi^{-1}(1 - 2^-53)] = [-8.29, 8.21]``.

    Parameters
    ----------
    words : numpy.ndarray of uint64
        Uniform 64-bit words.

    Returns
    -------
    numpy.ndarray of float
        ``ndtri(u)``, the same shape.
    """
    uniform = (words >> np.uint64(11)).astype(float)
    uniform += 0.5  # in place: the same roundings as ((w >> 11) + 0.5) * 2^-53, fewer temporaries
    uniform *= 2.0**-53
    np.minimum(uniform, _BELOW_ONE, out=uniform)  # the top word: 1 - 2^-53, not 1
    return ndtri(uniform, out=uniform)


def _factorization_spec(factorization: Factorization) -> tuple[type, int, dict[str, Any]]:
    kwargs = {name: getattr(factorization, name) for name in ("block", "fft_block", "buffers")
              if hasattr(factorization, name)}
    return type(factorization), factorization.horizon, kwargs


class _NoiseTable:
    """The computed part of the noise: the streaming generator's state, the table ``n_k`` and the draws so far."""

    def __init__(self, factorization: Factorization, n_rows: int, n_entries: int, active: bool,
                 dtype: Any = np.int64) -> None:
        self.stream = factorization.stream((n_rows, n_entries)) if active else None
        # row 0: release 0 (nothing released yet) has no noise; the pages are touched as they are filled
        self.table = np.zeros((factorization.horizon + 1, n_rows, n_entries), dtype=dtype)
        self.filled = 0
        self.draws = 0
        self.lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        del state["lock"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.lock = threading.Lock()


_TABLES: weakref.WeakValueDictionary[bytes, _NoiseTable] = weakref.WeakValueDictionary()
_RECENT: collections.OrderedDict[bytes, _NoiseTable] = collections.OrderedDict()
_CACHE_LOCK = threading.Lock()


def _shared_table(cache_key: bytes, build: Callable[[], _NoiseTable]) -> _NoiseTable:
    """This process's table for ``cache_key`` (built if absent); the last ``_RECENT_TABLES`` used stay alive."""
    with _CACHE_LOCK:
        table = _TABLES.get(cache_key)
        if table is None:
            table = build()
            _TABLES[cache_key] = table
        _RECENT[cache_key] = table
        _RECENT.move_to_end(cache_key)
        while len(_RECENT) > _RECENT_TABLES:
            _RECENT.popitem(last=False)
        return table


def _clear_cache() -> None:
    """Forget this process's shared tables (tests and benchmarks: the cost of a rebuild)."""
    with _CACHE_LOCK:
        _RECENT.clear()
        _TABLES.clear()


class _FactorizedNoise:
    """Integer release noise ``round(sigma_units * (B z)_k)`` per row, extended lazily to the largest ``k`` asked.

    ``words(first_draw, k)`` returns the uint64 words of draws ``first_draw .. first_draw + k - 1``,
    shape ``(k, n_rows, n_entries)``.  ``key_digest`` (bytes) says that they are a fixed function of keys
    that this digest identifies (secure PRF keys or seeded tree keys): the table is then a per-process cache,
    not part of the pickled state (module docstring).  ``scale`` is fixed once the first noise is computed.
    """

    def __init__(self, factorization: Factorization, sigma_units: float, on_diagonal: np.ndarray, n_rows: int,
                 words: Callable[[int, int], np.ndarray], key_digest: bytes | None = None) -> None:
        self.factorization = factorization
        self.n_rows, self.n_entries = n_rows, int(on_diagonal.size)
        self.scale = np.where(on_diagonal, math.sqrt(2.0) * sigma_units, sigma_units)
        self.active = sigma_units > 0
        self.words = words
        self.key_digest = key_digest
        self._table: _NoiseTable | None = None

    # ------------------------------------------------------------------------------------ the table
    def _build(self) -> _NoiseTable:
        return _NoiseTable(self.factorization, self.n_rows, self.n_entries, self.active, self._table_dtype())

    def _table_dtype(self) -> Any:
        """int32 where every entry of the table provably fits, else int64 (the square root and Honaker keep int64).

        For the BLT, ``|n_k| = |round((B z)_k)| <= sum_j |b_j| max |z| + 1/2`` with ``|z| <= 8.3`` times the largest
        scale (:func:`gaussian_from_words` caps ``u`` inside ``[2^-54, 1 - 2^-53]``): when that bound is below
        ``2^31 - 1``, int32 holds every value the table can take, exactly, in half the memory.
        """
        f = self.factorization
        if getattr(f, "name", "") != "blt" or not self.active:
            return np.int64
        b = np.cumsum(f.inverse_coefficients())
        bound = float(np.abs(b).sum()) * 8.3 * float(self.scale.max()) + 1.0
        return np.int32 if bound < 2.0**31 - 1 else np.int64

    def _cache_key(self) -> bytes:
        f = self.factorization
        described = repr((type(f).__name__, f.horizon, getattr(f, "block", None), self.n_rows, self.n_entries,
                          self.active, self.scale.tolist()))  # repr of floats round-trips exactly
        if getattr(f, "fft_block", None) is not None:
            described += f"fft_block={f.fft_block}"
        if getattr(f, "buffers", None) is not None:
            described += f"buffers={f.buffers}"
        return hashlib.blake2b(bytes(self.key_digest or b"") + described.encode(), digest_size=32).digest()

    def _state(self) -> _NoiseTable:
        if self._table is None:
            self._table = self._build() if self.key_digest is None else _shared_table(self._cache_key(), self._build)
        return self._table

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["factorization"] = _factorization_spec(self.factorization)  # not its O(tau) coefficients
        if self.key_digest is not None:
            state["_table"] = None  # a function of the keys: rebuilt (or found in the process cache) on demand
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        kind, horizon, kwargs = state["factorization"]
        state["factorization"] = kind(horizon, **kwargs)
        self.__dict__.update(state)

    # ------------------------------------------------------------------------------------ the noise
    def _gaussian(self, table: _NoiseTable, k: int) -> np.ndarray:
        """The next ``k`` draws of ``z`` (grid units), their words drawn a chunk of draws at a time (in draw order:
        the same words; the temporaries stay small)."""
        from dpfair.bandits.fairx._prf_kernels import scaled_gaussians  # compiled: numba at the first noise

        z = np.empty((k, self.n_rows, self.n_entries))
        chunk = max(1, _CHUNK_WORDS // (self.n_rows * self.n_entries))
        for lo in range(0, k, chunk):
            n = min(chunk, k - lo)
            # gaussian_from_words(words) * scale: the same doubles (scipy's compiled ndtri), no temporaries
            scaled_gaussians(np.ascontiguousarray(self.words(table.draws + lo, n)), self.scale, z[lo : lo + n])
        table.draws += k
        return z

    def extend(self, upto: int) -> None:
        """Compute the noise of every release up to ``upto`` (in order: the draws are sequential).

        All the releases missing are computed by one call of the stream (:meth:`steps`, the draws of
        those steps drawn together): the same numbers as one release at a time.
        """
        table = self._state()
        with table.lock:
            if table.stream is None:
                table.filled = max(table.filled, upto)
                return
            if table.filled >= upto:
                return
            n = upto - table.filled
            k = table.stream.draws_for(n)
            z = self._gaussian(table, k) if k else np.zeros((0, self.n_rows, self.n_entries))
            # n_t = round((B z)_t): a function of z alone (rounded into the table: the same cast as an assignment)
            np.rint(table.stream.steps(z, n), out=table.table[table.filled + 1 : upto + 1], casting="unsafe")
            table.filled = upto

    def table(self, upto: int) -> np.ndarray:
        """The noise table, filled at least up to release ``upto``: int64 ``(horizon + 1, n_rows, n_entries)``,
        row ``k`` the noise of release ``k`` (read-only use: the rows filled never change)."""
        self.extend(upto)
        return self._state().table

    def units(self, release_index: np.ndarray) -> np.ndarray:
        """``n_k`` of each row: ``release_index`` of shape ``(n_rows,)`` or ``(blocks, n_rows)``, int64
        ``(*release_index.shape, n_entries)``."""
        self.extend(int(release_index.max(initial=0)))
        return self._state().table[release_index, np.arange(self.n_rows)]
