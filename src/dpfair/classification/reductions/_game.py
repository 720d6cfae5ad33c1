"""The two-player game of the DP oracle learner: constraint violations, their sensitivities and noisy releases,
the Lagrangian costs the oracle minimizes, and the game state (Jagielski et al. 2019, Algorithm 3 with
Subroutine 2; Agarwal et al. 2018 for the reduction).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy.special import logsumexp

from dpfair.classification.constraints import EqualizedOdds, FairnessConstraint
from dpfair.privacy.mechanisms import exponential_mechanism, laplace_mechanism
from dpfair.privacy.noise import NoiseSource


# ---------------------------------------------------------------------------- the private players
def violations(
    positive_counts: np.ndarray, denominators: np.ndarray, gamma: float, *, reference: str = "group0",
    label_counts: np.ndarray | None = None, constraint: FairnessConstraint | None = None,
) -> np.ndarray:
    """Exact violation vector ``r^`` of Section 4 from per-cell counts (:meth:`FairnessConstraint.violations`).

    ``constraint=None``: equalized odds with ``reference``, shape ``(K / 4, 4)``, columns
    ``FP_a - FP_ref - gamma, FP_ref - FP_a - gamma, TP_a - TP_ref - gamma, TP_ref - TP_a - gamma``.
    """
    constraint = _constraint(constraint, reference)
    return constraint.violations(positive_counts, denominators, gamma, label_counts=label_counts)


def _constraint(constraint: FairnessConstraint | None, reference: str) -> FairnessConstraint:
    return EqualizedOdds(reference) if constraint is None else constraint


def auditor_sensitivity(
    denominators: np.ndarray, *, reference: str = "group0", label_counts: np.ndarray | None = None, aware: bool = False,
    constraint: FairnessConstraint | None = None,
) -> float:
    """L1 sensitivity of ``r^`` to one row's group label (Lemma C.1 with public denominators; the proof is
    :meth:`FairnessConstraint.auditor_sensitivity`'s).  ``constraint=None``: equalized odds with ``reference``:
    ``2|A| / n_min`` against group 0, ``4 / n_min`` (``+ 2|A| / min_y n_y`` A-aware) against the overall rate.
    """
    return _constraint(constraint, reference).auditor_sensitivity(denominators, label_counts=label_counts, aware=aware)


def noisy_violations(
    positive_counts: np.ndarray, denominators: np.ndarray, gamma: float, epsilon_step: float, noise: NoiseSource,
    *, reference: str = "group0", label_counts: np.ndarray | None = None, aware: bool = False,
    constraint: FairnessConstraint | None = None,
) -> np.ndarray:
    """The Auditor's release ``r~ = r^ + W`` (Algorithm 3, lines 6-7), ``epsilon_step``-DP in the group labels.

    ``W ~ Lap(sensitivity / epsilon_step)`` i.i.d. (:func:`auditor_sensitivity`); with the paper's
    ``epsilon_step = eps / (4 sqrt(T ln(1/delta)))`` this is Algorithm 3's scale
    ``8|A| sqrt(T ln(1/delta)) / (n_min eps)``.
    """
    constraint = _constraint(constraint, reference)
    exact = constraint.violations(positive_counts, denominators, gamma, label_counts=label_counts)
    if math.isinf(epsilon_step):
        return exact
    sensitivity = constraint.auditor_sensitivity(denominators, label_counts=label_counts, aware=aware)
    return laplace_mechanism(exact, sensitivity=sensitivity, epsilon=epsilon_step, noise=noise)


def cell_costs(
    lam: np.ndarray, proportions: np.ndarray, *, reference: str = "group0", label_proportions: np.ndarray | None = None,
    constraint: FairnessConstraint | None = None,
) -> np.ndarray:
    """Subroutine 2: the lambda part of ``C_1`` for every (group, label) cell, shape ``(|A|, 2)``
    (:meth:`FairnessConstraint.cell_costs`; ``constraint=None``: equalized odds with ``reference``).

    Equalized odds against group 0: cell ``(a != 0, y)`` costs ``(lam_(a,y,+) - lam_(a,y,-)) / q~_ay`` and cell
    ``(0, y)`` ``-sum_a (lam_(a,y,+) - lam_(a,y,-)) / q~_0y``; against the overall rate (``label_proportions[y]``
    the public share of label ``y``) cell ``(a, y)`` costs
    ``(lam_(a,y,+) - lam_(a,y,-)) / q~_ay - sum_b (lam_(b,y,+) - lam_(b,y,-)) / p_y``.
    """
    return _constraint(constraint, reference).cell_costs(lam, proportions, label_proportions=label_proportions)


def oracle_sensitivity(
    bound_B: float, proportions: np.ndarray, l1_row_bound: float, aware: bool, *, reference: str = "group0",
    constraint: FairnessConstraint | None = None,
) -> float:
    """L1 sensitivity of the Learner's ``Z^T C_1`` to one row's group label (Section 5 oracle).

    Derivation (Subroutine 2 with ``||lambda||_1 <= B``, Algorithm 3 line 4): a row's cost is
    ``C_1 = 1{y != 1} + tau_(A, y)`` (:func:`cell_costs`; the cost of any other row does not change,
    because the proportions are public).  Against group 0, ``|tau| <= B / q~_min`` and changing the row's
    group changes ``tau`` by at most ``2B / q~_min``; against the overall rate the shared term cancels and
    ``tau`` changes by at most ``B / q~_min`` (while ``|tau| <= 2B / q~_min``).  A-blind (``Z = [X, 1]``):
    ``Z^T C_1`` changes by ``z_i * delta tau``, L1 norm at most ``(||x||_1 + 1) delta tau``.  A-aware
    (``Z = [X, onehot(A)]``): the ``X`` part changes by ``||x||_1 delta tau`` and the one-hot part moves
    ``C_1`` (``|C_1| <= 1 + max |tau|``) from one coordinate to another.  ``||x||_1`` is bounded by the
    declared bound (``x_l1_bound``, or ``sqrt(d) x_norm_bound``).  Other constraints: their
    :meth:`FairnessConstraint.cost_bounds` (``proportions`` of shape ``(|A|, 2)`` then).
    """
    change, largest = _constraint(constraint, reference).cost_bounds(bound_B, proportions)
    if aware:
        return change * l1_row_bound + 2.0 * (1.0 + largest)
    return change * (l1_row_bound + 1.0)


def aware_static_sensitivity(l1_row_bound: float) -> float:
    """L1 sensitivity of the A-aware one-off release (upper triangle of ``Z^T Z``, and ``Z^T C_0``).

    ``Z = [X, onehot(A)]``; changing one row's group moves ``x_i`` from one column of the
    X-by-one-hot block to another (``2 ||x||_1``), one diagonal one-hot count down and one up (2),
    and ``C_0 = 1{y != 0}`` (in ``[0, 1]``) from one one-hot coordinate of ``Z^T C_0`` to another (2).
    """
    return 2.0 * l1_row_bound + 4.0


def noisy_cost_moment(
    Z: np.ndarray, costs: np.ndarray, sensitivity: float, epsilon_step: float, noise: NoiseSource
) -> np.ndarray:
    """The Learner's release ``Z^T C_1 + Lap(sensitivity / epsilon_step)`` (Section 5), ``epsilon_step``-DP."""
    exact = Z.T @ costs
    return _noisy_moment(exact, sensitivity, epsilon_step, noise)


def _noisy_moment(exact: np.ndarray, sensitivity: float, epsilon_step: float, noise: NoiseSource) -> np.ndarray:
    if math.isinf(epsilon_step):
        return exact
    return laplace_mechanism(exact, sensitivity=sensitivity, epsilon=epsilon_step, noise=noise)


def _lambda(theta: np.ndarray, bound_B: float) -> np.ndarray:
    """Algorithm 3, line 3: ``lam_k = B exp(theta_k) / (1 + sum_k' exp(theta_k'))`` (stable)."""
    flat = theta.ravel()
    log_norm = logsumexp(np.concatenate([[0.0], flat]))
    return bound_B * np.exp(theta - log_norm)


def _psd_inverse(gram: np.ndarray, *, exact: bool = False) -> np.ndarray:
    """Inverse of a Gram matrix: the pseudo-inverse of an exact one (one-hot columns make it singular), else
    the inverse after projecting the noisy matrix onto well-conditioned PSD matrices (post-processing)."""
    gram = 0.5 * (gram + gram.T)
    values, vectors = np.linalg.eigh(gram)
    top = max(float(np.abs(values).max()), 1e-300)
    if exact:
        keep = values > 1e-10 * top
        inverse = np.zeros_like(values)
        inverse[keep] = 1.0 / values[keep]
        return (vectors * inverse) @ vectors.T
    floor = max(1e-8 * max(top, 1.0), 1e-12)
    values = np.maximum(values, floor)
    return (vectors / values) @ vectors.T


# ---------------------------------------------------------------------------- estimator
class _Game:
    """Exact in-sample quantities of the game (error, positive counts, violations, duality gap)."""

    def __init__(self, y01: np.ndarray, cell: np.ndarray, n_groups: int, denominators: np.ndarray,
                 label_counts: np.ndarray, gamma: float, reference: str,
                 constraint: FairnessConstraint | None = None, keep: np.ndarray | None = None) -> None:
        self.sign = 1.0 - 2.0 * y01  # error(h) = (sum_i h_i (1 - 2 y_i) + n_1) / m
        self.n_pos = float(y01.sum())
        self.cell, self.n_groups, self.denominators = cell, n_groups, denominators
        self.label_counts, self.gamma, self.reference = label_counts, gamma, reference
        self.constraint = _constraint(constraint, reference)
        self.keep = keep  # the constraints kept (dpfair.classification._group_evidence); None: all

    def violations(self, positives: np.ndarray) -> np.ndarray:
        """The violations of a (mixture of) hypotheses from its positive counts; a dropped constraint reads ``-gamma``."""
        r = self.constraint.violations(positives, self.denominators, self.gamma, label_counts=self.label_counts)
        return r if self.keep is None else np.where(self.keep, r, -self.gamma)

    def positives(self, h: np.ndarray) -> np.ndarray:
        return np.bincount(self.cell, weights=h, minlength=2 * self.n_groups).reshape(self.n_groups, 2)

    def error(self, h: np.ndarray) -> float:
        return float((h @ self.sign + self.n_pos) / h.size)

    def lagrangian(self, h: np.ndarray, lam: np.ndarray) -> float:
        r = self.violations(self.positives(h))
        return self.error(h) + float((lam * r).sum())

    def gap(self, q: np.ndarray, lam: np.ndarray, bound_B: float, best_response: Any) -> float:
        """Duality gap ``max(L_high - L, L - L_low)`` of ``(Q, lam)`` (Agarwal et al.; fairlearn's ``eval_gap``)."""
        return self.gap_of(self.error(q), self.positives(q), lam, bound_B, best_response)

    def gap_of(self, err: float, positives: np.ndarray, lam: np.ndarray, bound_B: float, best_response: Any) -> float:
        """:meth:`gap` of a mixture given by its error and its positive counts per cell."""
        r = self.violations(positives)
        value = err + float((lam * r).sum())
        high = err + bound_B * max(0.0, float(r.max()))  # the auditor's best response
        _, h = best_response(lam, math.inf)  # the learner's best response (and the two constant classifiers)
        low = min(self.lagrangian(h, lam), self.lagrangian(np.zeros_like(h), lam), self.lagrangian(np.ones_like(h), lam))
        return max(high - value, value - low)


#: Largest |primal value| the private prefix choice scores (larger ones, e.g. with a huge ``bound_B``, are clipped).
_MAX_UTILITY = 1e200


def _private_prefix_choice(values: np.ndarray, n_rows: int, epsilon_selection: float, noise: NoiseSource) -> int:
    """The A-aware best prefix ``t`` (1-based), chosen by the exponential mechanism on ``-value_t``: ``epsilon_selection``-DP.

    ``value_t = err(Q_t) + B max(0, max_k r~_k(Q_t) + margin)``: given the released ``r~`` and weights, only
    ``err(Q_t)`` (the mean training error of the first ``t`` A-aware best responses ``h_s(x, a)``) reads ``A``,
    and changing one row's group changes each ``err(h_s)``, hence every ``err(Q_t)``, by at most ``1 / m``
    (``m`` public): the utility's sensitivity.  Values are clipped to a finite range first (a 1-Lipschitz map:
    the sensitivity holds), so the release cannot fail after the charge.
    """
    utilities = -np.clip(np.nan_to_num(values, nan=_MAX_UTILITY, posinf=_MAX_UTILITY), -_MAX_UTILITY, _MAX_UTILITY)
    return exponential_mechanism(utilities, sensitivity=1.0 / n_rows, epsilon=epsilon_selection, noise=noise) + 1
