"""The ``dpfair`` command: list, run and report experiments; assess predictions privately; inspect and fetch data.

A user error (a wrong argument, an unusable ``--out`` folder or results database, a module
in ``$DPFAIR_EXPERIMENT_MODULES`` that does not import) prints one line on stderr, naming
the path and the fix, and exits with status 2.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, NoReturn, ParamSpec, TypeVar

import typer
import typer.core

from dpfair.cli_assess import LEDGER_ENV as _ASSESS_LEDGER_ENV  # stdlib and typer only: startup stays fast

__all__ = [
    "app",
    "assess",
    "data_app",
    "data_fetch",
    "data_home",
    "data_info",
    "federated_app",
    "federated_demo",
    "list_experiments",
    "main",
    "report",
    "run",
]

#: The ``dpfair`` command (a :class:`typer.Typer` application).
app = typer.Typer(
    add_completion=False,
    rich_markup_mode=None,  # plain click help: no "<bool>" placeholders, every line fits a terminal
    invoke_without_command=True,
    help="Fair and differentially private decisions: experiments and data.",
)
#: The ``dpfair data`` sub-command.
data_app = typer.Typer(
    rich_markup_mode=None, invoke_without_command=True, help="Inspect, locate and fetch the real datasets."
)
app.add_typer(data_app, name="data")
#: The ``dpfair federated`` sub-command.
federated_app = typer.Typer(
    rich_markup_mode=None, invoke_without_command=True,
    help="Federated learners on Flower: run the Flower apps over local SuperLink/SuperNode processes.",
)
app.add_typer(federated_app, name="federated")


class _PlainHelpCommand(typer.core.TyperCommand):
    """A command whose plain help prints ``[required]`` as written.

    typer escapes the brackets of an argument's ``[required]`` for rich's HTML export whenever rich is installed,
    even in the plain click help of ``rich_markup_mode=None``, which then shows ``\\[required]``.  (An option's
    ``[default: ...]`` is avoided instead: ``show_default=False`` and the default in its help text.)
    """

    def get_help(self, ctx: typer.Context) -> str:
        return super().get_help(ctx).replace("\\[", "[")


def _version(value: bool) -> None:
    if value:
        from dpfair import __version__

        typer.echo(f"dpfair {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    ctx: typer.Context,
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    if ctx.invoked_subcommand is None:  # bare `dpfair`: help, and success
        typer.echo(ctx.get_help())
        raise typer.Exit()


@federated_app.callback()
def _federated_root(ctx: typer.Context) -> None:
    if ctx.invoked_subcommand is None:
        typer.echo(ctx.get_help())
        raise typer.Exit()


@data_app.callback()
def _data_root(ctx: typer.Context) -> None:
    if ctx.invoked_subcommand is None:
        typer.echo(ctx.get_help())
        raise typer.Exit()


OutOption = Annotated[Path, typer.Option("--out", metavar="DIR", show_default=False,
                                         help="Output folder (results.sqlite, results.csv, report/; default: results).")]


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _fail(message: str, hint: str) -> NoReturn:
    """Print ``error: MESSAGE hint: HINT`` as one line on stderr and exit with status 2."""
    typer.secho(f"error: {_one_line(message)} hint: {_one_line(hint)}", fg=typer.colors.RED, err=True)
    raise typer.Exit(code=2)


def _cli_words(text: str, *, hint: bool = False) -> str:
    text = text.replace("the output folder", "--out").replace("output folder", "--out folder")
    return text[:1].lower() + text[1:] if hint else text


P = ParamSpec("P")
R = TypeVar("R")


def _user_errors(command: Callable[P, R]) -> Callable[P, R]:
    """Turn the library's user-facing errors (bad modules, unusable output folders) into one line and exit 2."""

    @functools.wraps(command)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return command(*args, **kwargs)
        except (ImportError, OSError) as exc:  # imported here: `dpfair data ...` stays fast
            from dpfair.experiments.registry import ExperimentModuleError
            from dpfair.experiments.store import ResultsStoreError

            if isinstance(exc, ExperimentModuleError):
                _fail(exc.problem, _cli_words(exc.fix, hint=True))
            if isinstance(exc, ResultsStoreError):
                _fail(_cli_words(exc.problem), _cli_words(exc.fix, hint=True))
            raise

    return wrapper


def _duration(seconds: float) -> str:
    if seconds < 10:
        return f"{seconds:.1f} s"
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


@app.command("list", short_help="List the experiments, whether their data is ready, and how long they take.")
@_user_errors
def list_experiments(
    out: Annotated[
        Path, typer.Option("--out", metavar="DIR", show_default=False,
                           help="Output folder whose results.sqlite holds the measured wall times (default: results).")
    ] = Path("results"),
) -> None:
    """List the experiments: id, data status, last measured wall time (quick / full), what each reproduces.
    \f
    Parameters
    ----------
    out : pathlib.Path
        Output folder of ``dpfair run``; its ``results.sqlite`` is only read (never created).

    Raises
    ------
    typer.Exit
        With status 2 when a module in ``$DPFAIR_EXPERIMENT_MODULES`` cannot be imported.
    """
    from dpfair.experiments import all_specs
    from dpfair.experiments.runner import data_problems
    from dpfair.experiments.store import ResultsStoreError, run_history

    specs = all_specs()
    try:
        history = run_history(out) if not out.is_file() else {}
    except ResultsStoreError as exc:  # the list is still useful; say once why the times are absent
        typer.secho(f"warning: no wall times: {_one_line(_cli_words(exc.problem))}", fg=typer.colors.YELLOW, err=True)
        history = {}
    rows = [("ID", "DATA", "QUICK", "FULL", "REPRODUCES")]
    for spec in specs:
        problems = data_problems(spec)
        if any(p.kind == "corrupt" for p in problems):
            status = "data corrupt"
        else:
            status = "data missing" if problems else "ready"
        rows.append((spec.id, status, *(_run_cell(history.get((spec.id, v))) for v in ("quick", "full")), spec.reproduces))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    for row in rows:
        typer.echo("  ".join(cell.ljust(w) for cell, w in zip(row[:4], widths, strict=True)) + "  " + row[4])
    typer.echo(
        f"\nQUICK / FULL: wall time of the runs stored in {out / 'results.sqlite'}, with the number of worker "
        "processes; 'resumed' sums the runs of a variant finished after an interruption; 'partial': interrupted, "
        "`dpfair run` resumes it; '-': not run. `dpfair data info` for the data."
    )


def _run_cell(entry: dict[str, object] | None) -> str:
    if entry is None:
        return "-"
    seconds, workers, n_runs = float(entry["seconds"]), int(entry["workers"]), int(entry["n_runs"])
    if entry["status"] != "done":
        return f"partial ({_duration(seconds)})"
    resumed = f", resumed: {n_runs} runs" if n_runs > 1 else ""
    return f"{_duration(seconds)} ({workers} worker{'s' if workers != 1 else ''}{resumed})"


def _data_problem_line(spec_id: str, problem: object) -> str:
    return f"{spec_id}: data {problem.kind}: {problem.file}"  # type: ignore[attr-defined]


@app.command("run", cls=_PlainHelpCommand, short_help="Run one experiment (or all); finished tasks in --out are skipped.")
@_user_errors
def run(
    experiment: Annotated[str, typer.Argument(help="Experiment id (see `dpfair list`), or 'all'.", metavar="EXPERIMENT")],
    quick: Annotated[bool, typer.Option("--quick", help="Small horizon, few seeds.")] = False,
    seeds: Annotated[
        int | None, typer.Option("--seeds", metavar="N", help="Number of seeds (default: the variant's).")
    ] = None,
    workers: Annotated[
        int | None,
        typer.Option("--workers", metavar="N", help="Local worker processes (default: one per CPU; 1 runs in this process)."),
    ] = None,
    scheduler: Annotated[
        str | None, typer.Option("--scheduler", metavar="ADDRESS", help="Dask scheduler address, tcp://host:port.")
    ] = None,
    out: OutOption = Path("results"),
    quiet: Annotated[bool, typer.Option("--quiet", help="No progress bars (for CI logs).")] = False,
    download: Annotated[bool, typer.Option("--download", help="Download missing datasets first.")] = False,
) -> None:
    """Run one experiment (or all); finished tasks already in OUT are skipped.

    With 'all', an experiment whose data is missing or corrupt is skipped, the others run,
    and a summary at the end says what was skipped and why.
    \f
    Parameters
    ----------
    experiment : str
        Experiment id, or ``"all"``.
    quick : bool
        Small horizon, few seeds.
    seeds : int, optional
        Number of seeds (default: the variant's).
    workers : int, optional
        Local worker processes (default: one per CPU; 1 runs in this process).
    scheduler : str, optional
        Dask scheduler address, ``tcp://host:port``.
    out : pathlib.Path
        Output folder.
    quiet : bool
        No progress bar.
    download : bool
        Download missing datasets first.

    Raises
    ------
    typer.Exit
        With status 2 (one line on stderr) on a user error: a bad argument or scheduler
        address, an unknown experiment, missing or corrupt data, an unusable ``--out`` folder
        or results database, a module of ``$DPFAIR_EXPERIMENT_MODULES`` that does not import;
        for ``all``, with status 2 after the summary when an experiment was skipped because
        its data is corrupt; with status 130 on Ctrl-C (finished tasks are kept).
    """
    from dpfair.experiments import ResultsStore, all_specs, get_spec
    from dpfair.experiments.runner import data_problems

    workers = _check_run_options(workers, seeds, scheduler)
    try:
        specs = all_specs() if experiment == "all" else [get_spec(experiment)]
    except ValueError as exc:
        _fail(str(exc), "run `dpfair list` to see the experiment ids.")
    ResultsStore(out).close()  # an unusable --out or results database fails here, before any work
    run_all = experiment == "all"
    skipped: list[tuple[str, object]] = []
    n_ran = 0
    for i, spec in enumerate(specs, start=1):
        position = f"[{i}/{len(specs)}]"
        problems = data_problems(spec, download=download)
        if problems:
            first = next((p for p in problems if p.kind == "corrupt"), problems[0])
            if not run_all:
                _fail(f"{spec.id} cannot run: {first.problem}", _cli_words(first.fix, hint=True))
            typer.secho(f"{position} skipped {_data_problem_line(spec.id, first)}", fg=typer.colors.YELLOW, err=True)
            skipped.append((spec.id, first))
            continue
        if run_all and not quiet:
            typer.echo(f"{position} {spec.id}", err=True)
        _run_one(spec, out, position if run_all else None, quick=quick, seeds=seeds, workers=workers,
                 scheduler=scheduler, quiet=quiet)
        n_ran += 1
    if run_all:
        _summarize_all(n_ran, len(specs), skipped, out)


def _check_run_options(workers: int | None, seeds: int | None, scheduler: str | None) -> int:
    """``dpfair run``'s --workers (the default: one per CPU), --seeds and --scheduler; the number of workers."""
    from dpfair.experiments import check_scheduler_address

    if workers is None:
        workers = os.cpu_count() or 1
    if workers < 1:
        _fail(f"--workers must be >= 1, got {workers}.", "use --workers 1 to run in this process.")
    if seeds is not None and seeds < 1:
        _fail(f"--seeds must be >= 1, got {seeds}.", "omit --seeds to use the experiment's own seeds.")
    if scheduler is not None:
        try:
            check_scheduler_address(scheduler)
        except (TypeError, ValueError) as exc:
            _fail(
                f"--{exc}" if str(exc).startswith("scheduler ") else f"--scheduler: {exc}",
                "pass the address that `dask scheduler` prints (tcp://host:port), or omit --scheduler to run locally.",
            )
    return workers


def _run_one(spec: Any, out: Path, position: str | None, *, quick: bool, seeds: int | None, workers: int,
             scheduler: str | None, quiet: bool) -> None:
    """Run one experiment whose data is ready and print its line (``position``: ``[i/n]`` of ``dpfair run all``)."""
    from dpfair.experiments import ResultsStoreError, run_experiment

    try:
        summary = run_experiment(
            spec,
            out,
            quick=quick,
            n_seeds=seeds,
            workers=workers,
            scheduler=scheduler,
            progress=not quiet,
            progress_label=None if position is None else f"{position} {spec.id}",
        )
    except KeyboardInterrupt:
        typer.secho(f"interrupted: finished tasks of {spec.id} are kept in {out}; run again to resume.", err=True)
        raise typer.Exit(code=130) from None
    except ResultsStoreError:
        raise
    except OSError as exc:
        _fail(f"{spec.id}: {exc}", "check --out and --scheduler.")
    prefix = "" if position is None else f"{position} "
    typer.echo(
        f"{prefix}{spec.id}: {summary.n_run} task(s) run, {summary.n_skipped} already done, "
        f"{summary.seconds:.1f} s -> {out}"
    )


def _summarize_all(n_ran: int, n_specs: int, skipped: list[tuple[str, Any]], out: Path) -> None:
    """The summary of ``dpfair run all``: what ran, what was skipped and why; exit 2 when a dataset is corrupt."""
    typer.echo(f"ran {n_ran} of {n_specs} experiments -> {out}")
    if skipped:
        typer.secho(f"skipped {len(skipped)} of {n_specs} experiments:", fg=typer.colors.YELLOW, err=True)
        for spec_id, problem in skipped:
            typer.echo(f"  {_data_problem_line(spec_id, problem)}: {problem.problem} {problem.fix}", err=True)
        if any(problem.kind == "corrupt" for _, problem in skipped):
            raise typer.Exit(code=2)


@app.command("report", short_help="Build the figures and report/index.html from the results in --out.")
@_user_errors
def report(out: OutOption = Path("results")) -> None:
    """Build the figures and report/index.html from the results in OUT.
    \f
    Parameters
    ----------
    out : pathlib.Path
        Output folder of ``dpfair run``.

    Raises
    ------
    typer.Exit
        With status 2 (one line on stderr) when OUT holds no results, is a file, is not
        writable, or its ``results.sqlite`` is not a readable results database.
    """
    from dpfair.experiments import build_report

    if out.exists() and not out.is_dir():
        _fail(f"--out {out} is a file, not a folder of results.", "pass the folder given to `dpfair run --out`.")
    if not (out / "results.sqlite").exists():
        _fail(f"no results in {out}.", "run `dpfair run all --quick --out DIR` first, with the same --out.")
    index = build_report(out)
    typer.echo(f"report: {index}")



# the options of `dpfair assess` (its signature stays readable)
_AssessPredictions = Annotated[
    Path | None, typer.Argument(help="CSV or Parquet file, one row per person (required).", metavar="PREDICTIONS",
                                show_default=False)
]
_AssessYTrue = Annotated[
    str | None, typer.Option("--y-true", metavar="COL", show_default=False,
                          help="Column of true labels (required): 0/1, labels with --pos-label, or numbers in "
                               "--bounds for real-valued metrics.")
]
_AssessYPred = Annotated[
    str | None, typer.Option("--y-pred", metavar="COL", show_default=False,
                          help="Column of predictions (required): 0/1, labels with --pos-label, or numbers in "
                               "--bounds for real-valued metrics.")
]
_AssessSensitive = Annotated[
    list[str] | None,
    typer.Option("--sensitive", metavar="COL", help="Sensitive column (required); repeat for intersectional groups.",
                 show_default=False),
]
_AssessEpsilon = Annotated[
    float | None,
    typer.Option("--epsilon", metavar="EPS", show_default=False,
                 help="Privacy parameter (required; > 0, smaller is more private; inf: no privacy)."),
]
_AssessGroups = Annotated[
    list[str] | None,
    typer.Option("--groups", metavar="A,B,...", help="Declared labels of each --sensitive column, in the same order.",
                 show_default=False),
]
_AssessMetric = Annotated[
    list[str] | None,
    typer.Option("--metric", metavar="NAME", help="Metric to assess (repeatable): count, selection_rate, "
                 "mean_prediction, accuracy_score, balanced_accuracy_score, precision_score, recall_score, f1_score, "
                 "true_positive_rate, true_negative_rate, false_positive_rate, false_negative_rate, mean_absolute_error, "
                 "mean_squared_error, r2_score (these three need --bounds); default: selection_rate, true_positive_rate, "
                 "false_positive_rate, accuracy_score.", show_default=False),
]
_AssessPosLabel = Annotated[
    str | None,
    typer.Option("--pos-label", metavar="LABEL", show_default=False,
                 help="Positive class of --y-true and --y-pred read as text (e.g. '>50K'); every other label "
                      "counts as 0."),
]
_AssessBounds = Annotated[
    str | None, typer.Option("--bounds", metavar="LO,HI", help="Public range of the columns (real-valued metrics).",
                             show_default=False)
]
_AssessConfidence = Annotated[
    float, typer.Option("--confidence", metavar="LEVEL", help="Interval coverage (default 0.95).", show_default=False)
]
_AssessUndeclared = Annotated[
    str, typer.Option("--undeclared", metavar="raise|other",
                      help="A label not in --groups: refuse (raise, the default), or count it in an '(other)' group "
                           "that is always shown, so nothing reveals whether such a row exists.", show_default=False)
]
_AssessSeed = Annotated[
    int | None, typer.Option("--seed", metavar="N", show_default=False,
                             help="Reproducible, NOT hardened noise and intervals (tests only).")
]
_AssessLedger = Annotated[
    Path | None,
    typer.Option("--ledger", metavar="FILE", show_default=False,
                 help=f"Record of what was spent (JSON lines; default ${_ASSESS_LEDGER_ENV} or "
                      "~/.dpfair/assess-spent.jsonl)."),
]
_AssessOut = Annotated[
    Path, typer.Option("--out", metavar="DIR", help="Output folder (default: assessment).", show_default=False)
]
_AssessQuiet = Annotated[bool, typer.Option("--quiet", help="No progress lines.")]
_AssessControl = Annotated[
    list[str] | None,
    typer.Option("--control", metavar="COL", show_default=False,
                 help="Control column (fairlearn's control_features; repeatable): metrics are computed within "
                      "each of its levels."),
]
_AssessControlGroups = Annotated[
    list[str] | None,
    typer.Option("--control-groups", metavar="A,B,...", show_default=False,
                 help="Declared levels of each --control column, in the same order."),
]


@app.command(
    "assess", short_help="Private fairness assessment of predictions in a CSV or Parquet file: table + HTML page."
)
def assess(
    predictions: _AssessPredictions = None,
    y_true: _AssessYTrue = None,
    y_pred: _AssessYPred = None,
    sensitive: _AssessSensitive = None,
    epsilon: _AssessEpsilon = None,
    groups: _AssessGroups = None,
    metric: _AssessMetric = None,
    bounds: _AssessBounds = None,
    confidence: _AssessConfidence = 0.95,
    undeclared: _AssessUndeclared = "raise",
    seed: _AssessSeed = None,
    ledger: _AssessLedger = None,
    out: _AssessOut = Path("assessment"),
    quiet: _AssessQuiet = False,
    control: _AssessControl = None,
    control_groups: _AssessControlGroups = None,
    pos_label: _AssessPosLabel = None,
) -> None:
    """Assess the predictions in PREDICTIONS by group, privately: a CSV table and an HTML page in DIR.

    PREDICTIONS is a CSV or Parquet file, read by DuckDB, which also counts the
    (group, y_true, y_pred) table.  Every count-based metric comes from one noisy
    release of that table (discrete Laplace, epsilon-DP for every row); each
    estimate has an interval that covers the sampling error and the privacy
    noise.  --groups declares, once per --sensitive column and in the same order,
    its possible labels separated by commas (required with a finite --epsilon;
    labels are compared without surrounding spaces).  Each run is recorded in the
    --ledger file, and the page says how much was spent on the same file so far.
    \f
    Parameters
    ----------
    predictions : pathlib.Path
        CSV or Parquet file with one row per person.
    y_true, y_pred : str
        Columns of true labels and predictions.
    sensitive : list of str
        Sensitive columns (several: intersectional groups).
    epsilon : float
        Privacy parameter of the whole assessment.
    groups : list of str, optional
        Declared labels, comma-separated, one option per sensitive column.
    metric : list of str, optional
        Metrics (names of :data:`dpfair.metrics.SUPPORTED_METRICS`).
    bounds : str, optional
        ``LO,HI``: public range of both columns, for the real-valued metrics.
    confidence : float
        Interval coverage.
    undeclared : str
        ``raise`` or ``other`` (see :class:`dpfair.metrics.PrivateMetricFrame`).
    seed : int, optional
        Seed for reproducible, not hardened noise.
    ledger : pathlib.Path, optional
        The JSON-lines record of what was spent.
    out : pathlib.Path
        Output folder.
    quiet : bool
        No progress lines.
    control : list of str, optional
        Control columns (fairlearn's ``control_features``), counted in DuckDB's group-by.
    control_groups : list of str, optional
        Declared levels, comma-separated, one option per control column.
    pos_label : str, optional
        Positive class of the label columns read as text; every other label counts as 0.

    Raises
    ------
    typer.Exit
        With status 2 (one line on stderr naming the column or option) on a user error.
    """
    from dpfair.cli_assess import AssessError, run_assessment

    try:
        run_assessment(predictions, y_true, y_pred, sensitive, epsilon, groups, metric, bounds, confidence, undeclared,
                       seed, ledger, out, quiet, control=control, control_groups=control_groups,
                       pos_label=pos_label)
    except AssessError as exc:
        _fail(exc.message, exc.hint)


@federated_app.command("demo", short_help="Run Fed-/Priv-FairX-LinUCB on Flower: one SuperNode process per agent.")
def federated_demo(
    agents: Annotated[int, typer.Option("--agents", show_default=False, help="Agents: one SuperNode process each "
                                        "(default 5).")] = 5,
    horizon: Annotated[int, typer.Option("--horizon", show_default=False, help="Rounds T (default 2000).")] = 2000,
    learner: Annotated[str, typer.Option("--learner", show_default=False,
                                         help="priv (Priv-FairX-LinUCB, the default) or fed (Fed-FairX-LinUCB).")] = "priv",
    protocol: Annotated[str, typer.Option("--protocol", show_default=False,
                                          help="bounded-gap (the default), p-fcb or log-det.")] = "bounded-gap",
    learners: Annotated[
        str, typer.Option("--learners", show_default=False,
                          help="Several learners on the same streams: 'fed:bounded-gap,priv:p-fcb,...'.")
    ] = "",
    epsilon: Annotated[float, typer.Option("--epsilon", show_default=False,
                                           help="Privacy of each agent's stream (priv; default 2); inf runs the exact "
                                                "non-private algorithm.")] = 2.0,
    delta: Annotated[float, typer.Option("--delta", show_default=False, help="Privacy delta (priv; default 0.1).")] = 0.1,
    seed: Annotated[int, typer.Option("--seed", show_default=False, help="Seed of the synthetic world (default 0).")] = 0,
    random_state: Annotated[
        int | None, typer.Option("--random-state", show_default=False,
                                 help="Seeded (reproducible, not hardened) noise; default secure.")
    ] = None,
    data: Annotated[
        str | None,
        typer.Option("--data", metavar="DIR|PATTERN", show_default=False,
                     help="Each agent's own file of contexts and outcomes: a folder of agent-<i>.csv (or .parquet), or "
                          "a path with {agent} in it; each SuperNode gets its file as its data-path node setting. "
                          "Default: the synthetic world."),
    ] = None,
    allow_drops: Annotated[
        bool, typer.Option("--allow-drops", help="Exit 0 when an agent dropped but every round was played "
                                                 "(default: such a degraded run exits with status 3).")
    ] = False,
    out: Annotated[Path | None, typer.Option("--out", metavar="DIR", show_default=False,
                                             help="Folder for result.json, metrics and logs (default: a new temporary "
                                                  "folder).")] = None,
    executor: Annotated[str, typer.Option("--executor", show_default=False,
                                          help="persistent (fast, the default) or flower (a process per message).")] = (
        "persistent"
    ),
    simulation: Annotated[
        bool,
        typer.Option("--simulation", help="Flower's Simulation Engine (Ray): the agents as virtual SuperNodes on at most "
                     "2 Ray actors, no process per agent; needs pip install \"dpfair[simulation]\"."),
    ] = False,
    timeout: Annotated[
        float | None,
        typer.Option("--timeout", metavar="SECONDS", show_default=False,
                     help="Time limit of the run; default: planned message rounds x measured seconds each x 3, plus slack."),
    ] = None,
) -> None:
    """Start a local SuperLink and one SuperNode per agent on 127.0.0.1, run the Flower app, print the
    fairness regret, the communication rounds and each agent's privacy_spent, and stop every process
    (also on Ctrl-C, or if this process is killed). Every argument is checked before anything starts.
    Exit status: 0 completed; 1 failed (start-up, the time limit, an agent that never joined: one FAILED
    line, the partial result saved); 2 refused arguments; 3 degraded (an agent dropped; 0 with --allow-drops)."""
    try:
        import flwr  # noqa: F401
    except ImportError:
        _fail("the federated demo needs Flower, which is not installed.", 'pip install "dpfair[federated]".')
    if simulation and executor != "persistent":
        _fail(f"--simulation and --executor {executor} both choose how the agents run.", "pass one of them.")
    import signal

    from dpfair.federated.demo import run_demo, summary

    def _terminated(signum: int, frame: object) -> None:
        raise KeyboardInterrupt  # SIGTERM: the same orderly stop as Ctrl-C, and a result that says so

    previous = signal.signal(signal.SIGTERM, _terminated)
    try:
        result = run_demo(
            agents, horizon, learner=learner, protocol=protocol, learners=learners, epsilon=epsilon, delta=delta, seed=seed,
            random_state=random_state, out=out, executor="simulation" if simulation else executor, timeout=timeout,
            data=data, allow_drops=allow_drops, echo=typer.echo,
        )
    except (ValueError, TypeError) as exc:
        _fail(str(exc), "run `dpfair federated demo --help`.")
    except ImportError as exc:  # --simulation without Ray, a Parquet file without pyarrow
        _fail(str(exc), 'pip install "dpfair[simulation]".' if simulation else "install the package it names.")
    except KeyboardInterrupt:
        typer.echo("interrupted: every process the demo started was stopped; result.json says so.", err=True)
        raise typer.Exit(code=130) from None
    finally:
        signal.signal(signal.SIGTERM, previous)
    for line in summary(result):
        typer.echo(line)
    if result.status == "degraded":
        if not allow_drops:
            raise typer.Exit(code=3)
    elif result.failure or not result.server.get("completed"):
        raise typer.Exit(code=1)


@data_app.command("info", short_help="Show the data home, how it was chosen, and which files are verified.")
def data_info() -> None:
    """Show the data home, the rule that chose it, and which dataset files are present and verified."""
    from dpfair.datasets import DATASETS, REMOTE_FILES, DataIntegrityError, DataUnavailableError, data_home_source, fetch_file

    home, source = data_home_source()
    typer.echo(f"data home: {home} ({source})")
    typer.echo(
        "rule: $DPFAIR_DATA_HOME if set, else the folder saved by `dpfair data home PATH`, else ~/.cache/dpfair"
    )
    width = max(len(p) for paths in DATASETS.values() for p in paths)
    for name, paths in DATASETS.items():
        for path in paths:
            try:
                fetch_file(REMOTE_FILES[path], download=False)
                state = "ok"
            except DataUnavailableError:
                state = "missing"
            except DataIntegrityError:
                state = f"CORRUPT (sha256 mismatch; move it aside, then `dpfair data fetch {name}`)"
            typer.echo(f"{name:<12} {path:<{width}} {state}")


@data_app.command("home", short_help="Show the data home, or save PATH as the data home of this environment.")
def data_home(
    path: Annotated[Path | None, typer.Argument(help="Folder to save as the data home.", metavar="[PATH]")] = None,
    forget: Annotated[bool, typer.Option("--forget", help="Forget the saved data home.")] = False,
) -> None:
    """Show the data home, or save PATH as the data home used when DPFAIR_DATA_HOME is not set.

    The folder is saved inside the virtual environment, so `make demo`, `.venv/bin/dpfair`
    and an activated .venv all see the same data.
    \f
    Parameters
    ----------
    path : pathlib.Path, optional
        The folder to save; without it (and without ``--forget``) the data home is shown.
    forget : bool
        Remove the saved folder (the default cache folder applies again).

    Raises
    ------
    typer.Exit
        With status 2 when PATH is a file, or the setting cannot be written.
    """
    from dpfair.datasets import data_home_source, save_data_home, saved_data_home_file

    if path is not None and forget:
        _fail("give PATH or --forget, not both.", "run `dpfair data home PATH` or `dpfair data home --forget`.")
    try:
        if forget:
            save_data_home(None)
        elif path is not None:
            if path.exists() and not path.is_dir():
                _fail(f"{path} is a file, not a folder.", "pass the folder that holds the datasets.")
            save_data_home(path)
    except OSError as exc:
        _fail(
            f"cannot write {saved_data_home_file()} ({exc.strerror or exc}).",
            "set DPFAIR_DATA_HOME instead, or make that folder writable.",
        )
    home, source = data_home_source()
    typer.echo(f"data home: {home} ({source})")
    if path is not None and source == "$DPFAIR_DATA_HOME":
        typer.echo("note: DPFAIR_DATA_HOME is set, and it wins over the saved folder.")


@data_app.command("fetch", short_help="Download missing dataset files from their official sources; verify sha256.")
def data_fetch(
    name: Annotated[str | None, typer.Argument(help="Dataset name; all when omitted.", metavar="[NAME]")] = None,
) -> None:
    """Download missing dataset files from their official sources and verify them.

    A corrupt file already in the data home is never replaced: move it aside first.
    \f
    Parameters
    ----------
    name : str, optional
        Dataset name; every dataset when omitted.

    Raises
    ------
    typer.Exit
        With status 2 on an unknown name, a corrupt local file, or a failed download.
    """
    from dpfair.datasets import DATASETS, DataIntegrityError, DataUnavailableError, dataset_paths, get_data_home

    names = list(DATASETS) if name is None else [name]
    for n in names:
        if n not in DATASETS:
            _fail(f"unknown dataset {n!r}.", f"choose one of: {', '.join(DATASETS)}.")
        try:
            paths = dataset_paths(n)
        except DataIntegrityError as exc:
            if exc.fix and exc.actual is not None and exc.path is not None and exc.path.exists():
                _fail(f"{exc.path} is corrupt: its sha256 is {exc.actual}, expected {' or '.join(exc.expected)}.", exc.fix)
            _fail(str(exc).split(" expected file ")[0], exc.fix or "move it aside, then fetch again.")
        except DataUnavailableError as exc:
            _fail(str(exc), f"check the network, or copy the files into the data home {get_data_home()}.")
        typer.echo(f"{n}: {len(paths)} file(s) verified")


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``dpfair`` console script.

    A usage error (an unknown command or option, a missing argument, a value of the wrong
    type) prints one line on stderr naming the fix, and exits with status 2.

    Parameters
    ----------
    argv : list of str, optional
        The arguments (default: ``sys.argv[1:]``).

    Raises
    ------
    SystemExit
        Always, with the command's exit status.
    """
    try:  # typer >= 0.22 vendors click; its exceptions are typer's own
        from typer._click.exceptions import ClickException, UsageError
    except ImportError:  # pragma: no cover - older typer on top of click
        from click.exceptions import ClickException, UsageError

    try:
        status = app(args=argv, prog_name="dpfair", standalone_mode=False)
    except UsageError as exc:
        command = exc.ctx.command_path if exc.ctx is not None else "dpfair"
        typer.secho(
            f"error: {_one_line(exc.format_message())} hint: run `{command} --help`.", fg=typer.colors.RED, err=True
        )
        sys.exit(2)
    except ClickException as exc:
        typer.secho(f"error: {_one_line(exc.format_message())}", fg=typer.colors.RED, err=True)
        sys.exit(exc.exit_code)
    except typer.Abort:
        typer.echo("aborted.", err=True)
        sys.exit(130)
    sys.exit(status if isinstance(status, int) else 0)


if __name__ == "__main__":  # pragma: no cover
    main()
