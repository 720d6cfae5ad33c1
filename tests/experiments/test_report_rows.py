"""Report rows without rough edges: honest verdict words, numeric cell order, no "± 0.0"."""

import json

import pandas as pd

from dpfair.experiments import federated
from dpfair.experiments.registry import get_spec
from dpfair.experiments.report import _cell_sort_key, verdict_for


def _rows(spec_id):
    return pd.DataFrame([{"experiment": spec_id, "cell": "{}", "seed": 0, "metric": "x", "value": 1.0}])


def test_rows_beyond_the_papers_do_not_claim_the_paper_prints_nothing():
    for spec_id in ("regression-ridge-pipeline", "gmf-epsilon-sweep", "classification-postprocessing-adult"):
        verdict = verdict_for(get_spec(spec_id), _rows(spec_id))
        assert verdict.status == "not checked" and "not a paper figure" in verdict.detail, spec_id
        assert "the paper prints no numbers" not in verdict.detail
    curves = verdict_for(get_spec("selection-synthetic-curves"), _rows("selection-synthetic-curves"))
    assert "the paper prints no numbers" in curves.detail  # a paper figure without printed numbers


def test_cells_sort_by_value_not_as_text():
    cells = [json.dumps({"epsilon": e, "k": 8}) for e in (100.0, 2.0, 10.0, float("inf"), 0.5)]
    ordered = [json.loads(c)["epsilon"] for c in sorted(cells, key=_cell_sort_key)]
    assert ordered == [0.5, 2.0, 10.0, 100.0, float("inf")]
    assert sorted([json.dumps({"method": "b"}), json.dumps({"method": "a"})], key=_cell_sort_key)[0] == '{"method": "a"}'


def test_a_single_run_shows_no_fake_standard_error():
    rows = []
    for seed in (0,):
        for name, value in (("B0", 120.0), ("Fed", 40.0)):
            for curve in ("fair_regret", "reward_regret"):
                rows.append({"horizon": 100, "seed": seed, "metric": f"{name}/{curve}", "value": value})
    table = federated._final_table(pd.DataFrame(rows), ("B0", "Fed"))
    assert list(table["fair_regret"]) == ["120.0 (1 run)", "40.0 (1 run)"]
    rows += [{"horizon": 100, "seed": 1, "metric": f"B0/{c}", "value": 130.0} for c in ("fair_regret", "reward_regret")]
    assert federated._final_table(pd.DataFrame(rows), ("B0",))["fair_regret"].iloc[0] == "125.0 ± 5.0"


def test_exp4_rows_sort_epsilon_numerically_and_negative_reward_regret_is_explained():
    names = ["Priv eps=10", "Priv eps=2", "Fed", "Priv eps=0.5", "B2 eps=2", "B0", "Priv (paper) eps=100"]
    ordered = sorted(names, key=federated._exp4_order)
    assert ordered == ["B0", "Fed", "Priv eps=0.5", "Priv eps=2", "Priv eps=10", "Priv (paper) eps=100", "B2 eps=2"]
    rows = pd.DataFrame([{"horizon": 10, "seed": 0, "metric": f"{n}/{c}", "value": 1.0}
                         for n in federated.EXP1 for c in ("fair_regret", "reward_regret")])
    note = federated.exp1_tables(rows)[0].note
    assert "negative reward regret" in note
