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


# ------------------------------------------------------------------ regression trade-off figures
def _regression_results(ks_values=(1, 8, 24), epsilons=(1.0, 0.1), seeds=(33, 34, 35), dataset="law_school"):
    """Long-format results as the regression experiments store them: k = 1 sits at MSE 0.68 (off the axis)."""
    from dpfair.experiments import regression

    rng = np.random.default_rng(0)
    rows = []
    for k in ks_values:
        for eps in epsilons:
            for seed in seeds:
                for alpha in regression.ALPHAS:
                    if k == 1:
                        mse, ks = 0.6772 + rng.normal(0, 1e-3), 0.0
                    else:
                        mse = 0.002 + 0.2 / k + 0.01 * (1 - min(alpha, 0.3)) + 0.001 / eps + rng.normal(0, 5e-4)
                        ks = min(alpha, 0.3) / 2 + 0.02 / eps + abs(rng.normal(0, 5e-3))
                    for what, value in (("mse", mse), ("ks", ks)):
                        rows.append({"dataset": dataset, "k": k, "epsilon": eps, "seed": seed,
                                     "metric": regression._metric(what, alpha), "value": value})
                for metric in ("ks_unprocessed", "mse_regressor", "ks_regressor"):
                    rows.append({"dataset": dataset, "k": k, "epsilon": eps, "seed": seed, "metric": metric, "value": 0.3})
    return pd.DataFrame(rows)


def _captured_regression_figures(make, results, tmp_path, monkeypatch):
    from dpfair.experiments import regression

    captured = []
    monkeypatch.setattr(regression, "save_figure", lambda fig, folder, filename, caption: captured.append(fig))
    make(results, tmp_path)
    return captured


def _in_view(ax, xs, ys):
    (x0, x1), (y0, y1) = ax.get_xlim(), ax.get_ylim()
    xs, ys = np.asarray(xs, float), np.asarray(ys, float)
    return bool(np.any((xs >= x0) & (xs <= x1) & (ys >= y0) & (ys <= y1)))


def test_regression_figure_3_draws_every_k_curve_above_the_envelope_and_in_the_legend(tmp_path, monkeypatch):
    from dpfair.experiments import regression

    fig = _captured_regression_figures(regression.envelope_figures, _regression_results(), tmp_path, monkeypatch)[0]
    ax = fig.axes[0]
    fig.canvas.draw()
    envelope = next(line for line in ax.get_lines() if line.get_label() == "lower envelope")
    legend = ax.get_legend()
    entries = dict(zip([t.get_text() for t in legend.get_texts()], legend.legend_handles, strict=True))
    for k in (1, 8, 24):
        label = next(text for text in entries if text.startswith(f"k={k}") and text[len(f"k={k}"):][:1] in ("", " "))
        handle = entries[label]
        handle_line = handle[0] if isinstance(handle, tuple) else handle  # an errorbar handle: its line first
        assert handle_line.get_linewidth() > 0 and handle_line.get_visible(), f"the legend shows no line for k={k}"
        assert handle_line.get_alpha() is None or handle_line.get_alpha() > 0
        artists = [c.lines[0] for c in ax.containers if c.get_label() == label]
        artists += [line for line in ax.get_lines() if line.get_label() == label]
        assert artists, f"no curve for k={k}"
        for line in artists:
            assert line.get_zorder() > envelope.get_zorder(), f"the envelope is drawn over k={k}"
            assert line.get_linewidth() > 0 and (line.get_alpha() is None or line.get_alpha() > 0)
        assert any(_in_view(ax, line.get_xdata(), line.get_ydata()) or not line.get_clip_on() for line in artists), (
            f"k={k} is nowhere on the axes")
    for container in ax.containers:  # every k curve, including one marked off the axis
        assert container.lines[0].get_zorder() > envelope.get_zorder()
    plt.close("all")


@pytest.mark.parametrize("figure", ["figure2", "envelope_figures", "ridge_figures"])
def test_regression_tradeoff_figures_show_standard_errors_over_seeds(figure, tmp_path, monkeypatch):
    from dpfair.experiments import regression

    results = _regression_results(ks_values=(8, 24))
    if figure == "ridge_figures":
        results = results[results["k"] == 8].drop(columns="dataset")
    figures = _captured_regression_figures(getattr(regression, figure), results, tmp_path, monkeypatch)
    assert figures
    for fig in figures:
        for ax in fig.axes:
            bars = [c for c in ax.containers if getattr(c, "has_xerr", False) and getattr(c, "has_yerr", False)]
            assert bars, f"{figure}: no standard-error bars in '{ax.get_title()}'"
            assert all(len(c.lines[2]) == 2 for c in bars)  # the x and y bar collections
            segments = np.concatenate([np.asarray(seg) for c in bars for seg in c.lines[2][1].get_segments()])
            assert segments.size and np.ptp(segments[:, 1]) > 0  # bars with a length: the spread across seeds
    plt.close("all")


def test_regression_standard_errors_are_over_seeds():
    from dpfair.experiments import regression

    results = _regression_results(ks_values=(8,), epsilons=(1.0,))
    table = regression._tradeoff(results)
    row = table[table["alpha"] == 0.0].iloc[0]
    values = results[results["metric"] == "mse@alpha=0"]["value"]
    assert row["mse"] == pytest.approx(values.mean())
    assert row["mse_se"] == pytest.approx(values.std(ddof=1) / np.sqrt(values.size))
    one_seed = regression._tradeoff(results[results["seed"] == 33])
    assert (one_seed["mse_se"] == 0).all() and (one_seed["ks_se"] == 0).all()


def test_regression_figure_2_draws_finite_epsilon_curves_over_the_infinite_one(tmp_path, monkeypatch):
    from dpfair.experiments import regression

    # at Law School's n the eps = 1 curve sits on the eps = inf one and was drawn beneath it
    results = _regression_results(ks_values=(8,), epsilons=(1.0, float("inf"), 0.1))
    fig = _captured_regression_figures(regression.figure2, results, tmp_path, monkeypatch)[0]
    ax = fig.axes[0]
    lines = {c.get_label(): c.lines[0] for c in ax.containers}
    inf, one, tenth = lines["eps=inf"], lines["eps=1"], lines["eps=0.1"]
    assert one.get_zorder() > inf.get_zorder() and tenth.get_zorder() > inf.get_zorder()
    assert one.get_marker() != inf.get_marker() and one.get_marker() != tenth.get_marker()
    assert inf.get_linewidth() > one.get_linewidth()  # the reference is the wide band beneath
    plt.close("all")
