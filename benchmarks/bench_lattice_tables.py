"""What one process pays to set up the default PRIVATIZER's noise: the rounded Gaussian tables and the calibration.

Every process that builds a Priv-FairX-LinUCB learner calibrates the exact BLT release (``continual="blt-exact"``)
and builds its two noise tables (``2**16`` to ``2**17`` grid units per sigma, and ``sqrt(2)`` times that for the
diagonal): stock Flower starts a ClientApp process per message, so this is paid on every message there.

* **The tables' masses.**  The rounded law's cell masses take three extended-precision exponentials per entry,
  about 1.4 million entries per table.  :func:`dpfair.privacy.lattice._gaussian_terms` computes them by blocks of
  64 (one exponential per block and a running product within, its error bounded and charged); the reference here is
  the same masses entry by entry (how the tables were built before), in the same process.
* **The calibration.**  :func:`~dpfair.bandits.fairx._privatizer_exact.calibrate_exact_blt` first pays the tables'
  distance on an estimate (:func:`dpfair.privacy.lattice.lattice_total_variation_estimate`) and builds the tables
  once, at the final sigma (they are then the release's); the reference builds a pair at a first sigma to measure
  the distance and a second pair at the final one (the flow before), in the same process.

Prints the seconds and the ratios (reference / current); on the 2-core machine at load 0.6, 2026-12-05: masses 2.07x
and 2.04x (0.186 -> 0.090 s, 0.258 -> 0.126 s), the calibration 1.95x on top (0.571 -> 0.293 s, the BLT parameters
cached).  A fresh process's first ``calibrate_exact_blt(2, 0.1, sqrt(5), 5, 200)``, profiled: 2.19 -> 0.93 s (four
tables -> two, and the BLT parameters' fit, 0.14-0.33 s).

Run: ``OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_lattice_tables.py``.
"""

from __future__ import annotations

import math
import time

import numpy as np

from dpfair.bandits.fairx._privatizer_exact import RESOLUTION_BITS, calibrate_exact_blt
from dpfair.privacy import lattice
from dpfair.privacy.lattice import lattice_granularity, lattice_total_variation

REPEATS = 3


def masses_entry_by_entry(n_entries: int, sigma_units: float) -> np.ndarray:
    """The rounded law's unnormalised cell masses, three extended-precision exponentials per entry (the reference)."""
    s2 = 2 * np.longdouble(sigma_units) ** 2
    k = np.arange(n_entries, dtype=np.longdouble)
    total = np.zeros(n_entries, dtype=np.longdouble)
    for node, weight in zip(lattice._GL_NODES, lattice._GL_WEIGHTS, strict=True):
        x = k + np.longdouble(node)
        total += np.longdouble(weight) * np.exp(-(x * x) / s2)
    return total


def best_of(fn) -> float:
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    sigma = 20.6  # Exp 1's tight node sigma
    granularity = lattice_granularity(sigma, RESOLUTION_BITS)
    for name, units in (("off-diagonal", sigma / granularity), ("diagonal", math.sqrt(2.0) * sigma / granularity)):
        n = math.ceil(lattice._TAIL_SIGMAS * units) + 1
        blocks = best_of(lambda n=n, units=units: lattice._masses(n, units, "rounded"))
        reference = best_of(lambda n=n, units=units: masses_entry_by_entry(n, units))
        agree = np.max(np.abs(lattice._masses(n, units, "rounded")[0] / masses_entry_by_entry(n, units) - 1))
        print(f"masses, {name} table ({n:,} entries): blocks {blocks:.3f} s, entry by entry {reference:.3f} s, "
              f"ratio {reference / blocks:.2f} (largest relative difference {float(agree):.1e})")

    def fresh() -> None:
        lattice._table.cache_clear()

    def current() -> None:
        fresh()
        calibrate_exact_blt(2.0, 0.1, math.sqrt(5), 5, 20_002, summed_pairs=100_000)

    def before() -> None:  # the flow before: a table pair at a first sigma to measure the distance, then the final pair
        fresh()
        cal = calibrate_exact_blt(2.0, 0.1, math.sqrt(5), 5, 20_002, summed_pairs=100_000)
        lattice_total_variation(cal.sigma * (1.0 + 1e-9), cal.granularity, "rounded")

    now, then = best_of(current), best_of(before)
    print(f"calibrate_exact_blt at Exp 1 (20,002 releases): {now:.3f} s; with the extra table pair of before "
          f"{then:.3f} s, ratio {then / now:.2f} (the masses' own speed-up not included)")


if __name__ == "__main__":
    main()
