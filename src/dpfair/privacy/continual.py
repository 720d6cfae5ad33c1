"""Continual release of running sums: the binary-tree mechanism and the general matrix mechanism.

:class:`ContinualSumMechanism` (in :mod:`dpfair.privacy._continual_matrix`) releases running sums through any
factorization ``A = B C`` of the prefix-sum matrix (:mod:`dpfair.privacy._factorizations`: the square root, a
buffered linear Toeplitz (BLT) with constant state, Honaker's tree estimator, the binary tree), Gaussian
noise, exact zCDP. :class:`BinaryTreeMechanism` below is the binary tree with Gaussian or Laplace noise, kept
as it was (its numbers for a seed unchanged).

Dwork, Naor, Pitassi & Rothblum (2010) and Chan, Shi & Song (2011).  The stream
``x_1, ..., x_T`` (vectors or matrices) is covered by dyadic blocks; block ``[t - 2^i + 1, t]``
is a *node* of the tree.  Each node is noised exactly once, when it is completed, and the
running sum ``S_t = x_1 + ... + x_t`` is released as the sum of the noisy nodes of the
binary decomposition of ``t``: ``popcount(t) <= floor(log2 T) + 1 <= ceil(log2 T) + 1``
nodes.  Each ``x_s`` lies in at most ``n_levels = floor(log2 T) + 1`` nodes (one per
level), so with per-node noise calibrated to ``cost / n_levels`` the whole stream of
releases costs ``cost``:

* Gaussian: per-node ``sigma = sensitivity_L2 * sqrt(n_levels / (2 * rho))``, total ``rho``-zCDP;
* Laplace: per-node ``b = n_levels * sensitivity_L1 / epsilon``, total ``epsilon``-DP.

Only ``O(log T)`` partial sums are kept: memory ``O(log T * d^2)`` for ``d x d`` matrices.

Gram matrices (``symmetric=True``): the noise is a symmetric matrix whose entries on and
above the diagonal are independent; privacy is accounted on the upper triangle, whose
sensitivity is at most the declared Frobenius sensitivity.

The shifted release
-------------------
Private ridge regression (Shariff & Sheffet 2018; the Private-Fair-Greedy paper) needs
the noisy Gram matrix to be positive definite.  ``release(shift=c)`` returns
``S_t + noise + c * I`` (identity on the last two axes).  With
``c = noise_operator_norm_bound(beta)``, ``S_t + noise + c I >= S_t`` in the PSD order
(so the shifted matrix is positive semi-definite and at least as regular as ``S_t``)
with probability at least ``1 - beta`` for that release; ridge regression then uses
``c`` plus any non-private regularizer ``lambda`` the caller adds.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dpfair._validation import (
    _as_float,
    as_finite_array,
    check_epsilon,
    check_int,
    check_rho,
    check_sensitivity,
)
from dpfair.privacy._continual_matrix import ContinualSumMechanism, check_shift
from dpfair.privacy._factorizations import (
    FACTORIZATIONS,
    BLTFactorization,
    Factorization,
    HonakerFactorization,
    SqrtFactorization,
    TreeFactorization,
    blt_parameters,
    get_factorization,
    sqrt_coefficients,
)
from dpfair.privacy.budget import PrivacyBudget, charge, check_budget, inside_charged_release
from dpfair.privacy.leaks import warn_privacy_leak, warn_seeded_noise
from dpfair.privacy.noise import (
    SeededNoise,
    check_noise_room,
    check_random_state,
    get_noise_source,
    one_noise_source,
)

__all__ = [
    "FACTORIZATIONS",
    "BLTFactorization",
    "BinaryTreeMechanism",
    "ContinualSumMechanism",
    "Factorization",
    "HonakerFactorization",
    "SqrtFactorization",
    "TreeFactorization",
    "blt_parameters",
    "get_factorization",
    "sqrt_coefficients",
]


class BinaryTreeMechanism:
    """Private running sums of vectors or matrices over a horizon ``T``.

    Parameters
    ----------
    horizon : int
        Number of stream elements ``T``.
    shape : tuple of int
        Shape of one element (for example ``(d,)`` or ``(d, d)``; a leading batch axis
        such as ``(n_seeds, d, d)`` is allowed, each batch row being its own stream).
    sensitivity : float
        Declared sensitivity of one element: L2 (Frobenius) for Gaussian noise, L1 for
        Laplace noise.  Replacing one element changes each node containing it by at
        most this much.
    rho : float, optional
        Total zCDP budget of the whole stream of releases (Gaussian noise).
    epsilon : float, optional
        Total pure-DP budget (Laplace noise).  Give exactly one of ``rho``/``epsilon``;
        ``inf`` disables noise (exact running sums).
    symmetric : bool, default False
        Symmetric noise on the last two axes (for Gram matrices).
    random_state : None, int, Generator or NoiseSource
        ``None`` for secure noise (slow: ~50 us per entry), a seed for experiments.
    noise : NoiseSource, optional
        A noise source the caller already holds (a policy passes the one its release opened after its
        charge); mutually exclusive with ``random_state``.
    budget : PrivacyBudget, optional
        Charged once, at construction, for the whole horizon, after every argument is
        validated (a refused construction spends nothing).
    label : str, default "binary_tree"
        Ledger label for the charge.

    Attributes
    ----------
    n_levels : int
        ``floor(log2 T) + 1``: nodes per element, and the most nodes in any release.
    node_scale : float
        Per-node noise scale: Gaussian ``sigma`` or Laplace ``b``.
    privacy_spent_ : dict
        ``{"rho": ...}`` or ``{"epsilon": ...}`` for the whole horizon.

    Raises
    ------
    TypeError, ValueError
        For invalid arguments, or a noise scale that is not representable in float64.
    PrivacyBudgetExceededError
        If ``budget`` refuses the charge.

    Warns
    -----
    PrivacyLeakWarning
        With ``rho=inf`` or ``epsilon=inf``: the releases are exact running sums.
    """

    def __init__(
        self,
        horizon: int,
        shape: tuple[int, ...],
        *,
        sensitivity: float,
        rho: float | None = None,
        epsilon: float | None = None,
        symmetric: bool = False,
        random_state: Any = None,
        noise: Any = None,
        budget: PrivacyBudget | None = None,
        label: str = "binary_tree",
    ) -> None:
        random_state = one_noise_source(random_state, noise)
        self.horizon = check_int(horizon, "horizon", minimum=1)
        self.shape = tuple(check_int(s, "shape", minimum=1) for s in np.atleast_1d(shape).tolist())
        self.sensitivity = check_sensitivity(sensitivity)
        if (rho is None) == (epsilon is None):
            raise ValueError("give exactly one of rho (Gaussian noise) or epsilon (Laplace noise).")
        if not isinstance(symmetric, bool | np.bool_):
            raise TypeError(f"symmetric must be True or False, got {type(symmetric).__name__}.")
        self.symmetric = bool(symmetric)
        if self.symmetric and (len(self.shape) < 2 or self.shape[-1] != self.shape[-2]):
            raise ValueError(f"symmetric=True needs square matrices on the last two axes, got shape {self.shape}.")
        self.n_levels = self.horizon.bit_length()
        # validate everything, then charge the budget (Contract 7): a refused call spends nothing
        if rho is not None:
            self.noise_kind = "gaussian"
            cost_name, cost = "rho", check_rho(rho)
            scale = 0.0 if math.isinf(cost) else self.sensitivity * math.sqrt(self.n_levels / 2.0) / math.sqrt(cost)
        else:
            self.noise_kind = "laplace"
            cost_name, cost = "epsilon", check_epsilon(epsilon)
            scale = 0.0 if math.isinf(cost) else self.n_levels * self.sensitivity / cost
        if not math.isinf(cost) and not (0.0 < scale < math.inf):
            raise ValueError(
                f"{cost_name}={cost!r} with sensitivity={self.sensitivity!r} gives a per-node noise scale that "
                f"{'overflows' if scale else 'underflows to 0'} float64; choose a {cost_name} closer to 1 "
                f"or rescale the stream ({cost_name}=inf gives exact sums)."
            )
        if scale:
            # the largest release sums n_levels nodes of noise; keep headroom for it
            check_noise_room(np.zeros(1), scale * self.n_levels, cost_name)
        check_random_state(random_state)
        check_budget(budget)
        try:
            exact = np.zeros((self.n_levels, *self.shape))
            noisy = np.zeros((self.n_levels, *self.shape))
        except (MemoryError, ValueError):
            raise ValueError(f"shape={self.shape} is too large to hold {self.n_levels} partial sums in memory.") from None
        if self.noise_kind == "gaussian":  # the one charge (budget=None: the process-wide ledger), then the noise
            charge(budget, rho=cost, label=label)
        else:
            charge(budget, cost, 0.0, label=label)
        noise = get_noise_source(random_state)
        if not inside_charged_release():
            warn_seeded_noise(noise, cost, "BinaryTreeMechanism")
        if math.isinf(cost):
            warn_privacy_leak(
                f"{cost_name}=inf: BinaryTreeMechanism releases the exact running sums, which carry no privacy "
                "guarantee; use a finite value on real people's data.",
            )
        self.node_scale = scale
        self.privacy_spent_ = {cost_name: cost}
        self._noise = noise
        self._exact = exact
        self._noisy = noisy
        self.t = 0
        if self.symmetric:
            d = self.shape[-1]
            self._iu = np.triu_indices(d)

    @property
    def node_variance(self) -> float:
        """Variance of each noise entry of one node (``sigma**2``, or ``2 b**2`` for Laplace)."""
        s = self.node_scale
        return s * s if self.noise_kind == "gaussian" else 2.0 * s * s

    def release_variance(self, t: int | None = None) -> float:
        """Variance of each entry of the release at time ``t`` (default: now).

        Parameters
        ----------
        t : int, optional
            Time step ``1 <= t <= horizon``; default the current one.

        Returns
        -------
        float
            ``inf`` when the variance exceeds the float64 range (a per-node scale above ~1e154).
        """
        t = self.t if t is None else self._check_t(t)
        return self.nodes_used(t) * self.node_variance

    def _check_t(self, t: Any) -> int:
        t = check_int(t, "t", minimum=1)
        if t > self.horizon:
            raise ValueError(f"t must be <= the horizon ({self.horizon}), got {t}.")
        return t

    @staticmethod
    def nodes_used(t: int) -> int:
        """Number of noisy nodes summed by the release at time ``t``: ``popcount(t)``.

        Parameters
        ----------
        t : int
            Time step ``>= 0``.

        Returns
        -------
        int
            The number of set bits of ``t`` (0 for ``t = 0``).
        """
        return check_int(t, "t", minimum=0).bit_count()

    def _draw(self, value: np.ndarray) -> np.ndarray:
        noise = self._noise
        if type(noise) is SeededNoise:
            # hot path: value is finite and node_scale validated at construction; same stream as
            # SeededNoise.gaussian / .laplace, without re-validating per node
            sample = noise.rng.normal if self.noise_kind == "gaussian" else noise.rng.laplace
            return value + sample(0.0, self.node_scale, size=value.shape)
        draw = noise.gaussian if self.noise_kind == "gaussian" else noise.laplace
        return draw(value, self.node_scale)

    def _noised(self, value: np.ndarray) -> np.ndarray:
        if self.node_scale == 0:
            out = value.copy()
        elif not self.symmetric:
            out = self._draw(value)
        else:
            iu = self._iu
            upper = self._draw(value[..., iu[0], iu[1]])
            out = np.empty_like(value)
            out[..., iu[0], iu[1]] = upper
            out[..., iu[1], iu[0]] = upper
        if not np.isfinite(out).all():
            raise ValueError("element and the noise make the running sum overflow float64; rescale the stream.")
        return out

    def update(self, element: Any) -> None:
        """Add the next stream element ``x_t`` (shape ``self.shape``).

        Parameters
        ----------
        element : array-like of real numbers
            The element, of shape ``self.shape``.

        Raises
        ------
        TypeError, ValueError
            If ``element`` is not finite real numbers of the right shape (or would overflow
            the running sum), or the horizon is used up; the state is unchanged.
        """
        x = as_finite_array(element, "element")
        if x.shape != self.shape:
            raise ValueError(f"element must have shape {self.shape}, got {x.shape}.")
        if self.t >= self.horizon:
            raise ValueError(f"the horizon T={self.horizon} is used up; create a new mechanism.")
        t = self.t + 1
        level = (t & -t).bit_length() - 1  # lowest set bit of t: the node completed at time t
        block = self._exact[:level].sum(axis=0) + x  # an overflow here is caught on the noisy node
        noisy = self._noised(block)  # each node is noised once; may refuse, so before any state change
        self._exact[level] = block
        self._exact[:level] = 0.0
        self._noisy[:level] = 0.0
        self._noisy[level] = noisy
        self.t = t

    def release(self, shift: float = 0.0) -> np.ndarray:
        """Noisy running sum ``S_t + noise`` (plus ``shift * I`` on the last two axes).

        Uses the ``popcount(t)`` nodes of the binary decomposition of ``t``.

        Parameters
        ----------
        shift : float, default 0.0
            Finite real number added to the diagonal of the last two (square) axes.

        Returns
        -------
        ndarray of shape ``self.shape``
            A new array: the sum of the noisy nodes for the current ``t``, with ``shift``
            added to the diagonal of the last two axes.

        Raises
        ------
        TypeError, ValueError
            If ``shift`` is not a finite real number (or is non-zero for non-square
            elements), or nothing has been added yet.
        """
        shift = self._check_shift(shift)
        if self.t == 0:
            raise ValueError("nothing to release yet: call update() first.")
        levels = [i for i in range(self.n_levels) if (self.t >> i) & 1]
        out = self._noisy[levels].sum(axis=0)
        if shift:
            d = self.shape[-1]
            out[..., np.arange(d), np.arange(d)] += shift
        if not np.isfinite(out).all():
            raise ValueError("the running sum (plus shift) overflows float64; rescale the stream or the shift.")
        return out

    def _check_shift(self, shift: Any) -> float:
        return check_shift(shift, self.shape)

    def step(self, element: Any, shift: float = 0.0) -> np.ndarray:
        """``update(element)`` then ``release(shift)``.

        Parameters
        ----------
        element : array-like of real numbers
            The next element, of shape ``self.shape``.
        shift : float, default 0.0
            As in :meth:`release` (checked before the element is added).

        Returns
        -------
        ndarray of shape ``self.shape``
            The release after adding ``element``, as returned by :meth:`release`.
        """
        self._check_shift(shift)
        self.update(element)
        return self.release(shift)

    def noise_operator_norm_bound(self, beta: float, t: int | None = None) -> float:
        """A bound on the operator norm of one release's noise, holding w.p. ``>= 1 - beta``.

        Gaussian, symmetric ``d x d`` noise only.  The noise is a symmetric matrix ``W``
        whose independent entries on and above the diagonal have variance
        ``s**2 = release_variance(t)``.  ``||W||_op <= ||W||_F``, ``E||W||_F <= s*d``
        (Jensen), and ``||W||_F`` is ``sqrt(2)*s``-Lipschitz in the standard Gaussian
        entries, so Gaussian concentration gives
        ``||W||_op <= s * (d + 2*sqrt(ln(1/beta)))`` with probability ``>= 1 - beta``.
        Conservative (by about ``sqrt(d)/2``) but rigorous; use it as the ``shift``.

        Parameters
        ----------
        beta : float
            Failure probability in (0, 1).
        t : int, optional
            Time step ``1 <= t <= horizon``; default the current one (1 before any update).

        Returns
        -------
        float
            ``s * (d + 2*sqrt(ln(1/beta)))`` with ``s**2 = release_variance(t)`` and ``d`` the
            size of the last axis.

        Raises
        ------
        TypeError, ValueError
            For invalid arguments, or noise that is not Gaussian and symmetric.
        """
        if not (self.noise_kind == "gaussian" and self.symmetric):
            raise ValueError("noise_operator_norm_bound applies to Gaussian symmetric noise only.")
        beta = _as_float(beta, "beta")
        if not (0.0 < beta < 1.0):
            raise ValueError(f"beta must be in (0, 1), got {beta!r}.")
        t = max(self.t, 1) if t is None else self._check_t(t)
        s = math.sqrt(self.release_variance(t))
        d = self.shape[-1]
        return s * (d + 2.0 * math.sqrt(math.log(1.0 / beta)))
