"""Speed of ``dpfair assess`` on a warehouse-sized Parquet file (issue 33), printed, not asserted.

Writes 5,000,000 rows (true label, prediction, race, sex) as Parquet in a temporary folder (with
DuckDB), then times, as a user would run it, ``dpfair assess preds.parquet ...`` in a fresh process
(imports, DuckDB's group-by of (race, sex, y_true, y_pred), the noisy release, the intervals, the
table, the page and its charts; target under 20 s on 2 cores), and beside it the in-memory pandas
path: the same Parquet file read into pandas (by DuckDB) and given row by row to
``PrivateMetricFrame``, against DuckDB's group-by and ``PrivateMetricFrame.from_counts`` in the same
process.  Prints them and their ratio.

Run: ``.venv/bin/python benchmarks/bench_assess.py [N_ROWS]``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

N_ROWS = int(sys.argv[1]) if len(sys.argv) > 1 else 5_000_000
TARGET_S = 20.0
RACES = "White,Black,Asian-Pac-Islander,Amer-Indian-Eskimo,Other"


def _write_parquet(path: Path) -> None:
    import duckdb

    duckdb.sql(f"""
        COPY (
            SELECT
                CAST(random() < 0.3 AS INTEGER) AS y_true,
                CAST(random() < 0.4 AS INTEGER) AS y_pred,
                CASE WHEN r < 0.80 THEN 'White' WHEN r < 0.90 THEN 'Black' WHEN r < 0.96 THEN 'Asian-Pac-Islander'
                     WHEN r < 0.99 THEN 'Amer-Indian-Eskimo' ELSE 'Other' END AS race,
                CASE WHEN random() < 0.5 THEN 'Female' ELSE 'Male' END AS sex
            FROM (SELECT random() AS r FROM range({N_ROWS}))
        ) TO '{path}' (FORMAT parquet)
    """)


def _time_cli(path: Path, out: Path, ledger: Path) -> float:
    args = [sys.executable, "-m", "dpfair.cli", "assess", str(path), "--y-true", "y_true", "--y-pred", "y_pred",
            "--sensitive", "race", "--sensitive", "sex", "--groups", RACES, "--groups", "Female,Male", "--epsilon", "1",
            "--out", str(out), "--quiet"]
    start = time.perf_counter()
    result = subprocess.run(args, capture_output=True, text=True, env={**os.environ, "DPFAIR_ASSESS_LEDGER": str(ledger)},
                            check=False)
    elapsed = time.perf_counter() - start
    if result.returncode != 0:
        raise SystemExit(f"dpfair assess failed: {result.stderr}")
    return elapsed


METRICS = {m: m for m in ("selection_rate", "true_positive_rate", "false_positive_rate", "accuracy_score")}
GROUPS = {"race": RACES.split(","), "sex": ["Female", "Male"]}


def _time_in_process(path: Path) -> tuple[float, float]:
    """``(DuckDB counts + from_counts, pandas rows + the constructor)``, in this process, imports done before."""
    import duckdb

    from dpfair.metrics import PrivateMetricFrame

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = time.perf_counter()
        counts = duckdb.sql(f"SELECT race, sex, y_true, y_pred, count(*) AS count FROM read_parquet('{path}') "
                            "GROUP BY ALL").df()
        PrivateMetricFrame.from_counts(counts, metrics=METRICS, sensitive_features=["race", "sex"], epsilon=1.0,
                                       groups=GROUPS)
        engine = time.perf_counter() - start
        start = time.perf_counter()
        data = duckdb.sql(f"SELECT * FROM read_parquet('{path}')").df()
        PrivateMetricFrame(metrics=METRICS, y_true=data.y_true, y_pred=data.y_pred,
                           sensitive_features=data[["race", "sex"]], epsilon=1.0, groups=GROUPS)
        in_memory = time.perf_counter() - start
    return engine, in_memory


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "preds.parquet"
        start = time.perf_counter()
        _write_parquet(path)
        print(f"wrote {N_ROWS:,} rows to {path.name} ({path.stat().st_size / 1e6:.0f} MB) in {time.perf_counter() - start:.1f} s")
        cli = _time_cli(path, Path(folder) / "out", Path(folder) / "spent.jsonl")
        print(f"dpfair assess preds.parquet (DuckDB group-by, fresh process, page included): {cli:.1f} s "
              f"(target < {TARGET_S:.0f} s)")
        engine, in_memory = _time_in_process(path)
        print(f"in process, imports done: DuckDB group-by + from_counts {engine:.2f} s; rows read into pandas + "
              f"PrivateMetricFrame on the rows {in_memory:.2f} s; ratio pandas / DuckDB {in_memory / engine:.1f}")


if __name__ == "__main__":
    main()
