"""``dpfair assess`` streams every metric through DuckDB: the small table it builds equals the frame of the rows,
labels are read as text (``pos_label``), a bad label or value is refused naming its column and kind (never the
value), and the page names no local path and shows the noisy group sizes."""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpfair.cli_assess import AssessError, run_assessment
from dpfair.metrics import PrivateMetricFrame
from dpfair.privacy import PrivacyLeakWarning


@pytest.fixture(autouse=True)
def spending_record(tmp_path, monkeypatch) -> Path:
    path = tmp_path / "spent.jsonl"
    monkeypatch.setenv("DPFAIR_ASSESS_LEDGER", str(path))
    return path


@pytest.fixture()
def rows() -> pd.DataFrame:
    rng = np.random.default_rng(3)
    n = 600
    return pd.DataFrame({"income": rng.choice(["<=50K", ">50K"], n), "guess": rng.choice(["<=50K", ">50K"], n),
                         "score": rng.random(n).round(3), "truth": rng.random(n).round(3),
                         "race": rng.choice(["a", "b very long group label for the chart", "c"], n)})


def _parquet(rows: pd.DataFrame, path: Path) -> None:
    import duckdb

    duckdb.sql("SELECT * FROM rows").write_parquet(str(path))


def _assess(path: Path, out: Path, y_true: str, y_pred: str, metric: list[str], epsilon: float = 1.0, **options):
    arguments = dict(groups=["a,b very long group label for the chart,c"], bounds=None, confidence=0.95,
                     undeclared="raise", seed=5, ledger=None, quiet=True)
    arguments.update(options)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        run_assessment(path, y_true, y_pred, ["race"], epsilon, arguments.pop("groups"), metric, out=out, **arguments)
    return pd.read_csv(out / "assessment.csv")


@pytest.mark.slow  # two assessments (page and charts included) and a frame of the rows: about 2.5 s each
@pytest.mark.parametrize("suffix", ["csv", "parquet"])  # text columns, and Parquet's number columns read as they are
def test_real_metrics_stream_and_equal_the_frame_of_the_rows(tmp_path, rows, suffix):
    path = tmp_path / f"p.{suffix}"
    if suffix == "csv":
        rows.to_csv(path, index=False)
    else:
        _parquet(rows, path)
    reals = ["mean_squared_error", "mean_prediction", "r2_score"]  # r2: three sums per cell, summed in DuckDB too
    table = _assess(path, tmp_path / "out", "truth", "score", reals, bounds="0,1")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        frame = PrivateMetricFrame(metrics={m: m for m in reals},
                                   y_true=rows.truth, y_pred=rows.score, sensitive_features=rows.race, epsilon=1.0,
                                   groups=["a", "b very long group label for the chart", "c"], bounds=(0.0, 1.0),
                                   noise_random_state=5, random_state=5)
    ours = table[table.statistic == "by_group"].set_index(["metric", "group"]).estimate
    for metric in reals:
        for group, value in frame.by_group[metric].items():
            assert ours[(metric, group)] == pytest.approx(value, rel=1e-9)  # same table, same seeded noise


def test_text_labels_with_pos_label_and_the_page_names_no_local_path(tmp_path, rows):
    path = tmp_path / "secret-folder" / "p.csv"
    path.parent.mkdir()
    rows.to_csv(path, index=False)
    out = tmp_path / "out"
    table = _assess(path, out, "income", "guess", ["selection_rate"], pos_label=">50K")
    expected = (rows.guess == ">50K").mean()
    overall = table[(table.statistic == "overall")].estimate.iloc[0]
    assert abs(overall - expected) < 0.05  # 600 rows at epsilon 1: noise of a few counts
    page = (out / "assessment.html").read_text()
    assert "secret-folder" not in page and str(tmp_path) not in page and "spent.jsonl" in page
    assert "Group sizes" in page and "noisy number of rows" in page


@pytest.mark.parametrize(("change", "column", "kind"), [
    (lambda d: d.assign(income=d.income.where(d.index != 7, None)), "income", "missing values"),
    (lambda d: d, "income", "text labels"),
    (lambda d: d.assign(income=np.where(d.index == 3, 2, (d.income == ">50K").astype(int)),
                        guess=(d.guess == ">50K").astype(int)), "income", "numbers other than 0 and 1"),
])
def test_a_bad_label_is_named_by_column_and_kind_never_by_value(tmp_path, rows, change, column, kind):
    path = tmp_path / "p.csv"
    change(rows).to_csv(path, index=False)
    with pytest.raises(AssessError) as refused:
        _assess(path, tmp_path / "out", "income", "guess", ["selection_rate"])
    assert f"column {column!r}" in refused.value.message and kind in refused.value.message
    assert "50K" not in refused.value.message and not (tmp_path / "out").exists()


def test_a_nan_label_in_a_parquet_number_column_is_named_as_missing(tmp_path, rows):
    path = tmp_path / "p.parquet"
    labels = (rows.income == ">50K").astype(float).where(rows.index != 5, np.nan)
    _parquet(rows.assign(income=labels, guess=(rows.guess == ">50K").astype(float)), path)
    with pytest.raises(AssessError, match="column 'income' has missing values"):
        _assess(path, tmp_path / "out", "income", "guess", ["selection_rate"])


def test_a_value_outside_the_bounds_is_refused_before_any_release(tmp_path, rows):
    path = tmp_path / "p.csv"
    rows.assign(score=rows.score * 2).to_csv(path, index=False)
    with pytest.raises(AssessError, match="'score' holds values outside the declared --bounds 0,1"):
        _assess(path, tmp_path / "out", "truth", "score", ["mean_absolute_error"], bounds="0,1")
    assert not (tmp_path / "out").exists()


def test_the_chart_title_stays_inside_with_long_group_labels(tmp_path, rows):
    from dpfair.metrics._report import _chart, assessment_table

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        frame = PrivateMetricFrame(metrics="selection_rate", y_true=(rows.income == ">50K").astype(int),
                                   y_pred=(rows.guess == ">50K").astype(int),
                                   sensitive_features={"race": rows.race, "other": rows.race.str.upper()},
                                   epsilon=math.inf)
    assert _chart(assessment_table(frame), "selection_rate", "selection_rate", tmp_path / "c.png", 0.95)
