"""Processes die with their owner, the fast path turns itself off visibly, and a run that runs out of time fails
in one line with its partial result saved.  (An idle federation does not poll a CPU away: test_deployment.py, on
the federation its round-trip test shares.)  ``make test`` runs this file's serial tests on a worker of their own
beside the first of the other serial tests (tests/conftest.py): their checks are this file's own processes and
limits (a killed owner's processes gone within 15 s, a run that cannot finish in 6 s), not the machine's pace."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

pytest.importorskip("flwr")

import flwr
import pace

from dpfair.federated import _executor, demo
from dpfair.federated._deployment import LocalFederation

TOY_APP = Path(__file__).resolve().parent / "toy_app"


_alive = pace.alive  # a process that exists and is not a zombie


# ------------------------------------------------------------------------------------------ version policy
@pytest.mark.parametrize(
    ("version", "supported"),
    [("1.41.0", True), ("1.41.7", True), ("1.42.0", False), ("1.40.1", False), ("2.0.0", False), ("nightly", False)],
)
def test_the_supported_range(monkeypatch, version, supported):
    monkeypatch.setattr(flwr, "__version__", version)
    problems = _executor.fast_path_problems()
    assert (not problems) is supported, problems
    if not supported:
        assert "outside the supported range >=1.41,<1.42" in problems[0]


def test_the_fast_path_turns_itself_off_visibly_outside_the_range(monkeypatch, tmp_path):
    monkeypatch.setattr(flwr, "__version__", "1.42.0")
    with pytest.warns(RuntimeWarning, match="fast executor is OFF .*flwr 1.42.0"):
        fed = LocalFederation(2, app_dir=TOY_APP, log_dir=tmp_path)
    assert fed.executor == "flower" and "1.42.0" in fed.fast_path_off
    with pytest.raises(RuntimeError, match="use executor='flower'"):
        _executor.PersistentClientAppExecutor("127.0.0.1:1")
    assert not _executor.speed_up_object_pulls()
    monkeypatch.setattr(flwr, "__version__", "1.41.0")
    assert LocalFederation(2, app_dir=TOY_APP, log_dir=tmp_path).executor == "persistent"


def test_a_missing_internal_turns_the_fast_path_off(monkeypatch):
    import flwr.supernode.runtime.run_clientapp as rc

    monkeypatch.delattr(rc, "push_task_output")
    assert any("push_task_output" in p for p in _executor.fast_path_problems())


# ------------------------------------------------------------------------------------------ the time limit
class _Handle:
    def __init__(self, tmp_path: Path, lines: str) -> None:
        self.log_path = tmp_path / "run.log"
        self.log_path.write_text(lines)
        self.process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)

    def wait(self, timeout=None):
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise TimeoutError("killed") from None


def test_an_explicit_time_limit_ends_the_run_in_one_line(tmp_path):
    handle = _Handle(tmp_path, "")
    start = time.monotonic()
    why = demo._watch(handle, 100, 1.0, {"round-timeout": 30.0, "start-timeout": 60.0}, lambda _line: None)
    # the limit is 1 s; the child sleeps 60 s: anything well below 60 s shows the limit ended it (30 s: robust under load)
    assert time.monotonic() - start < 30 and handle.process.poll() is not None
    assert "did not finish within 1 s (limit from --timeout)" in why and "\n" not in why


def test_the_derived_limit_follows_the_measured_pace(tmp_path, monkeypatch):
    """No --timeout: rounds left x measured seconds per round x 3 + slack (zeroed here), from the progress lines."""
    monkeypatch.setattr(demo, "_SLACK", 0.0)
    handle = _Handle(tmp_path, "INFO : dpfair: round 4 of 10, message round 2 of about 10 (0.050 s each)\n")
    start = time.monotonic()
    why = demo._watch(handle, 10, None, {"round-timeout": 0.1, "start-timeout": 60.0}, lambda _line: None)
    # 8 rounds left x 0.05 s x 3 + 2 x 0.1 s = 1.4 s, not the 60 s start-up allowance (30 s: robust under load)
    assert time.monotonic() - start < 30
    assert "10 message rounds x 0.050 s measured x 3" in why and "--timeout" in why


# ------------------------------------------------------------------------------------------ processes
_OWNER = textwrap.dedent(
    """
    import json, os, sys, time
    from dpfair.federated._deployment import LocalFederation
    fed = LocalFederation(2, app_dir=sys.argv[1], executor=sys.argv[3], startup_timeout=float(sys.argv[4])).start()
    fed.record_result(sys.argv[2] + ".result.json")  # as the demo records its run's result
    with open(sys.argv[2] + ".tmp", "w") as fh:
        json.dump({"pids": sorted(fed.all_pids()), "home": str(fed.flwr_home)}, fh)
    os.replace(sys.argv[2] + ".tmp", sys.argv[2])
    time.sleep(300)
    """
)


@pytest.mark.processes
@pytest.mark.serial
@pytest.mark.slow
@pytest.mark.parametrize("executor", ["persistent", "flower"])
def test_sigkill_of_the_owner_leaves_no_flower_process(tmp_path, executor):
    info_file = tmp_path / "info.json"
    limit = pace.startup_limit(5)  # a SuperLink, 2 SuperNodes and their executors, at this machine's measured pace
    owner = subprocess.Popen(
        [sys.executable, "-c", _OWNER, str(TOY_APP), str(info_file), executor, str(limit)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + limit + 15
        while not info_file.exists():
            assert owner.poll() is None and time.monotonic() < deadline
            time.sleep(0.1)
        info = json.loads(info_file.read_text())
        pids, home = set(info["pids"]), Path(info["home"])
        assert len(pids) >= 3 and all(_alive(p) for p in pids) and home.is_dir()
        owner.kill()  # SIGKILL: no finally, no atexit
        owner.wait()
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and (any(_alive(p) for p in pids) or home.exists()):
            time.sleep(0.2)
        assert [p for p in pids if _alive(p)] == []
        assert not home.exists()
        deadline = time.monotonic() + 10
        result = Path(str(info_file) + ".result.json")
        while time.monotonic() < deadline and not result.exists():
            time.sleep(0.2)
        saved = json.loads(result.read_text())  # the killed owner's run says why it ended
        assert saved["status"] == "failed" and f"(pid {owner.pid}) ended before the run did" in saved["failed"]
    finally:
        if owner.poll() is None:
            owner.kill()
        for pid in info.get("pids", []) if info_file.exists() else []:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)


@pytest.mark.slow
@pytest.mark.processes
@pytest.mark.serial
def test_a_run_out_of_time_fails_in_one_line_and_keeps_its_partial_result(tmp_path):
    """``dpfair federated demo --timeout``: T = 2000 at d = 5 is 2,000 message rounds (>= 100 s even at 50 ms
    each), 6 s cannot hold it: one FAILED line, exit status 1, the partial result saved, no process left."""
    from typer.testing import CliRunner

    from dpfair.cli import app

    started: dict[str, set[int]] = {}
    res = CliRunner().invoke(
        app, ["federated", "demo", "--agents", "3", "--horizon", "2000", "--timeout", "6", "--out", str(tmp_path)]
    )
    assert res.exit_code == 1, res.output
    failed = [line for line in res.output.splitlines() if line.startswith("FAILED: ")]
    assert len(failed) == 1 and "did not finish within 6 s (limit from --timeout)" in failed[0], res.output
    assert "Traceback" not in res.output
    saved = json.loads((tmp_path / "result.json").read_text())
    assert saved["completed"] is False and saved["failed"] in failed[0] and saved["rounds_played"] < 2000
    assert saved["status"] == "failed"
    logs = tmp_path / "logs"
    started["pids"] = {
        int(line.split()[-1].rstrip(")"))
        for line in (logs / "supernode-0.log").read_text().splitlines()
        if "[dpfair executor] ClientApps run in the SuperNode" in line
    }
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and any(_alive(p) for p in started["pids"]):
        time.sleep(0.2)
    assert started["pids"] and [p for p in started["pids"] if _alive(p)] == []


# The demo's defaults with secure noise over real processes: test_flwr_commands.py's `flwr run .` (Priv-FairX-LinUCB,
# secure noise); its exit status 0: test_runs_and_data.py.
