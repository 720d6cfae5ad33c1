"""ExponentialSelector: choose m of n applicants with the exponential mechanism.

Privacy: each applicant's score is their data; two score vectors are neighbours when one
applicant's score changes (inside the declared ``score_bounds``).  The selection is
``epsilon``-DP for that relation (Khalili et al. 2021, Section 2.2 and eq. 6).  Scores outside
the declared bounds are refused: clipping them silently would change what is protected.
"""

from __future__ import annotations

import itertools
import math
import warnings
from dataclasses import dataclass, fields
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from scipy.special import gammaln, logsumexp
from sklearn.base import BaseEstimator

from dpfair._estimator import warn_non_private
from dpfair._validation import as_finite_array, check_bounds, check_epsilon, check_int
from dpfair.base import PrivacyParameters, PrivateEstimator, ValidatedData, ValidatedOptions
from dpfair.privacy.budget import PrivacyBudget
from dpfair.privacy.leaks import PrivacyLeakWarning, warn_privacy_leak
from dpfair.privacy.mechanisms import TopMExponentialMechanism, exponential_mechanism
from dpfair.privacy.noise import NoiseSource

__all__ = ["MAX_ENUMERATION", "ExponentialSelector"]

_UTILITIES = ("mean", "rms", "min", "max")
#: Largest number of subsets ``C(n, m)`` that ``utility="rms"`` enumerates.
MAX_ENUMERATION = 1_000_000
_PROTECTS = "each applicant's score"
_NEIGHBOURING = "replace one applicant's score within score_bounds"


@dataclass(frozen=True, eq=False)
class _Options(ValidatedOptions):
    """What ``_validate_params`` returns: the selection's hyper-parameters, validated."""

    n_select: int
    lo: float
    hi: float
    utility: str


@dataclass(frozen=True)
class _Config:
    """The validated hyper-parameters of one call: ``epsilon`` and the :class:`_Options`."""

    epsilon: float
    n_select: int
    lo: float
    hi: float
    utility: str

    @property
    def sensitivity(self) -> float:
        lo, hi, m = self.lo, self.hi, self.n_select
        if self.utility == "mean":
            return (hi - lo) / m
        if self.utility == "rms":
            return math.sqrt(((m - 1) * lo**2 + hi**2) / m) - lo
        return hi - lo


@dataclass(frozen=True, eq=False, kw_only=True)
class _Scores(ValidatedData):
    """Step 1's data: the validated scores of one selection and how they came (one column of ``fit``'s ``X``)."""

    cfg: _Config
    scores: np.ndarray
    column: bool
    feature_names: np.ndarray | None


class ExponentialSelector(PrivateEstimator, BaseEstimator):
    """Select ``n_select`` applicants with the exponential mechanism.

    ``P(G) ~ exp(epsilon * v(G) / (2 * Delta))`` over subsets ``G`` of size m, where ``v`` is
    the subset utility and ``Delta`` its sensitivity:

    * ``"mean"`` (eq. 6): ``v = mean score``, ``Delta = (hi - lo) / m``.  Exact O(n*m)
      sampler and inclusion probabilities (:class:`~dpfair.privacy.TopMExponentialMechanism`).
    * ``"max"`` / ``"min"`` (eq. 16): ``v`` = the largest / smallest selected score,
      ``Delta = hi - lo``.  A subset's utility is one order statistic, so subsets are counted
      by it: exact O(n log n) sampling and inclusion probabilities.
    * ``"rms"`` (eq. 16): ``v = sqrt(mean of squared scores)`` (needs ``lo >= 0``),
      ``Delta = sqrt(((m-1) lo^2 + hi^2) / m) - lo``.  Enumerates subsets, so only when
      ``C(n, m) <= 1,000,000``.

    ``epsilon = inf`` selects uniformly among the subsets of maximal utility (for ``"mean"``:
    the top m with ties broken uniformly, the paper's algorithms A and B); it carries no privacy
    guarantee and raises :class:`~dpfair.privacy.PrivacyLeakWarning`.

    The constructor only stores its arguments (scikit-learn convention); they are validated by
    :meth:`select`, :meth:`fit` and :meth:`selection_probabilities`.  :meth:`select` and :meth:`fit` are
    one release of :class:`dpfair.base.PrivateEstimator`'s template: every argument and the scores are
    validated, the budget is charged once, then the selection is drawn.

    Parameters
    ----------
    epsilon : float
        Privacy parameter (> 0, or ``inf`` for no privacy).
    n_select : int, default=1
        Number of applicants to select, m.
    score_bounds : (float, float), default=(0.0, 1.0)
        Declared, finite range of every score; scores outside it raise ``ValueError`` (they are
        never clipped).
    utility : {"mean", "rms", "min", "max"}, default="mean"
        Subset utility (see above).
    budget : PrivacyBudget, optional
        Charged ``epsilon`` by every :meth:`fit` and :meth:`select` (after all arguments are
        validated, just before the draw).  ``select(..., budget=...)`` overrides it for one call.
    random_state : None, int, numpy.random.Generator or NoiseSource, default=None
        ``None`` draws secure randomness (OS CSPRNG / OpenDP).  A seed gives reproducible, *not
        hardened* draws for experiments and tests.  ``select(..., random_state=...)`` overrides it
        for one call.

    Attributes
    ----------
    selected_ : ndarray of int, shape (n_select,)
        Sorted indices selected by the last :meth:`fit`.
    privacy_spent_ : dict
        ``{"epsilon", "delta", "protects", "neighbouring"}`` of the last :meth:`fit`
        (see :func:`dpfair._estimator.privacy_spent`).
    n_features_in_ : int
        Always 1: ``X`` is one column of scores.
    feature_names_in_ : ndarray of str
        The column name, when ``X`` was a pandas DataFrame with a string column name.

    Examples
    --------
    >>> from dpfair.selection import ExponentialSelector
    >>> selector = ExponentialSelector(epsilon=2.0, n_select=2, random_state=0)
    >>> selector.select([0.9, 0.2, 0.7, 0.4]).shape
    (2,)
    """

    _privacy_parameters: ClassVar[dict[str, str]] = {
        "epsilon": "epsilon", "score_bounds": "bounds", "budget": "budget", "random_state": "random_state",
    }
    _results_hold_feature_attributes: ClassVar[bool] = True  # stale feature attributes go (dpfair.base)
    _privacy_protects: ClassVar[str] = _PROTECTS
    _privacy_neighbouring: ClassVar[str] = _NEIGHBOURING

    def __init__(
        self,
        epsilon: float,
        n_select: int = 1,
        score_bounds: tuple[float, float] = (0.0, 1.0),
        utility: str = "mean",
        *,
        budget: PrivacyBudget | None = None,
        random_state: Any = None,
    ) -> None:
        self.epsilon = epsilon
        self.n_select = n_select
        self.score_bounds = score_bounds
        self.utility = utility
        self.budget = budget
        self.random_state = random_state

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.non_deterministic = True  # a private selection is random by design
        tags.target_tags.required = False  # y is ignored
        return tags

    @property
    def _privacy_label(self) -> str:  # type: ignore[override]
        """The label of the budget charge (read only after the parameters are validated)."""
        return f"ExponentialSelector({self.utility}, m={int(self.n_select)})"

    # ------------------------------------------------------------------ validation (step 1 of the template)
    def _validate_params(self) -> _Options:
        n_select = check_int(self.n_select, "n_select", minimum=1)
        # the sensitivity is hi - lo: a range wider than float64 holds is refused by name
        lo, hi = check_bounds(self.score_bounds, "score_bounds", max_width=float(np.finfo(float).max))
        if not isinstance(self.utility, str) or self.utility not in _UTILITIES:
            raise ValueError(f"utility must be one of {_UTILITIES}, got {self.utility!r}.")
        if self.utility == "rms" and lo < 0:
            raise ValueError("utility='rms' needs score_bounds with lo >= 0 (squares are not monotone below 0); "
                             "shift the scores and their bounds, or use utility='mean'.")
        return _Options(n_select=n_select, lo=lo, hi=hi, utility=self.utility)

    def _config(self, params: PrivacyParameters | None = None) -> _Config:
        """The validated configuration of a release (``params``) or, without one, of an analysis."""
        epsilon = check_epsilon(self.epsilon) if params is None else params.epsilon  # (None: an analysis, same checks)
        options = self._validate_params() if params is None else params.options
        return _Config(epsilon, **{f.name: getattr(options, f.name) for f in fields(_Options)})

    def _validate_data(self, params: PrivacyParameters, scores: Any, *, name: str = "scores",
                       column: bool = False) -> _Scores:
        cfg = self._config(params)
        s = self._check_scores(scores, cfg, name, column=column)
        names = None
        if column and isinstance(scores, pd.DataFrame) and all(isinstance(c, str) for c in scores.columns):
            names = np.asarray(scores.columns, dtype=object)
        return _Scores(n_rows=s.size, cfg=cfg, scores=s, column=column, feature_names=names)

    @staticmethod
    def _check_scores(scores: Any, cfg: _Config, name: str = "scores", *, column: bool = False) -> np.ndarray:
        s = as_finite_array(scores, name, ndim=(1, 2) if column else 1, allow_empty=True, mode="strict")
        if s.ndim == 2:
            if s.shape[1] == 0:
                raise ValueError(f"{name} has 0 feature(s) (shape={s.shape}) while a minimum of 1 is required: "
                                 "pass one column of scores.")
            if s.shape[1] != 1:
                raise ValueError(
                    f"{name} must be one column of scores, shape (n,) or (n, 1), got {s.shape[1]} columns; "
                    "select on one score per applicant."
                )
            s = s[:, 0]
        if s.size == 0:
            raise ValueError(f"{name} is empty; pass at least one score.")
        if s.min() < cfg.lo or s.max() > cfg.hi:
            # never print the offending (private) scores: name the declared bound and the fix
            raise ValueError(
                f"{name} must lie inside the declared score_bounds=({cfg.lo:g}, {cfg.hi:g}); some do not. Declare bounds "
                "that every possible score satisfies (public knowledge, not read off the data) instead of clipping: "
                "clipping silently changes what the privacy guarantee protects."
            )
        n, m = s.size, cfg.n_select
        if m > n:
            raise ValueError(f"n_select ({m}) must be <= the number of applicants in {name}; pass more scores or "
                             "a smaller n_select.")
        if cfg.utility == "rms" and math.comb(n, m) > MAX_ENUMERATION:
            raise ValueError(
                f"utility='rms' enumerates subsets and C(n, n_select={m}) exceeds {MAX_ENUMERATION:,}; "
                "use utility='mean' (exact O(n*m)) or fewer applicants."
            )
        return s

    @property
    def sensitivity(self) -> float:
        """Sensitivity ``Delta`` of the subset utility to one applicant's score (validates the parameters)."""
        return self._config().sensitivity

    # ------------------------------------------------------------------ exact computations
    @staticmethod
    def _order_statistic_classes(cfg: _Config, s: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """For "max"/"min": (sorted order, class log-probabilities, free slots) by the deciding position."""
        n, m = s.size, cfg.n_select
        order = np.argsort(-s, kind="stable")  # position p holds the p-th largest score
        pos = np.arange(n)
        # "max": the subset's max is at position p, the other m-1 from positions p+1..n-1;
        # "min": the subset's min is at position p, the other m-1 from positions 0..p-1
        free = n - 1 - pos if cfg.utility == "max" else pos
        feasible = free >= m - 1
        log_count = np.full(n, -np.inf)
        log_count[feasible] = gammaln(free[feasible] + 1) - gammaln(m) - gammaln(free[feasible] - m + 2)
        utilities = s[order]
        best = utilities[feasible].max()
        if math.isinf(cfg.epsilon):
            log_weight = np.where((utilities == best) & feasible, log_count, -np.inf)
        else:
            # shifted by the best utility *before* scaling by epsilon: at huge epsilon the counts of tied
            # classes must not be absorbed by a huge common offset (they were, before: 1e300 gave sums != m)
            log_weight = log_count + cfg.epsilon * ((utilities - best) / (2.0 * cfg.sensitivity))
        return order, log_weight - logsumexp(log_weight), free

    @staticmethod
    def _enumerate_rms(cfg: _Config, s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        subsets = np.array(list(itertools.combinations(range(s.size), cfg.n_select)), dtype=np.int64)
        values = np.sqrt((s[subsets] ** 2).mean(axis=1))
        if math.isinf(cfg.epsilon):
            logits = np.where(values == values.max(), 0.0, -np.inf)
        else:
            logits = cfg.epsilon * ((values - values.max()) / (2.0 * cfg.sensitivity))
        return subsets, np.exp(logits - logsumexp(logits))

    def _probabilities(self, cfg: _Config, s: np.ndarray) -> np.ndarray:
        n, m = s.size, cfg.n_select
        if cfg.utility == "mean":
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", PrivacyLeakWarning)
                mech = TopMExponentialMechanism((s - cfg.lo) / m, m, sensitivity=cfg.sensitivity, epsilon=cfg.epsilon)
                return np.asarray(mech.inclusion_probabilities(), dtype=float)
        if cfg.utility == "rms":
            subsets, probs = self._enumerate_rms(cfg, s)
            out = np.zeros(n)
            np.add.at(out, subsets.ravel(), np.repeat(probs, m))
            return out
        order, log_class, free = self._order_statistic_classes(cfg, s)
        p_class = np.exp(log_class)
        # the deciding item is always in; another item is in with prob (m-1)/free of each class that can pick it
        share = np.where(free > 0, p_class * (m - 1) / np.maximum(free, 1), 0.0)
        if cfg.utility == "max":
            picked = np.concatenate([[0.0], np.cumsum(share)[:-1]])  # classes at earlier positions
        else:
            picked = np.concatenate([np.cumsum(share[::-1])[::-1][1:], [0.0]])  # classes at later positions
        out = np.empty(n)
        out[order] = p_class + picked
        return out

    def _draw(self, cfg: _Config, s: np.ndarray, noise: NoiseSource) -> np.ndarray:
        n, m = s.size, cfg.n_select
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivacyLeakWarning)  # we emit our own single warning
            if cfg.utility == "mean" and m == 1:
                # one applicant: the plain exponential mechanism (Gumbel-max; OpenDP's sampler when secure)
                return np.array([exponential_mechanism(s, sensitivity=cfg.sensitivity, epsilon=cfg.epsilon, noise=noise)])
            if cfg.utility == "mean":
                mech = TopMExponentialMechanism((s - cfg.lo) / m, m, sensitivity=cfg.sensitivity, epsilon=cfg.epsilon)
                return np.sort(np.asarray(mech.sample(noise=noise)))
        if cfg.utility == "rms":
            subsets, probs = self._enumerate_rms(cfg, s)
            k = min(int(np.searchsorted(np.cumsum(probs), noise.uniform(1)[0] * probs.sum(), side="right")), probs.size - 1)
            return np.sort(subsets[k])
        order, log_class, _ = self._order_statistic_classes(cfg, s)
        cdf = np.cumsum(np.exp(log_class))
        u = noise.uniform(m)  # only u[0] is used; m draws keep seeded streams as before
        p = min(int(np.searchsorted(cdf, u[0] * cdf[-1], side="right")), n - 1)
        pool = np.arange(p + 1, n) if cfg.utility == "max" else np.arange(p)
        # m-1 others uniformly from the pool: the first m-1 of a uniform random permutation
        keys = noise.uniform(pool.size)
        others = pool[np.argsort(keys)[: m - 1]]
        return np.sort(order[np.concatenate([[p], others])])

    # ------------------------------------------------------------------ steps 3, 5, 6 of the template
    def _compute_statistics(self, params: PrivacyParameters, data: _Scores) -> tuple[_Config, np.ndarray]:
        return data.cfg, data.scores  # the exponential mechanism's utility is read off the scores themselves

    def _draw_noise(self, params: PrivacyParameters, statistics: tuple[_Config, np.ndarray],
                    noise: NoiseSource) -> np.ndarray:
        cfg, s = statistics
        return self._draw(cfg, s, noise).astype(np.int64)

    def _solve(self, params: PrivacyParameters, noisy: np.ndarray, data: _Scores) -> dict[str, Any]:
        results: dict[str, Any] = {"selected_": noisy}
        if data.column:  # fit: X is one column of scores
            results["n_features_in_"] = 1
            if data.feature_names is not None:
                results["feature_names_in_"] = data.feature_names
        return results

    def _warn_non_private(self, params: PrivacyParameters) -> None:
        warn_non_private(params.epsilon, "the selection")

    # ------------------------------------------------------------------ public API
    def select(self, scores: Any, random_state: Any = None, budget: PrivacyBudget | None = None) -> np.ndarray:
        """Select ``n_select`` applicants privately; return their sorted indices.

        Parameters
        ----------
        scores : array-like of shape (n,)
            Applicants' scores (real numbers inside ``score_bounds``; lists, numpy arrays and
            pandas Series with any index are accepted; positions, not index labels, are returned).
        random_state : None, int, numpy.random.Generator or NoiseSource, optional
            Overrides the constructor's ``random_state`` for this call when given.  ``None`` (and a
            ``None`` constructor value): secure randomness.  A seed: reproducible, not hardened.
        budget : PrivacyBudget, optional
            Overrides the constructor's ``budget`` for this call when given.  Charged ``epsilon``
            after every argument is validated, just before the draw.

        Returns
        -------
        ndarray of int, shape (n_select,)
            Sorted positions of the selected applicants.

        Raises
        ------
        ValueError
            If a parameter is invalid, ``scores`` is empty, holds NaN / inf or values outside
            ``score_bounds``, or has fewer than ``n_select`` entries.
        TypeError
            If ``scores`` is not real numbers (strings, booleans, complex, objects), or
            ``budget`` / ``random_state`` has the wrong type.
        PrivacyBudgetExceededError
            If the budget cannot pay ``epsilon``; nothing is drawn and the budget is unchanged.

        Warns
        -----
        PrivacyLeakWarning
            With ``epsilon = inf``: the selection is an exact function of the scores.
        """
        overrides = {"budget": budget, "random_state": random_state}  # None keeps the constructor's
        return self._release(scores, privacy_overrides=overrides, name="scores")["selected_"]

    def fit(self, X: Any, y: Any = None) -> ExponentialSelector:
        """Perform one private selection on the scores ``X`` (scikit-learn style).

        Uses the constructor's ``budget`` and ``random_state``.

        Parameters
        ----------
        X : array-like of shape (n,) or (n, 1)
            The applicants' scores (see :meth:`select`).
        y : None
            Ignored; present for scikit-learn compatibility.

        Returns
        -------
        ExponentialSelector
            ``self``, with ``selected_``, ``privacy_spent_`` and ``n_features_in_`` set.

        Raises
        ------
        ValueError, TypeError, PrivacyBudgetExceededError
            As :meth:`select` (the scores are named ``X``).  A refused call leaves the budget and any
            earlier fitted state unchanged.

        Warns
        -----
        PrivacyLeakWarning
            With ``epsilon = inf``.
        """
        args, kwargs = self._release_arguments(X, y)
        return self._set_fitted(self._release(*args, **kwargs))

    def _release_arguments(self, X: Any, y: Any = None, **fit_params: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """``fit(X)`` selects on ``X``, one column of scores (``y`` is ignored), named ``X`` in messages."""
        return (X,), {"name": "X", "column": True, **fit_params}

    def selection_probabilities(self, scores: Any) -> np.ndarray:
        """Exact probability that each applicant is selected (sums to ``n_select``).

        An analysis tool for **public or synthetic** scores: the output is an exact, noise-free
        function of the scores (two calls, e.g. with two epsilons, reveal every score up to a
        shift), so it always raises :class:`~dpfair.privacy.PrivacyLeakWarning`.  On real
        people's scores release :meth:`select` instead.

        Parameters
        ----------
        scores : array-like of shape (n,)
            Scores inside ``score_bounds``.

        Returns
        -------
        ndarray of float, shape (n,)
            ``P(i selected)`` for every applicant.

        Raises
        ------
        ValueError, TypeError
            As :meth:`select`.

        Warns
        -----
        PrivacyLeakWarning
            Always (the output is exact).
        """
        cfg = self._config()
        s = self._check_scores(scores, cfg, "scores")
        out = self._probabilities(cfg, s)
        warn_privacy_leak(
            "selection_probabilities returns exact, noise-free probabilities computed from the scores (two calls reveal "
            "every score up to a shift); use it on public or synthetic scores only, and select() on real people's data.",
        )
        return out
