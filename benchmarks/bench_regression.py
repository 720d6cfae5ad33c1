"""Speed of the regression post-processor's barycenter solver, and the blind-vs-aware comparison (printed, never asserted).

The target is a median of at most 1 ms per solve at k = 180 bins with 4 groups (Law School) for
alpha in {0, 0.01, 0.05, 0.1}, with the speed-up over plain HiGHS on the same LP (expected: several
hundred times), and rows for k = 1,000 with 4 groups and k = 180 with 20 groups.  Timings are
medians in this process; the ratios against the references (run in the same process) are what to
compare across machines.

* closed form: :func:`dpfair.regression.solve_barycenter_lp`;
* HiGHS: ``solve_barycenter_lp_reference`` (the whole LP in scipy's HiGHS, every coupling cell a variable);
* column generation: ``solve_barycenter_column_generation``, the previous solver (certified column
  generation over ``highspy``).

Both references live in the tests, not in the library (``tests/regression/lp_reference.py``); this
script puts that folder on ``sys.path`` to import them, so it runs from a source checkout with the
``test`` extra installed (``highspy`` is a test dependency, not a runtime one).

``--full-figures`` also times the full (not ``--quick``) Figures 2-4 experiments with 2 workers.

``--blind [OUT]`` runs only the ``regression-blind`` experiment (Law School and Communities, 5 splits, epsilon 0.5 /
1 / 2 / inf, secure noise; about 20 s a run on one core) three times (``--repeats R``: the secure noise differs
between runs; the regression guide's table is ``--repeats 6``), writes the first run's figure under
``OUT/run0/report`` and prints the medians over every split of every run as the reStructuredText table of the
regression guide (``docs/user_guide/regression.rst``), then the checks: held-out KS <= alpha + 0.05 at epsilon = 1
(each run's 5-split median, and the aware post-processor's beside it), and the blind-to-aware excess-MSE ratio beside
the blind oracle's.  ``--protects attribute`` runs ``regression-blind-attribute`` instead: both post-processors with
``protects="attribute"`` (only the sensitive attribute private, their tables released on their public column totals;
the membership model the same private histogram).

``--blind-variants`` prints, paired on the same splits and seeded noises (6 per split at epsilon = 1), the held-out KS
and blind-to-aware excess-MSE ratio of the experiment's blind post-processor ("true groups") beside alternatives
(``_blind_variant_classes``): two prototypes that compute the groups' distributions through the membership model
instead of the true groups, the membership model trained on the regressor's rows, the bins' midpoints instead of
their public means, equal-mass public bins, the table's group shares smoothed across adjacent score bins, cells
merged before the release by public counts, other numbers of bins and membership bins, other global margins, the
robust band constraints and the least-sensitive second program of ``dpfair.regression._blind_lp.solve_blind_lp``
(``robust ...``, ``steady ...``), a margin per pair of groups (``pair margin ...``), other membership models on
Communities (``race logistic ...``, ``race histogram ...``), and the aware post-processor on the same public bin means
as the blind one (``aware (bin means)``, its ratio to the aware default, printed first).  Every variant takes about
5 s per dataset and epsilon on one core: pass ``--only "NAME;NAME"`` to keep some of them; ``--noises N`` sets the
noises per split; the environment variables ``BLIND_DATASETS`` and ``BLIND_EPSILONS`` (comma-separated) restrict the
datasets and epsilons, and ``BLIND_REGRESSOR_ROWS`` (";"-separated names) the variants also run with the membership
model trained on the regressor's rows.

``--blind-frontier`` fits the blind program *without noise* (exact table and membership histogram) on the same splits
for several cell configurations, sweeps the ``alpha`` it is solved at, and prints, per comparison ``alpha``, the least
median excess MSE among the solutions whose median held-out KS is within ``alpha + 0.05`` (chosen on the test rows:
optimistic), over the aware post-processor's at ``epsilon = 1`` and without noise (about 20 s a dataset).

Run: ``DPFAIR_DATA_HOME=... .venv/bin/python benchmarks/bench_regression.py [--full-figures | --blind [OUT] [--repeats R]
| --blind-variants | --blind-frontier]``.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.model_selection import train_test_split

from dpfair.datasets import load_law_school
from dpfair.regression import FairRegressionPostProcessor, solve_barycenter_lp

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "regression"))
from lp_reference import solve_barycenter_column_generation, solve_barycenter_lp_reference

LAW_GROUPS = ["asian", "black", "hisp", "white"]  # declared (sorted), never read off the data
ALPHAS = (0.0, 0.01, 0.05, 0.1)


def _median_time(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def _law_school_pmfs(k: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    data = load_law_school()
    y, groups = data.y.to_numpy(float), data.sensitive.to_numpy()
    y_train, _, g_train, _ = train_test_split(y, groups, test_size=0.3, random_state=seed)
    pp = FairRegressionPostProcessor(epsilon=1.0, n_bins=k, bounds=(1.0, 4.0), groups=LAW_GROUPS, random_state=seed)
    pp.fit(y_train, sensitive_features=g_train)
    return pp.pmfs_, pp.group_weights_ / pp.group_weights_.sum(), (np.arange(k) + 0.5) / k


def _synthetic_pmfs(n_groups: int, k: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    centres = rng.uniform(0.3, 0.7, size=n_groups)
    x = (np.arange(k) + 0.5) / k
    pmfs = np.exp(-0.5 * ((x[None, :] - centres[:, None]) / 0.12) ** 2) + rng.exponential(0.02, size=(n_groups, k))
    pmfs /= pmfs.sum(axis=1, keepdims=True)
    return pmfs, rng.dirichlet(np.ones(n_groups)), x


def solver_rows(repeat: int = 50) -> None:
    print("Per-solve time of the barycenter LP (median; contended machines inflate every column alike):")
    print(f"{'instance':<28}{'alpha':>7}{'closed form':>14}{'HiGHS':>11}{'speed-up':>10}{'col. gen.':>11}{'speed-up':>10}"
          f"{'|gap|':>10}")
    law = _law_school_pmfs(180, 33)
    cases = [("Law School k=180, 4 groups", law, True), ("synthetic k=1000, 4 groups", _synthetic_pmfs(4, 1000, 0), False),
             ("synthetic k=180, 20 groups", _synthetic_pmfs(20, 180, 1), True)]
    for name, (pmfs, weights, grid), with_ref in cases:
        for alpha in ALPHAS:
            fast = _median_time(lambda p=pmfs, w=weights, g=grid, a=alpha: solve_barycenter_lp(p, w, g, a), repeat)
            line = f"{name:<28}{alpha:>7g}{fast * 1e3:>11.3f} ms"
            if with_ref:
                t0 = time.perf_counter()
                ref = solve_barycenter_lp_reference(pmfs, weights, grid, alpha)
                ref_time = time.perf_counter() - t0
                cg_time = _median_time(
                    lambda p=pmfs, w=weights, g=grid, a=alpha: solve_barycenter_column_generation(p, w, g, a), 1)
                gap = abs(solve_barycenter_lp(pmfs, weights, grid, alpha).objective - ref.objective)
                line += f"{ref_time:>9.2f} s{ref_time / fast:>9.0f}x{cg_time * 1e3:>8.1f} ms{cg_time / fast:>9.0f}x{gap:>10.1e}"
            print(line)


def fit_rows(n_seeds: int = 5) -> None:
    data = load_law_school()
    y, groups = data.y.to_numpy(float), data.sensitive.to_numpy()
    times = []
    for seed in range(33, 33 + n_seeds):
        y_train, _, g_train, _ = train_test_split(y, groups, test_size=0.3, random_state=seed)
        for alpha in ALPHAS:
            pp = FairRegressionPostProcessor(epsilon=1.0, n_bins=180, alpha=alpha, bounds=(1.0, 4.0), groups=LAW_GROUPS,
                                             random_state=seed)
            t0 = time.perf_counter()
            pp.fit(y_train, sensitive_features=g_train)
            times.append(time.perf_counter() - t0)
    print(f"Full fit of FairRegressionPostProcessor, Law School, k=180, epsilon=1: median {np.median(times) * 1e3:.2f} ms "
          f"over {len(times)} fits (histogram, seeded Laplace noise, isotonic repair, solve, sparse maps).")


def big_row() -> None:
    rng = np.random.default_rng(0)
    n, n_groups, k = 20_000, 20, 100_000
    g = rng.integers(n_groups, size=n)
    y = np.clip(rng.normal(0.4 + 0.01 * g, 0.15), 0, 1)
    t0 = time.perf_counter()
    pp = FairRegressionPostProcessor(epsilon=5.0, n_bins=k, alpha=0.05, bounds=(0, 1), groups=list(range(n_groups)),
                                     random_state=0).fit(y, sensitive_features=g)
    fit = time.perf_counter() - t0
    t0 = time.perf_counter()
    pp.predict(y, sensitive_features=g, random_state=0)
    print(f"n_bins=100,000 with 20 groups: fit {fit:.1f} s, predict {n} rows {time.perf_counter() - t0:.2f} s, "
          f"{pp.sparse_transport_.nnz:,} transport entries (dense would be {n_groups * k * k * 8 / 2**30:.0f} GiB).")


def full_figures() -> None:
    ids = ["regression-figure2-communities", "regression-figure2-law-school", "regression-law-envelopes"]
    with tempfile.TemporaryDirectory() as out:
        t0 = time.perf_counter()
        for spec_id in ids:
            subprocess.run([sys.executable, "-m", "dpfair.cli", "run", spec_id, "--workers", "2", "--out", out],
                           check=True, env={**os.environ, "MPLBACKEND": "Agg"}, stdout=subprocess.DEVNULL)
        print(f"Full Figures 2-4 ({', '.join(ids)}), 2 workers: {time.perf_counter() - t0:.0f} s")


def blind_comparison(out: str, repeats: int = 3, protects: str = "records") -> None:
    """Run ``regression-blind`` (full variant) ``repeats`` times under ``out``, draw its figure, print the guide's table.

    ``protects="attribute"``: ``regression-blind-attribute`` (both post-processors under the attribute relation).
    """
    import pandas as pd

    from dpfair.experiments.regression_blind import BLIND_ALPHAS, blind_summary
    from dpfair.experiments.store import ResultsStore

    env = {**os.environ, "MPLBACKEND": "Agg", "OPENBLAS_NUM_THREADS": "1"}
    runs = []
    spec_id = "regression-blind" if protects == "records" else "regression-blind-attribute"
    for repeat in range(repeats):
        folder = str(Path(out) / f"run{repeat}")
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "dpfair.cli", "run", spec_id, "--workers", "1", "--quiet",
                        "--out", folder], check=True, env=env)
        if repeat == 0:
            subprocess.run([sys.executable, "-m", "dpfair.cli", "report", "--out", folder], check=True, env=env,
                           stdout=subprocess.DEVNULL)
            print(f"figure: {folder}/report/figures/regression_blind.png")
        print(f"{spec_id} run {repeat}: {time.perf_counter() - t0:.0f} s")
        results = ResultsStore(folder).results([spec_id])
        runs.append(results.assign(seed=results["seed"] + 1000 * repeat))  # every (run, split) its own row
    table = blind_summary(pd.concat(runs, ignore_index=True)).reset_index()
    per_run = [blind_summary(results).reset_index() for results in runs]
    columns = ["dataset", "epsilon", "alpha", "KS aware", "KS blind", "excess MSE aware", "excess MSE blind",
               "blind / aware", "excess MSE oracle", "oracle blind / aware"]
    widths = [11, 7, 5, 8, 8, 16, 16, 13, 17, 20]
    rule = "  ".join("=" * w for w in widths)
    print(f"medians over {repeats} runs x 5 splits:")
    print(rule)
    print("  ".join(f"{c:<{w}}" for c, w in zip(columns, widths, strict=True)).rstrip())
    print(rule)
    for _, row in table.iterrows():
        cells = [row["dataset"], "inf" if np.isinf(row["epsilon"]) else f"{row['epsilon']:g}", f"{row['alpha']:g}"]
        cells += ["" if pd.isna(row.get(c)) else f"{row[c]:.{2 if c.endswith('blind / aware') else 4}f}"
                  for c in columns[3:]]
        print("  ".join(f"{c:<{w}}" for c, w in zip(cells, widths, strict=True)).rstrip())
    print(rule)
    for index, row in table[table["epsilon"] == 1.0].iterrows():
        blind = [part.loc[index, "KS blind"] for part in per_run]
        aware = [part.loc[index, "KS aware"] for part in per_run]
        ratio = [part.loc[index, "blind / aware"] for part in per_run]
        within = sum(value <= row["alpha"] + 0.05 for value in blind)
        print(f"epsilon=1 {row['dataset']:<12} alpha={row['alpha']:g}: 5-split median KS blind "
              f"{min(blind):.3f}-{max(blind):.3f} ({within}/{repeats} runs <= alpha + 0.05), aware "
              f"{min(aware):.3f}-{max(aware):.3f}; blind/aware excess MSE {min(ratio):.2f}-{max(ratio):.2f}")
    for _, row in table[np.isinf(table["epsilon"])].iterrows():
        print(f"epsilon=inf {row['dataset']:<12} alpha={row['alpha']:g}: blind oracle / aware oracle excess MSE "
              f"{row['oracle blind / aware']:.2f} (both in-sample on the test rows, KS alpha); blind oracle / aware "
              f"post-processor {row['excess MSE oracle'] / row['excess MSE aware']:.2f}")
    assert set(table["alpha"]) == set(BLIND_ALPHAS)


# ---------------------------------------------------------------------- alternatives to the blind table, paired
def _blind_variant_classes() -> dict[str, type]:
    """Prototypes of two readings of "the groups' distributions through the membership model" (not in the library).

    ``population (rows)``: group ``a``'s mass in cell ``c`` is ``sum_i 1[c_i = c] g_a(x_i) / n`` (no group label
    read; the same Laplace noise as the table of true groups).  ``population (cells)``: the cell counts (one noisy
    column, 20% of epsilon) times each membership cell's noisy group shares (a groups x membership cells table, 80%);
    exact at epsilon = inf only where the group is independent of the score bin within a membership cell.
    """
    from dataclasses import replace

    from dpfair.privacy.mechanisms import laplace_mechanism
    from dpfair.regression import BlindFairRegressionPostProcessor
    from dpfair.regression.postprocessing import _outputs_and_bounds, _ReleasedHistogram

    class Rows(BlindFairRegressionPostProcessor):
        def _compute_statistics(self, params, data):
            exact = super()._compute_statistics(params, data)
            _, outputs, bounds = _outputs_and_bounds(self, params, data)
            cells = self._cells_of(outputs, data.membership, bounds, params.options.n_bins, params.options.membership_bins)
            joint = np.zeros_like(exact.joint)
            for a in range(joint.shape[0]):
                np.add.at(joint[a], cells, data.membership[:, a] / outputs.size)
            return replace(exact, joint=joint)

    class Cells(BlindFairRegressionPostProcessor):
        def _draw_noise(self, params, statistics, noise):
            joint, n, eps = statistics.joint, statistics.n_rows, params.epsilon
            n_groups, k = joint.shape[0], params.options.n_bins
            score, shares = joint.sum(axis=0), joint.reshape(n_groups, k, -1).sum(axis=1)
            if not np.isinf(eps):  # each table: one row moves 1/n between two entries (L1 2/n); 0.2 + 0.8 = epsilon
                score = laplace_mechanism(score, sensitivity=2.0 / n, epsilon=0.2 * eps, noise=noise)
                shares = laplace_mechanism(shares, sensitivity=2.0 / n, epsilon=0.8 * eps, noise=noise)
            shares = np.maximum(shares, 0.0)
            total = shares.sum(axis=0)
            shares = np.where(total > 0, shares / np.where(total > 0, total, 1.0), 1.0 / n_groups)
            table = (score.reshape(1, k, -1) * shares[:, None, :]).reshape(n_groups, -1)
            return _ReleasedHistogram(estimator=statistics.estimator, bounds=statistics.bounds, histogram=table,
                                      n_rows=n, predict_seed=None)

    class QuantileBins(BlindFairRegressionPostProcessor):
        """Score bins at equal-mass quantiles of public scores (``quantile_edges``, set per instance) instead of equal
        width: the cells are overridden here; the output points are the bins' means of the same scores."""

        quantile_edges: np.ndarray = np.empty(0)

        def _cells_of(self, outputs, membership, bounds, k, membership_bins):
            from dpfair.regression._blind_lp import membership_cell_index, n_membership_cells

            n_m = 1 if membership.shape[1] == 1 else n_membership_cells(membership.shape[1], membership_bins)
            return (np.searchsorted(self.quantile_edges, outputs, side="right") * n_m
                    + membership_cell_index(membership, membership_bins))

    class Smoothed(BlindFairRegressionPostProcessor):
        """Each cell's group shares smoothed across adjacent score bins of its membership cell (post-processing).

        ``H'(a, s, m) = T(s, m) sum_s' K(s - s') H(a, s', m) / sum_s' K(s - s') T(s', m)`` with ``T`` the released
        cell totals (kept) and ``K = (h, 1 - 2h, h)``: a kernel ratio estimate of the shares, times each total.
        """

        h = 0.25

        def _solve(self, params, noisy, data):
            table = noisy.histogram
            cube = table.reshape(table.shape[0], params.options.n_bins, -1)
            total = cube.sum(axis=0)

            def smooth(values):  # along the score axis (axis -2), zero-padded ends
                out = (1 - 2 * self.h) * values
                out[..., 1:, :] += self.h * values[..., :-1, :]
                out[..., :-1, :] += self.h * values[..., 1:, :]
                return out

            num, den = smooth(cube.copy()), smooth(total.copy())
            shares = np.where(den > 0, num / np.where(den > 0, den, 1.0), cube / np.where(total != 0, total, 1.0))
            return super()._solve(params, replace(noisy, histogram=(shares * total[None]).reshape(table.shape)), data)

    class PublicPooling(BlindFairRegressionPostProcessor):
        """Cells merged before the release by public counts: within each score bin, the cells holding fewer than
        ``min_rows`` of the regressor's own rows join the bin's largest such cell (``cell_map``, set per instance);
        the merged-away entries are structurally 0 and released without noise."""

        cell_map: np.ndarray = np.empty(0, dtype=np.int64)

        def _cells_of(self, outputs, membership, bounds, k, membership_bins):
            raw = super()._cells_of(outputs, membership, bounds, k, membership_bins)
            return self.cell_map[raw] if self.cell_map.size else raw

        def _draw_noise(self, params, statistics, noise):
            released = super()._draw_noise(params, statistics, noise)
            table = released.histogram.copy()
            table[:, self.cell_map != np.arange(self.cell_map.size)] = 0.0
            return replace(released, histogram=table)

    class Robust(BlindFairRegressionPostProcessor):
        """The robust band constraints of ``solve_blind_lp`` (``margins``): each group's band at each cut charged
        ``robust`` noise standard deviations of its released CDF for the map chosen (``robust_margin_weights``), and/or
        (``tol`` not None) a second program: among the maps whose cost is within ``tol`` (relative) of the optimum, the
        one whose groups' CDFs the noise moves least (``steady``).  Post-processing of the same release."""

        robust = 0.0
        tol = None

        def _solution_attributes(self, cell_pmfs, weights, pooling, *args):
            import functools

            import dpfair.regression.blind as blind_module
            from dpfair.regression._blind_lp import robust_margin_weights, solve_blind_lp

            scale, sizes = args[-2][0], np.bincount(pooling[0])
            sensitivity = robust_margin_weights(1.0, scale, sizes, weights)
            blind_module.solve_blind_lp = functools.partial(
                solve_blind_lp, margins=robust_margin_weights(self.robust, scale, sizes, weights),
                steady=None if self.tol is None or sensitivity is None else (sensitivity, self.tol))
            try:
                return BlindFairRegressionPostProcessor._solution_attributes(cell_pmfs, weights, pooling, *args)
            finally:
                blind_module.solve_blind_lp = solve_blind_lp

    class PairMargin(BlindFairRegressionPostProcessor):
        """A margin per pair of groups: the pair (a, b) solved at ``alpha`` less ``pair`` standard deviations of the
        noise in *its own* CDF gap, ``b sqrt(n_pooled) sqrt(1 / w_a^2 + 1 / w_b^2)``, instead of every pair at the
        two lightest groups' (``noise_margin``); pairwise KS rows (``_pairwise_blind_lp``).  Released quantities only."""

        pair = 0.8

        def _solution_attributes(self, cell_pmfs, weights, pooling, *args):
            import dpfair.regression.blind as blind_module

            scale, original = args[-2][0], blind_module.solve_blind_lp
            present = weights > 0
            inverse = np.where(present, 1.0 / np.where(present, weights, 1.0), 0.0)
            margins = self.pair * scale * math.sqrt(cell_pmfs.shape[1]) * np.sqrt(inverse[:, None] ** 2
                                                                                   + inverse[None, :] ** 2)
            blind_module.solve_blind_lp = lambda pmfs, w, cell_bin, grid, alpha: _pairwise_blind_lp(
                pmfs, w, cell_bin, grid, np.maximum(alpha - margins, 0.0))
            try:
                return BlindFairRegressionPostProcessor._solution_attributes(cell_pmfs, weights, pooling, *args)
            finally:
                blind_module.solve_blind_lp = original

    base = BlindFairRegressionPostProcessor
    return {"true groups": (base, {}), "population (rows)": (Rows, {}), "population (cells)": (Cells, {}),
            "midpoints": (base, {"values": "midpoints"}),
            "6 bins, B=2, midpoints": (base, {"n_bins": 6, "membership_bins": 2, "values": "midpoints"}),
            "public quantile bins": (QuantileBins, {"values": "quantiles"}),
            "smoothed h=0.15": (Smoothed, {"h": 0.15}), "smoothed h=0.25": (Smoothed, {"h": 0.25}),
            "B=1": (base, {"membership_bins": 1}), "B=2": (base, {"membership_bins": 2}),
            **{f"{k} bins": (base, {"n_bins": k}) for k in (6, 8, 10, 12, 16)},
            **{f"public pooling {t}": (PublicPooling, {"min_rows": t}) for t in (1, 5, 20)},
            **{f"public pooling {t}, no noisy pooling": (PublicPooling, {"min_rows": t, "pool_threshold": 0.0})
               for t in (5, 20)},
            **{f"robust {r:g}": (Robust, {"robust": r, "noise_margin": 0.0}) for r in (0.4, 0.6, 0.8, 1.0, 1.2)},
            **{f"robust {r:g} + margin {m:g}": (Robust, {"robust": r, "noise_margin": m})
               for r in (0.3, 0.5) for m in (0.3, 0.5)},
            **{f"steady {t:g}, margin {m:g}": (Robust, {"tol": t, "noise_margin": m})
               for t in (0.02, 0.05) for m in (0.4, 0.6, 0.8)},
            **{f"margin {m:g}": (base, {"noise_margin": m}) for m in (0.4, 0.6, 1.0)},
            **{f"B={b}": (base, {"membership_bins": b}) for b in (3, 4)},
            **{f"B={b}, robust {r:g}": (Robust, {"membership_bins": b, "robust": r, "noise_margin": 0.0})
               for b in (3, 4) for r in (0.6, 0.8, 1.0)},
            **{f"B={b}, 16 bins, robust {r:g}": (Robust, {"membership_bins": b, "n_bins": 16, "robust": r,
                                                          "noise_margin": 0.0}) for b in (2, 3) for r in (0.8, 1.0)},
            **{f"pair margin {m:g}": (PairMargin, {"pair": m, "noise_margin": 0.0}) for m in (0.6, 0.8, 1.0, 1.2)},
            # Communities only: other membership models (the race columns other than the group's own)
            **{f"{kind}, {k} bins, B={b}": (base, {"membership": kind, "n_bins": k, "membership_bins": b})
               for kind in ("race logistic", "race histogram") for k, b in ((8, 1), (8, 2), (12, 2))},
            **{f"race logistic ranked, {k} bins, B={b}": (base, {"membership": "race logistic ranked", "n_bins": k,
                                                                  "membership_bins": b})
               for k, b in ((8, 1), (8, 2), (8, 3), (12, 2), (12, 3))}}


class _PrivateRaceLogistic:
    """A private model of ``P(A | x)`` on Communities' other race columns (``_RACE_COLUMNS``, each in [0, 1], so the
    declared row norm is ``sqrt(3)``): :class:`dpfair.linear_model.DPLogisticRegression` at ``epsilon``."""

    def __init__(self, epsilon: float, random_state: Any) -> None:
        from dpfair.linear_model import DPLogisticRegression

        self.model = DPLogisticRegression(epsilon=epsilon, data_norm=math.sqrt(len(_RACE_COLUMNS)),
                                          random_state=random_state)

    def fit(self, frame: Any, groups: np.ndarray) -> _PrivateRaceLogistic:
        self.model.fit(np.clip(frame[list(_RACE_COLUMNS)].to_numpy(float), 0.0, 1.0), groups)
        self.classes_ = self.model.classes_
        return self

    def predict_proba(self, frame: Any) -> np.ndarray:
        return self.model.predict_proba(np.clip(frame[list(_RACE_COLUMNS)].to_numpy(float), 0.0, 1.0))


class _Ranked:
    """Two groups: a membership model's ``P(A = second | x)`` replaced by its rank among public rows' (the regressor's
    own, ``reference``), so that the lattice cells are public quantiles of the model's score whatever its
    calibration (a shrunk private logistic model puts every row in the middle cell otherwise)."""

    def __init__(self, model: Any, reference: Any) -> None:
        self.model, self.reference = model, reference

    def fit(self, frame: Any, groups: np.ndarray) -> _Ranked:
        self.model.fit(frame, groups)
        self.classes_ = self.model.classes_
        self.scores_ = np.sort(self.model.predict_proba(self.reference)[:, 1])
        return self

    def predict_proba(self, frame: Any) -> np.ndarray:
        rank = np.searchsorted(self.scores_, self.model.predict_proba(frame)[:, 1], side="right") / self.scores_.size
        return np.column_stack([1.0 - rank, rank])


def _variant_membership(kind: str, declared: list, epsilon: float, seed: int, reference: Any) -> Any:
    """Another membership model for a variant: ``"race logistic"`` (``_PrivateRaceLogistic``), the same
    ``"ranked"`` (``_Ranked`` on ``reference``) or ``"race histogram"`` (the experiment's histogram with
    ``racePctAsian`` cut at 0.1 and 0.3 besides its own edges)."""
    from dpfair.experiments import regression_blind as rb

    if kind == "race logistic":
        return _PrivateRaceLogistic(epsilon, seed)
    if kind == "race logistic ranked":
        return _Ranked(_PrivateRaceLogistic(epsilon, seed), reference)
    edges = {**rb.BLIND_SETUP["communities"]["membership_edges"], "racePctAsian": (0.1, 0.3)}
    return rb._HistogramMembershipModel(edges, declared, epsilon, random_state=seed)


def _pairwise_blind_lp(cell_pmfs: np.ndarray, weights: np.ndarray, cell_bin: np.ndarray, grid: np.ndarray,
                       alphas: np.ndarray) -> tuple[np.ndarray, float]:
    """The blind program with one KS tolerance per pair of groups, ``F_a(l) - F_b(l) <= alphas[a, b]`` (a prototype
    for ``PairMargin``: dense pairwise rows on the cumulative variables ``T(c, l)``, HiGHS)."""
    from scipy import optimize

    n_cells = cell_pmfs.shape[1]
    k, n_cuts = grid.size, grid.size - 1
    mass = (weights / weights.sum()) @ cell_pmfs
    active = np.flatnonzero(mass > 0)
    transport = np.zeros((n_cells, k))
    transport[np.arange(n_cells), cell_bin] = 1.0
    groups = np.flatnonzero(weights > 0)
    if k == 1 or active.size == 0 or groups.size <= 1:
        return transport, 0.0
    n_active = active.size
    cost = (grid[cell_bin[active]][:, None] - grid[None, :]) ** 2
    c_t = (mass[active][:, None] * (cost[:, :-1] - cost[:, 1:])).ravel()
    rows, rhs = [], []
    for cell in range(n_active):
        for cut in range(n_cuts - 1):
            row = np.zeros(n_active * n_cuts)
            row[cell * n_cuts + cut], row[cell * n_cuts + cut + 1] = 1.0, -1.0
            rows.append(row)
            rhs.append(0.0)
    for a in groups:
        for b in groups:
            if a == b:
                continue
            diff = cell_pmfs[a, active] - cell_pmfs[b, active]
            for cut in range(n_cuts):
                row = np.zeros(n_active * n_cuts)
                row[np.arange(n_active) * n_cuts + cut] = diff
                rows.append(row)
                rhs.append(alphas[a, b])
    result = optimize.linprog(c_t, A_ub=np.array(rows), b_ub=np.array(rhs), bounds=(0.0, 1.0), method="highs")
    cdf = np.maximum.accumulate(np.clip(result.x.reshape(n_active, n_cuts), 0.0, 1.0), axis=1)
    transport[active] = np.diff(np.concatenate([cdf, np.ones((n_active, 1))], axis=1), axis=1, prepend=0.0)
    return transport, float(result.fun + mass[active] @ cost[:, -1])


_public_rows: dict[str, np.ndarray] = {}

#: The variants also run with the membership model trained on the regressor's rows (``BLIND_REGRESSOR_ROWS``,
#: ";"-separated names; default the experiment's own).
_REGRESSOR_ROWS = tuple(os.environ.get("BLIND_REGRESSOR_ROWS", "true groups").split(";"))


def _public_variant(pp: Any, spec: dict[str, Any], reference: np.ndarray, bounds: tuple[float, float]) -> Any:
    """Set a variant's overrides on ``pp``: bins, membership bins, smoothing, and its output points.

    ``reference``: the regressor's outputs on its own training rows (public here: the regressor is trained on other
    rows than the post-processor's).  Output points (``spec["values"]``): their bin means (``"means"``, the
    experiment's default), the midpoints, or equal-mass bins of them with their means (``"quantiles"``).
    """
    from dpfair.experiments.regression_blind import _public_bin_means
    from dpfair.regression._blind_lp import n_membership_cells

    pp.set_params(**{key: spec[key] for key in ("n_bins", "membership_bins", "pool_threshold", "noise_margin",
                                                "bounds") if key in spec})
    bounds = pp.bounds
    if "h" in spec:
        pp.h = spec["h"]
    for name in ("robust", "tol", "pair"):
        if name in spec:
            setattr(pp, name, spec[name])
    k, values = pp.n_bins, spec.get("values", "means")
    if values == "means":
        pp.set_params(bin_values=_public_bin_means(reference, bounds, k))
    if "min_rows" in spec:  # the regressor's own rows' cells (public here), counted per cell
        rows = _public_rows
        raw = pp._cells_of(rows["outputs"], rows["membership"], bounds, k, pp.membership_bins)
        counts = np.bincount(raw, minlength=k * n_membership_cells(len(pp.groups), pp.membership_bins)).reshape(k, -1)
        cell_map = np.arange(counts.size).reshape(k, -1)
        for s in range(k):
            low = counts[s] < spec["min_rows"]
            if low.any() and (~low).any():
                cell_map[s, low] = cell_map[s, np.argmax(counts[s])]
            elif low.all():
                cell_map[s, :] = cell_map[s, 0]
        pp.cell_map = cell_map.ravel()
    if values == "quantiles":
        clipped = np.clip(reference, *bounds)
        pp.quantile_edges = np.quantile(clipped, np.arange(1, k) / k)
        which = np.searchsorted(pp.quantile_edges, clipped, side="right")
        means = np.bincount(which, clipped, k) / np.maximum(np.bincount(which, minlength=k), 1)
        pp.set_params(bin_values=np.maximum.accumulate(means))
    return pp


class _AwareBinMeans(FairRegressionPostProcessor):
    """The aware post-processor with each bin output at a declared point (``values``) instead of its midpoint.

    The same release (the same noise for the same seed); only line 10's grid and ``grid_`` change: the closed-form
    barycenter program takes any increasing grid.  Public here as the blind one's ``bin_values`` are (the ridge's
    outputs on its own rows).
    """

    values: np.ndarray = np.empty(0)  # set per instance before fit

    def _solve(self, params, noisy, data):
        return {**super()._solve(params, noisy, data), "grid_": np.asarray(self.values, float)}

    def _solve_maps(self, pmfs, weights, k, width, alpha):
        import dpfair.regression.postprocessing as aware_module

        lo = self.bounds[0]
        unit = (np.asarray(self.values, float) - lo) / width
        original = aware_module.solve_barycenter_lp
        aware_module.solve_barycenter_lp = lambda p, w, _grid, a: original(p, w, unit, a)
        try:
            return FairRegressionPostProcessor._solve_maps(pmfs, weights, k, width, alpha)
        finally:
            aware_module.solve_barycenter_lp = original


def _blind_variant_run(dataset: str, split: int, epsilon: float, noise_seed: int,
                       only: tuple[str, ...] | None = None) -> dict[tuple[str, float], tuple]:
    """One split and one seeded noise: the aware post-processor and each blind variant on the same draws."""
    import warnings

    from sklearn.linear_model import Ridge

    from dpfair.experiments import regression_blind as rb
    from dpfair.experiments.regression import DATASETS
    from dpfair.regression import FairRegressionPostProcessor

    setup, info = rb.BLIND_SETUP[dataset], DATASETS[dataset]
    declared = list(info["groups"])
    X, y, groups, features = rb._blind_frame(dataset)
    rest, test = train_test_split(np.arange(y.size), test_size=0.3, random_state=split)
    fit_reg, post = train_test_split(rest, test_size=0.5, random_state=split)
    ridge = Ridge(alpha=1.0).fit(X.iloc[fit_reg][features].to_numpy(float), y[fit_reg])

    class Regressor:
        def predict(self, frame):
            return ridge.predict(frame[features].to_numpy(float))

    f = Regressor()
    base = float(np.mean((f.predict(X.iloc[test]) - y[test]) ** 2))
    bounds = rb._linear_output_range(ridge, features, setup["feature_box"], info["bounds"])
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        aware = FairRegressionPostProcessor(f, epsilon=epsilon, n_bins=setup["aware_bins"], bounds=info["bounds"],
                                            groups=declared, random_state=noise_seed).fit(
            X.iloc[post], sensitive_features=groups[post])
        fitted = [("aware", aware)]
        if only is None or "aware (bin means)" in only:  # the aware program on the same public bin means as the blind
            means = rb._public_bin_means(f.predict(X.iloc[fit_reg]), info["bounds"], setup["aware_bins"])
            with_means = _AwareBinMeans(f, epsilon=epsilon, n_bins=setup["aware_bins"], bounds=info["bounds"],
                                        groups=declared, random_state=noise_seed)
            with_means.values = means
            fitted.append(("aware (bin means)", with_means.fit(X.iloc[post], sensitive_features=groups[post])))
        share = rb.BLIND_MEMBERSHIP_SHARE
        for rows, model_eps, table_eps, names in ((post, share * epsilon, (1 - share) * epsilon, None),
                                                   (fit_reg, epsilon, epsilon, _REGRESSOR_ROWS)):
            membership = rb._HistogramMembershipModel(setup["membership_edges"], declared, model_eps,
                                                      random_state=noise_seed + 7).fit(X.iloc[rows], groups[rows])
            for name, (cls, spec) in _blind_variant_classes().items():
                if "membership" in spec and dataset != "communities":
                    continue  # the other membership models read Communities' race columns
                if (names is None or name in names) and (only is None or name in only):
                    label = (name if names is None else "membership on the regressor's rows" if name == "true groups"
                             else f"{name}, membership on the regressor's rows")
                    model = (membership if "membership" not in spec else
                             _variant_membership(spec["membership"], declared, model_eps, noise_seed + 7,
                                                 X.iloc[fit_reg]).fit(X.iloc[rows], groups[rows]))
                    _public_rows.update(outputs=f.predict(X.iloc[fit_reg]), membership=np.asarray(
                        model.predict_proba(X.iloc[fit_reg])))
                    pp = _public_variant(cls(f, model, epsilon=table_eps, n_bins=setup["blind_bins"],
                                             membership_bins=setup["membership_bins"], groups=declared,
                                             noise_margin=rb.BLIND_NOISE_MARGIN, bounds=bounds,
                                             random_state=noise_seed), spec, f.predict(X.iloc[fit_reg]), bounds)
                    fitted.append((label, pp.fit(X.iloc[post], sensitive_features=groups[post])))
        for alpha in rb.BLIND_ALPHAS:
            for name, pp in fitted:
                pp.refit_alpha(alpha)
                dist = (rb._aware_distribution(pp, X.iloc[test], groups[test]) if name.startswith("aware")
                        else pp.output_distribution(X.iloc[test]))
                mse, ks = rb._distribution_metrics(dist, pp.grid_, y[test], groups[test], declared)
                out[(name, alpha)] = (mse - base, ks)
    return out


def blind_variants(n_noises: int = 6, only: tuple[str, ...] | None = None) -> None:
    """Print, per dataset and epsilon (1, inf), each blind variant's median held-out KS and excess-MSE ratio.

    Paired: every variant and the aware post-processor see the same 5 splits and, per split, the same ``n_noises``
    seeded noises (reproducible, not hardened; the guide's table uses secure noise).
    """
    from dpfair.experiments.regression_blind import BLIND_ALPHAS, BLIND_SEEDS

    datasets = os.environ.get("BLIND_DATASETS", "law_school,communities").split(",")
    epsilons = [float(e) for e in os.environ.get("BLIND_EPSILONS", "1,inf").split(",")]
    for dataset in datasets:
        for epsilon in epsilons:
            runs = [_blind_variant_run(dataset, split, epsilon, 1000 * r + split, only)
                    for split in BLIND_SEEDS for r in range(n_noises if np.isfinite(epsilon) else 1)]
            for name in [key for key, alpha in runs[0] if alpha == BLIND_ALPHAS[0]]:  # the aware one first (ratio 1)
                cells = []
                for alpha in BLIND_ALPHAS:
                    ks = np.median([run[(name, alpha)][1] for run in runs])
                    ratio = np.median([run[(name, alpha)][0] for run in runs]) / np.median(
                        [run[("aware", alpha)][0] for run in runs])
                    cells.append(f"{ks:.3f} / {ratio:.2f}")
                print(f"{dataset:<12} eps={epsilon:g} {name:<34} KS / blind-to-aware excess MSE at alpha "
                      f"{', '.join(f'{a:g}' for a in BLIND_ALPHAS)}: {'   '.join(cells)}", flush=True)


#: ``--blind-frontier``: the non-private blind configurations swept (name -> (n_bins, membership_bins, bounds); None:
#: the experiment's own), per dataset.
_FRONTIER_CELLS = {
    "law_school": {"experiment's cells": None, "B=3": (12, 3, None), "B=4": (12, 4, None), "16 bins, B=3": (16, 3, None),
                   "oracle cells (36 bins on [1, 4], B=4)": (36, 4, (1.0, 4.0))},
    "communities": {"experiment's cells": None, "B=2": (8, 2, None), "12 bins, B=1": (12, 1, None),
                    "12 bins, B=2": (12, 2, None), "12 bins, B=4": (12, 4, None), "16 bins, B=2": (16, 2, None),
                    "16 bins, B=4": (16, 4, None), "24 bins, B=2": (24, 2, None),
                    "oracle cells (12 bins, B=16)": (12, 16, None),
                    "12 bins, B=2, logistic membership": (12, 2, None, "logistic"),
                    "12 bins, B=4, logistic membership": (12, 4, None, "logistic"),
                    "16 bins, B=8, logistic membership": (16, 8, None, "logistic"),
                    **{f"{k} bins, B={b}, logistic on 3 race columns": (k, b, None, "race logistic")
                       for k, b in ((8, 1), (8, 2), (12, 2), (12, 4))}},
}
#: Communities' race columns other than the group's own (``racepctblack`` is dropped from every model).
_RACE_COLUMNS = ("racePctWhite", "racePctHisp", "racePctAsian")
_FRONTIER_ALPHAS = tuple(np.round(np.arange(0.0, 0.2001, 0.01), 2))


def blind_frontier(n_noises: int = 6) -> None:
    """The least excess MSE of a *non-private* blind map fitted on the post-processing rows at a held-out KS target.

    Per dataset and cell configuration (``_FRONTIER_CELLS``; the table exact, each bin output at its public mean, the
    experiment's membership histogram fitted exactly on the post-processing rows, or, where named, a non-private
    logistic model of ``P(A | x)`` on the regressor's features fitted there): the program solved at every ``alpha'``
    of ``_FRONTIER_ALPHAS`` on the same 5 splits as the experiment, the medians over splits of the held-out KS and
    excess MSE; for each ``alpha`` of the comparison, the least median excess MSE over the ``alpha'`` whose median KS
    is within ``alpha + 0.05`` (chosen on the test rows: optimistic for the blind map), divided by the aware
    post-processor's at ``alpha`` (epsilon = 1, ``n_noises`` seeded noises per split, and without noise).  What the
    private method's ratio could reach, at best, with these cells, membership models and rows.
    """
    import warnings

    from sklearn.linear_model import Ridge

    from dpfair.experiments import regression_blind as rb
    from dpfair.experiments.regression import DATASETS
    from dpfair.privacy import PrivacyLeakWarning
    from dpfair.regression import BlindFairRegressionPostProcessor

    for dataset in os.environ.get("BLIND_DATASETS", "law_school,communities").split(","):
        setup, info = rb.BLIND_SETUP[dataset], DATASETS[dataset]
        declared = list(info["groups"])
        X, y, groups, features = rb._blind_frame(dataset)
        aware = {eps: {a: [] for a in rb.BLIND_ALPHAS} for eps in (1.0, math.inf)}
        blind = {name: {a: [] for a in _FRONTIER_ALPHAS} for name in _FRONTIER_CELLS[dataset]}
        for split in rb.BLIND_SEEDS:
            rest, test = train_test_split(np.arange(y.size), test_size=0.3, random_state=split)
            fit_reg, post = train_test_split(rest, test_size=0.5, random_state=split)
            ridge = Ridge(alpha=1.0).fit(X.iloc[fit_reg][features].to_numpy(float), y[fit_reg])
            f = _FeatureRidge(ridge, features)
            base = float(np.mean((f.predict(X.iloc[test]) - y[test]) ** 2))
            public = f.predict(X.iloc[fit_reg])
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                for eps, seeds in ((1.0, range(n_noises)), (math.inf, [None])):
                    for r in seeds:
                        pp = FairRegressionPostProcessor(f, epsilon=eps, n_bins=setup["aware_bins"], groups=declared,
                                                         bounds=info["bounds"], random_state=None if r is None else
                                                         1000 * r + split).fit(X.iloc[post], sensitive_features=groups[post])
                        for alpha in rb.BLIND_ALPHAS:
                            dist = rb._aware_distribution(pp.refit_alpha(alpha), X.iloc[test], groups[test])
                            aware[eps][alpha].append(rb._distribution_metrics(dist, pp.grid_, y[test], groups[test],
                                                                              declared)[0] - base)
                membership = rb._HistogramMembershipModel(setup["membership_edges"], declared, math.inf).fit(
                    X.iloc[post], groups[post])
                models = {"logistic": _FeatureLogistic(features).fit(X.iloc[post], groups[post])}
                if dataset == "communities":
                    models["race logistic"] = _FeatureLogistic(list(_RACE_COLUMNS)).fit(X.iloc[post], groups[post])
                for name, cells in _FRONTIER_CELLS[dataset].items():
                    k, b, bounds = (cells or (setup["blind_bins"], setup["membership_bins"], None))[:3]
                    model = models[cells[3]] if cells is not None and len(cells) > 3 else membership
                    bounds = bounds or rb._linear_output_range(ridge, features, setup["feature_box"], info["bounds"])
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore", PrivacyLeakWarning)
                        pp = BlindFairRegressionPostProcessor(
                            f, model, epsilon=math.inf, n_bins=k, membership_bins=b, groups=declared, bounds=bounds,
                            bin_values=rb._public_bin_means(public, bounds, k)).fit(X.iloc[post],
                                                                                    sensitive_features=groups[post])
                    for alpha in _FRONTIER_ALPHAS:
                        pp.refit_alpha(float(alpha))
                        mse, ks = rb._distribution_metrics(pp.output_distribution(X.iloc[test]), pp.grid_, y[test],
                                                           groups[test], declared)
                        blind[name][alpha].append((mse - base, ks))
        for name, runs in blind.items():
            cells = []
            for alpha in rb.BLIND_ALPHAS:
                feasible = [(np.median([m for m, _ in runs[a]]), a, np.median([k for _, k in runs[a]]))
                            for a in _FRONTIER_ALPHAS if np.median([k for _, k in runs[a]]) <= alpha + 0.05 + 1e-12]
                if not feasible:
                    cells.append("none within")
                    continue
                best, at, ks = min(feasible)
                cells.append(f"{best / np.median(aware[1.0][alpha]):.2f} ({best / np.median(aware[math.inf][alpha]):.2f}"
                             f" vs eps=inf) at alpha'={at:g}, KS {ks:.3f}")
            print(f"{dataset:<12} non-private blind, {name:<38} least excess MSE / aware's at KS <= alpha + 0.05, alpha "
                  f"{', '.join(f'{a:g}' for a in rb.BLIND_ALPHAS)}: {'; '.join(cells)}", flush=True)


class _FeatureLogistic:
    """A non-private logistic model of ``P(A | x)`` on the regressor's (standardised) features: a better membership
    model than the experiment's histogram, for ``--blind-frontier`` only."""

    def __init__(self, features: list[str]) -> None:
        self.features = features

    def fit(self, frame: Any, groups: np.ndarray) -> _FeatureLogistic:
        from sklearn.linear_model import LogisticRegression
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler

        self.model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=5000)).fit(
            frame[self.features].to_numpy(float), groups)
        self.classes_ = self.model.classes_
        return self

    def predict_proba(self, frame: Any) -> np.ndarray:
        return self.model.predict_proba(frame[self.features].to_numpy(float))


class _FeatureRidge:
    """The ridge regressor on the declared feature columns of a DataFrame (as the experiment wraps it)."""

    def __init__(self, ridge: Any, features: list[str]) -> None:
        self.ridge, self.features = ridge, features

    def predict(self, frame: Any) -> np.ndarray:
        return self.ridge.predict(frame[self.features].to_numpy(float))


def main() -> None:
    if "--blind-frontier" in sys.argv:
        blind_frontier(int(sys.argv[sys.argv.index("--noises") + 1]) if "--noises" in sys.argv else 6)
        return
    if "--blind-variants" in sys.argv:
        only = sys.argv[sys.argv.index("--only") + 1].split(";") if "--only" in sys.argv else None
        noises = int(sys.argv[sys.argv.index("--noises") + 1]) if "--noises" in sys.argv else 6
        blind_variants(noises, None if only is None else tuple(only))
        return
    if "--blind" in sys.argv:
        repeats = int(sys.argv[sys.argv.index("--repeats") + 1]) if "--repeats" in sys.argv else 3
        protects = sys.argv[sys.argv.index("--protects") + 1] if "--protects" in sys.argv else "records"
        if protects not in ("records", "attribute"):
            raise SystemExit(f"--protects must be records or attribute, got {protects!r}")
        rest = [a for a in sys.argv[sys.argv.index("--blind") + 1:] if not a.startswith("--")][:1]
        if rest and rest[0] not in (str(repeats), protects):
            blind_comparison(rest[0], repeats, protects)
        else:
            with tempfile.TemporaryDirectory() as out:
                blind_comparison(out, repeats, protects)
        return
    solver_rows()
    fit_rows()
    big_row()
    if "--full-figures" in sys.argv:
        full_figures()


if __name__ == "__main__":
    main()
