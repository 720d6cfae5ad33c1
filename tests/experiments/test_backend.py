"""import dpfair.experiments leaves matplotlib's backend alone; the report still draws off-screen (issue 22)."""

import os
import subprocess
import sys


def test_import_leaves_the_backend_and_report_restores_it(tmp_path):
    code = (
        "import matplotlib; matplotlib.use('svg'); import dpfair.experiments, dpfair.experiments.report as r;"
        "assert matplotlib.get_backend() == 'svg', matplotlib.get_backend();"
        "r.build_report(r'" + str(tmp_path) + "');"
        "assert matplotlib.get_backend() == 'svg', matplotlib.get_backend(); print('ok')"
    )
    env = {k: v for k, v in os.environ.items() if k != "MPLBACKEND"}
    res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0 and res.stdout.strip() == "ok", res.stderr[-2000:]
    assert (tmp_path / "report" / "index.html").exists()
