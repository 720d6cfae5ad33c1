"""Local Flower deployment (:mod:`dpfair.federated._deployment`): real SuperLink / SuperNode processes.

The checks that need only a running deployment of the toy app share one federation of five SuperNodes
(:func:`toy_federation`, a start-up of eleven processes paid once): the Ctrl-C tests run beside it (and check
that it survives them) while it goes idle; idle, it uses under 5 % of a CPU; then the round-trip test runs on it
and stops it, checking that nothing it started survives.
"""

from __future__ import annotations

import json
import math
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

from dpfair.federated import _executor
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


def _cpu_seconds(pids: set[int]) -> float:
    total, tick = 0.0, os.sysconf("SC_CLK_TCK")
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError):
            continue
        total += (int(fields[11]) + int(fields[12])) / tick  # utime + stime
    return total


@pytest.fixture(scope="module")
def _toy_federations():
    started: dict[LocalFederation, float] = {}  # each federation started, and when its start-up ended
    yield started
    for fed in started:
        fed.stop()


@pytest.fixture
def toy_federation(_toy_federations, tmp_path_factory) -> LocalFederation:
    """The module's running federation of the toy app with five SuperNodes, started when none is running (the first
    user, or the one after a test that stopped it); stopped at the module's end."""
    fed = next(reversed(_toy_federations), None)
    if fed is None or fed.processes["superlink"].poll() is not None:
        fed = LocalFederation(5, app_dir=TOY_APP, log_dir=tmp_path_factory.mktemp("toy-federation") / "logs")
        _toy_federations[fed] = math.inf
        fed.start()
        _toy_federations[fed] = time.monotonic()
    return fed


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
def test_ctrl_c_stops_every_process(tmp_path, executor, toy_federation):
    """Ctrl-C of a federation's owner stops every process it started, and none of another federation on the machine
    (the module's shared one, idling beside it until its idle check)."""
    others = toy_federation.all_pids()
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
    assert not pids & others and [p for p in others if not _alive(p)] == []


@pytest.mark.slow
@pytest.mark.processes
@pytest.mark.serial
def test_an_idle_federation_uses_under_5_percent_of_a_cpu(toy_federation, _toy_federations):
    """Five SuperNodes with their executors and the SuperLink, idle: the best of a few 4 s windows once past the
    backoff threshold (the start-up's imports end at different times on a loaded machine; a busy poll never dips).
    No message has reached it since its start-up ended (the Ctrl-C tests ran beside it): it has been idle since."""
    fed = toy_federation
    time.sleep(max(0.0, _toy_federations[fed] + _executor.LONG_IDLE_AFTER + 2.0 - time.monotonic()))
    pids = fed.all_pids()
    assert len([name for name in fed.pids if name.startswith("supernode-")]) == 5
    windows = []
    for _ in range(4):
        before, start = _cpu_seconds(pids), time.monotonic()
        time.sleep(4.0)
        windows.append((_cpu_seconds(pids) - before) / (time.monotonic() - start))
        if windows[-1] < 0.05:
            break
    print(f"\nidle federation of 5 SuperNodes: {', '.join(f'{100 * w:.1f}' for w in windows)} % of a CPU")
    assert min(windows) < 0.05


@pytest.mark.slow
@pytest.mark.processes
@pytest.mark.serial
def test_round_trip_latency_and_cleanup(tmp_path, toy_federation):
    """15 rounds on the shared federation (after its idle check), then its stop: nothing it started survives."""
    rounds, fed = 15, toy_federation
    nodes = [str(i) for i in range(fed.n_nodes)]
    try:
        assert set(fed.pids) == {"superlink", *(f"supernode-{i}" for i in nodes)}
        res = fed.run({"rounds": rounds, "n-nodes": len(nodes), "result-path": str(tmp_path / "r.json")}, timeout=60)
        assert res.returncode == 0, res.stdout
        pids = fed.all_pids()
        node_pids = {fed.pids[f"supernode-{i}"] for i in nodes}
    finally:
        fed.stop()  # the shared federation's last user: its stop is checked below
    out = json.loads((tmp_path / "r.json").read_text())
    assert out["dropped"] == {}
    assert len(out["rounds"]) == rounds
    for r, got in enumerate(out["rounds"]):
        assert sorted(got) == nodes
        for reply in got.values():
            assert reply["count"] == r + 1  # client state persists across messages
            assert reply["sum"] == 3.0 * r
    # every message of a node ran in its SuperNode's own process (no process per message, no executor beside it)
    assert {reply["pid"] for got in out["rounds"] for reply in got.values()} == node_pids
    lat = out["latencies"]
    print(f"\nper-round latency, {len(nodes)} nodes: median {statistics.median(lat) * 1e3:.1f} ms, max {max(lat) * 1e3:.1f} ms")
    assert statistics.median(lat) < 1.5  # stock Flower: ~6 s; 2 busy cores here: ~0.2-0.5 s
    # nothing it started (nor their children: superexec, serverapp) survives
    assert _wait_dead(pids) == []


# A killed SuperNode over the real app: tests/federated/test_flower_processes.py (kept once: each costs ~20-40 s).
