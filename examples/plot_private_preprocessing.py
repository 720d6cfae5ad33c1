"""
Real tables into a private pipeline: Adult with its strings and missing values, one budget
==========================================================================================

UCI Adult has string columns (``workclass``, ``occupation``, ...) and missing values (the ``?`` of the raw
files, NaN once loaded). A private model takes numbers only, and the usual scikit-learn preprocessing
would read private statistics off the training rows (the levels a ``OneHotEncoder`` learns, the fill
values of a ``SimpleImputer``, the means of a ``StandardScaler``) outside any privacy budget.

:mod:`dpfair.preprocessing` declares all of it instead, from the data's published schema
(``adult.names``): the encoder's categories, the imputer's fill values, the scaler's ranges. Those
transformers read nothing private, so the whole pipeline charges one budget, for its private models only.
"""

# %%
# What a private model says about a raw table
# -------------------------------------------
import warnings

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
from dpfair.preprocessing import DeclaredImputer, DeclaredOneHotEncoder, DeclaredRangeScaler, row_norm_bound
from dpfair.privacy import PrivacyBudget, PrivacyLeakWarning

adult = load_adult(drop_missing=False)  # 48,842 rows; "?" kept, as NaN
X, y, sex = adult.X, adult.y.to_numpy(), adult.sensitive.to_numpy()
print("columns with missing values:", X.columns[X.isna().any()].tolist())
try:
    DPLogisticRegression(epsilon=1.0, data_norm=1.0).fit(X, y)
except ValueError as refusal:
    print(refusal)

# %%
# The published schema, declared
# -------------------------------
# :data:`dpfair.datasets.ADULT_SCHEMA` holds what ``adult.names`` publishes: the levels of every categorical
# column, plus ``None`` for a missing value (its own column) where the files have one, and the numeric columns'
# ranges. Capital gain and loss go on a log scale (``np.log1p`` is a fixed map of each value), and the 41
# countries are recoded to United-States or other (a fixed map too). A level that is not declared raises, naming
# the column (``handle_unknown="other"`` maps it to an "other" column instead): no column is ever learned from rows.
CATEGORICAL = ["workclass", "marital-status", "occupation", "relationship", "race"]
CATEGORIES = ADULT_SCHEMA.encoder_categories(CATEGORICAL)
RANGES = {c: ADULT_SCHEMA.ranges[c] for c in ("age", "education-num", "hours-per-week")}
CAPITAL = {c: (0.0, np.log1p(ADULT_SCHEMA.ranges[c][1])) for c in ("capital-gain", "capital-loss")}


def us_or_other(country):
    """A fixed map of each value: United-States, or "other" (a missing country included)."""
    return np.where(country == "United-States", "United-States", "other").astype(object)


preprocess = ColumnTransformer([
    ("categorical", DeclaredOneHotEncoder(CATEGORIES), CATEGORICAL),
    ("country", make_pipeline(DeclaredImputer("other"),
                              FunctionTransformer(us_or_other, feature_names_out="one-to-one"),
                              DeclaredOneHotEncoder([["United-States", "other"]])), ["native-country"]),
    ("numeric", make_pipeline(DeclaredImputer({c: float(np.mean(r)) for c, r in RANGES.items()}),
                              DeclaredRangeScaler(RANGES)), list(RANGES)),
    ("capital", make_pipeline(FunctionTransformer(np.log1p, feature_names_out="one-to-one"),
                              DeclaredRangeScaler(CAPITAL)), list(CAPITAL)),
]).set_output(transform="pandas")
data_norm = row_norm_bound(preprocess)  # from the declarations alone: sqrt(6 one-hot blocks + 5 scaled columns)
print(f"declared bound on every row's norm: {data_norm:.3f}")

# %%
# Nothing private is read
# -----------------------
# Fitted on the training rows or on the held-out rows, the preprocessing is the same map, and each row's
# output depends on that row only.
order = np.random.default_rng(0).permutation(len(y))  # public randomness
train, test = order[:32_000], order[32_000:]
on_train = preprocess.fit(X.iloc[train]).transform(X.iloc[test[:1000]])
on_test = sklearn.clone(preprocess).fit(X.iloc[test]).transform(X.iloc[test[:1000]])
one_row = preprocess.transform(X.iloc[test[:1]])
print("same map whatever the rows:", on_train.equals(on_test), "| a row alone:", np.array_equal(one_row, on_train[:1]))

# %%
# One budget for the whole pipeline
# ---------------------------------
# Half the epsilon for the logistic regression (every row's features and label), half for the equalized-odds
# post-processor (every row's sex). The ledger holds the two private releases, and nothing else.
sklearn.set_config(enable_metadata_routing=True)  # sensitive_features travels to the post-processor


def private_pipeline(epsilon, seed=0):
    budget = PrivacyBudget(epsilon)
    base = DPLogisticRegression(epsilon=epsilon / 2, data_norm=data_norm, budget=budget, random_state=seed)
    post = DPEqualizedOddsPostProcessor(base, prefit=False, epsilon=epsilon / 2, gamma=0.02, groups=["Female", "Male"],
                                        budget=budget, random_state=seed)
    post.set_fit_request(sensitive_features=True).set_predict_request(sensitive_features=True)
    return make_pipeline(sklearn.clone(preprocess), post), budget


def evaluate(pipeline):
    predictions = pipeline.predict(X.iloc[test], sensitive_features=sex[test])
    return np.mean(predictions != y[test]), equalized_odds_difference(y[test], predictions, sex[test])


with warnings.catch_warnings():
    warnings.simplefilter("ignore", PrivacyLeakWarning)  # seeded noise, for a reproducible page
    pipeline, budget = private_pipeline(1.0)
    pipeline.fit(X.iloc[train], y[train], sensitive_features=sex[train])
for entry in budget.ledger:
    print(f"charged: {entry.label}, epsilon {entry.epsilon:g}")
error, gap = evaluate(pipeline)
constant = min(y[test].mean(), 1 - y[test].mean())
print(f"epsilon 1: held-out error {error:.3f} (constant {constant:.3f}), equalized-odds difference {gap:.3f}; "
      f"noise_to_signal_ {pipeline[-1].estimator_.noise_to_signal_:.3f}")

# %%
# Error and fairness against the total epsilon
# --------------------------------------------
# Beside the same preprocessing with scikit-learn's (non-private, not fair) logistic regression.
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    reference = make_pipeline(sklearn.clone(preprocess), LogisticRegression(max_iter=1000)).fit(X.iloc[train], y[train])
reference_predictions = reference.predict(X.iloc[test])
reference_error = np.mean(reference_predictions != y[test])
reference_gap = equalized_odds_difference(y[test], reference_predictions, sex[test])
epsilons = [0.25, 0.5, 1.0, 2.0, 4.0]
results = []
for epsilon in epsilons:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sweep, _ = private_pipeline(epsilon, seed=1)
        results.append(evaluate(sweep.fit(X.iloc[train], y[train], sensitive_features=sex[train])))
results = np.array(results)
fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.5))
left.plot(epsilons, results[:, 0], "o-", label="private pipeline (one budget)")
left.axhline(reference_error, color="gray", ls="--", label="scikit-learn, not private")
left.axhline(constant, color="black", ls=":", label="constant classifier")
left.set(xscale="log", xlabel="total epsilon", ylabel="held-out error")
left.legend()
right.plot(epsilons, results[:, 1], "o-")
right.axhline(reference_gap, color="gray", ls="--")
right.set(xscale="log", xlabel="total epsilon", ylabel="equalized-odds difference (held out)")
fig.suptitle("Adult with strings and missing values: declared preprocessing, then private models")
fig.tight_layout()
plt.show()
