"""The table (CSV) and the HTML page that ``dpfair assess`` writes from a :class:`PrivateMetricFrame`; its spending record."""

from __future__ import annotations

import datetime
import html
import json
import math
import textwrap
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
#: the words every page and command output show when the noise was seeded
SEEDED_NOISE_TEXT = "seeded noise: reproducible, not hardened — not for real people's data"


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
        The assessment.  With control features, a group is labelled ``"control=level: group"`` and every
        summary has one row per control level (its ``group`` names the level).

    Returns
    -------
    pandas.DataFrame
        Columns ``metric, statistic, group, estimate, lower, upper, flagged``; ``statistic`` is
        ``by_group``, ``overall``, ``difference``, ``ratio``, ``difference_to_overall`` or
        ``ratio_to_overall``.  An estimate that cannot be measured is NaN (empty in the CSV).
    """
    keys = [spec.key for spec in frame._specs]
    ci = frame.conf_int
    by_group = _as_frame(frame.by_group, keys)
    lower, upper = _as_frame(ci["by_group"]["lower"], keys), _as_frame(ci["by_group"]["upper"], keys)
    flagged = _as_frame(frame.flagged, keys)
    controls = frame.control_levels
    n_control = len(controls) if controls else 0

    def control_label(level: Any) -> str:
        level = level if isinstance(level, tuple) else (level,)
        return ", ".join(f"{name}={value}" for name, value in zip(controls or [], level, strict=True))

    def group_label(group: Any) -> str:
        if not controls:
            return _label(group)
        group = group if isinstance(group, tuple) else (group,)
        level = group[:n_control] if n_control > 1 else group[0]
        rest = group[n_control:] if len(group) > n_control + 1 else group[n_control]
        return f"{control_label(level)}: {_label(rest)}"

    rows = []
    for key in keys:
        for group in by_group.index:
            rows.append({
                "metric": key, "statistic": "by_group", "group": group_label(group), "estimate": by_group.at[group, key],
                "lower": lower.at[group, key], "upper": upper.at[group, key], "flagged": bool(flagged.at[group, key]),
            })
        summaries = [("overall", frame.overall)] + [
            (name, getattr(frame, kind)(method=method)) for name, kind, method in _SUMMARIES
        ]
        for name, value in summaries:
            if not controls:
                rows.append({
                    "metric": key, "statistic": name, "group": "",
                    "estimate": _as_series(value, keys)[key],
                    "lower": _as_series(ci[name]["lower"], keys)[key],
                    "upper": _as_series(ci[name]["upper"], keys)[key],
                    "flagged": bool(flagged[key].any()) if name != "overall" else False,
                })
                continue
            # with control features: one row per control level (fairlearn computes every summary within each level)
            value, lo, hi = (_as_frame(v, keys) for v in (value, ci[name]["lower"], ci[name]["upper"]))
            for level in value.index:
                rows.append({
                    "metric": key, "statistic": name, "group": control_label(level), "estimate": value.at[level, key],
                    "lower": lo.at[level, key], "upper": hi.at[level, key], "flagged": False,
                })
    return pd.DataFrame(rows, columns=["metric", "statistic", "group", "estimate", "lower", "upper", "flagged"])


def _chart(table: pd.DataFrame, key: str, name: str, path: Path, confidence: float) -> Any:
    """One chart per metric (returns the figure's title artist, for the layout check of the tests)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = table[(table.metric == key) & (table.statistic == "by_group")].reset_index(drop=True)
    overall = table[(table.metric == key) & (table.statistic == "overall")].iloc[0]
    diff = table[(table.metric == key) & (table.statistic == "difference")].iloc[0]
    lines = sum(1 + len(str(g)) // 24 for g in rows.group)
    fig, ax = plt.subplots(figsize=(8.0, 1.9 + 0.38 * lines))
    if np.isfinite(overall.estimate):
        ax.axvspan(overall.lower, overall.upper, color="0.9", zorder=0, label=f"overall, {confidence:.0%} interval")
        ax.axvline(overall.estimate, color="0.4", linestyle="--", linewidth=1)
    y = np.arange(len(rows))[::-1]
    for yi, row in zip(y, rows.itertuples(), strict=True):
        if np.isfinite(row.estimate):
            color = "tab:red" if row.flagged else "tab:blue"
            ax.errorbar(
                row.estimate, yi, xerr=[[row.estimate - row.lower], [row.upper - row.estimate]], fmt="o", color=color,
                mfc="white" if row.flagged else color, capsize=3,
            )
        else:  # not measurable at this epsilon: only its interval, dashed
            ax.plot([row.lower, row.upper], [yi, yi], color="tab:red", linestyle=":", linewidth=1.5)
    labels = [  # long labels (intersections, control levels) wrapped, so that they never push the title out
        textwrap.fill(f"{g} (not measurable)" if not np.isfinite(e) else f"{g} (noise-dominated)" if f else g, 32)
        for g, f, e in zip(rows.group, rows.flagged, rows.estimate, strict=True)
    ]
    ax.set_yticks(y, labels)
    ax.set_ylim(-0.7, len(rows) - 0.3)
    what = key if key == name else f"{key} ({name})"
    ax.set_xlabel(f"{what}: estimate and {confidence:.0%} interval")
    gap = "not measurable" if not np.isfinite(diff.estimate) else f"{diff.estimate:.3f} [{diff.lower:.3f}, {diff.upper:.3f}]"
    # the title belongs to the figure (left edge), not to the axes that long group labels push to the right
    wrapped = textwrap.wrap(f"{key}: difference between groups {gap}", 90)
    title = fig.suptitle("\n".join(wrapped), fontsize=10, x=0.01, ha="left")
    if np.isfinite(overall.estimate):
        ax.legend(loc="lower right", fontsize=8, frameon=False)
    fig.tight_layout(rect=(0.0, 0.0, 1.0, 1.0 - 0.22 * len(wrapped) / fig.get_figheight()))
    fig.savefig(path, dpi=100)
    renderer = fig.canvas.get_renderer()
    inside = fig.bbox.contains(*title.get_window_extent(renderer).p0) and fig.bbox.contains(
        *title.get_window_extent(renderer).p1
    )
    plt.close(fig)
    return inside


def _fmt(x: float) -> str:
    if isinstance(x, float | np.floating) and math.isnan(x):
        return "n/a"
    return "inf" if math.isinf(x) else f"{x:.4f}"


def epsilon_in_words(spent: dict[str, Any]) -> str:
    """What ``privacy_spent_``'s epsilon means, in plain words (for the page and the command's output).

    Parameters
    ----------
    spent : dict
        A ``privacy_spent_``.

    Returns
    -------
    str
        One paragraph.
    """
    epsilon = float(spent["epsilon"])
    if math.isinf(epsilon):
        return ("epsilon = inf: no privacy. The numbers are exact, so anyone who sees them learns exactly what the data "
                "say, including about single people in small groups.")
    factor = math.exp(epsilon)
    replace = math.exp(2 * epsilon)
    return (
        f"epsilon = {epsilon:g} bounds what this page can reveal about any one person: whether or not their row is in "
        f"the data, every result shown here was at most {factor:.3g} times more (or less) likely "
        f"(e^{epsilon:g}); changing their row (their group, label or prediction) changes it by at most {replace:.3g} times "
        f"(e^{2 * epsilon:g}). So no reader, whatever else they know, can be confident from this page that a given person "
        "is in the data or what their row says. Smaller epsilon protects more and gives wider intervals; each new "
        "assessment of the same people spends more, and the amounts add up."
    )


def _protects(spent: dict[str, Any], columns: dict[str, Any] | None) -> str:
    if columns is None or math.isinf(float(spent["epsilon"])):
        return str(spent["protects"])
    sensitive = ", ".join(columns["sensitive"])
    return (f"every row's {sensitive}, {columns['y_true']} and {columns['y_pred']} (each person must be one row of the "
            "file: several rows of one person are protected only at a multiple of epsilon)")


def record_spending(ledger: Path, frame: PrivateMetricFrame, source: Path, columns: dict[str, Any], out: Path
                    ) -> dict[str, Any]:
    """Append this assessment to the JSON-lines record ``ledger``; return the history of the same file.

    Parameters
    ----------
    ledger : pathlib.Path
        The record (one JSON object per line; created when missing).
    frame : PrivateMetricFrame
        The assessment just released.
    source : pathlib.Path
        The assessed file.
    columns : dict
        ``{"sensitive": [...], "y_true": ..., "y_pred": ...}``.
    out : pathlib.Path
        Where the page goes.

    Returns
    -------
    dict
        ``runs`` (on this file, this one included), ``epsilon_total`` (their epsilons added: sequential
        composition under add/remove one row) and ``words`` (one line).
    """
    spent = frame.privacy_spent_
    path = str(Path(source).resolve())
    entry = {
        "time": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "file": path,
        "columns": columns,
        "epsilon": float(spent["epsilon"]),
        "delta": float(spent["delta"]),
        "relation": spent.get("relation", "add_remove"),
        "noise": spent.get("noise", "secure"),
        "out": str(Path(out).resolve()),
    }
    earlier = []
    if ledger.exists():
        for line in ledger.read_text(encoding="utf-8").splitlines():
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(record, dict) and record.get("file") == path:
                earlier.append(record)
    with ledger.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(entry) + "\n")
    runs = len(earlier) + 1
    total = sum(float(r.get("epsilon", math.inf)) for r in earlier) + entry["epsilon"]
    words = (f"epsilon {entry['epsilon']:g} on {Path(path).name}; {runs} assessment(s) of this file recorded, epsilon "
             f"{total:g} in total (they add up)")
    return {"runs": runs, "epsilon_total": total, "words": words, "ledger": str(ledger)}


def _group_sizes_html(frame: PrivateMetricFrame) -> str:
    """The released (noisy) size of every group: what makes an interval wide (free: the table's row sums)."""
    sizes = frame.group_sizes_
    weighted = sizes.name == "sample_weight"
    what = "noisy total sample weight" if weighted else "noisy number of rows"
    rows = "".join(f"<tr><td>{html.escape(_label(g))}</td><td>{_fmt(float(v))}</td></tr>" for g, v in sizes.items())
    return (f"<h2>Group sizes</h2><p>The {what} of every group, from the released table (negative releases shown as "
            "0): small groups have wide intervals.</p>"
            f"<table><tr><th>group</th><th>{what}</th></tr>{rows}</table>")


def write_assessment(
    frame: PrivateMetricFrame, out: Path, *, source: str = "", columns: dict[str, Any] | None = None,
    history: dict[str, Any] | None = None,
) -> tuple[Path, Path]:
    """Write ``assessment.csv``, ``assessment.html`` and one chart per metric into ``out``.

    Parameters
    ----------
    frame : PrivateMetricFrame
        The assessment.
    out : pathlib.Path
        Output folder (created).
    source : str, default ""
        What was assessed (e.g. the CSV file and its columns), shown on the page.
    columns : dict, optional
        ``{"sensitive": [...], "y_true": ..., "y_pred": ...}``: the page then says what is protected in
        the words of those columns.
    history : dict, optional
        What :func:`record_spending` returned: the page then shows what was spent on the same file.

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
        "td:first-child,th:first-child{text-align:left}.flag{color:#b00}.seeded{color:#b00;font-weight:bold;"
        "border:2px solid #b00;padding:.5em}img{max-width:100%}</style></head><body>",
        "<h1>Private fairness assessment</h1>",
    ]
    if spent.get("noise") == "seeded":
        parts.append(f"<p class='seeded'>Warning: {esc(SEEDED_NOISE_TEXT)}.</p>")
    if source:
        parts.append(f"<p>Assessed: {esc(source)}</p>")
    parts.append("<h2>What was protected</h2>")
    parts.append(f"<p>{esc(epsilon_in_words(spent))}</p><ul>")
    eps = "inf (no privacy: exact metrics)" if math.isinf(spent["epsilon"]) else f"{spent['epsilon']:g}"
    parts.append(f"<li>Privacy: epsilon = {esc(eps)}, delta = {spent['delta']:g}.</li>")
    parts.append(f"<li>Protects: {esc(_protects(spent, columns))}.</li>")
    parts.append(f"<li>Neighbouring data sets: {esc(spent['neighbouring'])}.</li>")
    if spent.get("noise") == "seeded":
        parts.append(f"<li class='flag'>Noise: {esc(SEEDED_NOISE_TEXT)}.</li>")
    for release in frame.releases_:
        parts.append(
            f"<li>Released: {esc(release['release'])} with {esc(release['mechanism'])}, "
            f"epsilon {release['epsilon']:g}, noise scale {release['scale']:.3g}.</li>"
        )
    if history is not None:
        parts.append(f"<li>Spent so far: {esc(history['words'])}; the record is kept in the assessor's ledger "
                     f"({esc(Path(history['ledger']).name)}).</li>")
    parts.append(
        f"<li>Intervals: {confidence:.0%}, covering both the sampling error and the privacy noise (drawn from the "
        "released counts only; they cost no privacy). A group marked <span class='flag'>not measurable</span> has a "
        "denominator that cannot be told apart from 0 at this epsilon: its value is not shown (n/a), its interval is "
        "the whole range, and the differences and ratios are computed over the other groups.</li></ul>"
    )
    parts.append("<h2>Summary</h2><table><tr><th>metric</th><th>overall</th><th>difference</th><th>ratio</th>"
                 "<th>groups not measurable</th></tr>")
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
            flag = "<span class='flag'>not measurable</span>" if r.flagged else ""
            parts.append(
                f"<tr><td>{esc(r.group)}</td><td>{_fmt(r.estimate)}</td><td>{_fmt(r.lower)}</td><td>{_fmt(r.upper)}</td>"
                f"<td>{flag}</td></tr>"
            )
        for stat in ("difference", "ratio", "difference_to_overall", "ratio_to_overall"):
            r = table[(table.metric == spec.key) & (table.statistic == stat)].iloc[0]
            parts.append(f"<tr><td><i>{stat}</i></td><td>{_fmt(r.estimate)}</td><td>{_fmt(r.lower)}</td>"
                         f"<td>{_fmt(r.upper)}</td><td></td></tr>")
        parts.append("</table>")
    parts.append(_group_sizes_html(frame))
    parts.append("</body></html>")
    html_path = out / "assessment.html"
    html_path.write_text("\n".join(parts), encoding="utf-8")
    return csv_path, html_path
