"""Exact fairness and accuracy of exponential-mechanism selection (Khalili et al. 2021).

Model (paper Section 2): ``n`` applicants are i.i.d. draws of ``(A, Y, R)`` from a discrete
joint distribution; ``R`` takes values on a finite grid.  The exponential mechanism selects
``m`` applicants with probability proportional to ``exp(epsilon * sum_{j in G} R_j / 2)``
(eq. 6; the mean utility with sensitivity 1/m on scores in [0, 1]).

For an applicant ``i`` with score ``rho``, let ``pi_m(rho; epsilon)`` be the probability that
``i`` is selected, averaged over the other ``n - 1`` applicants (``E{Z_i | R_i = rho}`` for
``m = 1``, ``E{W_i | R_i = rho}`` for ``m > 1``).  Every quantity of the paper is a linear
functional of ``pi_m``:

* equal opportunity gap (Definition 4, eq. 1): ``gamma = sum_rho pi(rho) (f0(rho) - f1(rho))``
  with ``fa = P(R | A = a, Y = 1)``;
* demographic-parity gap (appendix): the same with ``P(R | A = a)``;
* accuracy (Definition 5, eq. 8): ``theta = (n / m) sum_rho pi(rho) P(R = rho, Y = 1)``.

How ``pi_m`` is computed
------------------------
* ``m = 1``, finite epsilon (exact): with weights ``w = exp(epsilon * R / 2)`` and
  ``S`` the others' total weight, ``1 / (w + S) = int_0^inf exp(-t (w + S)) dt``, so
  ``pi(rho) = int_0^inf w exp(-t w) L(t)**(n-1) dt`` with the Laplace transform
  ``L(t) = E exp(-t w(R))``.  Substituting ``u = t w(rho)`` gives
  ``pi(rho) = int_0^inf exp(-u) L_rho(u)**(n-1) du`` with
  ``L_rho(u) = E exp(-u exp(epsilon (R - rho) / 2))``: only weight *ratios* appear, so nothing
  underflows at any epsilon (the old form divided by weights that underflow past epsilon ~ 1e3).
  We integrate over ``s = log u`` with the trapezoidal rule, which converges exponentially fast
  for this smooth, doubly-exponentially decaying integrand (step 0.2: error below 1e-13;
  checked against enumeration in the tests).
* ``epsilon = inf`` (exact, any m): the top-m rule with uniform tie-breaking. Given
  ``a`` others strictly above ``rho`` and ``b`` tied with it, ``i`` is selected with
  probability ``min(1, (m - a) / (b + 1))`` when ``a < m``; we sum over the trinomial law
  of ``(a, b)``.  (The paper's ``W_i = 1/|S_max|`` is the ``m = 1`` form; the limit of
  ``W_{i, eps}`` for ``m > 1`` is ``|S_i cap S_max| / |S_max|``, which is what this computes.)
* ``m > 1``, finite epsilon: ``pi = x e_{m-1}(O) / (e_m(O) + x e_{m-1}(O))`` where ``O`` are
  the others' weights and ``e_k`` the elementary symmetric polynomials.  When the number of
  multisets of others' scores is at most ``max_configurations`` we sum exactly over them
  (multinomial weights); otherwise we use Monte Carlo over the others' scores with the
  exact conditional inclusion probability (a Rao-Blackwellized estimator, common random
  numbers across epsilon) and report its standard error.  Each sample enters only through
  its histogram ``c`` over the score grid (the others' scores form a multiset): its ``e_k``
  follow from the power sums ``p_r = c @ w^r`` (one matrix product for all samples) by
  Newton's identities when ``m <= 8`` and no cancellation can matter, else from the truncated
  product of ``(1 + w_j z)^{c_j}`` over the grid's ``k`` values (no subtraction).  Either way
  ``O(k m)`` or ``O(k m^2)`` per sample instead of ``O(n m)``, and the same numbers as the
  item-by-item recursion to rounding (checked to 1e-9 against it in the tests).
* Large finite epsilon, ``m > 1``: once ``C(n, m) n exp(-epsilon d / (2 (hi - lo))) < 1e-20``
  (``d`` the smallest gap between score values) the finite-epsilon value provably equals the
  ``epsilon = inf`` value to double precision (see :meth:`SelectionProblem._at_limit`), and
  the limit is computed instead: at such epsilons the weights' rounding errors
  (``epsilon * 1e-16``) would otherwise swamp the result.

Speed and progress
------------------
:meth:`SelectionProblem.best_epsilon` and :meth:`SelectionProblem.perfectly_fair_epsilons`
evaluate a grid of epsilons and refine with Brent's method.  Both quantities a search needs
(``gamma`` and ``theta``) come from one computation of ``pi_m`` per epsilon, and a progress bar
(``rich``, as the CLI's) or a ``progress`` callback reports every evaluation of a search that
takes more than a couple of seconds (``benchmarks/bench_selection_analysis.py`` times them).
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import optimize, signal
from scipy.special import gammaln, logsumexp
from threadpoolctl import ThreadpoolController

from dpfair._estimator import as_sensitive_features
from dpfair._validation import as_finite_array, check_bounds, check_int, check_nonnegative_finite, check_positive_finite
from dpfair.privacy.leaks import warn_privacy_leak
from dpfair.selection._checks import check_epsilon_array, check_n_select
from dpfair.selection._esp import _compositions, _log_esp_binomial_factors

__all__ = ["MAX_APPLICANTS", "Estimate", "SelectionProblem"]

#: Largest pool size ``n_applicants`` the exact analysis accepts (the paper uses n = 10).
MAX_APPLICANTS = 1000
#: Past the epsilon where ``C(n, m) * n * exp(-epsilon * d / (2 (hi - lo)))`` (d: the smallest gap
#: between score values) drops below this, every quantity equals its epsilon = inf limit to far
#: better than double precision, and the limit is used (see ``SelectionProblem._at_limit``).
_LIMIT_TOLERANCE = 1e-20

#: Newton's identities give e_k from power sums up to this degree m (above it: the subtraction-free product).
_NEWTON_MAX_DEGREE = 8
#: A sample's e_k from Newton's identities is kept when ``k! e_k >= _NEWTON_SAFETY * p_1^k`` (relative error
#: below ~1e-16 / _NEWTON_SAFETY times a small constant); otherwise it is recomputed without subtractions.
_NEWTON_SAFETY = 1e-5

#: Monte Carlo samples drawn per chunk when building their histograms (bounds the memory of the draw).
_MC_CHUNK_ELEMENTS = 4_000_000

#: ``progress=None`` shows a progress bar once a search is projected to take longer than this (seconds).
_AUTO_PROGRESS_SECONDS = 2.0

#: A progress argument: None (automatic), a bool, or a callable receiving ``(done, total)`` evaluations.
ProgressArgument = bool | Callable[[int, int], None] | None


def _interactive() -> bool:
    """Whether standard error is a terminal (``progress=None`` draws no bar into logs or pipes)."""
    import sys

    stream = sys.stderr
    return bool(getattr(stream, "isatty", lambda: False)())


_BLAS: list[ThreadpoolController] = []


def _blas_controller() -> ThreadpoolController:
    """One :class:`threadpoolctl.ThreadpoolController` per process (building it inspects the loaded libraries)."""
    if not _BLAS:
        _BLAS.append(ThreadpoolController())
    return _BLAS[0]


class _SearchProgress:
    """Progress of a search over epsilon: a rich bar, a ``(done, total)`` callback, or nothing.

    ``progress=None`` starts the bar only when the evaluations so far project a search longer than
    ``_AUTO_PROGRESS_SECONDS``; ``True`` always shows it; ``False`` never.  The total grows when Brent's
    method adds evaluations.
    """

    def __init__(self, progress: ProgressArgument, description: str) -> None:
        if not (progress is None or isinstance(progress, bool) or callable(progress)):
            raise TypeError(f"progress must be None, True, False or a callable taking (done, total), got "
                            f"{type(progress).__name__}.")
        self.progress = progress
        self.description = description
        self.done = 0
        self.total = 0
        self.started = time.perf_counter()
        self._bar: Any = None
        self._task: Any = None

    def __enter__(self) -> _SearchProgress:
        return self

    def expect(self, count: int) -> None:
        """Announce ``count`` more evaluations."""
        self.total += count
        if self._bar is not None:
            self._bar.update(self._task, total=self.total)

    def tick(self) -> None:
        """One evaluation is done."""
        self.done += 1
        self.total = max(self.total, self.done)
        if callable(self.progress) and not isinstance(self.progress, bool):
            self.progress(self.done, self.total)
            return
        if self._bar is None and self.progress is not False:
            elapsed = time.perf_counter() - self.started
            if self.progress is True or (elapsed / self.done * self.total > _AUTO_PROGRESS_SECONDS and _interactive()):
                self._start_bar()
        if self._bar is not None:
            self._bar.update(self._task, completed=self.done, total=self.total)

    def _start_bar(self) -> None:
        from rich.console import Console
        from rich.errors import LiveError
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

        bar = Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                       TextColumn("ETA"), TimeRemainingColumn(), transient=True, console=Console(stderr=True))
        try:
            bar.__enter__()
        except LiveError:  # another live display (e.g. the experiment runner's bar) owns the terminal: stay silent
            self.progress = False
            return
        self._bar = bar
        self._task = bar.add_task(self.description, total=self.total, completed=self.done)

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.__exit__(None, None, None)
            self._bar = None


@dataclass(frozen=True)
class Estimate:
    """A computed quantity with its standard error (0 when exact).

    Parameters
    ----------
    value : float or ndarray
        The quantity (an array when several epsilons were asked for).
    standard_error : float or ndarray
        Monte Carlo standard error; 0 for exact methods.
    method : str
        ``"laplace-integral"``, ``"enumeration"``, ``"closed-form"`` or ``"monte-carlo"``.
    """

    value: Any
    standard_error: Any
    method: str

    def __float__(self) -> float:
        return float(self.value)


class SelectionProblem:
    """Applicants drawn i.i.d. from a discrete joint law of (group A, label Y, score R).

    Parameters
    ----------
    score_values : array-like of shape (n_scores,)
        The score grid (distinct values; the paper normalizes it to [0, 1]).
    joint_pmf : array-like of shape (n_groups, 2, n_scores)
        ``joint_pmf[a, y, j] = P(A = a, Y = y, R = score_values[j])``; sums to 1.
        Exactly two groups (the paper's A in {0, 1}).
    n_applicants : int
        Applicants per selection, ``n``.
    score_bounds : (float, float), default=(0.0, 1.0)
        Declared, finite score range; the exponential mechanism uses utility sensitivity
        ``(hi - lo) / m`` for the mean score.
    max_configurations : int, default=200_000
        Largest number of multisets of the others' scores enumerated exactly for m > 1.
    n_mc_samples : int, default=40_000
        Monte Carlo samples when enumeration is too large.
    random_state : int, default=0
        Seed of the Monte Carlo samples (fixed: the curves are deterministic functions of
        epsilon, which root finding needs).

    Attributes
    ----------
    score_values : ndarray of shape (n_scores,)
        The sorted score grid.
    joint_pmf : ndarray of shape (2, 2, n_scores)
        The joint law, columns in the order of ``score_values``.
    n_applicants, score_bounds, max_configurations, n_mc_samples, random_state
        The constructor's arguments, validated.
    f_r : ndarray of shape (n_scores,)
        ``P(R)``.
    p_qualified_score : ndarray of shape (n_scores,)
        ``P(R, Y = 1)``.
    f_qualified : ndarray of shape (2, n_scores)
        ``P(R | A = a, Y = 1)``.
    f_group : ndarray of shape (2, n_scores)
        ``P(R | A = a)``.

    Raises
    ------
    ValueError
        If the grid is not distinct and inside finite ``score_bounds``, ``joint_pmf`` has the
        wrong shape, is negative or does not sum to 1, a group has no qualified applicants, or
        ``n_applicants`` is not in ``[2, MAX_APPLICANTS]``.
    TypeError
        If an argument is not numeric (strings, booleans, objects are refused).

    Notes
    -----
    ``SelectionProblem`` analyses a *distribution* (public or synthetic); its outputs carry no
    privacy guarantee.  :meth:`from_samples` builds one from data and warns accordingly.
    """

    def __init__(
        self,
        score_values: Any,
        joint_pmf: Any,
        n_applicants: int,
        *,
        score_bounds: tuple[float, float] = (0.0, 1.0),
        max_configurations: int = 200_000,
        n_mc_samples: int = 40_000,
        random_state: int = 0,
    ) -> None:
        grid = as_finite_array(score_values, "score_values", ndim=1, mode="strict")
        pmf = as_finite_array(joint_pmf, "joint_pmf", ndim=3, mode="strict")
        if pmf.shape != (2, 2, grid.size):
            raise ValueError(f"joint_pmf must have shape (2, 2, {grid.size}) (groups, labels, scores); got {pmf.shape}.")
        if (pmf < 0).any() or not math.isclose(pmf.sum(), 1.0, abs_tol=1e-9):
            raise ValueError(f"joint_pmf must be non-negative and sum to 1 (sums to {pmf.sum():.12g}).")
        if np.unique(grid).size != grid.size:
            raise ValueError("score_values must be distinct.")
        lo, hi = check_bounds(score_bounds, "score_bounds")
        if grid.min() < lo or grid.max() > hi:
            raise ValueError(f"score_values must lie inside score_bounds={score_bounds}; declare bounds containing the grid.")
        for a in range(2):
            if pmf[a, 1].sum() <= 0:
                raise ValueError(f"group {a} has no qualified applicants (P(A={a}, Y=1) = 0); gamma is undefined.")
        order = np.argsort(grid)
        self.score_values = grid[order]
        self.joint_pmf = pmf[:, :, order] / pmf.sum()
        self.n_applicants = check_int(n_applicants, "n_applicants", minimum=2)
        if self.n_applicants > MAX_APPLICANTS:
            raise ValueError(f"n_applicants must be <= {MAX_APPLICANTS} (the exact analysis is for small pools), "
                             f"got {self.n_applicants}.")
        self.score_bounds = (float(lo), float(hi))
        self.max_configurations = check_int(max_configurations, "max_configurations", minimum=1)
        self.n_mc_samples = check_int(n_mc_samples, "n_mc_samples", minimum=100)
        self.random_state = check_int(random_state, "random_state", minimum=0)
        self.f_r = self.joint_pmf.sum(axis=(0, 1))  # P(R)
        self.p_qualified_score = self.joint_pmf[:, 1].sum(axis=0)  # P(R, Y = 1)
        self.f_qualified = self.joint_pmf[:, 1] / self.joint_pmf[:, 1].sum(axis=1, keepdims=True)  # P(R | A, Y=1)
        self.f_group = self.joint_pmf.sum(axis=1) / self.joint_pmf.sum(axis=(1, 2))[:, None]  # P(R | A)
        self._mc_cache: dict[tuple[Any, int], np.ndarray] = {}
        self._configurations: tuple[np.ndarray, np.ndarray] | None = None

    # ------------------------------------------------------------------ constructors
    @classmethod
    def from_fico(
        cls,
        groups: Sequence[str | Mapping[str, float]] = ("white", "black"),
        group_probabilities: Sequence[float] = (0.88, 0.12),
        n_applicants: int = 10,
        *,
        data_home: Any = None,
        download: bool = True,
        **kwargs: Any,
    ) -> SelectionProblem:
        """FICO scores / 100 with ``Y`` = non-default (Hardt et al. 2016 data).

        Parameters
        ----------
        groups : two entries
            Each a FICO group name (``"white"``, ``"black"``, ``"hispanic"``, ``"asian"``) or a
            mapping ``{name: share}`` mixing groups into one (for the paper's White+Hispanic
            group: ``{"white": 0.64, "hispanic": 0.36}``).
        group_probabilities : two floats
            ``P(A = 0)`` and ``P(A = 1)``.
        n_applicants : int, default=10
            Applicants per selection.
        data_home : path, optional
            Where the FICO files live (see :func:`dpfair.datasets.load_fico`).
        download : bool, default=True
            Download the data when missing.
        **kwargs
            Passed to :class:`SelectionProblem`.

        Returns
        -------
        SelectionProblem

        Raises
        ------
        ValueError
            If ``groups`` / ``group_probabilities`` are not two valid entries each.
        DataUnavailableError
            If the data is missing and cannot be downloaded.
        """
        from dpfair.datasets import load_fico

        fico = load_fico(data_home=data_home, download=download)
        if isinstance(groups, str) or len(groups) != 2 or len(group_probabilities) != 2:
            raise ValueError("groups and group_probabilities must have two entries each.")
        probs = as_finite_array(group_probabilities, "group_probabilities", ndim=1, mode="strict")
        if not (np.isclose(probs.sum(), 1.0) and (probs > 0).all()):
            raise ValueError(f"group_probabilities must be positive and sum to 1, got {list(probs)}.")
        joint = np.zeros((2, 2, fico.scores.size))
        for a, group in enumerate(groups):
            mix = {group: 1.0} if isinstance(group, str) else dict(group)
            if not math.isclose(sum(mix.values()), 1.0):
                raise ValueError(f"the shares of group {a} must sum to 1, got {mix}.")
            for name, share in mix.items():
                if name not in fico.groups:
                    raise ValueError(f"unknown FICO group {name!r}; choose from {fico.groups}.")
                p_r = fico.pmf[name].to_numpy()
                p_y = fico.non_default[name].to_numpy()
                joint[a, 1] += probs[a] * share * p_r * p_y
                joint[a, 0] += probs[a] * share * p_r * (1.0 - p_y)
        return cls(fico.scores, joint, n_applicants, **kwargs)

    @classmethod
    def from_samples(cls, scores: Any, groups: Any, labels: Any, n_applicants: int, **kwargs: Any) -> SelectionProblem:
        """Empirical joint law of (group, label, score) from data (two groups; labels 0/1).

        Group 0 is the first of the two sorted group labels.  The score grid is the set of
        observed scores, and the declared ``score_bounds`` (default [0, 1]) must contain it.

        Parameters
        ----------
        scores : array-like of shape (n_rows,)
            Real scores (strings, booleans and objects are refused).
        groups : array-like of shape (n_rows,)
            Group label of every row; exactly two distinct, comparable labels.
        labels : array-like of shape (n_rows,)
            0 / 1 (or booleans): ``Y``.
        n_applicants : int
            Applicants per selection.
        **kwargs
            Passed to :class:`SelectionProblem`.

        Returns
        -------
        SelectionProblem

        Raises
        ------
        ValueError
            If the lengths differ, labels are not 0/1, there are not exactly two groups, or the
            law is invalid (see :class:`SelectionProblem`).
        TypeError
            If an argument has the wrong type.

        Warns
        -----
        PrivacyLeakWarning
            Always: the law, and every quantity computed from it, is an exact function of the rows.
            Use it on public or synthetic data.
        """
        r = as_finite_array(scores, "scores", ndim=1, mode="strict")
        g = as_sensitive_features(groups, r.size, "groups")
        if isinstance(labels, pd.Series | pd.DataFrame):
            labels = labels.to_numpy()
        label_arr = np.asarray(labels) if not isinstance(labels, str | bytes) else labels
        if isinstance(label_arr, np.ndarray) and label_arr.dtype.kind == "b":
            label_arr = label_arr.astype(np.int64)
        y = as_finite_array(label_arr, "labels", ndim=1, mode="strict")
        if y.size != r.size:
            raise ValueError("scores, groups and labels must have the same length (one entry per row).")
        if not np.isin(y, (0, 1)).all():
            raise ValueError("labels must be 0 or 1.")
        group_values = pd.unique(pd.Series(g, dtype=object))
        if group_values.size != 2:
            raise ValueError("groups must take exactly two distinct values (the paper's A in {0, 1}).")
        try:
            group_values = np.asarray(sorted(group_values.tolist()), dtype=object)
        except TypeError:
            raise TypeError("groups must hold two comparable labels (e.g. two strings or two ints).") from None
        grid, r_index = np.unique(r, return_inverse=True)
        a_index = (g == group_values[1]).astype(np.int64)
        joint = np.zeros((2, 2, grid.size))
        np.add.at(joint, (a_index, y.astype(np.int64), r_index), 1.0)
        problem = cls(grid, joint / r.size, n_applicants, **kwargs)
        warn_privacy_leak(
            "SelectionProblem.from_samples builds the exact empirical law of the rows: its gamma, theta and selection "
            "probabilities are noise-free functions of the data. Use it on public or synthetic data only.",
            stacklevel=3,
        )
        return problem

    # ------------------------------------------------------------------ core: pi_m(rho; eps)
    def _log_weights(self, epsilon: float, n_select: int) -> np.ndarray:
        lo, hi = self.score_bounds
        # eq. (6): exp(eps * mean / (2 * (hi - lo)/m)) = exp(eps * sum_j R_j / (2 (hi - lo)));
        # the difference is scaled before epsilon multiplies it, so nothing overflows
        return epsilon * ((self.score_values - self.score_values.max()) / (2.0 * (hi - lo)))

    def _pi_laplace(self, epsilon: float) -> np.ndarray:
        """m = 1, finite epsilon: ``pi(rho) = int_0^inf exp(-u) L_rho(u)^(n-1) du`` (exact to ~1e-13).

        ``L_rho(u) = sum_k f_k exp(-u exp(epsilon (R_k - rho) / (2 (hi - lo))))`` holds only weight
        ratios relative to the applicant's own weight, so it neither underflows nor overflows
        (an infinite ratio gives ``exp(-inf) = 0``).  Trapezoidal rule over ``s = log u`` on
        ``[log 1e-20, log 80]``: the truncated tails are below 1e-20 and exp(-80).
        """
        lo, hi = self.score_bounds
        support = self.f_r > 0
        f = self.f_r[support]
        s = np.arange(math.log(1e-20), math.log(80.0) + 0.2, 0.2)
        u = np.exp(s)
        grid = self.score_values
        lattice = self._score_lattice()
        if lattice is not None:  # L_rho(u) for every rho at once: a correlation on the lattice (FFT)
            step, index = lattice
            top = int(index.max())
            with np.errstate(over="ignore"):
                ratio = np.exp(epsilon * (step * np.arange(-top, top + 1)) / (2.0 * (hi - lo)))  # by lattice offset
                kernel = np.exp(-u[:, None] * ratio[None, :])  # (u, 2 top + 1)
            mass = np.zeros(top + 1)
            np.add.at(mass, index[support], f)
            # L[i, q] = sum_l mass[l] kernel[i, l - q + top] = (mass * reversed kernel)[top + q]
            full = signal.fftconvolve(mass[None, :], kernel[:, ::-1], mode="full", axes=1)
            transform = np.clip(full[:, top : 2 * top + 1][:, index], 0.0, 1.0)  # (u, rho)
            integrand = (u * np.exp(-u))[:, None] * transform ** (self.n_applicants - 1)
            return np.trapezoid(integrand, s, axis=0)
        out = np.empty(grid.size)
        block = max(1, 2_000_000 // (u.size * f.size))  # applicants' scores per vectorized block
        for start in range(0, grid.size, block):
            rho = grid[start : start + block]
            gaps = (grid[support][None, :] - rho[:, None]) / (2.0 * (hi - lo))  # in [-1/2, 1/2]
            with np.errstate(over="ignore"):
                ratio = np.exp(epsilon * gaps)  # w_k / w_rho, possibly inf (then exp(-u * inf) = 0)
                transform = np.exp(-u[:, None, None] * ratio[None, :, :]) @ f  # L_rho(u), shape (u, rho)
            integrand = (u * np.exp(-u))[:, None] * transform ** (self.n_applicants - 1)
            out[start : start + block] = np.trapezoid(integrand, s, axis=0)
        return out

    def _score_lattice(self) -> tuple[float, np.ndarray] | None:
        """``(h, index)`` with ``score_values = score_values[0] + h * index`` (integers), or ``None``.

        A grid on a lattice of at most 4,096 steps (FICO's scores / 100: step 0.005; the case study's: 0.1) lets
        :meth:`_pi_laplace` compute every ``L_rho`` as one correlation; the lattice is checked to ``1e-9`` steps.
        """
        grid = self.score_values
        if grid.size < 2:
            return None
        step = float(np.diff(grid).min())
        index = np.rint((grid - grid[0]) / step)
        if index[-1] > 4096 or not np.allclose(grid[0] + step * index, grid, rtol=0.0, atol=1e-9 * step):
            return None
        return step, index.astype(np.int64)

    def _pi_infinity(self, n_select: int) -> np.ndarray:
        """epsilon = inf: top-m with uniform ties, exact for any m (trinomial sum over above / tied / below)."""
        n, m = self.n_applicants, n_select
        cdf = np.cumsum(self.f_r)
        p_equal = self.f_r
        p_below = np.clip(cdf - p_equal, 0.0, 1.0)
        p_above = np.clip(1.0 - cdf, 0.0, 1.0)
        out = np.zeros_like(p_equal)
        others = n - 1
        with np.errstate(divide="ignore"):
            log_above, log_equal, log_below = np.log(p_above), np.log(p_equal), np.log(p_below)
        for above in range(min(m, others + 1)):
            tied = np.arange(others - above + 1)[:, None]
            below = others - above - tied
            log_coef = gammaln(others + 1) - gammaln(above + 1) - gammaln(tied + 1) - gammaln(below + 1)
            with np.errstate(invalid="ignore"):
                log_prob = (
                    log_coef
                    + np.where(above > 0, above * log_above, 0.0)[None, :]
                    + np.where(tied > 0, tied * log_equal[None, :], 0.0)
                    + np.where(below > 0, below * log_below[None, :], 0.0)
                )
            prob = np.nan_to_num(np.exp(log_prob))
            out += (prob * np.minimum(1.0, (m - above) / (tied + 1))).sum(axis=0)
        return out

    def _at_limit(self, epsilon: float, n_select: int) -> bool:
        """Whether every quantity at ``epsilon`` equals its ``epsilon = inf`` value to ~1e-20.

        Proof.  Fix the others' scores and the applicant's score.  Let ``G*`` be a subset of
        maximal total score and ``G`` a non-maximal one; order both by score, ``t_1 >= ... >= t_m``
        and ``g_1 >= ... >= g_m``.  The top m dominate, ``t_j >= g_j``, and the totals differ, so
        some ``t_j > g_j``, hence ``t_j - g_j >= d`` (the smallest gap between score values) and
        ``P_eps(G) <= P_eps(G) / P_eps(G*) <= exp(-epsilon d / (2 (hi - lo)))``.  Given the scores,
        ``P_eps`` restricted to the maximal subsets is uniform, as is ``P_inf``, so every event's
        probability changes by at most ``P_eps(non-maximal) <= C(n, m) exp(-epsilon d / (2 (hi - lo)))``;
        so does ``pi_m(rho)`` after averaging, and a functional with coefficients of total
        absolute value ``<= max(2, n / m) <= n`` by at most ``n`` times that.
        """
        if math.isinf(epsilon):
            return True
        lo, hi = self.score_bounds
        if self.score_values.size < 2:
            return True
        gap = float(np.diff(self.score_values).min()) * (1.0 - 1e-9)
        log_bound = (gammaln(self.n_applicants + 1) - gammaln(n_select + 1) - gammaln(self.n_applicants - n_select + 1)
                     + math.log(self.n_applicants) - epsilon * (gap / (2.0 * (hi - lo))))
        return bool(log_bound < math.log(_LIMIT_TOLERANCE))

    def _pi_from_log_esp(self, log_x: np.ndarray, log_e_prev: np.ndarray, log_e_m: np.ndarray) -> np.ndarray:
        # pi = x e_{m-1} / (e_m + x e_{m-1}), rows: configurations, columns: the applicant's score
        num = log_x[None, :] + log_e_prev[:, None]
        return np.exp(num - np.logaddexp(log_e_m[:, None], num))

    def _n_configurations(self) -> int:
        k = int((self.f_r > 0).sum())
        return math.comb(self.n_applicants - 1 + k - 1, k - 1)

    def _pi_enumeration(self, epsilon: float, n_select: int) -> tuple[np.ndarray, np.ndarray]:
        """Exact sum over the multisets of the others' scores: returns (probabilities, pi matrix)."""
        support = np.flatnonzero(self.f_r > 0)
        if self._configurations is None:
            counts = _compositions(self.n_applicants - 1, support.size)
            log_prob = gammaln(self.n_applicants) - gammaln(counts + 1).sum(axis=1) + counts @ np.log(self.f_r[support])
            self._configurations = (counts, np.exp(log_prob - logsumexp(log_prob)))
        counts, probs = self._configurations
        log_x = self._log_weights(epsilon, n_select)
        poly = _log_esp_binomial_factors(log_x[support], counts, n_select)
        pis = self._pi_from_log_esp(log_x, poly[:, n_select - 1], poly[:, n_select])
        return probs, pis

    def _mc_counts(self) -> np.ndarray:
        """Histograms of the Monte Carlo samples of the others' scores: shape (n_mc_samples, n_scores).

        Row ``i`` counts the ``n - 1`` scores of sample ``i``.  The draws are those of
        ``default_rng(random_state).choice(n_scores, size=(n_mc_samples, n - 1), p=P(R))``, taken in
        chunks of rows (the same stream, without holding the ``(n_mc_samples, n - 1)`` array), and
        cached per ``(random_state, n_mc_samples)``.
        """
        # keyed by seed and size: changing random_state (as the experiments do per seed) draws new samples
        seed = check_int(self.random_state, "random_state", minimum=0)
        n_samples = check_int(self.n_mc_samples, "n_mc_samples", minimum=100)
        key = (seed, n_samples)
        if key not in self._mc_cache:
            rng = np.random.default_rng(seed)
            k, others = self.score_values.size, self.n_applicants - 1
            counts = np.zeros((n_samples, k), dtype=np.int32)
            chunk = max(1, _MC_CHUNK_ELEMENTS // max(others, 1))
            for start in range(0, n_samples, chunk):
                rows = min(chunk, n_samples - start)
                idx = rng.choice(k, size=(rows, others), p=self.f_r)
                flat = (np.arange(rows)[:, None] * k + idx).ravel()
                counts[start : start + rows] = np.bincount(flat, minlength=rows * k).reshape(rows, k)
            self._mc_cache[key] = counts
        return self._mc_cache[key]

    def _mc_counts_by_score(self) -> np.ndarray:
        """:meth:`_mc_counts` transposed, C-contiguous (n_scores, n_mc_samples): one row per score value."""
        counts = self._mc_counts()
        key = ("by score", id(counts))
        if key not in self._mc_cache:
            self._mc_cache = {k: v for k, v in self._mc_cache.items() if not (isinstance(k, tuple) and k[:1] == ("by score",))}
            self._mc_cache[key] = np.ascontiguousarray(counts.T)
        return self._mc_cache[key]

    def _pi_monte_carlo(self, epsilon: float, n_select: int) -> np.ndarray:
        """Per-sample exact conditional inclusion probabilities, shape (n_mc_samples, n_scores).

        ``e_k`` of a sample's others is the coefficient of ``z^k`` in ``prod_j (1 + w_j z)^{c_j}`` over
        the score values ``j`` with ``c_j`` copies.  In the linear domain (when no product of ``m`` weights
        underflows and no ``e_k`` can overflow) the truncated product is updated in place, one score value
        at a time, on contiguous rows of all samples; otherwise in log space
        (:func:`dpfair.selection._esp._log_esp_binomial_factors`).
        """
        counts = self._mc_counts()
        if self._at_limit(epsilon, n_select):
            # the same samples' exact conditional at epsilon = inf (top m, uniform ties): continuous in epsilon
            hist = counts.astype(float)
            above = hist[:, ::-1].cumsum(axis=1)[:, ::-1] - hist  # others strictly above each score
            return np.where(above < n_select, np.minimum(1.0, (n_select - above) / (hist + 1.0)), 0.0)
        m = n_select
        log_x = self._log_weights(epsilon, m)
        support = np.flatnonzero(self.f_r > 0)
        if not self._linear_domain(log_x, support, m):
            poly = _log_esp_binomial_factors(log_x[support], counts[:, support], m)
            return self._pi_from_log_esp(log_x, poly[:, m - 1], poly[:, m])
        e_prev, e_m = self._esp_top_two(log_x, support, m)
        x = np.exp(log_x)
        numerator = e_prev[:, None] * x[None, :]
        return numerator / (e_m[:, None] + numerator)

    def _esp_top_two(self, log_x: np.ndarray, support: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
        """``(e_{m-1}, e_m)`` of every Monte Carlo sample's others, in the linear domain (no underflow, no overflow).

        Newton's identities from the power sums ``p_r = counts @ w^r`` (matrix products) for ``m <= 8``; they
        subtract, so a sample whose ``e_k`` is small against ``p_1^k / k!`` (one weight dominating: relative rounding
        error up to ``1e-16 p_1^k / (k! e_k)``) is recomputed by the subtraction-free product, as is every sample when
        ``m > 8``.
        """
        counts = self._mc_counts()
        w = np.exp(log_x[support])
        n_samples = counts.shape[0]
        if m <= _NEWTON_MAX_DEGREE:
            dense = self._mc_counts_float()
            if support.size != dense.shape[1]:
                dense = dense[:, support]
            power_sums = dense @ (w[:, None] ** np.arange(1, m + 1)[None, :])  # (S, m): p_1..p_m
            e = [np.ones(n_samples)]
            for k in range(1, m + 1):  # k e_k = sum_{i=1..k} (-1)^(i-1) e_{k-i} p_i
                total = np.zeros(n_samples)
                for i in range(1, k + 1):
                    total += (e[k - i] * power_sums[:, i - 1]) if i % 2 else -(e[k - i] * power_sums[:, i - 1])
                e.append(total / k)
            p1 = power_sums[:, 0]
            unsafe = np.zeros(n_samples, dtype=bool)
            for k in (m - 1, m):
                if k > 1:
                    unsafe |= ~(e[k] * math.factorial(k) >= _NEWTON_SAFETY * p1**k)
            e_prev, e_m = e[m - 1], e[m]
            redo = np.flatnonzero(unsafe)
        else:
            e_prev, e_m = np.empty(n_samples), np.empty(n_samples)
            redo = np.arange(n_samples)
        if redo.size:
            by_score = self._mc_counts_by_score()
            max_count = int(counts.max()) if counts.size else 0
            # binomial[t - 1, c] = C(c, t), t = 1..m
            binomial = np.array([[math.comb(c, t) for c in range(max_count + 1)] for t in range(1, m + 1)], dtype=float)
            powers = np.arange(1, m + 1)[:, None]
            poly = np.zeros((m + 1, redo.size))
            poly[0] = 1.0
            whole = redo.size == n_samples
            for position, j in enumerate(support):
                rows = by_score[j] if whole else by_score[j, redo]
                factor = np.take(binomial * w[position] ** powers, rows, axis=1)  # (m, S): C(c_j, t) w_j^t
                for t in range(m, 0, -1):  # poly[t] += sum_{a=1..t} factor[a] poly[t - a], highest t first (in place)
                    acc = poly[t]
                    for a in range(1, t + 1):
                        acc += factor[a - 1] * poly[t - a]
            e_prev, e_m = e_prev.copy(), e_m.copy()
            e_prev[redo], e_m[redo] = poly[m - 1], poly[m]
        return e_prev, e_m

    def _mc_counts_float(self) -> np.ndarray:
        """:meth:`_mc_counts` as float64 (for the power sums' matrix products), cached with it."""
        counts = self._mc_counts()
        key = ("float", id(counts))
        if key not in self._mc_cache:
            self._mc_cache = {k: v for k, v in self._mc_cache.items() if not (isinstance(k, tuple) and k[:1] == ("float",))}
            self._mc_cache[key] = counts.astype(np.float64)
        return self._mc_cache[key]

    def _method(self, epsilon: float, n_select: int) -> str:
        """How ``pi_m(.; epsilon)`` is computed (see the module docstring)."""
        m = n_select
        if math.isinf(epsilon) or (m > 1 and self._at_limit(epsilon, m) and self._n_configurations() <= self.max_configurations):
            return "closed-form"
        if m == 1:
            return "laplace-integral"
        if self._n_configurations() <= self.max_configurations:
            return "enumeration"
        return "monte-carlo"

    def _pi_terms(self, epsilon: float, n_select: int) -> tuple[np.ndarray | None, np.ndarray, str]:
        """``(weights, matrix, method)``: ``pi_m(.; eps) = weights @ matrix`` (``weights=None``: MC rows)."""
        m = n_select
        method = self._method(epsilon, m)
        if method == "closed-form":
            return np.ones(1), self._pi_infinity(m)[None, :], method
        if method == "laplace-integral":
            return np.ones(1), self._pi_laplace(epsilon)[None, :], method
        if method == "enumeration":
            probs, pis = self._pi_enumeration(epsilon, m)
            return probs, pis, method
        return None, self._pi_monte_carlo(epsilon, m), method

    def _mc_sample_functionals(self, epsilon: float, n_select: int, coefficients: np.ndarray) -> np.ndarray:
        """``pi_m``'s Monte Carlo rows times ``coefficients`` (n_scores, c), shape (n_mc_samples, c).

        The same numbers as ``self._pi_monte_carlo(epsilon, n_select) @ coefficients``, computed block by block of
        samples in the linear domain (the (n_mc_samples, n_scores) matrix is never held).
        """
        m = n_select
        log_x = self._log_weights(epsilon, m)
        support = np.flatnonzero(self.f_r > 0)
        if self._at_limit(epsilon, m) or not self._linear_domain(log_x, support, m):
            return self._pi_monte_carlo(epsilon, m) @ coefficients
        e_prev, e_m = self._esp_top_two(log_x, support, m)
        x = np.exp(log_x)[None, :]
        out = np.empty((e_prev.size, coefficients.shape[1]))
        block = max(1, 65_536 // max(x.size, 1))  # rows per block: buffers that stay in cache
        numerator, denominator = np.empty((block, x.size)), np.empty((block, x.size))
        for start in range(0, e_prev.size, block):
            rows = slice(start, start + block)
            size = min(block, e_prev.size - start)
            num, den = numerator[:size], denominator[:size]
            np.multiply(e_prev[rows, None], x, out=num)  # pi = x e_{m-1} / (e_m + x e_{m-1})
            np.add(num, e_m[rows, None], out=den)
            np.divide(num, den, out=num)
            out[rows] = num @ coefficients
        return out

    def _linear_domain(self, log_x: np.ndarray, support: np.ndarray, m: int) -> bool:
        """Whether no product of ``m`` weights underflows and no ``e_k <= C(n - 1, k)`` overflows (then no logs)."""
        others = self.n_applicants - 1
        log_binomial = gammaln(others + 1) - gammaln(m + 1) - gammaln(max(others - m, 0) + 1)
        return m * float(-log_x[support].min()) < 600.0 and log_binomial < 600.0

    def _check_m(self, n_select: Any) -> int:
        return check_n_select(n_select, self.n_applicants, strict=True)

    def _functionals(
        self, epsilon: Any, n_select: int, coefficients: Sequence[np.ndarray], tick: Callable[[], None] | None = None
    ) -> list[Estimate]:
        """``sum_rho pi_m(rho; eps) * c[rho]`` for each epsilon and each ``c`` of ``coefficients``: one ``pi_m`` per epsilon.

        ``tick`` (if given) is called after each epsilon.
        """
        m = self._check_m(n_select)
        eps_arr = check_epsilon_array(epsilon)
        values = np.empty((len(coefficients), eps_arr.size))
        errors = np.zeros((len(coefficients), eps_arr.size))
        stacked = np.column_stack(coefficients)
        with _blas_controller().limit(limits=1, user_api="blas"):  # skinny products: threads contend on a busy machine
            self._evaluate_functionals(eps_arr, m, stacked, values, errors, tick)
        method = self._combined_method(eps_arr, m)
        scalar = np.ndim(epsilon) == 0
        return [Estimate(values[c, 0] if scalar else values[c], errors[c, 0] if scalar else errors[c], method)
                for c in range(len(coefficients))]

    def _combined_method(self, eps_arr: np.ndarray, m: int) -> str:
        """The method reported for several epsilons: the last one that is not the closed form."""
        method = "closed-form"
        for eps in eps_arr:
            how = self._method(float(eps), m)
            if how != "closed-form":
                method = how
        return method

    def _evaluate_functionals(
        self, eps_arr: np.ndarray, m: int, stacked: np.ndarray, values: np.ndarray, errors: np.ndarray,
        tick: Callable[[], None] | None,
    ) -> None:
        """Fill ``values`` and ``errors`` (one column per epsilon) for :meth:`_functionals`."""
        for i, eps in enumerate(eps_arr):
            how = self._method(float(eps), m)
            if how == "monte-carlo":
                weights, matrix = None, np.empty(0)
            else:
                weights, matrix, how = self._pi_terms(float(eps), m)
            if weights is None:
                per_sample = self._mc_sample_functionals(float(eps), m, stacked)
                values[:, i] = per_sample.mean(axis=0)
                errors[:, i] = per_sample.std(axis=0, ddof=1) / math.sqrt(per_sample.shape[0])
            else:
                values[:, i] = weights @ (matrix @ stacked)
            if tick is not None:
                tick()

    def _functional(
        self, epsilon: Any, n_select: int, coefficients: np.ndarray, tick: Callable[[], None] | None = None
    ) -> Estimate:
        """``sum_rho pi_m(rho; eps) * coefficients[rho]`` for each epsilon."""
        return self._functionals(epsilon, n_select, [coefficients], tick)[0]

    def _gap_coefficients(self, notion: str) -> np.ndarray:
        if notion == "equal_opportunity":
            return self.f_qualified[0] - self.f_qualified[1]
        if notion == "demographic_parity":
            return self.f_group[0] - self.f_group[1]
        raise ValueError(f"notion must be 'equal_opportunity' or 'demographic_parity', got {notion!r}.")

    def _accuracy_coefficients(self, n_select: int) -> np.ndarray:
        return self.n_applicants / n_select * self.p_qualified_score

    # ------------------------------------------------------------------ public quantities
    def selection_probability_given_score(self, epsilon: float, n_select: int = 1) -> Estimate:
        """``pi_m(rho; epsilon)``: P(selected | own score = rho), averaged over the others, for every score value.

        Parameters
        ----------
        epsilon : float
            Privacy parameter, ``>= 0`` (``0``: uniform selection; ``inf``: the top-m rule).
        n_select : int, default=1
            Applicants selected, ``1 <= n_select < n_applicants``.

        Returns
        -------
        Estimate
            ``value`` of shape (n_scores,) (in the order of ``score_values``) with its standard error.

        Raises
        ------
        ValueError
            If ``epsilon`` is negative or NaN, or ``n_select`` is out of range.
        TypeError
            If an argument is not a number.
        """
        m = self._check_m(n_select)
        eps = check_epsilon_array(epsilon)
        if eps.size != 1 or np.ndim(epsilon) > 0:
            raise ValueError("epsilon must be one number here; call it once per epsilon.")
        weights, matrix, method = self._pi_terms(float(eps[0]), m)
        if weights is None:
            return Estimate(matrix.mean(axis=0), matrix.std(axis=0, ddof=1) / math.sqrt(matrix.shape[0]), method)
        return Estimate(weights @ matrix, 0.0, method)

    def fairness_gap(
        self, epsilon: Any, n_select: int = 1, notion: str = "equal_opportunity", *, progress: ProgressArgument = None
    ) -> Estimate:
        """Compute the fairness gap gamma(epsilon): P(selected | A=0, Y=1) - P(selected | A=1, Y=1) (Definition 4, eq. 1).

        Parameters
        ----------
        epsilon : float or array-like of float
            Privacy parameter(s), each ``>= 0`` (``0``: uniform selection; ``inf``: the top-m rule).
        n_select : int, default=1
            Applicants selected, ``1 <= n_select < n_applicants``.
        notion : {"equal_opportunity", "demographic_parity"}, default="equal_opportunity"
            ``"demographic_parity"`` gives the appendix's P(selected | A=0) - P(selected | A=1).
        progress : None, bool or callable, default None
            As in :meth:`best_epsilon`: a progress bar over the epsilons once they are projected to take
            over 2 seconds; ``True`` / ``False`` force it; a callable receives ``(done, total)``.

        Returns
        -------
        Estimate
            ``value`` (a float, or an array for array ``epsilon``) with its standard error.

        Raises
        ------
        ValueError
            If ``epsilon`` is negative, NaN, empty or not 1-d, ``n_select`` is out of range, or
            ``notion`` is unknown.
        TypeError
            If ``epsilon`` or ``n_select`` is not numeric.
        """
        coefficients = self._gap_coefficients(notion)
        size = check_epsilon_array(epsilon).size
        with _SearchProgress(progress, f"gamma (n={self.n_applicants}, m={n_select})") as bar:
            bar.expect(size)
            return self._functional(epsilon, n_select, coefficients, bar.tick)

    def accuracy(self, epsilon: Any, n_select: int = 1, *, progress: ProgressArgument = None) -> Estimate:
        """Compute the accuracy theta(epsilon): expected fraction of the m selected who are qualified (Definition 5, eq. 8).

        Parameters
        ----------
        epsilon : float or array-like of float
            Privacy parameter(s), each ``>= 0`` (``inf``: the top-m rule).
        n_select : int, default=1
            Applicants selected, ``1 <= n_select < n_applicants``.
        progress : None, bool or callable, default None
            As in :meth:`fairness_gap`.

        Returns
        -------
        Estimate
            ``value`` (a float, or an array for array ``epsilon``) with its standard error.

        Raises
        ------
        ValueError, TypeError
            As :meth:`fairness_gap`.
        """
        m = self._check_m(n_select)
        size = check_epsilon_array(epsilon).size
        with _SearchProgress(progress, f"theta (n={self.n_applicants}, m={m})") as bar:
            bar.expect(size)
            return self._functional(epsilon, m, self._accuracy_coefficients(m), bar.tick)

    def perfectly_fair_epsilons(
        self, n_select: int = 1, epsilon_max: float = 100.0, *, notion: str = "equal_opportunity", n_grid: int = 120,
        progress: ProgressArgument = None,
    ) -> list[float]:
        """Every epsilon_o in (0, epsilon_max] with gamma(epsilon_o) = 0 (bracketing, then Brent's method).

        Sign changes are bracketed on a log-spaced grid from 1e-3 to ``epsilon_max``; a root
        between two grid points closer than the grid spacing can be missed.

        Parameters
        ----------
        n_select : int, default=1
            Applicants selected, ``1 <= n_select < n_applicants``.
        epsilon_max : float, default=100.0
            Largest epsilon searched (finite, > 1e-3).
        notion : {"equal_opportunity", "demographic_parity"}, default="equal_opportunity"
            Fairness notion (see :meth:`fairness_gap`).
        n_grid : int, default=120
            Grid points (>= 2).
        progress : None, bool or callable, default None
            ``None``: a progress bar (``rich``) once the search is projected to take over 2 seconds;
            ``True``: always; ``False``: never; a callable is called with ``(done, total)`` after every
            evaluation of gamma (the total grows as Brent's method adds evaluations).

        Returns
        -------
        list of float
            The roots found, sorted (empty when gamma never changes sign).

        Raises
        ------
        ValueError, TypeError
            If an argument is out of range or of the wrong type.
        """
        m = self._check_m(n_select)
        epsilon_max = check_positive_finite(epsilon_max, "epsilon_max")
        if epsilon_max <= 1e-3:
            raise ValueError(f"epsilon_max must be > 1e-3 (the search grid starts there), got {epsilon_max!r}.")
        n_grid = check_int(n_grid, "n_grid", minimum=2)
        coef = self._gap_coefficients(notion)
        grid = np.geomspace(1e-3, epsilon_max, n_grid)
        with _SearchProgress(progress, f"perfectly fair epsilons (n={self.n_applicants}, m={m})") as bar:
            bar.expect(n_grid)
            gaps = np.asarray(self._functional(grid, m, coef, bar.tick).value)
            roots = []

            def gap_at(e: float) -> float:
                bar.expect(1)
                return float(self._functional(e, m, coef, bar.tick))

            for k in np.flatnonzero(np.sign(gaps[:-1]) * np.sign(gaps[1:]) < 0):
                roots.append(float(optimize.brentq(gap_at, grid[k], grid[k + 1], xtol=1e-10)))
        roots += [float(grid[k]) for k in np.flatnonzero(gaps == 0)]
        return sorted(roots)

    def best_epsilon(
        self, epsilon_max: float, gamma_max: float, n_select: int = 1, *, n_grid: int = 200,
        progress: ProgressArgument = None,
    ) -> float:
        """Corollary 1: the most accurate epsilon <= epsilon_max with ``|gamma(epsilon)| <= gamma_max``.

        Under Assumption 1 (monotone likelihood ratio) accuracy increases with epsilon, so
        the answer is ``epsilon_max`` when it is fair enough, else the largest epsilon with
        ``|gamma| = gamma_max``.  When Assumption 1 fails a warning is issued and the most
        accurate feasible epsilon on a grid (refined by Brent's method) is returned.

        Parameters
        ----------
        epsilon_max : float
            Largest acceptable epsilon (finite, > 1e-3).
        gamma_max : float
            Largest acceptable ``|gamma|`` (finite, >= 0).
        n_select : int, default=1
            Applicants selected, ``1 <= n_select < n_applicants``.
        n_grid : int, default=200
            Grid points of the search (>= 2).
        progress : None, bool or callable, default None
            ``None``: a progress bar (``rich``) once the search is projected to take over 2 seconds;
            ``True``: always; ``False``: never; a callable is called with ``(done, total)`` after every
            evaluation of ``pi_m`` (one gives both gamma and theta at an epsilon).

        Returns
        -------
        float
            The chosen epsilon.

        Raises
        ------
        ValueError, TypeError
            If an argument is out of range or of the wrong type.

        Warns
        -----
        UserWarning
            When Assumption 1 fails (grid search).
        """
        m = self._check_m(n_select)
        epsilon_max = check_positive_finite(epsilon_max, "epsilon_max")
        if epsilon_max <= 1e-3:
            raise ValueError(f"epsilon_max must be > 1e-3 (the search grid starts there), got {epsilon_max!r}.")
        gamma_max = check_nonnegative_finite(gamma_max, "gamma_max")
        n_grid = check_int(n_grid, "n_grid", minimum=2)
        monotone = self.monotone_likelihood_ratio()
        gap_coef = self._gap_coefficients("equal_opportunity")
        with _SearchProgress(progress, f"best epsilon (n={self.n_applicants}, m={m})") as bar:
            bar.expect(1 if monotone else 0)
            if monotone and abs(float(self._functional(epsilon_max, m, gap_coef, bar.tick))) <= gamma_max:
                return float(epsilon_max)
            grid = np.concatenate([[0.0], np.geomspace(1e-3, epsilon_max, n_grid)])
            bar.expect(grid.size)
            if monotone:
                gap = self._functional(grid, m, gap_coef, bar.tick)
            else:  # gamma and theta from one pi_m per epsilon
                gap, acc_estimate = self._functionals(grid, m, [gap_coef, self._accuracy_coefficients(m)], bar.tick)
            excess = np.abs(np.asarray(gap.value)) - gamma_max
            excess[0] = -gamma_max  # gamma(0) = 0 exactly (uniform selection); rounding must not make it infeasible
            if not monotone:
                warnings.warn("Assumption 1 (monotone likelihood ratio) fails: searching the grid for the most accurate "
                              "feasible epsilon.", stacklevel=2)
                acc = np.asarray(acc_estimate.value)
                feasible = np.flatnonzero(excess <= 0)
                return float(grid[feasible[np.argmax(acc[feasible])]])
            last_feasible = np.flatnonzero(excess <= 0).max()
            if last_feasible == grid.size - 1:
                return float(epsilon_max)
            lo, hi = grid[last_feasible], grid[last_feasible + 1]

            def excess_at(e: float) -> float:
                bar.expect(1)
                return abs(float(self._functional(e, m, gap_coef, bar.tick))) - gamma_max

            if excess_at(lo) > 0 or excess_at(hi) <= 0:  # no sign change to refine (e.g. gamma_max = 0 at lo = 0)
                return float(lo)
            return float(optimize.brentq(excess_at, lo, hi, xtol=1e-10))

    def monotone_likelihood_ratio(self) -> bool:
        """Assumption 1: P(R=rho|Y=1)/P(R=rho|Y=0) is non-decreasing in rho (on the support).

        Returns
        -------
        bool
            Whether Assumption 1 holds.
        """
        p1 = self.joint_pmf[:, 1].sum(axis=0)
        p0 = self.joint_pmf[:, 0].sum(axis=0)
        # cross-multiplied so zero probabilities need no division: p1[j] p0[k] >= p1[k] p0[j] for j > k
        cross = p1[:, None] * p0[None, :] - p1[None, :] * p0[:, None]
        upper = np.triu_indices(p1.size, 1)
        return bool((cross.T[upper] >= -1e-15).all())

    def theorem_conditions(self, n_select: int = 1) -> dict[str, dict[str, Any]]:
        """The sufficient conditions of Theorems 1/5 (perfect fairness), 2 and 7, with their values.

        Parameters
        ----------
        n_select : int, default=1
            Applicants selected, ``1 <= n_select < n_applicants``.

        Returns
        -------
        dict
            Keyed by theorem (``"theorem_1_5"``, ``"theorem_2"``, ``"theorem_7"``,
            ``"assumption_1"``); each entry has the compared values and ``holds``.

        Raises
        ------
        ValueError, TypeError
            If ``n_select`` is not an integer in range.
        """
        m = self._check_m(n_select)
        pi_inf = self._pi_infinity(m)
        z = [float(pi_inf @ self.f_qualified[a]) for a in range(2)]
        r = [float(self.score_values @ self.f_qualified[a]) for a in range(2)]
        holds_1 = (z[0] < z[1] and r[0] > r[1]) or (z[1] < z[0] and r[1] > r[0])
        out: dict[str, dict[str, Any]] = {
            "theorem_1_5": {
                "E[selected at eps=inf | A=a, Y=1]": z,
                "E[R | A=a, Y=1]": r,
                "gamma_inf": z[0] - z[1],
                "holds": holds_1,
            }
        }
        diff = self.f_qualified[0] - self.f_qualified[1]
        out["theorem_2"] = {
            "f0 - f1 strictly increasing": bool((np.diff(diff) > 0).all()),
            "f_R strictly decreasing": bool((np.diff(self.f_r) < 0).all()),
            "f0 - f1 >= 0 above the lowest score": bool((diff[1:] >= 0).all()),
        }
        out["theorem_2"]["holds"] = all(out["theorem_2"].values())
        zd = [float(pi_inf @ self.f_group[a]) for a in range(2)]
        rd = [float(self.score_values @ self.f_group[a]) for a in range(2)]
        out["theorem_7"] = {
            "E[selected at eps=inf | A=a]": zd,
            "E[R | A=a]": rd,
            "holds": (zd[0] < zd[1] and rd[0] > rd[1]) or (zd[1] < zd[0] and rd[1] > rd[0]),
        }
        out["assumption_1"] = {"holds": self.monotone_likelihood_ratio()}
        return out
