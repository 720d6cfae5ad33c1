"""What the compiled bandit kernels share: the ``njit`` options, the cache fallback, the thread count and the
Sherman-Morrison update of ``V^{-1}``.

Imported by :mod:`dpfair.bandits.fairx._kernels` and :mod:`dpfair.bandits.gmf._kernels` only, so numba is
imported at the first compiled run, never with :mod:`dpfair.bandits`.

numba's on-disk cache checks only the file that defines a cached kernel, not the files of the functions it
calls: after editing :func:`sherman_morrison`, delete the kernels' cache (the ``*.nbi``/``*.nbc`` files in
``__pycache__`` or ``NUMBA_CACHE_DIR``) so that the kernel modules compile it again.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numba

__all__ = ["jit", "sherman_morrison", "threads"]

# nogil: the kernels run in several Python threads; numpy semantics: 1/0 = inf, no ZeroDivisionError
_OPTIONS = {"nogil": True, "error_model": "numpy"}


def jit(**options: Any) -> Callable[[Any], Any]:
    """``numba.njit`` with the on-disk cache where one can be written, without it elsewhere.

    Parameters
    ----------
    **options
        More ``numba.njit`` options (``inline="always"`` for the small helpers of a kernel's inner loop).

    Returns
    -------
    callable
        The decorator: ``jit()(function)`` is the compiled ``function``.
    """

    def wrap(function: Any) -> Any:
        try:
            return numba.njit(cache=True, **_OPTIONS, **options)(function)
        except RuntimeError:  # "cannot cache function ...: no locator available" (read-only install)
            return numba.njit(cache=False, **_OPTIONS, **options)(function)

    return wrap


def threads() -> int:
    """Threads for the kernels: numba's setting (``NUMBA_NUM_THREADS``, by default the CPUs).

    Returns
    -------
    int
        At least one.
    """
    return max(1, int(numba.config.NUMBA_NUM_THREADS))


@jit()
def cholesky(matrix: Any, chol: Any) -> bool:
    """Lower ``chol`` with ``matrix = chol chol^T``, in place; ``False`` when a pivot is not positive.

    The column-by-column Cholesky–Banachiewicz loop with LAPACK potrf's test (a pivot that is not ``> 0``,
    NaN included, stops it); both families' kernels factor their Gram matrices with it (Fair-Greedy's ridge
    solve, the FairX synchronization's inverse).

    Parameters
    ----------
    matrix : numpy.ndarray of shape (d, d)
        Symmetric; only its lower triangle is read.
    chol : numpy.ndarray of shape (d, d)
        Output; its lower triangle is written (the upper triangle is left as it was).

    Returns
    -------
    bool
        Whether ``matrix`` is numerically positive definite (``chol`` is complete only then).
    """
    d = matrix.shape[0]
    for j in range(d):
        s = matrix[j, j]
        for k in range(j):
            s -= chol[j, k] * chol[j, k]
        if not s > 0.0:  # also NaN
            return False
        pivot = math.sqrt(s)
        chol[j, j] = pivot
        for i in range(j + 1, d):
            s = matrix[i, j]
            for k in range(j):
                s -= chol[i, k] * chol[j, k]
            chol[i, j] = s / pivot
    return True


@jit(inline="always")  # inlined where it is called (numba IR): no call in the kernels' per-round loops
def sherman_morrison(gram_inverse: Any, x: Any, work: Any) -> None:
    """Rank-one update of ``V^{-1}`` for ``V += x x^T``, in place (Sherman-Morrison).

    ``V^{-1} -= (V^{-1} x)(V^{-1} x)^T / (1 + x^T V^{-1} x)``, the update of
    :meth:`dpfair.bandits.RidgeState.update` written out in loops (both kernels' rank-one step).

    Parameters
    ----------
    gram_inverse : numpy.ndarray of shape (d, d)
        ``V^{-1}``, updated in place.
    x : numpy.ndarray of shape (d,)
        The new context.
    work : numpy.ndarray of shape (d,)
        Scratch; holds ``V^{-1} x`` (the old ``V^{-1}``) on return.
    """
    d = x.shape[0]
    denom = 0.0
    for i in range(d):
        acc = 0.0
        for j in range(d):
            acc += gram_inverse[i, j] * x[j]
        work[i] = acc
        denom += x[i] * acc
    denom = 1.0 + denom
    for i in range(d):
        for j in range(d):
            gram_inverse[i, j] -= work[i] * work[j] / denom
