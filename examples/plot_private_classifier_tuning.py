"""
Tuning a private fair classifier privately on Adult
===================================================

The end-to-end private pipeline (:class:`~dpfair.linear_model.DPLogisticRegression` inside
:class:`~dpfair.classification.DPEqualizedOddsPostProcessor` with ``prefit=False``) has knobs: the
logistic regression's ``C`` and the post-processor's fairness tolerance ``gamma``.  Picking them by
exact validation scores would leak through the choice.  :class:`~dpfair.model_selection.PrivateRandomSearch`
runs a random number of trials, each fitting a candidate privately on training rows and scoring it with
:class:`~dpfair.model_selection.PrivateEqualizedOddsScorer` (error plus the equalized-odds violation above a
target, from one noisy table of group, label and prediction) on validation rows.  The whole search is one
charge: the budget's ledger gets one entry, equal to the chosen model's ``privacy_spent_``.  The labels stay
words (``">50K"``).
"""

import warnings

import matplotlib.pyplot as plt
import numpy as np
from sklearn.linear_model import LogisticRegression

from dpfair.classification import DPEqualizedOddsPostProcessor
from dpfair.datasets import ADULT_SCHEMA, load_adult
from dpfair.fairness import equalized_odds_difference
from dpfair.linear_model import DPLogisticRegression
from dpfair.model_selection import PrivateEqualizedOddsScorer, PrivateRandomSearch
from dpfair.preprocessing import DeclaredOneHotEncoder
from dpfair.privacy import PrivacyBudget, SeededNoiseWarning

# %%
# Public feature scaling (every numeric column divided by its published maximum, one-hot blocks over the
# published categories of :data:`dpfair.datasets.ADULT_SCHEMA`, never the levels found in the rows): each of the
# 5 numeric columns and 2 one-hot blocks adds at most 1 to ``||x||^2``.
adult = load_adult()  # from the data home (see `dpfair data info`)
MAXIMUM = {c: ADULT_SCHEMA.ranges[c][1] for c in ("age", "education-num", "hours-per-week", "capital-gain",
                                                   "capital-loss")}
CATEGORICAL = ["marital-status", "relationship"]
columns = [adult.X[c].to_numpy(float) / top if not c.startswith("capital") else
           np.log1p(adult.X[c].to_numpy(float)) / np.log1p(top) for c, top in MAXIMUM.items()]
encoder = DeclaredOneHotEncoder(ADULT_SCHEMA.encoder_categories(CATEGORICAL))
X = np.column_stack([*columns, encoder.fit_transform(adult.X[CATEGORICAL])])
y = np.where(adult.y.to_numpy() == 1, ">50K", "<=50K")
sex = adult.sensitive.to_numpy()
order = np.random.default_rng(0).permutation(len(y))  # public randomness
train, test = order[:20_000], order[30_000:]

# %%
# The search at a few total budgets, each epsilon covering every trial, score and the selection.
GRID = {"gamma": [0.0, 0.02, 0.05], "estimator__C": [0.05, 0.2, 1.0]}
scoring = PrivateEqualizedOddsScorer(["Female", "Male"], pos_label=">50K", eo_weight=2.0, eo_target=0.05)
results = {}
for epsilon in (1.5, 3.0, 6.0):
    points = []
    for seed in range(2):
        budget = PrivacyBudget(epsilon)
        base = DPLogisticRegression(epsilon=epsilon / 6, data_norm=np.sqrt(7))
        post = DPEqualizedOddsPostProcessor(base, groups=["Female", "Male"], prefit=False)
        search = PrivateRandomSearch(post, GRID, scoring=scoring, epsilon=epsilon, mean_trials=3.0, budget=budget,
                                     random_state=seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SeededNoiseWarning)  # seeds for a reproducible page, not for real data
            search.fit(X[train], y[train], sensitive_features=sex[train])
        assert len(budget.ledger) == 1 and search.best_estimator_.privacy_spent_["epsilon"] == epsilon
        pred = search.predict(X[test], sensitive_features=sex[test])
        points.append((1 - search.score(X[test], y[test], sensitive_features=sex[test]),
                       equalized_odds_difference(y[test] == ">50K", pred == ">50K", sex[test])))
    results[epsilon] = np.array(points)
    print(f"epsilon={epsilon}: held-out error {np.median(results[epsilon][:, 0]):.3f}, "
          f"EO violation {np.median(results[epsilon][:, 1]):.3f} (median of 2 seeds; seeded noise)")

exact = LogisticRegression(C=1.0, max_iter=500).fit(X[train], y[train]).predict(X[test])
exact_point = (np.mean(exact != y[test]), equalized_odds_difference(y[test] == ">50K", exact == ">50K", sex[test]))
print(f"non-private logistic regression: error {exact_point[0]:.3f}, EO violation {exact_point[1]:.3f}")

# %%
# Held-out error and equalized-odds violation of the privately chosen models.
fig, ax = plt.subplots(figsize=(6, 4))
for epsilon, points in results.items():
    ax.scatter(points[:, 0], points[:, 1], label=f"private search, epsilon={epsilon}")
ax.scatter(*exact_point, marker="*", s=150, color="black", label="non-private logistic regression")
ax.set_xlabel("held-out error")
ax.set_ylabel("held-out equalized-odds violation")
ax.set_title("Private tuning of a private fair classifier (Adult, sex)")
ax.legend()
plt.show()
