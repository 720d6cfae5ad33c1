"""Cost of the federated learners on Flower: real SuperLink / SuperNode processes on 127.0.0.1 (printed, never asserted).

Issue 20 asks for a Flower run that reproduces ``simulate_federated`` (m = 3, T = 500; Fed-FairX-LinUCB
bounded-gap and p-fcb, Priv-FairX-LinUCB).  This script runs the paper's setting (d = 5, 10 actions)
as one Flower run of the three learners on the same streams, prints the number of Flower round trips,
their mean wall time and the whole run's, checks the actions against the simulator's (the same
numbers), and compares the ``persistent`` executor with Flower's stock one on a short run.

Run: ``.venv/bin/python benchmarks/bench_flower.py [horizon] [dim]`` (defaults 500 and 5).
"""

from __future__ import annotations

import math
import os
import sys
import time

import numpy as np

from dpfair.bandits import FederatedSyntheticEnvironment, FedFairXLinUCB, PrivFairXLinUCB, simulate_federated
from dpfair.federated import run_demo

LEARNERS = "fed:bounded-gap,fed:p-fcb,priv:bounded-gap"


def main(horizon: int = 500, dim: int = 5) -> None:
    m, seed = 3, 4
    print(f"load average (1, 5, 15 min): {os.getloadavg()} on {os.cpu_count()} CPUs")
    start = time.perf_counter()
    result = run_demo(m, horizon, learners=LEARNERS, random_state=3, seed=seed, extra_config={"dim": dim})
    wall = time.perf_counter() - start
    server = result.server
    print(f"Flower, persistent executor: T={horizon}, m={m}, d={dim}, 3 learners in one run: {wall:.1f} s in all; "
          f"{server['message_rounds']} round trips, {server['seconds_per_message_round']:.3f} s each")
    env = FederatedSyntheticEnvironment(dim=dim)
    learners = {"fed-bounded-gap": FedFairXLinUCB("bounded-gap"), "fed-p-fcb": FedFairXLinUCB("p-fcb"),
                "priv-bounded-gap": PrivFairXLinUCB(2.0, 0.1, math.sqrt(dim), random_state=3)}
    t0 = time.perf_counter()
    reference = simulate_federated(env, learners, horizon, m, [seed], record_actions=True)
    print(f"simulate_federated (numpy, same streams): {time.perf_counter() - t0:.2f} s")
    for i, label in enumerate(learners):
        same = all(np.array_equal(result.actions[label][a], reference.actions[i, 0, a]) for a in range(m))
        gap = float(np.abs(result.fair_regret[label] - reference.fair_regret[i, 0]).max())
        print(f"  {label}: {server['learners'][label]['communication_rounds']} synchronizations, actions identical: "
              f"{same}, max |fairness regret difference| {gap:.1e}, regret at T {result.fair_regret[label][-1]:.1f}")
    for executor in ("persistent", "flower"):
        t0 = time.perf_counter()
        short = run_demo(m, 16, learner="fed", protocol="p-fcb", seed=seed, executor=executor)
        print(f"executor={executor}: T=16 p-fcb ({short.server['message_rounds']} round trips) "
              f"{short.server['seconds_per_message_round']:.2f} s per round trip, {time.perf_counter() - t0:.1f} s in all")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
