"""The registry of experiments: every paper's experiments register here on import."""

from __future__ import annotations

import importlib
import importlib.util
import os

from dpfair.experiments.spec import ExperimentSpec

__all__ = ["ExperimentModuleError", "all_specs", "get_spec", "register"]


class ExperimentModuleError(ImportError):
    """A module named in ``$DPFAIR_EXPERIMENT_MODULES`` cannot be imported.

    Parameters
    ----------
    problem : str
        What went wrong, naming the module (and its file when it exists).
    fix : str
        What to do about it.
    module : str
        The module name as written in ``$DPFAIR_EXPERIMENT_MODULES``.
    """

    def __init__(self, problem: str, fix: str, module: str) -> None:
        super().__init__(f"{problem} {fix}", name=module)
        self.problem = problem
        self.fix = fix
        self.module = module

    def __reduce__(self) -> tuple[type, tuple[str, str, str]]:
        return (type(self), (self.problem, self.fix, self.module))


_SPECS: dict[str, ExperimentSpec] = {}
# Modules that define experiments; each calls register() at import time.
_MODULES = (
    "dpfair.experiments.privacy_core",
    "dpfair.experiments.selection",
    "dpfair.experiments.regression",
    "dpfair.experiments.regression_blind",
    "dpfair.experiments.classification",
    "dpfair.experiments.bandits",
    "dpfair.experiments.federated",
)
_loaded = False


def register(spec: ExperimentSpec) -> ExperimentSpec:
    """Add ``spec`` to the registry.

    Parameters
    ----------
    spec : ExperimentSpec
        The experiment; its ``id`` must be new (registering the same object again is allowed).

    Returns
    -------
    ExperimentSpec
        ``spec``, so that a module can write ``SPEC = register(ExperimentSpec(...))``.

    Raises
    ------
    ValueError
        If another experiment already has this id.
    """
    if spec.id in _SPECS and _SPECS[spec.id] is not spec:
        raise ValueError(f"experiment id {spec.id!r} is registered twice.")
    _SPECS[spec.id] = spec
    return spec


def _module_file(name: str) -> str | None:
    """The file a module would be imported from, or None when it cannot be found."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    return spec.origin if spec is not None else None


def _load() -> None:
    """Import the built-in experiment modules and those named in ``$DPFAIR_EXPERIMENT_MODULES``.

    ``DPFAIR_EXPERIMENT_MODULES`` is a comma-separated list of importable modules that
    register further experiments (your own, or test fixtures); worker processes inherit it.
    """
    global _loaded
    if _loaded:
        return
    for name in _MODULES:
        importlib.import_module(name)
    extra = [m.strip() for m in os.environ.get("DPFAIR_EXPERIMENT_MODULES", "").split(",") if m.strip()]
    for name in extra:
        try:
            importlib.import_module(name)
        except Exception as exc:
            origin = _module_file(name)
            detail = " ".join(f"{type(exc).__name__}: {exc}".split())  # one line
            if isinstance(exc, ModuleNotFoundError) and origin is None:
                problem = f"DPFAIR_EXPERIMENT_MODULES names the module {name!r}, which cannot be found ({detail})."
                fix = "Fix the name, put its folder on PYTHONPATH, or remove it from DPFAIR_EXPERIMENT_MODULES."
            else:
                where = f" ({origin})" if origin else ""
                problem = f"importing the module {name!r}{where} from DPFAIR_EXPERIMENT_MODULES failed: {detail}."
                fix = "Fix that module, or remove it from DPFAIR_EXPERIMENT_MODULES."
            raise ExperimentModuleError(problem, fix, name) from exc
    _loaded = True


def all_specs() -> list[ExperimentSpec]:
    """Every registered experiment, in registration order.

    Returns
    -------
    list of ExperimentSpec
        The built-in experiments, then those of ``$DPFAIR_EXPERIMENT_MODULES``.

    Raises
    ------
    ExperimentModuleError
        If a module named in ``$DPFAIR_EXPERIMENT_MODULES`` cannot be imported.
    """
    _load()
    return list(_SPECS.values())


def get_spec(experiment_id: str) -> ExperimentSpec:
    """The experiment called ``experiment_id``.

    Parameters
    ----------
    experiment_id : str
        Its id, as shown by ``dpfair list``.

    Returns
    -------
    ExperimentSpec
        The registered experiment.

    Raises
    ------
    ValueError
        If no experiment has this id (the message suggests the closest ids).
    ExperimentModuleError
        If a module named in ``$DPFAIR_EXPERIMENT_MODULES`` cannot be imported.
    """
    _load()
    try:
        return _SPECS[experiment_id]
    except KeyError:
        import difflib

        close = difflib.get_close_matches(str(experiment_id), list(_SPECS), n=3, cutoff=0.6)
        hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else "."
        raise ValueError(f"unknown experiment {experiment_id!r}{hint}") from None
