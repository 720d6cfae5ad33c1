"""Run experiments: one task per (cell, seed), locally or on a Dask cluster, resumable.

Tasks run in a local process pool (``workers``) or on a Dask cluster (``scheduler``
address).  Only this client process writes to the results store, one transaction per
finished task, so Ctrl-C or a crashed worker loses no finished task; a later run skips
every task already in the store.
"""

from __future__ import annotations

import os
import re
import signal
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dpfair.datasets import DATASETS, REMOTE_FILES, DataIntegrityError, DataUnavailableError, fetch_file, get_data_home
from dpfair.experiments.registry import get_spec
from dpfair.experiments.spec import ExperimentSpec, cell_key
from dpfair.experiments.store import ResultsStore
from dpfair.privacy.leaks import PrivacyLeakWarning

__all__ = [
    "DataProblem",
    "RunSummary",
    "check_scheduler_address",
    "data_problems",
    "execute_task",
    "missing_data",
    "run_experiment",
]


@dataclass(frozen=True)
class RunSummary:
    """What one call of :func:`run_experiment` did.

    Parameters
    ----------
    experiment : str
        The experiment's id.
    n_tasks : int
        Tasks of the variant ((cell, seed) pairs).
    n_skipped : int
        Tasks already in the results store, not run again.
    n_run : int
        Tasks run by this call.
    seconds : float
        Wall-clock time of the call.
    """

    experiment: str
    n_tasks: int
    n_skipped: int
    n_run: int
    seconds: float


def execute_task(experiment_id: str, cell: dict[str, Any], seed: int) -> tuple[dict[str, float], float]:
    """Run one task (in a worker process).

    Parameters
    ----------
    experiment_id : str
        The experiment's id (looked up in the registry of the worker).
    cell : dict
        The cell's parameters.
    seed : int
        The seed.

    Returns
    -------
    metrics : dict of str to float
        Every metric of the experiment.
    runtime : float
        Seconds the task took.

    Raises
    ------
    RuntimeError
        If the task returned no value for a declared metric.
    """
    spec = get_spec(experiment_id)
    start = time.perf_counter()
    with warnings.catch_warnings():
        # The papers' non-private baselines (epsilon = inf cells) are run on purpose, and the results
        # table labels them by their epsilon: a PrivacyLeakWarning per worker would only be noise here.
        # The same holds for the SeededNoiseWarning (a PrivacyLeakWarning) of the seeded private cells: every
        # task is seeded on purpose, and the report says so at its top.
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        metrics = spec.task(dict(cell), int(seed))
    missing = set(spec.metrics) - set(metrics)
    if missing:
        raise RuntimeError(f"experiment {experiment_id!r} task returned no value for {sorted(missing)}.")
    return {k: float(v) for k, v in metrics.items()}, time.perf_counter() - start


_ADDRESS = re.compile(r"^(?:(?P<scheme>[a-z]+)://)?(?P<host>\[[0-9A-Fa-f:.]+\]|[^\s:/\[\]]+):(?P<port>[0-9]{1,5})/?$")
_SCHEMES = ("tcp", "tls", "ucx", "ws", "wss")


def check_scheduler_address(scheduler: str) -> str:
    """Check that ``scheduler`` looks like a Dask scheduler address, before connecting to it.

    Parameters
    ----------
    scheduler : str
        ``tcp://host:port`` (also ``tls``, ``ucx``, ``ws`` or ``wss``; a bare ``host:port``
        means ``tcp``), or ``inproc://...`` for a scheduler in this process.

    Returns
    -------
    str
        ``scheduler``, unchanged.

    Raises
    ------
    TypeError
        If ``scheduler`` is not a string.
    ValueError
        If it has no port, an unknown scheme or a port outside 1..65535.
    """
    if not isinstance(scheduler, str):
        raise TypeError(f"scheduler must be an address string such as 'tcp://127.0.0.1:8786', got {type(scheduler).__name__}.")
    if scheduler.startswith("inproc://") and len(scheduler) > len("inproc://"):
        return scheduler
    match = _ADDRESS.match(scheduler.strip())
    example = "give the address the scheduler prints, such as tcp://127.0.0.1:8786"
    if match is None:
        raise ValueError(f"scheduler {scheduler!r} is not an address of the form tcp://host:port; {example}.")
    if match["scheme"] is not None and match["scheme"] not in _SCHEMES:
        schemes = ", ".join(_SCHEMES)
        raise ValueError(f"scheduler {scheduler!r} has the unknown scheme {match['scheme']!r} (use one of {schemes}).")
    if not 1 <= int(match["port"]) <= 65535:
        raise ValueError(f"scheduler {scheduler!r} has port {match['port']}, outside 1..65535; {example}.")
    return scheduler


@dataclass(frozen=True)
class DataProblem:
    """A data file an experiment needs that cannot be used.

    Parameters
    ----------
    dataset : str
        The dataset's name (``dpfair data fetch DATASET``).
    file : str
        The file's path inside the data home.
    kind : {"missing", "corrupt"}
        Missing (or unreadable), or present with the wrong sha256 (or a folder in its place).
    problem : str
        What is wrong, naming the local file (and, when corrupt, its sha256 and the expected one).
    fix : str
        What to do about it.
    """

    dataset: str
    file: str
    kind: str
    problem: str
    fix: str

    @property
    def message(self) -> str:
        """The problem and the fix, in one string."""
        return f"{self.problem} {self.fix}"


def data_problems(spec: ExperimentSpec, data_home: str | Path | None = None, *, download: bool = False) -> list[DataProblem]:
    """The data files of ``spec`` that are missing or corrupt.

    Parameters
    ----------
    spec : ExperimentSpec
        The experiment.
    data_home : str or path-like, optional
        Overrides :func:`dpfair.datasets.get_data_home`.
    download : bool, default False
        Download missing files first (needs the network); a corrupt file is never replaced.

    Returns
    -------
    list of DataProblem
        One per unusable file (empty when everything is there and verified).
    """
    problems = []
    home = get_data_home(data_home)
    for name in spec.requires_data:
        for path in DATASETS[name]:
            try:
                fetch_file(REMOTE_FILES[path], data_home, download=download)
            except DataUnavailableError as exc:
                local = home / path
                problem = f"{local} is missing (data home {home})." if not local.exists() else str(exc)
                fix = (
                    f"Run `dpfair data fetch {name}` (needs the network), or point DPFAIR_DATA_HOME "
                    "(or `dpfair data home PATH`) at a folder that holds it."
                )
                problems.append(DataProblem(name, path, "missing", problem, fix))
            except DataIntegrityError as exc:
                if exc.actual is not None:
                    problem = f"{exc.path} is corrupt: its sha256 is {exc.actual}, expected {' or '.join(exc.expected)}."
                else:
                    problem = f"{exc.path} is a folder (or another non-file), not the dataset file."
                problems.append(DataProblem(name, path, "corrupt", problem, exc.fix[:1].upper() + exc.fix[1:]))
    return problems


def missing_data(spec: ExperimentSpec, data_home: str | Path | None = None, *, download: bool = False) -> list[str]:
    """List messages for the data files of ``spec`` that are not available (missing or corrupt).

    Parameters
    ----------
    spec : ExperimentSpec
        The experiment.
    data_home : str or path-like, optional
        Overrides :func:`dpfair.datasets.get_data_home`.
    download : bool, default False
        Download missing files first (needs the network).

    Returns
    -------
    list of str
        One message per missing or corrupt file (empty when everything is there); see
        :func:`data_problems` for which is which.
    """
    return [p.message for p in data_problems(spec, data_home, download=download)]


def _exit_with_parent(parent_pid: int) -> None:
    """Worker initializer: end this worker when the client dies (a killed client leaves no orphans)."""

    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, daemon=True).start()


def _init_worker(parent_pid: int) -> None:
    """Worker initializer: Ctrl-C is the client's to handle (it terminates the pool), and die with the client."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _exit_with_parent(parent_pid)


def _terminate_pool(pool: ProcessPoolExecutor) -> None:
    """Cancel pending tasks and end the workers now (a task in progress is abandoned, never half-stored)."""
    processes = list((getattr(pool, "_processes", None) or {}).values())
    # read the manager thread before shutdown: shutdown(wait=False) sets the pool's reference to it to None
    manager = getattr(pool, "_executor_manager_thread", None)
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        if process.is_alive():
            process.terminate()
    deadline = time.monotonic() + 5.0
    for process in processes:
        process.join(timeout=max(0.0, deadline - time.monotonic()))
        if process.is_alive():
            process.kill()
            process.join(timeout=1.0)
    # the pool's manager thread closes its wake-up pipe once it sees the workers gone; wait for that, or the
    # interpreter's exit hook (concurrent.futures' _python_exit) can write to the pipe as it closes and print an
    # OSError traceback ("Bad file descriptor") after the interrupt message (seen under load with two workers)
    if manager is not None:
        manager.join(timeout=5.0)


def _local_futures(workers: int, calls: list[tuple[str, dict[str, Any], int]]) -> Iterator[tuple[int, Callable[[], Any]]]:
    """Yield (index, result getter) as local tasks finish.

    The workers ignore SIGINT: on Ctrl-C (or any error, or when the caller closes this generator) the client
    cancels the pending tasks and terminates the pool at once, instead of waiting for tasks in progress.
    """
    if workers <= 1:
        for i, call in enumerate(calls):
            result = execute_task(*call)
            yield i, (lambda r=result: r)
        return
    pool = ProcessPoolExecutor(max_workers=workers, initializer=_init_worker, initargs=(os.getpid(),))
    finished = False
    try:
        pending: dict[Future[Any], int] = {pool.submit(execute_task, *call): i for i, call in enumerate(calls)}
        while pending:
            done, _ = wait(list(pending), return_when=FIRST_COMPLETED)
            for fut in done:
                yield pending.pop(fut), fut.result
        finished = True
    finally:
        if finished:
            pool.shutdown(wait=True)
        else:
            _terminate_pool(pool)


def _dask_futures(address: str, calls: list[tuple[str, dict[str, Any], int]]) -> Iterator[tuple[int, Callable[[], Any]]]:
    from distributed import Client, as_completed

    with Client(address, timeout="30s") as client:
        futures = [client.submit(execute_task, *call, pure=False) for call in calls]
        index = {f.key: i for i, f in enumerate(futures)}
        try:
            for fut in as_completed(futures):
                yield index[fut.key], fut.result
        finally:
            client.cancel(futures)


def run_experiment(
    spec: ExperimentSpec,
    out: str | Path,
    *,
    quick: bool = False,
    n_seeds: int | None = None,
    workers: int = 1,
    scheduler: str | None = None,
    progress: bool = True,
    progress_label: str | None = None,
) -> RunSummary:
    """Run every missing task of ``spec`` and store the results in ``out``.

    Tasks already in the store are skipped, so an interrupted run resumes.

    Parameters
    ----------
    spec : ExperimentSpec
        The experiment.
    out : str or path-like
        Output folder (holds ``results.sqlite`` and ``results.csv``; created if missing).
    quick : bool, default False
        Run the quick variant.
    n_seeds : int, optional
        Number of seeds (default: the variant's).
    workers : int, default 1
        Local worker processes (1 runs in this process).
    scheduler : str, optional
        Dask scheduler address (``tcp://host:port``); overrides ``workers``.
    progress : bool, default True
        Show a progress bar with an ETA.
    progress_label : str, optional
        The bar's label (default: the experiment's id); ``dpfair run all`` passes
        ``"[i/n] id"``.

    Returns
    -------
    RunSummary
        Counts of tasks run and skipped, and the wall-clock time.

    Raises
    ------
    ValueError
        If ``scheduler`` is not a scheduler address, or ``n_seeds < 1``.
    ResultsStoreError
        If ``out`` cannot be used (a file, not writable) or its ``results.sqlite`` is not a
        readable results database; raised before any task runs.
    OSError
        If the Dask scheduler cannot be reached.
    """
    if scheduler is not None:
        check_scheduler_address(scheduler)
    started = time.perf_counter()
    cells = spec.cells(quick)
    seeds = spec.seed_list(quick, n_seeds)
    with ResultsStore(out) as store:
        done = store.done_tasks(spec.id)
        todo = [(c, s) for c in cells for s in seeds if (cell_key(c), s) not in done]
        n_total = len(cells) * len(seeds)
        run_id = store.start_run(spec.id, "quick" if quick else "full", n_total, n_total - len(todo), workers, scheduler)
        calls = [(spec.id, c, s) for c, s in todo]
        stream = _dask_futures(scheduler, calls) if scheduler else _local_futures(workers, calls)
        status = "interrupted"
        try:
            with _Progress(progress_label or spec.id, len(calls), enabled=progress) as bar:
                for i, get in stream:
                    metrics, runtime = get()
                    cell, seed = todo[i]
                    store.add_task(spec.id, cell_key(cell), seed, metrics, {**cell, "seed": seed, "experiment": spec.id}, runtime)
                    bar.advance()
            status = "finished"
        finally:
            stream.close()  # on Ctrl-C or an error: cancel what is pending and end the workers now
            store.finish_run(run_id, status)
            store.export_csv()
    return RunSummary(spec.id, n_total, n_total - len(todo), len(todo), time.perf_counter() - started)


class _Progress:
    """A rich progress bar with an ETA, or nothing."""

    def __init__(self, name: str, total: int, *, enabled: bool) -> None:
        self.enabled = enabled and total > 0
        self.total = total
        self.name = name

    def __enter__(self) -> _Progress:
        if self.enabled:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

            self._progress = Progress(
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                TextColumn("ETA"),
                TimeRemainingColumn(),
            )
            self._progress.__enter__()
            self._task = self._progress.add_task(self.name, total=self.total)
        return self

    def advance(self) -> None:
        if self.enabled:
            self._progress.advance(self._task)

    def __exit__(self, *exc: object) -> None:
        if self.enabled:
            self._progress.__exit__(None, None, None)
