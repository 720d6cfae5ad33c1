"""The ``dpfair`` command: list, run and report experiments; inspect and fetch data.

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
from typing import Annotated, NoReturn, ParamSpec, TypeVar

import typer

__all__ = ["app", "data_app", "data_fetch", "data_info", "list_experiments", "main", "report", "run"]

#: The ``dpfair`` command (a :class:`typer.Typer` application).
app = typer.Typer(
    add_completion=False, no_args_is_help=True, help="Fair and differentially private decisions: experiments and data."
)
#: The ``dpfair data`` sub-command.
data_app = typer.Typer(no_args_is_help=True, help="Inspect and fetch the real datasets.")
app.add_typer(data_app, name="data")

OutOption = Annotated[Path, typer.Option("--out", help="Output folder (results.sqlite, results.csv, report/).")]


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


@app.command("list")
@_user_errors
def list_experiments() -> None:
    """List the registered experiments and whether their data is available.
    \f
    Raises
    ------
    typer.Exit
        With status 2 when a module in ``$DPFAIR_EXPERIMENT_MODULES`` cannot be imported.
    """
    from dpfair.experiments import all_specs, missing_data

    for spec in all_specs():
        status = "data missing" if missing_data(spec) else "ready"
        typer.echo(f"{spec.id:<28} {status:<13} {spec.reproduces}")


@app.command("run")
@_user_errors
def run(
    experiment: Annotated[str, typer.Argument(help="Experiment id, or 'all'.")],
    quick: Annotated[bool, typer.Option("--quick", help="Small horizon, few seeds.")] = False,
    seeds: Annotated[int | None, typer.Option("--seeds", help="Number of seeds (default: the variant's).")] = None,
    workers: Annotated[
        int | None, typer.Option("--workers", help="Local worker processes (default: one per CPU; 1 runs in this process).")
    ] = None,
    scheduler: Annotated[str | None, typer.Option("--scheduler", help="Dask scheduler address, tcp://host:port.")] = None,
    out: OutOption = Path("results"),
    quiet: Annotated[bool, typer.Option("--quiet", help="No progress bar (for CI logs).")] = False,
    download: Annotated[bool, typer.Option("--download", help="Download missing datasets first.")] = False,
) -> None:
    """Run one experiment (or all); finished tasks already in OUT are skipped.
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
        address, an unknown experiment, missing data, an unusable ``--out`` folder or
        results database, a module of ``$DPFAIR_EXPERIMENT_MODULES`` that does not import;
        with status 130 on Ctrl-C (finished tasks are kept).
    """
    from dpfair.experiments import (
        ResultsStore,
        ResultsStoreError,
        all_specs,
        check_scheduler_address,
        get_spec,
        missing_data,
        run_experiment,
    )

    if workers is None:
        workers = os.cpu_count() or 1
    if workers < 1:
        _fail(f"--workers must be >= 1, got {workers}.", "use --workers 1 to run in this process.")
    if seeds is not None and seeds < 1:
        _fail(f"--seeds must be >= 1, got {seeds}.", "omit --seeds to use the experiment's own seeds.")
    if scheduler is not None:
        try:
            check_scheduler_address(scheduler)
        except ValueError as exc:
            _fail(
                f"--{exc}" if str(exc).startswith("scheduler ") else f"--scheduler: {exc}",
                "pass the address that `dask scheduler` prints (tcp://host:port), or omit --scheduler to run locally.",
            )
    try:
        specs = all_specs() if experiment == "all" else [get_spec(experiment)]
    except ValueError as exc:
        _fail(str(exc), "run `dpfair list` to see the experiment ids.")
    ResultsStore(out).close()  # an unusable --out or results database fails here, before any work
    for spec in specs:
        problems = missing_data(spec, download=download)
        if problems:
            typer.secho(f"skipped {spec.id}: its data is missing.", fg=typer.colors.YELLOW, err=True)
            typer.echo(f"  {problems[0]}", err=True)
            typer.echo("  get it with `dpfair data fetch` (needs network) or point DPFAIR_DATA_HOME at a copy.", err=True)
            if experiment != "all":
                raise typer.Exit(code=2)
            continue
        try:
            summary = run_experiment(
                spec, out, quick=quick, n_seeds=seeds, workers=workers, scheduler=scheduler, progress=not quiet
            )
        except KeyboardInterrupt:
            typer.secho(f"interrupted: finished tasks of {spec.id} are kept in {out}; run again to resume.", err=True)
            raise typer.Exit(code=130) from None
        except ResultsStoreError:
            raise
        except OSError as exc:
            _fail(f"{spec.id}: {exc}", "check --out and --scheduler.")
        typer.echo(f"{spec.id}: {summary.n_run} task(s) run, {summary.n_skipped} already done, {summary.seconds:.1f} s -> {out}")


@app.command("report")
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


@data_app.command("info")
def data_info() -> None:
    """Show the data home and which dataset files are present and verified."""
    from dpfair.datasets import DATASETS, REMOTE_FILES, DataIntegrityError, DataUnavailableError, fetch_file, get_data_home

    typer.echo(f"data home: {get_data_home()} (set DPFAIR_DATA_HOME to change it)")
    for name, paths in DATASETS.items():
        for path in paths:
            try:
                fetch_file(REMOTE_FILES[path], download=False)
                state = "ok"
            except DataUnavailableError:
                state = "missing"
            except DataIntegrityError:
                state = "CORRUPT (sha256 mismatch)"
            typer.echo(f"{name:<12} {path:<48} {state}")


@data_app.command("fetch")
def data_fetch(name: Annotated[str | None, typer.Argument(help="Dataset name; all when omitted.")] = None) -> None:
    """Download missing dataset files from their official sources and verify them.
    \f
    Parameters
    ----------
    name : str, optional
        Dataset name; every dataset when omitted.

    Raises
    ------
    typer.Exit
        With status 2 on an unknown name or a failed download.
    """
    from dpfair.datasets import DATASETS, DataIntegrityError, DataUnavailableError, dataset_paths

    names = list(DATASETS) if name is None else [name]
    for n in names:
        if n not in DATASETS:
            _fail(f"unknown dataset {n!r}.", f"choose one of: {', '.join(DATASETS)}.")
        try:
            paths = dataset_paths(n)
        except (DataUnavailableError, DataIntegrityError) as exc:
            _fail(str(exc), "check the network, or copy the files into DPFAIR_DATA_HOME.")
        typer.echo(f"{n}: {len(paths)} file(s) verified")


def main() -> None:
    """Entry point of the ``dpfair`` console script."""
    app(prog_name="dpfair")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
