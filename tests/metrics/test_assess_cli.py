"""``dpfair assess`` end to end on Adult (from DPFAIR_DATA_HOME), its HTML page in headless Chromium, and its errors."""

from __future__ import annotations

import html
import json
import math
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpfair.cli import main
from dpfair.datasets import DataIntegrityError, DataUnavailableError, load_adult
from dpfair.metrics import PrivateMetricFrame

RACES = "White,Black,Asian-Pac-Islander,Amer-Indian-Eskimo,Other"


@pytest.fixture(autouse=True)
def spending_record(tmp_path, monkeypatch) -> Path:
    """Every assessment of these tests records its spending in a temporary file, never in the home folder."""
    path = tmp_path / "spent.jsonl"
    monkeypatch.setenv("DPFAIR_ASSESS_LEDGER", str(path))
    return path


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


@pytest.fixture(scope="module")
def predictions(tmp_path_factory) -> Path:
    """Predictions of a logistic regression on Adult, with the true label, race and sex of every person."""
    from sklearn.linear_model import LogisticRegression

    try:
        adult = load_adult(download=False)
    except (DataUnavailableError, DataIntegrityError) as exc:
        pytest.skip(f"Adult is not in the data home ({exc.__class__.__name__}); see `dpfair data info`")
    X = adult.X[["age", "education-num", "hours-per-week", "capital-gain", "capital-loss"]]
    model = LogisticRegression(max_iter=500).fit(X, adult.y)
    path = tmp_path_factory.mktemp("adult") / "predictions.csv"
    pd.DataFrame({
        "income": adult.y, "prediction": model.predict(X), "score": model.predict_proba(X)[:, 1],
        "sex": adult.sensitive, "race": adult.X["race"],
    }).to_csv(path, index=False)
    return path


@pytest.mark.slow
@pytest.mark.processes
def test_assess_on_adult_writes_the_table_and_a_page_that_loads_in_a_browser(predictions, tmp_path):
    out = tmp_path / "assessment"
    args = ["assess", str(predictions), "--y-true", "income", "--y-pred", "prediction", "--sensitive", "race",
            "--sensitive", "sex", "--groups", RACES, "--groups", "Female,Male", "--epsilon", "1", "--out", str(out)]
    res = subprocess.run([sys.executable, "-m", "dpfair.cli", *args], capture_output=True, text=True, timeout=300,
                         env={**os.environ})
    assert res.returncode == 0, res.stderr
    assert "assess: reading" in res.stderr and "assess: writing" in res.stderr  # progress, like the other commands
    assert f"assessment: {out / 'assessment.html'}" in res.stdout
    table = pd.read_csv(out / "assessment.csv", keep_default_na=False)
    metrics = ["selection_rate", "true_positive_rate", "false_positive_rate", "accuracy_score"]
    assert list(pd.unique(table.metric)) == metrics
    groups = table[table.statistic == "by_group"]
    assert len(groups) == 4 * 10 and "Amer-Indian-Eskimo / Female" in set(groups.group)  # every race x sex cell
    for column in ("lower", "upper"):
        assert np.isfinite(table[column].astype(float)).all()
    estimate = pd.to_numeric(table.estimate, errors="coerce")
    measured = estimate.notna()  # a group not measurable at epsilon 1 (a flagged one) is n/a, never another number
    assert (table.flagged | measured).all() and measured[table.statistic != "by_group"].all()
    assert ((table.lower <= estimate + 1e-12) & (estimate <= table.upper + 1e-12))[measured].all()
    assert set(table.statistic) == {"by_group", "overall", "difference", "ratio", "difference_to_overall",
                                    "ratio_to_overall"}
    text = html.unescape((out / "assessment.html").read_text())
    assert "What was protected" in text and "epsilon = 1" in text and "discrete Laplace" in text
    assert "2.72 times" in text and "every row's race, sex, income and prediction" in text and "seeded noise" not in text
    images = re.findall(r"<img src='([^']+)'", text)
    assert len(images) == len(metrics) and all((out / src).stat().st_size > 1000 for src in images)

    browser = chromium()
    if browser is None:
        pytest.skip("Chromium is not installed (Debian package 'chromium'; .ci/run installs it when it can)")
    probe = out / "probe.html"
    probe.write_text(
        text.replace(
            "</body>",
            "<script>window.addEventListener('load',()=>{document.body.setAttribute('data-widths',"
            "JSON.stringify([...document.images].map(i=>i.naturalWidth)))});</script></body>",
        )
    )
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={tmp_path / 'chrome-profile'}", "--virtual-time-budget=5000", "--dump-dom"]
    dom = subprocess.run([browser, *flags, probe.as_uri()], capture_output=True, text=True, timeout=120).stdout
    match = re.search(r'data-widths="([^"]*)"', dom)
    assert match, dom[:2000]
    widths = json.loads(match.group(1).replace("&quot;", '"'))
    assert len(widths) == len(images) and all(w > 0 for w in widths)


def run_cli(capsys, *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as info:
        main(list(args))
    captured = capsys.readouterr()
    return info.value.code, captured.out, captured.err


def assert_one_line_error(code: int, stderr: str, *fragments: str) -> str:
    assert code == 2, stderr
    assert "Traceback" not in stderr
    lines = [line for line in stderr.splitlines() if not line.startswith("assess: ")]
    assert len(lines) == 1, stderr
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    assert "hint:" in lines[0]
    return lines[0]


def base(predictions, out, *extra):
    return ["assess", str(predictions), "--y-true", "income", "--y-pred", "prediction", "--sensitive", "race",
            "--epsilon", "1", "--out", str(out), *extra]


ERRORS = {
    "missing column": (["--groups", RACES], {"--y-true": "nope"}, ["--y-true column 'nope'", "income"]),
    "no groups": ([], {}, ["--groups is required", "race"]),
    "undeclared label": (["--groups", "White,Black"], {}, ["--sensitive column 'race'", "outside the declared groups"]),
    "not 0/1": (["--groups", RACES], {"--y-pred": "score"}, ["--y-pred column 'score'", "0 and 1"]),
    "unknown metric": (["--groups", RACES, "--metric", "roc_auc_score"], {}, ["--metric 'roc_auc_score'", "selection_rate"]),
    "groups count": (["--groups", RACES, "--groups", "Female,Male"], {}, ["--groups", "--sensitive"]),
    "real metric without bounds": (["--groups", RACES, "--metric", "mean_squared_error"], {}, ["--bounds is required"]),
    "bad bounds": (["--groups", RACES, "--metric", "mean_prediction", "--bounds", "0;1"], {}, ["--bounds"]),
    "bad epsilon": (["--groups", RACES, "--epsilon", "-1"], {}, ["--epsilon must be > 0"]),
}


@pytest.mark.parametrize("case", list(ERRORS), ids=list(ERRORS))
def test_assess_errors_are_one_line_naming_the_column_or_option(predictions, tmp_path, capsys, case):
    extra, replace, fragments = ERRORS[case]
    args = base(predictions, tmp_path / "out", *extra)
    for option, value in replace.items():
        args[args.index(option) + 1] = value
    code, _, err = run_cli(capsys, *args)
    line = assert_one_line_error(code, err, *fragments)
    assert not (tmp_path / "out").exists()  # nothing written, nothing released
    assert "45222" not in line  # no private count


def test_assess_missing_file_and_out_that_is_a_file(tmp_path, capsys):
    code, _, err = run_cli(capsys, *base(tmp_path / "nope.csv", tmp_path / "out", "--groups", "a,b"))
    assert_one_line_error(code, err, "nope.csv", "is not a CSV or Parquet file")
    csv = tmp_path / "p.csv"
    pd.DataFrame({"income": [0, 1, 1, 0], "prediction": [0, 1, 0, 0], "race": ["a", "b", "a", "b"]}).to_csv(csv, index=False)
    (tmp_path / "file").write_text("x")
    code, _, err = run_cli(capsys, *base(csv, tmp_path / "file", "--groups", "a,b", "--seed", "0"))
    assert_one_line_error(code, err, "--out", "is a file")


def test_assess_at_epsilon_inf_reads_the_groups_and_says_there_is_no_privacy(tmp_path, capsys):
    csv = tmp_path / "p.csv"
    rng = np.random.default_rng(0)
    pd.DataFrame({"income": rng.integers(0, 2, 400), "prediction": rng.integers(0, 2, 400),
                  "race": rng.choice(["a", "b"], 400)}).to_csv(csv, index=False)
    args = ["assess", str(csv), "--y-true", "income", "--y-pred", "prediction", "--sensitive", "race",
            "--epsilon", "inf", "--out", str(tmp_path / "out"), "--quiet", "--metric", "selection_rate"]
    code, _, err = run_cli(capsys, *args)
    assert code == 0, err
    assert "no privacy guarantee" in err and "assess:" not in err and "seeded" not in err
    table = pd.read_csv(tmp_path / "out" / "assessment.csv")
    sr = table[(table.statistic == "by_group")].set_index("group").estimate
    data = pd.read_csv(csv)
    expected = data.groupby("race").prediction.mean()
    assert math.isclose(sr["a"], expected["a"], rel_tol=1e-12) and math.isclose(sr["b"], expected["b"], rel_tol=1e-12)


def test_assess_help_is_plain(capsys):
    code, out, _ = run_cli(capsys, "assess", "--help")
    assert code == 0 and "--sensitive COL" in out and "<bool>" not in out and "Raises" not in out
    assert "\\[" not in out and "Parquet" in out  # no escaped "[required]" in the help
    from dpfair.metrics import SUPPORTED_METRICS

    flat = " ".join(out.split())
    assert all(name in flat for name in SUPPORTED_METRICS) and "--pos-label" in flat
    assert "numbers in --bounds for real-" in flat


def test_assess_pos_label_reads_text_labels(tmp_path, capsys):
    csv = tmp_path / "p.csv"
    rng = np.random.default_rng(1)
    income = rng.choice([">50K", "<=50K"], 300)
    prediction = rng.choice([">50K", "<=50K"], 300)
    pd.DataFrame({"income": income, "prediction": prediction, "race": rng.choice(["a", "b"], 300)}).to_csv(
        csv, index=False)
    args = ["assess", str(csv), "--y-true", "income", "--y-pred", "prediction", "--sensitive", "race",
            "--epsilon", "inf", "--out", str(tmp_path / "out"), "--quiet", "--metric", "selection_rate"]
    code, _, err = run_cli(capsys, *args)
    assert code == 2 and "income" in err and "holds text labels" in err and ">50K" not in err
    code, _, err = run_cli(capsys, *args, "--pos-label", ">50K")
    assert code == 0, err
    table = pd.read_csv(tmp_path / "out" / "assessment.csv")
    overall = table[table.statistic == "overall"].estimate.iloc[0]
    assert math.isclose(overall, np.mean(prediction == ">50K"), rel_tol=1e-12)


# ----------------------------------------------------------------------------- DuckDB, Parquet, the page
def small_predictions(tmp_path: Path, n: int = 3000) -> tuple[Path, Path, pd.DataFrame]:
    """The same predictions as CSV and Parquet (written by DuckDB); the race labels carry stray spaces."""
    import duckdb

    rng = np.random.default_rng(0)
    race = rng.choice(["a", "b", "c"], n)
    data = pd.DataFrame({"income": rng.integers(0, 2, n), "prediction": rng.integers(0, 2, n),
                         "race": np.char.add(np.where(race == "b", " ", ""), race), "sex": rng.choice(["F", "M"], n)})
    csv, parquet = tmp_path / "p.csv", tmp_path / "p.parquet"
    data.to_csv(csv, index=False)
    duckdb.sql(f"COPY (SELECT * FROM read_csv('{csv}', header = true)) TO '{parquet}' (FORMAT parquet)")
    return csv, parquet, data


def test_assess_reads_csv_and_parquet_through_duckdb_with_labels_stripped(tmp_path, capsys):
    csv, parquet, data = small_predictions(tmp_path)
    tables = []
    for path in (csv, parquet):
        out = tmp_path / f"out-{path.suffix}"
        code, _, err = run_cli(capsys, "assess", str(path), "--y-true", "income", "--y-pred", "prediction",
                                    "--sensitive", "race", "--groups", "a, b ,c", "--epsilon", "inf", "--out", str(out),
                                    "--quiet", "--metric", "selection_rate", "--seed", "0")
        assert code == 0, err
        tables.append(pd.read_csv(out / "assessment.csv", keep_default_na=False))
    pd.testing.assert_frame_equal(tables[0], tables[1])
    by_group = tables[0][tables[0].statistic == "by_group"].set_index("group").estimate.astype(float)
    expected = data.groupby(data.race.str.strip()).prediction.mean()  # " b" in the data is the declared "b"
    np.testing.assert_allclose(by_group.loc[["a", "b", "c"]], expected.loc[["a", "b", "c"]], rtol=1e-12)


def test_assess_records_what_was_spent_and_the_page_says_so(tmp_path, capsys, spending_record):
    csv, _, _ = small_predictions(tmp_path, 1000)
    args = ["assess", str(csv), "--y-true", "income", "--y-pred", "prediction", "--sensitive", "race", "--groups",
            "a,b,c", "--epsilon", "0.5", "--quiet", "--metric", "selection_rate"]
    for run in range(2):
        code, stdout, err = run_cli(capsys, *args, "--out", str(tmp_path / f"run{run}"))
        assert code == 0, err
    records = [json.loads(line) for line in spending_record.read_text().splitlines()]
    assert [r["epsilon"] for r in records] == [0.5, 0.5] and records[0]["file"] == str(csv.resolve())
    assert records[1]["columns"] == {"sensitive": ["race"], "y_true": "income", "y_pred": "prediction"}
    assert "2 assessment(s) of this file recorded, epsilon 1 in total" in stdout
    page = html.unescape((tmp_path / "run1" / "assessment.html").read_text())
    assert "2 assessment(s) of this file recorded, epsilon 1 in total" in page
    assert "1.65 times" in page  # e^0.5, in plain words
    assert "every row's race, income and prediction" in page


def test_a_seeded_assessment_is_marked_on_the_page_and_in_the_output(tmp_path, capsys):
    csv, _, _ = small_predictions(tmp_path, 1000)
    code, _, err = run_cli(capsys, "assess", str(csv), "--y-true", "income", "--y-pred", "prediction", "--sensitive",
                           "race", "--groups", "a,b,c", "--epsilon", "1", "--quiet", "--seed", "3", "--out",
                           str(tmp_path / "out"))
    assert code == 0, err
    assert "seeded noise: reproducible, not hardened" in err
    page = html.unescape((tmp_path / "out" / "assessment.html").read_text())
    assert "seeded noise: reproducible, not hardened — not for real people's data" in page


def test_an_undeclared_label_can_go_to_the_other_group(tmp_path, capsys):
    csv, _, _ = small_predictions(tmp_path, 1000)
    code, _, err = run_cli(capsys, "assess", str(csv), "--y-true", "income", "--y-pred", "prediction", "--sensitive",
                           "race", "--groups", "a,b", "--epsilon", "1", "--quiet", "--undeclared", "other", "--out",
                           str(tmp_path / "out"))
    assert code == 0, err
    table = pd.read_csv(tmp_path / "out" / "assessment.csv")
    assert "(other)" in set(table.group)


def test_chart_titles_fit_in_their_figure(tmp_path):
    from dpfair.metrics._report import _chart, assessment_table

    rng = np.random.default_rng(1)
    group = rng.choice(["Amer-Indian-Eskimo", "Asian-Pac-Islander"], 400)
    frame = PrivateMetricFrame(metrics={"a_rather_long_metric_name_for_the_title": "true_positive_rate"},
                               y_true=rng.integers(0, 2, 400), y_pred=rng.integers(0, 2, 400), sensitive_features=group,
                               epsilon=1.0, groups=["Amer-Indian-Eskimo", "Asian-Pac-Islander", "Other"])
    table = assessment_table(frame)
    assert _chart(table, "a_rather_long_metric_name_for_the_title", "true_positive_rate", tmp_path / "c.png", 0.95)


def test_a_file_duckdb_cannot_read_is_named_without_quoting_its_content(tmp_path, capsys):
    bad = tmp_path / "bad.csv"
    bad.write_text('income,prediction,race\n0,1,a\n1,"Jane Roe, SSN 123-45-6789",a,extra,fields\n')
    code, _, err = run_cli(capsys, *base(bad, tmp_path / "out", "--groups", "a,b"))
    line = assert_one_line_error(code, err, "cannot read", "bad.csv")
    assert "Jane" not in line and "6789" not in line
