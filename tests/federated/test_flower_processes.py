"""The Flower apps over real SuperLink and SuperNode processes on the loopback address.

One Flower round trip costs ~0.3-0.5 s on a loaded 2-core machine (every message crosses the SuperLink,
a SuperNode and its executor over HTTP).  Algorithm 1's bounded-gap protocol at d = 5 synchronizes
after every round (G = 1), so the equality test runs the paper's learners at d = 1 and T = 200
(68 synchronizations; p-fcb 8) in one run: three learners on the same streams.  T = 500 (102 synchronizations)
shows nothing more and costs 1.5 times the round trips.
``benchmarks/bench_flower.py`` runs the d = 5 setting and prints its cost.
"""

from __future__ import annotations

import json
import math
import threading
import time

import numpy as np
import pytest

pytest.importorskip("flwr")

import pace

from dpfair.bandits import FederatedSyntheticEnvironment, FedFairXLinUCB, PrivFairXLinUCB, simulate_federated
from dpfair.federated import apps, run_demo

T, M, SEED, DIM = 200, 3, 4, 1


def _dead(pids: set[int]) -> bool:
    from pathlib import Path

    def alive(pid: int) -> bool:
        try:
            stat = Path(f"/proc/{pid}/stat").read_bytes()
        except FileNotFoundError:
            return False
        return stat[stat.rfind(b")") + 2 :].split()[0] != b"Z"

    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(alive(p) for p in pids):
        time.sleep(0.1)
    return not any(alive(p) for p in pids)


@pytest.mark.slow
@pytest.mark.processes
@pytest.mark.serial
def test_flower_processes_reproduce_the_simulator_and_send_only_noisy_statistics(tmp_path):
    started: dict[str, set[int]] = {}
    wire = tmp_path / "wire.jsonl"
    limits = {"start-timeout": pace.startup_limit(1 + 2 * M), "round-timeout": pace.round_limit(pace.fast_round_limit())}
    result = run_demo(
        M, T, learners="fed:bounded-gap,fed:p-fcb,priv:bounded-gap", random_state=3, seed=SEED, out=tmp_path,
        extra_config={"dim": DIM, "wire-log": str(wire), **limits},
        on_start=lambda fed: started.setdefault("pids", fed.all_pids()),
    )
    print(f"{result.server['message_rounds']} Flower rounds, {result.server['seconds_per_message_round']:.3f} s each, "
          f"{result.wall_seconds:.1f} s in all")
    assert result.server["completed"] and not result.server["dropped"] and not result.server["errors"]
    env = FederatedSyntheticEnvironment(dim=DIM)
    learners = {"fed-bounded-gap": FedFairXLinUCB("bounded-gap"), "fed-p-fcb": FedFairXLinUCB("p-fcb"),
                "priv-bounded-gap": PrivFairXLinUCB(2.0, 0.1, math.sqrt(DIM), random_state=3)}
    reference = simulate_federated(env, learners, T, M, [SEED], record_actions=True)
    compiled = simulate_federated(env, learners, T, M, [SEED])
    for i, label in enumerate(learners):
        for agent in range(M):
            np.testing.assert_array_equal(result.actions[label][agent], reference.actions[i, 0, agent])
        np.testing.assert_allclose(result.fair_regret[label], compiled.fair_regret[i, 0], rtol=0, atol=1e-9)
        assert result.server["learners"][label]["communication_rounds"] == compiled.communication_rounds[i, 0]
        assert result.server["learners"][label]["privacy_spent"]["1"] == compiled.privacy_spent[label]
    assert compiled.communication_rounds[0, 0] == 68 and compiled.communication_rounds[1, 0] == 8
    # every message that reached the server: a step, the agent, released statistics, privacy descriptions
    stream = env.agent_stream(SEED, T, M, 0)
    released = []
    for line in wire.read_text().splitlines():
        entry = json.loads(line)
        assert set(entry) == {"node", "config"}
        keys = set(entry["config"]) - {"step", "agent", "privacy_spent", "synchronizations"}
        assert all(k.startswith("statistics:") for k in keys), keys
        if entry["config"]["agent"] == 0 and "statistics:priv-bounded-gap" in entry["config"]:
            released.append(np.asarray(entry["config"]["statistics:priv-bounded-gap"]))
    assert len(released) == 68
    # the private learner's last release against agent 0's exact statistics: noise of the PRIVATIZER's scale
    actions = result.actions["priv-bounded-gap"][0]
    x = stream.contexts_[np.arange(T), actions]
    y = np.clip(stream._mu[np.arange(T), actions] + stream.noise, -1.0, 1.0)
    last = released[-1]
    exact = np.concatenate([[DIM], (np.eye(DIM) + x.T @ x).ravel(), x.T @ y])
    sigma = PrivFairXLinUCB(2.0, 0.1, 1.0).reset(10, DIM, T, n_agents=M)._online.sync.privatizer.node_sigma
    assert last[0] == DIM and np.all(np.abs(last[1:] - exact[1:]) > 0) and np.abs(last[1:] - exact[1:]).max() < 12 * sigma
    assert _dead(started["pids"]), "a process the demo started is still alive"


@pytest.mark.slow
@pytest.mark.processes
@pytest.mark.serial
def test_a_killed_supernode_is_dropped_and_the_run_completes(tmp_path):
    wire = tmp_path / "wire.jsonl"
    horizon = 60  # bounded-gap at d = 1: 31 synchronizations
    killed: dict[str, int] = {}

    def kill_halfway(federation):
        def watch():
            while True:
                lines = wire.read_text().count("\n") if wire.exists() else 0
                if lines >= 3 * 12:  # 12 message rounds of 3 agents: about round 22 of 60
                    federation.kill_node(1)
                    killed["after"] = lines
                    return
                time.sleep(0.05)

        threading.Thread(target=watch, daemon=True).start()

    result = run_demo(M, horizon, learner="priv", protocol="bounded-gap", random_state=1, seed=SEED, out=tmp_path,
                      extra_config={"dim": DIM, "wire-log": str(wire), "round-timeout": pace.fast_round_limit(),
                                    "start-timeout": pace.startup_limit(1 + 2 * M)}, on_start=kill_halfway)
    server = result.server
    assert killed, "the SuperNode was not killed"
    assert server["completed"] and server["rounds_played"] == horizon
    assert result.status == server["status"] == "degraded" and result.failure is None  # its own status
    assert list(server["dropped"]) == ["1"]
    first_missed = server["dropped"]["1"]
    assert horizon / 4 < first_missed < 3 * horizon / 4
    assert any(e.startswith(f"agent 1, round {first_missed}") for e in server["errors"])
    entry = server["learners"]["priv-bounded-gap"]
    assert set(entry["privacy_spent"]) == {"0", "2"}
    rounds = entry["synchronization_rounds"]
    assert rounds[-1] > first_missed and entry["communication_rounds"] == len(rounds)  # the others went on
    assert len(result.fair_regret["priv-bounded-gap"]) == horizon  # agents 0 and 2 played every round
    assert set(result.actions["priv-bounded-gap"]) == {0, 2}


def test_run_settings_are_checked_before_any_process_starts(tmp_path):
    with pytest.raises(ValueError, match="unknown run setting"):
        run_demo(2, 10, out=tmp_path, extra_config={"horizn": 3})
    with pytest.raises(ValueError, match="protocol must be one of"):
        run_demo(2, 10, protocol="gossip", out=tmp_path)
    assert not (tmp_path / "logs").exists()
    assert apps.RUN_CONFIG["round-timeout"] > 0
