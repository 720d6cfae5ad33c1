"""The table (CSV) and the HTML page that ``dpfair assess`` writes from a :class:`PrivateMetricFrame`."""

from __future__ import annotations

import html
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dpfair.metrics._frame import PrivateMetricFrame

_SUMMARIES = (
    ("difference", "difference", "between_groups"),
    ("ratio", "ratio", "between_groups"),
    ("difference_to_overall", "difference", "to_overall"),
    ("ratio_to_overall", "ratio", "to_overall"),
)


def _label(group: Any) -> str:
    return " / ".join(str(g) for g in group) if isinstance(group, tuple) else str(group)


def _as_frame(value: Any, keys: list[str]) -> pd.DataFrame:
    return value.to_frame(name=keys[0]) if isinstance(value, pd.Series) and len(keys) == 1 else value


def _as_series(value: Any, keys: list[str]) -> pd.Series:
    return value if isinstance(value, pd.Series) else pd.Series({keys[0]: float(value)})


def assessment_table(frame: PrivateMetricFrame) -> pd.DataFrame:
    """One tidy row per (metric, statistic, group): estimate, interval and flag.

    Parameters
    ----------
    frame : PrivateMetricFrame
        The assessment.

    Returns
    -------
    pandas.DataFrame
        Columns ``metric, statistic, group, estimate, lower, upper, flagged``; ``statistic`` is
        ``by_group``, ``overall``, ``difference``, ``ratio``, ``difference_to_overall`` or
        ``ratio_to_overall``.
    """
    keys = [spec.key for spec in frame._specs]
    ci = frame.conf_int
    by_group = _as_frame(frame.by_group, keys)
    lower, upper = _as_frame(ci["by_group"]["lower"], keys), _as_frame(ci["by_group"]["upper"], keys)
    flagged = _as_frame(frame.flagged, keys)
    rows = []
    for key in keys:
        for group in by_group.index:
            rows.append({
                "metric": key, "statistic": "by_group", "group": _label(group), "estimate": by_group.at[group, key],
                "lower": lower.at[group, key], "upper": upper.at[group, key], "flagged": bool(flagged.at[group, key]),
            })
        summaries = [("overall", frame.overall)] + [
            (name, getattr(frame, kind)(method=method)) for name, kind, method in _SUMMARIES
        ]
        for name, value in summaries:
            rows.append({
                "metric": key, "statistic": name, "group": "",
                "estimate": _as_series(value, keys)[key],
                "lower": _as_series(ci[name]["lower"], keys)[key],
                "upper": _as_series(ci[name]["upper"], keys)[key],
                "flagged": bool(flagged[key].any()) if name != "overall" else False,
            })
    return pd.DataFrame(rows, columns=["metric", "statistic", "group", "estimate", "lower", "upper", "flagged"])


def _chart(table: pd.DataFrame, key: str, name: str, path: Path, confidence: float) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = table[(table.metric == key) & (table.statistic == "by_group")].reset_index(drop=True)
    overall = table[(table.metric == key) & (table.statistic == "overall")].iloc[0]
    diff = table[(table.metric == key) & (table.statistic == "difference")].iloc[0]
    fig, ax = plt.subplots(figsize=(7.0, 1.2 + 0.38 * len(rows)))
    ax.axvspan(overall.lower, overall.upper, color="0.9", zorder=0, label=f"overall, {confidence:.0%} interval")
    ax.axvline(overall.estimate, color="0.4", linestyle="--", linewidth=1)
    y = np.arange(len(rows))[::-1]
    for yi, row in zip(y, rows.itertuples(), strict=True):
        color = "tab:red" if row.flagged else "tab:blue"
        ax.errorbar(
            row.estimate, yi, xerr=[[row.estimate - row.lower], [row.upper - row.estimate]], fmt="o", color=color,
            mfc="white" if row.flagged else color, capsize=3,
        )
    labels = [f"{g} (noise-dominated)" if f else g for g, f in zip(rows.group, rows.flagged, strict=True)]
    ax.set_yticks(y, labels)
    ax.set_ylim(-0.7, len(rows) - 0.3)
    what = key if key == name else f"{key} ({name})"
    ax.set_xlabel(f"{what}: estimate and {confidence:.0%} interval")
    ax.set_title(
        f"{key}: difference between groups {diff.estimate:.3f} [{diff.lower:.3f}, {diff.upper:.3f}]", fontsize=10
    )
    ax.legend(loc="lower right", fontsize=8, frameon=False)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _fmt(x: float) -> str:
    return "inf" if math.isinf(x) else f"{x:.4f}"


def write_assessment(frame: PrivateMetricFrame, out: Path, *, source: str = "") -> tuple[Path, Path]:
    """Write ``assessment.csv``, ``assessment.html`` and one chart per metric into ``out``.

    Parameters
    ----------
    frame : PrivateMetricFrame
        The assessment.
    out : pathlib.Path
        Output folder (created).
    source : str, default ""
        What was assessed (e.g. the CSV file and its columns), shown on the page.

    Returns
    -------
    (pathlib.Path, pathlib.Path)
        The CSV table and the HTML page.
    """
    out = Path(out)
    (out / "figures").mkdir(parents=True, exist_ok=True)
    table = assessment_table(frame)
    csv_path = out / "assessment.csv"
    table.to_csv(csv_path, index=False)
    confidence = float(frame.confidence_level)
    spent = frame.privacy_spent_
    esc = html.escape
    parts = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>Private fairness assessment</title>",
        "<style>body{font-family:sans-serif;max-width:60em;margin:2em auto;padding:0 1em}"
        "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 8px;text-align:right}"
        "td:first-child,th:first-child{text-align:left}.flag{color:#b00}</style></head><body>",
        "<h1>Private fairness assessment</h1>",
    ]
    if source:
        parts.append(f"<p>Assessed: {esc(source)}</p>")
    parts.append("<h2>What was protected</h2><ul>")
    eps = "inf (no privacy: exact metrics)" if math.isinf(spent["epsilon"]) else f"{spent['epsilon']:g}"
    parts.append(f"<li>Privacy: epsilon = {esc(eps)}, delta = {spent['delta']:g}.</li>")
    parts.append(f"<li>Protects: {esc(spent['protects'])}.</li>")
    parts.append(f"<li>Neighbouring data sets: {esc(spent['neighbouring'])}.</li>")
    for release in frame.releases_:
        parts.append(
            f"<li>Released: {esc(release['release'])} with {esc(release['mechanism'])}, "
            f"epsilon {release['epsilon']:g}, noise scale {release['scale']:.3g}.</li>"
        )
    parts.append(
        f"<li>Intervals: {confidence:.0%}, covering both the sampling error and the privacy noise (parametric "
        "bootstrap from the released statistics; it costs no privacy). A group marked <span class='flag'>noise-dominated"
        "</span> has a denominator that cannot be told apart from 0: its interval is the whole range, and it is left "
        "out of the point estimate of the disparity but widens its interval.</li></ul>"
    )
    parts.append("<h2>Summary</h2><table><tr><th>metric</th><th>overall</th><th>difference</th><th>ratio</th>"
                 "<th>noise-dominated groups</th></tr>")
    keys = [spec.key for spec in frame._specs]
    for key in keys:
        cells = []
        for stat in ("overall", "difference", "ratio"):
            r = table[(table.metric == key) & (table.statistic == stat)].iloc[0]
            cells.append(f"<td>{_fmt(r.estimate)} [{_fmt(r.lower)}, {_fmt(r.upper)}]</td>")
        n_flagged = int(table[(table.metric == key) & (table.statistic == "by_group")].flagged.sum())
        parts.append(f"<tr><td>{esc(key)}</td>{''.join(cells)}<td>{n_flagged}</td></tr>")
    parts.append("</table>")
    for i, spec in enumerate(frame._specs):
        figure = f"figures/metric_{i}.png"
        _chart(table, spec.key, spec.name, out / figure, confidence)
        parts.append(f"<h2>{esc(spec.key)}</h2><img src='{figure}' alt='{esc(spec.key)} by group'>")
        parts.append("<table><tr><th>group</th><th>estimate</th><th>lower</th><th>upper</th><th></th></tr>")
        rows = table[(table.metric == spec.key) & (table.statistic == "by_group")]
        for r in rows.itertuples():
            flag = "<span class='flag'>noise-dominated</span>" if r.flagged else ""
            parts.append(
                f"<tr><td>{esc(r.group)}</td><td>{_fmt(r.estimate)}</td><td>{_fmt(r.lower)}</td><td>{_fmt(r.upper)}</td>"
                f"<td>{flag}</td></tr>"
            )
        for stat in ("difference", "ratio", "difference_to_overall", "ratio_to_overall"):
            r = table[(table.metric == spec.key) & (table.statistic == stat)].iloc[0]
            parts.append(f"<tr><td><i>{stat}</i></td><td>{_fmt(r.estimate)}</td><td>{_fmt(r.lower)}</td>"
                         f"<td>{_fmt(r.upper)}</td><td></td></tr>")
        parts.append("</table>")
    parts.append("</body></html>")
    html_path = out / "assessment.html"
    html_path.write_text("\n".join(parts), encoding="utf-8")
    return csv_path, html_path
