"""The warning dpfair raises whenever an output is an exact (noise-free) function of private data."""

from __future__ import annotations

import warnings

__all__ = ["PrivacyLeakWarning", "warn_privacy_leak"]


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
