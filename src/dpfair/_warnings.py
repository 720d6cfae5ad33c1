"""Where dpfair's warnings point: the user's line, found by walking the stack (pandas' ``find_stack_level`` idea).

A warning raised several calls deep inside dpfair (a step of the release template of :mod:`dpfair.base`, a
helper it calls, a wrapped fit) must point at the line of the caller's code that started the call, not at
dpfair's own code: that is the line a user can act on, and the location Python's warning filters key on
(``"default"`` shows a warning once per location).  Counting frames by hand (``stacklevel=6``) breaks as soon
as a frame is added or removed between the warning and the user; :func:`find_stack_level` counts them at run
time instead.

This module is the bottom layer of the package: it imports nothing of dpfair, so every other module may use it.
"""

from __future__ import annotations

import inspect
import os

__all__ = ["find_stack_level", "is_internal_file"]

#: The dpfair package's folder: a frame whose file is under it is "inside".  The tests, the examples and the
#: benchmarks live outside it, so a warning raised from dpfair points at them, as at any user's code.
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep

#: Libraries whose frames stand between a user's call and dpfair's code without being the user's line: a
#: scikit-learn meta-estimator (``GridSearchCV``, ``cross_val_score``, ``clone``, the ``fit`` context
#: decorator) and joblib's dispatch.  A warning raised in a fit they run points at the user's call of them.
_PASSED_THROUGH = tuple(f"{os.sep}{name}{os.sep}" for name in ("sklearn", "joblib"))


def is_internal_file(filename: str) -> bool:
    """Whether a frame of ``filename`` is one a warning should not point at.

    Parameters
    ----------
    filename : str
        A code object's ``co_filename``.

    Returns
    -------
    bool
        ``True`` for dpfair's own modules and for the libraries in ``_PASSED_THROUGH`` (scikit-learn,
        joblib); ``False`` for everything else (the user's code, the tests, the examples).
    """
    return os.path.abspath(filename).startswith(_PACKAGE_DIR) or any(part in filename for part in _PASSED_THROUGH)


def find_stack_level() -> int:
    """The ``stacklevel`` that points a warning at the first frame outside dpfair.

    Call it as the ``stacklevel`` argument of the :func:`warnings.warn` call itself::

        warnings.warn(message, SomeWarning, stacklevel=find_stack_level())

    Level 1 is the function that calls :func:`warnings.warn` (the caller of this function); each frame
    of dpfair (or of scikit-learn / joblib, see :func:`is_internal_file`) above it adds one, and the
    first other frame is the level returned.  So however many dpfair frames separate the warning from
    the user's call (a template step, a helper, a wrapped estimator's ``fit``, a search's trial), the
    warning names the user's line.  When every frame is inside (a warning at import time of dpfair
    itself), the outermost frame is returned.

    Returns
    -------
    int
        A level ``>= 1`` for :func:`warnings.warn`, counted from the caller of this function.
    """
    frame = inspect.currentframe()
    level = 0
    try:
        frame = frame.f_back if frame is not None else None  # the caller of find_stack_level is level 1
        while frame is not None:
            level += 1
            if not is_internal_file(frame.f_code.co_filename):
                return level
            frame = frame.f_back
    finally:
        del frame
    return max(level, 1)
