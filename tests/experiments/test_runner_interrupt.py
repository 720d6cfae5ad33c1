"""Ctrl-C with worker processes: the run exits at once with status 130, and a rerun resumes with nothing lost."""

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

HERE = Path(__file__).parent
ENV = {
    **os.environ,
    "PYTHONPATH": f"{HERE}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
    "DPFAIR_EXPERIMENT_MODULES": "sleepy_experiment",
}
DPFAIR = [sys.executable, "-m", "dpfair.cli"]
N_TASKS = 14


def _tasks(db: Path) -> int:
    try:
        with sqlite3.connect(db) as conn:
            return conn.execute("SELECT COUNT(*) FROM tasks WHERE experiment = 'sleepy-long'").fetchone()[0]
    except sqlite3.OperationalError:
        return 0


def _runs_started(db: Path) -> int:
    try:
        with sqlite3.connect(db) as conn:
            return conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0]
    except sqlite3.OperationalError:
        return 0


def _as_in_a_terminal() -> None:
    # a shell that starts the test suite in the background may leave SIGINT ignored, and children inherit
    # that; a terminal's foreground job has the default disposition, which Python turns into KeyboardInterrupt
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.slow
@pytest.mark.processes
def test_ctrl_c_with_two_workers_exits_every_time_and_resumes(tmp_path):
    out = tmp_path / "out"
    db = out / "results.sqlite"
    cmd = [*DPFAIR, "run", "sleepy-long", "--out", str(out), "--workers", "2", "--quiet"]
    # tasks of 60 s: every interrupt lands while both workers are busy (the old pool waited for them)
    slow = {**ENV, "DPFAIR_TEST_SLEEP": "60"}
    for attempt in range(5):
        log = tmp_path / f"stderr{attempt}.txt"
        with open(log, "wb") as err:
            proc = subprocess.Popen(cmd, env=slow, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True,
                                    preexec_fn=_as_in_a_terminal)
            deadline = time.time() + 60
            while _runs_started(db) <= attempt and time.time() < deadline:
                time.sleep(0.05)
            time.sleep(0.6)
            if attempt % 2:
                os.killpg(proc.pid, signal.SIGINT)  # a terminal's Ctrl-C: the whole process group
            else:
                proc.send_signal(signal.SIGINT)  # `timeout -s INT`: the client alone
            start = time.time()
            proc.wait(timeout=15)
            waited = time.time() - start
        stderr = log.read_text()
        assert proc.returncode == 130, stderr
        assert waited < 15 and "run again to resume" in stderr and "Traceback" not in stderr
        time.sleep(0.5)
        leftover = subprocess.run(["pgrep", "-f", str(out)], capture_output=True, text=True).stdout.split()
        assert not leftover, "workers outlived the interrupted run"
    done_before = _tasks(db)
    assert done_before < N_TASKS
    rerun = subprocess.run(cmd, env={**ENV, "DPFAIR_TEST_SLEEP": "0.05"}, capture_output=True, text=True, timeout=120)
    assert rerun.returncode == 0, rerun.stderr
    assert f"{N_TASKS - done_before} task(s) run, {done_before} already done" in rerun.stdout
    assert _tasks(db) == N_TASKS
    listing = subprocess.run([*DPFAIR, "list", "--out", str(out)], env=ENV, capture_output=True, text=True, timeout=60)
    row = next(line for line in listing.stdout.splitlines() if line.startswith("sleepy-long "))
    assert "2 workers" in row and "partial" not in row, row  # the interrupted runs finished nothing: one fresh run


@pytest.mark.slow
@pytest.mark.processes
def test_a_typo_in_an_experiment_id_gets_a_suggestion():
    res = subprocess.run([*DPFAIR, "run", "fedfairx-exp", "--quick"], env=ENV, capture_output=True, text=True, timeout=60)
    assert res.returncode == 2 and "did you mean 'fedfairx-exp" in res.stderr and "gmf-census" not in res.stderr
