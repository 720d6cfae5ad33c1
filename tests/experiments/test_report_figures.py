"""Report figures a reader can trust: readable legends, markers on the true score values, no hidden lines, full tables."""

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from dpfair.datasets import DataUnavailableError, dataset_paths
from dpfair.experiments import selection
from dpfair.experiments.spec import MIN_LEGEND_FONTSIZE, save_figure


def test_save_figure_raises_small_legend_text(tmp_path, monkeypatch):
    seen = []
    monkeypatch.setattr(plt, "close", lambda fig: seen.append(fig))
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1], label="a line")
    ax.legend(fontsize=6)
    save_figure(fig, tmp_path, "f.png", "caption")
    assert (tmp_path / "f.png").stat().st_size > 0
    assert [t.get_fontsize() for t in seen[0].axes[0].get_legend().get_texts()] == [MIN_LEGEND_FONTSIZE]
    matplotlib.pyplot.close("all")


def _captured_pmf_figure(case, tmp_path, monkeypatch):
    captured = []

    def fake_save(fig, folder, filename, caption):
        captured.append(fig)
        return None

    monkeypatch.setattr(selection, "save_figure", fake_save)
    selection._pmf_figure(case, tmp_path)
    return captured[0], selection.build_problem(case, 1000)


def test_synthetic_pmf_markers_sit_on_the_score_values(tmp_path, monkeypatch):
    fig, problem = _captured_pmf_figure("synthetic", tmp_path, monkeypatch)
    lines = fig.axes[0].get_lines()
    assert len(lines) == 4 and not fig.axes[0].patches  # no offset bars
    for line in lines:
        np.testing.assert_array_equal(line.get_xdata(), problem.score_values)
    plt.close(fig)


def test_fico_mixture_line_does_not_hide_a_group_line(tmp_path, monkeypatch):
    try:
        dataset_paths("fico", download=False)
    except DataUnavailableError:
        pytest.skip("FICO data not in DPFAIR_DATA_HOME")
    fig, _ = _captured_pmf_figure("fico-white-black", tmp_path, monkeypatch)
    lines = {line.get_label(): line for line in fig.axes[0].get_lines()}
    mixture = lines.pop("P(R), both groups")
    assert mixture.get_linestyle() == "--"
    for line in lines.values():  # group lines: solid, thicker and above the mixture
        assert line.get_linestyle() == "-" and line.get_linewidth() > mixture.get_linewidth()
        assert line.get_zorder() > mixture.get_zorder()
    plt.close(fig)


def test_table_1_root_column_is_always_filled():
    rows = []
    for m, n_roots in ((1, 1.0), (2, 3.0), (4, 0.0)):
        for metric, value in (("epsilon_o", 0.5 * m), ("epsilon_o_last", 0.7 * m), ("n_roots", n_roots),
                              ("theta_epsilon_o", 0.8), ("theta_inf", 0.9), ("accuracy_reduction", 0.1),
                              ("limit_A0", 0.5), ("limit_A1", 0.4), ("gamma_inf", 0.1), ("theorem_holds", 1.0),
                              ("mean_R_A0", 0.6), ("mean_R_A1", 0.5)):
            rows.append({"case": "synthetic", "m": m, "seed": 0, "metric": metric, "value": value})
    table = selection.table_tables(pd.DataFrame(rows))[0].table
    column = table["roots of gamma = 0"] if "roots of gamma = 0" in table else table.reset_index()["roots of gamma = 0"]
    assert list(column) == [1, 3, 0]
