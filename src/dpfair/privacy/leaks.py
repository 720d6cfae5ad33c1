"""The warning dpfair raises whenever an output is an exact (noise-free) function of private data."""

from __future__ import annotations

import inspect
import math
import os
import warnings
from typing import Any

__all__ = [
    "PrivacyLeakWarning",
    "SeededNoiseWarning",
    "exact_release_message",
    "user_stacklevel",
    "warn_exact_release",
    "warn_privacy_leak",
    "warn_seeded_noise",
    "warn_seeded_release",
]


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


def warn_exact_release(epsilon: float, what: str, *, stacklevel: int | None = 3) -> None:
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
    stacklevel : int or None, default 3
        Counted from this function: 3 points the warning at the caller of the function that calls it;
        ``None`` points it at the first frame outside dpfair (:func:`user_stacklevel`).
    """
    if epsilon == float("inf"):
        level = user_stacklevel() if stacklevel is None else stacklevel
        warn_privacy_leak(exact_release_message(what), stacklevel=level + 1)


class SeededNoiseWarning(PrivacyLeakWarning):
    """A release at finite epsilon draws seeded (reproducible, not hardened) noise.

    Anyone who knows or can guess the seed can subtract the noise, so the release protects nobody in
    practice.  Raised at the user's line whenever a ``random_state`` seeds the noise of a private release;
    the release's ``privacy_spent_["noise"]`` says ``"seeded"`` and every page or report that shows the
    numbers says so too.  Experiments and tests that want reproducible noise silence it deliberately::

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SeededNoiseWarning)
            ...
    """


def warn_seeded_noise(noise: Any, epsilon: float, what: str, *, stacklevel: int | None = None) -> None:
    """Raise :class:`~dpfair.privacy.SeededNoiseWarning` when a finite-epsilon release draws seeded noise.

    Seeded noise is reproducible: whoever knows the seed can subtract the noise, and its floating-point
    samples are not hardened.  So a ``random_state`` given to a release at finite epsilon is said out loud
    at the user's line (here), in ``privacy_spent_["noise"]`` (``"seeded"``) and on every page that shows
    the numbers.  Experiments and tests that want reproducible noise silence it deliberately.

    Parameters
    ----------
    noise : NoiseSource (anything with a ``secure`` attribute)
        The source the release draws from.
    epsilon : float
        The release's epsilon (no warning at ``inf``: that release warns that it is exact).
    what : str
        What is released, for the message.
    stacklevel : int or None
        Passed to :func:`warnings.warn`; ``None`` points at the first frame outside dpfair (and its test helpers).
    """
    if noise.secure:
        return
    warn_seeded_release(epsilon, what, stacklevel=(user_stacklevel() if stacklevel is None else stacklevel) + 1)


def warn_seeded_release(epsilon: float, what: str, *, stacklevel: int | None = None) -> None:
    """Raise :class:`SeededNoiseWarning` for a finite-``epsilon`` release whose noise a seed reproduces.

    For releases that know they are seeded without holding a noise source (a learner's plan); see
    :func:`warn_seeded_noise`.

    Parameters
    ----------
    epsilon : float
        The release's epsilon (no warning at ``inf``).
    what : str
        What is released, for the message.
    stacklevel : int or None
        Passed to :func:`warnings.warn`; ``None`` points at the first frame outside dpfair.
    """
    if math.isinf(epsilon):
        return
    warnings.warn(
        f"{what} draws seeded noise (random_state was given): reproducible and not hardened, so it gives no privacy "
        "against anyone who knows or can guess the seed. Use random_state=None (secure noise) on real people's data.",
        SeededNoiseWarning, stacklevel=user_stacklevel() if stacklevel is None else stacklevel,
    )


def user_stacklevel() -> int:
    """The ``stacklevel`` (counted from the caller of this function) of the first frame outside ``dpfair``.

    Points a warning at the user's line without counting frames by hand (pandas' ``find_stack_level`` idea).
    """
    import dpfair

    package = os.path.dirname(dpfair.__file__)
    frame = inspect.currentframe()
    level = 0
    try:
        frame = frame.f_back if frame is not None else None  # the caller of user_stacklevel is level 1
        while frame is not None:
            level += 1
            filename = frame.f_code.co_filename
            if not filename.startswith(package) and "sklearn" + os.sep not in filename \
                    and "joblib" + os.sep not in filename:
                return level
            frame = frame.f_back
    finally:
        del frame
    return max(level, 1)
