"""The warning dpfair raises whenever an output is an exact (noise-free) function of private data."""

from __future__ import annotations

import warnings

__all__ = ["PrivacyLeakWarning", "exact_release_message", "warn_exact_release", "warn_privacy_leak"]


class PrivacyLeakWarning(UserWarning):
    """An output is an exact function of data that the caller may consider private.

    Raised, never silently, by analysis tools that return exact probabilities computed from
    scores, by ``epsilon=float('inf')`` fits on a dataset, and by estimators that train a wrapped
    model non-privately on the same rows (``prefit=False``).  Such outputs are fine on public or
    synthetic data; on real people's data they carry no differential-privacy guarantee.  The name
    follows diffprivlib, which uses it for the same idea.

    Silence it deliberately, for one block, with::

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivacyLeakWarning)
            ...
    """


def warn_privacy_leak(message: str, *, stacklevel: int = 3) -> None:
    """Emit a :class:`PrivacyLeakWarning` with ``message``.

    Parameters
    ----------
    message : str
        The warning message.
    stacklevel : int, default 3
        Passed to :func:`warnings.warn`, counted from this function: the default 3 points the
        warning at the caller of the function that calls ``warn_privacy_leak``.
    """
    warnings.warn(message, PrivacyLeakWarning, stacklevel=stacklevel)


def exact_release_message(what: str) -> str:
    """The one text of dpfair's ``epsilon = inf`` warning (mechanisms and estimators alike).

    Parameters
    ----------
    what : str
        What is released exactly (e.g. ``"laplace_mechanism's output"``).

    Returns
    -------
    str
        The message.
    """
    return (
        f"epsilon=inf: {what} is an exact function of the data and carries no privacy guarantee; "
        "use a finite epsilon on real people's data."
    )


def warn_exact_release(epsilon: float, what: str, *, stacklevel: int = 3) -> None:
    """Raise :class:`PrivacyLeakWarning` when ``epsilon`` (or a zCDP ``rho``) is infinite.

    The mechanisms of :mod:`dpfair.privacy.mechanisms` call it; estimators call
    :func:`dpfair._estimator.warn_non_private`, which adds the once-per-configuration rule of searches
    and words the warning the same way (:func:`exact_release_message`).

    Parameters
    ----------
    epsilon : float
        The privacy parameter; only ``inf`` warns.
    what : str
        What is released exactly.
    stacklevel : int, default 3
        Counted from this function: 3 points the warning at the caller of the function that calls it.
    """
    if epsilon == float("inf"):
        warn_privacy_leak(exact_release_message(what), stacklevel=stacklevel + 1)
