"""
Sweeping alpha: ``GridSearchCV`` spends epsilon per fit, ``refit_alpha`` spends it once
========================================================================================

:class:`~dpfair.regression.FairRegressionPostProcessor` releases one private histogram per
``fit``; the fairness tolerance ``alpha`` only enters the linear program solved *on* that
histogram.  So there are two ways to explore ``alpha``:

* a hyper-parameter search (``GridSearchCV``) refits the post-processor for every candidate and
  every fold: each fit is a separate private release, and a shared
  :class:`~dpfair.privacy.PrivacyBudget` is charged every time;
* :meth:`~dpfair.regression.FairRegressionPostProcessor.refit_alpha` re-solves from the private
  statistics already released: the whole sweep costs ``epsilon`` once.

We post-process a ridge regressor trained on separate rows (``prefit=True``; wrapped in
:class:`sklearn.frozen.FrozenEstimator` so that the search's clones keep it fitted), on
synthetic data whose outputs shift with the group, and plot the error-fairness trade-off.
"""

# %%
# Data and a regressor trained on other rows
# ------------------------------------------
import matplotlib.pyplot as plt
import numpy as np
import sklearn
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import Ridge
from sklearn.model_selection import GridSearchCV

from dpfair.datasets import make_regression
from dpfair.fairness import statistical_parity_ks
from dpfair.privacy import PrivacyBudget
from dpfair.regression import FairRegressionPostProcessor

X, y, groups = make_regression(9000, n_groups=2, disparity=2.0, random_state=0)
train, post, test = np.split(np.arange(y.size), [3000, 6000])
ridge = Ridge().fit(X[train], y[train])  # public / other data: not the post-processing rows


def post_processor(budget: PrivacyBudget, alpha: float = 0.0) -> FairRegressionPostProcessor:
    return FairRegressionPostProcessor(
        FrozenEstimator(ridge), epsilon=0.5, n_bins=20, alpha=alpha, bounds=(-0.5, 1.5), groups=[0, 1],
        budget=budget, random_state=0,  # a seed for a reproducible page; leave it None on real data
    )


# %%
# A grid search: every fit is charged
# -----------------------------------
# 4 candidates x 3 folds + the final refit = 13 private releases of epsilon = 0.5 each.  The groups
# travel by metadata routing: the post-processor requests them in ``fit`` and ``score``.
alphas = [0.0, 0.05, 0.1, 0.2]
search_budget = PrivacyBudget(10.0)
with sklearn.config_context(enable_metadata_routing=True):
    routed = post_processor(search_budget).set_fit_request(sensitive_features=True)
    routed.set_score_request(sensitive_features=True)
    search = GridSearchCV(routed, {"alpha": alphas}, cv=3)
    search.fit(X[post], y[post], sensitive_features=groups[post])
print(f"GridSearchCV: {len(search_budget.ledger)} fits charged, epsilon spent = {search_budget.spent()[0]:.1f}")

# %%
# ``refit_alpha``: one release, any number of alphas
# ----------------------------------------------------
sweep = np.linspace(0.0, 0.4, 17)
sweep_budget = PrivacyBudget(10.0)
pp = post_processor(sweep_budget).fit(X[post], sensitive_features=groups[post])
mse, ks = [], []
for alpha in sweep:
    pred = pp.refit_alpha(alpha).predict(X[test], sensitive_features=groups[test], random_state=1)
    mse.append(np.mean((pred - y[test]) ** 2))
    ks.append(statistical_parity_ks(pred, groups[test]))
print(f"refit_alpha over {sweep.size} alphas: epsilon spent = {sweep_budget.spent()[0]:.1f}")
raw = ridge.predict(X[test])

# %%
# The trade-off
# -------------
fig, ax = plt.subplots(figsize=(6.4, 4.2))
ax.plot(mse, ks, marker="o", label=f"refit_alpha sweep (epsilon spent: {sweep_budget.spent()[0]:g})")
for alpha, m, k in zip(sweep[::4], mse[::4], ks[::4], strict=True):
    ax.annotate(f"alpha={alpha:.1f}", (m, k), textcoords="offset points", xytext=(6, 4), fontsize=8)
ax.scatter([np.mean((raw - y[test]) ** 2)], [statistical_parity_ks(raw, groups[test])], marker="x", color="black",
           s=60, label="ridge, not post-processed")
ax.set_xlabel("test mean squared error")
ax.set_ylabel("statistical-parity violation (KS)")
ax.set_title(f"GridSearchCV over {len(alphas)} alphas spent epsilon = {search_budget.spent()[0]:g}")
ax.legend(fontsize=8)
plt.show()
