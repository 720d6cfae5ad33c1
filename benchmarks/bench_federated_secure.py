"""Cost of secure noise in Priv-FairX-LinUCB, and the tight calibration against the paper's (printed, never asserted).

Two targets, on Exp 1's setting (T = 100,000 rounds, m = 10 agents, d = 5, 10 actions, 5 seeds,
epsilon = 2, delta = 0.1, bounded-gap protocol: 20,002 releases of 21 noise entries per agent):

* Priv-FairX-LinUCB with its default secure noise at most 2x its seeded time.  Both draw the same
  law (the PRIVATIZER's lattice discrete Gaussian, :mod:`dpfair.privacy.lattice`); secure words come
  from the OS CSPRNG, one call per release for every node, agent and seed.  For scale, OpenDP's exact
  float sampler is timed on one release's worth of entries.
* At T = 20,000 (same streams), the tight calibration's fairness regret at most 0.6x the paper's.

Run: ``.venv/bin/python benchmarks/bench_federated_secure.py [horizon]`` (default 100000).
"""

from __future__ import annotations

import math
import sys
import time

import numpy as np

from dpfair.bandits import FederatedSyntheticEnvironment, PrivFairXLinUCB, simulate_federated
from dpfair.privacy import SecureNoise

KW = {"radius": 1.0, "n_steps": 10, "step_size": 0.1}
SEEDS = (0, 1, 2, 3, 4)


def _priv(calibration: str = "tight", random_state: object = 0) -> PrivFairXLinUCB:
    return PrivFairXLinUCB(2.0, 0.1, math.sqrt(5), "bounded-gap", noise_calibration=calibration,
                           random_state=random_state, **KW)


def _timed(learners: dict, horizon: int) -> tuple[float, object]:
    env = FederatedSyntheticEnvironment(dim=5, n_actions=10, noise_std=0.1)
    start = time.perf_counter()
    result = simulate_federated(env, learners, horizon, 10, SEEDS)
    return time.perf_counter() - start, result


def main(horizon: int = 100_000) -> None:
    _timed({"warm-up": _priv()}, 50)  # compile the kernels outside the timings
    seeded, result = _timed({"Priv (seeded)": _priv()}, horizon)
    secure, secure_result = _timed({"Priv (secure)": _priv(random_state=None)}, horizon)
    releases = int(result.communication_rounds[0, 0])
    entries = releases * len(SEEDS) * 10 * 21
    print(f"Exp 1 setting: T={horizon:,}, m=10, 5 seeds, {releases:,} releases per agent, {entries:,} noise entries")
    print(f"Priv-FairX-LinUCB seeded noise: {seeded:7.1f} s")
    print(f"Priv-FairX-LinUCB secure noise: {secure:7.1f} s   ratio secure / seeded = {secure / seeded:.2f} (target <= 2)")
    n = 10 * len(SEEDS) * 21
    start = time.perf_counter()
    SecureNoise().gaussian(np.zeros(n), 20.0)
    opendp = (time.perf_counter() - start) / n
    print(f"for scale: OpenDP's exact float Gaussian {1e6 * opendp:.1f} us per entry -> {entries * opendp:,.0f} s "
          "for this run's entries")
    for name, res in (("seeded", result), ("secure", secure_result)):
        final = res.final("fair_regret").iloc[0]
        print(f"  final fairness regret ({name}): {final['mean']:.1f} +- {final['se']:.1f}")

    t_cal = min(horizon, 20_000)
    _, both = _timed({"tight": _priv("tight"), "paper": _priv("paper")}, t_cal)
    final = both.final("fair_regret")["mean"]
    print(f"T={t_cal:,}, same streams: fairness regret tight {final['tight']:.1f}, paper {final['paper']:.1f}, "
          f"ratio {final['tight'] / final['paper']:.2f} (target <= 0.6)")
    for name in ("tight", "paper"):
        spent = both.privacy_spent[name]
        print(f"  {name}: node sigma {spent['node_sigma']:.1f}, privacy_spent (epsilon, delta) = "
              f"({spent['epsilon']:.12g}, {spent['delta']:g}), accounted epsilon {spent['epsilon_accounted']:.12g}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 100_000)
