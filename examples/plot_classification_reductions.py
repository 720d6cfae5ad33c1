"""
Private fair classification by reductions: error against violation
===================================================================

:class:`~dpfair.classification.reductions.DPExponentiatedGradient` is Algorithm 3 of Jagielski et
al. (2019), the differentially private version of the exponentiated-gradient reduction of Agarwal
et al. (2018): an Auditor plays exponentiated gradient on *noisy* equalized-odds violations and a
Learner best-responds with a *noisy* least-squares cost-sensitive oracle.  Privacy protects the
group label of every training row (``X`` and ``y`` are public); ``predict`` needs no group.

We sweep the allowed violation ``gamma`` for a few privacy levels and plot the Pareto frontier of
training error against realized violation.
"""

# %%
# Synthetic data whose base rate depends on the group
# ---------------------------------------------------
import math
import warnings

import matplotlib.pyplot as plt
import numpy as np

from dpfair.classification.reductions import DPExponentiatedGradient
from dpfair.datasets import make_classification
from dpfair.privacy import PrivacyLeakWarning

X, y, groups = make_classification(20000, n_features=5, disparity=1.5, random_state=0)
X = X / np.linalg.norm(X, axis=1).max()  # the norm bound is declared: x_norm_bound=1


def error_and_violation(p1):
    """Expected error and equalized-odds violation max_y |rate_1 - rate_0| of the mixture."""
    error = np.mean(np.where(y == 1, 1 - p1, p1))
    violation = max(abs(p1[(groups == 1) & (y == t)].mean() - p1[(groups == 0) & (y == t)].mean()) for t in (0, 1))
    return error, violation


# %%
# Sweep gamma for a few epsilons
# ------------------------------
# ``n_iter`` and ``eta`` are fixed so every point runs the same number of rounds; the privacy
# noise of each round follows from ``epsilon`` (``epsilon' = epsilon / (4 sqrt(T ln(1/delta)))``).
gammas = [0.0, 0.02, 0.05, 0.1, 0.2]
epsilons = [10.0, 100.0, math.inf]
results = {}
for epsilon in epsilons:
    points = []
    for gamma in gammas:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivacyLeakWarning)  # epsilon = inf is the non-private reference
            clf = DPExponentiatedGradient(
                epsilon=epsilon, delta=1e-6, gamma=gamma, bound_B=5.0, x_norm_bound=1.0,
                n_iter=50, eta=1.0, groups=[0, 1], random_state=0,
            ).fit(X, y, sensitive_features=groups)
        points.append(error_and_violation(clf.predict_proba(X)[:, 1]))
    results[epsilon] = np.array(points)
    print(f"epsilon={epsilon}: " + ", ".join(f"({e:.3f}, {v:.3f})" for e, v in points))

# %%
# Pareto frontier: training error against realized violation
# -----------------------------------------------------------
fig, ax = plt.subplots(figsize=(6, 4))
for epsilon, points in results.items():
    order = np.argsort(points[:, 1])
    ax.plot(points[order, 1], points[order, 0], "o-", label=f"epsilon = {epsilon:g}")
ax.set_xlabel("equalized-odds violation (training)")
ax.set_ylabel("error (training)")
ax.set_title("DPExponentiatedGradient: error against violation over gamma")
ax.legend()
plt.tight_layout()
plt.show()
