"""SelectionProblem: exact analysis against enumeration and against simulation of the selector."""

import itertools
import math
import warnings

import numpy as np
import pytest

from dpfair.datasets import DataUnavailableError, dataset_paths
from dpfair.privacy import PrivacyLeakWarning
from dpfair.selection import ExponentialSelector, SelectionProblem
from dpfair.selection.synthetic_case import CASE_STUDY_TARGETS, case_study_problem

GRID = np.array([0.0, 0.3, 0.5, 1.0])
# simulate() runs the selector at epsilon = inf, which warns by design
pytestmark = pytest.mark.filterwarnings("ignore::dpfair.privacy.PrivacyLeakWarning")


def small_problem(n=4, seed=0):
    rng = np.random.default_rng(seed)
    joint = rng.random((2, 2, GRID.size))
    return SelectionProblem(GRID, joint / joint.sum(), n)


def brute_pi(problem, eps, m):
    """P(selected | own score) by enumerating every score vector of the others and every subset."""
    n, grid, f_r = problem.n_applicants, problem.score_values, problem.f_r
    out = np.zeros(grid.size)
    subsets = list(itertools.combinations(range(n), m))
    for k in range(grid.size):
        for others in itertools.product(range(grid.size), repeat=n - 1):
            scores = np.concatenate([[grid[k]], grid[list(others)]])
            totals = np.array([scores[list(g)].sum() for g in subsets])
            if math.isinf(eps):
                w = np.isclose(totals, totals.max()).astype(float)
            else:
                w = np.exp(eps * (totals - totals.max()) / 2)
            out[k] += np.prod(f_r[list(others)]) * sum(wi for g, wi in zip(subsets, w, strict=True) if 0 in g) / w.sum()
    return out


@pytest.mark.parametrize("m", [1, 2, 3])
@pytest.mark.parametrize("eps", [0.0, 0.7, 6.0, 90.0, math.inf])
def test_selection_probability_matches_enumeration(m, eps):
    problem = small_problem()
    est = problem.selection_probability_given_score(eps, m)
    np.testing.assert_allclose(est.value, brute_pi(problem, eps, m), atol=1e-12)
    # every applicant is selected with probability m/n on average
    assert problem.f_r @ est.value == pytest.approx(m / problem.n_applicants, abs=1e-12)


def test_limits_and_identities():
    problem = small_problem(n=5)
    for m in (1, 2):
        assert float(problem.fairness_gap(0.0, m)) == pytest.approx(0.0, abs=1e-12)
        assert float(problem.accuracy(0.0, m)) == pytest.approx(problem.joint_pmf[:, 1].sum(), abs=1e-12)
        # gamma(eps) tends to gamma(inf)
        assert float(problem.fairness_gap(400.0, m)) == pytest.approx(float(problem.fairness_gap(math.inf, m)), abs=1e-6)


def test_monte_carlo_path_agrees_with_enumeration():
    exact = small_problem(n=6, seed=3)
    mc = SelectionProblem(exact.score_values, exact.joint_pmf, 6, max_configurations=1, n_mc_samples=20_000, random_state=1)
    for m, eps in [(2, 3.0), (3, 12.0)]:
        e = exact.fairness_gap(eps, m)
        s = mc.fairness_gap(eps, m)
        assert e.method == "enumeration" and s.method == "monte-carlo" and s.standard_error > 0
        assert abs(float(s) - float(e)) <= 3 * s.standard_error
        a, b = exact.accuracy(eps, m), mc.accuracy(eps, m)
        assert abs(float(a) - float(b)) <= 3 * b.standard_error


def test_monte_carlo_samples_follow_random_state():
    problem = SelectionProblem(GRID, small_problem().joint_pmf, 6, max_configurations=1, n_mc_samples=500)
    first = float(problem.fairness_gap(3.0, 2))
    problem.random_state = 1
    assert float(problem.fairness_gap(3.0, 2)) != first
    problem.random_state = 0
    assert float(problem.fairness_gap(3.0, 2)) == first


def simulate(problem, eps, m, pools, seed):
    """Run the selector itself on simulated applicant pools; unbiased estimates of gamma and theta with SEs."""
    rng = np.random.default_rng(seed)
    flat = problem.joint_pmf.reshape(-1)
    n = problem.n_applicants
    draws = rng.choice(flat.size, size=(pools, n), p=flat)
    a, y, r = np.unravel_index(draws, problem.joint_pmf.shape)
    scores = problem.score_values[r]
    sel = ExponentialSelector(eps, m)
    chosen = np.zeros((pools, n))
    for p in range(pools):
        chosen[p, sel.select(scores[p], random_state=rng)] = 1.0
    p0, p1 = problem.joint_pmf[0, 1].sum(), problem.joint_pmf[1, 1].sum()
    gam = ((chosen * ((a == 0) & (y == 1))).sum(1) / p0 - (chosen * ((a == 1) & (y == 1))).sum(1) / p1) / n
    acc = (chosen * (y == 1)).sum(1) / m
    q0, q1 = problem.joint_pmf[0].sum(), problem.joint_pmf[1].sum()
    dem = ((chosen * (a == 0)).sum(1) / q0 - (chosen * (a == 1)).sum(1) / q1) / n
    simulate.demographic_parity = (dem.mean(), dem.std(ddof=1) / math.sqrt(pools))
    return (gam.mean(), gam.std(ddof=1) / math.sqrt(pools)), (acc.mean(), acc.std(ddof=1) / math.sqrt(pools))


@pytest.mark.slow
@pytest.mark.statistical
@pytest.mark.parametrize(("m", "eps"), [(1, 2.0), (1, math.inf), (2, 8.0), (3, 20.0)])
def test_analysis_matches_simulation_of_the_selector(m, eps):
    problem = case_study_problem()
    (g, g_se), (t, t_se) = simulate(problem, eps, m, pools=6000, seed=m)
    assert abs(g - float(problem.fairness_gap(eps, m))) <= 3 * g_se
    assert abs(t - float(problem.accuracy(eps, m))) <= 3 * t_se
    d, d_se = simulate.demographic_parity
    assert abs(d - float(problem.fairness_gap(eps, m, notion="demographic_parity"))) <= 3 * d_se


def test_perfectly_fair_epsilon_is_fair_in_simulation():
    problem = case_study_problem()
    roots = problem.perfectly_fair_epsilons(1, 60.0)
    assert len(roots) == 1 and 1.0 < roots[0] < 5.0
    assert abs(float(problem.fairness_gap(roots[0], 1))) < 1e-9
    (g, g_se), _ = simulate(problem, roots[0], 1, pools=6000, seed=11)
    assert abs(g) <= 3 * g_se
    assert problem.theorem_conditions(1)["theorem_1_5"]["holds"]
    assert not problem.theorem_conditions(4)["theorem_1_5"]["holds"]


def test_best_epsilon_corollary_1():
    rng = np.random.default_rng(4)
    # a monotone-likelihood-ratio law: Y=1 puts more mass on high scores
    grid = np.linspace(0, 1, 6)
    up = np.exp(2 * grid)
    joint = np.stack(
        [np.stack([0.4 * (up[::-1] / up[::-1].sum()), 0.6 * up / up.sum()]) * 0.3,
         np.stack([0.5 * (up[::-1] / up[::-1].sum()), 0.5 * (grid + 0.2) / (grid + 0.2).sum()]) * 0.7]
    )  # fmt: skip
    joint += rng.random(joint.shape) * 0  # exact law, no noise
    problem = SelectionProblem(grid, joint / joint.sum(), 8)
    assert problem.monotone_likelihood_ratio()
    gamma_inf = abs(float(problem.fairness_gap(math.inf, 1)))
    target = gamma_inf / 3
    eps_star = problem.best_epsilon(50.0, target)
    assert abs(float(problem.fairness_gap(eps_star, 1))) == pytest.approx(target, abs=1e-8)
    assert abs(float(problem.fairness_gap(min(eps_star * 1.05, 50.0), 1))) > target
    assert problem.best_epsilon(50.0, 1.0) == 50.0


def test_case_study_pmf_honours_the_stated_numbers():
    problem = case_study_problem()
    t = CASE_STUDY_TARGETS
    joint = problem.joint_pmf
    assert joint[0].sum() == pytest.approx(0.1) and joint[0, 0].sum() / joint[0].sum() == pytest.approx(0.7)
    assert joint[1, 0].sum() / joint[1].sum() == pytest.approx(0.6)
    for a in range(2):
        assert problem.score_values @ problem.f_qualified[a] == pytest.approx(t["mean_R_qualified"][a], abs=2e-3)
    p_y1 = joint[:, 1].sum(0) / joint[:, 1].sum()
    p_y0 = joint[:, 0].sum(0) / joint[:, 0].sum()
    assert p_y1[0] == pytest.approx(0.01, abs=2e-3) and p_y1[2] == pytest.approx(0.01, abs=2e-3)
    assert p_y0[0] == pytest.approx(0.11, abs=2e-3) and p_y0[2] == pytest.approx(0.30, abs=2e-3)
    pi = problem.selection_probability_given_score(math.inf, 1).value
    assert pi @ problem.f_qualified[0] == pytest.approx(0.3426, abs=0.01)
    assert float(problem.accuracy(math.inf, 1)) == pytest.approx(0.96, abs=0.01)


def test_from_samples_recovers_the_law():
    problem = small_problem(n=5, seed=8)
    rng = np.random.default_rng(0)
    flat = problem.joint_pmf.reshape(-1)
    idx = rng.choice(flat.size, size=200_000, p=flat)
    a, y, r = np.unravel_index(idx, problem.joint_pmf.shape)
    with pytest.warns(PrivacyLeakWarning):
        est = SelectionProblem.from_samples(GRID[r], np.where(a == 0, "g0", "g1"), y, n_applicants=5)
    np.testing.assert_allclose(est.joint_pmf, problem.joint_pmf, atol=4e-3)


def _fico_available():
    try:
        dataset_paths("fico", download=False)
        return True
    except DataUnavailableError:
        return False


@pytest.mark.skipif(not _fico_available(), reason="FICO data not in DPFAIR_DATA_HOME")
def test_fico_conditions_and_paper_tables():
    wb = SelectionProblem.from_fico(("white", "black"), (0.88, 0.12), 10)
    cond = wb.theorem_conditions(1)["theorem_1_5"]
    assert not cond["holds"]
    assert cond["E[R | A=a, Y=1]"] == pytest.approx([0.6445, 0.4694], abs=1e-4)  # Table 5
    assert cond["gamma_inf"] == pytest.approx(0.0939, abs=0.005)  # Table 4 (paper: 10,000-sample Monte Carlo)
    wh = SelectionProblem.from_fico(({"white": 0.64, "hispanic": 0.36}, "asian"), (0.9634, 0.0366), 10)
    assert wh.theorem_conditions(1)["theorem_1_5"]["holds"] and wh.theorem_conditions(2)["theorem_1_5"]["holds"]
    assert not wh.theorem_conditions(3)["theorem_1_5"]["holds"]
    roots = wh.perfectly_fair_epsilons(1, 100.0)
    assert len(roots) == 1 and 5 < roots[0] < 15  # paper: 10.35


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: SelectionProblem(GRID, np.ones((2, 2, 3)) / 12, 4), "joint_pmf"),
        (lambda: SelectionProblem(GRID, np.ones((2, 2, 4)), 4), "sum to 1"),
        (lambda: SelectionProblem(GRID * 2, np.ones((2, 2, 4)) / 16, 4), "score_bounds"),
        (lambda: SelectionProblem(GRID, np.ones((2, 2, 4)) / 16, 1), "n_applicants"),
        (lambda: small_problem().fairness_gap(1.0, 4), "n_select"),
        (lambda: small_problem().fairness_gap(float("nan")), "epsilon"),
        (lambda: small_problem().fairness_gap(1.0, notion="parity"), "notion"),
    ],
)
def test_bad_input(call, match):
    with pytest.raises((ValueError, TypeError), match=match):
        call()


# ---------------------------------------------------------------------- exact analysis stays exact
LARGE_EPSILONS = (1e3, 1e4, 1e6, 1e12, 1e300)


@pytest.mark.parametrize("m", [1, 2, 3])
def test_continuity_into_infinite_epsilon(m):
    """Before: theta(1e4) = 0.9414 and theta(1e6) = 0.7923 for m = 1 (limit 0.9543); m = 2 at 1e300 gave 0.9575 (0.8721)."""
    problem = case_study_problem()
    for quantity in (problem.accuracy, problem.fairness_gap):
        limit = float(quantity(math.inf, m))
        values = np.asarray(quantity(np.array(LARGE_EPSILONS), m).value)
        errors = np.abs(values - limit)
        assert errors[0] < 1e-9 and np.all(errors[1:] < 1e-12)
        assert np.all(np.diff(errors) <= 1e-12)  # no drift away from the limit
    pi = [problem.selection_probability_given_score(e, m).value for e in (*LARGE_EPSILONS, math.inf)]
    for p in pi[1:-1]:
        np.testing.assert_allclose(p, pi[-1], atol=1e-12)


def test_case_study_values_from_the_issue():
    problem = case_study_problem()
    for eps in (1e4, 1e6):
        assert float(problem.accuracy(eps, 1)) == pytest.approx(0.9543, abs=5e-5)
    assert float(problem.fairness_gap(1e6, 1)) == pytest.approx(0.1033, abs=5e-5)
    assert float(problem.accuracy(1e300, 2)) == pytest.approx(0.8721, abs=5e-5)


def test_laplace_integral_matches_enumeration_at_large_epsilon():
    problem = small_problem()
    for eps in (300.0, 3e3, 3e5):
        np.testing.assert_allclose(problem.selection_probability_given_score(eps, 1).value, brute_pi(problem, eps, 1),
                                   atol=1e-12)


def test_monte_carlo_path_is_continuous_into_the_limit():
    exact = small_problem(n=6, seed=3)
    mc = SelectionProblem(exact.score_values, exact.joint_pmf, 6, max_configurations=1, n_mc_samples=5_000)
    for m in (2, 3):
        limit = float(exact.fairness_gap(math.inf, m))
        est = [mc.fairness_gap(e, m) for e in (1e4, 1e12, 1e300)]
        assert all(e.method == "monte-carlo" for e in est)
        assert est[0].value == pytest.approx(est[1].value, abs=1e-12) == pytest.approx(est[2].value, abs=1e-12)
        assert abs(est[0].value - limit) <= 4 * est[0].standard_error + 1e-12


def test_non_finite_score_bounds_are_refused():
    """Before: score_bounds=(0, inf) was accepted and silently changed every result."""
    joint = np.ones((2, 2, 4)) / 16
    for bounds in ((0.0, math.inf), (-math.inf, 1.0), (0.0, math.nan)):
        with pytest.raises(ValueError, match="score_bounds"):
            SelectionProblem(GRID, joint, 4, score_bounds=bounds)
    with pytest.raises(TypeError, match="score_bounds"):
        SelectionProblem(GRID, joint, 4, score_bounds=(0.0, 1.0, 2.0))


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        # before: NaN out for m >= n and epsilon = -5 accepted
        (lambda p: p.selection_probability_given_score(1.0, 4), ValueError, "n_select"),
        (lambda p: p.selection_probability_given_score(-5.0, 1), ValueError, "epsilon"),
        (lambda p: p.selection_probability_given_score(-5.0, 2), ValueError, "epsilon"),
        (lambda p: p.selection_probability_given_score(float("nan"), 2), ValueError, "epsilon"),
        (lambda p: p.selection_probability_given_score("1.0", 2), TypeError, "epsilon"),
        (lambda p: p.selection_probability_given_score([1.0, 2.0], 1), ValueError, "epsilon"),
        (lambda p: p.theorem_conditions(4), ValueError, "n_select"),
        (lambda p: p.theorem_conditions(0), ValueError, "n_select"),
        (lambda p: p.theorem_conditions(1.5), TypeError, "n_select"),
        (lambda p: p.fairness_gap("1.0"), TypeError, "epsilon"),
        (lambda p: p.fairness_gap([]), ValueError, "epsilon"),
        (lambda p: p.fairness_gap([[1.0]]), ValueError, "epsilon"),
        (lambda p: p.accuracy(-1.0), ValueError, "epsilon"),
        (lambda p: p.accuracy(1.0, 4), ValueError, "n_select"),
        (lambda p: p.accuracy(1.0, True), TypeError, "n_select"),
        (lambda p: p.perfectly_fair_epsilons(1, float("inf")), ValueError, "epsilon_max"),
        (lambda p: p.perfectly_fair_epsilons(1, 1e-4), ValueError, "epsilon_max"),
        (lambda p: p.perfectly_fair_epsilons(1, 10.0, n_grid=1), ValueError, "n_grid"),
        (lambda p: p.best_epsilon(10.0, float("nan")), ValueError, "gamma_max"),
        (lambda p: p.best_epsilon("10", 0.1), TypeError, "epsilon_max"),
        (lambda p: p.best_epsilon(10.0, 0.1, 4), ValueError, "n_select"),
    ],
)
def test_analysis_methods_validate(call, error, match):
    with pytest.raises(error, match=match):
        call(small_problem())


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"score_values": ["0", "0.3", "0.5", "1"]}, TypeError, "score_values"),  # before: coerced to floats
        ({"score_values": [0, 0.3, 0.5, 1 + 0j]}, ValueError, "score_values"),
        ({"score_values": [False, True, 0.5, 1.0]}, TypeError, "score_values"),
        ({"joint_pmf": np.full((2, 2, 4), "0.0625")}, TypeError, "joint_pmf"),
        ({"n_applicants": 10**6}, ValueError, "n_applicants"),
        ({"n_applicants": 4.0}, TypeError, "n_applicants"),
        ({"random_state": -1}, ValueError, "random_state"),
    ],
)
def test_constructor_refuses_bad_input(kwargs, error, match):
    args = {"score_values": GRID, "joint_pmf": np.ones((2, 2, 4)) / 16, "n_applicants": 4, **kwargs}
    with pytest.raises(error, match=match):
        SelectionProblem(**args)


def test_from_samples_warns_and_refuses_strings():
    with pytest.warns(PrivacyLeakWarning, match="from_samples"):
        SelectionProblem.from_samples([0.1, 0.5, 0.9, 0.5], ["a", "b", "a", "b"], [1, 0, 1, 1], 3)
    with pytest.raises(TypeError, match="scores"):
        SelectionProblem.from_samples(["0.1", "0.5"], ["a", "b"], [1, 1], 3)
    with pytest.raises(ValueError, match="length"):
        SelectionProblem.from_samples([0.1, 0.5], ["a", "b"], [1, 1, 0], 3)
    with pytest.raises(ValueError, match="groups"):
        SelectionProblem.from_samples([0.1, 0.5], ["a", None], [1, 1], 3)


# ---------------------------------------------------------------------- realistic sizes, same numbers
def _reference():
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from analysis_reference import SelectionProblem as Reference  # the first implementation, frozen

    return Reference


def _pair(problem, **kwargs):
    Reference = _reference()
    new = SelectionProblem(problem.score_values, problem.joint_pmf, problem.n_applicants, **kwargs)
    return new, Reference(problem.score_values, problem.joint_pmf, problem.n_applicants, **kwargs)


def _mlr_problem(n):
    """A law satisfying Assumption 1 (P(Y=1 | R) increasing in R)."""
    grid = np.linspace(0.0, 1.0, 6)
    p_r = np.array([0.1, 0.2, 0.25, 0.2, 0.15, 0.1])
    p_y = np.linspace(0.1, 0.9, 6)
    share = np.array([[0.7, 0.3]] * 6).T * np.array([1.0, 1.0, 1.0, 1.1, 1.2, 1.3]) / 1.0
    share = share / share.sum(axis=0)
    joint = np.stack([np.stack([(1 - p_y) * p_r * share[a], p_y * p_r * share[a]]) for a in range(2)])
    return SelectionProblem(grid, joint, n)


@pytest.mark.parametrize(("n", "m"), [(6, 2), (6, 3), (40, 2), (40, 5)])
def test_monte_carlo_matches_the_previous_implementation(n, m):
    base = case_study_problem(n)
    new, old = _pair(base, max_configurations=1, n_mc_samples=1500, random_state=3)
    # the same samples: the histograms of the previous (n_mc_samples, n - 1) draws
    hist = np.zeros((1500, base.score_values.size))
    np.add.at(hist, (np.repeat(np.arange(1500), n - 1), old._mc_scores().ravel()), 1.0)
    np.testing.assert_array_equal(new._mc_counts(), hist)
    eps = [0.0, 0.05, 1.0, 7.0, 60.0, 400.0, 5000.0]
    for quantity in ("fairness_gap", "accuracy"):
        a, b = getattr(new, quantity)(eps, m), getattr(old, quantity)(eps, m)
        assert a.method == b.method == "monte-carlo"
        np.testing.assert_allclose(a.value, b.value, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(a.standard_error, b.standard_error, rtol=1e-7, atol=1e-14)
    np.testing.assert_allclose(new.selection_probability_given_score(3.0, m).value,
                               old.selection_probability_given_score(3.0, m).value, rtol=1e-9, atol=1e-12)


def test_laplace_integral_on_a_score_lattice_matches_the_previous_implementation():
    grid = np.array([0.0, 0.005, 0.015, 0.02, 0.3, 0.7, 0.995, 1.0])  # a lattice of step 0.005 with gaps (as FICO)
    rng = np.random.default_rng(5)
    joint = rng.random((2, 2, grid.size))
    for n in (2, 30, 1000):
        new, old = _pair(SelectionProblem(grid, joint / joint.sum(), n))
        assert new._score_lattice() is not None
        for eps in (0.0, 0.01, 2.0, 80.0, 900.0, 1e6):
            np.testing.assert_allclose(new.selection_probability_given_score(eps).value,
                                       old.selection_probability_given_score(eps).value, rtol=1e-9, atol=1e-13)
    assert small_problem()._score_lattice() is None  # 0, 0.3, 0.5, 1: not a lattice of its smallest gap


def test_searches_return_what_the_previous_implementation_returned():
    for base, m in ((case_study_problem(30), 2), (_mlr_problem(25), 2), (_mlr_problem(25), 1)):
        new, old = _pair(base, max_configurations=1, n_mc_samples=800)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # Assumption 1 fails for the case study
            for gamma_max in (0.0, 0.002, 0.02):
                assert new.best_epsilon(60.0, gamma_max, m, n_grid=25) == pytest.approx(
                    old.best_epsilon(60.0, gamma_max, m, n_grid=25), rel=1e-9)
        np.testing.assert_allclose(new.perfectly_fair_epsilons(m, 60.0, n_grid=25),
                                   old.perfectly_fair_epsilons(m, 60.0, n_grid=25), rtol=1e-9)


def test_best_epsilon_computes_pi_once_per_epsilon_for_gamma_and_theta(monkeypatch):
    # before: gamma and theta were each computed over the whole grid (twice the work when Assumption 1 fails)
    problem = SelectionProblem(GRID, small_problem().joint_pmf, 30, max_configurations=1, n_mc_samples=300)
    assert not problem.monotone_likelihood_ratio()
    calls = []
    original = SelectionProblem._log_weights
    monkeypatch.setattr(SelectionProblem, "_log_weights", lambda self, e, m: calls.append(e) or original(self, e, m))
    with pytest.warns(UserWarning, match="Assumption 1"):
        problem.best_epsilon(50.0, 0.001, 2, n_grid=20)
    assert len(calls) == 21  # the grid (20 points and 0), once each


def test_searches_report_progress_through_a_callback():
    problem = _mlr_problem(40)
    seen = []
    root_count = len(problem.perfectly_fair_epsilons(1, 100.0, n_grid=30, progress=lambda *a: seen.append(a)))
    done = [d for d, _ in seen]
    assert done == list(range(1, len(seen) + 1)) and all(total >= d for d, total in seen) and seen[-1][0] == seen[-1][1]
    assert len(seen) >= 30 + 5 * root_count  # the grid, then Brent's evaluations
    seen.clear()
    problem.best_epsilon(100.0, 0.0, 2, n_grid=30, progress=lambda *a: seen.append(a))
    assert seen and seen[-1][0] == seen[-1][1] >= 31
    with pytest.raises(TypeError, match="progress"):
        problem.best_epsilon(100.0, 0.001, 2, progress="yes")


def test_progress_bar_can_be_forced_or_silenced(capsys):
    from rich.progress import Progress

    problem = _mlr_problem(20)
    silent = problem.best_epsilon(50.0, 0.001, 1, n_grid=10, progress=False)
    assert problem.best_epsilon(50.0, 0.001, 1, n_grid=10, progress=True) == silent
    with Progress() as outer:  # another live display (the experiment runner's bar): the search stays silent
        outer.add_task("runner", total=1)
        assert problem.best_epsilon(50.0, 0.001, 1, n_grid=10, progress=True) == silent


def test_curves_report_progress_per_epsilon():
    problem = SelectionProblem(GRID, small_problem().joint_pmf, 8, max_configurations=1, n_mc_samples=300)
    seen = []
    gaps = problem.fairness_gap([0.5, 2.0, 9.0], 2, progress=lambda *a: seen.append(a))
    assert seen == [(1, 3), (2, 3), (3, 3)] and gaps.value.shape == (3,)
    seen.clear()
    problem.accuracy(1.0, 2, progress=lambda *a: seen.append(a))
    assert seen == [(1, 1)]
    with pytest.raises(TypeError, match="progress"):
        problem.accuracy(1.0, 2, progress=3)
