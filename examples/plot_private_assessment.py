"""
Private fairness assessment on Adult, before and after mitigation
=================================================================

:class:`~dpfair.metrics.PrivateMetricFrame` is fairlearn's ``MetricFrame`` with a
differential-privacy guarantee and confidence intervals.  Every count-based metric comes from
one noisy release of the ``(group, y_true, y_pred)`` contingency table (discrete Laplace,
``epsilon``-DP for every row), and every estimate, including the disparities, gets an interval
that covers both the sampling error and the privacy noise.

We assess a logistic regression on UCI Adult by race and sex (ten intersectional groups) at
``epsilon = 1``, mitigate it with
:class:`~dpfair.classification.DPEqualizedOddsPostProcessor`, and assess again.  Two budgets
are involved, on disjoint rows:

* the **assessment rows** are assessed twice at ``epsilon = 1``: their budget is 2
  (sequential composition), protecting each person's race, sex, label and prediction;
* the **post-processing rows** pay ``epsilon = 1`` for the mitigation, which protects their
  group labels (race and sex; features and labels are treated as public there).
"""

# %%
# Adult, a model, and three disjoint sets of rows
# -----------------------------------------------
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from sklearn.linear_model import LogisticRegression

from dpfair.classification import DPEqualizedOddsPostProcessor
from dpfair.datasets import load_adult
from dpfair.metrics import PrivateMetricFrame
from dpfair.privacy import PrivacyBudget

adult = load_adult()  # from the data home (see `dpfair data info`)
columns = ["age", "education-num", "hours-per-week", "capital-gain", "capital-loss", "marital-status", "relationship",
           "occupation", "workclass"]
X = pd.get_dummies(adult.X[columns], dtype=float).to_numpy()
X = (X - X.mean(axis=0)) / (X.std(axis=0) + 1e-12)
y = adult.y.to_numpy()
race, sex = adult.X["race"].to_numpy(), adult.sensitive.to_numpy()
RACES = ["White", "Black", "Asian-Pac-Islander", "Amer-Indian-Eskimo", "Other"]
GROUPS = {"race": RACES, "sex": ["Female", "Male"]}  # declared: public knowledge, never read off the data

order = np.random.default_rng(0).permutation(len(y))
train, post, assess = np.array_split(order, 3)
model = LogisticRegression(max_iter=1000).fit(X[train], y[train])
features = pd.DataFrame({"race": race[assess], "sex": sex[assess]})
metrics = {"selection rate": "selection_rate", "TPR": "true_positive_rate", "FPR": "false_positive_rate"}
assessment_budget = PrivacyBudget(epsilon=2.0, neighbouring="add_remove")  # the frame's relation: add/remove one row

# %%
# Assess the model at epsilon = 1
# -------------------------------
before = PrivateMetricFrame(metrics=metrics, y_true=y[assess], y_pred=model.predict(X[assess]),
                            sensitive_features=features, epsilon=1.0, groups=GROUPS, budget=assessment_budget,
                            random_state=0)  # seeds the intervals' draws only (fairlearn's meaning): the noise is secure
print(before.by_group.round(3))
print("difference between groups:\n", pd.DataFrame({
    "estimate": before.difference(), "lower": before.conf_int["difference"]["lower"],
    "upper": before.conf_int["difference"]["upper"]}).round(3))

# %%
# Mitigate with private equalized-odds post-processing
# ----------------------------------------------------
# The post-processor sees the group of every post-processing row through a Laplace-noised table
# (its own epsilon = 1).  It equalizes the error rates between the sexes, the largest groups;
# the second assessment shows what that does to every race x sex cell.  Its guarantee protects a change of
# one row's sex (the features and labels of these rows are treated as public, the model being prefit), so its
# budget counts in that relation: a replace-one-row budget would refuse it (dpfair.privacy.relations).
mitigation_budget = PrivacyBudget(epsilon=1.0, neighbouring="change_attribute")
post_processor = DPEqualizedOddsPostProcessor(model, prefit=True, epsilon=1.0, gamma=0.02, groups=["Female", "Male"],
                                              budget=mitigation_budget, random_state=0)
post_processor.fit(X[post], y[post], sensitive_features=sex[post])
fair_predictions = post_processor.predict(X[assess], sensitive_features=sex[assess])

# %%
# Assess again, on the same assessment rows (their second epsilon = 1)
# --------------------------------------------------------------------
after = PrivateMetricFrame(metrics=metrics, y_true=y[assess], y_pred=fair_predictions, sensitive_features=features,
                           epsilon=1.0, groups=GROUPS, budget=assessment_budget, random_state=1)
# (a group that cannot be measured at this epsilon is NaN: not drawn, and left out of the disparities)
print("assessment rows: spent", assessment_budget.spent(), "of 2.0;",
      "post-processing rows: spent", mitigation_budget.spent(), "of 1.0")
print(after.privacy_spent_["protects"])

# %%
# Before and after: true-positive rate by group, and the disparities
# ------------------------------------------------------------------
# Groups whose denominator is noise-dominated (flagged) are not measurable at this epsilon: their value is
# NaN (no marker) and their interval the whole range.  The disparity intervals are simultaneous over all pairs
# of the measured groups.
fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.8), gridspec_kw={"width_ratios": [1.4, 1]})
names = [f"{r} / {s}" for r, s in before.by_group.index]
ypos = np.arange(len(names))
for offset, frame, colour, tag in ((-0.15, before, "tab:red", "before"), (0.15, after, "tab:blue", "after")):
    est = frame.by_group["TPR"]
    lower, upper = frame.conf_int["by_group"]["lower"]["TPR"], frame.conf_int["by_group"]["upper"]["TPR"]
    flagged = frame.flagged["TPR"].to_numpy()
    left.errorbar(est, ypos + offset, xerr=[est - lower, upper - est], fmt="o", color=colour, capsize=2,
                  mfc="none", label=f"{tag} (epsilon = 1)")
    left.scatter(est[~flagged], (ypos + offset)[~flagged], color=colour, zorder=3)
left.set_yticks(ypos, names)
left.invert_yaxis()
left.set_xlabel("true-positive rate, 95 % interval")
left.legend(loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=2, frameon=False)
xpos = np.arange(len(metrics))
for offset, frame, colour, tag in ((-0.17, before, "tab:red", "before"), (0.17, after, "tab:blue", "after")):
    est = frame.difference()
    err = [est - frame.conf_int["difference"]["lower"], frame.conf_int["difference"]["upper"] - est]
    right.bar(xpos + offset, est, width=0.32, color=colour, alpha=0.6, label=tag)
    right.errorbar(xpos + offset, est, yerr=err, fmt="none", color="black", capsize=3)
right.set_xticks(xpos, list(metrics))
right.set_ylabel("largest difference between groups, 95 % interval")
right.legend()
fig.suptitle("Private assessment of a logistic regression on Adult by race x sex (each assessment: epsilon = 1)")
fig.tight_layout()
plt.show()
