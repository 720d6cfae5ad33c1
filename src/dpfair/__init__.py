"""dpfair: decisions about people that are both fair and differentially private.

Subpackages
-----------
privacy
    Budgets, accounting, noise sources, mechanisms, continual release and audits.
    The only place in dpfair that draws privacy noise.
fairness
    Fairness metrics shared by every experiment.
metrics
    Private fairness assessment: fairlearn's MetricFrame with a privacy guarantee and confidence intervals.
selection
    Exponential-mechanism selection of m of n applicants and its exact analysis.
regression
    Differentially private fair post-processing of regressors (Wasserstein barycenters).
classification
    Equalized-odds classification with a private sensitive attribute: post-processing and reductions.
linear_model
    Private base models (linear and logistic regression) that make a post-processing pipeline private end to end.
bandits
    Online selection: group meritocratic fairness (Private-Fair-Greedy) and federated fairness of
    exposure (Fed-FairX-LinUCB, Priv-FairX-LinUCB).
model_selection
    Private hyper-parameter search (random stopping, private scorers) for any dpfair estimator.
datasets
    Verified downloads of the real datasets into a data home, and synthetic generators.
experiments
    The papers' experiments: specifications, a resumable runner, a results store and the report.
"""

from dpfair._version import __version__

__all__ = ["__version__"]
