"""The price of blindness at equal held-out KS: the blind regression post-processor against the aware one's front.

The regression guide's table compares the two post-processors at the same *target* ``alpha``.  Their held-out KS
differ there: the blind one is solved at ``alpha`` less its noise margin, the aware one at ``alpha`` itself, and on
Communities the aware one's held-out KS exceeds ``alpha + 0.05`` at ``alpha`` = 0.05 and 0.1.  This script puts
the blind post-processor against the aware one *at the same held-out KS*: the aware post-processor is re-solved
from its one private table (``refit_alpha``, free) at every ``alpha'`` in 0, 0.01, ..., 0.3, its median (held-out
KS, excess MSE) over the draws traced as a front, and its excess MSE read off that front (linear interpolation) at
the blind post-processor's median held-out KS for ``alpha`` = 0.05, 0.1, 0.2.  Where the blind KS lies below every
point of the aware front, the aware post-processor cannot be as fair on the held-out rows at any ``alpha'``
(``least aware KS`` says where the front ends); beyond its other end (above every aware KS) there is nothing to
read either: both rows give NaN.

The setup is the ``regression-blind`` experiment's (``dpfair.experiments.regression_blind``: ridge on 35% of the rows,
both post-processors on another 35%, the held-out 30%; the same bins, membership model, margin and budget split),
at one epsilon, on the experiment's 5 splits x ``--noises`` seeded noises (6 by default).  Seeded noise (not
hardened) so that the two post-processors' draws are paired and the run is repeatable.

Run: ``DPFAIR_DATA_HOME=... python benchmarks/bench_regression_matched.py [--epsilon 1] [--noises 6]`` (about 10 s
a dataset on one core).  Printed, never asserted.
"""
from __future__ import annotations

import argparse
import warnings

import numpy as np
import pandas as pd

#: The aware post-processor's ``alpha'`` grid: its front of (held-out KS, excess MSE).
AWARE_SWEEP = np.round(np.arange(0.0, 0.301, 0.01), 2)
BLIND_ALPHAS = (0.05, 0.1, 0.2)


def _draws(dataset: str, epsilon: float, n_noises: int) -> pd.DataFrame:
    """Held-out KS and excess MSE of both post-processors on every (split, seeded noise) draw."""
    from sklearn.linear_model import Ridge
    from sklearn.model_selection import train_test_split

    from dpfair.experiments.regression import DATASETS
    from dpfair.experiments.regression_blind import (
        BLIND_MEMBERSHIP_SHARE,
        BLIND_NOISE_MARGIN,
        BLIND_SEEDS,
        BLIND_SETUP,
        _aware_distribution,
        _blind_frame,
        _distribution_metrics,
        _HistogramMembershipModel,
        _linear_output_range,
        _public_bin_means,
    )
    from dpfair.regression import BlindFairRegressionPostProcessor, FairRegressionPostProcessor

    setup, info = BLIND_SETUP[dataset], DATASETS[dataset]
    declared = list(info["groups"])
    X, y, groups, features = _blind_frame(dataset)
    rows = []
    for seed in BLIND_SEEDS:
        rest, test = train_test_split(np.arange(y.size), test_size=0.3, random_state=seed)
        fit_reg, post = train_test_split(rest, test_size=0.5, random_state=seed)
        ridge = Ridge(alpha=1.0).fit(X.iloc[fit_reg][features].to_numpy(float), y[fit_reg])

        class _Features:  # the ridge on the feature columns of a DataFrame, as in the experiment
            def predict(self, frame, model=ridge):
                return model.predict(frame[features].to_numpy(float))

        f = _Features()
        mse_ridge = float(np.mean((f.predict(X.iloc[test]) - y[test]) ** 2))
        bounds = _linear_output_range(ridge, features, setup["feature_box"], info["bounds"])
        bin_values = _public_bin_means(f.predict(X.iloc[fit_reg]), bounds, setup["blind_bins"])
        for r in range(n_noises):
            noise = 1000 * seed + 3 * r
            aware = FairRegressionPostProcessor(f, epsilon=epsilon, n_bins=setup["aware_bins"], bounds=info["bounds"],
                                                groups=declared, random_state=noise).fit(
                X.iloc[post], sensitive_features=groups[post])
            membership = _HistogramMembershipModel(setup["membership_edges"], declared,
                                                   BLIND_MEMBERSHIP_SHARE * epsilon, random_state=noise + 1).fit(
                X.iloc[post], groups[post])
            blind = BlindFairRegressionPostProcessor(
                f, membership, epsilon=(1 - BLIND_MEMBERSHIP_SHARE) * epsilon, n_bins=setup["blind_bins"],
                membership_bins=setup["membership_bins"], groups=declared, random_state=noise + 2,
                noise_margin=BLIND_NOISE_MARGIN, bounds=bounds, bin_values=bin_values,
            ).fit(X.iloc[post], sensitive_features=groups[post])
            runs = [("aware", aware, a) for a in AWARE_SWEEP] + [("blind", blind, a) for a in BLIND_ALPHAS]
            for name, pp, alpha in runs:
                pp.refit_alpha(float(alpha))
                dist = (_aware_distribution(pp, X.iloc[test], groups[test]) if name == "aware"
                        else pp.output_distribution(X.iloc[test]))
                mse, ks = _distribution_metrics(dist, pp.grid_, y[test], groups[test], declared)
                rows.append({"method": name, "alpha": float(alpha), "ks": ks, "excess": mse - mse_ridge})
    return pd.DataFrame(rows)


def matched_rows(draws: pd.DataFrame) -> pd.DataFrame:
    """Per blind ``alpha``: both ratios, at the same target and at the same held-out KS (medians over the draws)."""
    medians = draws.groupby(["method", "alpha"])[["ks", "excess"]].median().reset_index()
    aware = medians[medians.method == "aware"].sort_values("ks")
    out = []
    for _, blind in medians[medians.method == "blind"].iterrows():
        same = aware[np.isclose(aware.alpha, blind.alpha)].iloc[0]
        below_front = blind.ks < aware.ks.min()
        off_front = below_front or blind.ks > aware.ks.max()  # np.interp would return the front's end point
        matched = np.nan if off_front else float(np.interp(blind.ks, aware.ks, aware.excess))
        out.append({"alpha": blind.alpha, "KS blind": blind.ks, "excess blind": blind.excess,
                    "KS aware (same alpha)": same.ks, "ratio (same alpha)": blind.excess / same.excess,
                    "aware excess at the blind's KS": matched,
                    "ratio (same KS)": blind.excess / matched if not off_front else np.nan,
                    "least aware KS": aware.ks.min()})
    return pd.DataFrame(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--noises", type=int, default=6, help="seeded noises per split (default 6)")
    parser.add_argument("--datasets", nargs="+", default=["law_school", "communities"])
    args = parser.parse_args()
    pd.set_option("display.width", 200)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PrivacyLeakWarning at epsilon = inf, SeededNoiseWarning, bounds notes
        for dataset in args.datasets:
            rows = matched_rows(_draws(dataset, args.epsilon, args.noises))
            print(f"\n{dataset}, epsilon = {args.epsilon:g}, 5 splits x {args.noises} seeded noises (medians)")
            print(rows.round(4).to_string(index=False))


if __name__ == "__main__":
    main()
