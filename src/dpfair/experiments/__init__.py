"""Experiments: declarative specs, a resumable runner (local processes or Dask), results store and report."""

from dpfair.experiments.registry import ExperimentModuleError, all_specs, get_spec, register
from dpfair.experiments.report import build_report
from dpfair.experiments.runner import RunSummary, check_scheduler_address, execute_task, missing_data, run_experiment
from dpfair.experiments.spec import (
    ExperimentSpec,
    FigureInfo,
    PaperValue,
    TableInfo,
    Verdict,
    VerdictRow,
    cell_key,
    task_rng,
)
from dpfair.experiments.store import ResultsStore, ResultsStoreError

__all__ = [
    "ExperimentModuleError",
    "ExperimentSpec",
    "FigureInfo",
    "PaperValue",
    "ResultsStore",
    "ResultsStoreError",
    "RunSummary",
    "TableInfo",
    "Verdict",
    "VerdictRow",
    "all_specs",
    "build_report",
    "cell_key",
    "check_scheduler_address",
    "execute_task",
    "get_spec",
    "missing_data",
    "register",
    "run_experiment",
    "task_rng",
]
