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

Neighbouring relations
----------------------
A budget is kept in one neighbouring relation (``neighbouring``, default ``"replace"``: replace one row;
:mod:`dpfair.privacy.relations`).  Every charge names its own relation; a charge under another relation
is converted into the budget's where a sound conversion exists (an add/remove-one-row charge costs twice
its epsilon under replacement; a replace-one-row charge is also a change-one-attribute charge) and is
refused, naming both relations, where none exists (a change-one-attribute guarantee cannot be counted in a
replace-one-row budget).  The ledger keeps each charge in the budget's relation, with the relation it was
made under.

Processes
---------
A budget charges only in the process that created it.  A copy pickled into another process (a worker of
``n_jobs > 1``) refuses every charge: its spending would never reach the caller's budget.  Likewise, a
process started by a program that opted in to the process-wide ledger refuses charges with ``budget=None``
(the ledger stays in the parent).  Run parallel fits with ``n_jobs=1``;
:func:`dpfair.model_selection.fit_search` refuses a parallel search before anything is charged.

The process-wide ledger
-----------------------
An estimator given no ``budget`` charges nothing and its spend is recorded nowhere, unless the
program opts in with :func:`set_default_budget`: every charge of an estimator given
``budget=None`` then goes to that budget (:func:`default_budget`), so a program's total spend is
on one ledger (and, with a finite budget, capped).  Charges of estimators given their own budget
go only to that budget.
"""

from __future__ import annotations

import contextlib
import contextvars
import copy
import math
import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from dpfair._validation import check_delta, check_epsilon, check_rho
from dpfair.privacy.accounting import zcdp_to_approx_dp
from dpfair.privacy.relations import REPLACE, can_convert, check_relation, convert_guarantee, describe

__all__ = [
    "LedgerEntry",
    "PrivacyBudget",
    "PrivacyBudgetExceededError",
    "charge",
    "charged_release",
    "check_budgets_cover",
    "check_ledger_process",
    "default_budget",
    "inside_charged_release",
    "set_default_budget",
    "suspend_default_budget",
]

_TOL = 1e-12  # relative: absorbs rounding in sums such as 0.1 + 0.2, never an absolute allowance


class PrivacyBudgetExceededError(RuntimeError):
    """Raised when a charge would exceed a :class:`PrivacyBudget`; the budget is unchanged.

    Also raised by :meth:`PrivacyBudget.spend_zcdp` when the budget has no ``delta`` to
    convert a zCDP charge with.
    """


@dataclass(frozen=True)
class LedgerEntry:
    """One charge against a budget.

    Parameters
    ----------
    label : str
        What was released (free text given by the caller).
    kind : {"approx_dp", "zcdp"}
        How the charge composes.
    epsilon, delta : float
        For ``"approx_dp"`` charges; zero for zCDP charges.
    rho : float
        For ``"zcdp"`` charges; zero otherwise.
    relation : str
        The neighbouring relation the charge was made under (:mod:`dpfair.privacy.relations`);
        ``epsilon``, ``delta`` and ``rho`` are already converted into the budget's relation.
    """

    label: str
    kind: str
    epsilon: float = 0.0
    delta: float = 0.0
    rho: float = 0.0
    relation: str = REPLACE


class PrivacyBudget:
    """A total ``(epsilon, delta)`` privacy budget with a ledger.

    Parameters
    ----------
    epsilon : float
        Total epsilon (> 0; ``inf`` means no privacy constraint).
    delta : float, default 0.0
        Total delta in [0, 1).  zCDP charges (:meth:`spend_zcdp`) need ``delta > 0``.
    neighbouring : {"replace", "add_remove", "change_attribute"}, default "replace"
        The neighbouring relation the totals are stated in (module docstring): charges under another
        relation are converted into it, or refused when no sound conversion exists.

    Raises
    ------
    TypeError, ValueError
        If ``epsilon``, ``delta`` or ``neighbouring`` is invalid.

    Examples
    --------
    >>> budget = PrivacyBudget(1.0, 1e-6)
    >>> budget.spend(0.5, label="histogram")
    >>> budget.remaining()
    (0.5, 1e-06)
    """

    def __init__(self, epsilon: float, delta: float = 0.0, *, neighbouring: str = REPLACE) -> None:
        self.epsilon = check_epsilon(epsilon)
        self.delta = check_delta(delta)
        self.neighbouring = check_relation(neighbouring)
        self._ledger: list[LedgerEntry] = []
        self._owner_pid = os.getpid()

    def __setstate__(self, state: dict) -> None:  # budgets pickled before relations existed
        state.setdefault("neighbouring", REPLACE)
        state.setdefault("_owner_pid", os.getpid())
        self.__dict__.update(state)

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
        """Total ``(epsilon, delta)`` spent so far (see the module docstring for the rule).

        Returns
        -------
        epsilon : float
            Epsilon spent: the sum of the approximate-DP ``epsilon_i`` plus the zCDP charges
            converted with the ``delta`` they leave (``inf`` when that ``delta`` is used up or
            a charge is infinite).
        delta : float
            Delta spent: the sum of the approximate-DP ``delta_i``, or the whole budget
            ``delta`` once there is a zCDP charge.
        """
        return self._total(self._ledger, self.delta)

    def remaining(self) -> tuple[float, float]:
        """``(epsilon, delta)`` still available: the budget minus :meth:`spent`.

        Returns
        -------
        epsilon : float
            Budget ``epsilon`` minus the epsilon spent, never negative; ``inf`` for an
            infinite budget with finite spending.
        delta : float
            Budget ``delta`` minus the delta spent, never negative.
        """
        eps, delta = self.spent()
        return max(0.0, self.epsilon - eps), max(0.0, self.delta - delta)

    @property
    def ledger(self) -> tuple[LedgerEntry, ...]:
        """Every charge, in order (read-only).

        Returns
        -------
        tuple of LedgerEntry
        """
        return tuple(self._ledger)

    def spent_by_label(self) -> dict[str, dict[str, float]]:
        """Sum of ``epsilon``, ``delta`` and ``rho`` charged under each label.

        Returns
        -------
        dict
            ``{label: {"epsilon": float, "delta": float, "rho": float}}``.
        """
        out: dict[str, dict[str, float]] = {}
        for e in self._ledger:
            row = out.setdefault(e.label, {"epsilon": 0.0, "delta": 0.0, "rho": 0.0})
            row["epsilon"] += e.epsilon
            row["delta"] += e.delta
            row["rho"] += e.rho
        return out

    # ------------------------------------------------------------------ charges
    def _check_process(self, label: str) -> None:
        if os.getpid() != self._owner_pid:
            if not _process_alive(self._owner_pid):  # unpickled after its process ended: this copy is the ledger now
                self._owner_pid = os.getpid()
                return
            raise PrivacyBudgetExceededError(
                f"charge {label!r}: this PrivacyBudget was created in another process (process {self._owner_pid}) and "
                "copied here, e.g. into a worker of n_jobs > 1; a charge here would never reach the caller's budget. "
                "Run the fits with n_jobs=1 (dpfair.model_selection.fit_search refuses a parallel search up front, "
                "before anything is charged)."
            )

    def _converted(self, label: str, relation: str, epsilon: float, delta: float, rho: float) -> tuple[float, float, float]:
        relation = check_relation(relation)
        if not can_convert(relation, self.neighbouring):
            raise PrivacyBudgetExceededError(
                f"charge {label!r} holds under '{describe(relation)}', and this budget counts '{describe(self.neighbouring)}': "
                "no sound conversion exists (dpfair.privacy.relations), so it cannot be added. Keep the two "
                f"releases on separate budgets, or state this budget in the weaker relation: "
                f"PrivacyBudget(..., neighbouring={relation!r})."
            )
        return convert_guarantee(epsilon, delta, rho, relation, self.neighbouring)

    def _charge(self, entry: LedgerEntry) -> None:
        self._check_process(entry.label)
        candidate = [*self._ledger, entry]
        eps, delta = self._total(candidate, self.delta)
        over_eps = eps > self.epsilon * (1 + _TOL) if math.isfinite(self.epsilon) else False
        over_delta = delta > self.delta * (1 + _TOL)
        if over_eps or over_delta:
            spent_eps, spent_delta = self.spent()
            raise PrivacyBudgetExceededError(
                f"charge {entry.label!r} would spend (epsilon={eps:.6g}, delta={delta:.3g}) in total, "
                f"over the budget (epsilon={self.epsilon:.6g}, delta={self.delta:.3g}); "
                f"already spent (epsilon={spent_eps:.6g}, delta={spent_delta:.3g}). "
                "Lower the charge or create a larger budget."
            )
        self._ledger.append(entry)

    def spend(self, epsilon: float, delta: float = 0.0, *, label: str = "", neighbouring: str = REPLACE) -> None:
        """Charge an ``(epsilon, delta)``-DP release.

        Parameters
        ----------
        epsilon : float
            ``epsilon > 0`` of the release (``inf`` is accepted only by an infinite budget).
        delta : float, default 0.0
            ``delta`` in [0, 1) of the release.
        label : str, default ""
            What was released, for the ledger.
        neighbouring : {"replace", "add_remove", "change_attribute"}, default "replace"
            The relation the release's guarantee holds under; converted into the budget's.

        Raises
        ------
        TypeError, ValueError
            If ``epsilon``, ``delta`` or ``neighbouring`` is invalid (nothing is charged).
        PrivacyBudgetExceededError
            If the total would exceed the budget, the relation cannot be converted into the budget's, or
            the budget belongs to another process; the ledger is left unchanged.
        """
        eps = check_epsilon(epsilon)
        d = check_delta(delta)
        eps, d, _ = self._converted(str(label), neighbouring, eps, d, 0.0)
        self._charge(LedgerEntry(label=str(label), kind="approx_dp", epsilon=eps, delta=d, relation=neighbouring))

    def spend_zcdp(self, rho: float, *, label: str = "", neighbouring: str = REPLACE) -> None:
        """Charge a ``rho``-zCDP release (needs ``delta > 0`` in the budget).

        Parameters
        ----------
        rho : float
            ``rho > 0`` of the release.
        label : str, default ""
            What was released, for the ledger.
        neighbouring : {"replace", "add_remove", "change_attribute"}, default "replace"
            The relation the release's guarantee holds under; converted into the budget's.

        Raises
        ------
        TypeError, ValueError
            If ``rho`` is invalid (nothing is charged).
        PrivacyBudgetExceededError
            If the total would exceed the budget, or the budget has no ``delta`` left to
            convert zCDP to ``(epsilon, delta)``-DP; the ledger is left unchanged.
        """
        r = check_rho(rho)
        _, _, r = self._converted(str(label), neighbouring, 0.0, 0.0, r)
        if math.isfinite(self.epsilon):
            used_delta = sum(e.delta for e in self._ledger if e.kind == "approx_dp")
            if self.delta == 0:
                raise PrivacyBudgetExceededError(
                    f"charge {label!r}: a zCDP charge needs a budget with delta > 0 (zCDP implies only "
                    "(epsilon, delta)-DP with delta > 0), and this budget has delta=0; "
                    "create the budget as PrivacyBudget(epsilon, delta) with delta > 0."
                )
            if used_delta >= self.delta:
                raise PrivacyBudgetExceededError(
                    f"charge {label!r}: a zCDP charge needs some of the budget's delta, and the earlier "
                    f"(epsilon, delta) charges have used all of it (delta={self.delta:.3g}); "
                    "create a budget with a larger delta."
                )
        self._charge(LedgerEntry(label=str(label), kind="zcdp", rho=r, relation=neighbouring))

    # ------------------------------------------------------------------ trials: can these charges be paid?
    def _trial(self, charges: Iterable[Sequence], label: str) -> None:
        """Replay ``charges`` in order on a scratch ledger (the rules of :meth:`spend`, nothing kept)."""
        trial = copy.deepcopy(self)  # same totals, ledger, relation and owner process (a subclass's __deepcopy__ decides)
        for index, planned in enumerate(charges):
            if isinstance(planned, str | bytes) or not isinstance(planned, Sequence) or len(planned) not in (2, 3):
                raise TypeError(
                    f"charges[{index}] must be a pair (epsilon, delta) or a triple (epsilon, delta, neighbouring), got "
                    f"{planned!r}; pass a list of such tuples (a single charge is [(epsilon, delta)])."
                )
            epsilon, delta, *relation = planned
            trial.spend(epsilon, delta, label=label, neighbouring=relation[0] if relation else REPLACE)

    def can_pay(self, charges: Iterable[Sequence]) -> bool:
        """Whether this budget can pay for every one of ``charges`` together, charging nothing.

        The same rules as :meth:`spend` (basic composition with what is already spent, the zCDP charges
        converted with the ``delta`` left, relations converted or refused, the owner process), replayed
        on a scratch copy of the ledger: the budget is never changed.

        Parameters
        ----------
        charges : iterable of (epsilon, delta) or (epsilon, delta, neighbouring)
            The approximate-DP charges, in the order they would be made; ``neighbouring`` (default
            ``"replace"``) is the relation each holds under (:mod:`dpfair.privacy.relations`).

        Returns
        -------
        bool
            ``True`` if :meth:`spend` would accept every charge in turn.

        Raises
        ------
        TypeError, ValueError
            If a charge is not a pair or triple, or holds an invalid ``epsilon``, ``delta`` or relation
            (an invalid charge is an error, not a "no").

        Examples
        --------
        >>> budget = PrivacyBudget(1.0)
        >>> budget.can_pay([(0.5, 0.0), (0.5, 0.0)]), budget.can_pay([(0.5, 0.0)] * 3)
        (True, False)
        >>> budget.spent()
        (0, 0)
        """
        try:
            self._trial(charges, "trial")
        except PrivacyBudgetExceededError:
            return False
        return True

    def check_can_pay(self, charges: Iterable[Sequence], *, label: str = "") -> None:
        """Refuse, charging nothing, ``charges`` that this budget cannot pay for together.

        The one "can these budgets pay?" trial of dpfair: a container (a search, a simulation, a
        post-processor with its base model) calls it for every budget before its first charge, so that
        a refusal leaves every budget as it was.  The rules are those of :meth:`spend` (see
        :meth:`can_pay`).

        Parameters
        ----------
        charges : iterable of (epsilon, delta) or (epsilon, delta, neighbouring)
            As for :meth:`can_pay`.
        label : str, default ""
            What the charges would pay for; the error message names it.

        Raises
        ------
        PrivacyBudgetExceededError
            If a charge would exceed the budget (the message is that of :meth:`spend` for the first charge
            refused), cannot be converted into the budget's relation, or the budget belongs to another
            process; nothing is charged.
        TypeError, ValueError
            As for :meth:`can_pay`.
        """
        self._trial(charges, str(label))

    def __sklearn_clone__(self) -> PrivacyBudget:
        """Return ``self``: a budget is a shared accountant, never copied by :func:`sklearn.base.clone`.

        ``clone`` deep-copies every parameter that is not an estimator, so without this each fit of
        ``GridSearchCV`` or ``cross_validate`` would charge a private copy and the caller's budget would
        never see it.  (With ``n_jobs > 1`` the workers still receive pickled copies: share a budget
        only within one process.)

        Returns
        -------
        PrivacyBudget
            This same object.
        """
        return self

    def __repr__(self) -> str:
        eps, delta = self.spent()
        relation = "" if self.neighbouring == REPLACE else f", neighbouring={self.neighbouring!r}"
        return (
            f"PrivacyBudget(epsilon={self.epsilon!r}, delta={self.delta!r}{relation}; "
            f"spent epsilon={eps:.6g}, delta={delta:.3g} in {len(self._ledger)} charge(s))"
        )


def check_budget(budget: object, name: str = "budget") -> PrivacyBudget | None:
    """Return ``budget`` if it is ``None`` or a :class:`PrivacyBudget`; raise ``TypeError`` otherwise.

    Parameters
    ----------
    budget : object
        The candidate.
    name : str, default "budget"
        Argument name used in the error message.

    Returns
    -------
    PrivacyBudget or None

    Raises
    ------
    TypeError
        If ``budget`` is anything else.
    """
    if budget is None or isinstance(budget, PrivacyBudget):
        return budget
    raise TypeError(
        f"{name} must be a dpfair.privacy.PrivacyBudget or None, got {type(budget).__name__}; "
        "create one with PrivacyBudget(epsilon, delta) and pass the same object to every step it governs."
    )


def check_budgets_cover(charges: Iterable[Sequence], *,
                        fix: str = "give each a budget that pays for it, or a larger shared budget") -> None:
    """Refuse, before anything is charged, charges that their budgets cannot pay for together.

    Several private estimators of one call (the policies of a simulation, a post-processor and its base
    model) may share one budget: charging them one by one would spend the first and refuse the second.
    Each budget is tried with all the charges made to it (:meth:`PrivacyBudget.check_can_pay`, the rules of
    :meth:`PrivacyBudget.spend`), so the real budgets are charged only when every budget can pay.

    Parameters
    ----------
    charges : iterable of (budget, epsilon, delta, argument) or (budget, epsilon, delta, argument, neighbouring)
        One per private estimator; ``budget`` may be ``None`` (the process-wide :func:`default_budget` when
        the program installed one with :func:`set_default_budget`, else nothing to charge);
        ``argument`` names the estimator's budget in the message (e.g. ``"policies['a'].budget"``);
        ``neighbouring`` (default ``"replace"``) is the relation the charge holds under.
    fix : str
        The advice that ends the message.

    Raises
    ------
    PrivacyBudgetExceededError
        If a budget cannot pay for all the charges made to it; the message names every argument that
        shares that budget.  Budgets are tried in the order they first appear; nothing is charged.
    TypeError, ValueError
        If a charge is malformed or holds an invalid privacy parameter.
    """
    default = default_budget()
    planned: dict[int, tuple[PrivacyBudget, list[tuple], list[str]]] = {}
    for budget, epsilon, delta, argument, *relation in charges:
        if budget is None:
            budget = default  # what a charge of budget=None goes to (charge / dpfair._estimator.charge_budget)
        if budget is None:
            continue
        check_budget(budget, str(argument))
        _, pays, sharing = planned.setdefault(id(budget), (budget, [], []))
        pays.append((epsilon, delta, *relation))
        sharing.append(str(argument))
    for budget, pays, sharing in planned.values():
        try:
            budget.check_can_pay(pays, label=" and ".join(sharing))
        except PrivacyBudgetExceededError as exc:
            together = f"{' and '.join(sharing)} (one shared budget)" if len(sharing) > 1 else sharing[0]
            raise PrivacyBudgetExceededError(
                f"{together} cannot pay for the privacy this call would spend, so nothing was charged; {fix}. "
                f"({exc})"
            ) from None


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, owned by another user
        return True
    return True


#: Set by :func:`set_default_budget` for the processes a program starts: the process whose ledger is on.
_LEDGER_PID_VARIABLE = "DPFAIR_DEFAULT_LEDGER_PID"


def check_ledger_process(label: str) -> None:
    """Refuse a ``budget=None`` charge in a process started by a program whose process-wide ledger is on.

    :func:`set_default_budget` records its process in the environment, which the processes it starts
    inherit (the workers of ``n_jobs > 1``, a Dask local cluster); there the ledger does not exist, and a
    charge that would have gone to it would be lost.

    Parameters
    ----------
    label : str
        The charge's label, for the message.

    Raises
    ------
    PrivacyBudgetExceededError
        In such a process, while the ledger's process is alive.
    """
    if _DEFAULT_BUDGET is not None or _SUSPENDED.get():
        return
    owner = os.environ.get(_LEDGER_PID_VARIABLE, "")
    if not owner.isdigit() or int(owner) == os.getpid() or not _process_alive(int(owner)):
        return
    raise PrivacyBudgetExceededError(
        f"charge {label!r}: the program's process-wide ledger (set_default_budget) lives in process {owner}, and this "
        "is another process it started (e.g. a worker of n_jobs > 1); the charge would never reach the ledger. "
        "Run the fits with n_jobs=1 (dpfair.model_selection.fit_search refuses a parallel search up front, "
                "before anything is charged)."
    )


def charge(budget: PrivacyBudget | None, epsilon: float = 0.0, delta: float = 0.0, *, rho: float | None = None,
           label: str, neighbouring: str = REPLACE) -> None:
    """The one charge of a release: to ``budget``, or to the process-wide ledger when ``budget`` is ``None``.

    Every private release in dpfair charges through here, after every argument is validated and before its
    noise source is created.  With ``budget=None`` the charge goes to :func:`default_budget` when the
    program opted in (:func:`set_default_budget`), is refused in a process that such a program started
    (:func:`check_ledger_process`), and is recorded nowhere otherwise.

    Parameters
    ----------
    budget : PrivacyBudget or None
        The budget given to the release.
    epsilon, delta : float
        An approximate-DP charge (ignored when ``rho`` is given).
    rho : float or None
        A zCDP charge.
    label : str
        The ledger's label.
    neighbouring : str, default "replace"
        The relation of the release's guarantee (:mod:`dpfair.privacy.relations`).

    Raises
    ------
    PrivacyBudgetExceededError
        As :meth:`PrivacyBudget.spend` / :meth:`PrivacyBudget.spend_zcdp`, and in a worker of a program
        whose ledger is on; nothing is charged.
    """
    check_budget(budget)
    if budget is None:
        budget = default_budget()
        if budget is None:
            check_ledger_process(label)
            return
    if rho is not None:
        budget.spend_zcdp(rho, label=label, neighbouring=neighbouring)
    else:
        budget.spend(epsilon, delta, label=label, neighbouring=neighbouring)


_DEFAULT_BUDGET: PrivacyBudget | None = None
_SUSPENDED: contextvars.ContextVar[bool] = contextvars.ContextVar("dpfairsuspend_default_budget", default=False)


def default_budget() -> PrivacyBudget | None:
    """The process-wide ledger that estimators given no budget charge (``None`` until opted in).

    Returns
    -------
    PrivacyBudget or None
        The budget installed by :func:`set_default_budget`, or ``None``.

    Examples
    --------
    >>> import math
    >>> from dpfair.privacy import PrivacyBudget, default_budget, set_default_budget
    >>> previous = set_default_budget(PrivacyBudget(math.inf, 1e-3))   # record every charge; delta up to 1e-3
    >>> default_budget().ledger
    ()
    >>> _ = set_default_budget(previous)
    """
    if _SUSPENDED.get():
        return None
    return _DEFAULT_BUDGET


def set_default_budget(budget: PrivacyBudget | None) -> PrivacyBudget | None:
    """Opt in to (or out of) the process-wide ledger; returns the one it replaces.

    From now on every ``fit`` (or release) of a dpfair estimator given ``budget=None`` charges
    ``budget``: ``PrivacyBudget(math.inf, 1e-3)`` records a program's total spend without a cap on
    epsilon (``delta`` is still capped: estimators with a ``delta`` need one), a finite
    budget also refuses what would exceed it (``PrivacyBudgetExceededError``, nothing changed).  The
    ledger is process-wide: worker processes (``n_jobs > 1``) charge their own copies.

    Parameters
    ----------
    budget : PrivacyBudget or None
        The ledger; ``None`` turns it off (the default: nothing is recorded).

    Returns
    -------
    PrivacyBudget or None
        The previous ledger, to restore later.

    Raises
    ------
    TypeError
        If ``budget`` is neither a :class:`PrivacyBudget` nor ``None``.
    """
    global _DEFAULT_BUDGET
    check_budget(budget)
    previous, _DEFAULT_BUDGET = _DEFAULT_BUDGET, budget
    if budget is not None:
        os.environ[_LEDGER_PID_VARIABLE] = str(os.getpid())
    elif os.environ.get(_LEDGER_PID_VARIABLE) == str(os.getpid()):
        del os.environ[_LEDGER_PID_VARIABLE]
    return previous


_INSIDE_RELEASE: contextvars.ContextVar[bool] = contextvars.ContextVar("dpfair_inside_charged_release", default=False)


@contextlib.contextmanager
def charged_release() -> Iterator[None]:
    """The noise draws of a release whose one charge has been made (the template's step 5).

    Inside, the mechanisms of :mod:`dpfair.privacy` that a release calls to draw its noise neither charge the
    process-wide ledger again (:func:`default_budget` is ``None``) nor repeat the release's
    :class:`~dpfair.privacy.SeededNoiseWarning`: the release charged and warned once for all of them.

    Yields
    ------
    None
    """
    token_suspended, token_inside = _SUSPENDED.set(True), _INSIDE_RELEASE.set(True)
    try:
        yield
    finally:
        _INSIDE_RELEASE.reset(token_inside)
        _SUSPENDED.reset(token_suspended)


def inside_charged_release() -> bool:
    """Whether the caller runs inside :func:`charged_release` (its release has charged and warned already)."""
    return _INSIDE_RELEASE.get()


@contextlib.contextmanager
def suspend_default_budget() -> Iterator[None]:
    """Suspend the process-wide ledger: inside, :func:`default_budget` is ``None``.

    For the inner fits of a release that is charged as a whole (a private search charges its total
    once; its trials must not be recorded again).

    Yields
    ------
    None
        Nothing; the ledger is restored on exit.
    """
    token = _SUSPENDED.set(True)
    try:
        yield
    finally:
        _SUSPENDED.reset(token)
