"""
Private equalized-odds post-processing: error vs. fairness violation over gamma
===============================================================================

:class:`~dpfair.classification.DPEqualizedOddsPostProcessor` is the
*DP-postprocessing* algorithm of Jagielski et al. (2019, Algorithm 1): Hardt et al.'s equalized-odds
post-processing of a base classifier, run on a Laplace-noised table of joint frequencies
``q~(y_hat, a, y)`` so that the fitted classifier is ``epsilon``-DP with respect to every training
row's group ``A`` (features and labels are public).  The linear program LP~ (1) widens each
fairness constraint by a slack that grows as ``epsilon`` shrinks.  We sweep the fairness tolerance
``gamma`` for a few privacy levels and plot the (exact, expected) error against the realized
equalized-odds violation.  ``score_bins=None`` selects the paper's table of binary predictions; the default,
``score_bins="auto"``, post-processes the base model's probability cut at 8 public thresholds instead (see the
user guide's "Private models" page).
"""

# %%
# Synthetic data whose base rates differ by group
# -----------------------------------------------
# The base classifier is trained on (X, y) only -- never on the group.
import warnings

import matplotlib.pyplot as plt
import numpy as np
from sklearn.linear_model import LogisticRegression

from dpfair.classification import DPEqualizedOddsPostProcessor
from dpfair.datasets import make_classification
from dpfair.privacy import PrivacyLeakWarning

X, y, group = make_classification(8000, n_features=5, disparity=2.5, random_state=0)
base = LogisticRegression().fit(X[:3000], y[:3000])
X, y, group = X[3000:], y[3000:], group[3000:]


def error_and_violation(proba):
    """Expected error and equalized-odds violation of P(predict 1 | row) = proba."""
    error = np.mean(np.where(y == 1, 1 - proba, proba))
    rates = [[proba[(group == a) & (y == label)].mean() for a in (0, 1)] for label in (0, 1)]
    return error, max(abs(r[1] - r[0]) for r in rates)


# %%
# Sweep gamma for a few epsilons
# ------------------------------
# Each private point is averaged over a few noise draws (every fit is a separate private release).
gammas = np.linspace(0.0, 0.3, 13)
curves = {}
for epsilon in (0.05, 0.2, 1.0, np.inf):
    points = []
    for gamma in gammas:
        draws = []
        for seed in range(1 if np.isinf(epsilon) else 10):
            est = DPEqualizedOddsPostProcessor(base, epsilon=epsilon, gamma=gamma, groups=[0, 1], prefit=True,
                                               random_state=seed, score_bins=None)  # the paper's Algorithm 1
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", PrivacyLeakWarning)  # epsilon = inf is the non-private reference
                est.fit(X, y, sensitive_features=group)
            draws.append(error_and_violation(est.predict_proba(X, sensitive_features=group)[:, 1]))
        points.append(np.mean(draws, axis=0))
    curves[epsilon] = np.array(points)
base_point = error_and_violation(base.predict(X).astype(float))

# %%
# Error vs. equalized-odds violation
# ----------------------------------
fig, ax = plt.subplots(figsize=(6, 4.5))
for epsilon, points in curves.items():
    label = "non-private (Hardt et al.)" if np.isinf(epsilon) else f"epsilon = {epsilon:g}"
    ax.plot(points[:, 1], points[:, 0], marker="o", label=label)
ax.scatter([base_point[1]], [base_point[0]], marker="*", s=150, color="black", label="base classifier")
ax.set_xlabel("equalized-odds violation (max rate gap)")
ax.set_ylabel("expected error")
ax.set_title("DP equalized-odds post-processing, gamma from 0 to 0.3")
ax.legend()
fig.tight_layout()
plt.show()
