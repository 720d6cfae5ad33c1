"""Privacy budgets that refuse to be overspent, with a ledger of every charge.

How charges compose
-------------------
A :class:`PrivacyBudget` holds a total ``(epsilon, delta)``.  Charges are of two kinds:

* approximate-DP charges ``(epsilon_i, delta_i)`` (pure DP is ``delta_i = 0``), composed
  by the basic composition theorem (sums);
* zCDP charges ``rho_j``, composed additively (Bun & Steinke 2016) and converted to
  ``(epsilon, delta)`` *once*, with the tight conversion, using all of the ``delta`` that
  the approximate-DP charges leave.

The total spent is therefore
``(sum eps_i + eps_zCDP(sum rho_j, delta - sum delta_i), delta)`` when there are zCDP
charges and ``(sum eps_i, sum delta_i)`` otherwise.  A charge that would push the total
above the budget raises :class:`PrivacyBudgetExceededError` and changes nothing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from dpfair._validation import check_delta, check_epsilon, check_rho
from dpfair.privacy.accounting import zcdp_to_approx_dp

__all__ = ["LedgerEntry", "PrivacyBudget", "PrivacyBudgetExceededError"]

_TOL = 1e-12


class PrivacyBudgetExceededError(RuntimeError):
    """Raised when a charge would exceed a :class:`PrivacyBudget`; the budget is unchanged."""


@dataclass(frozen=True)
class LedgerEntry:
    """One charge against a budget.

    Attributes
    ----------
    label : str
        What was released (free text given by the caller).
    kind : {"approx_dp", "zcdp"}
        How the charge composes.
    epsilon, delta : float
        For ``"approx_dp"`` charges; zero for zCDP charges.
    rho : float
        For ``"zcdp"`` charges; zero otherwise.
    """

    label: str
    kind: str
    epsilon: float = 0.0
    delta: float = 0.0
    rho: float = 0.0


class PrivacyBudget:
    """A total ``(epsilon, delta)`` privacy budget with a ledger.

    Parameters
    ----------
    epsilon : float
        Total epsilon (> 0; ``inf`` means no privacy constraint).
    delta : float, default 0.0
        Total delta in [0, 1).

    Examples
    --------
    >>> budget = PrivacyBudget(1.0, 1e-6)
    >>> budget.spend(0.5, label="histogram")
    >>> budget.remaining()
    (0.5, 1e-06)
    """

    def __init__(self, epsilon: float, delta: float = 0.0) -> None:
        self.epsilon = check_epsilon(epsilon)
        self.delta = check_delta(delta)
        self._ledger: list[LedgerEntry] = []

    # ------------------------------------------------------------------ totals
    @staticmethod
    def _total(entries: list[LedgerEntry], delta_budget: float) -> tuple[float, float]:
        eps = sum(e.epsilon for e in entries if e.kind == "approx_dp")
        delta = sum(e.delta for e in entries if e.kind == "approx_dp")
        rho = sum(e.rho for e in entries if e.kind == "zcdp")
        if rho > 0:
            delta_left = delta_budget - delta
            if math.isinf(rho) or delta_left <= 0:
                return math.inf, delta_budget
            eps += zcdp_to_approx_dp(rho, delta_left)
            delta = delta_budget
        return eps, delta

    def spent(self) -> tuple[float, float]:
        """Total ``(epsilon, delta)`` spent so far (see the module docstring for the rule)."""
        return self._total(self._ledger, self.delta)

    def remaining(self) -> tuple[float, float]:
        """``(epsilon, delta)`` still available: the budget minus :meth:`spent`."""
        eps, delta = self.spent()
        return max(0.0, self.epsilon - eps), max(0.0, self.delta - delta)

    @property
    def ledger(self) -> tuple[LedgerEntry, ...]:
        """Every charge, in order (read-only)."""
        return tuple(self._ledger)

    def spent_by_label(self) -> dict[str, dict[str, float]]:
        """Sum of ``epsilon``, ``delta`` and ``rho`` charged under each label."""
        out: dict[str, dict[str, float]] = {}
        for e in self._ledger:
            row = out.setdefault(e.label, {"epsilon": 0.0, "delta": 0.0, "rho": 0.0})
            row["epsilon"] += e.epsilon
            row["delta"] += e.delta
            row["rho"] += e.rho
        return out

    # ------------------------------------------------------------------ charges
    def _charge(self, entry: LedgerEntry) -> None:
        candidate = [*self._ledger, entry]
        eps, delta = self._total(candidate, self.delta)
        over_eps = eps > self.epsilon * (1 + _TOL) + _TOL if math.isfinite(self.epsilon) else False
        over_delta = delta > self.delta * (1 + _TOL) + _TOL * 1e-3
        if over_eps or over_delta:
            spent_eps, spent_delta = self.spent()
            raise PrivacyBudgetExceededError(
                f"charge {entry.label!r} would spend (epsilon={eps:.6g}, delta={delta:.3g}) in total, "
                f"over the budget (epsilon={self.epsilon:.6g}, delta={self.delta:.3g}); "
                f"already spent (epsilon={spent_eps:.6g}, delta={spent_delta:.3g}). "
                "Lower the charge or create a larger budget."
            )
        self._ledger.append(entry)

    def spend(self, epsilon: float, delta: float = 0.0, *, label: str = "") -> None:
        """Charge an ``(epsilon, delta)``-DP release.

        Raises
        ------
        PrivacyBudgetExceededError
            If the total would exceed the budget; the ledger is left unchanged.
        """
        eps = check_epsilon(epsilon)
        d = check_delta(delta)
        self._charge(LedgerEntry(label=str(label), kind="approx_dp", epsilon=eps, delta=d))

    def spend_zcdp(self, rho: float, *, label: str = "") -> None:
        """Charge a ``rho``-zCDP release (needs ``delta > 0`` in the budget).

        Raises
        ------
        PrivacyBudgetExceededError
            If the total would exceed the budget; the ledger is left unchanged.
        """
        r = check_rho(rho)
        self._charge(LedgerEntry(label=str(label), kind="zcdp", rho=r))

    def __repr__(self) -> str:
        eps, delta = self.spent()
        return (
            f"PrivacyBudget(epsilon={self.epsilon!r}, delta={self.delta!r}; "
            f"spent epsilon={eps:.6g}, delta={delta:.3g} in {len(self._ledger)} charge(s))"
        )
