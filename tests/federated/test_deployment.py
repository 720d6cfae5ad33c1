"""Local Flower deployment (:mod:`dpfair.federated._deployment`): real SuperLink / SuperNode processes."""

from __future__ import annotations

import json
import os
import signal
import statistics
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

pytest.importorskip("flwr")

import pace

from dpfair.federated._deployment import LocalFederation, format_run_config

TOY_APP = Path(__file__).resolve().parent / "toy_app"


_alive = pace.alive  # a process that exists and is not a zombie


def _wait_dead(pids: set[int], timeout: float = 10.0) -> list[int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        alive = [p for p in pids if _alive(p)]
        if not alive:
            return []
        time.sleep(0.1)
    return [p for p in pids if _alive(p)]


def test_format_run_config():
    text = format_run_config({"rounds": 5, "lr": 0.5, "on": True, "name": 'a "b"', "p": Path("/x y")})
    assert text == 'rounds=5 lr=0.5 on=true name="a \\"b\\"" p="/x y"'
    with pytest.raises(TypeError):
        format_run_config({"x": [1]})
    with pytest.raises(ValueError):
        format_run_config({"a b": 1})


def test_bad_arguments(tmp_path):
    with pytest.raises(FileNotFoundError):
        LocalFederation(2, app_dir=tmp_path)
    with pytest.raises(ValueError):
        LocalFederation(2, app_dir=TOY_APP, executor="threads")
    with pytest.raises(ValueError):
        LocalFederation(2, app_dir=TOY_APP, node_configs=[{}])


@pytest.mark.slow
@pytest.mark.processes
@pytest.mark.serial
def test_round_trip_latency_and_cleanup(tmp_path):
    rounds = 15
    with LocalFederation(3, app_dir=TOY_APP, log_dir=tmp_path / "logs") as fed:
        assert set(fed.pids) == {"superlink", *(f"supernode-{i}" for i in range(3))}
        res = fed.run({"rounds": rounds, "n-nodes": 3, "result-path": str(tmp_path / "r.json")}, timeout=60)
        assert res.returncode == 0, res.stdout
        pids = fed.all_pids()
        node_pids = {fed.pids[f"supernode-{i}"] for i in range(3)}
    out = json.loads((tmp_path / "r.json").read_text())
    assert out["dropped"] == {}
    assert len(out["rounds"]) == rounds
    for r, got in enumerate(out["rounds"]):
        assert sorted(got) == ["0", "1", "2"]
        for reply in got.values():
            assert reply["count"] == r + 1  # client state persists across messages
            assert reply["sum"] == 3.0 * r
    # every message of a node ran in its SuperNode's own process (no process per message, no executor beside it)
    assert {reply["pid"] for got in out["rounds"] for reply in got.values()} == node_pids
    lat = out["latencies"]
    print(f"\nper-round latency, 3 nodes: median {statistics.median(lat) * 1e3:.1f} ms, max {max(lat) * 1e3:.1f} ms")
    assert statistics.median(lat) < 1.5  # stock Flower: ~6 s; 2 busy cores here: ~0.2-0.5 s
    # nothing it started (nor their children: superexec, serverapp) survives
    assert _wait_dead(pids) == []


# A killed SuperNode over the real app: tests/federated/test_flower_processes.py (kept once: each costs ~20-40 s).


_CHILD = textwrap.dedent(
    """
    import json, sys, time
    from dpfair.federated._deployment import LocalFederation
    with LocalFederation(2, app_dir=sys.argv[1], executor=sys.argv[3], startup_timeout=float(sys.argv[4])) as fed:
        with open(sys.argv[2] + ".tmp", "w") as fh:
            json.dump(sorted(fed.all_pids()), fh)
        import os
        os.replace(sys.argv[2] + ".tmp", sys.argv[2])
        time.sleep(120)
    """
)


@pytest.mark.slow
@pytest.mark.processes
@pytest.mark.serial
@pytest.mark.parametrize("executor", ["persistent", "flower"])
def test_ctrl_c_stops_every_process(tmp_path, executor):
    pid_file = tmp_path / "pids.json"
    limit = pace.startup_limit(5)  # a SuperLink, 2 SuperNodes and their executors, at this machine's measured pace
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(TOY_APP), str(pid_file), executor, str(limit)],
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # background shells ignore SIGINT
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + limit + 15
        while not pid_file.exists():
            assert child.poll() is None, child.stdout.read().decode()
            assert time.monotonic() < deadline
            time.sleep(0.05)
        pids = set(json.loads(pid_file.read_text()))
        assert len(pids) >= 3 and all(_alive(p) for p in pids)
        os.kill(child.pid, signal.SIGINT)
        child.wait(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode != 0  # KeyboardInterrupt
    assert _wait_dead(pids) == []
