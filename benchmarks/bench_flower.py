"""Cost of the federated learners on Flower, three ways, side by side in one process run (printed, never asserted).

1. **Round trip per synchronization**: the same plan (Fed-FairX-LinUCB, bounded-gap, ``d = 5``: one
   synchronization per round, ``m = 3``, seeded) on
   * dpfair's fast executor (``executor="persistent"``: a SuperLink whose pulls wait for a message (long polls),
     SuperNodes with capped idle sleeps that run their ClientApp in-process, on 127.0.0.1),
   * stock Flower (``executor="flower"``: ``flower-supernode --isolation subprocess``, a ``flwr-clientapp``
     process per message),
   * Flower's Simulation Engine (``executor="simulation"``: ``flower-superlink --simulation``, the agents as
     virtual SuperNodes on at most 2 Ray actors; needs ``flwr[simulation]``).
   Each row: the ServerApp's play-loop seconds per message round (start-up excluded), the whole run's wall time,
   and whether the actions equal the fast executor's (the same seeded numbers).  The load average is printed
   before and after: on the shared 2-core machine the figures move with it.
2. **The floor**: a no-op Flower app written by this script (the ServerApp sends a tiny message to every node and
   pulls the replies with a short poll; the ClientApp echoes it) on the Simulation Engine and on the fast executor,
   in the same process run, at ``N = 3`` and ``5``; beside it dpfair's own app (the same plan as above) on the fast
   executor.  Printed: seconds per message round of each and the ratios ``dpfair fast / no-op Simulation``
   (the target: at most 1.5) and ``no-op fast / dpfair fast`` (a no-op ClientApp must not be slower than
   dpfair's own: at most 1), with the 1-minute load average when each row was done.
3. **Round trips per run** for each protocol at the demo's defaults (``T = 2000``, ``m = 5``, ``d = 5``): the
   play loop's message rounds (one per synchronization for the scheduled protocols; one per round plus one per
   synchronization for log-det) and the two of ``init`` and ``finish``.  The log-det count is data-dependent: it
   is taken from ``simulate_federated``'s synchronizations on the same streams.

Run: ``OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_flower.py [horizon] [agents] [floor rounds]`` (defaults
20, 3 and 40; stock Flower takes seconds per round trip); ``... bench_flower.py floor [rounds] [3,5]`` runs the floor table alone.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import numpy as np

from dpfair.bandits import FederatedSyntheticEnvironment, FedFairXLinUCB, simulate_federated
from dpfair.bandits.fairx.schedules import communication_schedule
from dpfair.federated import run_demo
from dpfair.federated.apps import planned_message_rounds


def round_trips(horizon: int, agents: int) -> None:
    """The table of round trips per synchronization, one run per executor."""
    executors = ["persistent", "flower"]
    if importlib.util.find_spec("ray") is not None:
        executors.append("simulation")
    else:
        print('Simulation Engine skipped: pip install "dpfair[simulation]" (Ray)')
    print(f"same plan: Fed-FairX-LinUCB bounded-gap, T={horizon}, m={agents}, d=5 ({horizon} synchronizations), seeded")
    print(f"{'executor':<12} {'s / round trip':>15} {'round trips':>12} {'whole run s':>12}  actions = fast executor's")
    first = None
    for executor in executors:
        start = time.perf_counter()
        # generous limits: a stock round trip takes tens of seconds on a loaded 2-core machine (this measures, it
        # does not test drops)
        result = run_demo(agents, horizon, learner="fed", protocol="bounded-gap", seed=4, executor=executor,
                          extra_config={"round-timeout": 600.0, "start-timeout": 600.0})
        wall = time.perf_counter() - start
        server = result.server
        actions = result.actions.get("fed-bounded-gap", {})
        if first is None:
            first = actions
        same = bool(actions) and all(np.array_equal(actions[a], first[a]) for a in first)
        status = "" if result.failure is None else f"  FAILED: {result.failure}"
        print(f"{executor:<12} {server.get('seconds_per_message_round', float('nan')):>15.3f} "
              f"{server.get('message_rounds', 0):>12} {wall:>12.1f}  {same}{status}")


_NOOP_APP = textwrap.dedent(
    """
    import json, time
    from flwr.app import ConfigRecord, Message, RecordDict
    from flwr.clientapp import ClientApp
    from flwr.serverapp import ServerApp

    server = ServerApp()
    client = ClientApp()


    @server.main()
    def main(grid, context):
        cfg = context.run_config
        deadline = time.monotonic() + float(cfg["start-timeout"])
        nodes = sorted(grid.get_node_ids())
        while len(nodes) < int(cfg["n-nodes"]) and time.monotonic() < deadline:
            time.sleep(0.02)
            nodes = sorted(grid.get_node_ids())
        seconds = []
        for r in range(int(cfg["rounds"]) + 1):  # round 0 wakes the nodes (and Ray's actors): not counted
            began = time.perf_counter()
            ids = set(grid.push_messages([Message(RecordDict({"c": ConfigRecord({"r": r})}), dst_node_id=n,
                                                  message_type="train") for n in nodes]))
            pause, limit = 0.001, time.monotonic() + float(cfg["start-timeout"])
            while ids and time.monotonic() < limit:  # the same short poll as dpfair's ServerApp
                got = list(grid.pull_messages(ids))
                for reply in got:
                    ids.discard(reply.metadata.reply_to_message_id)
                pause = 0.001 if got else min(0.02, pause * 2)
                if ids:
                    time.sleep(pause)
            if r:
                seconds.append(time.perf_counter() - began)
        with open(cfg["result-path"], "w") as fh:
            json.dump({"seconds": seconds, "nodes": len(nodes)}, fh)


    @client.train()
    def echo(message, context):
        return Message(RecordDict({"c": ConfigRecord({"r": message.content["c"]["r"]})}), reply_to=message)
    """
)
_NOOP_PYPROJECT = textwrap.dedent(
    """
    [build-system]
    requires = ["hatchling"]
    build-backend = "hatchling.build"

    [project]
    name = "dpfair-noop-floor"
    version = "1.0.0"
    dependencies = []

    [tool.hatch.build.targets.wheel]
    packages = ["."]

    [tool.flwr.app]
    publisher = "dpfair"

    [tool.flwr.app.components]
    serverapp = "noop_floor:server"
    clientapp = "noop_floor:client"

    [tool.flwr.app.config]
    rounds = 40
    n-nodes = 3
    start-timeout = 300.0
    result-path = ""
    """
)


def noop_floor(executor: str, agents: int, rounds: int, folder: Path) -> float:
    """Seconds per message round of the no-op app (the median round) on *executor* with *agents* nodes."""
    from dpfair.federated import LocalFederation

    app = folder / "noop_app"
    app.mkdir(exist_ok=True)
    (app / "noop_floor.py").write_text(_NOOP_APP)
    (app / "pyproject.toml").write_text(_NOOP_PYPROJECT)
    result = folder / f"noop-{executor}-{agents}.json"
    with LocalFederation(agents, app_dir=app, executor=executor, log_dir=folder / f"logs-{executor}-{agents}",
                         startup_timeout=300.0) as federation:
        done = federation.run({"rounds": rounds, "n-nodes": agents, "result-path": str(result)}, timeout=900)
    if done.returncode != 0 or not result.exists():
        raise RuntimeError(f"the no-op app failed on {executor}: {done.stdout[-2000:]}")
    return float(np.median(json.loads(result.read_text())["seconds"]))


def floor_table(agents_list: tuple[int, ...] = (3, 5), rounds: int = 40) -> None:
    """The no-op floor and dpfair's fast executor side by side, with their ratios."""
    has_ray = importlib.util.find_spec("ray") is not None
    print(f"the floor: a no-op app, {rounds} message rounds (median), beside dpfair's app (Fed-FairX-LinUCB, bounded-gap, "
          f"d=5: one message round per round, T={rounds})")
    print(f"{'N':>3} {'no-op sim':>10} {'no-op fast':>11} {'dpfair fast':>12} {'dpfair fast / no-op sim':>24} "
          f"{'no-op fast / dpfair fast':>25} {'load':>5}")
    with tempfile.TemporaryDirectory(prefix="dpfair-bench-floor-") as tmp:
        folder = Path(tmp)
        for agents in agents_list:
            sim = noop_floor("simulation", agents, rounds, folder) if has_ray else float("nan")
            fast = noop_floor("persistent", agents, rounds, folder)
            run = run_demo(agents, rounds, learner="fed", protocol="bounded-gap", seed=4, executor="persistent",
                           out=folder / f"dpfair-{agents}", extra_config={"round-timeout": 600.0, "start-timeout": 600.0})
            ours = float(run.server.get("seconds_per_message_round", float("nan")))
            print(f"{agents:>3} {sim:>10.3f} {fast:>11.3f} {ours:>12.3f} {ours / sim:>24.2f} {fast / ours:>25.2f}"
                  f" {os.getloadavg()[0]:>5.1f}{'' if run.failure is None else f'  FAILED: {run.failure}'}", flush=True)


def round_trips_per_protocol(horizon: int = 2000, agents: int = 5, dim: int = 5) -> None:
    """Round trips of one run per protocol at the demo's defaults."""
    print(f"round trips per run, T={horizon}, m={agents}, d={dim} (+2: init and finish)")
    for protocol in ("bounded-gap", "p-fcb", "log-det"):
        config = {"learner": "fed", "protocol": protocol, "horizon": horizon, "n-agents": agents, "dim": dim}
        if protocol == "log-det":
            env = FederatedSyntheticEnvironment(dim=dim)
            syncs = int(simulate_federated(env, {"b1": FedFairXLinUCB("log-det")}, horizon, agents, [0])
                        .communication_rounds[0, 0])
            loop = horizon + syncs  # a round's play (and trigger bits), plus a release round trip per synchronization
            note = f"{horizon} rounds + {syncs} synchronizations (each asks the releases in a round trip of its own)"
        else:
            loop = planned_message_rounds(config)
            syncs = len(communication_schedule(protocol, horizon, agents, dim))
            note = (f"{syncs} synchronizations, one round trip each (the agents play every round up to the next one "
                    f"locally){'' if loop == syncs else f', + {loop - syncs} to play the rounds after the last one'}")
        print(f"  {protocol:<12} {loop + 2:>6} round trips: {note}")


def main(horizon: int = 20, agents: int = 3, floor_rounds: int = 40) -> None:
    print(f"load average (1, 5, 15 min) before: {os.getloadavg()} on {os.cpu_count()} CPUs")
    round_trips(horizon, agents)
    floor_table(rounds=floor_rounds)
    print(f"load average (1, 5, 15 min) after: {os.getloadavg()}")
    round_trips_per_protocol()


if __name__ == "__main__":
    if sys.argv[1:2] in (["--help"], ["-h"]):
        print(__doc__)
    elif sys.argv[1:2] == ["floor"]:  # floor [rounds] [N,N,...]
        print(f"load average (1, 5, 15 min) before: {os.getloadavg()} on {os.cpu_count()} CPUs")
        sizes = tuple(int(n) for n in sys.argv[3].split(",")) if len(sys.argv) > 3 else (3, 5)
        floor_table(sizes, rounds=int(sys.argv[2]) if len(sys.argv) > 2 else 40)
        print(f"load average (1, 5, 15 min) after: {os.getloadavg()}")
    else:
        main(*(int(a) for a in sys.argv[1:4]))
