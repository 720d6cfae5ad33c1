"""The synthetic case study of Khalili et al. (2021), Section 5 (Figures 1-3, Table 1).

The paper does not print Figure 1's PMF.  It states: ``n = 10``, ``P(A=0) = 0.1``,
``P(Y=0 | A=0) = 0.7``, ``P(Y=0 | A=1) = 0.6``, ``E[R | Y=1, A=0] = 0.68``,
``E[R | Y=1, A=1] = 0.72`` on the grid {0, 0.1, ..., 1}; the appendix gives
``P(R=0 | Y=1) = P(R=0.2 | Y=1) = 0.01``, ``P(R=0 | Y=0) = 0.11``, ``P(R=0.2 | Y=0) = 0.3``;
Table 2 gives the epsilon = inf limits ``E[selected | Y=1, A=a]`` for m = 1..4; Table 1
gives ``theta(inf)`` for m = 1..4 and ``epsilon_o`` with ``theta(epsilon_o)`` for m = 1..3
(2.76/0.50, 7.78/0.64, 21.11/0.73).

:func:`fit_case_study_pmf` finds conditional PMFs ``P(R | A=a, Y=y)`` matching all of
these by weighted least squares in three stages (stated probabilities, means and eps = inf
limits; then Table 1's m = 1 row; then its m = 2, 3 rows, with exact gamma/theta by
enumeration; about 23 minutes on one core); :data:`CASE_STUDY_PMF` holds the result of
``fit_case_study_pmf(seed=0)`` rounded to 6 decimals and renormalized, so that experiments need not refit.  The report
shows how close the resulting Table 1 rows come to the paper's.
"""

from __future__ import annotations

import numpy as np
from scipy import optimize

from dpfair.selection.analysis import SelectionProblem

__all__ = ["CASE_STUDY_PMF", "CASE_STUDY_TARGETS", "SCORE_GRID", "case_study_problem", "fit_case_study_pmf"]

SCORE_GRID = np.round(np.linspace(0.0, 1.0, 11), 10)
P_GROUP = np.array([0.1, 0.9])
P_QUALIFIED = np.array([0.3, 0.4])  # P(Y = 1 | A = a)
N_APPLICANTS = 10

#: The numbers the paper states, used as fitting targets and shown beside ours in the report.
CASE_STUDY_TARGETS = {
    "mean_R_qualified": (0.68, 0.72),
    "limit_selected_qualified": {1: (0.3426, 0.2392), 2: (0.5213, 0.4337), 3: (0.5941, 0.5705), 4: (0.5821, 0.6196)},
    "theta_inf": {1: 0.96, 2: 0.88, 3: 0.77, 4: 0.71},
    "epsilon_o": {1: 2.76, 2: 7.78, 3: 21.11, 4: 0.0},
    "theta_epsilon_o": {1: 0.50, 2: 0.64, 3: 0.73, 4: 0.4},
    "P(R=0|Y=1)": 0.01,
    "P(R=0.2|Y=1)": 0.01,
    "P(R=0|Y=0)": 0.11,
    "P(R=0.2|Y=0)": 0.3,
}


def _joint(conditionals: np.ndarray) -> np.ndarray:
    """joint[a, y, r] from conditionals[a, y, r] = P(R = r | A = a, Y = y)."""
    p_ay = np.stack([P_GROUP * (1 - P_QUALIFIED), P_GROUP * P_QUALIFIED], axis=1)  # (a, y)
    return conditionals * p_ay[:, :, None]


def _residuals(conditionals: np.ndarray, stage: int) -> np.ndarray:
    """Weighted misfit to the stated numbers; stage 2 adds Table 1's m = 1 row, stage 3 its m = 2, 3 rows."""
    joint = _joint(conditionals)
    problem = SelectionProblem(SCORE_GRID, joint, N_APPLICANTS)
    t = CASE_STUDY_TARGETS
    res = [10 * (problem.score_values @ problem.f_qualified[a] - t["mean_R_qualified"][a]) for a in range(2)]
    p_y1 = joint[:, 1].sum(axis=0) / joint[:, 1].sum()
    p_y0 = joint[:, 0].sum(axis=0) / joint[:, 0].sum()
    res += [10 * (p_y1[0] - t["P(R=0|Y=1)"]), 10 * (p_y1[2] - t["P(R=0.2|Y=1)"])]
    res += [10 * (p_y0[0] - t["P(R=0|Y=0)"]), 10 * (p_y0[2] - t["P(R=0.2|Y=0)"])]
    for m in range(1, 5):
        pi = problem._pi_infinity(m)
        limits = [pi @ problem.f_qualified[a] for a in range(2)]
        for a in range(2):
            res.append(limits[a] - t["limit_selected_qualified"][m][a])
        target_gap = t["limit_selected_qualified"][m][0] - t["limit_selected_qualified"][m][1]
        res.append(3 * (limits[0] - limits[1] - target_gap))  # gamma(inf), whose sign decides Theorem 5
        res.append(float(problem.accuracy(np.inf, m).value) - t["theta_inf"][m])
    for m in (1, 2, 3)[: {1: 0, 2: 1, 3: 3}[stage]]:
        eps_o = t["epsilon_o"][m]
        res.append(3 * float(problem.fairness_gap(eps_o, m).value))
        res.append(float(problem.accuracy(eps_o, m).value) - t["theta_epsilon_o"][m])
    return np.asarray(res)


def _unpack(params: np.ndarray) -> np.ndarray:
    logits = params.reshape(2, 2, SCORE_GRID.size)
    e = np.exp(logits - logits.max(axis=2, keepdims=True))
    return e / e.sum(axis=2, keepdims=True)


def fit_case_study_pmf(seed: int = 0) -> np.ndarray:
    """Fit ``P(R | A, Y)`` (shape (2, 2, 11)) to every number the paper states (see module docstring)."""
    rng = np.random.default_rng(seed)
    start = rng.normal(scale=0.1, size=2 * 2 * SCORE_GRID.size)
    stage1 = optimize.least_squares(lambda p: _residuals(_unpack(p), 1), start, method="trf", max_nfev=4000)
    stage2 = optimize.least_squares(lambda p: _residuals(_unpack(p), 2), stage1.x, method="trf", max_nfev=4000)
    stage3 = optimize.least_squares(lambda p: _residuals(_unpack(p), 3), stage2.x, method="trf", max_nfev=60)
    return _unpack(stage3.x)


# fit_case_study_pmf(seed=0), rounded to 6 decimals (rows: (A, Y) = (0,0), (0,1), (1,0), (1,1); columns: R = 0, 0.1, ..., 1)
CASE_STUDY_PMF = (
    ((3.5e-05, 0.0, 2e-05, 5e-06, 0.000586, 4.8e-05, 0.999307, 0.0, 0.0, 0.0, 0.0),
     (1e-06, 0.219915, 0.130651, 0.025201, 0.0, 0.0, 0.0, 0.0, 0.0, 1e-06, 0.62423)),
    ((0.124264, 2e-06, 0.338894, 3.2e-05, 7.5e-05, 0.229011, 0.307721, 0.0, 0.0, 0.0, 0.0),
     (0.010837, 0.064326, 0.0, 0.239539, 9e-06, 1e-06, 0.0, 0.050902, 9.3e-05, 0.282298, 0.351994)),
)  # fmt: skip


def case_study_problem(n_applicants: int = N_APPLICANTS) -> SelectionProblem:
    """The synthetic case study as a :class:`SelectionProblem` (joint law from :data:`CASE_STUDY_PMF`)."""
    conditionals = np.asarray(CASE_STUDY_PMF, dtype=float)
    conditionals /= conditionals.sum(axis=2, keepdims=True)  # undo the rounding
    return SelectionProblem(SCORE_GRID, _joint(conditionals), n_applicants)
