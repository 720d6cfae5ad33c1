"""
Fairness and accuracy of private selection
==========================================

The exponential mechanism selects ``m`` of ``n = 10`` applicants with probability
proportional to ``exp(epsilon * mean score / (2 * sensitivity))`` (Khalili et al. 2021).
Its fairness gap ``gamma(epsilon)`` (equal opportunity between the two groups) and accuracy
``theta(epsilon)`` (fraction of qualified among the selected) are computed *exactly* by
:class:`dpfair.selection.SelectionProblem` for the paper's synthetic case study.

Less privacy (larger ``epsilon``) means more accuracy, but the gap does not shrink monotonically:
it crosses zero at a *perfectly fair* ``epsilon_o`` (Theorem 1), marked below, and then grows
towards its ``epsilon = inf`` limit (dotted).
"""

# %%
# The case study and the curves
# -----------------------------
# ``case_study_problem()`` is the joint law of (group, label, score) fitted to every number the
# paper states.  Both curves are exact (a Laplace-transform integral for ``m = 1``, enumeration of
# the other applicants' scores for ``m = 2``), and stay exact at any epsilon, up to ``inf``.
import math

import matplotlib.pyplot as plt
import numpy as np

from dpfair.selection.synthetic_case import case_study_problem

problem = case_study_problem()
epsilons = np.geomspace(0.05, 100.0, 16)
curves = {}
for m in (1, 2):
    gamma = problem.fairness_gap(epsilons, m).value
    theta = problem.accuracy(epsilons, m).value
    limits = (float(problem.fairness_gap(math.inf, m)), float(problem.accuracy(math.inf, m)))
    fair = problem.perfectly_fair_epsilons(m, 100.0, n_grid=30)
    curves[m] = (gamma, theta, limits, fair)
    print(f"m = {m}: perfectly fair epsilon(s) {[round(e, 3) for e in fair]}, "
          f"theta there {[round(float(problem.accuracy(e, m)), 3) for e in fair]}, theta(inf) = {limits[1]:.3f}")

# %%
# Plot: gamma(epsilon) and theta(epsilon), the perfectly fair epsilon marked
# --------------------------------------------------------------------------
fig, (ax_gamma, ax_theta) = plt.subplots(1, 2, figsize=(10, 4))
for m, (gamma, theta, (gamma_inf, theta_inf), fair) in curves.items():
    line = ax_gamma.plot(epsilons, gamma, marker="o", ms=3, label=f"m = {m}")[0]
    color = line.get_color()
    ax_gamma.axhline(gamma_inf, color=color, ls=":", lw=1)
    ax_theta.plot(epsilons, theta, marker="o", ms=3, color=color, label=f"m = {m}")
    ax_theta.axhline(theta_inf, color=color, ls=":", lw=1)
    for eps_o in fair:
        ax_gamma.plot([eps_o], [0.0], marker="*", ms=14, color=color, ls="none")
        ax_theta.plot([eps_o], [float(problem.accuracy(eps_o, m))], marker="*", ms=14, color=color, ls="none")
        ax_gamma.annotate(f"eps_o = {eps_o:.2f}", (eps_o, 0.0), textcoords="offset points", xytext=(5, -14), color=color)
ax_gamma.axhline(0.0, color="black", lw=0.8)
for ax, label in ((ax_gamma, "fairness gap gamma(epsilon)"), (ax_theta, "accuracy theta(epsilon)")):
    ax.set_xscale("log")
    ax.set_xlabel("epsilon (dotted: epsilon = inf; star: perfectly fair epsilon)")
    ax.set_ylabel(label)
    ax.legend()
fig.suptitle("Exponential-mechanism selection of m of 10 applicants (synthetic case study)")
fig.tight_layout()
plt.show()
