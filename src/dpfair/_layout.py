"""The layout of dpfair, declared once: every unit (a subpackage or a top-level module), its layer and its role.

A unit imports only units of its own layer or lower ones, and the units form no circle.  Four places read
this table, so a new subpackage is one line here and nothing else:

* ``tests/test_import_boundaries.py`` checks the imports against :data:`UNITS` (and that every unit on disk
  has a line here);
* ``tests/_registry.py`` scans every subpackage but :mod:`dpfair.privacy` for public private classes that the
  protocol tests must cover (:func:`subpackages`);
* ``docs/sphinxext/dpfair_docs.py`` writes one API page per unit with ``api_page=True``, in this order
  (:func:`api_packages`), and draws the layer picture of the architecture page (``docs/architecture.rst``);
* ``dpfair.__doc__`` lists the subpackages with their roles.

This module imports nothing from dpfair, so every layer may read it.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

__all__ = ["LAYER_NAMES", "UNITS", "Unit", "api_packages", "layers", "subpackage_summary", "subpackages"]

_HERE = Path(__file__).resolve().parent


class Unit(NamedTuple):
    """One unit of the package: a subpackage or a top-level module.

    Attributes
    ----------
    module : str
        Its import name, e.g. ``"dpfair.privacy"`` (``"dpfair"`` is the package's face, its ``__init__``).
    layer : int
        Its layer, an index into :data:`LAYER_NAMES`: it may import units of this layer or lower ones.
    role : str
        What it does, in one line (``dpfair.__doc__`` and the architecture page show it).
    api_page : bool
        Whether the API reference has a page for it (a public subpackage, or ``dpfair.base``).
    """

    module: str
    layer: int
    role: str
    api_page: bool = True


#: The layers, lowest first; a unit's ``layer`` indexes this tuple.
LAYER_NAMES = (
    "the face and the shared checks",
    "privacy, data and fairness measures",
    "the estimator helpers",
    "the release template",
    "private estimators and learners",
    "compositions: search, federation, assessment",
    "experiments",
    "the command line",
)

#: Every unit, in the API reference's reading order (the order of its pages).
UNITS: tuple[Unit, ...] = (
    Unit("dpfair.privacy", 1, "Budgets, accounting, noise sources, mechanisms, continual release and audits; "
         "the only place in dpfair that draws privacy noise."),
    Unit("dpfair.base", 3, "The release template every private class runs: validate, charge once, draw, solve."),
    Unit("dpfair.fairness", 1, "Fairness metrics shared by every experiment."),
    Unit("dpfair.metrics", 4, "Private fairness assessment: fairlearn's MetricFrame with a privacy guarantee and "
         "confidence intervals."),
    Unit("dpfair.selection", 4, "Exponential-mechanism selection of m of n applicants and its exact analysis."),
    Unit("dpfair.regression", 4, "Differentially private fair post-processing of regressors (Wasserstein "
         "barycenters)."),
    Unit("dpfair.model_selection", 5, "Private hyper-parameter search (random stopping, private scorers) for any "
         "dpfair estimator."),
    Unit("dpfair.classification", 4, "Equalized-odds classification with a private sensitive attribute: "
         "post-processing and reductions."),
    Unit("dpfair.linear_model", 4, "Private base models (linear and logistic regression) that make a "
         "post-processing pipeline private end to end."),
    Unit("dpfair.preprocessing", 4, "Preprocessing steps for private pipelines: encodings over declared "
         "categories, private quantiles."),
    Unit("dpfair.bandits", 4, "Online selection: group meritocratic fairness (Private-Fair-Greedy) and federated "
         "fairness of exposure (Fed-FairX-LinUCB, Priv-FairX-LinUCB)."),
    Unit("dpfair.federated", 5, "The federated learners on Flower: server and client apps, local and real "
         "deployments."),
    Unit("dpfair.datasets", 1, "Verified downloads of the real datasets into a data home, and synthetic "
         "generators."),
    Unit("dpfair.experiments", 6, "The papers' experiments: specifications, a resumable runner, a results store "
         "and the report."),
    Unit("dpfair", 0, "The package's face: the version and the list of subpackages.", api_page=False),
    Unit("dpfair._layout", 0, "This table.", api_page=False),
    Unit("dpfair._version", 0, "The version string.", api_page=False),
    Unit("dpfair._validation", 0, "Every argument check (bounds, arrays, intervals, budgets).", api_page=False),
    Unit("dpfair._warnings", 0, "find_stack_level: warnings point at the user's line.", api_page=False),
    Unit("dpfair._estimator", 2, "privacy_spent_'s one shape, group resolution, the non-private warning.",
         api_page=False),
    Unit("dpfair._wrapped_fit", 3, "Fitting and checking a wrapped base model (prefit=False).", api_page=False),
    Unit("dpfair.cli_assess", 5, "The `dpfair assess` command's work.", api_page=False),
    Unit("dpfair.cli", 7, "The `dpfair` command.", api_page=False),
)


def layers() -> tuple[frozenset[str], ...]:
    """The units' module names by layer, lowest first (one set per entry of :data:`LAYER_NAMES`).

    Returns
    -------
    tuple of frozenset of str
        ``layers()[k]`` holds the modules of layer ``k``.
    """
    return tuple(frozenset(u.module for u in UNITS if u.layer == k) for k in range(len(LAYER_NAMES)))


def subpackages() -> tuple[str, ...]:
    """The short names of the units that are subpackages (``"privacy"``, ``"bandits"``, ...), in reading order.

    Returns
    -------
    tuple of str
        The names under ``dpfair.`` whose unit is a folder with an ``__init__.py``.
    """
    names = (u.module.partition(".")[2] for u in UNITS if u.module != "dpfair")
    return tuple(name for name in names if (_HERE / name / "__init__.py").is_file())  # (a unit being written has none)


def api_packages() -> tuple[str, ...]:
    """The modules the API reference documents, one page each, in reading order.

    Returns
    -------
    tuple of str
        Full module names, e.g. ``("dpfair.privacy", "dpfair.base", ...)``.
    """
    return tuple(u.module for u in UNITS if u.api_page and _exists(u.module))


def _exists(module: str) -> bool:
    """Whether ``module`` (``dpfair`` or ``dpfair.name``) is an importable module or package of this checkout."""
    name = module.partition(".")[2]
    return not name or (_HERE / name / "__init__.py").is_file() or (_HERE / f"{name}.py").is_file()


def subpackage_summary() -> str:
    """The "Subpackages" section of ``dpfair.__doc__``, numpydoc style, from :data:`UNITS`.

    Returns
    -------
    str
        One entry per subpackage: its name, then its role indented.
    """
    roles = {u.module.partition(".")[2]: u.role for u in UNITS}
    lines = ["Subpackages", "-----------"]
    for name in subpackages():
        lines += [name, f"    {roles[name]}"]
    return "\n".join(lines) + "\n"
