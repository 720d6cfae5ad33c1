"""
Private selection rounds under one privacy budget
=================================================

:class:`dpfair.selection.ExponentialSelector` selects ``n_select`` applicants with the exponential
mechanism.  Every :meth:`~dpfair.selection.ExponentialSelector.select` (or ``fit``) is a private
release that charges ``epsilon`` to a shared :class:`dpfair.privacy.PrivacyBudget`; once the budget
is spent the next round is refused *before* anything is drawn, and the budget is left unchanged.

The plot shows, over repeated rounds on fresh applicant pools, how often the truly best applicant is
selected (a privacy/utility trade-off) and the budget spent after each round.
"""

# %%
# Rounds on fresh pools, one shared budget
# ----------------------------------------
import matplotlib.pyplot as plt
import numpy as np

from dpfair.privacy import PrivacyBudget, PrivacyBudgetExceededError
from dpfair.selection import ExponentialSelector

rng = np.random.default_rng(0)  # synthetic applicants; a seed makes the draws reproducible (not hardened)
budget = PrivacyBudget(epsilon=40.0)
selector = ExponentialSelector(epsilon=6.0, n_select=5, score_bounds=(0.0, 1.0), budget=budget, random_state=1)

spent, hits = [], []
for round_ in range(10):
    scores = rng.beta(2.0, 3.0, size=20)  # declared bounds [0, 1] hold by construction
    try:
        chosen = selector.select(scores)
    except PrivacyBudgetExceededError as exc:
        print(f"round {round_}: refused, {exc}")
        break
    hits.append(int(np.argmax(scores) in chosen))
    spent.append(budget.spent()[0])
print(f"{len(spent)} rounds released; the best applicant was selected in {sum(hits)} of them")

# %%
# Plot: budget spent per round
# ----------------------------
fig, ax = plt.subplots(figsize=(6.4, 3.6))
ax.step(np.arange(1, len(spent) + 1), spent, where="mid", label="epsilon spent")
ax.axhline(budget.epsilon, color="black", ls="--", lw=1, label="budget")
ax.scatter(np.arange(1, len(spent) + 1), spent, c=["tab:green" if h else "tab:red" for h in hits], zorder=3,
           label="green: best applicant selected")
ax.set_xlabel("selection round")
ax.set_ylabel("total epsilon spent")
ax.legend(fontsize=8)
fig.tight_layout()
plt.show()
