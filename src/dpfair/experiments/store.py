"""The results store: one SQLite database per output folder.

One row per (experiment, cell, seed, metric) with the full config, the dpfair version and
the seed.  Only the client process writes; each finished task is committed in one
transaction (its metric rows and its entry in ``tasks``), so an interrupted run loses no
finished task and never leaves half a task.  WAL mode keeps readers and the writer apart.
"""

from __future__ import annotations

import json
import os
import sqlite3
import tempfile
import time
from collections.abc import Iterable, Mapping
from pathlib import Path

import pandas as pd

from dpfair import __version__

__all__ = ["ResultsStore", "ResultsStoreError", "run_history"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS results (
    experiment TEXT NOT NULL, cell TEXT NOT NULL, seed INTEGER NOT NULL, metric TEXT NOT NULL,
    value REAL, config TEXT NOT NULL, version TEXT NOT NULL, created REAL NOT NULL,
    PRIMARY KEY (experiment, cell, seed, metric)
);
CREATE TABLE IF NOT EXISTS tasks (
    experiment TEXT NOT NULL, cell TEXT NOT NULL, seed INTEGER NOT NULL, runtime REAL NOT NULL,
    finished REAL NOT NULL, PRIMARY KEY (experiment, cell, seed)
);
CREATE TABLE IF NOT EXISTS runs (
    experiment TEXT NOT NULL, variant TEXT NOT NULL, started REAL NOT NULL, finished REAL,
    n_tasks INTEGER NOT NULL, n_done_before INTEGER NOT NULL, workers INTEGER, scheduler TEXT,
    version TEXT NOT NULL, status TEXT NOT NULL
);
"""


class ResultsStoreError(OSError):
    """The results folder or its ``results.sqlite`` cannot be used.

    Raised before anything is written, so the folder and a damaged database are left
    exactly as they were.  ``str(error)`` names the path and the fix; the two parts are
    also available separately (the command line prints them on one line).

    Parameters
    ----------
    problem : str
        What is wrong, naming the path.
    fix : str
        What to do about it.
    path : path
        The folder or file concerned.
    """

    def __init__(self, problem: str, fix: str, path: str | Path) -> None:
        super().__init__(f"{problem} {fix}")
        self.problem = problem
        self.fix = fix
        self.path = Path(path)

    def __reduce__(self) -> tuple[type, tuple[str, str, Path]]:
        return (type(self), (self.problem, self.fix, self.path))


def _reason(exc: OSError) -> str:
    return exc.strerror or str(exc)


def _prepare_folder(folder: Path) -> None:
    """Create ``folder`` if needed and check that it is a writable folder (raises ResultsStoreError)."""
    if folder.exists() and not folder.is_dir():
        raise ResultsStoreError(
            f"the output folder {folder} is a file, not a folder.",
            "Pass a folder path (it is created if missing), or move the file aside.",
            folder,
        )
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        blocker = next((p for p in folder.parents if p.exists() and not p.is_dir()), folder)
        raise ResultsStoreError(
            f"cannot create the output folder {folder}: {blocker} is a file, not a folder.",
            "Choose an output folder whose parents are folders.",
            folder,
        ) from None
    except OSError as exc:
        raise ResultsStoreError(
            f"cannot create the output folder {folder} ({_reason(exc)}).",
            "Choose an output folder you can write to.",
            folder,
        ) from None
    try:  # an explicit probe: permission bits alone do not say it (root, read-only mounts)
        fd, probe = tempfile.mkstemp(prefix=".dpfair-write-test-", dir=folder)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise ResultsStoreError(
            f"the output folder {folder} is not writable ({_reason(exc)}).",
            "Make it writable, or choose another output folder (copy the results there to resume or report).",
            folder,
        ) from None


class ResultsStore:
    """SQLite results store in ``folder/results.sqlite``.

    Parameters
    ----------
    folder : str or path-like
        Output folder (created if missing).

    Attributes
    ----------
    folder : pathlib.Path
        The output folder.
    path : pathlib.Path
        The database, ``folder / "results.sqlite"``.

    Raises
    ------
    ResultsStoreError
        ``folder`` is a file or not writable, ``results.sqlite`` is a folder, or it is not
        a complete SQLite database (corrupt or truncated; it is never overwritten).
    """

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        self.path = self.folder / "results.sqlite"
        _prepare_folder(self.folder)
        if self.path.exists() and not self.path.is_file():
            raise ResultsStoreError(
                f"{self.path} is a folder (or another non-file), not a results database.",
                "Move it aside, or choose a new output folder.",
                self.path,
            )
        try:
            self._conn = sqlite3.connect(self.path, timeout=30.0)
        except sqlite3.Error as exc:
            raise ResultsStoreError(
                f"cannot open {self.path} ({exc}).", "Move it aside, or choose a new output folder.", self.path
            ) from None
        try:
            # check before any write: a damaged file is reported, never repaired or overwritten
            check = self._conn.execute("PRAGMA quick_check").fetchone()
            if check is None or check[0] != "ok":
                raise sqlite3.DatabaseError("database disk image is malformed")
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.executescript(_SCHEMA)
            self._conn.commit()
        except sqlite3.Error as exc:
            self._conn.close()
            raise ResultsStoreError(
                f"{self.path} is not a readable dpfair results database ({exc}): it may be corrupt or truncated.",
                "Move it aside (dpfair never overwrites it), or choose a new output folder.",
                self.path,
            ) from None

    def close(self) -> None:
        """Close the connection."""
        self._conn.close()

    def __enter__(self) -> ResultsStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def done_tasks(self, experiment: str) -> set[tuple[str, int]]:
        """The tasks already finished for ``experiment``.

        Parameters
        ----------
        experiment : str
            The experiment's id.

        Returns
        -------
        set of (str, int)
            ``(cell key, seed)`` pairs.
        """
        rows = self._conn.execute("SELECT cell, seed FROM tasks WHERE experiment = ?", (experiment,))
        return {(c, int(s)) for c, s in rows}

    def add_task(
        self, experiment: str, cell: str, seed: int, metrics: Mapping[str, float], config: Mapping[str, object], runtime: float
    ) -> None:
        """Write one finished task atomically (all its metric rows and its task entry).

        Parameters
        ----------
        experiment : str
            The experiment's id.
        cell : str
            The cell key (:func:`~dpfair.experiments.cell_key`).
        seed : int
            The seed.
        metrics : mapping of str to float
            The task's metrics.
        config : mapping of str to value
            The full configuration, stored as JSON beside every metric row.
        runtime : float
            Seconds the task took.
        """
        now = time.time()
        config_text = json.dumps(dict(config), sort_keys=True, default=str)
        with self._conn:  # one transaction
            self._conn.executemany(
                "INSERT OR IGNORE INTO results VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [(experiment, cell, int(seed), m, float(v), config_text, __version__, now) for m, v in metrics.items()],
            )
            self._conn.execute("INSERT OR IGNORE INTO tasks VALUES (?, ?, ?, ?, ?)", (experiment, cell, int(seed), runtime, now))

    def start_run(self, experiment: str, variant: str, n_tasks: int, n_done: int, workers: int, scheduler: str | None) -> int:
        """Record the start of a run.

        Parameters
        ----------
        experiment : str
            The experiment's id.
        variant : str
            ``"quick"`` or ``"full"``.
        n_tasks : int
            Tasks of the variant.
        n_done : int
            Tasks already finished before this run.
        workers : int
            Local worker processes.
        scheduler : str or None
            Dask scheduler address, if any.

        Returns
        -------
        int
            The run's row id, for :meth:`finish_run`.
        """
        with self._conn:
            cur = self._conn.execute(
                "INSERT INTO runs VALUES (?, ?, ?, NULL, ?, ?, ?, ?, ?, 'running')",
                (experiment, variant, time.time(), n_tasks, n_done, workers, scheduler, __version__),
            )
        return int(cur.lastrowid)

    def finish_run(self, run_id: int, status: str) -> None:
        """Record the end of a run.

        Parameters
        ----------
        run_id : int
            Row id returned by :meth:`start_run`.
        status : str
            ``"finished"`` or ``"interrupted"``.
        """
        with self._conn:
            self._conn.execute("UPDATE runs SET finished = ?, status = ? WHERE rowid = ?", (time.time(), status, run_id))

    def results(self, experiments: Iterable[str] | None = None) -> pd.DataFrame:
        """All result rows, with the cell parameters as columns.

        Parameters
        ----------
        experiments : iterable of str, optional
            Keep only these experiments' rows.

        Returns
        -------
        pandas.DataFrame
            One row per (experiment, cell, seed, metric).
        """
        frame = pd.read_sql_query("SELECT * FROM results", self._conn)
        if experiments is not None:
            frame = frame[frame["experiment"].isin(list(experiments))].reset_index(drop=True)
        if frame.empty:
            return frame
        params = pd.DataFrame([json.loads(c) for c in frame["cell"]], index=frame.index)
        params = params.drop(columns=[c for c in params.columns if c in frame.columns])
        return pd.concat([frame, params], axis=1)

    def task_table(self) -> pd.DataFrame:
        """Finished tasks with their runtimes.

        Returns
        -------
        pandas.DataFrame
            Columns ``experiment``, ``cell``, ``seed``, ``runtime`` and ``finished``.
        """
        return pd.read_sql_query("SELECT * FROM tasks", self._conn)

    def run_table(self) -> pd.DataFrame:
        """Every recorded run.

        Returns
        -------
        pandas.DataFrame
            One row per run, with its variant, times, task counts, workers and status.
        """
        return pd.read_sql_query("SELECT * FROM runs", self._conn)

    def export_csv(self) -> Path:
        """Write ``results.csv`` beside the database, atomically.

        Returns
        -------
        pathlib.Path
            The path of ``results.csv``.
        """
        target = self.folder / "results.csv"
        tmp = target.with_suffix(".csv.tmp")
        pd.read_sql_query("SELECT * FROM results ORDER BY experiment, cell, seed, metric", self._conn).to_csv(tmp, index=False)
        tmp.replace(target)
        return target


def _read_only(folder: str | Path, query: str) -> list[tuple]:
    """Rows of ``query`` on ``folder``'s ``results.sqlite`` opened read-only (none when it does not exist)."""
    path = Path(folder) / "results.sqlite"
    if not path.is_file():
        return []
    try:
        conn = sqlite3.connect(f"{path.absolute().as_uri()}?mode=ro", uri=True, timeout=5.0)
        try:
            return conn.execute(query).fetchall()
        finally:
            conn.close()
    except sqlite3.Error as exc:
        raise ResultsStoreError(
            f"{path} is not a readable dpfair results database ({exc}): it may be corrupt or truncated.",
            "Move it aside (dpfair never overwrites it), or choose a new output folder.",
            path,
        ) from None


def run_history(folder: str | Path) -> dict[tuple[str, str], dict[str, object]]:
    """What the runs of each experiment and variant came to, read without writing.

    The runs since the variant's last run that started from nothing are summed: a variant finished
    after an interruption and a resume is *done*, its wall time the sum over those runs.

    Parameters
    ----------
    folder : str or path-like
        An output folder of ``dpfair run``.

    Returns
    -------
    dict
        ``(experiment, variant) -> {"status": "done" | "partial", "seconds": float, "workers": int,
        "n_runs": int}``; ``seconds`` and ``workers`` describe the runs that led to the current state
        (``workers`` of the last one).

    Raises
    ------
    ResultsStoreError
        If ``results.sqlite`` exists but is not a readable results database.
    """
    rows = _read_only(
        folder,
        "SELECT experiment, variant, started, finished, n_tasks, n_done_before, workers, status FROM runs ORDER BY started",
    )
    out: dict[tuple[str, str], dict[str, object]] = {}
    for experiment, variant, started, finished, n_tasks, n_done, workers, status in rows:
        key = (experiment, variant)
        if (n_done == 0 and n_tasks > 0) or key not in out:  # a fresh start resets the sum
            out[key] = {"status": "partial", "seconds": 0.0, "workers": 1, "n_runs": 0}
        entry = out[key]
        if n_tasks > 0 and n_done >= n_tasks:
            entry["status"] = "done"  # nothing left to do: an earlier run finished it
            continue
        entry["seconds"] = float(entry["seconds"]) + max(0.0, float((finished or started) - started))
        entry["workers"] = int(workers or 1)
        entry["n_runs"] = int(entry["n_runs"]) + 1
        entry["status"] = "done" if status == "finished" else "partial"
    return out
