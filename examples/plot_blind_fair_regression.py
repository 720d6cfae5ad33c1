"""
Fair regression without the sensitive attribute at prediction
=============================================================

:class:`~dpfair.regression.FairRegressionPostProcessor` needs each person's group when it predicts.
:class:`~dpfair.regression.BlindFairRegressionPostProcessor` does not: it learns, privately, one randomized
map of (the regressor's output, a membership model's ``P(A | x)``) that makes the groups' output
distributions within ``alpha`` of each other in KS distance, and ``predict(X)`` takes no group.

We post-process a ridge regressor trained on other rows.  On the post-processing rows, a private logistic
regression of the group on the features (:class:`~dpfair.linear_model.DPLogisticRegression`, a quarter of the
budget) is the membership model, and the blind post-processor's table takes the rest: ``epsilon = 1`` in all,
the budget the aware post-processor gets alone.  Sweeping ``alpha`` with ``refit_alpha`` is free for both.
"""

# %%
# Data, a regressor trained on other rows, and a private membership model
# -----------------------------------------------------------------------
import warnings

import matplotlib.pyplot as plt
import numpy as np
from sklearn.linear_model import Ridge

from dpfair.datasets import make_regression
from dpfair.fairness import statistical_parity_ks
from dpfair.linear_model import DPLogisticRegression
from dpfair.privacy import SeededNoiseWarning
from dpfair.regression import BlindFairRegressionPostProcessor, FairRegressionPostProcessor

warnings.simplefilter("ignore", SeededNoiseWarning)  # seeds make this page reproducible; leave them None on real data
X, y, groups = make_regression(12_000, n_groups=2, disparity=1.0, random_state=0)
train, post, test = np.split(np.arange(y.size), [4000, 8000])
ridge = Ridge().fit(X[train], y[train])  # other rows: not the post-processing ones


def clip_rows(features: np.ndarray, norm: float = 6.0) -> np.ndarray:
    """A fixed per-row map (public): rows longer than the declared norm are scaled onto it."""
    lengths = np.maximum(np.linalg.norm(features, axis=1, keepdims=True), norm)
    return features * (norm / lengths)


class Membership:
    """``P(A | x)`` from the private logistic regression, on clipped features."""

    def __init__(self, model: DPLogisticRegression) -> None:
        self.model = model
        self.classes_ = model.classes_

    def predict_proba(self, features: np.ndarray) -> np.ndarray:
        return self.model.predict_proba(clip_rows(features))


membership = Membership(DPLogisticRegression(epsilon=0.25, data_norm=6.0, random_state=0).fit(
    clip_rows(X[post]), groups[post]))
print(f"membership model accuracy on the test rows: {np.mean(membership.model.predict(clip_rows(X[test])) == groups[test]):.2f}")

# %%
# The aware and the blind post-processors, epsilon = 1 each in all
# -----------------------------------------------------------------
aware = FairRegressionPostProcessor(ridge, epsilon=1.0, n_bins=16, bounds=(-0.5, 1.5), groups=[0, 1],
                                    random_state=0).fit(X[post], sensitive_features=groups[post])
blind = BlindFairRegressionPostProcessor(ridge, membership, epsilon=0.75, n_bins=16, membership_bins=4,
                                         bounds=(-0.5, 1.5), groups=[0, 1], random_state=0).fit(
    X[post], sensitive_features=groups[post])

raw = ridge.predict(X[test])
rows = {"aware": [], "blind": []}
alphas = [0.0, 0.05, 0.1, 0.2, 0.4]
for alpha in alphas:
    aware.refit_alpha(alpha)
    blind.refit_alpha(alpha)
    for name, predictions in (("aware", aware.predict(X[test], sensitive_features=groups[test])),
                              ("blind", blind.predict(X[test]))):  # no groups at prediction
        rows[name].append((float(np.mean((predictions - y[test]) ** 2)),
                           float(statistical_parity_ks(predictions, groups[test]))))
for name, points in rows.items():
    print(name, [f"alpha={a:g}: MSE {m:.4f}, KS {k:.3f}" for a, (m, k) in zip(alphas, points, strict=True)])

# %%
# The price of blindness
# ----------------------
# Both trade error for fairness as ``alpha`` shrinks; the blind curve lies above the aware one: a blind map
# cannot move two people with the same output and the same membership probabilities differently.
fig, ax = plt.subplots(figsize=(6.4, 4.2))
for name, style in (("aware", "o--"), ("blind", "s-")):
    mse, ks = zip(*rows[name], strict=True)
    ax.plot(ks, mse, style, label=f"{name} post-processor")
ax.scatter([statistical_parity_ks(raw, groups[test])], [np.mean((raw - y[test]) ** 2)], marker="x", color="black",
           label="ridge, not post-processed")
ax.set_xlabel("test KS between groups")
ax.set_ylabel("test MSE")
ax.set_title("Aware vs blind private post-processing (alpha from 0 to 0.4)")
ax.legend()
plt.show()
