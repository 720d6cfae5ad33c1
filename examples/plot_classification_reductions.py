"""
Private fair classification by reductions: error against violation
===================================================================

:class:`~dpfair.classification.DPExponentiatedGradient` is Algorithm 3 of Jagielski et
al. (2019), the differentially private version of the exponentiated-gradient reduction of Agarwal
et al. (2018): an Auditor plays exponentiated gradient on *noisy* equalized-odds violations and a
Learner best-responds with a *noisy* least-squares cost-sensitive oracle.  Privacy protects the
group label of every training row (``X`` and ``y`` are public); ``predict`` needs no group.

Its defaults play the game to equilibrium: ``B = |A|``, the rounds ``T`` and the step from the
paper's theorem and the budget, the best iterate chosen from the released (noisy) violations, and the
``2T`` per-round Laplace releases composed by their privacy loss distribution (the *tight*
accountant).  We sweep the allowed violation ``gamma`` for a few privacy levels, compare the per-round
``epsilon'`` of the tight accountant with the paper's, and draw the private post-processor at the
smallest ``epsilon`` for reference.
"""

# %%
# Synthetic data whose base rate depends on the group
# ---------------------------------------------------
import math
import warnings

import matplotlib.pyplot as plt
import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression

from dpfair.classification import DPEqualizedOddsPostProcessor, DPExponentiatedGradient, SmallBudgetWarning
from dpfair.datasets import make_classification
from dpfair.privacy import PrivacyLeakWarning

X, y, groups = make_classification(6000, n_features=5, random_state=0)
X = X / np.abs(X).max()  # every |x_j| <= 1: declared per feature, so ||x||_1 <= 5 calibrates the oracle
bounds = np.ones(X.shape[1])


def error_and_violation(p1):
    """Expected error and equalized-odds violation max_y |rate_1 - rate_0| of a randomized classifier."""
    error = np.mean(np.where(y == 1, 1 - p1, p1))
    violation = max(abs(p1[(groups == 1) & (y == t)].mean() - p1[(groups == 0) & (y == t)].mean()) for t in (0, 1))
    return error, violation


# %%
# Sweep gamma for a few epsilons, with the estimator's defaults
# -------------------------------------------------------------
# Where the privacy noise dominates the signal (released noise-to-signal ratios, ``noise_to_signal_``)
# the estimator says so (SmallBudgetWarning) and suggests the post-processor instead.  On these data
# fairness is expensive (the groups' base rates differ a lot), so the default ``B = |A| = 2`` cannot
# hold the violation at ``gamma``: the estimator says that too (ConvergenceWarning), and the last
# curve raises ``bound_B`` at ``epsilon = inf``.
gammas = [0.02, 0.05, 0.1]
epsilons = [1.0, 10.0, 100.0, math.inf]
results = {}
for epsilon, bound_B in [(e, None) for e in epsilons] + [(math.inf, 20.0)]:
    points, caught = [], []
    for gamma in gammas:
        with warnings.catch_warnings(record=True) as caught_here:
            warnings.simplefilter("always", SmallBudgetWarning)
            warnings.simplefilter("always", ConvergenceWarning)
            warnings.simplefilter("ignore", PrivacyLeakWarning)  # epsilon = inf is the non-private reference
            clf = DPExponentiatedGradient(
                epsilon=epsilon, delta=1e-6, gamma=gamma, bound_B=bound_B, x_l1_bound=bounds, groups=[0, 1],
                random_state=0,
            ).fit(X, y, sensitive_features=groups)
        caught += caught_here
        points.append(error_and_violation(clf.predict_proba(X)[:, 1]))
    label = f"epsilon = {epsilon:g}" + ("" if bound_B is None else f", bound_B = {bound_B:g}")
    results[label] = np.array(points)
    print(label + ":")
    if math.isfinite(epsilon):
        # the paper's own oracle (one noisy release per round), under the tight and the paper's accounting
        tight, paper = (DPExponentiatedGradient(epsilon=epsilon, delta=1e-6, gamma=gammas[-1], x_l1_bound=bounds,
                                                groups=[0, 1], oracle="paper", accountant=accountant, random_state=0)
                        for accountant in ("tight", "paper"))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SmallBudgetWarning)
            tight.fit(X, y, sensitive_features=groups)
            paper.fit(X, y, sensitive_features=groups)
        ratios = ", ".join(f"{k} {v:.2g}" for k, v in clf.noise_to_signal_.items())
        print(f"  default oracle: T = {clf.n_iter_}, noise-to-signal {ratios}; oracle='paper': "
              f"epsilon' = {tight.epsilon_step_:.4f} (tight, {tight.accountant_}) vs {paper.epsilon_step_:.4f} "
              "(paper's formula)")
    for kind in {w.category for w in caught if issubclass(w.category, (SmallBudgetWarning, ConvergenceWarning))}:
        message = next(str(w.message) for w in caught if w.category is kind)
        print(f"  {kind.__name__}: {message[:110]} ...")
    print("  (error, violation):", ", ".join(f"({e:.3f}, {v:.3f})" for e, v in points))

# %%
# The private post-processor at the smallest epsilon, for reference
# -----------------------------------------------------------------
base = LogisticRegression().fit(X, y)  # on (X, y) only: both are public here
post = []
for gamma in gammas:
    pp = DPEqualizedOddsPostProcessor(base, epsilon=epsilons[0], gamma=gamma, groups=[0, 1], prefit=True,
                                      random_state=0).fit(X, y, sensitive_features=groups)
    post.append(error_and_violation(pp.predict_proba(X, sensitive_features=groups)[:, 1]))
post = np.array(post)

# %%
# Pareto frontiers: training error against realized violation
# -----------------------------------------------------------
fig, ax = plt.subplots(figsize=(6.4, 4.2))
for label, points in results.items():
    order = np.argsort(points[:, 1])
    ax.plot(points[order, 1], points[order, 0], "o-", label=f"reductions, {label}")
order = np.argsort(post[:, 1])
ax.plot(post[order, 1], post[order, 0], "s--", color="black", label=f"post-processing, epsilon = {epsilons[0]:g}")
ax.set_xlabel("equalized-odds violation (training)")
ax.set_ylabel("error (training)")
ax.set_title("DPExponentiatedGradient (defaults): error against violation over gamma")
ax.legend(fontsize=8)
plt.tight_layout()
plt.show()
