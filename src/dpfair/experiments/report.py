"""Figures and the HTML report (``report/index.html``) built from the results store."""

from __future__ import annotations

import contextlib
import html
import json
import math
import time
from pathlib import Path

import pandas as pd

from dpfair import __version__
from dpfair.datasets import DataIntegrityError, DataUnavailableError
from dpfair.experiments.registry import all_specs
from dpfair.experiments.runner import data_problems
from dpfair.experiments.spec import ExperimentSpec, Verdict, VerdictRow, cell_key
from dpfair.experiments.store import ResultsStore, ResultsStoreError

__all__ = ["Verdict", "VerdictRow", "build_report", "verdict_for"]


def _is_paper_figure(spec: ExperimentSpec) -> bool:
    """Whether ``spec`` reproduces a paper's figure or table (not an experiment beyond the paper)."""
    text = spec.reproduces.lower()
    return not ("beyond" in text or "not a paper figure" in text or "no paper figure" in text or "remark" in text)


def _cell_sort_key(cell: str) -> tuple:
    """Order cells by their values, numbers as numbers (epsilon 2 before 10 before 100)."""
    out = []
    for key, value in sorted(json.loads(cell).items()):
        try:
            out.append((key, 0, float(value), ""))
        except (TypeError, ValueError):
            out.append((key, 1, 0.0, str(value)))
    return tuple(out)


def verdict_for(spec: ExperimentSpec, results: pd.DataFrame) -> Verdict:
    """Judge one experiment's stored results against the paper's printed numbers.

    Parameters
    ----------
    spec : ExperimentSpec
        The experiment.
    results : pandas.DataFrame
        Its rows of the results store (:meth:`ResultsStore.results`).

    Returns
    -------
    Verdict
        *not run* (data missing or corrupt, naming the file; or not yet run) when there are
        no results; else what the spec's ``verdict`` callable returns for the results and the spec's
        ``paper_values``; else *not checked* (the paper prints no numbers for it).  A check that cannot
        read the results (KeyError, ValueError, TypeError, IndexError), or that returns something other
        than a :class:`Verdict`, gives *not checked* saying so.
    """
    if results.empty:
        problems = data_problems(spec)
        if problems:
            return Verdict("not run", "; ".join(f"data {p.kind}: {p.file}" for p in problems))
        return Verdict("not run", f"not yet run (dpfair run {spec.id} --quick)")
    check = spec.verdict
    if check is None:
        if not _is_paper_figure(spec):
            return Verdict("not checked", "not a paper figure (dpfair's own experiment): nothing printed to compare with; "
                                          "the section says what it measures.")
        return Verdict("not checked", "the paper prints no numbers for it: compare the figures.")
    try:
        verdict = check(results, spec.paper_values)
    except (KeyError, ValueError, TypeError, IndexError) as exc:
        return Verdict("not checked", f"the check could not read these results ({type(exc).__name__}: {exc}).")
    if not isinstance(verdict, Verdict):
        return Verdict("not checked", f"the check returned {type(verdict).__name__}, not a Verdict.")
    return verdict


def _rows_table(rows: tuple[VerdictRow, ...]) -> str:
    """The printed numbers an experiment's verdict compared, as an HTML table."""
    head = "".join(f"<th>{h}</th>" for h in ("Quantity", "Ours", "Printed", "Where", "Tolerance", "Verdict", "Comment"))
    body = "".join(
        f"<tr><td>{html.escape(r.quantity)}</td><td>{html.escape(r.measured)}</td><td>{html.escape(r.printed)}</td>"
        f"<td>{html.escape(r.where)}</td><td>{html.escape(r.tolerance)}</td>"
        f"<td><span class='{r.status}'>{html.escape(r.status)}</span></td><td>{html.escape(r.comment)}</td></tr>"
        for r in rows
    )
    return (f"<details><summary>Printed numbers compared ({len(rows)})</summary>"
            f"<table class='checks'><tr>{head}</tr>{body}</table></details>")


def _scale(spec: ExperimentSpec, done: set[tuple[str, int]]) -> tuple[str, str]:
    """(scale reproduced, what the quick variant leaves out of the full one)."""
    full = {(cell_key(c), s) for c in spec.cells(False) for s in spec.seed_list(False)}
    quick = {(cell_key(c), s) for c in spec.cells(True) for s in spec.seed_list(True)}
    if full and full <= done:
        scale = "full"
    elif quick and quick <= done:
        scale = "quick"
    elif done:
        scale = f"partial ({len(done & full)} of {len(full)} full tasks)"
    else:
        scale = "-"
    left_out = []
    n_full, n_quick = len(spec.seed_list(False)), len(spec.seed_list(True))
    if n_quick < n_full:
        left_out.append(f"{n_quick} of {n_full} seeds")
    quick_grid = spec.quick_grid or spec.grid
    for key, values in spec.grid.items():
        q = list(quick_grid.get(key, values))
        v = list(values)
        if q == v:
            continue
        if set(map(repr, q)) <= set(map(repr, v)):
            left_out.append(f"{key}: {len(q)} of {len(v)} values")
        else:
            left_out.append(f"{key}: {', '.join(_short(x) for x in q)} instead of {_short_list(v)}")
    return scale, "; ".join(left_out) or "nothing"


def _short(value: object) -> str:
    if isinstance(value, float):
        return "inf" if math.isinf(value) else f"{value:g}"
    return str(value)


def _short_list(values: list[object]) -> str:
    return ", ".join(map(_short, values)) if len(values) <= 4 else f"{len(values)} values"

_CSS = """
body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
h1{border-bottom:2px solid #444}h2{margin-top:2em;border-bottom:1px solid #bbb}
figure{margin:1em 0}figure img{max-width:100%;border:1px solid #ddd}figcaption{font-size:.9em;color:#555}
table{border-collapse:collapse;font-size:.85em;margin:.5em 0}td,th{border:1px solid #ccc;padding:3px 7px;text-align:right}
.meta{font-size:.9em;color:#444}table.overview td{text-align:left;vertical-align:top}
.matches{color:#17663a;font-weight:bold}.differs{color:#a33;font-weight:bold}.notrun,.notchecked{color:#666;font-weight:bold}
.note{font-size:.9em;color:#555}table.checks td{text-align:left}code{background:#f3f3f3;padding:0 3px}
"""


@contextlib.contextmanager
def _file_backend():
    """Draw the report's figures with the Agg backend, and give the caller's backend back afterwards.

    The backend is chosen here, where figures are written, not at import: ``import dpfair.experiments``
    leaves an interactive session's backend alone.
    """
    import matplotlib
    import matplotlib.pyplot as plt

    previous = matplotlib.get_backend()
    if previous.lower() != "agg":
        plt.switch_backend("Agg")
    try:
        yield
    finally:
        if previous.lower() != "agg":
            with contextlib.suppress(Exception):  # a display that has gone away: stay on Agg
                plt.switch_backend(previous)


def build_report(out: str | Path) -> Path:
    """Write every experiment's figures and ``report/index.html`` under ``out``.

    The report opens with an overview, one row per experiment: what it reproduces, the scale
    of the stored results (quick or full, and what quick leaves out), and a verdict against
    the paper's printed numbers (:func:`verdict_for`).  Experiments without results say why
    (data missing or corrupt, naming the file; or not yet run).

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
    with _file_backend():
        return _build(Path(out))


def _build(out: Path) -> Path:
    out = Path(out)
    report_dir = out / "report"
    fig_dir = report_dir / "figures"
    specs = all_specs()
    with ResultsStore(out) as store:
        # parameters become columns per experiment, so each keeps its own dtypes
        results = {spec.id: store.results([spec.id]) for spec in specs}
        tasks = store.task_table()
        runs = store.run_table()
    verdicts = {spec.id: verdict_for(spec, results[spec.id]) for spec in specs}
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
        "<p class='note'><b>Seeded noise.</b> Every private number on this page was computed with seeded noise "
        "(each task's seed is listed with its experiment), so that the reproduction can be re-run exactly: seeded "
        "noise is reproducible and not hardened, and protects nobody who knows the seed. Releases of real "
        "people's data use dpfair's default secure noise (<code>random_state=None</code>).</p>",
        "<h2 id='overview'>Overview</h2>",
        "<p class='note'>One row per experiment. <b>Verdict</b>: <i>matches</i> when every number the paper prints "
        "for it is reproduced within the tolerance its experiment states (listed with each number in its section); "
        "<i>differs</i> names what does not, quoting the paper as printed; <i>not checked</i> when the paper prints "
        "no numbers for it (compare the figures); <i>not run</i> says why.</p>",
        "<table class='overview'><tr><th>Experiment</th><th>Reproduces</th><th>Scale</th>"
        "<th>Quick leaves out</th><th>Verdict</th></tr>",
    ]
    parts += _overview_rows(specs, tasks, verdicts)
    for spec in specs:
        parts += _section(spec, results[spec.id], verdicts[spec.id], tasks, runs, fig_dir)
    parts.append("</body></html>")
    return _write_index(report_dir / "index.html", parts)


def _overview_rows(specs: list[ExperimentSpec], tasks: pd.DataFrame, verdicts: dict[str, Verdict]) -> list[str]:
    """The overview table's rows, one per experiment, and its end."""
    parts = []
    for spec in specs:
        done = {(c, int(s)) for c, s in tasks.loc[tasks["experiment"] == spec.id, ["cell", "seed"]].itertuples(index=False)}
        scale, left_out = _scale(spec, done)
        verdict = verdicts[spec.id]
        if verdict.status == "differs" and scale == "quick":
            verdict = Verdict("differs", f"at quick scale ({left_out} left out; `dpfair run {spec.id}` at full scale tells "
                                         f"whether the scale is the cause): {verdict.detail}")
        css = verdict.status.replace(" ", "")
        parts.append(
            f"<tr><td><a href='#{html.escape(spec.id)}'>{html.escape(spec.id)}</a></td><td>{html.escape(spec.reproduces)}</td>"
            f"<td>{html.escape(scale)}</td><td>{html.escape(left_out)}</td>"
            f"<td><span class='{css}'>{html.escape(verdict.status)}</span>: {html.escape(verdict.detail)}</td></tr>"
        )
    parts.append("</table>")
    return parts


def _section(spec: ExperimentSpec, sub: pd.DataFrame, verdict: Verdict, tasks: pd.DataFrame, runs: pd.DataFrame,
             fig_dir: Path) -> list[str]:
    """One experiment's section: what it reproduces, its verdict, its runs, figures and tables."""
    parts = [f"<h2 id='{spec.id}'>{html.escape(spec.id)}: {html.escape(spec.title)}</h2>"]
    parts.append(
        f"<p class='meta'>Reproduces: {html.escape(spec.reproduces)}. Dataset: {html.escape(spec.dataset)}. "
        f"Algorithms: {html.escape(', '.join(spec.algorithms))}. Privacy: {html.escape(spec.privacy or 'n/a')}.</p>"
    )
    parts.append(
        f"<p class='meta'>Verdict: <span class='{verdict.status.replace(' ', '')}'>{html.escape(verdict.status)}</span>"
        f": {html.escape(verdict.detail)}</p>"
    )
    if verdict.rows:
        parts.append(_rows_table(verdict.rows))
    if sub.empty:
        how = f"dpfair run {spec.id} --quick"
        parts.append(f"<p>Not run: {html.escape(verdict.detail)} (then <code>{html.escape(how)}</code>).</p>")
        return parts
    spec_tasks = tasks[tasks["experiment"] == spec.id]
    spec_runs = runs[runs["experiment"] == spec.id]
    seeds = sorted(sub["seed"].unique().tolist())
    cells = sorted(sub["cell"].unique().tolist(), key=_cell_sort_key)
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
        try:
            figures = spec.figures(sub, fig_dir)
        except (DataUnavailableError, DataIntegrityError):  # a figure that re-reads data (e.g. a PMF)
            why = "; ".join(f"data {p.kind}: {p.file}" for p in data_problems(spec)) or "its data cannot be read"
            parts.append(f"<p class='note'>Figures not drawn: {html.escape(why)} (see <code>dpfair data info</code>).</p>")
            figures = []
        for info in figures:
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
    return parts


def _write_index(index: Path, parts: list[str]) -> Path:
    """Write the page through a temporary file, so that a failed write leaves no half page; its path."""
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
