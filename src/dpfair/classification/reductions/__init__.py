"""Differentially private fair classification by reductions: :class:`DPExponentiatedGradient`.

The estimator (Jagielski et al., "Differentially Private Fair Learning", ICML 2019, Algorithm 3; the
exponentiated-gradient reduction of Agarwal et al., 2018) and the steps it runs, one module each:

* ``_estimator``: the scikit-learn estimator on the release template (validate, charge once, draw, solve);
* ``_inputs``: the row checks and the declared bounds on ``X``;
* ``_accounting``: the per-round epsilon of the ``2T`` releases (PLD, Renyi, advanced composition, the paper's);
* ``_plan``: the game's options, data and released statistics as typed stages;
* ``_oracle``: the A-blind oracle's once-released Gaussian sufficient statistics;
* ``_game``: the Learner's and Auditor's noisy moments and the fairness violations;
* ``_run``: the game itself, round by round;
* ``_mixture``: the exact best mixture at ``epsilon = inf``;
* ``_fallback``: the constant classifier when the evidence is too weak (:class:`ConstantFallbackWarning`);
* ``_predict``: the randomized mixture's predictions.
"""

from dpfair.classification._group_evidence import EmptyGroupWarning
from dpfair.classification.reductions._accounting import per_round_epsilon
from dpfair.classification.reductions._estimator import DEFAULT_DELTA, DPExponentiatedGradient
from dpfair.classification.reductions._fallback import ConstantFallbackWarning, SmallBudgetWarning
from dpfair.classification.reductions._plan import default_gamma

# the names this module exported when it was one file (EmptyGroupWarning, default_gamma, per_round_epsilon
# included): importing them from here keeps working
__all__ = ["DEFAULT_DELTA", "ConstantFallbackWarning", "DPExponentiatedGradient", "EmptyGroupWarning",
           "SmallBudgetWarning", "default_gamma", "per_round_epsilon"]
