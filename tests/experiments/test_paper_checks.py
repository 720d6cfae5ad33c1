"""Paper checks live with their experiments: printed values and a verdict on the spec, one Table 1."""

import ast
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pandas as pd
import pytest

import dpfair.experiments as experiments
from dpfair.experiments import PaperValue, Verdict, VerdictRow, get_spec
from dpfair.experiments.report import verdict_for

SRC = Path(experiments.__file__).resolve().parents[1]

USER_MODULE = '''
"""A user's experiment, registered through DPFAIR_EXPERIMENT_MODULES, with its own paper values and verdict."""

from dpfair.experiments import ExperimentSpec, PaperValue, Verdict, VerdictRow, register


def task(cell, seed):
    return {"accuracy": 0.81 + 0.01 * cell["x"]}


def verdict(results, paper):
    rows = []
    for x, value in results[results["metric"] == "accuracy"].groupby("x")["value"].mean().items():
        printed = paper[f"accuracy[x={x}]"]
        ok = abs(value - printed.value) <= 0.005
        rows.append(VerdictRow(f"{printed.where}, x = {x}: accuracy", "matches" if ok else "differs", f"{value:.3f}",
                               printed.printed, printed.where, "within 0.005"))
    return Verdict.from_rows(rows, note="Why: a user's toy claim.")


register(ExperimentSpec(
    id="user-paper-check", title="a user's experiment with printed numbers", reproduces="Doe 2031, Table 9",
    dataset="synthetic", algorithms=("toy",), grid={"x": (0, 1)}, seeds=(0,), metrics=("accuracy",), task=task,
    paper_values={"accuracy[x=0]": PaperValue("0.81", "Table 9"), "accuracy[x=1]": PaperValue("0.90", "Table 9")},
    verdict=verdict,
))
'''


@pytest.mark.slow
@pytest.mark.processes
def test_a_user_module_declares_paper_values_and_gets_its_verdict_row(tmp_path):
    (tmp_path / "user_paper_check.py").write_text(USER_MODULE)
    env = {**os.environ, "DPFAIR_EXPERIMENT_MODULES": "user_paper_check",
           "PYTHONPATH": f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
           "DPFAIR_DATA_HOME": str(tmp_path / "no-data"), "MPLBACKEND": "Agg"}
    out = tmp_path / "out"
    cli = [sys.executable, "-m", "dpfair.cli"]
    for args in (["run", "user-paper-check", "--quick", "--out", str(out), "--quiet"], ["report", "--out", str(out)]):
        res = subprocess.run([*cli, *args], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300)
        assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    text = (out / "report" / "index.html").read_text()
    overview = text[text.index("<table class='overview'>"):]
    overview = overview[: overview.index("</table>")]
    row = next(r for r in overview.split("<tr>") if "#user-paper-check'" in r)
    assert "<span class='differs'>differs</span>" in row
    assert "1 of 2 printed numbers: Table 9, x = 1: accuracy 0.820, printed 0.90. Why: a user&#x27;s toy claim." in row
    section = text[text.index("<h2 id='user-paper-check'>"):]
    assert "Printed numbers compared (2)" in section and "<td>Table 9, x = 0: accuracy</td><td>0.810</td>" in section


def test_the_verdict_receives_the_spec_paper_values():
    seen = {}

    def verdict(results, paper):
        seen.update(paper)
        return Verdict("matches", "ok")

    spec = experiments.ExperimentSpec(
        id="t", title="t", reproduces="Doe 2031, Figure 1", dataset="synthetic", algorithms=("a",), grid={"x": (0,)},
        seeds=(0,), metrics=("m",), task=lambda cell, seed: {"m": 0.0},
        paper_values={"m": PaperValue("1.5", "Figure 1")}, verdict=verdict,
    )
    rows = pd.DataFrame([{"experiment": "t", "cell": "{}", "seed": 0, "metric": "m", "value": 1.0}])
    assert verdict_for(spec, rows) == Verdict("matches", "ok")
    assert seen == {"m": PaperValue("1.5", "Figure 1")}
    broken = experiments.ExperimentSpec(**{**spec.__dict__, "verdict": lambda results, paper: "fine"})
    assert verdict_for(broken, rows).status == "not checked"


def test_paper_value_reads_the_printed_number_and_rows_refuse_other_statuses():
    assert PaperValue("47.92%", "Table 1").value == pytest.approx(0.4792)
    assert PaperValue("0.50", "Table 1").value == 0.5
    with pytest.raises(ValueError, match="status"):
        VerdictRow("q", "close", "1", "1")
    with pytest.raises(ValueError, match="status"):
        Verdict("fine", "")
    with pytest.raises(ValueError, match="at least one"):
        Verdict.from_rows([])
    ok = Verdict.from_rows([VerdictRow("q", "matches", "1.0", "1")])
    assert ok == Verdict("matches", "all 1 printed numbers within tolerance.", (VerdictRow("q", "matches", "1.0", "1"),))


def test_each_paper_experiment_owns_its_check():
    for spec_id, module in (("selection-synthetic-table", "selection"), ("selection-fico-white-black-table", "selection"),
                            ("selection-fico-whitehisp-asian-table", "selection"),
                            ("regression-law-envelopes", "regression"), ("privacy-audit", "privacy_core"),
                            ("classification-oracle-learner", "classification"), ("fedfairx-exp1", "federated")):
        spec = get_spec(spec_id)
        assert spec.verdict is not None and spec.verdict.__module__ == f"dpfair.experiments.{module}", spec_id
    table = get_spec("selection-synthetic-table").paper_values
    assert table["accuracy_reduction[m=1]"] == PaperValue("47.92%", "Table 1")
    assert table["limit_A0[m=1]"].where == "Table 2" and table["mean_R_A1"].where == "Table 3"
    assert "epsilon_o[m=1]" not in get_spec("selection-fico-white-black-table").paper_values  # no Table 1 row


def test_report_imports_no_experiment_values_and_reads_the_verdict_field():
    source = (SRC / "experiments" / "report.py").read_text()
    tree = ast.parse(source)
    imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    experiment_modules = {f"dpfair.experiments.{m}" for m in
                          ("selection", "regression", "classification", "bandits", "federated", "privacy_core")}
    assert not imported & experiment_modules
    assert "getattr(spec" not in source and "PAPER_CHECKS" not in source and "0.6772" not in source


def test_table_1_is_printed_once_in_the_source():
    """Khalili's Table 1 (its accuracy reductions) appears in one file; the synthetic case's fitting targets agree."""
    holders = [p.relative_to(SRC) for p in SRC.rglob("*.py") if "47.92%" in p.read_text() or "44.66" in p.read_text()]
    assert holders == [Path("experiments/selection.py")]
    from dpfair.experiments.selection import PAPER_TABLE_1
    from dpfair.selection.synthetic_case import CASE_STUDY_TARGETS

    for m, (eps, t_o, t_inf, _) in PAPER_TABLE_1["synthetic"].items():
        assert CASE_STUDY_TARGETS["epsilon_o"][m] == float(eps)
        assert CASE_STUDY_TARGETS["theta_epsilon_o"][m] == float(t_o)
        assert CASE_STUDY_TARGETS["theta_inf"][m] == float(t_inf)


def test_moved_checks_keep_their_words():
    audit = get_spec("privacy-audit")
    rows = pd.DataFrame([{"mechanism": mech, "noise": noise, "metric": "violation_found", "value": float(noise == "half")}
                         for mech in ("laplace", "gaussian") for noise in ("calibrated", "half")])
    assert verdict_for(audit, rows) == Verdict(
        "matches", "no honest mechanism exceeds its claim and all 2 broken ones are caught "
                   "(no paper figure: the claim is dpfair's own).")
    law = get_spec("regression-law-envelopes")
    law_rows = pd.DataFrame([
        {"cell": f'{{"epsilon": {eps}, "k": 1}}', "dataset": "law_school", "k": 1, "epsilon": eps, "seed": 33,
         "metric": f"{name}@alpha={alpha:g}", "value": value}
        for eps in (1.0, 0.1) for alpha in (0.0, 1.0) for name, value in (("mse", 0.6772 if eps == 1.0 else 0.70),
                                                                         ("ks", 0.0))])
    verdict = verdict_for(law, law_rows)
    assert verdict.status == "differs"
    assert verdict.detail == textwrap.dedent("""\
        the paper prints that all lines end at (MSE 0.6772, KS 0); ours: eps = 0.1: (MSE 0.7000, KS 0.000).""")
    assert [r.status for r in verdict.rows] == ["differs", "matches", "matches", "matches"]
