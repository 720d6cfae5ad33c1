"""The warning dpfair raises whenever an output is an exact (noise-free) function of private data."""

from __future__ import annotations

import math
import warnings
from typing import Any

from dpfair._warnings import find_stack_level

__all__ = [
    "PrivacyLeakWarning",
    "SeededNoiseWarning",
    "exact_release_message",
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


def warn_privacy_leak(message: str, *, stacklevel: int | None = None) -> None:
    """Emit a :class:`PrivacyLeakWarning` with ``message``.

    Parameters
    ----------
    message : str
        The warning message.
    stacklevel : int or None, default None
        ``None``: the warning points at the first frame outside dpfair (the user's line, however deep
        inside dpfair the call is; :func:`dpfair._warnings.find_stack_level`).  An int is passed to
        :func:`warnings.warn` as is, counted from this function (2: the caller of ``warn_privacy_leak``).
    """
    warnings.warn(message, PrivacyLeakWarning, stacklevel=find_stack_level() if stacklevel is None else stacklevel)


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


def warn_exact_release(epsilon: float, what: str) -> None:
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

    Warns
    -----
    PrivacyLeakWarning
        If ``epsilon`` is infinite, at the first frame outside dpfair (the user's line).
    """
    if epsilon == float("inf"):
        warn_privacy_leak(exact_release_message(what))


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


def warn_seeded_noise(noise: Any, epsilon: float, what: str) -> None:
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

    Warns
    -----
    SeededNoiseWarning
        At the first frame outside dpfair (the user's line), when ``noise`` is seeded and ``epsilon`` finite.
    """
    if noise.secure:
        return
    warn_seeded_release(epsilon, what)


def warn_seeded_release(epsilon: float, what: str) -> None:
    """Raise :class:`SeededNoiseWarning` for a finite-``epsilon`` release whose noise a seed reproduces.

    For releases that know they are seeded without holding a noise source (a learner's plan); see
    :func:`warn_seeded_noise`.

    Parameters
    ----------
    epsilon : float
        The release's epsilon (no warning at ``inf``).
    what : str
        What is released, for the message.

    Warns
    -----
    SeededNoiseWarning
        At the first frame outside dpfair (the user's line), unless ``epsilon`` is infinite.
    """
    if math.isinf(epsilon):
        return
    warnings.warn(
        f"{what} draws seeded noise (random_state was given): reproducible and not hardened, so it gives no privacy "
        "against anyone who knows or can guess the seed. Use random_state=None (secure noise) on real people's data.",
        SeededNoiseWarning, stacklevel=find_stack_level(),
    )
