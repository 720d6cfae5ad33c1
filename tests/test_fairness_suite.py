"""The harness of benchmarks/fairness_suite.py: metrics, utility share, verdicts, cache and one end-to-end run.

The suite judges every private classifier against the thresholds of its kind; a wrong metric or a wrong reference
would judge everything wrongly, so the pieces are checked against closed forms, fairlearn and brute force on a small
synthetic task (fast: no real data set is read).
"""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from fairlearn.metrics import equalized_odds_difference

SUITE_PATH = Path(__file__).resolve().parents[1] / "benchmarks" / "fairness_suite.py"


@pytest.fixture(scope="module")
def suite():
    spec = importlib.util.spec_from_file_location("fairness_suite", SUITE_PATH)
    module = importlib.util.module_from_spec(spec)
    sys.modules["fairness_suite"] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop("fairness_suite", None)


def test_expected_metrics_match_fairlearn_on_hard_predictions_and_brute_force_on_probabilities(suite):
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 300)
    groups = rng.choice(np.array(["a", "b", "c"], dtype=object), 300)
    hard = rng.integers(0, 2, 300)
    error, eo = suite.expected_metrics(hard.astype(float), y, groups)
    assert error == pytest.approx(np.mean(hard != y))
    assert eo == pytest.approx(equalized_odds_difference(y, hard, sensitive_features=groups))
    # probabilities: the expectation over the predictions, by brute force over the groups and labels
    positive = rng.uniform(size=300)
    error, eo = suite.expected_metrics(positive, y, groups)
    assert error == pytest.approx(np.mean(y * (1 - positive) + (1 - y) * positive))
    gaps = [np.ptp([positive[(groups == g) & (y == label)].mean() for g in "abc"]) for label in (0, 1)]
    assert eo == pytest.approx(max(gaps))


def test_utility_share_and_verdicts_follow_the_thresholds(suite):
    assert suite.utility_share(0.30, 0.30, 0.20) == 0.0
    assert suite.utility_share(0.20, 0.30, 0.20) == 1.0
    assert suite.utility_share(0.25, 0.30, 0.20) == pytest.approx(0.5)
    assert math.isnan(suite.utility_share(0.25, 0.30, 0.31))  # a reference no better than the constant: no scale
    assert math.isnan(suite.utility_share(0.049, 0.049, 0.0488))  # better by less than the constant rule's margin
    assert math.isnan(suite.utility_share(0.30, 0.30, 0.296))
    assert suite.utility_share(0.30, 0.30, 0.294) == 0.0  # by more than the margin: judged
    common = {"epsilon": 1.0, "err_const": 0.30, "ref_eo": 0.02, "n_train": 10_000}
    assert suite.verdict("blind", err=0.25, eo=0.10, u=0.5, **common) == "ok"  # EO floor 0.10
    assert suite.verdict("blind", err=0.25, eo=0.11, u=0.5, **common) == "MISS EO"
    assert suite.verdict("blind", err=0.26, eo=0.05, u=0.49, **common) == "MISS u"
    assert suite.verdict("attribute", err=0.21, eo=0.06, u=0.9, **common) == "MISS EO"  # ref + 0.03, no floor
    assert suite.verdict("attribute", err=0.21, eo=0.05, u=0.9, **common) == "ok"
    assert suite.verdict("blind", err=0.306, eo=0.0, u=-0.06, **common) == "MISS const+u"
    assert suite.verdict("blind", err=0.305, eo=0.0, u=math.nan, **common) == "ok"  # within the constant + 0.005
    # whole records: judged from 4,000 training rows; below, only the constant rule holds
    assert suite.verdict("records", err=0.27, eo=0.05, u=0.3, **common) == "ok"
    small = {**common, "n_train": 3999}
    assert suite.verdict("records", err=0.29, eo=0.5, u=0.1, **small) == "n/a (const ok)"
    assert suite.verdict("records", err=0.31, eo=0.5, u=0.1, **small) == "MISS const"


def _task(suite, n=600, seed=0):
    return suite.synthetic_task("tiny", (n // 2, n // 2), n_declared_groups=3, n_features=3, seed=seed)


def test_references_are_cached_per_task_and_split(suite, tmp_path):
    task = _task(suite)
    train, test = suite.splits(task.y.size, 1)[0]
    calls = []

    def counted(task, train, test, epsilon):
        calls.append(1)
        return np.full(test.size, 0.25)

    method = suite.Method("counted", "reference", False, counted)
    first = suite._cached_reference(method, task, 0, train, test, tmp_path)
    second = suite._cached_reference(method, task, 0, train, test, tmp_path)
    np.testing.assert_array_equal(first, second)
    assert len(calls) == 1
    other = _task(suite, seed=1)  # other data: another key, computed again
    suite._cached_reference(method, other, 0, *suite.splits(other.y.size, 1)[0], tmp_path)
    assert len(calls) == 2


def test_summary_scales_u_by_the_reference_of_the_methods_kind(suite, tmp_path):
    task = _task(suite)

    def as_constant(task, train, test, epsilon):  # a "private" method no better than the constant
        return np.full(test.size, float(task.y[train].mean() > 0.5))

    def as_threshold_optimizer(task, train, test, epsilon):
        return suite._fairlearn_to(task, train, test, epsilon)

    methods = [suite.Method("constant-like", "blind", False, as_constant),
               suite.Method("TO-like", "attribute", True, as_threshold_optimizer),
               suite.Method("missing", "blind", False, None, "not available (test)")]
    results = suite.run_suite([task], epsilons=[1.0], n_splits=2, methods=methods, cache=tmp_path)
    assert set(results["method"]) == {m.name for m in suite.REFERENCES} | {suite.GLUE.name, "constant-like", "TO-like"}
    assert len(results) == 2 * (len(suite.REFERENCES) + 3)
    summary = suite.summarize(results).set_index("method")
    assert summary.loc["constant-like", "u"] == pytest.approx(0.0)
    assert summary.loc["constant-like", "reference"] == "EG"
    assert summary.loc["constant-like", "verdict"] == "MISS u"
    assert summary.loc["TO-like", "u"] == pytest.approx(1.0)  # the reference itself, at its own scale
    assert summary.loc["TO-like", "reference"] == "TO"
    assert summary.loc["TO-like", "verdict"] in ("ok", "n/a (const ok)")
    rows = suite.table_rows(summary.reset_index(), 1.0, methods)
    assert ["tiny", "missing", "blind", "1", "-", "-", "", "-", "not available (test)"] in rows


def test_the_command_runs_on_a_users_table_with_strings_and_missing_values(suite, tmp_path):
    rng = np.random.default_rng(3)
    n = 450
    frame = pd.DataFrame({
        "age": rng.uniform(18, 80, n).round(),
        "job": rng.choice(["clerk", "nurse", None], n),  # strings and missing values
        "score": np.where(rng.uniform(size=n) < 0.1, np.nan, rng.normal(size=n)),
        "region": rng.choice(["north", "south"], n),
    })
    frame["outcome"] = np.where(frame["age"] + 20 * (frame["region"] == "north") + rng.normal(0, 10, n) > 55,
                                "yes", "no")
    path = tmp_path / "table.csv"
    frame.to_csv(path, index=False)
    task = suite.task_from_table(path, target="outcome", sensitive="region", groups=["north", "south", "east"],
                                 ranges={"age": (0.0, 100.0)})
    assert task.groups == ["north", "south", "east"] and task.y.mean() == pytest.approx((frame["outcome"] == "yes").mean())
    assert task.X[:, 0] == pytest.approx(frame["age"] / 100)  # the declared range, not the table's
    assert np.linalg.norm(task.X, axis=1).max() <= task.x_norm_bound
    out = tmp_path / "out"
    code = suite.main(["--data", str(path), "--target", "outcome", "--sensitive", "region", "--groups", "north",
                       "south", "east", "--ranges", "age:0:100", "--epsilons", "1", "--splits", "1",
                       "--out", str(out)])
    assert code == 0
    for name in ("results.csv", "summary.csv", "table.md", "table_eps1.rst", "errors.png"):
        assert (out / name).stat().st_size > 0
    summary = pd.read_csv(out / "summary.csv")
    assert set(summary["task"]) == {"table"}
    assert (summary.loc[summary["method"].str.startswith("constant"), "u"] == 0).all()
    assert any(f.name.endswith(".npy") for f in (out / "cache").iterdir())  # the references are cached


def test_a_task_from_a_users_function_by_module_path(suite, tmp_path):
    source = tmp_path / "my_tasks.py"
    source.write_text(
        "import numpy as np\n"
        "def make():\n"
        "    rng = np.random.default_rng(0)\n"
        "    X = rng.uniform(size=(50, 2))\n"
        "    return X, (X[:, 0] > 0.5).astype(int), np.where(X[:, 1] > 0.5, 'a', 'b'), ['a', 'b'], 2 ** 0.5\n"
    )
    task = suite.task_from_function(f"{source}:make")
    assert task.name == "make" and task.X.shape == (50, 2) and task.groups == ["a", "b"]
    with pytest.raises(ValueError, match="module:function"):
        suite.task_from_function("no_colon")


BLIND_ROW = "DPFairClassifier (A private, blind)"


def _summary(suite, runs, extra=()):
    """summarize()-shaped tables, one per run: the three references, a blind row of ``(error, eo)`` per run, and
    ``extra`` rows ``(method, kind, reference, n_train, [(error, eo, verdict) per run])`` (verdict None: computed)."""
    references = [(suite.CONSTANT, 0.30, 0.0), (suite.EG_REF, 0.20, 0.05), (suite.TO_REF, 0.10, 0.02)]
    rows = [{"task": "t", "method": name, "kind": "reference", "epsilon": math.inf, "error": error, "eo": eo,
             "reference": "", "u": math.nan, "verdict": "", "n_train": 10_000} for name, error, eo in references]
    specs = [(BLIND_ROW, "blind", "EG", 10_000, [(e, o, None) for e, o in runs]), *extra]
    out = []
    for i in range(len(runs)):
        private = []
        for method, kind, reference, n_train, per_run in specs:
            if per_run[i] is None:  # the row is missing from this run
                continue
            error, eo, mark = per_run[i]
            err_ref, ref_eo = (0.10, 0.02) if reference == "TO" else (0.20, 0.05)
            u = suite.utility_share(error, 0.30, err_ref)
            if mark is None:
                mark = suite.verdict("attribute" if kind == "glue" else kind, epsilon=1.0, err=error, eo=eo, u=u,
                                     err_const=0.30, ref_eo=ref_eo, n_train=n_train)
            private.append({"task": "t", "method": method, "kind": kind, "epsilon": 1.0, "error": error, "eo": eo,
                            "reference": reference, "u": u, "verdict": mark, "n_train": n_train})
        out.append(pd.DataFrame([*rows, *private]))
    return out


def test_across_runs_counts_each_runs_verdict_and_judges_the_medians(suite, tmp_path):
    # a blind row (EO <= max(0.10, 0.05 + 0.03) = 0.10, u >= 0.5: error <= 0.25): run 1 misses its EO, run 3 its
    # utility share; the medians (0.24, 0.09) meet both, so the verdict is not any one run's
    runs = [(0.23, 0.12), (0.24, 0.09), (0.26, 0.05)]
    extra = [
        # attribute-aware against ThresholdOptimizer (error 0.10, EO 0.02: u >= 0.8 is error <= 0.14, EO <= 0.05)
        ("DPFairClassifier (A private, used at prediction)", "attribute", "TO", 10_000,
         [(0.12, 0.04, None), (0.15, 0.03, None), (0.11, 0.06, None)]),
        # the hand glue is judged as attribute-aware
        ("hand glue", "glue", "TO", 10_000, [(0.13, 0.07, None), (0.12, 0.06, None), (0.14, 0.05, None)]),
        # whole records under 4,000 training rows: only the constant rule, missed in run 2
        ("DPFairClassifier (whole records, blind)", "records", "EG", 1_000,
         [(0.29, 0.3, None), (0.31, 0.3, None), (0.28, 0.3, None)]),
        # failed in one run: whatever its medians, not "ok"
        ("DPFairClassifier (whole records, A used at prediction)", "records", "TO", 10_000,
         [(0.20, 0.03, None), (math.nan, math.nan, "FAILED 5 split(s)"), (0.21, 0.03, None)]),
    ]
    summaries = _summary(suite, runs, extra)
    table = suite.across_runs(summaries).set_index("method")
    blind = table.loc[BLIND_ROW]
    assert [blind[f"verdict_{i}"] for i in (1, 2, 3)] == ["MISS EO", "ok", "MISS u"]
    assert (blind["runs_met"], blind["runs"], bool(blind["judged"])) == (1, 3, True)
    assert (blind["error"], blind["eo"]) == (pytest.approx(0.24), pytest.approx(0.09))
    assert blind["u"] == pytest.approx(0.6)  # (0.30 - 0.24) / (0.30 - 0.20), from the median error
    assert blind["verdict"] == "ok"
    aware = table.loc["DPFairClassifier (A private, used at prediction)"]
    assert aware["u"] == pytest.approx(0.9)  # median error 0.12 on ThresholdOptimizer's scale
    assert [aware[f"verdict_{i}"] for i in (1, 2, 3)] == ["ok", "MISS u", "MISS EO"]
    assert (aware["runs_met"], aware["verdict"]) == (1, "ok")  # medians 0.12 / 0.04 meet both
    glue = table.loc["hand glue"]
    assert (glue["u"], glue["verdict"]) == (pytest.approx(0.85), "MISS EO")  # median EO 0.06 > 0.02 + 0.03
    small = table.loc["DPFairClassifier (whole records, blind)"]
    assert [small[f"verdict_{i}"] for i in (1, 2, 3)] == ["n/a (const ok)", "MISS const", "n/a (const ok)"]
    assert (small["runs_met"], bool(small["judged"]), small["verdict"]) == (2, False, "n/a (const ok)")
    failed = table.loc["DPFairClassifier (whole records, A used at prediction)"]
    assert (failed["runs_met"], failed["verdict"]) == (2, "FAILED in 1 run(s)")
    # the opening lines count the judged rows of DPFairClassifier only (blind, aware and the failed one)
    assert suite.across_runs_header(suite.across_runs(summaries)) == [
        "3 runs. Judged rows of DPFairClassifier meeting their thresholds: run 1: 2 of 3; run 2: 1 of 3; run 3: 1 of 3.",
        "Runs in which every judged row of DPFairClassifier met: 0 of 3.",
        "Judged rows of DPFairClassifier whose medians over the runs meet: 2 of 3."]
    paths = suite.write_across_runs(suite.across_runs(summaries), tmp_path, "cmd")
    text = paths["across_markdown"].read_text()
    assert "run 1: 2 of 3; run 2: 1 of 3; run 3: 1 of 3" in text
    assert "| MISS EO / ok / MISS u | 1 of 3 |" in text
    assert pd.read_csv(paths["across_csv"]).set_index("method").loc[BLIND_ROW, "runs_met"] == 1
    with pytest.raises(ValueError, match="summaries is empty"):
        suite.across_runs([])


def test_across_runs_keeps_each_verdict_in_its_own_run_when_a_row_is_missing(suite):
    extra = [("DPFairClassifier (A private, used at prediction)", "attribute", "TO", 10_000,
              [None, (0.20, 0.03, None), (0.12, 0.03, None)])]  # absent from run 1; misses u in run 2
    table = suite.across_runs(_summary(suite, [(0.24, 0.09)] * 3, extra)).set_index("method")
    aware = table.loc["DPFairClassifier (A private, used at prediction)"]
    assert [aware[f"verdict_{i}"] for i in (1, 2, 3)] == ["missing", "MISS u", "ok"]
    assert (aware["runs_met"], aware["runs"]) == (1, 2)
    assert suite.across_runs_header(table.reset_index())[0].endswith("run 1: 1 of 2; run 2: 1 of 2; run 3: 2 of 2.")


def test_the_command_repeats_the_private_methods_with_runs(suite, tmp_path):
    source = tmp_path / "runs_task.py"
    source.write_text(
        "import numpy as np\n"
        "def make():\n"
        "    rng = np.random.default_rng(1)\n"
        "    X = rng.uniform(size=(240, 2))\n"
        "    y = (X[:, 0] + 0.3 * rng.normal(size=240) > 0.5).astype(int)\n"
        "    return X, y, np.where(X[:, 1] > 0.5, 'a', 'b'), ['a', 'b'], 2 ** 0.5\n"
    )
    out = tmp_path / "out"
    assert suite.main(["--task-function", f"{source}:make", "--epsilons", "1", "--splits", "1", "--runs", "2",
                       "--out", str(out)]) == 0
    first = pd.read_csv(out / "run1" / "results.csv")
    second = pd.read_csv(out / "run2" / "results.csv")
    references = first["kind"] == "reference"
    pd.testing.assert_frame_equal(first.loc[references, ["method", "error", "eo"]],
                                  second.loc[references, ["method", "error", "eo"]])  # cached, identical
    private = first["kind"].isin(list(suite.THRESHOLDS))
    assert not np.allclose(first.loc[private, "error"], second.loc[private, "error"])  # fresh secure noise
    table = pd.read_csv(out / "across_runs.csv")
    assert (table["runs"] == 2).all() and set(table["kind"]) <= set(suite.THRESHOLDS) | {"glue"}
    assert "2 runs." in (out / "across_runs.md").read_text()

def test_runs_below_one_are_refused_before_any_data_is_read(suite, tmp_path, capsys):
    with pytest.raises(SystemExit):
        suite.main(["--task-function", "no_such_module:make", "--runs", "0", "--out", str(tmp_path)])
    assert "--runs: must be at least 1, got 0" in capsys.readouterr().err
