"""
The recommended private fair classifier: declare what you know, let it choose
=============================================================================

:class:`~dpfair.classification.DPFairClassifier` asks only for facts a user knows before looking at the data:
what must be protected (the sensitive attribute, or whole records), whether the group will be known at
prediction, the declared groups and ``epsilon``.  It then runs the mechanism that measured best for those facts
-- :class:`~dpfair.classification.DPBlindPostProcessor` when predictions must not read the group,
:class:`~dpfair.classification.DPEqualizedOddsPostProcessor` when they may -- with one charge of ``epsilon``, and
says which in ``mechanism_`` and in the ledger.  We fit both choices over a range of ``epsilon`` and plot the
held-out error and equalized-odds violation beside the best constant classifier.
"""

# %%
# Synthetic data: three groups whose base rates differ, partly predictable from the features
# -------------------------------------------------------------------------------------------
import warnings

import matplotlib.pyplot as plt
import numpy as np

from dpfair.classification import DPFairClassifier
from dpfair.privacy import PrivacyBudget, SeededNoiseWarning

rng = np.random.default_rng(0)
X = rng.uniform(-1, 1, size=(12000, 5))
group = np.digitize(X[:, 2] + 0.5 * rng.normal(size=12000), [-0.4, 0.7])  # 0, 1, 2: the third is the smallest
logit = 2.5 * X[:, 0] + 1.5 * X[:, 1] + np.array([0.0, 1.0, -0.8])[group]
y = (rng.uniform(size=12000) < 1 / (1 + np.exp(-logit))).astype(int)
train, test = np.arange(8000), np.arange(8000, 12000)
constant_error = min(y[test].mean(), 1 - y[test].mean())


def error_and_violation(proba, rows):
    """Expected error and equalized-odds violation (largest gap between two groups' rates) of P(predict 1)."""
    labels, groups = y[rows], group[rows]
    error = np.mean(np.where(labels == 1, 1 - proba, proba))
    gaps = [np.ptp([proba[(groups == a) & (labels == label)].mean() for a in (0, 1, 2)]) for label in (0, 1)]
    return error, max(gaps)


# %%
# One entry point, two choices
# ----------------------------
# The seeds make the figure reproducible; leave ``random_state`` unset (secure noise, the default) in real use.
epsilons = [0.25, 0.5, 1.0, 2.0, 4.0]
results = {False: [], True: []}
with warnings.catch_warnings():
    warnings.simplefilter("ignore", SeededNoiseWarning)
    warnings.simplefilter("ignore", UserWarning)  # noise-level notes at the smallest epsilons
    for at_prediction in (False, True):
        for epsilon in epsilons:
            budget = PrivacyBudget(epsilon, neighbouring="change_attribute")
            model = DPFairClassifier(epsilon=epsilon, groups=[0, 1, 2], attribute_at_prediction=at_prediction,
                                     budget=budget, random_state=1)
            model.fit(X[train], y[train], sensitive_features=group[train])
            proba = model.predict_proba(X[test], sensitive_features=group[test])[:, 1]
            results[at_prediction].append(error_and_violation(proba, test))
        print(f"attribute_at_prediction={at_prediction}: {model.mechanism_}; ledger: {budget.ledger[-1].label}")

# %%
# Error and violation against epsilon
# -----------------------------------
fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.5))
for at_prediction, label in ((False, "blind at prediction"), (True, "group known at prediction")):
    errors, violations = np.array(results[at_prediction]).T
    left.plot(epsilons, errors, marker="o", label=label)
    right.plot(epsilons, violations, marker="o", label=label)
left.axhline(constant_error, color="grey", linestyle="--", label="best constant")
left.set(xscale="log", xlabel="epsilon", ylabel="held-out error", title="Error")
right.set(xscale="log", xlabel="epsilon", ylabel="equalized-odds violation", title="Fairness")
left.legend(fontsize=8)
fig.tight_layout()
plt.show()
