"""Speed of the group meritocratic bandit simulator (printed, never asserted).

Issue 10's target: the paper's full setting, T = 50,000 rounds, K = 4 groups, 10 seeds, all four
policies (OFUL, Fair-Greedy, Private-Fair-Greedy at epsilon = 15, delta = 0.1, Random) in under 10
minutes on 2 cores.  Each policy runs all seeds at once (``simulate`` batches over seeds); the ranks
are counted over the environment's distinct contexts, not over the history.  Prints each policy's
wall time and its cost per round (all 10 seeds together) and per round and seed.

Run: ``DPFAIR_DATA_HOME=... .venv/bin/python benchmarks/bench_bandits.py [horizon]``.
"""

from __future__ import annotations

import sys
import time
import warnings

import numpy as np

from dpfair.bandits import OFUL, CensusHiringEnvironment, FairGreedy, PrivateFairGreedy, RandomPolicy, simulate
from dpfair.privacy import PrivacyLeakWarning


def main(horizon: int = 50_000, n_seeds: int = 10) -> None:
    env = CensusHiringEnvironment.from_acs_excerpt("national", n_groups=4, noise_std=0.1, random_state=0)
    policies = {
        "OFUL": OFUL(noise_std=env.noise_std, theta_norm_bound=float(np.linalg.norm(env.theta))),
        "Fair-Greedy": FairGreedy(),
        "Private-Fair-Greedy": PrivateFairGreedy(15.0, 0.1, context_bound=1.0, reward_bound=env.reward_bound),
        "Random": RandomPolicy(),
    }
    print(f"{env!r}: {env.support.shape[0]} distinct contexts; T = {horizon:,}, {n_seeds} seeds")
    total = 0.0
    for name, policy in policies.items():
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivacyLeakWarning)
            result = simulate(env, {name: policy}, horizon, range(n_seeds))
        wall = time.perf_counter() - start
        total += wall
        final = result.final("fair_regret").iloc[0]
        print(f"  {name:<20} {wall:7.1f} s  {1e3 * wall / horizon:6.3f} ms/round ({n_seeds} seeds)  "
              f"{1e6 * wall / horizon / n_seeds:6.1f} us/round/seed   final fair regret {final['mean']:.1f} "
              f"+- {final['se']:.1f}")
    print(f"all four policies: {total:.1f} s (target: under 600 s)")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 50_000)
