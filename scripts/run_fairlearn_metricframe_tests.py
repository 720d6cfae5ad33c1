"""Run fairlearn's own ``MetricFrame`` tests against ``PrivateMetricFrame(epsilon=inf)`` (nothing is downloaded).

fairlearn's unit tests are not in its pip package: give the path of a fairlearn checkout (or of any folder laid out
like one: ``test/unit/metrics/test_metricframe_*.py`` with ``data_for_test.py``, ``utils.py`` and
``test/unit/input_convertors.py``).  The tests are copied to a temporary folder (never into this repository) and
run with ``scripts/fairlearn_metricframe_shim.py``, which replaces ``fairlearn.metrics.MetricFrame`` by a thin
wrapper building ``PrivateMetricFrame(..., epsilon=inf)`` from what a fairlearn user passes.  The counts and every
failing test are printed; the exit status is pytest's.

Usage::

    .venv/bin/python scripts/run_fairlearn_metricframe_tests.py /path/to/fairlearn [extra pytest arguments]
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HELPERS = ("data_for_test.py", "utils.py", "sample_loader.py", "__init__.py")


def copy_tests(checkout: Path, target: Path) -> list[str]:
    """Copy the MetricFrame tests and the helpers they import into ``target``; return the test files' names."""
    source = checkout / "test" / "unit" / "metrics"
    tests = sorted(p.name for p in source.glob("test_metricframe_*.py"))
    if not tests:
        raise SystemExit(f"no test/unit/metrics/test_metricframe_*.py under {checkout}: give a fairlearn checkout.")
    metrics_dir = target / "test" / "unit" / "metrics"
    metrics_dir.mkdir(parents=True)
    for name in tests + [h for h in HELPERS if (source / h).exists()]:
        shutil.copy(source / name, metrics_dir / name)
    for package in (target / "test", target / "test" / "unit", metrics_dir):
        (package / "__init__.py").touch()
    convertors = checkout / "test" / "unit" / "input_convertors.py"
    if convertors.exists():
        shutil.copy(convertors, target / "test" / "unit" / "input_convertors.py")
    return tests


def main(argv: list[str]) -> int:
    """Copy, run with the shim, and report."""
    if not argv:
        print(__doc__)
        return 2
    checkout = Path(argv[0]).resolve()
    shim_dir = Path(__file__).resolve().parent
    with tempfile.TemporaryDirectory(prefix="fairlearn_mf_tests_") as folder:
        tests = copy_tests(checkout, Path(folder))
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(shim_dir), folder, os.environ.get("PYTHONPATH", "")])}
        command = [sys.executable, "-m", "pytest", "-p", "fairlearn_metricframe_shim", "-p", "no:cacheprovider",
                   "-q", "-rf", "--rootdir", folder, "test/unit/metrics", *argv[1:]]
        print(f"running {len(tests)} files: {', '.join(tests)}", flush=True)
        return subprocess.call(command, cwd=folder, env=env)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
