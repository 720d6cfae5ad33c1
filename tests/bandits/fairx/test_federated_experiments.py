"""The fedfairx-exp1..exp4 experiments: registered, tasks return their metrics, figures and tables build."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from dpfair.experiments.registry import get_spec


def _rows(experiment: str, cell: dict, seeds: list[int]) -> pd.DataFrame:
    spec = get_spec(experiment)
    rows = []
    for seed in seeds:
        for metric, value in spec.task(dict(cell), seed).items():
            rows.append({"experiment": experiment, "cell": json.dumps(cell), "seed": seed, "metric": metric,
                         "value": value, **cell})
    return pd.DataFrame(rows)


@pytest.mark.parametrize(
    ("experiment", "cells"),
    [
        ("fedfairx-exp1", [{"horizon": 25}]),
        ("fedfairx-exp2", [{"horizon": 25}]),
        ("fedfairx-exp3", [{"horizon": 20, "n_agents": 1}, {"horizon": 20, "n_agents": 3}]),
        pytest.param("fedfairx-exp4", [{"horizon": 25, "epsilons": "0.5,2"}], marks=pytest.mark.slow),  # ~2.6 s
    ],
)
def test_experiment_tasks_figures_tables(experiment, cells, tmp_path):
    spec = get_spec(experiment)
    assert spec.quick_grid is not None and len(spec.seeds) == 5
    results = pd.concat([_rows(experiment, cell, [0, 1]) for cell in cells], ignore_index=True)
    assert set(spec.metrics) <= set(results["metric"])
    figures = spec.figures(results, tmp_path)
    assert figures and all((tmp_path / f.filename).exists() for f in figures)
    assert "reward regret" in figures[0].caption
    tables = spec.tables(results)
    assert tables and not tables[0].table.empty
