"""Progress of the epsilon searches of :class:`~dpfair.selection.SelectionProblem`: a rich bar, a callback, or nothing.

:meth:`~dpfair.selection.SelectionProblem.best_epsilon`, :meth:`~dpfair.selection.SelectionProblem.perfectly_fair_epsilons`,
``fairness_gap`` and ``accuracy`` report every evaluation of ``pi_m`` through :class:`_SearchProgress`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

#: ``progress=None`` shows a progress bar once a search is projected to take longer than this (seconds).
_AUTO_PROGRESS_SECONDS = 2.0

#: A progress argument: None (automatic), a bool, or a callable receiving ``(done, total)`` evaluations.
ProgressArgument = bool | Callable[[int, int], None] | None


def _interactive() -> bool:
    """Whether standard error is a terminal (``progress=None`` draws no bar into logs or pipes)."""
    import sys

    stream = sys.stderr
    return bool(getattr(stream, "isatty", lambda: False)())


class _SearchProgress:
    """Progress of a search over epsilon: a rich bar, a ``(done, total)`` callback, or nothing.

    ``progress=None`` starts the bar only when the evaluations so far project a search longer than
    ``_AUTO_PROGRESS_SECONDS``; ``True`` always shows it; ``False`` never.  The total grows when Brent's
    method adds evaluations.
    """

    def __init__(self, progress: ProgressArgument, description: str) -> None:
        if not (progress is None or isinstance(progress, bool) or callable(progress)):
            raise TypeError(f"progress must be None, True, False or a callable taking (done, total), got "
                            f"{type(progress).__name__}.")
        self.progress = progress
        self.description = description
        self.done = 0
        self.total = 0
        self.started = time.perf_counter()
        self._bar: Any = None
        self._task: Any = None

    def __enter__(self) -> _SearchProgress:
        return self

    def expect(self, count: int) -> None:
        """Announce ``count`` more evaluations."""
        self.total += count
        if self._bar is not None:
            self._bar.update(self._task, total=self.total)

    def tick(self) -> None:
        """One evaluation is done."""
        self.done += 1
        self.total = max(self.total, self.done)
        if callable(self.progress) and not isinstance(self.progress, bool):
            self.progress(self.done, self.total)
            return
        if self._bar is None and self.progress is not False:
            elapsed = time.perf_counter() - self.started
            if self.progress is True or (elapsed / self.done * self.total > _AUTO_PROGRESS_SECONDS and _interactive()):
                self._start_bar()
        if self._bar is not None:
            self._bar.update(self._task, completed=self.done, total=self.total)

    def _start_bar(self) -> None:
        from rich.console import Console
        from rich.errors import LiveError
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

        bar = Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                       TextColumn("ETA"), TimeRemainingColumn(), transient=True, console=Console(stderr=True))
        try:
            bar.__enter__()
        except LiveError:  # another live display (e.g. the experiment runner's bar) owns the terminal: stay silent
            self.progress = False
            return
        self._bar = bar
        self._task = bar.add_task(self.description, total=self.total, completed=self.done)

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.__exit__(None, None, None)
            self._bar = None
