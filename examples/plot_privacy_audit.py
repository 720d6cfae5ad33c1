"""
Auditing a mechanism's privacy empirically
==========================================

A differential-privacy claim is a statement about *every* pair of neighbouring inputs, so
it cannot be proven by running the mechanism.  It can be *refuted*, though: run the
mechanism many times on two neighbouring inputs and look for an output event whose
probability differs by more than ``exp(epsilon)``.  :func:`dpfair.privacy.audit_epsilon`
turns such an event into a lower confidence bound on the true epsilon.

This example audits an honest Laplace mechanism and a deliberately broken one that adds
half the noise it should, then shares one :class:`~dpfair.privacy.PrivacyBudget` between
several releases.
"""

# %%
# Two Laplace mechanisms, one honest and one broken
# -------------------------------------------------
# Both claim ``epsilon = 1`` for a count (L1 sensitivity 1).  The broken one calibrates its
# noise to a sensitivity of 0.5, so it is really ``epsilon = 2``.  The seeded noise
# (``random_state=rng``) keeps the example reproducible; it is not hardened and is for
# experiments only.
import matplotlib.pyplot as plt
import numpy as np

from dpfair.privacy import PrivacyBudget, PrivacyBudgetExceededError, audit_epsilon, laplace_mechanism

EPSILON = 1.0


def laplace_count(sensitivity_used):
    def mechanism(count, size, rng):
        return laplace_mechanism(np.full(size, float(count)), sensitivity=sensitivity_used, epsilon=EPSILON, random_state=rng)

    return mechanism


honest = laplace_count(1.0)
broken = laplace_count(0.5)

# %%
# The audit
# ---------
# Neighbouring inputs: a count of 0 and a count of 1.  Edges of the output bins come from an
# independent pilot run, every bin and tail is an event, and the 95% confidence is split
# over all of them (Bonferroni), so the bound is valid as stated.  More samples tighten it.
sample_sizes = [2_000, 10_000, 50_000, 200_000]
bounds = {"honest": [], "broken (half the noise)": []}
for n in sample_sizes:
    bounds["honest"].append(audit_epsilon(honest, 0, 1, n_samples=n, random_state=1).epsilon_lower_bound)
    bounds["broken (half the noise)"].append(audit_epsilon(broken, 0, 1, n_samples=n, random_state=1).epsilon_lower_bound)
for name, values in bounds.items():
    print(f"{name:>24}: " + ", ".join(f"{b:.2f}" for b in values))

# %%
# The honest mechanism's bound stays below the claimed epsilon of 1; the broken one's
# is above it at every sample size: the claim is refuted with 95% confidence.
#
# One budget for several releases
# -------------------------------
# A :class:`~dpfair.privacy.PrivacyBudget` is charged by every release that is given it, after
# the release's arguments are validated and before any noise is drawn.  A release that
# would overspend is refused and changes nothing.
budget = PrivacyBudget(epsilon=1.0)
rng = np.random.default_rng(0)
counts = np.array([120.0, 45.0, 30.0])
released = {}
for label, eps in [("counts by group", 0.5), ("total", 0.25), ("counts again", 0.5)]:
    try:
        released[label] = laplace_mechanism(counts if label != "total" else counts.sum(), sensitivity=1.0,
                                            epsilon=eps, budget=budget, label=label, random_state=rng)
    except PrivacyBudgetExceededError as exc:
        print(f"refused: {exc}")
print(budget)
spent = budget.spent_by_label()

# %%
# The plot
# --------
fig, (ax_audit, ax_budget) = plt.subplots(1, 2, figsize=(10, 4))
for name, values in bounds.items():
    ax_audit.plot(sample_sizes, values, marker="o", label=name)
ax_audit.axhline(EPSILON, color="black", linestyle="--", label="claimed epsilon")
ax_audit.set_xscale("log")
ax_audit.set_xlabel("runs per input")
ax_audit.set_ylabel("95% lower bound on epsilon")
ax_audit.set_title("Empirical privacy audit")
ax_audit.legend()

labels = list(spent)
ax_budget.bar(labels, [spent[k]["epsilon"] for k in labels], color="tab:green")
ax_budget.axhline(budget.epsilon, color="black", linestyle="--", label="budget")
ax_budget.set_ylabel("epsilon charged")
ax_budget.set_title("One budget, several releases")
ax_budget.legend()
fig.tight_layout()
plt.show()
