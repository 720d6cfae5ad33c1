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

Private parts inside a trial
----------------------------
A trial's fit includes every private part the estimator fits itself (a private base model of a
post-processor with ``prefit=False``): by basic composition on the training rows, those parts keep the
epsilon they declare and the estimator gets the rest of ``epsilon_trial`` (:meth:`PrivateRandomSearch._outer_epsilons`,
from the parameters alone).  A candidate whose parts leave the estimator nothing, or charge a ``delta``
(the random-stopping bounds used here hold for pure-DP trials), is refused before the charge.  In a
trial every private part's ``budget`` is ``None`` and the process-wide ledger is suspended, so nothing
but the search's one charge reaches any ledger (a budget shared with a base model does not count the
trials), and every part's ``random_state`` is the search's.  The selected model's ``privacy_spent_``
is the search's: it is one output of the whole search.

The search is one release of :class:`dpfair.base.PrivateEstimator`'s template: its own parameters,
the data, every candidate (its planned charge from its parameters, then its dry run
:meth:`~dpfair.base.PrivateEstimator.check_release` on the rows) and the scorer's checks are validated
first, then the one charge, then the trials -- an iterative mechanism, the template's ``_run`` step: the
split, ``K``, the candidates and every trial's noise come from the noise source created after the charge --
then the choice of the best trial.
"""

from __future__ import annotations

import math
import numbers
import warnings
from dataclasses import dataclass, replace
from typing import Any, ClassVar

import numpy as np
from scipy import sparse
from sklearn.base import BaseEstimator, MetaEstimatorMixin, RegressorMixin, clone, is_classifier
from sklearn.exceptions import NotFittedError
from sklearn.frozen import FrozenEstimator
from sklearn.model_selection import ParameterGrid
from sklearn.utils import _safe_indexing, get_tags
from sklearn.utils.validation import _num_samples, check_is_fitted

from dpfair._estimator import as_sensitive_features, fit_charges, privacy_spent
from dpfair._warnings import find_stack_level
from dpfair._wrapped_fit import SensitiveScoreMixin, rehearse_wrapped_fit
from dpfair.base import PrivacyParameters, PrivateEstimator, ValidatedData, ValidatedOptions
from dpfair.model_selection._classifier_scorers import class_labels
from dpfair.model_selection._payoff import SearchPayoff, SearchPayoffWarning, search_payoff
from dpfair.model_selection._random_stopping import check_selection, draw_n_trials, trial_epsilon_for
from dpfair.model_selection._scorers import _PrivateScorer, takes_sensitive_features
from dpfair.privacy import PrivacyBudgetExceededError, suspend_default_budget
from dpfair.privacy.budget import check_budgets_cover
from dpfair.privacy.leaks import PrivacyLeakWarning, warn_privacy_leak
from dpfair.privacy.noise import NoiseSource, SecureNoise
from dpfair.privacy.relations import REPLACE, describe, weakest_relation

__all__ = ["PrivateRandomSearch"]

_NEIGHBOURING = "replace one row (the number of rows n and the train/validation split sizes are public)"


def _private_parts(estimator: Any) -> list[tuple[str, Any]]:
    """``(prefix, component)`` of every dpfair private component: ``("", estimator)``, then e.g. ``("estimator__", base)``.

    A private component is one with an ``epsilon`` parameter (a dpfair private estimator), at any depth of
    ``get_params(deep=True)``; ``prefix + "budget"`` names its budget for ``set_params``.
    """
    parts: list[tuple[str, Any]] = [("", estimator)]
    deep = estimator.get_params(deep=True)
    # a FrozenEstimator's inner model is fitted already and never refitted (nor charged, nor re-parametrised)
    frozen = [key + "__" for key, value in deep.items() if isinstance(value, FrozenEstimator)]
    for key, value in deep.items():
        if any(key.startswith(prefix) for prefix in frozen):
            continue
        if hasattr(value, "get_params") and not isinstance(value, type):
            try:
                own = value.get_params(deep=False)
            except Exception:  # not a scikit-learn estimator: not a private part
                continue
            if "epsilon" in own:
                parts.append((f"{key}__", value))
    return parts


@dataclass(frozen=True, eq=False)
class _SearchOptions(ValidatedOptions):
    """The search's validated parameters that are not privacy parameters: the candidates and the split."""

    candidates: list[dict[str, Any]]
    validation_fraction: float
    payoff_check: str


@dataclass(frozen=True, eq=False)
class _Selection:
    """The random-stopping plan, from the parameters alone: each trial's epsilon, the law of ``K``, each
    candidate's share of a trial for its own release (``n_trials``, ``mean_trials`` and ``eta`` are ``None`` with
    ``epsilon = inf``: every candidate runs once)."""

    trial_epsilon: float
    outer_epsilons: list[float]
    n_trials: str | None = None
    mean_trials: float | None = None
    eta: float | None = None


@dataclass(frozen=True, eq=False, kw_only=True)
class _SearchData(ValidatedData):
    """Step 1's data: every row (split only after the charge), the size of the validation side and the plan."""

    X: Any
    y: np.ndarray
    n_validation: int
    selection: _Selection


def _fit(estimator: Any, X: Any, y: Any, sensitive_features: Any) -> Any:
    """``estimator.fit(X, y)``, with ``sensitive_features=`` when its ``fit`` takes them (``DPLogisticRegression`` does not)."""
    if takes_sensitive_features(estimator.fit, sensitive_features):
        return estimator.fit(X, y, sensitive_features=sensitive_features)
    return estimator.fit(X, y)


_FROZEN_HINT = (" A fitted base model given with prefit=True does not survive clone (every trial clones the estimator): "
                "wrap it in sklearn.frozen.FrozenEstimator(base), which clone keeps fitted.")


class PrivateRandomSearch(PrivateEstimator, SensitiveScoreMixin, MetaEstimatorMixin, RegressorMixin, BaseEstimator):
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
        are used as they are.  Private parts it fits itself (a base model with ``prefit=False``) keep
        their declared epsilon, which must be pure DP and leave the estimator part of each trial's
        epsilon; their ``budget`` and ``random_state`` are set by the search too.
    param_grid : dict or list of dict
        Candidates, as for :class:`sklearn.model_selection.ParameterGrid` (e.g.
        ``{"n_bins": [12, 36], "alpha": [0, 0.05]}``); public.
    scoring : PrivateMSEScorer, PrivateKSScorer, PrivateMSEKSScorer, PrivateAccuracyScorer or PrivateEqualizedOddsScorer
        The private validation score (higher is better).  Over a classifier, ``y`` may hold any labels (strings
        included) and the search is a classifier; an estimator whose ``fit`` / ``predict`` takes no
        ``sensitive_features`` (``DPLogisticRegression``) is called without them.  A fitted base model with
        ``prefit=True`` must be wrapped in ``sklearn.frozen.FrozenEstimator`` (every trial clones the estimator).
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
    payoff_check : {"warn", "raise", "ignore"}, default "warn"
        What to do, before the charge, when the search is not expected to beat the untuned estimator at the same
        total epsilon (too few rows for its budget, decided from public facts only: :meth:`payoff`,
        :func:`~dpfair.model_selection.search_payoff`): a :class:`~dpfair.model_selection.SearchPayoffWarning`, a
        ``ValueError`` (nothing charged), or nothing.
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
        ``{"epsilon", "delta", "protects", "neighbouring"}`` for the whole search; ``best_estimator_``'s
        ``privacy_spent_`` says the same (it was selected by the search).

    Notes
    -----
    Before its one charge the search validates its own parameters, the data, the scorer, and every
    candidate of ``param_grid``: its cost from its parameters alone
    (:meth:`~dpfair.base.PrivateMechanismMixin.planned_charge`, through :func:`dpfair._estimator.fit_charges`),
    then its dry run on all rows (:meth:`~dpfair.base.PrivateEstimator.check_release`, a private base model's
    included), drawing no noise and charging nothing; a non-private base model the candidate fits itself
    (``prefit=False``) is fitted once on the rows and thrown away, as only its fit runs its checks.  Three
    kinds of refusal cannot be foreseen there and would come after the charge: a check of the exact statistics
    a fit computes (a noise room computed from the data, say), a check that needs the outputs of a base model
    fitted in the trial, and one that depends on the random training/validation split (a class absent from the
    training rows of a non-private base classifier, say).  The split is drawn from the search's randomness after
    the charge, so that seeded runs stay reproducible.

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

    _privacy_parameters: ClassVar[dict[str, str]] = {
        "epsilon": "epsilon", "delta": "delta", "budget": "budget", "random_state": "random_state",
    }
    _results_hold_feature_attributes: ClassVar[bool] = True  # stale feature attributes go (dpfair.base)
    _privacy_neighbouring: ClassVar[str] = _NEIGHBOURING

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
        payoff_check: str = "warn",
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
        self.payoff_check = payoff_check
        self.budget = budget
        self.random_state = random_state

    # ------------------------------------------------------------------ one trial: its private parts and its cost
    def _candidate_estimator(self, params: dict) -> Any:
        """``clone(estimator)`` with a candidate's parameters (values cloned, as scikit-learn's searches do)."""
        return clone(self.estimator).set_params(**{k: clone(v, safe=False) for k, v in params.items()})

    @staticmethod
    def _neutralised(est: Any, outer_epsilon: float, random_state: Any) -> Any:
        """``est`` with ``epsilon = outer_epsilon``, and every private part's budget and random_state set by the search.

        Every dpfair private component of ``est`` (itself, and each nested one with an ``epsilon``, such as a
        private base model) gets ``budget=None``: no trial charges anything anywhere (the search is charged once
        for all of them, and runs them with the process-wide ledger suspended), and the search's
        ``random_state`` (``None``: secure noise).
        """
        settings: dict[str, Any] = {"epsilon": outer_epsilon}
        for prefix, part in _private_parts(est):
            own = part.get_params(deep=False)
            if "budget" in own:
                settings[prefix + "budget"] = None
            if "random_state" in own:
                settings[prefix + "random_state"] = random_state
        return est.set_params(**settings)

    def _trial_estimator(self, params: dict, outer_epsilon: float, noise: NoiseSource) -> Any:
        seed = None if isinstance(noise, SecureNoise) else int(noise.uniform(1)[0] * 2**32)
        return self._neutralised(self._candidate_estimator(params), outer_epsilon, seed)

    def _outer_epsilons(self, candidates: list[dict], selection: _Selection) -> list[float]:
        """Each candidate's share of ``trial_epsilon`` for the estimator's own release (validation only).

        A trial fits the candidate on the training rows (its nested private parts, such as a private base
        model with ``prefit=False``, at the epsilon they declare, then the estimator itself) and scores it
        on the validation rows: by parallel composition it is ``trial_epsilon``-DP when the fit, nested parts
        included, is pure ``trial_epsilon``-DP (basic composition on the training rows).  So the estimator
        gets ``trial_epsilon`` minus what its nested parts charge.  The costs come from the parameters alone
        (:func:`dpfair._estimator.fit_charges`): nothing is fitted, drawn or charged.

        Raises
        ------
        ValueError
            If a candidate's nested parts charge a ``delta``, leave the estimator no epsilon, or its whole
            fit is not a pure ``trial_epsilon``-DP release (the random-stopping bounds of
            :mod:`dpfair.model_selection._random_stopping` hold for pure-DP trials only).
        """
        trial_epsilon = selection.trial_epsilon
        if math.isinf(trial_epsilon):
            return [math.inf] * len(candidates)
        setting = (f"the search's epsilon={self.epsilon!r} with n_trials={selection.n_trials!r} and "
                   f"mean_trials={selection.mean_trials!r} gives each trial epsilon={trial_epsilon:.6g}")
        pure_only = ("the random-stopping bounds of this search hold for pure epsilon-DP trials only, so nothing was "
                     "charged")
        out = []
        for params in candidates:
            try:
                # costed as the trial runs: every budget None, the process-wide ledger suspended
                est = self._neutralised(self._candidate_estimator(params), trial_epsilon, None)
                with suspend_default_budget():
                    charges = fit_charges(est)
            except (ValueError, TypeError) as exc:
                raise type(exc)(f"param_grid candidate {params}: {exc}") from None
            nested = charges[:-1]  # the estimator's own charge is the last (dpfair._estimator.fit_charges)
            nested_epsilon = float(sum(e for _, e, _ in nested))
            if any(d > 0 for _, _, d in nested):
                raise ValueError(
                    f"param_grid candidate {params}: a private part fitted inside estimator charges a delta > 0 in "
                    f"every trial, and {pure_only}. Use pure-DP parts (e.g. DPLinearRegression(mechanism='laplace')), "
                    "or fit the base model outside the search and pass it with prefit=True."
                )
            outer_epsilon = trial_epsilon - nested_epsilon
            if not outer_epsilon > 0:
                raise ValueError(
                    f"param_grid candidate {params}: the private part(s) fitted inside estimator spend "
                    f"epsilon={nested_epsilon:.6g} in every trial, and {setting}, which must also pay for the "
                    "estimator's own release; nothing was charged. Raise the search's epsilon, lower the nested "
                    "epsilon (e.g. estimator__epsilon), or fit the base model outside the search (prefit=True)."
                )
            est.set_params(epsilon=outer_epsilon)
            with suspend_default_budget():
                total = fit_charges(est)
            if any(d > 0 for _, _, d in total) or sum(e for _, e, _ in total) > trial_epsilon * (1 + 1e-9):
                raise ValueError(
                    f"param_grid candidate {params}: one fit of the estimator at epsilon={outer_epsilon:.6g} charges "
                    f"(epsilon, delta) = {[(e, d) for _, e, d in total]}, not a pure epsilon={trial_epsilon:.6g}-DP "
                    f"release, and {pure_only}. Use a pure-DP configuration (e.g. DPLinearRegression(mechanism='laplace'))."
                )
            out.append(outer_epsilon)
        return out

    def _noise_features(self, X: Any) -> int | None:
        """Features the trials' noise grows with: ``X``'s columns when a private part declares a bound on the rows'
        norm (a private linear model, whose error law :mod:`dpfair.model_selection._payoff` measured), else
        ``None`` (no measured law: the check says nothing)."""
        for _, part in _private_parts(self.estimator):
            own = part.get_params(deep=False)
            if any(own.get(name) is not None for name in ("data_norm", "x_norm_bound", "x_l1_bound")):
                shape = getattr(X, "shape", None)
                return int(shape[1]) if shape is not None and len(shape) == 2 else 1
        return None

    def payoff(self, n_rows: int, n_features: int = 1) -> SearchPayoff | None:
        """Whether this search can be expected to beat its untuned estimator at the same total epsilon.

        From public facts only (the search's parameters, the number of rows and of features the noise grows with):
        :func:`~dpfair.model_selection.search_payoff`; ``fit`` runs the same check before its charge
        (``payoff_check``).

        Parameters
        ----------
        n_rows : int
            Rows the search will be given.
        n_features : int, default 1
            Columns of ``X``.  ``fit`` checks only searches with a private part that declares a bound on the rows'
            norm (``data_norm``, ``x_norm_bound``: a private linear model, whose noise grows with the features and
            whose error law was measured); for the others this is a rough guide.

        Returns
        -------
        SearchPayoff or None
            The handicap and ``can_pay``; ``None`` at ``epsilon = inf`` (no noise, no handicap).

        Raises
        ------
        ValueError, TypeError
            On an invalid parameter of the search or argument.
        """
        params = self._validate_every_parameter()
        selection = self._selection(params)
        if math.isinf(params.epsilon):
            return None
        return search_payoff(n_rows, n_features, epsilon=params.epsilon, trial_epsilon=selection.trial_epsilon,
                             validation_fraction=params.options.validation_fraction)

    def _check_payoff(self, params: PrivacyParameters, selection: _Selection, n_rows: int, X: Any) -> None:
        """Warn (or refuse, before the charge) when the search is not expected to pay for itself (public facts)."""
        n_features = self._noise_features(X)
        if params.options.payoff_check == "ignore" or math.isinf(params.epsilon) or n_rows < 2 or n_features is None:
            return
        payoff = search_payoff(n_rows, n_features, epsilon=params.epsilon,
                               trial_epsilon=selection.trial_epsilon,
                               validation_fraction=params.options.validation_fraction)
        if payoff.can_pay:
            return
        if params.options.payoff_check == "raise":
            raise ValueError(f"payoff_check='raise': {payoff.message()} Nothing was charged.")
        warnings.warn(payoff.message(), SearchPayoffWarning, stacklevel=find_stack_level())

    def _check_trials(self, candidates: list[dict], outer_epsilons: list[float], X: Any, y: Any, sensitive: Any) -> None:
        """Every candidate's dry run on all rows, as a trial would run it: nothing is drawn or charged.

        Each candidate, with the parameters a trial gives it (its epsilon share, every budget ``None``; the
        process-wide ledger suspended), runs :meth:`~dpfair.base.PrivateEstimator.check_release`: its own checks
        of the parameters and the rows, and the dry run of a private base model it fits itself (``prefit=False``).
        A non-private model it would fit itself has no dry run: it is fitted once on the rows and thrown away
        (:func:`dpfair._wrapped_fit.rehearse_wrapped_fit`), since only its fit runs its checks.  A refusal is
        re-raised naming the candidate, before the search charges its budget.  An estimator that is not a
        release of :mod:`dpfair.base` (no ``check_release``) is not checked here.
        """
        for params, outer_epsilon in zip(candidates, outer_epsilons, strict=True):
            try:
                trial = self._neutralised(self._candidate_estimator(params), outer_epsilon, None)
            except ValueError as exc:
                raise ValueError(f"param_grid candidate {params}: {exc}") from None
            if not callable(getattr(trial, "check_release", None)):
                continue
            keywords = {"sensitive_features": sensitive} if takes_sensitive_features(trial.fit, sensitive) else {}
            try:
                with warnings.catch_warnings(), suspend_default_budget():
                    warnings.simplefilter("ignore")
                    trial.check_release(X, y, **keywords)
                    rehearse_wrapped_fit(trial, X, y)
            except (ValueError, TypeError, PrivacyBudgetExceededError) as exc:
                hint = _FROZEN_HINT if isinstance(exc, NotFittedError) else ""
                raise type(exc)(f"param_grid candidate {params}: {exc}{hint}") from None

    @property
    def _privacy_label(self) -> str:  # type: ignore[override]
        """The label of the one budget charge."""
        return f"{type(self).__name__}.fit (trials, scores, random-K selection)"

    def _privacy_cost(self, params: PrivacyParameters) -> tuple[float, float]:
        """The whole search: ``(epsilon, delta)`` (``delta = 0`` with ``epsilon = inf``)."""
        return params.epsilon, 0.0 if math.isinf(params.epsilon) else params.delta

    def _dpfair_fit_charges(self) -> list[tuple[Any, float, float]]:
        """``[(budget, epsilon, delta)]``: one charge for the whole search (its trials, nested parts included, charge nothing).

        Validates the search's parameters and every candidate's per-trial cost first (no data, nothing
        charged), so that :func:`~dpfair.model_selection.search_cost` refuses what ``fit`` would refuse.
        """
        params = self._validate_every_parameter()
        self._selection(params)
        return [(params.budget, *self._privacy_cost(params))]

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
        return self._set_fitted(self._release(X, y, sensitive_features=sensitive_features))

    # ------------------------------------------------------------------ step 1: validation, nothing charged
    def _validate_params(self) -> _SearchOptions:
        if not isinstance(self.scoring, _PrivateScorer):
            raise TypeError(
                "scoring must be a dpfair private scorer (PrivateMSEScorer, PrivateKSScorer, PrivateMSEKSScorer, "
                "PrivateAccuracyScorer or PrivateEqualizedOddsScorer), "
                f"got {type(self.scoring).__name__}: an exact score of the validation rows is not private."
            )
        if not hasattr(self.estimator, "get_params") or "epsilon" not in self.estimator.get_params(deep=False):
            raise TypeError("estimator must be a dpfair estimator with an epsilon parameter.")
        candidates = list(ParameterGrid(self.param_grid))
        if not candidates:
            raise ValueError("param_grid must hold at least one candidate.")
        private_prefixes = [prefix for prefix, _ in _private_parts(self.estimator)]
        set_by_search = {"epsilon"} | {prefix + key for prefix in private_prefixes for key in ("budget", "random_state")}
        for params in candidates:
            hit = sorted(name for name in params if name in set_by_search or name.endswith("__budget"))
            if hit:
                raise ValueError(
                    f"param_grid sets {hit[0]!r}, which the search sets itself (each trial gets its epsilon from the "
                    "search's epsilon, no budget anywhere inside it, and noise from the search's random_state); "
                    "remove it."
                )
        frac = self.validation_fraction
        if isinstance(frac, bool) or not isinstance(frac, numbers.Real) or not 0 < frac < 1:
            raise ValueError(f"validation_fraction must be a number in (0, 1), got {frac!r}.")
        if self.payoff_check not in ("warn", "raise", "ignore"):
            raise ValueError(f"payoff_check must be 'warn', 'raise' or 'ignore', got {self.payoff_check!r}.")
        return _SearchOptions(candidates=candidates, validation_fraction=frac, payoff_check=self.payoff_check)

    def _selection(self, params: PrivacyParameters) -> _Selection:
        """The random-stopping plan: ``trial_epsilon`` and the law of ``K`` (every candidate once with ``inf``)."""
        candidates = params.options.candidates
        if math.isinf(params.epsilon):
            return _Selection(trial_epsilon=math.inf, outer_epsilons=[math.inf] * len(candidates))
        n_trials, mean_trials, delta, eta = check_selection(self.n_trials, self.mean_trials, params.delta, self.eta)
        trial_epsilon = trial_epsilon_for(params.epsilon, n_trials=n_trials, mean_trials=mean_trials, delta=delta,
                                          eta=eta)
        selection = _Selection(trial_epsilon=trial_epsilon, outer_epsilons=[], n_trials=n_trials,
                               mean_trials=mean_trials, eta=eta)
        return replace(selection, outer_epsilons=self._outer_epsilons(candidates, selection))

    def _validate_data(self, params: PrivacyParameters, X: Any, y: Any = None, *,
                       sensitive_features: Any = None) -> _SearchData:
        selection = self._selection(params)
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
        y_arr = np.asarray(y.to_numpy() if hasattr(y, "to_numpy") else y)
        classifier = is_classifier(self.estimator)  # class labels of any type (strings too); else real numbers
        if y_arr.dtype == object and not classifier:
            try:
                y_arr = y_arr.astype(np.float64)
            except (TypeError, ValueError):
                raise TypeError("y must hold real numbers (Unknown label type for a regression search); "
                                "convert the labels to floats, or search a classifier.") from None
        if y_arr.dtype.kind == "c" or (sparse.issparse(X) is False and np.iscomplexobj(X)):
            raise ValueError("Complex data not supported: X and y must hold real numbers.")
        if classifier:
            y_arr = class_labels(y_arr)  # no missing label (a message that names y, before any candidate is checked)
        if y_arr.dtype.kind in "USO" and not classifier:
            raise TypeError(f"y must hold real numbers, got dtype {y_arr.dtype}; convert the labels to floats "
                            "(string labels need a classifier).")
        if y_arr.ndim == 0 or y_arr.ndim > 2 or (y_arr.ndim == 2 and y_arr.shape[1] != 1):
            raise ValueError(f"y must be a 1-d array of labels (one per row), got shape {y_arr.shape}.")
        if y_arr.shape[0] != n:
            raise ValueError(f"X and y have inconsistent numbers of samples: {n} and {y_arr.shape[0]}.")
        frac = params.options.validation_fraction
        n_val = round(frac * n)
        if n_val < 1 or n - n_val < 1:
            raise ValueError(
                f"validation_fraction={frac!r} leaves no training or no validation row with n_samples = {n}; use more rows."
            )
        sensitive = None if sensitive_features is None else as_sensitive_features(sensitive_features, n)
        # every trial's parameters and the scorer are checked on every row (the split is drawn after the
        # charge): each row is fitted by the trials or predicted and scored on the validation side
        self._check_trials(params.options.candidates, selection.outer_epsilons, X, y_arr, sensitive)
        try:
            self.scoring.check(X, y_arr, sensitive)
        except (ValueError, TypeError) as exc:
            raise type(exc)(f"scoring={type(self.scoring).__name__}: {exc}") from None
        self._check_payoff(params, selection, n, X)
        # the one charge, replayed on a copy: a refusal says that nothing was charged
        check_budgets_cover(
            [(params.budget, *self._privacy_cost(params), "budget", self._charge_relation(params))],
            fix="the search charges its epsilon and delta once, whatever the number of trials: give it a budget with "
                "that much left, or lower the search's epsilon",
        )
        return _SearchData(n_rows=n, sensitive_features=sensitive, X=X, y=y_arr, n_validation=n_val,
                           selection=selection)

    def _warn_non_private(self, params: PrivacyParameters) -> None:
        warn_privacy_leak(
            "epsilon=inf: every candidate is fitted and scored exactly on the data; the selection carries no "
            "privacy guarantee (a non-private baseline).",
        )

    # ------------------------------------------------------------------ steps 3, 5, 6: trials after the one charge
    def _compute_statistics(self, params: PrivacyParameters, data: _SearchData) -> None:
        """A search computes no exact statistic: every released number comes from a private trial (:meth:`_run`)."""
        return None

    def _run(self, params: PrivacyParameters, data: _SearchData, statistics: None,
             noise: NoiseSource) -> list[tuple[float, dict, Any]]:
        """The split, ``K``, the candidates and the trials: ``[(noisy score, candidate, fitted model)]`` in order.

        An iterative mechanism: every trial's fit and score draws from ``noise`` in turn.
        """
        candidates = params.options.candidates
        selection = data.selection
        trial_epsilon = selection.trial_epsilon
        n, n_val = data.n_rows, data.n_validation
        # public randomness: the split, K and the candidates do not depend on the data
        order = np.argsort(noise.uniform(n), kind="stable")
        val, train = np.sort(order[:n_val]), np.sort(order[n_val:])
        X_train, X_val = _safe_indexing(data.X, train), _safe_indexing(data.X, val)
        y_train, y_val = data.y[train], data.y[val]
        sensitive = data.sensitive_features
        s_train, s_val = (None, None) if sensitive is None else (sensitive[train], sensitive[val])
        if math.isinf(params.epsilon):
            plan = list(range(len(candidates)))
        else:
            k = draw_n_trials(noise, selection.n_trials, selection.mean_trials, selection.eta)
            plan = [min(int(noise.uniform(1)[0] * len(candidates)), len(candidates) - 1) for _ in range(k)]
        trials = []
        for index in plan:
            candidate = candidates[index]
            est = self._trial_estimator(candidate, selection.outer_epsilons[index], noise)
            with warnings.catch_warnings(), suspend_default_budget():  # the search is charged as a whole
                if math.isinf(params.epsilon):  # already warned once for the whole search
                    warnings.simplefilter("ignore", PrivacyLeakWarning)
                _fit(est, X_train, y_train, s_train)
                score = float(self.scoring(est, X_val, y_val, s_val, epsilon=trial_epsilon, noise=noise))
            trials.append((score, dict(candidate), est))
        return trials

    def _solve(self, params: PrivacyParameters, noisy: list[tuple[float, dict, Any]],
               data: _SearchData) -> dict[str, Any]:
        """The choice: the first trial with the best noisy score (post-processing of the released scores)."""
        best: tuple[float, dict, Any] | None = None
        for trial in noisy:
            if best is None or trial[0] > best[0]:
                best = trial
        score, candidate, model = (None, None, None) if best is None else best  # Poisson K = 0: no output
        if model is not None:
            # the released model is one output of the whole search: its guarantee is the search's, not its trial's
            model.privacy_spent_ = self._search_privacy_spent(params, selected=True)
        results = {"best_score_": score, "best_params_": candidate, "best_estimator_": model,
                   "trial_epsilon_": data.selection.trial_epsilon}
        for name in ("n_features_in_", "feature_names_in_"):  # as scikit-learn's searches expose them
            if hasattr(model, name):
                results[name] = getattr(model, name)
        return results

    def _search_privacy_spent(self, params: PrivacyParameters, *, selected: bool = False) -> dict[str, Any]:
        """The whole search's guarantee; with ``selected``, as the selected model states it."""
        epsilon, delta = self._privacy_cost(params)
        protects = (
            "every row of (X, y, sensitive_features): training rows through the trial fits (nested private parts "
            f"included), validation rows (labels included) through the private scores ({self.scoring.protects})"
        )
        if math.isinf(epsilon):
            protects = "nothing: epsilon=inf fits and scores every candidate exactly"
        if selected:
            protects = (
                f"selected by {type(self).__name__}, whose one charge this is (every trial fit, score and the "
                f"random-K selection; this model's own fit used trial_epsilon_ of it): {protects}"
            )
        relation = self._charge_relation(params)
        neighbouring = self._privacy_neighbouring if relation == REPLACE else (
            f"{describe(relation)} (the weakest relation among the search's private parts)")
        return privacy_spent(epsilon, delta, protects=protects, neighbouring=neighbouring, relation=relation)

    def _charge_relation(self, params: PrivacyParameters) -> str:
        """The weakest relation among the private parts a trial runs (the estimator, its nested parts, the scorer).

        A trial is only as private as its least protective part: a search over a change-one-attribute
        post-processor protects a change of one row's attribute, not the replacement of a row.
        """
        parts = [self.estimator, self.scoring, *self.estimator.get_params(deep=True).values()]
        relations = []
        for part in parts:
            declared = getattr(part, "_declared_relation", None)
            if callable(declared) and not isinstance(part, type):
                relations.append(declared())
            elif isinstance(getattr(part, "_privacy_relation", None), str):
                relations.append(part._privacy_relation)
        return weakest_relation(REPLACE, *relations)

    def _privacy_spent(self, params: PrivacyParameters, results: dict[str, Any]) -> dict[str, Any]:
        return self._search_privacy_spent(params)

    def __sklearn_tags__(self):  # scikit-learn's tags: y required; type and sparse input as the wrapped estimator
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        try:
            inner = get_tags(self.estimator)
        except Exception:  # not a scikit-learn estimator: keep the defaults
            return tags
        tags.input_tags.sparse = inner.input_tags.sparse
        if inner.estimator_type == "classifier":  # a search over a classifier is a classifier (is_classifier, cv)
            tags.estimator_type, tags.classifier_tags, tags.regressor_tags = "classifier", inner.classifier_tags, None
        return tags

    @property
    def _score_metric(self) -> str:  # type: ignore[override]
        """``score`` is accuracy over a classifier, R^2 over a regressor (:class:`dpfair._wrapped_fit.SensitiveScoreMixin`)."""
        return "accuracy" if is_classifier(self.estimator) else "r2"

    @property
    def classes_(self) -> np.ndarray:
        """The selected classifier's ``classes_`` (``AttributeError`` before ``fit`` or over a regressor)."""
        model = getattr(self, "best_estimator_", None)
        if model is None or not hasattr(model, "classes_"):
            raise AttributeError("classes_: the search selected no classifier (fit a search over a classifier first).")
        return model.classes_

    def score(self, X: Any, y: Any, sample_weight: Any = None, *, sensitive_features: Any = None) -> float:
        """Accuracy (a classifier) or R^2 (a regressor) of :meth:`predict` on ``(X, y)``: held-out evaluation.

        An exact score of the rows given, as scikit-learn's: use it on held-out rows whose privacy is not at stake
        (test data), never on the search's training rows to report a private result.  The private choice between
        candidates is ``scoring``'s noisy score, released as ``best_score_``.

        Parameters
        ----------
        X : array-like
            As in :meth:`predict`.
        y : array-like of shape (n_samples,)
            True labels (any class labels for a classifier) or targets (finite numbers for a regressor).
        sample_weight : array-like of shape (n_samples,) or None, default None
            Sample weights.
        sensitive_features : array-like of shape (n_samples,) or None, default None
            Group of every row, passed to the selected model when its ``predict`` takes it; routed by
            ``set_score_request(sensitive_features=True)``.

        Returns
        -------
        float
            The score of the (possibly randomized) predictions.

        Raises
        ------
        NotFittedError
            Before ``fit``, or when a Poisson ``K`` was 0.
        ValueError, TypeError
            On invalid input (the message names the argument).
        """
        return SensitiveScoreMixin.score(self, X, y, sample_weight, sensitive_features=sensitive_features)

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
        predict = self.best_estimator_.predict
        if takes_sensitive_features(predict, sensitive_features):
            return predict(X, sensitive_features=sensitive_features, **kwargs)
        return predict(X, **kwargs)  # a model that takes no groups (DPLogisticRegression) predicts without them
