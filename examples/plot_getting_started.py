"""
Getting started: a privacy budget and the Laplace mechanism
============================================================

A small table of counts (how many applicants of each group were shortlisted) is released with
the Laplace mechanism. One :class:`~dpfair.privacy.PrivacyBudget` governs every release: each
release is charged before any noise is drawn, and a release that would overspend the budget is
refused, leaving the budget as it was.
"""

# %%
# The exact table
# ---------------
# Each person appears in at most one cell, and adding or removing one person changes one count
# by one: the L1 sensitivity of the table is 1. The sensitivity is *declared*, never read off the
# data.
import matplotlib.pyplot as plt
import numpy as np

from dpfair.privacy import PrivacyBudget, PrivacyBudgetExceededError, laplace_mechanism

groups = ["group A", "group B", "group C", "group D"]
counts = np.array([42, 17, 8, 3])

# %%
# Two releases from one budget
# ----------------------------
# ``random_state=0`` gives seeded, reproducible noise for this page; leave ``random_state`` at
# its default (``None``) for secure noise when the data is about real people.
budget = PrivacyBudget(epsilon=1.0)
noisy_half = laplace_mechanism(counts, sensitivity=1.0, epsilon=0.5, budget=budget, label="table, eps=0.5", random_state=0)
noisy_quarter = laplace_mechanism(counts, sensitivity=1.0, epsilon=0.25, budget=budget, label="table, eps=0.25", random_state=1)
print("spent (epsilon, delta):", budget.spent())
print("remaining (epsilon, delta):", budget.remaining())

# %%
# An overspending release is refused
# ----------------------------------
# Only 0.25 of the budget is left, so a release at ``epsilon = 0.5`` raises
# :class:`~dpfair.privacy.PrivacyBudgetExceededError` before any noise is drawn; the ledger is
# unchanged.
try:
    laplace_mechanism(counts, sensitivity=1.0, epsilon=0.5, budget=budget, label="one too many", random_state=2)
except PrivacyBudgetExceededError as error:
    print("refused:", error)
for entry in budget.ledger:
    print(f"{entry.label:>16}: epsilon = {entry.epsilon}")

# %%
# The released tables
# -------------------
# Smaller epsilon means more noise: the Laplace scale is ``sensitivity / epsilon``.
x = np.arange(len(groups))
width = 0.27
fig, ax = plt.subplots(figsize=(6.4, 3.6))
ax.bar(x - width, counts, width, label="exact (never released)", color="0.6")
ax.bar(x, noisy_half, width, label="epsilon = 0.5 (scale 2)")
ax.bar(x + width, noisy_quarter, width, label="epsilon = 0.25 (scale 4)")
ax.set_xticks(x, groups)
ax.set_ylabel("shortlisted applicants")
ax.set_title("One table, two private releases from a budget of epsilon = 1")
ax.legend()
fig.tight_layout()
plt.show()
