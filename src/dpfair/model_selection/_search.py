"""The private random search (random stopping) over the candidates of a dpfair estimator.

Privacy of one trial
--------------------
The rows are split into training and validation rows by public randomness (independent of the
data).  A trial fits an ``epsilon_trial``-DP estimator on the training rows and releases an
``epsilon_trial``-DP score computed from the validation rows and the fitted model only.  Under
"replace one row" a changed row is either a training row (the fit is ``epsilon_trial``-DP, the
score a post-processing of it) or a validation row (the fit is unchanged, the score is
``epsilon_trial``-DP for every model): parallel composition makes the trial ``epsilon_trial``-DP.
The selection over a random number of trials then costs what :func:`random_stopping_epsilon`
says; the search charges that whole ``(epsilon, delta)`` to ``budget`` once, before any random
draw.  ``refit_alpha`` inside a fitted candidate costs nothing.
"""

from __future__ import annotations

import math
import numbers
import warnings
from typing import Any

import numpy as np
from scipy import sparse
from sklearn.base import BaseEstimator, MetaEstimatorMixin, RegressorMixin, clone
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import ParameterGrid
from sklearn.utils import _safe_indexing, get_tags
from sklearn.utils.validation import _num_samples, check_is_fitted

from dpfair._estimator import as_sensitive_features, charge_budget, check_budget, privacy_spent
from dpfair._validation import check_delta, check_epsilon
from dpfair.model_selection._random_stopping import check_selection, draw_n_trials, trial_epsilon_for
from dpfair.model_selection._scorers import _PrivateScorer
from dpfair.privacy import PrivacyBudget, PrivacyBudgetExceededError, suspend_default_budget
from dpfair.privacy.leaks import PrivacyLeakWarning, warn_privacy_leak
from dpfair.privacy.noise import NoiseSource, SecureNoise, get_noise_source

__all__ = ["PrivateRandomSearch"]

_NEIGHBOURING = "replace one row (the number of rows n and the train/validation split sizes are public)"


def _spent_budget() -> PrivacyBudget:
    """A budget with nothing left: it refuses every charge (the probes of :meth:`PrivateRandomSearch._check_trials`)."""
    budget = PrivacyBudget(1e-300)
    budget.spend(1e-300, label="spent: a probe's budget")
    return budget


class PrivateRandomSearch(MetaEstimatorMixin, RegressorMixin, BaseEstimator):
    """Differentially private hyper-parameter search by random stopping (Liu & Talwar; Papernot & Steinke).

    The private counterpart of scikit-learn's ``RandomizedSearchCV`` for dpfair estimators: the
    rows are split once (public randomness) into training and validation rows; then a random number
    ``K`` of trials is run, each drawing a candidate uniformly from ``param_grid``, fitting
    ``clone(estimator)`` with that candidate and ``epsilon = trial_epsilon_`` on the training rows
    and scoring it privately (``scoring``, same epsilon) on the validation rows.  The output is the
    best trial's candidate (``best_params_``), its noisy score (``best_score_``) and its fitted model
    (``best_estimator_``); ``predict`` uses that model.  ``K``, the other candidates and their scores
    are never released (releasing them would void the guarantee).

    **What it protects.** The whole search (every trial fit, every score, the random-``K``
    selection) is ``(epsilon, delta)``-DP for every row of ``(X, y, sensitive_features)`` under
    "replace one row": one trial is ``trial_epsilon_``-DP (parallel composition: a changed
    training row moves only the fit, a changed validation row only the score), and the best of a
    random number of trials costs :func:`~dpfair.model_selection.random_stopping_epsilon` of it.
    It is charged to ``budget`` once per ``fit``.

    Parameters
    ----------
    estimator : dpfair estimator
        A private estimator with an ``epsilon`` parameter (and optionally ``budget`` and
        ``random_state``, which the search sets for every trial).  Its declared bounds and groups
        are used as they are.
    param_grid : dict or list of dict
        Candidates, as for :class:`sklearn.model_selection.ParameterGrid` (e.g.
        ``{"n_bins": [12, 36], "alpha": [0, 0.05]}``); public.
    scoring : PrivateMSEScorer, PrivateKSScorer or PrivateMSEKSScorer
        The private validation score (higher is better).
    epsilon : float, default 1.0
        Total epsilon of the search (``inf``: every candidate is fitted and scored exactly, a
        non-private baseline, with a :class:`~dpfair.privacy.PrivacyLeakWarning`).
    delta : float, default 0.0
        Total delta (``> 0`` for the Renyi-DP distributions).
    n_trials : {"geometric", "truncated_negative_binomial", "poisson"}, default "geometric"
        Distribution of the number of trials ``K``.
    mean_trials : float, default 10.0
        Mean of ``K``.
    eta : float, default 1.0
        Shape of the truncated negative binomial.
    validation_fraction : float, default 0.3
        Share of the rows used for scoring, in ``(0, 1)``.
    budget : PrivacyBudget or None, default None
        Charged ``(epsilon, delta)`` once per ``fit`` before any random draw; a refusal leaves the
        budget and any earlier fitted state unchanged.
    random_state : None, int, numpy Generator or NoiseSource, default None
        ``None``: secure randomness everywhere (split, ``K``, candidates, trial noise).  A seed:
        reproducible, *not hardened* (experiments and tests only).

    Attributes
    ----------
    best_params_ : dict or None
        The selected candidate (``None`` if a Poisson ``K`` was 0).
    best_score_ : float or None
        Its noisy validation score.
    best_estimator_ : estimator or None
        Its fitted model (trained on the training rows).
    trial_epsilon_ : float
        Epsilon of every trial fit and of every score.
    privacy_spent_ : dict
        ``{"epsilon", "delta", "protects", "neighbouring"}`` for the whole search.

    Examples
    --------
    >>> from dpfair.datasets import make_regression
    >>> from dpfair.regression import FairRegressionPostProcessor
    >>> from dpfair.model_selection import PrivateMSEScorer, PrivateRandomSearch
    >>> _, y, g = make_regression(2000, random_state=0)
    >>> search = PrivateRandomSearch(
    ...     FairRegressionPostProcessor(bounds=(0, 1), groups=[0, 1]), {"n_bins": [4, 16], "alpha": [0.0, 0.1]},
    ...     scoring=PrivateMSEScorer((0, 1)), epsilon=3.0, random_state=0)
    >>> sorted(search.fit(y, y, sensitive_features=g).best_params_)
    ['alpha', 'n_bins']
    """

    def __init__(
        self,
        estimator: Any,
        param_grid: Any,
        *,
        scoring: Any,
        epsilon: float = 1.0,
        delta: float = 0.0,
        n_trials: str = "geometric",
        mean_trials: float = 10.0,
        eta: float = 1.0,
        validation_fraction: float = 0.3,
        budget: Any = None,
        random_state: Any = None,
    ) -> None:
        self.estimator = estimator
        self.param_grid = param_grid
        self.scoring = scoring
        self.epsilon = epsilon
        self.delta = delta
        self.n_trials = n_trials
        self.mean_trials = mean_trials
        self.eta = eta
        self.validation_fraction = validation_fraction
        self.budget = budget
        self.random_state = random_state

    def _trial_estimator(self, params: dict, trial_epsilon: float, noise: NoiseSource) -> Any:
        est = clone(self.estimator)
        own = est.get_params(deep=False)
        extra: dict[str, Any] = {"epsilon": trial_epsilon}
        if "budget" in own:
            extra["budget"] = None  # the search is charged as a whole
        if "random_state" in own:
            extra["random_state"] = None if isinstance(noise, SecureNoise) else int(noise.uniform(1)[0] * 2**32)
        return est.set_params(**params, **extra)

    def _check_trials(self, candidates: list[dict], trial_epsilon: float, X: Any, y: Any, sensitive: Any) -> None:
        """Run every candidate's own validation on all rows, stopping at its charge (nothing is spent).

        Each candidate is a clone with a budget that refuses every charge: the estimator contract
        (validate everything, then charge, then draw noise) makes a valid candidate stop at
        ``PrivacyBudgetExceededError`` and an invalid one raise its own error, which is re-raised here
        naming the candidate -- before the search charges its budget.  Estimators without a ``budget``
        parameter, or trials with ``epsilon = inf`` (which charge nothing), are not probed.
        """
        if math.isinf(trial_epsilon) or "budget" not in self.estimator.get_params(deep=False):
            return
        for params in candidates:
            probe = clone(self.estimator)
            # every budget of the probe, nested ones (a private base model's) included, refuses every charge
            nested = {k: _spent_budget() for k, v in probe.get_params(deep=True).items()
                      if k.endswith("__budget") and v is not None}
            try:
                probe.set_params(**params, epsilon=trial_epsilon, budget=_spent_budget(), **nested)
            except ValueError as exc:
                raise ValueError(f"param_grid candidate {params}: {exc}") from None
            try:
                with warnings.catch_warnings(), suspend_default_budget():
                    warnings.simplefilter("ignore")
                    probe.fit(X, y, sensitive_features=sensitive)
            except PrivacyBudgetExceededError:
                continue  # valid: it reached its charge
            except (ValueError, TypeError) as exc:
                raise type(exc)(f"param_grid candidate {params}: {exc}") from None

    def _dpfair_fit_charges(self) -> list[tuple[Any, float, float]]:
        """``[(budget, epsilon, delta)]``: one charge for the whole search (its trials charge nothing)."""
        epsilon = check_epsilon(self.epsilon)
        return [(check_budget(self.budget), epsilon, 0.0 if math.isinf(epsilon) else check_delta(self.delta))]

    def fit(self, X: Any, y: Any = None, *, sensitive_features: Any = None) -> PrivateRandomSearch:
        """Run the private search (module docstring) and keep the best trial's model.

        Parameters
        ----------
        X : array-like
            Features of the estimator (or regressor outputs for ``FairRegressionPostProcessor``
            without a regressor).
        y : array-like of shape (n_samples,)
            Labels: the validation score needs them (not the post-processor's fit).
        sensitive_features : array-like of shape (n_samples,) or None, default None
            Group of every row (``None`` only when the estimator declares a single group).

        Returns
        -------
        PrivateRandomSearch
            The fitted search (``self``).

        Raises
        ------
        ValueError, TypeError
            On an invalid argument (the message names it).
        PrivacyBudgetExceededError
            If ``budget`` refuses the charge; nothing is changed.

        Warns
        -----
        PrivacyLeakWarning
            With ``epsilon = inf``.
        """
        epsilon = check_epsilon(self.epsilon)
        delta = check_delta(self.delta)
        budget = check_budget(self.budget)
        if not isinstance(self.scoring, _PrivateScorer):
            raise TypeError(
                "scoring must be a dpfair private scorer (PrivateMSEScorer, PrivateKSScorer or PrivateMSEKSScorer), "
                f"got {type(self.scoring).__name__}: an exact score of the validation rows is not private."
            )
        if not hasattr(self.estimator, "get_params") or "epsilon" not in self.estimator.get_params(deep=False):
            raise TypeError("estimator must be a dpfair estimator with an epsilon parameter.")
        candidates = list(ParameterGrid(self.param_grid))
        if not candidates:
            raise ValueError("param_grid must hold at least one candidate.")
        for key in ("epsilon", "budget", "random_state"):
            if any(key in params for params in candidates):
                raise ValueError(
                    f"param_grid sets {key!r}, which the search sets itself (each trial gets trial_epsilon_ from the "
                    "search's epsilon, no budget of its own, and noise from the search's random_state); remove it."
                )
        frac = self.validation_fraction
        if isinstance(frac, bool) or not isinstance(frac, numbers.Real) or not 0 < frac < 1:
            raise ValueError(f"validation_fraction must be a number in (0, 1), got {frac!r}.")
        if math.isinf(epsilon):
            trial_epsilon, total = math.inf, (math.inf, 0.0)
        else:
            n_trials, mean_trials, delta, eta = check_selection(self.n_trials, self.mean_trials, delta, self.eta)
            trial_epsilon = trial_epsilon_for(epsilon, n_trials=n_trials, mean_trials=mean_trials, delta=delta, eta=eta)
            total = (epsilon, delta)
        if y is None:
            raise ValueError(
                f"{type(self).__name__} requires y to be passed, but the target y is None: the private validation "
                "score compares predictions with labels."
            )
        if sparse.issparse(X):
            X = sparse.csr_array(X)  # row indexing for the split
        elif not (hasattr(X, "shape") or isinstance(X, list | tuple)):
            X = np.asarray(X)
        n = _num_samples(X)
        y_arr = np.asarray(y)
        if y_arr.dtype == object:
            try:
                y_arr = y_arr.astype(np.float64)
            except (TypeError, ValueError):
                raise TypeError("y must hold real numbers (Unknown label type for a regression search); "
                                "convert the labels to floats.") from None
        if y_arr.dtype.kind == "c" or (sparse.issparse(X) is False and np.iscomplexobj(X)):
            raise ValueError("Complex data not supported: X and y must hold real numbers.")
        if y_arr.dtype.kind in "USO":
            raise TypeError(f"y must hold real numbers, got dtype {y_arr.dtype}; convert the labels to floats.")
        if y_arr.ndim == 0 or y_arr.ndim > 2 or (y_arr.ndim == 2 and y_arr.shape[1] != 1):
            raise ValueError(f"y must be a 1-d array of labels (one per row), got shape {y_arr.shape}.")
        if y_arr.shape[0] != n:
            raise ValueError(f"X and y have inconsistent numbers of samples: {n} and {y_arr.shape[0]}.")
        n_val = round(frac * n)
        if n_val < 1 or n - n_val < 1:
            raise ValueError(
                f"validation_fraction={frac!r} leaves no training or no validation row with n_samples = {n}; use more rows."
            )
        sensitive = None if sensitive_features is None else as_sensitive_features(sensitive_features, n)
        noise = get_noise_source(self.random_state)
        # public randomness: the split, K and the candidates do not depend on the data
        order = np.argsort(noise.uniform(n), kind="stable")
        val, train = np.sort(order[:n_val]), np.sort(order[n_val:])
        X_train, X_val = _safe_indexing(X, train), _safe_indexing(X, val)
        y_train, y_val = y_arr[train], y_arr[val]
        s_train, s_val = (None, None) if sensitive is None else (sensitive[train], sensitive[val])
        # every argument, every trial's parameters and the data are checked before the one charge
        # every row: the training rows are fitted, the validation rows predicted by each trial
        self._check_trials(candidates, trial_epsilon, X, y_arr, sensitive)
        self.scoring.check(X_val, y_val, s_val)
        charge_budget(budget, total[0], total[1], label=f"{type(self).__name__}.fit (trials, scores, random-K selection)")
        if math.isinf(epsilon):
            warn_privacy_leak(
                "epsilon=inf: every candidate is fitted and scored exactly on the data; the selection carries no "
                "privacy guarantee (a non-private baseline).",
                stacklevel=2,
            )
            plan = list(range(len(candidates)))
        else:
            k = draw_n_trials(noise, n_trials, mean_trials, eta)
            plan = [min(int(noise.uniform(1)[0] * len(candidates)), len(candidates) - 1) for _ in range(k)]
        best: tuple[float, dict, Any] | None = None
        for index in plan:
            params = candidates[index]
            est = self._trial_estimator(params, trial_epsilon, noise)
            with warnings.catch_warnings(), suspend_default_budget():  # the search is charged as a whole
                if math.isinf(epsilon):  # already warned once for the whole search
                    warnings.simplefilter("ignore", PrivacyLeakWarning)
                est.fit(X_train, y_train, sensitive_features=s_train)
                score = float(self.scoring(est, X_val, y_val, s_val, epsilon=trial_epsilon, noise=noise))
            if best is None or score > best[0]:
                best = (score, dict(params), est)
        self.trial_epsilon_ = trial_epsilon
        if best is None:  # Poisson K = 0: the mechanism outputs nothing
            self.best_score_, self.best_params_, self.best_estimator_ = None, None, None
        else:
            self.best_score_, self.best_params_, self.best_estimator_ = best
        protects = (
            "every row of (X, y, sensitive_features): training rows through the trial fits, validation rows "
            f"(labels included) through the private scores ({self.scoring.protects})"
        )
        if math.isinf(epsilon):
            protects = "nothing: epsilon=inf fits and scores every candidate exactly"
        for name in ("n_features_in_", "feature_names_in_"):  # as scikit-learn's searches expose them
            if hasattr(self.best_estimator_, name):
                setattr(self, name, getattr(self.best_estimator_, name))
            elif hasattr(self, name):
                delattr(self, name)
        self.privacy_spent_ = privacy_spent(total[0], total[1], protects=protects, neighbouring=_NEIGHBOURING)
        return self

    def __sklearn_tags__(self):  # scikit-learn's tags: y required; sparse input as the wrapped estimator
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        try:
            tags.input_tags.sparse = get_tags(self.estimator).input_tags.sparse
        except Exception:  # not a scikit-learn estimator: keep the defaults
            pass
        return tags

    def predict(self, X: Any, *, sensitive_features: Any = None, **kwargs: Any) -> np.ndarray:
        """Predict with ``best_estimator_``.

        Parameters
        ----------
        X : array-like
            As for the estimator.
        sensitive_features : array-like or None, default None
            Group of every row.
        **kwargs
            Passed on (e.g. ``random_state``).

        Returns
        -------
        ndarray of shape (n_samples,)
            The selected model's predictions.

        Raises
        ------
        NotFittedError
            Before ``fit``, or when a Poisson ``K`` was 0 (no model was selected).
        """
        check_is_fitted(self, "privacy_spent_")
        if self.best_estimator_ is None:
            raise NotFittedError("the search ran no trial (a Poisson number of trials was 0): no model was selected.")
        return self.best_estimator_.predict(X, sensitive_features=sensitive_features, **kwargs)
