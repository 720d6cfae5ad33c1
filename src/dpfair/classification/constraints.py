"""Fairness constraints of the DP reduction (:class:`~dpfair.classification.DPExponentiatedGradient`) as objects.

The idea of fairlearn's ``Moment`` (``fairlearn.reductions.UtilityParity``): a constraint owns its violations, the
Lagrangian costs it puts on every row, and (here) the sensitivity of its violations to one row's sensitive attribute,
so that the private game of Jagielski et al. (2019, Algorithm 3) does not know which constraint it plays.

Every constraint here is a *rate parity*: an **event** is a set of labels (equalized odds: ``{y = 0}`` and ``{y = 1}``;
demographic parity: ``{y = 0, 1}``, all rows; true-positive-rate parity: ``{y = 1}``), the rate of group ``a`` on
event ``e`` is ``P_(a,e) / N_(a,e)`` (positives ``h = 1`` over rows of group ``a`` whose label is in ``e``), and for
every constrained group and event there are two constraints ``+-(rate_(a,e) - rate_(ref,e)) - gamma <= 0``, the
reference being group 0 (the paper's Definition 2.1) or all rows of the event (fairlearn's ``overall``).  The game
keeps its statistics per (group, label) cell (``positives[a, y]``, ``denominators[a, y]``, shape ``(|A|, 2)``); an
event's statistics are sums of cells, so a new rate parity is one class naming its events (see
:class:`TruePositiveRateParity`)::

    class FalsePositiveRateParity(FairnessConstraint):
        events = ((0,),)

Neighbouring relation (the estimator's): change one training row's sensitive attribute; ``X``, ``y``, the number of
rows and the released (public) denominators are fixed.  The violation vector ``r`` has shape ``(rows, 2 E)``, ``E``
the number of events, columns ``(e_0, +), (e_0, -), (e_1, +), ...``; equalized odds reproduces Section 4's
``FP+, FP-, TP+, TP-`` order.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

__all__ = [
    "CONSTRAINTS",
    "DemographicParity",
    "EqualizedOdds",
    "FairnessConstraint",
    "TruePositiveRateParity",
    "make_constraint",
]

REFERENCES = ("group0", "overall")


class FairnessConstraint:
    """Base class of the rate-parity constraints of the private reduction (fairlearn's ``Moment`` idea).

    A subclass names its ``events`` (a tuple of disjoint tuples of labels, each label in at most one event); the
    base class derives the number of constraints, the violations, the auditor's sensitivity, the oracle's per-cell
    Lagrangian costs and their bounds from them.  A constraint of another form overrides the methods.

    Parameters
    ----------
    reference : {"group0", "overall"}, default "group0"
        ``"group0"``: every other group's rate against group 0's (the paper's Definition 2.1, ``2 E (|A|-1)``
        constraints).  ``"overall"``: every group's rate against the rate of all rows of the event (fairlearn's
        ``UtilityParity``, ``2 E |A|`` constraints).

    Attributes
    ----------
    events : tuple of tuple of int
        Class attribute: the events, each a tuple of the labels (0, 1) it pools.  Set by every subclass.
    name : str
        Class attribute: the name that ``DPExponentiatedGradient(constraints=...)`` accepts (subclasses in
        ``CONSTRAINTS``).

    Raises
    ------
    ValueError
        If ``reference`` is not one of the two.
    """

    # the events, each a tuple of the labels (0, 1) it pools; set by every subclass
    events: ClassVar[tuple[tuple[int, ...], ...]] = ()
    # the name DPExponentiatedGradient(constraints=...) accepts
    name: ClassVar[str] = ""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        labels = [label for event in cls.events for label in event]
        if not cls.events or any(label not in (0, 1) for label in labels) or len(set(labels)) != len(labels):
            raise TypeError(
                f"{cls.__name__}.events must be a non-empty tuple of disjoint tuples of the labels 0 and 1, "
                f"e.g. ((0,), (1,)); got {cls.events!r}."
            )
        # E[y, e] = 1 when label y is in event e; None when the events are the labels themselves (no pooling)
        matrix = np.array([[1.0 if y in event else 0.0 for event in cls.events] for y in (0, 1)])
        cls._event_matrix = None if cls.events == ((0,), (1,)) else matrix

    _event_matrix: ClassVar[np.ndarray | None] = None

    def __init__(self, reference: str = "group0") -> None:
        if reference not in REFERENCES:
            raise ValueError(f"reference must be one of {REFERENCES}, got {reference!r}.")
        self.reference = reference

    def __repr__(self) -> str:
        return f"{type(self).__name__}(reference={self.reference!r})"

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other.reference == self.reference  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self), self.reference))

    # ------------------------------------------------------------------ shapes
    def n_constraints(self, n_groups: int) -> int:
        """Number ``K`` of constraints.

        Parameters
        ----------
        n_groups : int
            Number of declared groups ``|A|``.

        Returns
        -------
        int
            ``2 E (|A| - 1)`` against group 0, ``2 E |A|`` against the overall rate.
        """
        rows = n_groups - 1 if self.reference == "group0" else n_groups
        return 2 * len(self.events) * rows

    def violation_shape(self, n_groups: int) -> tuple[int, int]:
        """Shape of the violation vector and of the multipliers ``lambda``.

        Parameters
        ----------
        n_groups : int
            Number of declared groups.

        Returns
        -------
        tuple of int
            ``(rows, 2 E)``: one row per constrained group, columns ``(e, +), (e, -)`` for every event ``e``.
        """
        return self.n_constraints(n_groups) // (2 * len(self.events)), 2 * len(self.events)

    # ------------------------------------------------------------------ events from cells
    def _to_events(self, cells: np.ndarray) -> np.ndarray:
        """Sum (group, label) cell statistics (last axis: the label) into event statistics (last axis: the event)."""
        return cells if self._event_matrix is None else cells @ self._event_matrix

    def _from_events(self, event_costs: np.ndarray) -> np.ndarray:
        """Per-event costs of shape ``(|A|, E)`` to per-cell costs ``(|A|, 2)`` (a label outside every event: 0)."""
        return event_costs if self._event_matrix is None else event_costs @ self._event_matrix.T

    # ------------------------------------------------------------------ the Auditor
    def violations(
        self, positive_counts: np.ndarray, denominators: np.ndarray, gamma: float, *, label_counts: np.ndarray | None = None
    ) -> np.ndarray:
        """Exact violation vector ``r`` (Section 4) from per-cell positive counts and public denominators.

        Parameters
        ----------
        positive_counts : ndarray of shape (n_groups, 2)
            ``positive_counts[a, y]``: rows of group ``a`` and label ``y`` with ``h = 1`` (expected, for a mixture).
        denominators : ndarray of shape (n_groups, 2)
            Public (released) number of rows of every cell.
        gamma : float
            The allowed violation.
        label_counts : ndarray of shape (2,) or None, default None
            Public number of rows of each label: the denominator of the overall rate (``reference="overall"``).

        Returns
        -------
        ndarray of shape ``violation_shape(n_groups)``
            ``+-(rate_(a,e) - rate_(ref,e)) - gamma``.

        Raises
        ------
        ValueError
            If ``reference="overall"`` and ``label_counts`` is missing.
        """
        rates = self._to_events(positive_counts) / self._to_events(denominators)
        if self.reference == "group0":
            diff = rates[1:] - rates[0]
        else:
            if label_counts is None:
                raise ValueError("label_counts is required with reference='overall': pass the rows of each label.")
            diff = rates - self._to_events(positive_counts.sum(axis=0)) / self._to_events(label_counts)
        return np.stack([diff, -diff], axis=2).reshape(diff.shape[0], 2 * diff.shape[1]) - gamma

    def auditor_sensitivity(
        self, denominators: np.ndarray, *, label_counts: np.ndarray | None = None, aware: bool = False
    ) -> float:
        """L1 sensitivity of :meth:`violations` to one row's group label, the denominators being public.

        Proof.  Let the row have label ``y`` and move from group ``a`` to ``a'``.  Only the positive counts of cells
        ``(a, y)`` and ``(a', y)`` can change, each by at most 1 (``h`` of the row is in ``[0, 1]``; an A-aware
        ``h(x, a)`` may differ between the groups, still in ``[0, 1]``), so only the event ``e`` containing ``y``
        (at most one: events are disjoint; none, no change) is touched, and ``rate_(a,e)``, ``rate_(a',e)`` change by
        at most ``1 / n_min`` each, ``n_min`` the smallest event denominator.  Against group 0 a group ``b != 0``
        appears in the two entries ``+-(rate_(b,e) - rate_(0,e))`` and group 0 in ``2(|A|-1)``; the largest change is
        ``2 / n_min + 2(|A|-1) / n_min = 2|A| / n_min`` (one of ``a, a'`` is group 0, or ``4 / n_min <= 2|A| / n_min``
        otherwise).  It is attained when the denominators are equal and a row with ``h = 1`` leaves or enters group
        0.  Against the overall rate each group appears in two entries: ``4 / n_min``; the overall rate
        ``sum_a P_(a,e) / L_e`` (``L_e`` the public rows of the event) does not move for an A-blind ``h`` (the row
        stays in the event), and for an A-aware one moves by at most ``1 / L_e`` in its ``2|A|`` entries:
        ``+ 2|A| / min_e L_e``.  (Lemma C.1 has ``min q_ay m - 1`` for ``n_min``; ours is public, so no ``-1``.)

        Parameters
        ----------
        denominators : ndarray of shape (n_groups, 2)
            Public number of rows of every cell.
        label_counts : ndarray of shape (2,) or None, default None
            Public number of rows of each label (needed with ``reference="overall"`` and ``aware``).
        aware : bool, default False
            Whether the hypotheses read the group (``h(x, a)``).

        Returns
        -------
        float
            The L1 sensitivity.
        """
        events = self._to_events(denominators)
        n_min = float(events.min())
        if self.reference == "group0":
            return 2.0 * denominators.shape[0] / n_min
        out = 4.0 / n_min
        if aware:
            out += 2.0 * denominators.shape[0] / float(np.min(self._to_events(np.asarray(label_counts, dtype=float))))
        return out

    def violation_sd(self, count_sd: float, denominators: np.ndarray) -> float:
        """Bound the standard deviation of one violation entry under noisy cell counts.

        Every cell's positive count is released with independent noise of standard deviation ``count_sd`` (the
        statistics oracle's Auditor).  An event pools ``k`` labels, so its positive count has noise sd
        ``sqrt(k) count_sd``; an entry ``rate_(a,e) - rate_(ref,e)`` then has sd at most
        ``sqrt(k) count_sd (1 / N_a + 1 / N_ref)``.

        Parameters
        ----------
        count_sd : float
            Standard deviation of one released cell count.
        denominators : ndarray of shape (n_groups, 2)
            Public number of rows of every cell.

        Returns
        -------
        float
            ``2 sqrt(k_max) count_sd / N_min``.
        """
        pooled = math.sqrt(max(len(event) for event in self.events))
        return 2.0 * pooled * count_sd / float(self._to_events(denominators).min())

    # ------------------------------------------------------------------ the Learner
    def cell_costs(
        self, lam: np.ndarray, proportions: np.ndarray, *, label_proportions: np.ndarray | None = None
    ) -> np.ndarray:
        """Subroutine 2: the ``lambda`` part of the cost ``C_1`` of predicting 1, for every (group, label) cell.

        ``sum_k lambda_k r_k(h) = (1 / m) sum_i h_i tau_(a_i, y_i)`` with, for event ``e`` and
        ``net_(a,e) = lambda_(a,e,+) - lambda_(a,e,-)``: against group 0, ``tau = net_(a,e) / q_(a,e)`` for
        ``a != 0`` and ``-sum_b net_(b,e) / q_(0,e)`` for group 0; against the overall rate,
        ``tau = net_(a,e) / q_(a,e) - sum_b net_(b,e) / p_e`` (``q_(a,e) = N_(a,e) / m``, ``p_e = L_e / m``).  A cell
        costs its label's event's ``tau`` (0 outside every event).

        Parameters
        ----------
        lam : ndarray of shape ``violation_shape(n_groups)``
            The multipliers.
        proportions : ndarray of shape (n_groups, 2)
            Public cell proportions ``q~_ay`` (denominators over ``m``).
        label_proportions : ndarray of shape (2,) or None, default None
            Public share of every label (with ``reference="overall"``).

        Returns
        -------
        ndarray of shape (n_groups, 2)
            ``tau`` per cell.
        """
        net = lam[:, 0::2] - lam[:, 1::2]
        shares = self._to_events(proportions)
        if self.reference == "group0":
            return self._from_events(np.vstack([-net.sum(axis=0, keepdims=True), net]) / shares)
        return self._from_events(net / shares - net.sum(axis=0, keepdims=True) / self._to_events(label_proportions))

    def cost_bounds(self, bound_B: float, proportions: np.ndarray) -> tuple[float, float]:
        """Bound the per-cell cost ``tau`` when ``||lambda||_1 <= B``.

        The bounds are how much one row's cost can change when its group changes, and its largest absolute value.
        With ``q_min`` the smallest event proportion: against group 0 every ``|tau| <= B / q_min`` (each
        ``lambda_k`` enters one cost of an event once), so a change is at most ``2 B / q_min``; against the overall
        rate the shared term ``sum_b net_(b,e) / p_e`` is the same for both groups and cancels, so a change is at most
        ``B / q_min`` while ``|tau| <= B / q_min + B / p_e <= 2 B / q_min`` (``p_e >= q_(a,e)``).

        Parameters
        ----------
        bound_B : float
            ``B``.
        proportions : ndarray of shape (n_groups, 2)
            Public cell proportions (or a lower bound on them).

        Returns
        -------
        tuple of float
            ``(change, largest)``.
        """
        tau = bound_B / float(self._to_events(proportions).min())
        return (2.0 * tau, tau) if self.reference == "group0" else (tau, 2.0 * tau)


class EqualizedOdds(FairnessConstraint):
    """Equalized odds (Hardt et al. 2016; Jagielski et al. 2019, Definition 2.1): equal false- and true-positive rates.

    Events ``{y = 0}`` and ``{y = 1}``: the rates are the false-positive rate ``FP_a`` and the true-positive rate
    ``TP_a``; ``4(|A|-1)`` constraints against group 0, ``4|A|`` against the overall rate (fairlearn's
    ``EqualizedOdds``).  Sensitivity: :meth:`FairnessConstraint.auditor_sensitivity` (``2|A| / n_min`` against group
    0, Lemma C.1 with public denominators).

    Parameters
    ----------
    reference : {"group0", "overall"}, default "group0"
        See :class:`FairnessConstraint`.
    """

    events = ((0,), (1,))
    name = "equalized_odds"


class DemographicParity(FairnessConstraint):
    """Demographic (statistical) parity: equal rates of ``h = 1`` in every group, whatever the label.

    One event, all rows: the cells are the groups (the game's (group, label) statistics summed over the label), the
    rate of group ``a`` is ``P_a / N_a``; ``2(|A|-1)`` constraints against group 0, ``2|A|`` against the overall rate
    ``P / m`` (fairlearn's ``DemographicParity``).  Sensitivity (:meth:`FairnessConstraint.auditor_sensitivity`, with
    the group sizes as ``n_min``): moving a row changes ``P_a`` and ``P_a'`` by at most 1, hence ``2|A| / n_min``
    against group 0 and ``4 / n_min`` against the overall rate (``P`` and ``m`` do not depend on the groups of an
    A-blind ``h``; ``+ 2|A| / m`` A-aware).  The same bound as equalized odds with group sizes in place of cell sizes:
    no smaller, because the moved row is in the one event.

    Parameters
    ----------
    reference : {"group0", "overall"}, default "group0"
        See :class:`FairnessConstraint`.
    """

    events = ((0, 1),)
    name = "demographic_parity"


class TruePositiveRateParity(FairnessConstraint):
    """True-positive-rate parity (equal opportunity, Hardt et al. 2016): equal ``TP_a`` only.

    One event ``{y = 1}``; a row of label 0 has no constraint cost and its move changes no violation.  Also the
    demonstration that a new rate parity is one class: its whole definition is ``events = ((1,),)``.

    Parameters
    ----------
    reference : {"group0", "overall"}, default "group0"
        See :class:`FairnessConstraint`.
    """

    events = ((1,),)
    name = "true_positive_rate_parity"


#: The constraints ``DPExponentiatedGradient(constraints=name)`` accepts by name.
CONSTRAINTS: dict[str, type[FairnessConstraint]] = {
    cls.name: cls for cls in (EqualizedOdds, DemographicParity, TruePositiveRateParity)
}


def make_constraint(constraints: Any, reference: str = "group0") -> FairnessConstraint:
    """The constraint object of ``DPExponentiatedGradient(constraints=...)``.

    Parameters
    ----------
    constraints : str or FairnessConstraint
        A name of :data:`CONSTRAINTS` (built with ``reference``) or an instance (used as it is; its own reference).
    reference : {"group0", "overall"}, default "group0"
        The reference of a constraint given by name.

    Returns
    -------
    FairnessConstraint
        The constraint.

    Raises
    ------
    ValueError
        If the name is unknown, the reference invalid, or an instance's reference differs from a non-default
        ``reference``.
    TypeError
        If ``constraints`` is neither a name nor a :class:`FairnessConstraint`.
    """
    if isinstance(constraints, FairnessConstraint):
        if reference != "group0" and reference != constraints.reference:
            raise ValueError(
                f"constraint_reference={reference!r} conflicts with constraints={constraints!r}: set the reference on the "
                "constraint object only."
            )
        return constraints
    if isinstance(constraints, str):
        if constraints not in CONSTRAINTS:
            raise ValueError(
                f"constraints must be one of {sorted(CONSTRAINTS)} or a FairnessConstraint instance, got {constraints!r}."
            )
        if reference not in REFERENCES:
            raise ValueError(f"constraint_reference must be one of {REFERENCES}, got {reference!r}.")
        return CONSTRAINTS[constraints](reference)
    raise TypeError(
        f"constraints must be a name ({sorted(CONSTRAINTS)}) or a FairnessConstraint instance, got "
        f"{type(constraints).__name__}."
    )
