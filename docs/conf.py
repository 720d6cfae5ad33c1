"""Sphinx configuration for dpfair's documentation (``make docs``).

Generated, git-ignored output: ``api/generated/`` (API pages and autosummary stubs),
``auto_examples/`` (the gallery), ``_generated/`` (CONTRIBUTING.md as RST), ``_build/``.

Environment variables
---------------------
DPFAIR_DOCS_GALLERY_PATTERN
    Regular expression for the example file names the gallery builds and runs (default
    ``plot_``, matched at the start of the file name), e.g. ``plot_getting_started`` to
    build only that example while others are being written.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

os.environ.setdefault("MPLBACKEND", "Agg")

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(DOCS / "sphinxext"))

import dpfair_docs  # noqa: E402

import dpfair  # noqa: E402

# -- Project ------------------------------------------------------------------------------
project = "dpfair"
author = "the dpfair developers"
copyright = "the dpfair developers"
release = dpfair.__version__
version = ".".join(release.split(".")[:2])

# -- General ------------------------------------------------------------------------------
extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
    "matplotlib.sphinxext.plot_directive",
]
templates_path = ["_templates"]
exclude_patterns = ["_build", "_generated", "sphinxext", "**.ipynb_checkpoints", "auto_examples/*.ipynb"]
root_doc = "index"
default_role = "literal"
suppress_warnings: list[str] = []

# -- Generated sources --------------------------------------------------------------------
# One API page per public subpackage, listing its __all__ (regenerated on every build).
API_PAGES = dpfair_docs.write_api_pages(DOCS / "api" / "generated")
# CONTRIBUTING.md (the single source of the estimator contract) as RST, for contributing.rst.
(DOCS / "_generated").mkdir(exist_ok=True)
_contributing = dpfair_docs.contributing_to_rst((ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8"))
_target = DOCS / "_generated" / "contributing.rst"
if not _target.exists() or _target.read_text(encoding="utf-8") != _contributing:
    _target.write_text(_contributing, encoding="utf-8")

# -- autodoc / autosummary / numpydoc -----------------------------------------------------
autosummary_generate = True
autosummary_imported_members = True
autodoc_default_options = {"member-order": "bysource"}
autodoc_typehints = "none"  # numpydoc's Parameters sections carry the types
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_attributes_as_param_list = True
# Every numpydoc check except the three that only ask for more text (EX01 Examples, SA01 See
# Also, ES01 extended summary) -- the same set scripts/docstring_report.py reports.  The public
# API is clean, so with -W a new docstring problem fails `make docs`.  Not validated: private
# names, scikit-learn's generated ``set_*_request`` methods, and data documented with ``#:``
# comments (UPPER_CASE module constants, the ``NoiseSource.secure`` flag), which numpydoc's
# function/class checks do not fit.
numpydoc_validation_checks = {"all", "EX01", "SA01", "ES01"}
numpydoc_validation_exclude = {
    r"\._\w+$",
    r"\.set_\w+_request$",
    r"\.[A-Z][A-Z0-9_]*$",
    r"Noise(Source)?\.secure$",
}

# -- sphinx-gallery -----------------------------------------------------------------------
_pattern = os.environ.get("DPFAIR_DOCS_GALLERY_PATTERN", "plot_")
sphinx_gallery_conf = {
    "examples_dirs": str(ROOT / "examples"),
    "gallery_dirs": "auto_examples",
    # build and run examples whose file name starts with the pattern; skip everything else
    # (e.g. examples/privacy_core_demo.py, a console demo for `make privacy-demo`)
    "filename_pattern": re.escape(os.sep) + _pattern,
    "ignore_pattern": rf"^(?!{_pattern})|__init__\.py",
    "reset_modules": ("matplotlib", "dpfair_docs.gallery_guard"),
    "download_all_examples": False,
    "remove_config_comments": True,
    "min_reported_time": 0,
    "within_subsection_order": "FileNameSortKey",
    "image_scrapers": ("matplotlib",),
    "matplotlib_animations": False,
    "doc_module": ("dpfair",),
    "backreferences_dir": None,
    "show_memory": False,
    "plot_gallery": "True",
}

# -- plot directive (figures on the user-guide pages) -------------------------------------
plot_include_source = True
plot_html_show_source_link = False
plot_html_show_formats = False
plot_formats = [("png", 110)]
plot_rcparams = {"figure.figsize": (7.0, 3.2), "figure.dpi": 110}

# -- HTML ---------------------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = f"dpfair {release}"
html_static_path: list[str] = []
html_theme_options = {
    "navbar_align": "left",
    "show_toc_level": 2,
    "navigation_with_keys": False,
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version", "theme-version"],
}
html_sidebars = {"getting_started": [], "contributing": []}
html_show_sourcelink = False


def setup(app):
    app.connect("autodoc-skip-member", dpfair_docs.skip_member)
    app.connect("autodoc-process-docstring", dpfair_docs.escape_docstring_bars)
    app.connect("build-finished", dpfair_docs.report_example_times)
