"""Speed of SelectionProblem's searches at realistic pool sizes, against the frozen first implementation
(tests/selection/analysis_reference.py; the rewrite is 12x to 100x faster and agrees to 1e-13).

Printed, never asserted.  For the synthetic case study of Khalili et al. (2021) (11 score values) and FICO
(198 score values, white / black), with 200 and 1,000 applicants, it times ``best_epsilon`` (epsilon_max 100,
gamma_max 0.01) and ``perfectly_fair_epsilons`` (epsilon_max 100) for m = 1 (the Laplace-transform integral),
m = 3 and m = 10 (Monte Carlo over the others' scores, 40,000 samples: compiled kernels for the elementary symmetric
polynomials), wall-clock and CPU seconds (the CPU time is the steadier figure on a shared machine), and checks that
both implementations return the same epsilons.  The old implementation is the frozen copy
``tests/selection/analysis_reference.py``, run in this same process; it is only run where it takes at most
``--old-limit`` seconds per call as estimated from one of its evaluations (otherwise its time is extrapolated from the
number of evaluations and marked ``~``).  The first search of a process includes loading numba and its compiled
kernels (compiling them, once, when no cache exists).

Run: ``DPFAIR_DATA_HOME=... OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_selection_analysis.py
[--quick] [--old-limit 60] [--m 1 3 10] [--new-only]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "selection"))

import numpy as np
from analysis_reference import SelectionProblem as OldSelectionProblem

from dpfair.selection import SelectionProblem
from dpfair.selection.synthetic_case import SCORE_GRID, case_study_problem


def problems(n: int):
    case = case_study_problem(n)
    yield "case study", case, OldSelectionProblem(SCORE_GRID, case.joint_pmf, n)
    try:
        fico = SelectionProblem.from_fico(n_applicants=n, download=False)
    except Exception as exc:  # the data is missing: skip the FICO rows
        print(f"  (FICO skipped: {type(exc).__name__})")
        return
    yield "FICO", fico, OldSelectionProblem(fico.score_values, fico.joint_pmf, n)


def timed(call):
    start, cpu = time.perf_counter(), time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        value = call()
    return value, time.perf_counter() - start, time.process_time() - cpu


def search(problem, which: str, m: int, **progress):
    if which == "best_epsilon":
        return problem.best_epsilon(100.0, 0.01, m, **progress)
    return problem.perfectly_fair_epsilons(m, 100.0, **progress)


def same(a, b) -> str:
    a_arr, b_arr = np.atleast_1d(np.asarray(a, dtype=float)), np.atleast_1d(np.asarray(b, dtype=float))
    if a_arr.shape != b_arr.shape:
        return f"NO ({a} vs {b})"
    if np.array_equal(a_arr, b_arr):
        return "yes (identical)"
    worst = float(np.max(np.abs(a_arr - b_arr) / np.maximum(np.abs(b_arr), 1e-300)))
    return f"yes (rel {worst:.1e})" if worst <= 1e-12 else f"NO ({a} vs {b})"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="200 applicants only")
    parser.add_argument("--old-limit", type=float, default=60.0, help="run the old method only below this many seconds")
    parser.add_argument("--m", type=int, nargs="+", default=[1, 3, 10], help="numbers selected")
    parser.add_argument("--new-only", action="store_true", help="time the current implementation only")
    args = parser.parse_args()
    sizes = (200,) if args.quick else (200, 1000)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print(f"{'problem':<11} {'n':>5} {'m':>2} {'search':<24} {'new s':>7} {'new cpu':>7} {'evals':>6} {'old s':>9} "
          f"{'ratio':>7}  same result")
    for n in sizes:
        for name, new, old in problems(n):
            for m in args.m:
                for which in ("best_epsilon", "perfectly_fair_epsilons"):
                    calls = []
                    value, seconds, cpu = timed(lambda new=new, which=which, m=m, calls=calls: search(
                        new, which, m, progress=lambda done, total: calls.append(done)))
                    if args.new_only:
                        print(f"{name:<11} {n:>5} {m:>2} {which:<24} {seconds:7.2f} {cpu:7.2f} {len(calls):6d}", flush=True)
                        continue
                    timed(lambda old=old, m=m: old.fairness_gap(3.0, m))  # the old Monte Carlo draws, outside the timing
                    _, one, _ = timed(lambda old=old, m=m: old.fairness_gap(3.0, m))
                    both = which == "best_epsilon" and not old.monotone_likelihood_ratio()  # old: gamma and theta apart
                    projected = one * len(calls) * (2 if both else 1)
                    if projected <= args.old_limit:
                        old_value, old_seconds, _ = timed(lambda old=old, which=which, m=m: search(old, which, m))
                        verdict, old_text = same(value, old_value), f"{old_seconds:9.2f}"
                    else:
                        old_seconds, verdict, old_text = projected, "old not run (time extrapolated)", f"~{projected:8.0f}"
                    print(f"{name:<11} {n:>5} {m:>2} {which:<24} {seconds:7.2f} {cpu:7.2f} {len(calls):6d} {old_text} "
                          f"{old_seconds / seconds:7.1f}  {verdict}", flush=True)


if __name__ == "__main__":
    main()
