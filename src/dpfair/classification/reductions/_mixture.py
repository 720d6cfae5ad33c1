"""The exact best mixture of the best responses seen so far (``epsilon = inf``, ``selection="best"``).

Agarwal et al.'s guarantee is about a ``nu``-approximate equilibrium ``(Q, lambda)`` (duality gap at most ``nu``).  The
uniform mixture of a prefix of the best responses only reaches it after many rounds when the multipliers move slowly
(with ``B = |A|`` and Algorithm 3's step, the first prefixes that meet the constraints have a gap 4-10 times ``nu`` on
Adult).  Given the hypotheses ``h_1 .. h_n`` played so far, the mixture that minimizes the primal value
``err(Q) + B max(0, max_k r_k(Q))`` is a linear program (``err`` and ``r`` are linear in ``Q``):

    minimize   sum_j q_j err(h_j) + B s
    subject to sum_j q_j r_k(h_j) - s <= 0   for every constraint k,
               sum_j q_j = 1,  q >= 0,  s >= 0,

and the multipliers of its constraints ``r_k - s <= 0`` are a ``lambda >= 0`` with ``||lambda||_1 <= B`` (the dual's
constraint from ``s``).  The pair is then checked with the exact duality gap of :meth:`_Game.gap_of
<dpfair.classification.reductions._game._Game.gap_of>`; the estimator keeps, at each check, whichever of this pair and the
best uniform prefix has the smaller gap, and stops at gap ``nu``.  (fairlearn's ``ExponentiatedGradient`` runs the same
kind of step, ``run_linprog_step``.)  It reads the exact violations, so it is used only without privacy.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.optimize import linprog


class ExactMixture:
    """The distinct best responses of a non-private game and their best mixture (module docstring).

    Parameters
    ----------
    game : _Game
        The exact in-sample quantities.
    bound_B : float
        ``B``.
    """

    def __init__(self, game: Any, bound_B: float) -> None:
        self.game, self.bound_B = game, bound_B
        self.seen: dict[bytes, int] = {}
        self.game_rounds = 0
        self.rounds: list[int] = []
        self.errors: list[float] = []
        self.positives: list[np.ndarray] = []
        self.violations: list[np.ndarray] = []

    def add(self, h: np.ndarray, round_index: int) -> None:
        """Record the best response ``h`` (0/1 on the training rows) of round ``round_index`` (0-based) if new.

        Parameters
        ----------
        h : ndarray of shape (m,)
            The hypothesis' predictions.
        round_index : int
            Its round.
        """
        self.game_rounds = round_index + 1
        key = np.packbits(h > 0.5).tobytes()
        if key not in self.seen:
            self.seen[key] = len(self.rounds)
            self.rounds.append(round_index)
            self.errors.append(self.game.error(h))
            self.positives.append(self.game.positives(h))
            self.violations.append(self._violations(self.positives[-1]))

    def due(self) -> bool:
        """Whether the linear program is solved at this check: at every check up to round 100, then every 50 rounds.

        Returns
        -------
        bool
            ``True`` when it is due (the game checks every 10 rounds).
        """
        n = self.game_rounds
        return n <= 100 or n % 50 == 0

    def _violations(self, positives: np.ndarray) -> np.ndarray:
        game = self.game
        return game.violations(positives)

    def solve(self, best_response: Any) -> dict[str, Any] | None:
        """The best mixture of the hypotheses seen, its multipliers and its duality gap.

        Parameters
        ----------
        best_response : callable
            ``best_response(lam, inf) -> (w, h)``, the exact oracle.

        Returns
        -------
        dict or None
            ``rounds`` (0-based rounds of the hypotheses in the mixture), ``q`` (their weights, summing to 1),
            ``lam`` (the multipliers), ``positives`` (the mixture's positive counts per cell) and ``gap`` (exact);
            ``None`` when the solver fails.
        """
        errors = np.asarray(self.errors)
        positives = np.stack(self.positives)
        rs = np.stack(self.violations)  # (n_h, *violation_shape)
        n_h, shape = errors.size, rs.shape[1:]
        cost = np.r_[errors, self.bound_B]
        a_ub = np.hstack([rs.reshape(n_h, -1).T, -np.ones((rs[0].size, 1))])
        a_eq = np.r_[np.ones(n_h), 0.0][None, :]
        result = linprog(cost, A_ub=a_ub, b_ub=np.zeros(rs[0].size), A_eq=a_eq, b_eq=[1.0], method="highs")
        if result.status != 0:
            return None
        q = np.clip(result.x[:n_h], 0.0, None)
        support = q > 1e-12 * q.max()
        q = q[support] / q[support].sum()
        lam = np.clip(-result.ineqlin.marginals, 0.0, None).reshape(shape)
        if lam.sum() > self.bound_B:  # (only by rounding: the dual's constraint from s)
            lam *= self.bound_B / lam.sum()
        mixed = np.tensordot(q, positives[support], axes=1)
        gap = self.game.gap_of(float(q @ errors[support]), mixed, lam, self.bound_B, best_response)
        return {"rounds": np.asarray(self.rounds)[support], "q": q, "lam": lam, "positives": mixed, "gap": gap}


def better_mixture(
    exact: ExactMixture | None, gap: float, best_response: Any, *, final: bool = False
) -> tuple[float, dict[str, Any] | None]:
    """``(gap, mixture)``: the exact best mixture where its gap is below ``gap`` (the best prefix's), else ``None``.

    Parameters
    ----------
    exact : ExactMixture or None
        The hypotheses seen (``None``: not used, e.g. with privacy).
    gap : float
        The best uniform prefix's duality gap.
    best_response : callable
        The exact oracle.
    final : bool, default False
        The last check (the program is then always solved).

    Returns
    -------
    tuple
        The smaller gap and the mixture (or ``None`` when the prefix is kept).
    """
    if exact is None or not (final or exact.due()):
        return gap, None
    found = exact.solve(best_response)
    if found is None or not found["gap"] < gap:
        return gap, None
    return found["gap"], found
