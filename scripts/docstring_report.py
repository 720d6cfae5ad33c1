"""List numpydoc problems in the docstrings of dpfair's public API (the names the docs render).

Usage: ``.venv/bin/python scripts/docstring_report.py [--all]``

Checks every name in the ``__all__`` of the documented subpackages, and the public methods and
properties of public classes, with ``numpydoc.validate``.  Prints ``file:line  name  CODE  message``
and exits 1 when there is a problem.  By default three checks that ask for *more* text (an
"Examples" section EX01, "See Also" SA01, an extended summary ES01) are left out; ``--all`` keeps them.
The docs build enables the same checks (``numpydoc_validation_checks`` in ``docs/conf.py``), so a
problem also fails ``make docs``; this report lists them all at once, with file and line.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import sys
import warnings
from pathlib import Path

from numpydoc.validate import validate

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "docs" / "sphinxext"))
from dpfair_docs import API_PACKAGES

OPTIONAL = {"EX01", "SA01", "ES01"}


def public_paths() -> list[str]:
    paths = []
    for package in API_PACKAGES:
        module = importlib.import_module(package)
        for name in module.__all__:
            obj = getattr(module, name)
            if not (inspect.isclass(obj) or callable(obj)):
                continue
            home = f"{obj.__module__}.{obj.__qualname__}"
            paths.append(home)
            if inspect.isclass(obj):
                for member, value in vars(obj).items():
                    if member.startswith("_") or member.endswith("_request"):
                        continue
                    if inspect.isfunction(value) or isinstance(value, property | classmethod | staticmethod):
                        paths.append(f"{home}.{member}")
    return sorted(set(paths))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--all", action="store_true", help="also report EX01, SA01 and ES01")
    args = parser.parse_args()
    n_problems = 0
    for path in public_paths():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = validate(path)
        where = f"{result.get('file') or '?'}:{result.get('file_line') or '?'}"
        root = str(Path(__file__).resolve().parents[1]) + "/"
        where = where.replace(root, "")
        for code, message in result["errors"]:
            if code in OPTIONAL and not args.all:
                continue
            n_problems += 1
            print(f"{where}  {path}  {code}  {message}")
    print(f"{n_problems} problem(s)", file=sys.stderr)
    return 1 if n_problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
