"""The classification experiments (Jagielski et al. 2019, Figure 1): registered, tasks complete, figures drawn."""

import math

import numpy as np
import pandas as pd
import pytest

from dpfair.datasets import DataUnavailableError, dataset_paths
from dpfair.experiments import classification as clf
from dpfair.experiments import get_spec
from dpfair.experiments.registry import all_specs

IDS = ("classification-postprocessing", "classification-oracle-learner",
       "classification-postprocessing-adult", "classification-oracle-learner-adult")


def _available(name):
    try:
        dataset_paths(name, download=False)
        return True
    except DataUnavailableError:
        return False


def test_specs_register():
    known = {spec.id for spec in all_specs()}
    assert set(IDS) <= known
    pp = get_spec("classification-postprocessing")
    assert set(pp.grid["epsilon"]) == {0.5, 1.0, 2.0, 3.0, 5.0, math.inf}
    assert len(pp.seeds) >= 200 and 0.001 in clf.PP_GAMMAS
    assert "infeasible_rate" in pp.metrics
    oracle = get_spec("classification-oracle-learner")
    assert set(oracle.metrics) >= {"error", "violation", "infeasible_rate"}
    assert all(g > 0 for g in oracle.grid["gamma"])  # bound_B = 1 / gamma


def test_expected_metrics_match_a_hand_computation():
    y = np.array([0, 0, 1, 1, 0, 0, 1, 1])
    groups = np.array([0, 0, 0, 0, 1, 1, 1, 1])
    p1 = np.array([0.0, 0.2, 1.0, 0.6, 0.5, 0.5, 0.5, 0.5])
    error, violation = clf._expected_metrics(p1, y, groups)
    assert error == pytest.approx(np.mean([0.0, 0.2, 0.0, 0.4, 0.5, 0.5, 0.5, 0.5]))
    # FP: 0.1 vs 0.5; TP: 0.8 vs 0.5
    assert violation == pytest.approx(0.4)


@pytest.mark.parametrize("experiment_id", IDS)
def test_one_quick_cell_returns_every_metric(experiment_id):
    spec = get_spec(experiment_id)
    if not all(_available(name) for name in spec.requires_data):
        pytest.skip(f"{spec.requires_data} not in DPFAIR_DATA_HOME (run `dpfair data fetch`)")
    cell = next(c for c in spec.cells(quick=True) if math.isfinite(c["epsilon"]))  # a private fit
    metrics = spec.task(dict(cell), spec.seed_list(quick=True)[0])
    assert set(spec.metrics) <= set(metrics)
    finite = [v for v in metrics.values() if not math.isnan(v)]
    assert finite and all(0.0 <= v <= 1.0 for k, v in metrics.items() if k != "n_iter" and not math.isnan(v))


def _long(rows):
    return pd.DataFrame(rows, columns=["dataset", "evaluation", "epsilon", "seed", "metric", "value"])


def test_postprocessing_figures_and_tables_from_a_small_frame(tmp_path):
    rows = []
    for evaluation in clf.EVALUATIONS:
        for eps in (1.0, math.inf):
            for seed in (0, 1):
                for gamma in clf.PP_GAMMAS:
                    infeasible = eps == 1.0 and seed == 1 and gamma == 0.0
                    key = ("communities", evaluation, eps, seed)
                    rows += [(*key, f"error@gamma={gamma:g}", math.nan if infeasible else 0.2 - gamma / 10),
                             (*key, f"violation@gamma={gamma:g}", math.nan if infeasible else gamma),
                             (*key, f"infeasible@gamma={gamma:g}", float(infeasible))]
                rows += [("communities", evaluation, eps, seed, "error_base", 0.13),
                         ("communities", evaluation, eps, seed, "violation_base", 0.23),
                         ("communities", evaluation, eps, seed, "infeasible_rate", 0.0)]
    results = _long(rows)
    infos = clf.postprocessing_figures(results, tmp_path)
    assert infos and all((tmp_path / info.filename).stat().st_size > 1000 for info in infos)
    tables = clf.postprocessing_tables(results)
    at = tables[0].table
    assert len(at) == 4 and at.loc[("communities", "in-sample", 1.0), "infeasible_rate"] == 0.0
    assert at.loc[("communities", "in-sample", 1.0), "error"] == pytest.approx(0.2 - 0.0001)


def test_oracle_figures_and_tables_from_a_small_frame(tmp_path):
    rows = []
    for eps in (100.0, math.inf):
        for gamma in (0.01, 0.1):
            for seed in (0, 1):
                for metric, value in (("error", 0.3 - gamma), ("violation", gamma / 2 + seed / 100),
                                      ("infeasible_rate", 0.0), ("n_iter", 10.0)):
                    rows.append(("communities", "in-sample", eps, gamma, seed, metric, value))
    results = pd.DataFrame(rows, columns=["dataset", "evaluation", "epsilon", "gamma", "seed", "metric", "value"])
    infos = clf.oracle_figures(results, tmp_path)
    assert infos and all((tmp_path / info.filename).stat().st_size > 1000 for info in infos)
    levels = clf.oracle_tables(results)[0].table
    assert levels.loc[("communities", 100.0), "epsilon' (10x upsampled)"] == pytest.approx(10.0)
