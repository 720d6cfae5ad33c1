"""What a scikit-learn search over dpfair estimators will spend, said before its first fit.

Every fit inside ``GridSearchCV``, ``RandomizedSearchCV`` or ``cross_validate`` is a separate private
release, and a shared ``budget`` is charged for each: ``n_splits x n_candidates`` fits, plus the
final refit.  :func:`search_cost` adds those charges up from the estimators' parameters alone (no
data is read, nothing is fitted); :func:`check_search_budget` refuses, before anything is spent, a
search that its budget cannot pay for; :func:`fit_search` does both around scikit-learn's own
``search.fit`` and turns a budget that runs out inside the search into one clear error.

Parallel fits (``n_jobs`` other than 1, or a joblib / Dask backend that runs more than one job) are
refused by :func:`check_search_budget` before anything is fitted or charged: a worker process holds a
pickled copy of the budget, and its charges would never reach the caller's.  Run such searches with
``n_jobs=1``, or use :class:`~dpfair.model_selection.PrivateRandomSearch` (one charge for the whole search).

Why a function and not a subclass of ``GridSearchCV``: the search stays scikit-learn's own object
(its ``cv_results_``, ``best_estimator_``, ``refit`` and metadata routing unchanged), and the check
is one line before ``search.fit``.  A dpfair estimator cannot do the check itself: inside a search
it is a fresh clone that does not know how many fits follow.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import joblib
import numpy as np
from sklearn.base import clone, is_classifier
from sklearn.model_selection import GridSearchCV, ParameterGrid, ParameterSampler, RandomizedSearchCV, check_cv
from sklearn.utils.validation import _num_samples

from dpfair._estimator import fit_charges
from dpfair._validation import check_int
from dpfair.model_selection._search import PrivateRandomSearch
from dpfair.privacy import PrivacyBudget, PrivacyBudgetExceededError, default_budget

__all__ = ["SearchCost", "check_search_budget", "fit_search", "search_cost"]


@dataclass(frozen=True)
class SearchCost:
    """The privacy a search (or a cross-validation) will spend, computed before any fit.

    Parameters
    ----------
    n_fits : int
        Fits the search runs: ``n_splits * n_candidates`` plus 1 with ``refit``; for a
        :class:`~dpfair.model_selection.PrivateRandomSearch`, 1 (its one release: the number of its trials
        is random and never released).
    n_splits : int
        Cross-validation folds (1 for a ``PrivateRandomSearch``: its one training/validation split).
    n_candidates : int
        Parameter candidates (1 for ``cross_validate``).
    refit : bool
        Whether the best candidate is refitted on all rows (its cost counted at the dearest candidate).
    epsilon, delta : float
        Total spent by every fit (basic composition), whichever budget is charged.
    charges : tuple of (PrivacyBudget or None, float, float)
        Every charge, in order, with the budget it goes to (``None``: an estimator given no budget
        and no :func:`dpfair.privacy.default_budget`, so nothing is charged).
    one_charge : bool, default False
        ``True`` for a ``PrivateRandomSearch``: one charge covers every trial, nested parts and scores.
    """

    n_fits: int
    n_splits: int
    n_candidates: int
    refit: bool
    epsilon: float
    delta: float
    charges: tuple[tuple[PrivacyBudget | None, float, float], ...]
    one_charge: bool = False

    def needed(self, budget: PrivacyBudget) -> tuple[float, float]:
        """``(epsilon, delta)`` charged to ``budget`` (basic composition of its charges).

        Parameters
        ----------
        budget : PrivacyBudget
            One of the budgets the search charges.

        Returns
        -------
        epsilon : float
            Sum of the epsilons charged to ``budget``.
        delta : float
            Sum of the deltas charged to ``budget`` (at most 1).
        """
        mine = [(e, d) for b, e, d in self.charges if b is budget]
        return float(sum(e for e, _ in mine)), float(min(1.0, sum(d for _, d in mine)))

    def __str__(self) -> str:
        if self.one_charge:
            return (f"PrivateRandomSearch over {self.n_candidates} candidate(s): 1 charge for all its trials (their number "
                    f"is not released) spending epsilon={self.epsilon:.6g}, delta={self.delta:.3g}")
        fits = f"{self.n_splits} folds x {self.n_candidates} candidate(s)" + (" + 1 refit" if self.refit else "")
        return f"{fits} = {self.n_fits} private fits spending epsilon={self.epsilon:.6g}, delta={self.delta:.3g}"


def _candidates(search: Any) -> tuple[list[dict], bool]:
    """``(candidates, exact)`` of a GridSearchCV or RandomizedSearchCV."""
    if isinstance(search, GridSearchCV):
        return list(ParameterGrid(search.param_grid)), True
    sampler = ParameterSampler(search.param_distributions, search.n_iter, random_state=search.random_state)
    exact = isinstance(search.random_state, int | np.integer)
    return list(sampler), exact


def _per_fit(estimator: Any, params: dict) -> list[tuple[PrivacyBudget | None, float, float]]:
    candidate = clone(estimator).set_params(**params) if params else estimator
    resolved = default_budget()
    return [(b if b is not None else resolved, e, d) for b, e, d in fit_charges(candidate)]


def search_cost(search: Any, n_samples: int, *, cv: Any = None) -> SearchCost:
    """What ``search.fit`` (or ``cross_validate``) over dpfair estimators will charge, before any fit.

    Parameters
    ----------
    search : GridSearchCV, RandomizedSearchCV, PrivateRandomSearch or estimator
        A scikit-learn search whose ``estimator`` holds dpfair estimators (directly, in a
        ``Pipeline``, or wrapped by a dpfair post-processor with ``prefit=False``: their charges are
        included), a :class:`~dpfair.model_selection.PrivateRandomSearch` (its one charge, after its
        per-trial costs are checked; with ``cv``, the cost of cross-validating it), or an estimator: then
        the cost of ``cross_validate(estimator, X, cv=cv)``.
    n_samples : int
        Rows of the ``X`` the search will be fitted on (splitters such as ``LeaveOneOut`` need it;
        it is public).
    cv : int, splitter or None, default None
        Only for an estimator (``cross_validate``'s ``cv``; ``None`` is 5 folds, except for a
        ``PrivateRandomSearch``, whose own fit it then costs); a search uses its own.

    Returns
    -------
    SearchCost
        The number of fits, every charge and its budget, and the totals.  For a
        ``RandomizedSearchCV`` without an integer ``random_state`` whose candidates differ in cost, the
        cost of the dearest sampled candidate is counted for every draw (an upper bound).

    Raises
    ------
    TypeError
        For a successive-halving search (how many fits it runs depends on the scores), or a
        scikit-learn meta-estimator (other than ``Pipeline``) around a private estimator.
    ValueError
        For an invalid ``n_samples`` or ``cv``, or an invalid privacy parameter in the grid.

    Examples
    --------
    >>> from sklearn.model_selection import GridSearchCV
    >>> from dpfair.linear_model import DPLinearRegression
    >>> from dpfair.privacy import PrivacyBudget
    >>> est = DPLinearRegression(epsilon=0.5, data_norm=1.0, target_bound=1.0, budget=PrivacyBudget(10.0))
    >>> print(search_cost(GridSearchCV(est, {"alpha": [0.1, 1.0, 10.0]}, cv=3), n_samples=1000))
    3 folds x 3 candidate(s) + 1 refit = 10 private fits spending epsilon=5, delta=0
    """
    n_samples = check_int(n_samples, "n_samples", minimum=1)
    if type(search).__name__ in ("HalvingGridSearchCV", "HalvingRandomSearchCV"):
        raise TypeError(
            f"{type(search).__name__} decides how many candidates to fit from their scores, so its cost is not known "
            "before it runs; use GridSearchCV (or dpfair.model_selection.PrivateRandomSearch, one charge in all)."
        )
    if isinstance(search, PrivateRandomSearch) and cv is None:
        # one charge for the whole search; _dpfair_fit_charges checks every candidate's trial cost (no data)
        charges = tuple(_per_fit(search, {}))
        return SearchCost(
            n_fits=1, n_splits=1, n_candidates=len(ParameterGrid(search.param_grid)), refit=False,
            epsilon=float(sum(e for _, e, _ in charges)), delta=float(min(1.0, sum(d for _, _, d in charges))),
            charges=charges, one_charge=True,
        )
    is_search = isinstance(search, GridSearchCV | RandomizedSearchCV)
    if is_search and cv is not None:
        raise ValueError("cv is only for an estimator (cross_validate); a search uses its own cv: set search.cv instead.")
    estimator = search.estimator if is_search else search
    splitter = check_cv(search.cv if is_search else cv, np.zeros(n_samples), classifier=is_classifier(estimator))
    try:
        n_splits = int(splitter.get_n_splits(np.zeros((n_samples, 1)), np.zeros(n_samples)))
    except (TypeError, ValueError) as exc:
        raise ValueError(
            f"cv: the number of folds of {type(splitter).__name__} is unknown without the fit's groups ({exc}); "
            "use a splitter whose n_splits is fixed (KFold, StratifiedKFold, ShuffleSplit)."
        ) from None
    if is_search:
        candidates, exact = _candidates(search)
        refit = bool(search.refit)
    else:
        candidates, exact, refit = [{}], True, False
    per_candidate = [_per_fit(estimator, params) for params in candidates]
    if not exact and len({repr([(id(b), e, d) for b, e, d in c]) for c in per_candidate}) > 1:
        dearest = max(per_candidate, key=lambda c: sum(e for _, e, _ in c))
        per_candidate = [dearest] * len(per_candidate)
    charges: list[tuple[PrivacyBudget | None, float, float]] = []
    for _ in range(n_splits):
        for c in per_candidate:
            charges += c
    if refit and per_candidate:
        charges += max(per_candidate, key=lambda c: (sum(e for _, e, _ in c), sum(d for _, _, d in c)))
    epsilon = float(sum(e for _, e, _ in charges))
    delta = float(min(1.0, sum(d for _, _, d in charges)))
    return SearchCost(
        n_fits=n_splits * len(candidates) + int(refit), n_splits=n_splits, n_candidates=len(candidates), refit=refit,
        epsilon=epsilon, delta=delta, charges=tuple(charges),
    )


def _describe(search: Any) -> str:
    searches = GridSearchCV | RandomizedSearchCV | PrivateRandomSearch
    return type(search).__name__ if isinstance(search, searches) else "cross_validate"


def _parallel_jobs(search: Any, n_jobs: Any) -> int:
    """How many jobs joblib would run at once for ``search`` (its ``n_jobs``, or ``cross_validate``'s)."""
    if isinstance(search, GridSearchCV | RandomizedSearchCV):
        n_jobs = search.n_jobs
    try:
        return int(joblib.effective_n_jobs(n_jobs))  # None: the active parallel_config / backend decides
    except (TypeError, ValueError):
        raise ValueError(f"n_jobs must be an int or None, got {n_jobs!r}.") from None


def check_search_budget(search: Any, n_samples: int, *, cv: Any = None, n_jobs: Any = None) -> SearchCost:
    """Refuse, before its first fit, a search that its budget(s) cannot pay for, or that would fit in parallel.

    Replays every charge of :func:`search_cost` on a copy of each budget (zCDP and earlier charges
    included), so nothing is spent by the check.  Call it just before ``search.fit`` (or use
    :func:`fit_search`, which does).

    A search that charges a budget is refused when it would run more than one job at once
    (``n_jobs`` other than 1, or ``n_jobs=None`` inside a joblib ``parallel_config`` / Dask backend that
    runs several): each worker process fits with a pickled copy of the budget, whose charges the
    caller's budget never sees (a copy refuses them; before that check they were silently lost).

    Parameters
    ----------
    search : GridSearchCV, RandomizedSearchCV or estimator
        As for :func:`search_cost`.
    n_samples : int
        Rows of the ``X`` the search will be fitted on.
    cv : int, splitter or None, default None
        As for :func:`search_cost`.
    n_jobs : int or None, default None
        Only for an estimator: the ``n_jobs`` its ``cross_validate`` will run with (a search uses its own).

    Returns
    -------
    SearchCost
        The cost, when every budget can pay for it.

    Raises
    ------
    PrivacyBudgetExceededError
        If a budget cannot pay for the whole search (refit included); the message gives the number of
        fits, what the search needs from that budget and what the budget has left.  Nothing is charged.
    ValueError
        If the search charges a budget and would run its fits in parallel (message names the fix:
        ``n_jobs=1``); nothing is fitted or charged.  Also as for :func:`search_cost`.
    TypeError
        As for :func:`search_cost`.
    """
    cost = search_cost(search, n_samples, cv=cv)
    jobs = _parallel_jobs(search, n_jobs)
    if jobs != 1 and any(budget is not None for budget, _, _ in cost.charges):
        setting = f"n_jobs={search.n_jobs!r}" if isinstance(search, GridSearchCV | RandomizedSearchCV) else f"n_jobs={n_jobs!r}"
        raise ValueError(
            f"{_describe(search)} with {setting} would run {jobs} fits at once in worker processes, and each worker "
            "charges a pickled copy of the privacy budget that the caller's budget never sees; nothing was fitted or "
            "charged. Run it with n_jobs=1 (every fit is then charged here), or search with "
            "dpfair.model_selection.PrivateRandomSearch (one charge for the whole search)."
        )
    planned: dict[int, tuple[PrivacyBudget, list[tuple[float, float]]]] = {}
    for budget, epsilon, delta in cost.charges:
        if budget is not None:
            planned.setdefault(id(budget), (budget, []))[1].append((epsilon, delta))
    for budget, pays in planned.values():  # the one trial: PrivacyBudget's own rules, nothing charged
        try:
            budget.check_can_pay(pays, label="search")
        except PrivacyBudgetExceededError:
            needed = cost.needed(budget)
            left = budget.remaining()
            raise PrivacyBudgetExceededError(
                f"{_describe(search)} would run {cost} and charge (epsilon={needed[0]:.6g}, delta={needed[1]:.3g}) "
                f"to a budget with (epsilon={left[0]:.6g}, delta={left[1]:.3g}) left of (epsilon={budget.epsilon:.6g}, "
                f"delta={budget.delta:.3g}); nothing was fitted or charged. Shrink the grid or the folds, lower each "
                "fit's epsilon, use a larger budget, or search with dpfair.model_selection.PrivateRandomSearch (one "
                "charge for the whole search)."
            ) from None
    return cost


def _budget_error_inside(exc: BaseException) -> bool:
    if isinstance(exc, PrivacyBudgetExceededError):
        return True
    return isinstance(exc, ValueError) and "PrivacyBudgetExceededError" in str(exc)


def fit_search(search: Any, X: Any, y: Any = None, **fit_params: Any) -> Any:
    """``search.fit(X, y, **fit_params)``, refused before its first fit if its budget cannot pay for it.

    A thin wrapper around scikit-learn's own ``fit``: :func:`check_search_budget` first (a too-small
    budget is never left spent with no model), then the fit.  If a budget still runs out inside (an
    estimator dpfair cannot cost, or another charge to the same budget meanwhile), scikit-learn's
    "All the N fits failed" (with the budget error buried in it) or the refused refit becomes one
    :class:`~dpfair.privacy.PrivacyBudgetExceededError` that names what was spent and what the search
    needed.

    Parameters
    ----------
    search : GridSearchCV or RandomizedSearchCV
        The search (scikit-learn's own).
    X : array-like
        Features.
    y : array-like or None, default None
        Targets.
    **fit_params
        Passed to ``search.fit`` (e.g. ``sensitive_features=...`` with metadata routing enabled).

    Returns
    -------
    search
        The fitted search.

    Raises
    ------
    PrivacyBudgetExceededError
        Before any fit, if a budget cannot pay for the search; or when a budget ran out inside it.
    """
    cost = check_search_budget(search, _num_samples(X))
    budgets = {id(b): b for b, _, _ in cost.charges if b is not None}
    try:
        return search.fit(X, y, **fit_params)
    except Exception as exc:
        if not _budget_error_inside(exc):
            raise
        spent = "; ".join(
            f"budget (epsilon={b.epsilon:.6g}, delta={b.delta:.3g}) has spent (epsilon={b.spent()[0]:.6g}, "
            f"delta={b.spent()[1]:.3g}) and the search needed (epsilon={cost.needed(b)[0]:.6g}, "
            f"delta={cost.needed(b)[1]:.3g})"
            for b in budgets.values()
        ) or "the estimators' budgets were charged by something this check could not cost"
        raise PrivacyBudgetExceededError(
            f"the privacy budget ran out inside {_describe(search)}.fit ({cost}): {spent}. Something else charged the "
            "same budget, or an estimator in the search charges more than dpfair could tell; give the search a budget "
            "of its own."
        ) from exc
