"""``dpfair assess --control COLUMN``: control features counted in DuckDB's group-by."""

from __future__ import annotations

import math

import fairlearn.metrics as fm
import numpy as np
import pandas as pd
import pytest

from dpfair.cli import main


@pytest.fixture(autouse=True)
def spending_record(tmp_path, monkeypatch):
    monkeypatch.setenv("DPFAIR_ASSESS_LEDGER", str(tmp_path / "spent.jsonl"))


def _csv(tmp_path, n=1500):
    rng = np.random.default_rng(0)
    data = pd.DataFrame({"income": rng.integers(0, 2, n), "prediction": rng.integers(0, 2, n),
                         "race": rng.choice(["a", "b"], n), "region": rng.choice(["north", "south"], n)})
    path = tmp_path / "p.csv"
    data.to_csv(path, index=False)
    return path, data


def _run(capsys, *args):
    try:
        main(list(args))
        code = 0
    except SystemExit as exc:
        code = exc.code
    captured = capsys.readouterr()
    return code, captured.err


def test_assess_with_control_equals_fairlearn_at_epsilon_inf(tmp_path, capsys):
    path, data = _csv(tmp_path)
    code, err = _run(capsys, "assess", str(path), "--y-true", "income", "--y-pred", "prediction", "--sensitive", "race",
                     "--control", "region", "--epsilon", "inf", "--out", str(tmp_path / "out"), "--quiet",
                     "--metric", "selection_rate")
    assert code == 0, err
    table = pd.read_csv(tmp_path / "out" / "assessment.csv")
    ref = fm.MetricFrame(metrics=fm.selection_rate, y_true=data.income, y_pred=data.prediction,
                         sensitive_features=data.race, control_features=data.region)
    by_group = table[table.statistic == "by_group"].set_index("group").estimate
    for (region, race), value in ref.by_group.items():
        assert math.isclose(by_group[f"region={region}: {race}"], value, rel_tol=1e-12)
    difference = table[table.statistic == "difference"].set_index("group").estimate
    for region, value in ref.difference().items():
        assert math.isclose(difference[f"region={region}"], value, rel_tol=1e-12, abs_tol=1e-15)


def test_assess_with_control_at_finite_epsilon_needs_declared_levels(tmp_path, capsys):
    path, _ = _csv(tmp_path)
    base = ["assess", str(path), "--y-true", "income", "--y-pred", "prediction", "--sensitive", "race", "--control",
            "region", "--epsilon", "1", "--groups", "a,b", "--out", str(tmp_path / "out"), "--quiet"]
    code, err = _run(capsys, *base)
    assert code == 2 and "--control-groups is required" in err
    code, err = _run(capsys, *base, "--control-groups", "north,south")  # secure noise, default metrics
    assert code == 0, err
    table = pd.read_csv(tmp_path / "out" / "assessment.csv")
    groups = set(table[table.statistic == "by_group"].group)
    assert groups == {f"region={r}: {g}" for r in ("north", "south") for g in ("a", "b")}
    assert set(table[table.statistic == "difference"].group) == {"region=north", "region=south"}
    code, err = _run(capsys, *base, "--control", "nope", "--control-groups", "x", "--control-groups", "y")
    assert code == 2 and err.startswith("error:")  # an unknown column is refused in one line (DuckDB's binder)
