"""
Fair post-processing of a regressor: group output distributions before and after
=================================================================================

A regressor's outputs differ by group; statistical parity asks that they do not.
:class:`~dpfair.regression.FairRegressionPostProcessor` (Xian et al. 2024) moves each group's
output distribution, with a private histogram (``epsilon = 1``), to a common barycenter on a grid
of ``n_bins`` points; :class:`~dpfair.regression.WassersteinBarycenterPostProcessor`
(Chzhen et al. 2020) is its non-private, non-discretized reference (it raises a
:class:`~dpfair.privacy.PrivacyLeakWarning`: it stores exact quantiles of the data).
"""

# %%
# A regressor whose outputs depend on the group
# ---------------------------------------------
import warnings

import matplotlib.pyplot as plt
import numpy as np
from sklearn.linear_model import Ridge

from dpfair.datasets import make_regression
from dpfair.fairness import statistical_parity_ks
from dpfair.privacy import PrivacyLeakWarning
from dpfair.regression import FairRegressionPostProcessor, WassersteinBarycenterPostProcessor

X, y, groups = make_regression(9000, n_groups=2, disparity=2.0, random_state=1)
train, post, test = np.split(np.arange(y.size), [3000, 6000])
ridge = Ridge().fit(X[train], y[train])

# %%
# Private post-processing (epsilon = 1) and the non-private reference
# --------------------------------------------------------------------
private = FairRegressionPostProcessor(
    ridge, epsilon=1.0, n_bins=24, alpha=0.0, bounds=(-0.5, 1.5), groups=[0, 1], random_state=0
).fit(X[post], sensitive_features=groups[post])
with warnings.catch_warnings():
    warnings.simplefilter("ignore", PrivacyLeakWarning)  # synthetic data: the exact reference is fine here
    reference = WassersteinBarycenterPostProcessor(ridge, groups=[0, 1], random_state=0)
    reference.fit(X[post], sensitive_features=groups[post])
print(private.privacy_spent_)

outputs = {
    "ridge": ridge.predict(X[test]),
    "DP post-processing (epsilon = 1)": private.predict(X[test], sensitive_features=groups[test], random_state=1),
    "Chzhen et al. (non-private)": reference.predict(X[test], sensitive_features=groups[test], random_state=1),
}

# %%
# Output distribution of each group
# ---------------------------------
fig, axes = plt.subplots(1, 3, figsize=(12, 3.4), sharey=True)
bins = np.linspace(-0.2, 1.2, 29)
for ax, (name, pred) in zip(axes, outputs.items(), strict=True):
    for group in (0, 1):
        ax.hist(pred[groups[test] == group], bins=bins, density=True, alpha=0.5, label=f"group {group}")
    mse = np.mean((pred - y[test]) ** 2)
    ax.set_title(f"{name}\nKS = {statistical_parity_ks(pred, groups[test]):.3f}, MSE = {mse:.4f}", fontsize=9)
    ax.set_xlabel("output")
axes[0].set_ylabel("density")
axes[0].legend()
fig.tight_layout()
plt.show()
