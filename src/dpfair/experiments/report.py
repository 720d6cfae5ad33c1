"""Figures and the HTML report (``report/index.html``) built from the results store."""

from __future__ import annotations

import contextlib
import html
import json
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

from dpfair import __version__
from dpfair.experiments.registry import all_specs
from dpfair.experiments.store import ResultsStore, ResultsStoreError

__all__ = ["build_report"]

_CSS = """
body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
h1{border-bottom:2px solid #444}h2{margin-top:2em;border-bottom:1px solid #bbb}
figure{margin:1em 0}figure img{max-width:100%;border:1px solid #ddd}figcaption{font-size:.9em;color:#555}
table{border-collapse:collapse;font-size:.85em;margin:.5em 0}td,th{border:1px solid #ccc;padding:3px 7px;text-align:right}
.meta{font-size:.9em;color:#444}.note{font-size:.9em;color:#555}code{background:#f3f3f3;padding:0 3px}
"""


def build_report(out: str | Path) -> Path:
    """Write every experiment's figures and ``report/index.html`` under ``out``.

    Experiments without results are listed as not run.

    Parameters
    ----------
    out : str or path-like
        Output folder of :func:`~dpfair.experiments.run_experiment` (holds ``results.sqlite``).

    Returns
    -------
    pathlib.Path
        The path of ``out/report/index.html``.

    Raises
    ------
    ResultsStoreError
        ``out`` or its ``report`` folder cannot be written, or ``results.sqlite`` is not a
        readable results database.
    ExperimentModuleError
        A module named in ``$DPFAIR_EXPERIMENT_MODULES`` cannot be imported.
    """
    out = Path(out)
    report_dir = out / "report"
    fig_dir = report_dir / "figures"
    specs = all_specs()
    with ResultsStore(out) as store:
        # parameters become columns per experiment, so each keeps its own dtypes
        results = {spec.id: store.results([spec.id]) for spec in specs}
        tasks = store.task_table()
        runs = store.run_table()
    try:
        fig_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ResultsStoreError(
            f"cannot create the report folder {fig_dir} ({exc.strerror or exc}).",
            "Move aside the file in its way, or choose another output folder.",
            fig_dir,
        ) from None
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'><title>dpfair report</title>",
        f"<style>{_CSS}</style></head><body><h1>dpfair: reproduction report</h1>",
        f"<p class='meta'>dpfair {html.escape(__version__)}, generated {time.strftime('%Y-%m-%d %H:%M:%S')}; "
        f"results in <code>{html.escape(str(out / 'results.sqlite'))}</code>.</p>",
    ]
    for spec in specs:
        parts.append(f"<h2 id='{spec.id}'>{html.escape(spec.id)}: {html.escape(spec.title)}</h2>")
        sub = results[spec.id]
        parts.append(
            f"<p class='meta'>Reproduces: {html.escape(spec.reproduces)}. Dataset: {html.escape(spec.dataset)}. "
            f"Algorithms: {html.escape(', '.join(spec.algorithms))}. Privacy: {html.escape(spec.privacy or 'n/a')}.</p>"
        )
        if sub.empty:
            parts.append("<p>Not run yet (<code>dpfair run " + html.escape(spec.id) + " --quick</code>).</p>")
            continue
        spec_tasks = tasks[tasks["experiment"] == spec.id]
        spec_runs = runs[runs["experiment"] == spec.id]
        seeds = sorted(sub["seed"].unique().tolist())
        cells = sorted(sub["cell"].unique().tolist())
        parts.append(
            f"<p class='meta'>{len(cells)} cells x seeds {seeds}; {len(spec_tasks)} tasks, total task time "
            f"{spec_tasks['runtime'].sum():.1f} s; runs: "
            + html.escape(
                ", ".join(
                    f"{r.variant} ({r.status}, {r.n_tasks - r.n_done_before} task(s) in "
                    f"{(r.finished - r.started) if r.finished == r.finished else float('nan'):.1f} s wall, "
                    f"workers={r.workers}{', ' + r.scheduler if r.scheduler else ''})"
                    for r in spec_runs.itertuples()
                )
            )
            + "</p>"
        )
        parts.append(
            "<details><summary>Config of every cell</summary><pre>"
            + html.escape("\n".join(json.dumps(json.loads(c)) for c in cells))
            + "</pre></details>"
        )
        if spec.figures is not None:
            for info in spec.figures(sub, fig_dir):
                parts.append(
                    f"<figure><img src='figures/{html.escape(info.filename)}' alt='{html.escape(info.caption)}'>"
                    f"<figcaption>{html.escape(info.caption)}</figcaption></figure>"
                )
        if spec.tables is not None:
            for table in spec.tables(sub):
                parts.append(f"<h3>{html.escape(table.title)}</h3>")
                parts.append(table.table.to_html(float_format=lambda v: f"{v:.4g}", na_rep="-"))
                if table.note:
                    parts.append(f"<p class='note'>{html.escape(table.note)}</p>")
    parts.append("</body></html>")
    index = report_dir / "index.html"
    tmp = index.with_suffix(".html.tmp")
    try:
        tmp.write_text("\n".join(parts), encoding="utf-8")
        tmp.replace(index)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        fix = "Move aside what is in its way, or choose another output folder."
        raise ResultsStoreError(f"cannot write {index} ({exc.strerror or exc}).", fix, index) from None
    return index
