"""Flower's own commands run the bundled app from an install: ``flwr run .`` in the app's folder and ``flwr run APP
local --federation-config ...`` (a fresh ``FLWR_HOME``: Flower's managed local SuperLink and its Simulation Engine).
The third form, ``flwr run`` to a deployment, and a failing ServerApp recorded as failed (``flwr ls``) with a result
that says why, are ``test_deployment_docs.py`` (on its deployment: a process start, where a failing run here costs a
Ray start).  One managed SuperLink serves the two runs; the test stops it (and everything below it) at the end, since
Flower keeps it running by design.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("flwr")

import pace

from dpfair.federated import app_dir, format_run_config
from dpfair.federated._reaper import _descendants, identity, signal_if_same

pytestmark = pytest.mark.skipif(importlib.util.find_spec("ray") is None,
                                reason='flwr run with a local connection needs pip install "dpfair[simulation]"')


def _managed_superlinks(home: Path) -> list[int]:
    marker = os.fsencode(str(home / "local-superlink"))
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit() and (who := identity(int(name))) is not None and marker in who.cmdline:
            found.append(int(name))
    return found


@pytest.mark.slow
@pytest.mark.processes
@pytest.mark.serial
def test_flwr_run_forms_complete(tmp_path):
    home = tmp_path / "flwr-home"
    env = {**os.environ, "FLWR_HOME": str(home), "FLWR_TELEMETRY_ENABLED": "0",
           "PATH": str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", "")}
    limit = pace.startup_limit(6)  # Flower's managed SuperLink, Ray and its actors, at this machine's pace

    def flwr(*args: str, cwd: Path | None = None) -> str:
        done = subprocess.run(["flwr", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=3 * limit + 120)
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout + done.stderr

    def run_config(name: str, **overrides: object) -> str:
        settings = {"n-agents": 2, "horizon": 4, "learner": "fed", "round-timeout": round(pace.fast_round_limit(), 1),
                    "start-timeout": round(limit, 1), "result-path": str(tmp_path / f"{name}.json"),
                    "metrics-dir": str(tmp_path / f"{name}-metrics"), **overrides}
        return format_run_config(settings)

    tree: set[int] = set()
    try:
        # 1. `flwr run .` in the app's folder, Priv-FairX-LinUCB with secure noise (the default: its noise source
        # pickles as a new secure source in the agent's context.state, which Flower moves with every message)
        out = flwr("run", ".", "--stream", "--federation-config", "num-supernodes=2", "--run-config",
                   run_config("dot", learner="priv"), cwd=app_dir())
        assert "dpfair: completed" in out, out
        saved = json.loads((tmp_path / "dot.json").read_text())
        spent = saved["learners"]["priv-bounded-gap"]["privacy_spent"]
        assert saved["status"] == "completed" and set(spent) == {"0", "1"}
        assert all(s["noise"] != "seeded" and s["epsilon"] == 2.0 for s in spent.values())
        # 2. `flwr run APP local --federation-config ...`, as the deployment page writes it
        out = flwr("run", str(app_dir()), "local", "--stream", "--federation-config",
                   "num-supernodes=2 client-resources-num-cpus=1 init-args-num-cpus=2", "--run-config",
                   run_config("local", epsilon=float("inf")))
        saved = json.loads((tmp_path / "local.json").read_text())
        assert saved["status"] == "completed" and saved["rounds_played"] == 4, out
        assert not list(app_dir().glob("dpfair-results*")), "a run wrote into the app's source folder"
    finally:
        links = _managed_superlinks(home)
        for pid in links:
            tree |= {pid, *_descendants([pid])}
        who = {pid: w for pid in tree if (w := identity(pid)) is not None}
        for record in who.values():
            signal_if_same(record, signal.SIGTERM)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and any(identity(p) == w for p, w in who.items()):
            time.sleep(0.2)
        for record in who.values():
            signal_if_same(record, signal.SIGKILL)
    assert links, "no managed SuperLink was started"
    assert [p for p, w in who.items() if identity(p) == w] == []
