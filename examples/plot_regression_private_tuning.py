"""
Choosing the number of bins and alpha privately
===============================================

Xian et al. (2024) sweep the number of bins ``k`` and the fairness tolerance ``alpha`` to show the
trade-offs of their private post-processor, and note that *choosing* them needs a private tuning
procedure (Liu & Talwar 2019; Papernot & Steinke 2022). Selecting by exact validation scores would
leak through the choice itself.

:class:`~dpfair.model_selection.PrivateRandomSearch` runs a random (geometric) number of trials; each
fits a candidate ``(k, alpha)`` privately on training rows and scores it privately on validation
rows (here ``MSE + lambda KS``); only the best trial is released. The whole search, fits, scores
and selection, is ``epsilon``-DP. We repeat it on synthetic data for a few seeds and compare, on a
test split, with the exhaustive non-private choice (``epsilon = inf``).
"""

import warnings

import matplotlib.pyplot as plt
import numpy as np

from dpfair.datasets import make_regression
from dpfair.fairness import statistical_parity_ks
from dpfair.model_selection import PrivateMSEKSScorer, PrivateRandomSearch
from dpfair.privacy import PrivacyBudget, PrivacyLeakWarning
from dpfair.regression import FairRegressionPostProcessor

_, y, groups = make_regression(8000, n_groups=2, disparity=2.0, random_state=0)
train, test = np.arange(5600), np.arange(5600, 8000)
grid = {"n_bins": [4, 8, 16, 32], "alpha": [0.0, 0.05, 0.1, 0.2]}
scorer = PrivateMSEKSScorer((0.0, 1.0), [0, 1], ks_weight=0.02)
base = FairRegressionPostProcessor(bounds=(0.0, 1.0), groups=[0, 1])


def evaluate(search):
    pred = search.predict(y[test], sensitive_features=groups[test], random_state=0)
    return float(np.mean((pred - y[test]) ** 2)), float(statistical_parity_ks(pred, groups[test]))


results = {}
for epsilon in (0.5, 2.0, np.inf):
    points = []
    for seed in range(8):
        budget = None if np.isinf(epsilon) else PrivacyBudget(epsilon)
        search = PrivateRandomSearch(base, grid, scoring=scorer, epsilon=epsilon, mean_trials=8.0, budget=budget,
                                     random_state=seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivacyLeakWarning)  # epsilon = inf: the non-private baseline
            search.fit(y[train], y[train], sensitive_features=groups[train])
        if budget is not None:
            assert budget.spent()[0] <= epsilon * (1 + 1e-12)  # one charge for the whole search
        points.append((*evaluate(search), search.best_params_["n_bins"], search.best_params_["alpha"]))
    results[epsilon] = np.array(points)
    print(f"epsilon={epsilon}: chosen (k, alpha) = {[tuple(p[2:]) for p in points]}")

fig, ax = plt.subplots(figsize=(6.0, 4.0))
for epsilon, pts in results.items():
    label = "non-private choice" if np.isinf(epsilon) else f"private tuning, eps={epsilon:g}"
    ax.scatter(pts[:, 0], pts[:, 1], label=label, marker="x" if np.isinf(epsilon) else "o", alpha=0.7)
ax.set_xlabel("test MSE")
ax.set_ylabel("test fairness violation (KS)")
ax.set_title("Private choice of (k, alpha), 8 seeds")
ax.legend()
plt.show()
