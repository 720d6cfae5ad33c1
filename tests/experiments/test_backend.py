"""import dpfair.experiments leaves matplotlib's backend alone; the report still draws off-screen (a library must not switch
the backend of the program that imports it)."""

import os
import subprocess
import sys

import pytest

_ENV = {k: v for k, v in os.environ.items() if k != "MPLBACKEND"}  # nothing chosen by the environment


def _python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], env=_ENV, capture_output=True, text=True, timeout=300)


@pytest.mark.slow
@pytest.mark.processes
@pytest.mark.parametrize("requested", [None, "TkAgg"])
def test_import_and_registry_leave_the_backend_alone(requested):
    """An interactive backend a user asked for (or matplotlib's automatic choice) survives the import."""
    use = f"matplotlib.use({requested!r});" if requested else ""
    code = (
        "import sys, matplotlib; " + use + "before = dict.__getitem__(matplotlib.rcParams, 'backend');"
        "import dpfair.experiments; dpfair.experiments.all_specs();"  # every experiment module, too
        "after = dict.__getitem__(matplotlib.rcParams, 'backend');"
        "assert after is before or after == before, (before, after);"
        "assert 'matplotlib.pyplot' not in sys.modules, 'pyplot imported (it would resolve the backend)';"
        "print('ok', before if isinstance(before, str) else 'auto')"
    )
    res = _python(code)
    assert res.returncode == 0 and res.stdout.split() == ["ok", requested or "auto"], res.stderr[-2000:]


@pytest.mark.slow
@pytest.mark.processes
def test_report_draws_with_agg_and_gives_the_backend_back(tmp_path):
    code = (
        "import matplotlib; matplotlib.use('svg'); import dpfair.experiments, dpfair.experiments.report as r;"
        "assert matplotlib.get_backend() == 'svg', matplotlib.get_backend();"
        "r.build_report(r'" + str(tmp_path) + "');"
        "assert matplotlib.get_backend() == 'svg', matplotlib.get_backend(); print('ok')"
    )
    res = _python(code)
    assert res.returncode == 0 and res.stdout.strip() == "ok", res.stderr[-2000:]
    assert (tmp_path / "report" / "index.html").exists()
