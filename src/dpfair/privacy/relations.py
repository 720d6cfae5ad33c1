"""Neighbouring relations: every guarantee names the relation it holds under, and budgets convert soundly.

A differential-privacy guarantee says how much an output may change between *neighbouring* datasets; the
number means nothing without the relation.  dpfair's mechanisms hold under three:

``"add_remove"``
    Add or remove one row (the number of rows is private).  :class:`~dpfair.metrics.PrivateMetricFrame`.
``"replace"``
    Replace one row by any other (the number of rows is public).  Most estimators, the selector, the
    search, the bandit learners (one round's record of one candidate or agent).
``"change_attribute"``
    Change one row's sensitive attribute; every other column and the number of rows are public.
    :class:`~dpfair.classification.DPEqualizedOddsPostProcessor`,
    :class:`~dpfair.classification.DPBlindPostProcessor` and
    :class:`~dpfair.classification.DPFairClassifier` (with their attribute relation),
    :class:`~dpfair.classification.DPExponentiatedGradient`, and the regression post-processors with
    ``protects="attribute"``.

Sound conversions (:func:`convert_guarantee`), and only these:

* ``add_remove -> replace``: replacing a row is removing it and adding another, so by group privacy
  with a group of two an ``(epsilon, delta)``-DP mechanism is ``(2 epsilon, (1 + e^epsilon) delta)``-DP under
  replacement (``P[M(D) in S] <= e^eps (e^eps P[M(D'') in S] + delta) + delta``), and a ``rho``-zCDP one is
  ``4 rho``-zCDP (Bun & Steinke 2016, Proposition 27, ``k^2 rho`` with ``k = 2``);
* ``replace -> change_attribute``: changing one attribute *is* a replacement of that row, so the guarantee
  carries over unchanged;
* ``add_remove -> change_attribute``: through ``replace``.

Nothing converts the other way: a guarantee about attribute changes says nothing about the other columns,
and one about replacements says nothing when the number of rows is private.  A
:class:`~dpfair.privacy.PrivacyBudget` is kept in one relation (its ``neighbouring``); a charge under
another relation is converted into it when a rule above applies and refused, naming both, otherwise.
"""

from __future__ import annotations

import math

__all__ = ["ADD_REMOVE", "CHANGE_ATTRIBUTE", "RELATIONS", "REPLACE", "can_convert", "check_relation", "convert_guarantee",
           "describe", "weakest_relation"]

ADD_REMOVE = "add_remove"
REPLACE = "replace"
CHANGE_ATTRIBUTE = "change_attribute"

#: The relations, from the strongest guarantee to the weakest (each converts to those after it).
RELATIONS: tuple[str, ...] = (ADD_REMOVE, REPLACE, CHANGE_ATTRIBUTE)

_WORDS = {
    ADD_REMOVE: "add or remove one row",
    REPLACE: "replace one row",
    CHANGE_ATTRIBUTE: "change one row's sensitive attribute",
}


def describe(relation: str) -> str:
    """The relation in words (``"replace"`` -> ``"replace one row"``)."""
    return _WORDS[check_relation(relation)]


def check_relation(relation: object, name: str = "neighbouring") -> str:
    """Return ``relation`` if it is one of :data:`RELATIONS`; raise ``ValueError`` / ``TypeError`` otherwise.

    Parameters
    ----------
    relation : object
        The candidate.
    name : str, default "neighbouring"
        The argument's name, for the message.

    Returns
    -------
    str
    """
    if not isinstance(relation, str):
        raise TypeError(f"{name} must be one of {list(RELATIONS)}, got {type(relation).__name__}.")
    if relation not in RELATIONS:
        raise ValueError(
            f"{name} must be one of {list(RELATIONS)} (add/remove one row, replace one row, change one row's "
            f"sensitive attribute), got {relation!r}."
        )
    return relation


def can_convert(source: str, target: str) -> bool:
    """Whether a guarantee under ``source`` implies one under ``target`` (module docstring)."""
    return RELATIONS.index(check_relation(source)) <= RELATIONS.index(check_relation(target))


def convert_guarantee(epsilon: float, delta: float, rho: float, source: str, target: str) -> tuple[float, float, float]:
    """Convert ``(epsilon, delta)`` or ``rho``-zCDP under ``source`` into a guarantee under ``target``.

    Parameters
    ----------
    epsilon, delta : float
        An approximate-DP guarantee (zero when the guarantee is zCDP).
    rho : float
        A zCDP guarantee (zero when the guarantee is approximate DP).
    source, target : str
        Relations (:data:`RELATIONS`).

    Returns
    -------
    epsilon, delta, rho : float
        The guarantee under ``target``.

    Raises
    ------
    ValueError
        When no sound conversion exists (``target`` is a stronger relation than ``source``), naming both.
    """
    check_relation(source, "source")
    check_relation(target, "target")
    if not can_convert(source, target):
        raise ValueError(
            f"a guarantee under '{describe(source)}' says nothing under '{describe(target)}': no sound conversion "
            f"from {source!r} to {target!r} exists."
        )
    if source == ADD_REMOVE and target != ADD_REMOVE:
        # group privacy with a group of two (module docstring)
        grown_delta = delta * (1.0 + math.exp(epsilon)) if delta > 0 else 0.0
        return 2.0 * epsilon, min(1.0, grown_delta), 4.0 * rho
    return epsilon, delta, rho


def weakest_relation(*relations: str) -> str:
    """The weakest of ``relations`` (the one every other converts into).

    Returns
    -------
    str
    """
    return max((check_relation(r) for r in relations), key=RELATIONS.index)
