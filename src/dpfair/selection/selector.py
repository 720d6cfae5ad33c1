"""ExponentialSelector: choose m of n applicants with the exponential mechanism.

Privacy: each applicant's score is their data; two score vectors are neighbours when one
applicant's score changes (inside the declared ``score_bounds``).  The selection is
``epsilon``-DP for that relation (Khalili et al. 2021, Section 2.2 and eq. 6).  Scores outside
the declared bounds are refused: clipping them silently would change what is protected.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
from scipy.special import gammaln, logsumexp

from dpfair._validation import as_finite_array, check_epsilon, check_int
from dpfair.privacy.budget import PrivacyBudget
from dpfair.privacy.mechanisms import TopMExponentialMechanism, exponential_mechanism
from dpfair.privacy.noise import get_noise_source

__all__ = ["ExponentialSelector"]

_UTILITIES = ("mean", "rms", "min", "max")
MAX_ENUMERATION = 1_000_000


class ExponentialSelector:
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
    the top m with ties broken uniformly, the paper's algorithms A and B).

    Parameters
    ----------
    epsilon : float
        Privacy parameter (> 0, or ``inf`` for no privacy).
    n_select : int, default 1
        Number of applicants to select, m.
    score_bounds : (float, float), default (0, 1)
        Declared range of every score; scores outside it raise.
    utility : {"mean", "rms", "min", "max"}, default "mean"
    """

    def __init__(self, epsilon: float, n_select: int = 1, score_bounds: tuple[float, float] = (0.0, 1.0), utility: str = "mean"):
        self.epsilon = check_epsilon(epsilon)
        self.n_select = check_int(n_select, "n_select", minimum=1)
        try:
            lo, hi = (float(b) for b in score_bounds)
        except (TypeError, ValueError):
            raise TypeError(f"score_bounds must be a pair of numbers (lo, hi), got {score_bounds!r}.") from None
        if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
            raise ValueError(f"score_bounds must be finite with lo < hi, got {score_bounds!r}.")
        if utility not in _UTILITIES:
            raise ValueError(f"utility must be one of {_UTILITIES}, got {utility!r}.")
        if utility == "rms" and lo < 0:
            raise ValueError("utility='rms' needs score_bounds with lo >= 0 (squares are not monotone below 0).")
        self.score_bounds = (lo, hi)
        self.utility = utility

    # ------------------------------------------------------------------ helpers
    @property
    def sensitivity(self) -> float:
        """Sensitivity ``Delta`` of the subset utility to one applicant's score."""
        lo, hi = self.score_bounds
        m = self.n_select
        if self.utility == "mean":
            return (hi - lo) / m
        if self.utility == "rms":
            return math.sqrt(((m - 1) * lo**2 + hi**2) / m) - lo
        return hi - lo

    def _check_scores(self, scores: Any) -> np.ndarray:
        s = as_finite_array(scores, "scores", ndim=1)
        lo, hi = self.score_bounds
        if s.min() < lo or s.max() > hi:
            raise ValueError(
                f"scores must lie inside score_bounds={self.score_bounds} (found min {s.min():.6g}, max {s.max():.6g}); "
                "declare wider bounds instead of clipping: clipping silently changes the privacy guarantee."
            )
        if self.n_select > s.size:
            raise ValueError(f"n_select ({self.n_select}) must be <= the number of applicants ({s.size}).")
        return s

    def _order_statistic_classes(self, s: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """For "max"/"min": (sorted order, class log-weights, class log-counts) by the deciding position."""
        n, m = s.size, self.n_select
        order = np.argsort(-s, kind="stable")  # position p holds the p-th largest score
        pos = np.arange(n)
        if self.utility == "max":
            # the subset's max is at position p; the other m-1 come from positions p+1..n-1
            free = n - 1 - pos
        else:
            # the subset's min is at position p; the other m-1 come from positions 0..p-1
            free = pos
        with np.errstate(invalid="ignore"):
            log_count = np.where(
                free >= m - 1, gammaln(free + 1) - gammaln(m) - gammaln(np.maximum(free - m + 1, 0) + 1), -np.inf
            )
        utilities = s[order]
        if math.isinf(self.epsilon):
            best = utilities[np.isfinite(log_count)].max()
            log_weight = np.where((utilities == best) & np.isfinite(log_count), log_count, -np.inf)
        else:
            log_weight = log_count + self.epsilon * utilities / (2.0 * self.sensitivity)
        return order, log_weight - logsumexp(log_weight), free

    def _enumerate_rms(self, s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        n, m = s.size, self.n_select
        if math.comb(n, m) > MAX_ENUMERATION:
            raise ValueError(
                f"utility='rms' enumerates subsets and C({n}, {m}) = {math.comb(n, m):,} exceeds {MAX_ENUMERATION:,}; "
                "use utility='mean' (exact O(n*m)) or fewer applicants."
            )
        subsets = np.array(list(itertools.combinations(range(n), m)), dtype=np.int64)
        values = np.sqrt((s[subsets] ** 2).mean(axis=1))
        if math.isinf(self.epsilon):
            logits = np.where(values == values.max(), 0.0, -np.inf)
        else:
            logits = self.epsilon * values / (2.0 * self.sensitivity)
        return subsets, np.exp(logits - logsumexp(logits))

    # ------------------------------------------------------------------ public API
    def selection_probabilities(self, scores: Any) -> np.ndarray:
        """Exact probability that each applicant is selected (sums to ``n_select``)."""
        s = self._check_scores(scores)
        n, m = s.size, self.n_select
        if self.utility == "mean":
            lo = self.score_bounds[0]
            mech = TopMExponentialMechanism((s - lo) / m, m, sensitivity=self.sensitivity, epsilon=self.epsilon)
            return mech.inclusion_probabilities()
        if self.utility == "rms":
            subsets, probs = self._enumerate_rms(s)
            out = np.zeros(n)
            np.add.at(out, subsets.ravel(), np.repeat(probs, m))
            return out
        order, log_class, free = self._order_statistic_classes(s)
        p_class = np.exp(log_class)
        # the deciding item is always in; another item is in with prob (m-1)/free of each class that can pick it
        share = np.where(free > 0, p_class * (m - 1) / np.maximum(free, 1), 0.0)
        if self.utility == "max":
            picked = np.concatenate([[0.0], np.cumsum(share)[:-1]])  # classes at earlier positions
        else:
            picked = np.concatenate([np.cumsum(share[::-1])[::-1][1:], [0.0]])  # classes at later positions
        out = np.empty(n)
        out[order] = p_class + picked
        return out

    def select(self, scores: Any, random_state: Any = None, budget: PrivacyBudget | None = None) -> np.ndarray:
        """Select ``n_select`` applicants; returns their sorted indices.

        Parameters
        ----------
        scores : array-like of shape (n,)
            Applicants' scores, inside ``score_bounds``.
        random_state : None, int, Generator or NoiseSource
            ``None``: secure randomness (OS CSPRNG / OpenDP).  A seed: reproducible, not hardened.
        budget : PrivacyBudget, optional
            Charged ``epsilon`` before anything is drawn.
        """
        s = self._check_scores(scores)
        if budget is not None:
            budget.spend(self.epsilon, 0.0, label=f"ExponentialSelector({self.utility}, m={self.n_select})")
        noise = get_noise_source(random_state)
        n, m = s.size, self.n_select
        if self.utility == "mean" and m == 1:
            # one applicant: the plain exponential mechanism (Gumbel-max; OpenDP's sampler when secure)
            return np.array([exponential_mechanism(s, sensitivity=self.sensitivity, epsilon=self.epsilon, random_state=noise)])
        if self.utility == "mean":
            lo = self.score_bounds[0]
            mech = TopMExponentialMechanism((s - lo) / m, m, sensitivity=self.sensitivity, epsilon=self.epsilon)
            return mech.sample(random_state=noise)
        if self.utility == "rms":
            subsets, probs = self._enumerate_rms(s)
            k = min(int(np.searchsorted(np.cumsum(probs), noise.uniform(1)[0] * probs.sum(), side="right")), probs.size - 1)
            return np.sort(subsets[k])
        order, log_class, _ = self._order_statistic_classes(s)
        cdf = np.cumsum(np.exp(log_class))
        u = noise.uniform(m)
        p = min(int(np.searchsorted(cdf, u[0] * cdf[-1], side="right")), n - 1)
        pool = np.arange(p + 1, n) if self.utility == "max" else np.arange(p)
        # m-1 others uniformly from the pool: the first m-1 of a uniform random permutation
        keys = noise.uniform(pool.size)
        others = pool[np.argsort(keys)[: m - 1]]
        return np.sort(order[np.concatenate([[p], others])])
