"""The results store: one SQLite database per output folder.

One row per (experiment, cell, seed, metric) with the full config, the dpfair version and
the seed.  Only the client process writes; each finished task is committed in one
transaction (its metric rows and its entry in ``tasks``), so an interrupted run loses no
finished task and never leaves half a task.  WAL mode keeps readers and the writer apart.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterable, Mapping
from pathlib import Path

import pandas as pd

from dpfair import __version__

__all__ = ["ResultsStore"]

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


class ResultsStore:
    """SQLite results store in ``folder/results.sqlite``.

    Parameters
    ----------
    folder : path
        Output folder (created if missing).
    """

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.path = self.folder / "results.sqlite"
        self._conn = sqlite3.connect(self.path, timeout=30.0)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.executescript(_SCHEMA)
        self._conn.commit()

    def close(self) -> None:
        """Close the connection."""
        self._conn.close()

    def __enter__(self) -> ResultsStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def done_tasks(self, experiment: str) -> set[tuple[str, int]]:
        """(cell, seed) pairs already finished for ``experiment``."""
        rows = self._conn.execute("SELECT cell, seed FROM tasks WHERE experiment = ?", (experiment,))
        return {(c, int(s)) for c, s in rows}

    def add_task(
        self, experiment: str, cell: str, seed: int, metrics: Mapping[str, float], config: Mapping[str, object], runtime: float
    ) -> None:
        """Write one finished task atomically (all its metric rows and its task entry)."""
        now = time.time()
        config_text = json.dumps(dict(config), sort_keys=True, default=str)
        with self._conn:  # one transaction
            self._conn.executemany(
                "INSERT OR IGNORE INTO results VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [(experiment, cell, int(seed), m, float(v), config_text, __version__, now) for m, v in metrics.items()],
            )
            self._conn.execute("INSERT OR IGNORE INTO tasks VALUES (?, ?, ?, ?, ?)", (experiment, cell, int(seed), runtime, now))

    def start_run(self, experiment: str, variant: str, n_tasks: int, n_done: int, workers: int, scheduler: str | None) -> int:
        """Record the start of a run; returns its row id."""
        with self._conn:
            cur = self._conn.execute(
                "INSERT INTO runs VALUES (?, ?, ?, NULL, ?, ?, ?, ?, ?, 'running')",
                (experiment, variant, time.time(), n_tasks, n_done, workers, scheduler, __version__),
            )
        return int(cur.lastrowid)

    def finish_run(self, run_id: int, status: str) -> None:
        """Record the end (``"finished"`` or ``"interrupted"``) of a run."""
        with self._conn:
            self._conn.execute("UPDATE runs SET finished = ?, status = ? WHERE rowid = ?", (time.time(), status, run_id))

    def results(self, experiments: Iterable[str] | None = None) -> pd.DataFrame:
        """All result rows (optionally of some experiments), with the cell parameters as columns."""
        frame = pd.read_sql_query("SELECT * FROM results", self._conn)
        if experiments is not None:
            frame = frame[frame["experiment"].isin(list(experiments))].reset_index(drop=True)
        if frame.empty:
            return frame
        params = pd.DataFrame([json.loads(c) for c in frame["cell"]], index=frame.index)
        params = params.drop(columns=[c for c in params.columns if c in frame.columns])
        return pd.concat([frame, params], axis=1)

    def task_table(self) -> pd.DataFrame:
        """Finished tasks with their runtimes."""
        return pd.read_sql_query("SELECT * FROM tasks", self._conn)

    def run_table(self) -> pd.DataFrame:
        """Every recorded run."""
        return pd.read_sql_query("SELECT * FROM runs", self._conn)

    def export_csv(self) -> Path:
        """Write ``results.csv`` beside the database (atomically) and return its path."""
        target = self.folder / "results.csv"
        tmp = target.with_suffix(".csv.tmp")
        pd.read_sql_query("SELECT * FROM results ORDER BY experiment, cell, seed, metric", self._conn).to_csv(tmp, index=False)
        tmp.replace(target)
        return target
