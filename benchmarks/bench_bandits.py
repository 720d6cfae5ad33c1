"""Speed of the group meritocratic bandit simulator (printed, never asserted).

The paper's full setting: T = 50,000 rounds, K = 4 groups (ACS excerpt, d = 15), 10 seeds, all four
policies (OFUL, Fair-Greedy, Private-Fair-Greedy at epsilon = 15, delta = 0.1, Random).  The
reproduction's budget is under 10 minutes on 2 cores (the numpy rounds take about 50 s); the compiled rounds target
under 15 s.  Each policy runs all seeds at once (``simulate`` batches over seeds); the ranks are
counted over the environment's distinct contexts, not over the history.  The script prints:

* the first calls' time (numba compilation, or loading numba's on-disk cache when it is warm);
* each policy's wall time at full scale with ``engine="compiled"``, its cost per round and per
  round and seed, the final fair regret, the total, and where the time goes (the kernels, drawing
  the noise in numpy, the rest: sampling the episodes, the regret curves);
* both engines on a shorter horizon in the same process (default T = 5,000), their ratio per policy
  and the largest difference of the curves between them.

Run: ``DPFAIR_DATA_HOME=... .venv/bin/python benchmarks/bench_bandits.py [horizon] [reference_horizon]``
(defaults 50000 and 5000).  Timings depend on the machine's load: the script prints it.
"""

from __future__ import annotations

import os
import sys
import time
import warnings
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from dpfair.bandits import OFUL, CensusHiringEnvironment, FairGreedy, PrivateFairGreedy, RandomPolicy, simulate
from dpfair.bandits.gmf import _kernels as kernels
from dpfair.privacy import PrivacyLeakWarning


def _load() -> str:
    try:
        return "load average (1, 5, 15 min): " + ", ".join(f"{x:.2f}" for x in os.getloadavg()) + f" on {os.cpu_count()} CPUs"
    except OSError:
        return "load average unavailable"


@contextmanager
def _timed(seconds: dict[str, float]) -> Iterator[None]:
    """Add the wall time spent in the kernels and in drawing the noise to ``seconds``."""

    def wrap(owner: Any, name: str, label: str) -> tuple[Any, str, Any]:
        original = getattr(owner, name)

        def inner(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                seconds[label] += time.perf_counter() - start

        setattr(owner, name, inner)
        return owner, name, original

    saved = [wrap(kernels, "_call_parts", "kernels"), wrap(FairGreedy, "_compiled_noise", "noise")]
    try:
        yield
    finally:
        for owner, name, original in saved:
            setattr(owner, name, original)


def _run(env: Any, name: str, policy: Any, horizon: int, n_seeds: int, engine: str) -> tuple[float, Any]:
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        result = simulate(env, {name: policy}, horizon, range(n_seeds), engine=engine)
    return time.perf_counter() - start, result


def main(horizon: int = 50_000, reference_horizon: int = 5_000, n_seeds: int = 10) -> None:
    env = CensusHiringEnvironment.from_acs_excerpt("national", n_groups=4, noise_std=0.1, random_state=0)
    policies: dict[str, Callable[[], Any]] = {
        "OFUL": lambda: OFUL(noise_std=env.noise_std, theta_norm_bound=float(np.linalg.norm(env.theta))),
        "Fair-Greedy": FairGreedy,
        "Private-Fair-Greedy": lambda: PrivateFairGreedy(15.0, 0.1, context_bound=1.0, reward_bound=env.reward_bound),
        "Random": RandomPolicy,
    }
    print(f"{env!r}: {env.support.shape[0]} distinct contexts; T = {horizon:,}, {n_seeds} seeds")
    print(_load())

    start = time.perf_counter()
    for name, make in policies.items():
        _run(env, name, make(), 4, n_seeds, "compiled")
    first = time.perf_counter() - start
    hits = sum(sum(k.stats.cache_hits.values()) for k in (kernels.oful_rounds, kernels.fair_greedy_rounds))
    print(f"first calls (numba {'cache load' if hits else 'compilation'}): {first:.1f} s")

    print(f"engine='compiled', T = {horizon:,}:")
    total = 0.0
    seconds: dict[str, float] = defaultdict(float)
    with _timed(seconds):
        for name, make in policies.items():
            wall, result = _run(env, name, make(), horizon, n_seeds, "compiled")
            total += wall
            final = result.final("fair_regret").iloc[0]
            print(f"  {name:<20} {wall:6.2f} s  {1e3 * wall / horizon:6.3f} ms/round ({n_seeds} seeds)  "
                  f"{1e6 * wall / horizon / n_seeds:5.2f} us/round/seed   final fair regret {final['mean']:.1f} "
                  f"+- {final['se']:.1f}")
    rest = total - seconds["kernels"] - seconds["noise"]
    print(f"all four policies: {total:.1f} s (target: under 15 s); kernels {seconds['kernels']:.1f} s, drawing the "
          f"noise in numpy {seconds['noise']:.1f} s, the rest (episodes, regret curves, set-up) {rest:.1f} s")
    print(_load())

    print(f"both engines, T = {reference_horizon:,}:")
    totals = {"compiled": 0.0, "numpy": 0.0}
    for name, make in policies.items():
        walls, results = {}, {}
        for engine in ("numpy", "compiled"):
            walls[engine], results[engine] = _run(env, name, make(), reference_horizon, n_seeds, engine)
            totals[engine] += walls[engine]
        diff = max(float(np.abs(getattr(results["compiled"], m) - getattr(results["numpy"], m)).max())
                   for m in ("fair_regret", "regret", "selections"))
        print(f"  {name:<20} numpy {walls['numpy']:6.2f} s  compiled {walls['compiled']:6.2f} s  "
              f"ratio {walls['numpy'] / walls['compiled']:5.1f}x  max |difference| {diff:.1e}")
    print(f"all four policies: numpy {totals['numpy']:.1f} s, compiled {totals['compiled']:.1f} s, ratio "
          f"{totals['numpy'] / totals['compiled']:.1f}x")
    print(_load())


if __name__ == "__main__":
    main(*(int(arg) for arg in sys.argv[1:3]))
