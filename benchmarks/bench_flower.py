"""Cost of the federated learners on Flower, three ways, side by side in one process run (printed, never asserted).

1. **Round trip per synchronization**: the same plan (Fed-FairX-LinUCB, bounded-gap, ``d = 5``: one
   synchronization per round, ``m = 3``, seeded) on
   * dpfair's fast executor (``executor="persistent"``: a SuperLink, SuperNodes with capped idle sleeps and one
     long-lived ClientApp executor each, on 127.0.0.1),
   * stock Flower (``executor="flower"``: ``flower-supernode --isolation subprocess``, a ``flwr-clientapp``
     process per message),
   * Flower's Simulation Engine (``executor="simulation"``: ``flower-superlink --simulation``, the agents as
     virtual SuperNodes on at most 2 Ray actors; needs ``flwr[simulation]``).
   Each row: the ServerApp's play-loop seconds per message round (start-up excluded), the whole run's wall time,
   and whether the actions equal the fast executor's (the same seeded numbers).  The load average is printed
   before and after: on the shared 2-core machine the figures move with it.
2. **Round trips per run** for each protocol at the demo's defaults (``T = 2000``, ``m = 5``, ``d = 5``): the
   play loop's message rounds (one per synchronization for the scheduled protocols; one per round plus one per
   synchronization for log-det) and the two of ``init`` and ``finish``.  The log-det count is data-dependent: it
   is taken from ``simulate_federated``'s synchronizations on the same streams.

Run: ``OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_flower.py [horizon] [agents]`` (defaults 20 and 3;
stock Flower takes seconds per round trip).
"""

from __future__ import annotations

import importlib.util
import os
import sys
import time

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


def main(horizon: int = 20, agents: int = 3) -> None:
    print(f"load average (1, 5, 15 min) before: {os.getloadavg()} on {os.cpu_count()} CPUs")
    round_trips(horizon, agents)
    print(f"load average (1, 5, 15 min) after: {os.getloadavg()}")
    round_trips_per_protocol()


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
