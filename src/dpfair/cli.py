"""The ``dpfair`` command: list, run and report experiments; inspect and fetch data."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import typer

app = typer.Typer(
    add_completion=False, no_args_is_help=True, help="Fair and differentially private decisions: experiments and data."
)
data_app = typer.Typer(no_args_is_help=True, help="Inspect and fetch the real datasets.")
app.add_typer(data_app, name="data")

OutOption = Annotated[Path, typer.Option("--out", help="Output folder (results.sqlite, results.csv, report/).")]


def _fail(message: str, hint: str) -> None:
    typer.secho(f"error: {message}", fg=typer.colors.RED, err=True)
    typer.echo(f"hint: {hint}", err=True)
    raise typer.Exit(code=2)


@app.command("list")
def list_experiments() -> None:
    """List the registered experiments and whether their data is available."""
    from dpfair.experiments import all_specs, missing_data

    for spec in all_specs():
        status = "data missing" if missing_data(spec) else "ready"
        typer.echo(f"{spec.id:<28} {status:<13} {spec.reproduces}")


@app.command("run")
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
    """Run one experiment (or all); finished tasks already in OUT are skipped."""
    from dpfair.experiments import all_specs, get_spec, missing_data, run_experiment

    if workers is None:
        workers = os.cpu_count() or 1
    if workers < 1:
        _fail(f"--workers must be >= 1, got {workers}.", "use --workers 1 to run in this process.")
    if seeds is not None and seeds < 1:
        _fail(f"--seeds must be >= 1, got {seeds}.", "omit --seeds to use the experiment's own seeds.")
    try:
        specs = all_specs() if experiment == "all" else [get_spec(experiment)]
    except ValueError as exc:
        _fail(str(exc), "run `dpfair list` to see the experiment ids.")
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
        except OSError as exc:
            _fail(f"{spec.id}: {exc}", "check --out and --scheduler.")
        typer.echo(
            f"{spec.id}: {summary.n_run} task(s) run, {summary.n_skipped} already done, {summary.seconds:.1f} s -> {out}"
        )


@app.command("report")
def report(out: OutOption = Path("results")) -> None:
    """Build the figures and report/index.html from the results in OUT."""
    from dpfair.experiments import build_report

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
    """Download missing dataset files from their official sources and verify them."""
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
