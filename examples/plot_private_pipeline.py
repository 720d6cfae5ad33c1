"""
A pipeline private end to end on Adult: private logistic regression, then private equalized odds
================================================================================================

The post-processors protect their own rows; for the *whole* fitted pipeline to be private, the base
model must be private too.  :class:`~dpfair.linear_model.DPLogisticRegression` (objective
perturbation, Chaudhuri, Monteleoni & Sarwate 2011) is that base model: wrapped in
:class:`~dpfair.classification.DPEqualizedOddsPostProcessor` with ``prefit=False`` and one shared
:class:`~dpfair.privacy.PrivacyBudget`, the fitted pipeline reports a finite ``privacy_spent_``: the
sum of the two releases, for every training row ``(x, y, sex)``.

(scikit-learn's ``Pipeline`` chains transformers, so the post-processor *wraps* its base model
rather than following it in ``make_pipeline``; the preprocessing step comes first.)
"""

# %%
# Features scaled by public constants
# -----------------------------------
# A private model needs a declared bound on every row's norm.  Scaling with a ``StandardScaler``
# fitted on the training rows would read means and spreads off private data, so every numeric column
# is divided by its published maximum (capital gains and losses on a log scale), and each categorical
# column becomes a one-hot block over its published categories (:data:`dpfair.datasets.ADULT_SCHEMA`, as
# ``adult.names`` lists them; never the levels found in the rows, which would make the columns private).
# Each of the 5 numeric columns and 4 one-hot blocks adds at most 1 to the squared norm: ``||x|| <= 3``.
import matplotlib.pyplot as plt
import numpy as np
import sklearn
from sklearn.compose import ColumnTransformer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer

from dpfair.classification import DPEqualizedOddsPostProcessor
from dpfair.datasets import ADULT_SCHEMA, load_adult
from dpfair.fairness import equalized_odds_difference
from dpfair.linear_model import DPLogisticRegression
from dpfair.preprocessing import DeclaredOneHotEncoder
from dpfair.privacy import PrivacyBudget

adult = load_adult()  # from the data home (see `dpfair data info`)
MAXIMUM = {c: ADULT_SCHEMA.ranges[c][1] for c in ("age", "education-num", "hours-per-week", "capital-gain",
                                                   "capital-loss")}
CATEGORICAL = ["marital-status", "relationship", "occupation", "workclass"]
X = adult.X[list(MAXIMUM) + CATEGORICAL]
y, sex = adult.y.to_numpy(), adult.sensitive.to_numpy()


def scale(frame):
    out = frame.astype(float)
    for column, top in MAXIMUM.items():
        out[column] = np.log1p(out[column]) / np.log1p(top) if column.startswith("capital") else out[column] / top
    return out


preprocess = ColumnTransformer([
    ("numeric", FunctionTransformer(scale), list(MAXIMUM)),
    # load_adult() drops the rows with a missing value: no column for the schema's None level
    ("categorical", DeclaredOneHotEncoder(ADULT_SCHEMA.encoder_categories(CATEGORICAL, missing=False)), CATEGORICAL),
])
order = np.random.default_rng(0).permutation(len(y))  # public randomness
train, test = order[:30_000], order[30_000:]
sklearn.set_config(enable_metadata_routing=True)  # sensitive_features travels to the post-processor

# %%
# One budget for the whole pipeline
# ---------------------------------
# epsilon = 1 in all: half for the logistic regression (every row's features and label), half for the
# post-processor's noisy table (every row's sex).  ``fit`` checks that the budget pays for both before
# fitting anything.  Every other setting is the default, which is the recommended pipeline:
# ``C="auto"`` (the weakest ridge whose curvature correction costs at most a tenth of the epsilon, from the
# declared bound alone) and ``score_bins="auto"`` (the base model's probability cut at the public thresholds
# 1/8, ..., 7/8, since it has ``predict_proba``).  ``C=1.0, score_bins=None`` is the paper's variant.


def private_pipeline(epsilon, seed=0):
    budget = PrivacyBudget(epsilon)
    base = DPLogisticRegression(epsilon=0.5 * epsilon, data_norm=3.0, budget=budget, random_state=seed)
    post = DPEqualizedOddsPostProcessor(base, prefit=False, epsilon=0.5 * epsilon, gamma=0.02,
                                        groups=["Female", "Male"], budget=budget, random_state=seed)
    post.set_fit_request(sensitive_features=True).set_predict_request(sensitive_features=True)
    return make_pipeline(preprocess, post), budget


def evaluate(pipeline):
    predictions = pipeline.predict(X.iloc[test], sensitive_features=sex[test])
    return np.mean(predictions == y[test]), equalized_odds_difference(y[test], predictions, sex[test])


pipeline, budget = private_pipeline(1.0)  # seeded for a reproducible page; leave random_state=None on real data
pipeline.fit(X.iloc[train], y[train], sensitive_features=sex[train])
accuracy, gap = evaluate(pipeline)
print("privacy_spent_:", pipeline[-1].privacy_spent_)
print(f"budget spent: {budget.spent()}; private pipeline at epsilon = 1: accuracy {accuracy:.3f}, "
      f"equalized-odds difference {gap:.3f}")
print(f"C_ = {pipeline[-1].estimator_.C_:.4f}, score_bins_ = {pipeline[-1].score_bins_}, "
      f"guaranteed_violation_ = {pipeline[-1].guaranteed_violation_:.3f} (training rows, probability 0.95)")

# %%
# The same pipeline without privacy
# ---------------------------------
# scikit-learn's ``LogisticRegression`` and the exact post-processing of Hardt et al. (``epsilon = inf``, on the
# same 8 score bins), which says, once, that it is not private (a ``PrivacyLeakWarning``).
exact = DPEqualizedOddsPostProcessor(LogisticRegression(max_iter=1000), prefit=False, epsilon=np.inf, gamma=0.02,
                                     groups=["Female", "Male"], random_state=0)
exact.set_fit_request(sensitive_features=True).set_predict_request(sensitive_features=True)
reference = make_pipeline(preprocess, exact).fit(X.iloc[train], y[train], sensitive_features=sex[train])
reference_accuracy, reference_gap = evaluate(reference)
print(f"non-private pipeline: accuracy {reference_accuracy:.3f}, equalized-odds difference {reference_gap:.3f}")

# %%
# Accuracy against the total epsilon
# -----------------------------------
epsilons = [0.25, 0.5, 1.0, 2.0, 4.0]
results = []
for epsilon in epsilons:
    sweep, _ = private_pipeline(epsilon, seed=1)
    results.append(evaluate(sweep.fit(X.iloc[train], y[train], sensitive_features=sex[train])))
results = np.array(results)
fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.5))
left.plot(epsilons, results[:, 0], "o-", label="private pipeline")
left.axhline(reference_accuracy, color="gray", ls="--", label="non-private pipeline")
left.set(xscale="log", xlabel="total epsilon of the pipeline", ylabel="test accuracy")
left.legend()
right.plot(epsilons, results[:, 1], "o-")
right.axhline(reference_gap, color="gray", ls="--")
right.set(xscale="log", xlabel="total epsilon of the pipeline", ylabel="equalized-odds difference (test)")
fig.suptitle("Adult: DPLogisticRegression + DPEqualizedOddsPostProcessor, one budget")
fig.tight_layout()
plt.show()
