"""Speed of the federated fairness-of-exposure simulator (printed, never asserted).

Issue 11 asks for Exp 1 at full scale (T = 100,000 rounds, m = 10 agents, d = 5, 10 actions,
5 seeds; B0, Fed-FairX-LinUCB and Priv-FairX-LinUCB) in under 15 minutes on 2 cores.  This script runs
it as one batched :func:`dpfair.bandits.simulate_federated` call (state batched over
learner x seed x agent = 150 rows, one vectorized step per round) and prints the wall time, the cost
per round and the final fairness regrets (mean ± s.e.).

Run: ``.venv/bin/python benchmarks/bench_federated.py [horizon]`` (default 100000).
"""

from __future__ import annotations

import math
import sys
import time

from dpfair.bandits import FairXLinUCB, FederatedSyntheticEnvironment, FedFairXLinUCB, PrivFairXLinUCB, simulate_federated


def main(horizon: int = 100_000, n_agents: int = 10, seeds: tuple[int, ...] = (0, 1, 2, 3, 4)) -> None:
    kw = {"radius": 1.0, "n_steps": 10, "step_size": 0.1}
    env = FederatedSyntheticEnvironment(dim=5, n_actions=10, noise_std=0.1)
    learners = {
        "B0": FairXLinUCB(**kw),
        "Fed": FedFairXLinUCB("bounded-gap", **kw),
        "Priv": PrivFairXLinUCB(2.0, 0.1, math.sqrt(5), "bounded-gap", random_state=0, **kw),
    }
    start = time.perf_counter()
    result = simulate_federated(env, learners, horizon, n_agents, seeds)
    wall = time.perf_counter() - start
    rows = len(learners) * len(seeds) * n_agents
    print(f"Exp 1: T={horizon}, m={n_agents}, d=5, K=10, {len(seeds)} seeds, {len(learners)} learners ({rows} batched rows)")
    print(f"wall time {wall:.1f} s = {wall / 60:.2f} min; {1e3 * wall / horizon:.2f} ms per round "
          f"({1e6 * wall / (horizon * rows):.1f} us per agent-round)")
    print(result.final("fair_regret").round(1).to_string())
    print(result.final("reward_regret").round(1).to_string())
    print(result.communication_table().to_string())


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 100_000)
