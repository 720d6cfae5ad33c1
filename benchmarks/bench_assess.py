"""Time and peak memory of ``dpfair assess`` on a warehouse-sized Parquet file, beside fairlearn; printed, not asserted.

Writes ``N_ROWS`` rows (0/1 true label and prediction, a real-valued truth and score in [0, 1], race, sex) as
Parquet with DuckDB (nothing held in Python), then runs, as a user would, ``dpfair assess preds.parquet ...`` in a
fresh process for the count-based metrics and for each real-valued metric, and reports each run's wall time and
peak resident memory (``wait4``'s ``ru_maxrss`` of that process alone).  Every metric streams: DuckDB computes the
cell counts, the per-cell sums and the bounds checks in one group-by, so the peak does not grow with the rows.
With ``--fairlearn`` it also times fairlearn's ``MetricFrame`` on the same rows (read into pandas by DuckDB), in
its own process, with the same metrics.

Run: ``.venv/bin/python benchmarks/bench_assess.py [N_ROWS] [--fairlearn] [--only=RUN ...]`` (default 5,000,000
rows; ``--only=r2_score`` runs that metric alone).

Measured on a shared, loaded 2-core machine (wall s, peak RSS MB): at 5,000,000 rows the count-based rates 11.0 /
262, mean_squared_error 9.1 / 275 (fairlearn 440 / 3,010 and 131 / 3,155); at 50,000,000 rows 24.9 / 263 and
24.6 / 278 (mean_absolute_error 26.4 / 279, mean_prediction 18.5 / 269).  Later, less loaded: r2_score 4.8 / 274
at 5,000,000 rows (fairlearn 53.2 / 3,155; mean_squared_error 5.2 / 276, fairlearn 74.2 / 3,156) and 8.9 / 274 at
50,000,000 (mean_squared_error 8.7 / 278).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ARGS = [a for a in sys.argv[1:] if not a.startswith("--")]
N_ROWS = int(ARGS[0]) if ARGS else 5_000_000
WITH_FAIRLEARN = "--fairlearn" in sys.argv
#: ``--only=NAME`` (repeatable): run only those runs of :data:`RUNS`
ONLY = [a.removeprefix("--only=") for a in sys.argv[1:] if a.startswith("--only=")]
RACES = "White,Black,Asian-Pac-Islander,Amer-Indian-Eskimo,Other"
#: one run per kind: the count-based metrics share one table; each real-valued metric adds its sums
RUNS = {
    "count-based (4 rates)": (["selection_rate", "true_positive_rate", "false_positive_rate", "accuracy_score"],
                              "y_true", "y_pred"),
    "mean_squared_error": (["mean_squared_error"], "truth", "score"),
    "mean_absolute_error": (["mean_absolute_error"], "truth", "score"),
    "mean_prediction": (["mean_prediction"], "truth", "score"),
    "r2_score": (["r2_score"], "truth", "score"),  # three sums per cell
}


def _write_parquet(path: Path) -> None:
    import duckdb

    duckdb.sql(f"""
        COPY (
            SELECT
                CAST(random() < 0.3 AS INTEGER) AS y_true,
                CAST(random() < 0.4 AS INTEGER) AS y_pred,
                random() AS truth,
                random() AS score,
                CASE WHEN r < 0.80 THEN 'White' WHEN r < 0.90 THEN 'Black' WHEN r < 0.96 THEN 'Asian-Pac-Islander'
                     WHEN r < 0.99 THEN 'Amer-Indian-Eskimo' ELSE 'Other' END AS race,
                CASE WHEN random() < 0.5 THEN 'Female' ELSE 'Male' END AS sex
            FROM (SELECT random() AS r FROM range({N_ROWS}))
        ) TO '{path}' (FORMAT parquet)
    """)


def _run(args: list[str], env: dict[str, str] | None = None) -> tuple[float, float]:
    """``(wall seconds, peak RSS in MB)`` of one fresh process (its own ``ru_maxrss``, from ``wait4``)."""
    start = time.perf_counter()
    process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    _, status, usage = os.wait4(process.pid, 0)
    elapsed = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{args[:4]} failed: {process.stderr.read().decode() if process.stderr else ''}")
    return elapsed, usage.ru_maxrss / 1024


def _assess(path: Path, folder: Path, metrics: list[str], y_true: str, y_pred: str) -> tuple[float, float]:
    args = [sys.executable, "-m", "dpfair.cli", "assess", str(path), "--y-true", y_true, "--y-pred", y_pred,
            "--sensitive", "race", "--sensitive", "sex", "--groups", RACES, "--groups", "Female,Male", "--epsilon", "1",
            "--out", str(folder / "out"), "--quiet", "--bounds", "0,1"]
    for metric in metrics:
        args += ["--metric", metric]
    return _run(args, env={**os.environ, "DPFAIR_ASSESS_LEDGER": str(folder / "spent.jsonl")})


def _fairlearn(path: Path, metrics: list[str], y_true: str, y_pred: str) -> tuple[float, float]:
    """fairlearn's MetricFrame on the rows (read into pandas by DuckDB), in a fresh process."""
    names = {"true_positive_rate": "true_positive_rate", "false_positive_rate": "false_positive_rate",
             "selection_rate": "selection_rate", "accuracy_score": "skm.accuracy_score",
             "mean_squared_error": "skm.mean_squared_error", "mean_absolute_error": "skm.mean_absolute_error",
             "mean_prediction": "mean_prediction", "r2_score": "skm.r2_score"}
    functions = ", ".join(f"'{m}': {names[m]}" for m in metrics)
    code = textwrap.dedent(f"""
        import duckdb, sklearn.metrics as skm
        from fairlearn.metrics import (MetricFrame, false_positive_rate, mean_prediction, selection_rate,
                                       true_positive_rate)
        data = duckdb.sql("SELECT {y_true}, {y_pred}, race, sex FROM read_parquet('{path}')").df()
        frame = MetricFrame(metrics={{{functions}}}, y_true=data['{y_true}'], y_pred=data['{y_pred}'],
                            sensitive_features=data[['race', 'sex']])
        frame.difference(), frame.ratio()
    """)
    return _run([sys.executable, "-c", code])


def main() -> None:
    with tempfile.TemporaryDirectory() as folder_name:
        folder = Path(folder_name)
        path = folder / "preds.parquet"
        start = time.perf_counter()
        _write_parquet(path)
        print(f"wrote {N_ROWS:,} rows to {path.name} ({path.stat().st_size / 1e6:.0f} MB) in "
              f"{time.perf_counter() - start:.1f} s")
        print(f"{'metrics':<24} {'dpfair assess s':>16} {'peak RSS MB':>12}"
              + (f" {'fairlearn s':>12} {'peak RSS MB':>12}" if WITH_FAIRLEARN else ""))
        for label, (metrics, y_true, y_pred) in RUNS.items():
            if ONLY and label not in ONLY:
                continue
            wall, peak = _assess(path, folder, metrics, y_true, y_pred)
            line = f"{label:<24} {wall:>16.1f} {peak:>12.0f}"
            if WITH_FAIRLEARN:
                fair_wall, fair_peak = _fairlearn(path, metrics, y_true, y_pred)
                line += f" {fair_wall:>12.1f} {fair_peak:>12.0f}"
            print(line, flush=True)


if __name__ == "__main__":
    main()
