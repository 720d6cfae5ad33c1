"""The registry of experiments: every paper's experiments register here on import."""

from __future__ import annotations

import importlib
import os

from dpfair.experiments.spec import ExperimentSpec

__all__ = ["all_specs", "get_spec", "register"]

_SPECS: dict[str, ExperimentSpec] = {}
# Modules that define experiments; each calls register() at import time.
_MODULES = ("dpfair.experiments.privacy_core", "dpfair.experiments.selection", "dpfair.experiments.regression")
_loaded = False


def register(spec: ExperimentSpec) -> ExperimentSpec:
    """Add ``spec`` to the registry (ids must be unique)."""
    if spec.id in _SPECS and _SPECS[spec.id] is not spec:
        raise ValueError(f"experiment id {spec.id!r} is registered twice.")
    _SPECS[spec.id] = spec
    return spec


def _load() -> None:
    """Import the built-in experiment modules and those named in ``$DPFAIR_EXPERIMENT_MODULES``.

    ``DPFAIR_EXPERIMENT_MODULES`` is a comma-separated list of importable modules that
    register further experiments (your own, or test fixtures); worker processes inherit it.
    """
    global _loaded
    if not _loaded:
        extra = [m.strip() for m in os.environ.get("DPFAIR_EXPERIMENT_MODULES", "").split(",") if m.strip()]
        for name in (*_MODULES, *extra):
            importlib.import_module(name)
        _loaded = True


def all_specs() -> list[ExperimentSpec]:
    """Every registered experiment, in registration order."""
    _load()
    return list(_SPECS.values())


def get_spec(experiment_id: str) -> ExperimentSpec:
    """The experiment called ``experiment_id``; a clear error lists the known ids."""
    _load()
    try:
        return _SPECS[experiment_id]
    except KeyError:
        raise ValueError(f"unknown experiment {experiment_id!r}; known: {', '.join(_SPECS)}.") from None
