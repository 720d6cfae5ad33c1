"""The table of counts from a Dask cluster (2 workers, one partial table per partition, added up) equals DuckDB's
group-by of the same rows, and ``from_counts`` releases the same frame from either (same seeded noise)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from dpfair.metrics import PrivateMetricFrame, add_count_tables, count_table

pytestmark = pytest.mark.slow  # a 2-worker LocalCluster (worker threads: the cluster's protocol, not its processes)
GROUPS = {"race": ["a", "b", "c"], "sex": ["F", "M"]}
KEYS = ["race", "sex", "y_true", "y_pred"]


def _rows(n: int = 4000) -> pd.DataFrame:
    rng = np.random.default_rng(11)
    return pd.DataFrame({"race": rng.choice(["a", "b", "c"], n), "sex": rng.choice(["F", "M"], n),
                         "y_true": rng.integers(0, 2, n), "y_pred": rng.integers(0, 2, n),
                         "score": rng.random(n).round(4)})


def test_dask_local_cluster_counts_equal_duckdb_and_release_the_same_frame(tmp_path):
    duckdb = pytest.importorskip("duckdb")
    distributed = pytest.importorskip("distributed")
    import dask

    rows = _rows()
    path = tmp_path / "rows.parquet"
    duckdb.sql("SELECT * FROM rows").write_parquet(str(path))
    by_duckdb = duckdb.sql(
        f"SELECT race, sex, y_true, y_pred, count(*) AS count, sum((y_true - score) * (y_true - score)) AS se "
        f"FROM read_parquet('{path}') GROUP BY ALL ORDER BY ALL").df()
    partitions = np.array_split(np.arange(len(rows)), 4)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        assert len(client.scheduler_info()["workers"]) == 2
        partial = [dask.delayed(count_table)(rows.iloc[p], sensitive_features=["race", "sex"], y_true="y_true",
                                             y_pred="y_pred") for p in partitions]
        by_dask = dask.delayed(add_count_tables)(partial, KEYS).compute()
        sums = [dask.delayed(count_table)(rows.iloc[p], sensitive_features=["race", "sex"], y_true="y_true",
                                          y_pred="score", sums={"se": "mean_squared_error"}, bounds=(0.0, 1.0),
                                          labels=False) for p in partitions]
        by_dask_sums = dask.delayed(add_count_tables)(sums, ["race", "sex", "y_true", "score"]).compute()
    cells = [*KEYS, "count"]
    pd.testing.assert_frame_equal(by_dask[cells].reset_index(drop=True),
                                  by_duckdb[cells].astype(by_dask.dtypes[cells].to_dict()))
    expected = by_duckdb.groupby(["race", "sex"]).se.sum().to_numpy()
    np.testing.assert_allclose(by_dask_sums.se.to_numpy(), expected, rtol=1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        common = dict(metrics={"tpr": "true_positive_rate"}, sensitive_features=["race", "sex"], epsilon=1.0,
                      groups=GROUPS, noise_random_state=3, random_state=4)
        first = PrivateMetricFrame.from_counts(by_dask, **common)
        second = PrivateMetricFrame.from_counts(by_duckdb, **common)
        mse = PrivateMetricFrame.from_counts(by_dask_sums, y_pred="score", metrics={"mse": "mean_squared_error"},
                                             sums={"mse": "se"}, bounds=(0.0, 1.0), sensitive_features=["race", "sex"],
                                             epsilon=1.0, groups=GROUPS, noise_random_state=3)
    assert first.noisy_table_.equals(second.noisy_table_) and first.by_group.equals(second.by_group)
    assert np.isfinite(mse.by_group.to_numpy(float)).all()
