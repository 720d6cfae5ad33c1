"""Demonstration of dpfair's privacy core (``make demo``).

Prints three tables:
1. each mechanism's claimed epsilon beside the empirical audit's lower bound, for the honest
   mechanism and for a deliberately broken one (half the noise);
2. exact inclusion probabilities of the top-m exponential mechanism as epsilon grows;
3. a privacy budget's ledger, and the refusal of an overspending charge.
"""

from __future__ import annotations

import math
import time

import numpy as np

from dpfair.privacy import (
    BinaryTreeMechanism,
    PrivacyBudget,
    PrivacyBudgetExceededError,
    TopMExponentialMechanism,
    audit_epsilon,
    gaussian_delta,
    gaussian_mechanism,
    laplace_mechanism,
)


def audits() -> None:
    print("1. Empirical privacy audit (200,000 runs per input, 95% confidence)")
    print(f"   {'mechanism':<34}{'claimed eps':>12}{'audit lower bound':>20}   verdict")
    delta = gaussian_delta(1.0, 1.0)
    cases = [
        ("Laplace, correct noise", 1.0, 0.0,
         lambda d, s, r: laplace_mechanism(np.full(s, d), sensitivity=1.0, epsilon=1.0, random_state=r)),
        ("Laplace, half the noise", 1.0, 0.0,
         lambda d, s, r: laplace_mechanism(np.full(s, d), sensitivity=0.5, epsilon=1.0, random_state=r)),
        ("Gaussian (eps=1, delta=0.127)", 1.0, delta,
         lambda d, s, r: gaussian_mechanism(np.full(s, d), sensitivity=1.0, epsilon=1.0, delta=delta, random_state=r)),
        ("Gaussian, half the noise", 1.0, delta,
         lambda d, s, r: gaussian_mechanism(np.full(s, d), sensitivity=0.5, epsilon=1.0, delta=delta, random_state=r)),
    ]
    for name, eps, d, mech in cases:
        result = audit_epsilon(mech, 0.0, 1.0, n_samples=200_000, delta=d)
        verdict = "consistent" if result.epsilon_lower_bound <= eps else "VIOLATION caught"
        print(f"   {name:<34}{eps:>12.3g}{result.epsilon_lower_bound:>20.3f}   {verdict}")


def top_m_table() -> None:
    print("\n2. Exact top-m exponential mechanism: P(applicant in the 3 selected), 8 applicants")
    scores = np.array([0.95, 0.9, 0.8, 0.7, 0.6, 0.5, 0.3, 0.1])
    m = 3
    header = "".join(f"{s:>7.2f}" for s in scores)
    print(f"   {'epsilon':>9} |{header}")
    for eps in (0.1, 1.0, 5.0, 20.0, 100.0, math.inf):
        mech = TopMExponentialMechanism(scores / m, m, sensitivity=1.0 / m, epsilon=eps)
        row = "".join(f"{p:>7.3f}" for p in mech.inclusion_probabilities())
        print(f"   {eps:>9g} |{row}")
    rng = np.random.default_rng(0)
    big = rng.uniform(size=100_000)
    t0 = time.perf_counter()
    TopMExponentialMechanism(big / 100, 100, sensitivity=0.01, epsilon=1.0).sample(random_state=1)
    print(f"   one exact draw with n=100,000, m=100: {1e3 * (time.perf_counter() - t0):.0f} ms")


def budget_demo() -> None:
    print("\n3. A budget of (epsilon=2, delta=1e-6) and its ledger")
    budget = PrivacyBudget(2.0, 1e-6)
    laplace_mechanism([10.0, 20.0], sensitivity=1.0, epsilon=0.5, budget=budget, label="group counts", random_state=0)
    tree = BinaryTreeMechanism(
        64, (3, 3), sensitivity=1.0, rho=0.02, symmetric=True, budget=budget, label="Gram matrices", random_state=0
    )
    for _ in range(64):
        tree.update(np.eye(3))
    for entry in budget.ledger:
        cost = f"rho={entry.rho:g}" if entry.kind == "zcdp" else f"epsilon={entry.epsilon:g}, delta={entry.delta:g}"
        print(f"   {entry.label:<16} {entry.kind:<10} {cost}")
    eps, delta = budget.spent()
    print(f"   total spent: epsilon={eps:.4f}, delta={delta:g}")
    try:
        laplace_mechanism([1.0], sensitivity=1.0, epsilon=1.0, budget=budget, label="one more", random_state=0)
    except PrivacyBudgetExceededError as exc:
        print(f"   refused: {exc}")


if __name__ == "__main__":
    audits()
    top_m_table()
    budget_demo()
