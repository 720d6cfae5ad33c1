"""The bundled app on Flower's Simulation Engine (``executor="simulation"``, ``dpfair federated demo
--simulation``): Flower's own settings bound Ray's resources, an agent whose messages hop between Ray actors
continues exactly like the simulator, a seeded simulation run plays the simulator's actions, and nothing it
started (Ray included) outlives it or a SIGKILL of its owner."""

from __future__ import annotations

import importlib.util
import json
import math
import os
import signal
import subprocess
import sys
import textwrap
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("flwr")

import pace
from flower_inprocess import InProcessGrid

from dpfair.bandits import FederatedSyntheticEnvironment, FedFairXLinUCB, PrivFairXLinUCB, simulate_federated
from dpfair.federated import LocalFederation, app_dir, apps, run_demo
from dpfair.federated import _simulation as simulation

HAS_RAY = importlib.util.find_spec("ray") is not None
needs_ray = pytest.mark.skipif(not HAS_RAY, reason='Flower\'s Simulation Engine needs pip install "dpfair[simulation]"')
M, SEED = 3, 4


_alive = pace.alive  # a process that exists and is not a zombie


def _wait_dead(pids: set[int], timeout: float = 15.0) -> list[int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.2)
    return sorted(p for p in pids if _alive(p))


# ------------------------------------------------------------------------------------------ settings
@needs_ray
def test_the_federation_config_is_flowers_own_simulation_config_with_bounded_resources():
    """The ``--federation-config`` string parses with flwr's own parser into its ``SimulationConfig``: one CPU per
    virtual SuperNode's task, Ray limited to ``min(2, cpus)`` CPUs, no GPU."""
    from flwr.common.config import parse_config_args
    from flwr.supercore.utils import simulation_config_from_json

    settings = simulation.SimulationSettings.for_nodes(100)
    fields = {k.replace("-", "_"): v for k, v in parse_config_args([settings.federation_config()]).items()}
    config = simulation_config_from_json(fields)
    assert config.num_supernodes == 100 and config.backend == "ray"
    assert config.client_resources_num_cpus == 1 and config.client_resources_num_gpus == 0.0
    assert config.init_args_num_cpus == min(2, os.cpu_count() or 1) and config.init_args_num_gpus == 0
    assert simulation.SimulationSettings.for_nodes(5, 1).federation_config().count("init-args-num-cpus=1") == 1
    with pytest.raises(ValueError, match="simulation_cpus must be a positive integer"):
        simulation.SimulationSettings.for_nodes(5, 0)


def test_without_ray_the_simulation_is_refused_naming_the_install(monkeypatch, tmp_path):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "ray" else real(name, *a))
    with pytest.raises(ImportError, match=r'pip install "dpfair\[simulation\]"'):
        LocalFederation(2, app_dir=app_dir(), executor="simulation")
    with pytest.raises(ImportError, match=r'pip install "dpfair\[simulation\]"'):
        run_demo(2, 10, executor="simulation", out=tmp_path)
    assert not (tmp_path / "logs").exists()
    with pytest.raises(ValueError, match="executor must be 'persistent', 'flower' or 'simulation'"):
        run_demo(2, 10, executor="ray", out=tmp_path)


# ------------------------------------------------------------------------------------------ agents on many actors
def _config(tmp_path, extra, horizon):
    return {"horizon": horizon, "n-agents": M, "seed": SEED, "metrics-dir": str(tmp_path / "metrics"),
            "round-timeout": 0.3, "start-timeout": 1.0, "result-path": "", **extra}


@pytest.mark.parametrize("protocol", ["bounded-gap", "p-fcb"])
def test_an_agent_whose_messages_hop_between_actors_continues_like_the_simulator(tmp_path, monkeypatch, protocol):
    """Two actor processes, each with its own in-process copies of the agents, receive an agent's messages in a
    random order (as Ray schedules them): a copy is used only when it is the agent's latest ``context.state``.
    (Trusting any copy replays a stale agent: the round check refuses it and the agent is dropped.)"""
    actors = [{}, {}]
    rng = np.random.default_rng(0)
    config = _config(tmp_path, {"learner": "priv", "protocol": protocol, "random-state": 3, "dim": 2}, 40)
    grid = InProcessGrid(config, M)

    def on_some_actor(node, message):
        monkeypatch.setattr(apps, "_AGENTS", actors[int(rng.integers(2))])
        return message

    grid.tamper = on_some_actor
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = apps._serve(grid, config)
        learner = PrivFairXLinUCB(2.0, 0.1, math.sqrt(2), protocol, random_state=3)
        reference = simulate_federated(FederatedSyntheticEnvironment(dim=2), {"priv": learner}, 40, M, [SEED],
                                       record_actions=True)
    assert result["completed"] and not result["errors"] and not result["dropped"]
    assert all(actors), "both actors served messages"
    for i in range(M):
        got = np.load(tmp_path / "metrics" / f"agent-{i}.npz")[f"priv-{protocol}:actions"]
        np.testing.assert_array_equal(got, reference.actions[0, 0, i])


# ------------------------------------------------------------------------------------------ real processes
@needs_ray
@pytest.mark.slow
@pytest.mark.processes
@pytest.mark.serial
def test_the_simulation_engine_reproduces_the_simulator_and_leaves_no_process(tmp_path):
    """``run_demo(executor="simulation")``: Flower's stock ``flower-superlink --simulation``, Ray actors as the
    virtual SuperNodes; seeded, the same actions, regrets, synchronizations and ``privacy_spent`` as
    ``simulate_federated``; then no process it started (Ray's included) and no Ray session folder is left."""
    T, dim = 40, 1
    seen: set[int] = set()
    ray_tmp: dict[str, Path] = {}

    def watch(federation):
        ray_tmp["path"] = federation._ray_tmp

        def collect():
            while federation.processes.get("superlink") is not None and federation.processes["superlink"].poll() is None:
                seen.update(federation.all_pids())
                time.sleep(0.5)

        import threading

        threading.Thread(target=collect, daemon=True).start()

    result = run_demo(M, T, learners="fed:bounded-gap,priv:p-fcb", random_state=3, seed=SEED, out=tmp_path,
                      executor="simulation", extra_config={"dim": dim}, on_start=watch)
    if result.failure and "Ray's node did not start" in result.failure:  # Ray's own 30 s, not a setting
        pytest.skip(f"{result.failure}; load average {os.getloadavg()}")
    assert result.failure is None and result.server["completed"] and not result.server["dropped"], result.server
    env = FederatedSyntheticEnvironment(dim=dim)
    learners = {"fed-bounded-gap": FedFairXLinUCB("bounded-gap"),
                "priv-p-fcb": PrivFairXLinUCB(2.0, 0.1, math.sqrt(dim), "p-fcb", random_state=3)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reference = simulate_federated(env, learners, T, M, [SEED], record_actions=True)
    for i, label in enumerate(learners):
        for agent in range(M):
            np.testing.assert_array_equal(result.actions[label][agent], reference.actions[i, 0, agent])
        np.testing.assert_allclose(result.fair_regret[label], reference.fair_regret[i, 0], rtol=0, atol=1e-9)
        entry = result.server["learners"][label]
        assert entry["communication_rounds"] == reference.communication_rounds[i, 0]
        assert entry["privacy_spent"]["1"] == reference.privacy_spent[label]
    log = (tmp_path / "logs" / "run-1.log").read_text()
    assert "3 simulated SuperNodes" in log and "ClientAppActor" in log  # Flower's Simulation Engine ran it
    assert any(_cmdline(p).startswith("ray::") for p in seen if _cmdline(p)) or "ClientAppActor pid=" in log
    assert _wait_dead(seen) == []
    assert not ray_tmp["path"].exists()


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


_OWNER = textwrap.dedent(
    """
    import json, os, sys, time
    from dpfair.federated import LocalFederation, app_dir
    fed = LocalFederation(2, app_dir=app_dir(), executor="simulation", log_dir=sys.argv[2]).start()
    fed.submit({"n-agents": 2, "horizon": 2000, "random-state": 1, "result-path": "", "metrics-dir": "",
                "start-timeout": float(sys.argv[3])})
    while "2 of 2 agents joined" not in (fed.log_dir / "run-1.log").read_text(errors="replace"):
        time.sleep(0.2)
    time.sleep(1.0)
    with open(sys.argv[1] + ".tmp", "w") as fh:
        json.dump({"pids": sorted(fed.all_pids()), "homes": [str(fed.flwr_home), str(fed._ray_tmp)]}, fh)
    os.replace(sys.argv[1] + ".tmp", sys.argv[1])
    time.sleep(600)
    """
)


@needs_ray
@pytest.mark.slow
@pytest.mark.processes
@pytest.mark.serial
def test_sigkill_of_a_simulations_owner_leaves_no_flower_or_ray_process(tmp_path):
    """Mid-run (Ray's daemons and actors up), SIGKILL the owner: within 15 s no process it started, directly or
    through Flower and Ray, is alive, and ``FLWR_HOME`` and Ray's session folder are gone (the reaper)."""
    info_file = tmp_path / "info.json"
    limit = pace.startup_limit(8)  # the SuperLink, its SuperExec, flwr-simulation, Ray's daemons and actors
    owner = subprocess.Popen([sys.executable, "-c", _OWNER, str(info_file), str(tmp_path / "logs"), str(limit)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    info: dict = {}
    try:
        deadline = time.monotonic() + 2 * limit
        run_log = tmp_path / "logs" / "run-1.log"
        while not info_file.exists():
            text = run_log.read_text(errors="replace") if run_log.exists() else ""
            if "The current node timed out during startup" in text:  # Ray's own hard-coded 30 s, not a setting
                pytest.skip(f"Ray's node did not start within Ray's own 30 s; load average {os.getloadavg()}")
            assert owner.poll() is None and time.monotonic() < deadline, text
            time.sleep(0.2)
        info = json.loads(info_file.read_text())
        pids = set(info["pids"])
        assert any(_cmdline(p).startswith("ray::") for p in pids), [_cmdline(p) for p in pids]
        owner.kill()  # SIGKILL: no finally, no atexit
        owner.wait()
        assert _wait_dead(pids, 15.0) == []
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and any(Path(h).exists() for h in info["homes"]):
            time.sleep(0.2)
        assert [h for h in info["homes"] if Path(h).exists()] == []
    finally:
        if owner.poll() is None:
            owner.kill()
        for pid in info.get("pids", []):
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
