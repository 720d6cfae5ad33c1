"""Empirical privacy audit: a statistical lower bound on a mechanism's epsilon.

Run a mechanism many times on two neighbouring inputs ``D`` and ``D'``.  For an output
event ``S``, ``(epsilon, delta)``-DP implies ``P(M(D) in S) <= e^epsilon P(M(D') in S) + delta``,
so any event with

    ln((lower_CI[P(M(D) in S)] - delta) / upper_CI[P(M(D') in S)]) > epsilon_claimed

refutes the claim.  Probabilities get exact Clopper-Pearson intervals; the confidence
level is split (Bonferroni) over every event and both directions, so the returned lower
bound is valid with the stated confidence.  Continuous outputs are binned with edges
taken from an independent pilot run (choosing events on the same samples that test
them would bias the bound upwards); events are single bins and both tails.

The test of every mechanism in dpfair uses :func:`audit_epsilon`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from dpfair._validation import _as_float, as_finite_array, check_delta, check_int
from dpfair.privacy.noise import NoiseSource, check_random_state

__all__ = ["AuditResult", "audit_epsilon", "clopper_pearson"]


def clopper_pearson(successes: np.ndarray, trials: int, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Exact two-sided ``1 - alpha`` Clopper-Pearson interval for binomial proportions.

    Parameters
    ----------
    successes : array-like of int
        Success counts, each in ``[0, trials]``.
    trials : int
        Number of trials, ``>= 1``.
    alpha : float
        Miscoverage in (0, 1).

    Returns
    -------
    (lower, upper) : tuple of ndarray
        Interval ends, shaped like ``successes``.

    Raises
    ------
    TypeError, ValueError
        For invalid arguments.
    """
    trials = check_int(trials, "trials", minimum=1)
    alpha = _as_float(alpha, "alpha")
    if not (0.0 < alpha < 1.0):
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}.")
    k = as_finite_array(successes, "successes", allow_empty=True, dtype=np.int64).astype(float)
    if k.size and (k.min() < 0 or k.max() > trials):
        raise ValueError(f"successes must lie in [0, trials={trials}].")
    lo = np.where(k > 0, stats.beta.ppf(alpha / 2, k, trials - k + 1), 0.0)
    hi = np.where(k < trials, stats.beta.ppf(1 - alpha / 2, k + 1, trials - k), 1.0)
    return np.nan_to_num(lo, nan=0.0), np.nan_to_num(hi, nan=1.0)


@dataclass(frozen=True)
class AuditResult:
    """Outcome of :func:`audit_epsilon`.

    Parameters
    ----------
    epsilon_lower_bound : float
        With probability at least ``confidence``, the mechanism's true epsilon (at the
        given delta) is at least this.
    event : str
        The output event that gave the bound.
    n_samples : int
        Runs per input.
    n_events : int
        Events tested (the Bonferroni factor is twice this).
    confidence : float
        Confidence level of the bound.
    """

    epsilon_lower_bound: float
    event: str
    n_samples: int
    n_events: int
    confidence: float


def _events(a: np.ndarray, b: np.ndarray, discrete: bool, edges: np.ndarray | None):
    """Indicator counts of every event for both samples; returns (names, counts_a, counts_b)."""
    if discrete:
        values = np.unique(np.concatenate([a, b]))
        ca = np.bincount(np.searchsorted(values, a), minlength=values.size)
        cb = np.bincount(np.searchsorted(values, b), minlength=values.size)
        return [f"output == {v!r}" for v in values.tolist()], ca, cb
    assert edges is not None
    ia = np.searchsorted(edges, a, side="right")
    ib = np.searchsorted(edges, b, side="right")
    nb = edges.size + 1
    bins_a = np.bincount(ia, minlength=nb)
    bins_b = np.bincount(ib, minlength=nb)
    # single bins, left tails (output < edge_k) and right tails (output >= edge_k)
    left_a = np.cumsum(bins_a)[:-1]
    left_b = np.cumsum(bins_b)[:-1]
    right_a = a.size - left_a
    right_b = b.size - left_b
    names = [f"bin {k}" for k in range(nb)]
    names += [f"output < {e:.6g}" for e in edges] + [f"output >= {e:.6g}" for e in edges]
    return names, np.concatenate([bins_a, left_a, right_a]), np.concatenate([bins_b, left_b, right_b])


def _outputs(mechanism: Callable, data: Any, size: int, rng: np.random.Generator) -> np.ndarray:
    """Run the mechanism and check it returned ``size`` finite real numbers."""
    raw = mechanism(data, size, rng)
    shape = np.shape(raw)
    if shape != (size,):
        raise ValueError(f"mechanism must return a 1-d array of {size} outputs; got shape {shape}.")
    raw = np.asarray(raw)
    if raw.dtype.kind in "iu":
        return raw  # integer codes (e.g. subset bitmasks) stay exact
    return as_finite_array(raw, "the mechanism's outputs", ndim=1)


def audit_epsilon(
    mechanism: Callable[[Any, int, np.random.Generator], np.ndarray],
    input_a: Any,
    input_b: Any,
    *,
    n_samples: int,
    delta: float = 0.0,
    discrete: bool = False,
    n_bins: int = 20,
    confidence: float = 0.95,
    random_state: Any = 0,
) -> AuditResult:
    """Lower confidence bound on the epsilon of ``mechanism`` from two neighbouring inputs.

    Parameters
    ----------
    mechanism : callable
        ``mechanism(data, size, rng)`` returns ``size`` independent outputs as a 1-d array
        (numbers; for structured outputs such as subsets, encode each as an integer).
    input_a, input_b : any
        Neighbouring inputs.
    n_samples : int
        Runs per input.
    delta : float, default 0
        The claimed delta; subtracted from the larger probability.
    discrete : bool, default False
        Treat outputs as discrete labels (events are single outcomes); otherwise bin them.
    n_bins : int, default 20
        Bins for continuous outputs (edges from quantiles of a pilot run), ``>= 2``: one
        bin holds every output and can refute nothing.  At most the pilot size,
        ``max(n_samples // 10, 100)``.
    confidence : float, default 0.95
        Confidence level of the returned bound, in (0, 1).
    random_state : int, Generator or SeedSequence, default 0
        Seed for the runs: audits are deterministic.

    Returns
    -------
    AuditResult
        The lower bound ``epsilon_lower_bound`` (0 when no event refutes ``epsilon = 0``),
        the event that gave it, and the sample size, number of events and confidence used.

    Raises
    ------
    TypeError, ValueError
        For invalid arguments, or when ``mechanism`` returns anything but ``size``
        finite real numbers in a 1-d array (NaN or inf outputs cannot be binned and would
        hide a leak).
    """
    if not callable(mechanism):
        raise TypeError(f"mechanism must be callable as mechanism(data, size, rng), got {type(mechanism).__name__}.")
    n_samples = check_int(n_samples, "n_samples", minimum=10)
    delta = check_delta(delta)
    if not isinstance(discrete, bool | np.bool_):
        raise TypeError(f"discrete must be True or False, got {type(discrete).__name__}.")
    pilot_size = max(n_samples // 10, 100)
    n_bins = check_int(n_bins, "n_bins", minimum=2)
    if n_bins > pilot_size:
        raise ValueError(f"n_bins must be <= the pilot size max(n_samples // 10, 100) = {pilot_size}, got {n_bins}.")
    confidence = _as_float(confidence, "confidence")
    if not (0.0 < confidence < 1.0):
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}.")
    if isinstance(random_state, NoiseSource):
        raise TypeError("random_state must be an int seed, a numpy Generator or a SeedSequence, not a NoiseSource.")
    check_random_state(random_state)
    rng = np.random.default_rng(random_state)
    edges = None
    if not discrete:
        pilot = np.concatenate(
            [_outputs(mechanism, input_a, pilot_size, rng), _outputs(mechanism, input_b, pilot_size, rng)]
        )
        edges = np.unique(np.quantile(pilot, np.linspace(0, 1, n_bins + 1)[1:-1]))
    out_a = _outputs(mechanism, input_a, n_samples, rng)
    out_b = _outputs(mechanism, input_b, n_samples, rng)
    names, ca, cb = _events(out_a, out_b, discrete, edges)
    n_events = len(names)
    alpha = (1.0 - confidence) / (2 * n_events)  # Bonferroni over events and both directions
    lo_a, hi_a = clopper_pearson(ca, n_samples, 2 * alpha)  # one-sided bounds at level alpha each
    lo_b, hi_b = clopper_pearson(cb, n_samples, 2 * alpha)
    best, best_name = 0.0, "none"
    for lo_x, hi_y, tag in ((lo_a, hi_b, "P(M(a))/P(M(b))"), (lo_b, hi_a, "P(M(b))/P(M(a))")):
        num = lo_x - delta
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where((num > 0) & (hi_y > 0), np.log(np.maximum(num, 1e-300) / hi_y), -np.inf)
        k = int(np.argmax(ratio))
        if ratio[k] > best:
            best, best_name = float(ratio[k]), f"{names[k]} ({tag})"
    return AuditResult(
        epsilon_lower_bound=best if math.isfinite(best) else 0.0,
        event=best_name,
        n_samples=n_samples,
        n_events=n_events,
        confidence=confidence,
    )
